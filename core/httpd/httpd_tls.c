/*
 * TLS for TCP listeners, through mbedTLS: one server configuration per
 * listener (its certificate chain and key from PEM files, a CTR-DRBG
 * seeded from the system's entropy, TLS 1.2 at least), one context per
 * connection, driven by the loop. The context's I/O callbacks are our
 * own over the non-blocking socket: a would-block becomes WANT_READ or
 * WANT_WRITE, and the connection's watchers wait for that.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "httpd.h"
#include "httpd_int.h"

/* Our bio's failure codes (mbedTLS's own net layer is not used). */
#define HTTPD_TLS_ERR_IO	MBEDTLS_ERR_SSL_INTERNAL_ERROR

struct httpd_tls {
	mbedtls_ssl_config	 conf;
	mbedtls_x509_crt	 crt;
	mbedtls_pk_context	 key;
	mbedtls_entropy_context	 entropy;
	mbedtls_ctr_drbg_context drbg;
};

struct httpd_tls_conn {
	mbedtls_ssl_context	 ssl;
	int			 fd;
	int			 done;	/* handshake over */
	size_t			 wlen;	/* a write to finish, this long */
	int			 err;	/* errno of the bio's last failure */
};

/* "FILE: what: mbedTLS's reason". */
static void
httpd_tls_cause(char **cause, const char *file, const char *what, int rc)
{
	char	msg[256];

	mbedtls_strerror(rc, msg, sizeof msg);
	xasprintf(cause, "%s: %s: %s (-0x%04x)", file, what, msg,
	    (unsigned int)-rc);
}

struct httpd_tls *
httpd_tls_new(const char *cert, const char *key, char **cause)
{
	static const char	 pers[] = "qsup httpd";
	struct httpd_tls	*t;
	int			 rc;

	t = xcalloc(1, sizeof *t);
	mbedtls_ssl_config_init(&t->conf);
	mbedtls_x509_crt_init(&t->crt);
	mbedtls_pk_init(&t->key);
	mbedtls_entropy_init(&t->entropy);
	mbedtls_ctr_drbg_init(&t->drbg);
	if ((rc = mbedtls_x509_crt_parse_file(&t->crt, cert)) != 0) {
		if (rc > 0)
			xasprintf(cause, "%s: %d certificates of the chain do "
			    "not parse", cert, rc);
		else
			httpd_tls_cause(cause, cert, "cannot load the "
			    "certificate", rc);
		goto fail;
	}
	if ((rc = mbedtls_pk_parse_keyfile(&t->key, key, NULL)) != 0) {
		httpd_tls_cause(cause, key, "cannot load the key", rc);
		goto fail;
	}
	if ((rc = mbedtls_pk_check_pair(&t->crt.pk, &t->key)) != 0) {
		httpd_tls_cause(cause, key, "not the key of the certificate "
		    "in the other file", rc);
		goto fail;
	}
	if ((rc = mbedtls_ctr_drbg_seed(&t->drbg, mbedtls_entropy_func,
	    &t->entropy, (const unsigned char *)pers, sizeof pers - 1)) != 0) {
		httpd_tls_cause(cause, "TLS", "cannot seed the random "
		    "generator", rc);
		goto fail;
	}
	if ((rc = mbedtls_ssl_config_defaults(&t->conf, MBEDTLS_SSL_IS_SERVER,
	    MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT)) != 0) {
		httpd_tls_cause(cause, "TLS", "cannot configure", rc);
		goto fail;
	}
	mbedtls_ssl_conf_rng(&t->conf, mbedtls_ctr_drbg_random, &t->drbg);
	mbedtls_ssl_conf_min_version(&t->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
	    MBEDTLS_SSL_MINOR_VERSION_3);
	mbedtls_ssl_conf_renegotiation(&t->conf,
	    MBEDTLS_SSL_RENEGOTIATION_DISABLED);
	if ((rc = mbedtls_ssl_conf_own_cert(&t->conf, &t->crt,
	    &t->key)) != 0) {
		httpd_tls_cause(cause, cert, "cannot use the certificate", rc);
		goto fail;
	}
	return (t);
fail:
	httpd_tls_free(t);
	return (NULL);
}

void
httpd_tls_free(struct httpd_tls *t)
{
	if (t == NULL)
		return;
	mbedtls_ssl_config_free(&t->conf);
	mbedtls_x509_crt_free(&t->crt);
	mbedtls_pk_free(&t->key);
	mbedtls_ctr_drbg_free(&t->drbg);
	mbedtls_entropy_free(&t->entropy);
	free(t);
}

