/*
 * Secrets for sandboxes: bearer tokens and entropy for the guest's pool,
 * drawn from mbedTLS's CTR-DRBG seeded by the kernel.
 */
#include <stdlib.h>
#include <string.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>

#include "base.h"

static mbedtls_entropy_context	token_entropy;
static mbedtls_ctr_drbg_context	token_drbg;
static int			token_seeded;

void
token_random(unsigned char *out, size_t len)
{
	static const char	pers[] = "qsup token";
	size_t			n;

	if (!token_seeded) {
		mbedtls_entropy_init(&token_entropy);
		mbedtls_ctr_drbg_init(&token_drbg);
		if (mbedtls_ctr_drbg_seed(&token_drbg, mbedtls_entropy_func,
		    &token_entropy, (const unsigned char *)pers,
		    sizeof pers - 1) != 0)
			fatalx("cannot seed the random generator");
		token_seeded = 1;
	}
	while (len > 0) {
		n = len > MBEDTLS_CTR_DRBG_MAX_REQUEST ?
		    MBEDTLS_CTR_DRBG_MAX_REQUEST : len;
		if (mbedtls_ctr_drbg_random(&token_drbg, out, n) != 0)
			fatalx("random generator failed");
		out += n;
		len -= n;
	}
}

/* len bytes as 2 * len lowercase hex digits, a new string. */
char *
token_hex_of(const unsigned char *raw, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	char			*s;
	size_t			 i;

	s = xmalloc(2 * len + 1);
	for (i = 0; i < len; i++) {
		s[2 * i] = hex[raw[i] >> 4];
		s[2 * i + 1] = hex[raw[i] & 0xf];
	}
	s[2 * len] = '\0';
	return (s);
}

/* A fresh random string of 2 * len hex digits. */
char *
token_hex(size_t len)
{
	unsigned char		*raw;
	char			*s;

	raw = xmalloc(len);
	token_random(raw, len);
	s = token_hex_of(raw, len);
	explicit_bzero(raw, len);
	free(raw);
	return (s);
}
