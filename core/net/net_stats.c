/*
 * What the guest tried: every connection, DNS answer and dropped frame is
 * counted, and each distinct attempt (kind, destination, allowed or not)
 * listed once with its count, NET_DESTS_MAX of them, for -v and --json.
 * -v says the first NET_NOTE_LOG_MAX of each as they come, so that a flood
 * does not flood the log.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "net_int.h"

#define NET_DESTS_MAX		256
#define NET_NOTE_LOG_MAX	5		/* -v lines per destination */

/* -v's line for one attempt. */
static void
net_stats_log(const char *kind, const char *dest, int allowed, const char *why)
{
	if (allowed)
		log_debug("net: %s %s", kind, dest);
	else
		log_debug("net: refused %s %s: %s", kind, dest, why);
}

/*
 * Count and remember one attempt of the guest's, for -v and --json; -v
 * says the first few of each as they come.
 */
void
net_note(struct net *net, const char *kind, const char *dest, int allowed,
    const char *why)
{
	struct net_dest	*d;
	size_t		 i;

	if (allowed)
		net->stats.allowed++;
	else
		net->stats.refused++;
	for (i = 0; i < net->ndests; i++) {
		d = &net->dests[i];
		if (d->allowed == allowed && strcmp(d->kind, kind) == 0 &&
		    strcmp(d->dest, dest) == 0) {
			/* A flood says so at the end, with its count. */
			if (d->count++ < NET_NOTE_LOG_MAX)
				net_stats_log(kind, dest, allowed, why);
			return;
		}
	}
	if (net->ndests == NET_DESTS_MAX) {
		if (net->stats.dests_dropped++ < NET_NOTE_LOG_MAX)
			net_stats_log(kind, dest, allowed, why);
		return;
	}
	net_stats_log(kind, dest, allowed, why);
	net->dests = xreallocarray(net->dests, net->ndests + 1,
	    sizeof *net->dests);
	d = &net->dests[net->ndests++];
	d->kind = kind;
	d->dest = xstrdup(dest);
	d->allowed = allowed;
	d->why = why != NULL ? xstrdup(why) : NULL;
	d->count = 1;
	net->stats.dests = net->dests;
	net->stats.ndests = net->ndests;
}

/* The counts so far, and the destinations (net's, valid until it is used). */
void
net_stats(struct net *net, struct net_stats *st)
{
	*st = net->stats;
	st->dests = net->dests;
	st->ndests = net->ndests;
}

/* A JSON object for the --json summary. */
void
net_stats_json(struct net *net, struct buf *b)
{
	struct net_dest	*d;
	struct net_map	*m;
	size_t		 i;

	buf_printf(b, "{\"mode\":\"%s\",\"allowed\":%llu,\"refused\":%llu,"
	    "\"frames_in\":%llu,\"frames_out\":%llu,\"frames_dropped\":%llu,"
	    "\"fragments_dropped\":%llu,\"proxy_bytes_up\":%llu,"
	    "\"proxy_bytes_down\":%llu,\"destinations\":[",
	    net_mode_name(net->mode), net->stats.allowed,
	    net->stats.refused, net->stats.frames_in, net->stats.frames_out,
	    net->stats.frames_dropped, net->stats.fragments_dropped,
	    net->stats.proxy_bytes_up, net->stats.proxy_bytes_down);
	for (i = 0; i < net->ndests; i++) {
		d = &net->dests[i];
		buf_printf(b, "%s{\"kind\":\"%s\",\"dest\":", i > 0 ? "," : "",
		    d->kind);
		buf_json_string(b, d->dest);
		buf_printf(b, ",\"allowed\":%s,\"count\":%lu",
		    d->allowed ? "true" : "false", d->count);
		if (d->why != NULL) {
			buf_puts(b, ",\"why\":");
			buf_json_string(b, d->why);
		}
		buf_puts(b, "}");
	}
	buf_printf(b, "],\"destinations_not_listed\":%llu,\"forwards\":[",
	    net->stats.dests_dropped);
	for (i = 0; i < net->nfwds; i++)
		buf_printf(b, "%s{\"host\":\"%s:%d\",\"guest\":%d}",
		    i > 0 ? "," : "", net->fwds[i].addr,
		    net->fwds[i].host_port, net->fwds[i].guest_port);
	buf_puts(b, "],\"tcp_maps\":[");
	i = 0;
	TAILQ_FOREACH(m, &net->maps, entry) {
		if (m->to == NULL)
			continue;
		buf_printf(b, "%s{\"guest\":\"%s:%d\",\"name\":", i++ > 0 ?
		    "," : "", inet_ntoa(m->addr), m->port);
		if (m->name != NULL)
			buf_json_string(b, m->name);
		else
			buf_puts(b, "null");
		buf_puts(b, ",\"host\":");
		buf_json_string(b, m->to);
		buf_puts(b, "}");
	}
	buf_puts(b, "]");
	if (net->mode == NET_MODE_ALLOWLIST)
		buf_printf(b, ",\"proxy\":\"%s:%d\"", NET_PROXY_ADDR,
		    NET_PROXY_PORT);
	buf_puts(b, "}");
}