static int
httpd_tls_send_cb(void *arg, const unsigned char *p, size_t len)
{
	struct httpd_tls_conn	*tc = arg;
	ssize_t			 n;

	while ((n = send(tc->fd, p, len, MSG_NOSIGNAL|MSG_DONTWAIT)) == -1 &&
	    errno == EINTR)
		;
	if (n >= 0)
		return ((int)n);
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return (MBEDTLS_ERR_SSL_WANT_WRITE);
	tc->err = errno;
	return (HTTPD_TLS_ERR_IO);
}

static int
httpd_tls_recv_cb(void *arg, unsigned char *p, size_t len)
{
	struct httpd_tls_conn	*tc = arg;
	ssize_t			 n;

	while ((n = recv(tc->fd, p, len, MSG_DONTWAIT)) == -1 &&
	    errno == EINTR)
		;
	if (n >= 0)
		return ((int)n);
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return (MBEDTLS_ERR_SSL_WANT_READ);
	tc->err = errno;
	return (HTTPD_TLS_ERR_IO);
}

struct httpd_tls_conn *
httpd_tls_conn_new(struct httpd_tls *t, int fd)
{
	struct httpd_tls_conn	*tc;

	tc = xcalloc(1, sizeof *tc);
	tc->fd = fd;
	mbedtls_ssl_init(&tc->ssl);
	if (mbedtls_ssl_setup(&tc->ssl, &t->conf) != 0) {
		mbedtls_ssl_free(&tc->ssl);
		free(tc);
		return (NULL);
	}
	mbedtls_ssl_set_bio(&tc->ssl, tc, httpd_tls_send_cb, httpd_tls_recv_cb,
	    NULL);
	return (tc);
}

void
httpd_tls_conn_free(struct httpd_tls_conn *tc)
{
	if (tc == NULL)
		return;
	mbedtls_ssl_free(&tc->ssl);
	free(tc);
}

/* One step of the handshake: done, what it waits for, or failed. */
int
httpd_tls_handshake(struct httpd_tls_conn *tc)
{
	char	msg[128];
	int	rc;

	if (tc->done)
		return (HTTPD_TLS_OK);
	rc = mbedtls_ssl_handshake(&tc->ssl);
	if (rc == 0) {
		tc->done = 1;
		return (HTTPD_TLS_OK);
	}
	if (rc == MBEDTLS_ERR_SSL_WANT_READ)
		return (HTTPD_TLS_READ);
	if (rc == MBEDTLS_ERR_SSL_WANT_WRITE)
		return (HTTPD_TLS_WRITE);
	mbedtls_strerror(rc, msg, sizeof msg);
	log_debug("httpd: TLS handshake: %s", msg);
	return (HTTPD_TLS_FAIL);
}

int
httpd_tls_done(struct httpd_tls_conn *tc)
{
	return (tc->done);
}

/* As recv(2): bytes, 0 at the end, -1 with errno (EAGAIN: later). */
ssize_t
httpd_tls_read(struct httpd_tls_conn *tc, void *p, size_t len)
{
	int	rc;

	rc = mbedtls_ssl_read(&tc->ssl, p, len);
	if (rc > 0)
		return (rc);
	if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
		return (0);
	if (rc == MBEDTLS_ERR_SSL_WANT_READ ||
	    rc == MBEDTLS_ERR_SSL_WANT_WRITE) {
		errno = EAGAIN;
		return (-1);
	}
	errno = rc == HTTPD_TLS_ERR_IO && tc->err != 0 ? tc->err : ECONNRESET;
	return (-1);
}

/*
 * As send(2). A write that would block must be made again with the same
 * length (mbedTLS has taken the record already): the queue only grows
 * behind it, so the same bytes are still there.
 */
ssize_t
httpd_tls_write(struct httpd_tls_conn *tc, const void *p, size_t len)
{
	int	rc;

	if (tc->wlen == 0)
		tc->wlen = len < HTTPD_TLS_RECORD ? len : HTTPD_TLS_RECORD;
	rc = mbedtls_ssl_write(&tc->ssl, p, tc->wlen);
	if (rc > 0) {
		tc->wlen = 0;
		return (rc);
	}
	if (rc == MBEDTLS_ERR_SSL_WANT_READ ||
	    rc == MBEDTLS_ERR_SSL_WANT_WRITE) {
		errno = EAGAIN;
		return (-1);
	}
	errno = rc == HTTPD_TLS_ERR_IO && tc->err != 0 ? tc->err : EPIPE;
	return (-1);
}

/* Whether bytes already read from the socket wait inside TLS. */
int
httpd_tls_pending(struct httpd_tls_conn *tc)
{
	return (tc->done && (mbedtls_ssl_get_bytes_avail(&tc->ssl) > 0 ||
	    mbedtls_ssl_check_pending(&tc->ssl)));
}

/* The close_notify alert, if the socket takes it now. */
void
httpd_tls_notify(struct httpd_tls_conn *tc)
{
	if (tc->done)
		(void)mbedtls_ssl_close_notify(&tc->ssl);
}
