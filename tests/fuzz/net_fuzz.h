/*
 * What the network's fuzz targets share: their rules, parsed once, one
 * loop, and a network per input whose unix sockets live in a directory of
 * their own, which must be gone once the network is (something of the
 * input left behind aborts).
 */
#ifndef NET_FUZZ_H
#define NET_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "cmd.h"
#include "net_int.h"

#define NET_FUZZ_RULES_MAX	8

struct net_fuzz {
	const char		*name;		/* of the socket directory */
	const char *const	*text;		/* the rules, as written */
	size_t			 nrules;
	struct net_rule	 rules[NET_FUZZ_RULES_MAX];
	struct ev_loop		*loop;
	char			 dir[64];
};

/* A network in mode for this input, in a fresh socket directory. */
static struct net *
net_fuzz_new(struct net_fuzz *f, enum net_mode mode)
{
	struct net_config	 cfg;
	struct net		*net;
	char			*cause = NULL;
	size_t			 i;

	if (f->loop == NULL) {
		if (f->nrules > NET_FUZZ_RULES_MAX)
			abort();
		for (i = 0; i < f->nrules; i++) {
			if (net_rule_parse(f->text[i], &f->rules[i],
			    &cause) == -1)
				abort();
		}
		if ((f->loop = ev_loop_new(EVFLAG_AUTO)) == NULL)
			abort();
	}
	snprintf(f->dir, sizeof f->dir, "/tmp/qsup-%s-fuzz.XXXXXX", f->name);
	if (mkdtemp(f->dir) == NULL)
		abort();
	memset(&cfg, 0, sizeof cfg);
	cfg.mode = mode;
	cfg.rules = f->rules;
	cfg.nrules = f->nrules;
	cfg.dir = f->dir;
	if ((net = net_new(f->loop, &cfg, &cause)) == NULL)
		abort();
	return (net);
}

/* The network gone, and with it everything it made. */
static void
net_fuzz_free(struct net_fuzz *f, struct net *net)
{
	net_free(net);
	if (rmdir(f->dir) == -1)
		abort();
}

#endif
