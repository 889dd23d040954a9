/*
 * The agent's own POST /refresh: the host's clock, fresh entropy and a
 * new address for a card, set by the guest's agent without a process (an
 * exec of date, the first program a restored QEMU runs, costs it ~120 ms
 * of translation under TCG). Sent once a sandbox is up (a resume, a
 * pool's take), or with a restore itself (sandbox_fresh_early). Below
 * exec.c and sandbox_refresh.c, which also sets a machine-id by an exec.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>

#include "sandbox_int.h"

/* A new unicast, locally administered address, QEMU's prefix. */
void
sandbox_mac_new(char mac[SANDBOX_MAC_LEN])
{
	unsigned char	r[3];

	do {
		token_random(r, sizeof r);
		snprintf(mac, SANDBOX_MAC_LEN, "52:54:00:%02x:%02x:%02x",
		    r[0], r[1], r[2]);
	} while (strcmp(mac, NET_GUEST_MAC) == 0);	/* every boot's */
}


/* The agent's answer to POST /refresh: its owner hears how. */
static void
sandbox_fresh_reply(int status, const char *body, size_t len, void *arg)
{
	struct sandbox		*sb = arg;
	sandbox_fresh_cb	 cb = sb->fresh_cb;
	char			*msg = NULL;
	int			 gone = status == AGENT_CLOSED;

	sb->fresh_busy = 0;
	sb->fresh_cb = NULL;
	if (cb == NULL)
		return;		/* cancelled, or told at QEMU's end */
	if (status != 204)
		xasprintf(&msg, "%s%d: %.*s", gone ? "QEMU exited: " :
		    "the agent's refresh answered ", status, (int)(len > 200 ?
		    200 : len), body);
	cb(sb, gone, msg, sb->fresh_arg);
	free(msg);
}

/*
 * The host's clock, fresh entropy and, if mac is not NULL, a new address
 * on its card, given to sb's guest through its agent's own POST /refresh
 * on agent port (no process
 * in the guest: an exec of date, the first program a restored QEMU runs,
 * costs it ~120 ms of translation under TCG). cb told once answered, or
 * with gone when QEMU goes first; never after sandbox_fresh_cancel. -1
 * with *cause when one is under way already.
 */
int
sandbox_fresh_send(struct sandbox *sb, int port, const char *mac,
    sandbox_fresh_cb cb, void *arg, char **cause)
{
	struct timespec	 ts;
	struct buf	 b = { 0 };
	char		*hex;

	if (sb->fresh_busy || port < 0 || port >= QSUP_PORT_COUNT ||
	    sb->ports[port] == NULL) {
		xasprintf(cause, sb->fresh_busy ? "a refresh is under way" :
		    "no agent port %d", port);
		return (-1);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	buf_printf(&b, "time %lld.%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
	hex = token_hex(64);
	buf_printf(&b, "entropy %s\n", hex);
	explicit_bzero(hex, strlen(hex));
	free(hex);
	if (mac != NULL)
		buf_printf(&b, "mac %s\n", mac);
	sb->fresh_cb = cb;
	sb->fresh_arg = arg;
	sb->fresh_busy = 1;
	agent_request(sb->ports[port], "POST", "/refresh", b.data, b.len,
	    sandbox_fresh_reply, NULL, sb);
	explicit_bzero(b.data, b.len);
	buf_free(&b);
	return (0);
}

/* The early refresh answered: kept until its owner asks, or told now. */
static void
sandbox_early_reply(struct sandbox *sb, int gone, const char *error,
    void *arg)
{
	sandbox_fresh_cb	 cb = sb->early_cb;

	(void)arg;
	sb->early = SANDBOX_EARLY_DONE;
	free(sb->early_error);
	sb->early_error = NULL;
	if (error != NULL)
		sb->early_error = xstrdup(error);
	else if (gone)
		sb->early_error = xstrdup("QEMU exited");
	sb->early_cb = NULL;
	if (cb == NULL)
		return;		/* kept for sandbox_fresh_then */
	sb->early = SANDBOX_EARLY_NONE;		/* told once */
	cb(sb, gone, sb->early_error, sb->early_arg);
}

static int
sandbox_early_send(struct sandbox *sb, char **cause)
{
	if (sandbox_fresh_send(sb, 0, sb->early_mac[0] != '\0' ?
	    sb->early_mac : NULL, sandbox_early_reply, NULL, cause) == -1)
		return (-1);
	sb->early = SANDBOX_EARLY_SENT;
	return (0);
}

/*
 * A sandbox started from a snapshot gets the host's clock, fresh entropy
 * and, if mac is not NULL, its card's new address with the restore itself:
 * the POST /refresh goes on the agent's first port right behind the
 * readiness ping, so the guest takes both in one wake and the host waits
 * one round trip rather than two (a new QEMU's first wake of an idle guest
 * costs it ~30 ms of translation under TCG). Sent now if QEMU runs, else
 * once launched; its answer is kept for sandbox_fresh_then. -1 with
 * *cause when sb is not a restore or a refresh is under way.
 */
int
sandbox_fresh_early(struct sandbox *sb, const char *mac, char **cause)
{
	if (sb->snap == NULL || sb->early != SANDBOX_EARLY_NONE ||
	    sb->fresh_busy) {
		xasprintf(cause, sb->snap == NULL ? "not a restore of a "
		    "snapshot" : "a refresh is under way");
		return (-1);
	}
	if (mac != NULL && sb->net == NULL) {
		xasprintf(cause, "it has no network card for an address");
		return (-1);
	}
	snprintf(sb->early_mac, sizeof sb->early_mac, "%s", mac != NULL ?
	    mac : "");
	sb->early = SANDBOX_EARLY_PENDING;
	if (sb->ports[0] != NULL && sandbox_early_send(sb, cause) == -1) {
		sb->early = SANDBOX_EARLY_NONE;
		return (-1);
	}
	return (0);
}

/* Launched: a pending early refresh goes behind the readiness ping. */
void
sandbox_early_launch(struct sandbox *sb)
{
	char	*cause = NULL;

	if (sb->early != SANDBOX_EARLY_PENDING)
		return;
	if (sandbox_early_send(sb, &cause) == -1) {
		sb->early = SANDBOX_EARLY_DONE;
		sb->early_error = cause;
	}
}

/* Its QEMU is gone (relaunched, or freed): an unanswered one goes again. */
void
sandbox_early_free(struct sandbox *sb)
{
	if (sb->early == SANDBOX_EARLY_SENT)
		sb->early = SANDBOX_EARLY_PENDING;
}

/*
 * cb told how the early refresh went: at once if it has answered, else
 * when it does. -1 when there is none (sandbox_fresh_early was not
 * called, or sandbox_fresh_then was already).
 */
int
sandbox_fresh_then(struct sandbox *sb, sandbox_fresh_cb cb, void *arg)
{
	if (sb->early == SANDBOX_EARLY_NONE || sb->early_cb != NULL)
		return (-1);
	if (sb->early != SANDBOX_EARLY_DONE) {
		sb->early_cb = cb;
		sb->early_arg = arg;
		return (0);
	}
	sb->early = SANDBOX_EARLY_NONE;		/* told once */
	cb(sb, 0, sb->early_error, arg);
	return (0);
}

/* Its owner is going: a refresh's answer is not told to it. */
void
sandbox_fresh_cancel(struct sandbox *sb)
{
	if (sb != NULL)
		sb->fresh_cb = sb->early_cb = NULL;
}
