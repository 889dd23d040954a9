/*
 * The network settings: network_allow, ports, network_tcp and
 * network_rules (the seed's socket rules, compiled into network_allow and
 * ports), and how they are shown; their checks against network are
 * profile_check.c's.
 */

#include <sys/socket.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "profile_int.h"

void
profile_convert_allow(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct net_rule	*v = NULL, r;
	struct buf		 w = { 0 };
	char			 what[64], *why;
	size_t			 nv = 0, i, len;
	int			 n, k, tloc, bad = 0;

	if ((n = profile_list(ctx, L, idx, s, loc, &tloc)) == -1)
		return;
	for (k = 1; k <= n; k++) {
		lua_rawgeti(L, idx, k);
		snprintf(what, sizeof what, "network_allow[%d]", k);
		if (lua_type(L, -1) != LUA_TSTRING ||
		    !profile_string_ok(L, -1, &len)) {
			profile_bad_as(ctx, L, -1, what, tloc, "is not valid",
			    PROFILE_ACCEPTS_RULE);
			bad = 1;
		} else if (net_rule_parse(lua_tostring(L, -1), &r, &why) == -1) {
			buf_consume(&w, w.len);
			profile_show(&w, L, -1);
			profile_error(ctx, tloc, "%s: %s %s", what, w.data,
			    why);
			free(why);
			bad = 1;
		} else {
			v = xreallocarray(v, nv + 1, sizeof *v);
			v[nv++] = r;
		}
		lua_pop(L, 1);
	}
	buf_free(&w);
	if (bad) {
		for (i = 0; i < nv; i++)
			net_rule_free(&v[i]);
		free(v);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, struct net_rule *) = v;
	memcpy((char *)ctx->p + s->offset_n, &nv, sizeof nv);
}

/* One item of ports; returns 0 and fills pt, or -1 (reported). */
static int
profile_port(struct profile_ctx *ctx, lua_State *L, int e, int k, int tloc,
    void *item)
{
	struct net_port	*pt = item;
	static const char	*fields[] = { "guest", "host", "address" };
	unsigned char		 addr[16];
	const char		*why, *v;
	char			 what[64];
	long long		 n;
	int			 eloc, floc, bad = 0;

	memset(pt, 0, sizeof *pt);
	snprintf(what, sizeof what, "ports[%d]", k);
	if (lua_type(L, e) == LUA_TNUMBER) {
		if ((why = profile_whole(L, e, 1, 65535, &n)) != NULL) {
			profile_bad_as(ctx, L, e, what, tloc, why,
			    PROFILE_ACCEPTS_PORT);
			return (-1);
		}
		pt->guest = (uint16_t)n;
		pt->address = xstrdup("127.0.0.1");
		return (0);
	}
	if (lua_type(L, e) != LUA_TTABLE) {
		profile_bad_as(ctx, L, e, what, tloc, "is not valid",
		    PROFILE_ACCEPTS_PORT);
		return (-1);
	}
	eloc = profile_item_loc(L, e, tloc);
	bad = profile_fields(ctx, L, e, what, fields, 3, eloc);

	snprintf(what, sizeof what, "ports[%d].guest", k);
	floc = profile_field_loc(L, e, "guest", eloc);
	lua_getfield(L, e, "guest");
	if (lua_isnil(L, -1)) {
		profile_error(ctx, eloc, "ports[%d]: has no guest port; write "
		    "guest = PORT", k);
		bad = 1;
	} else if ((why = profile_whole(L, -1, 1, 65535, &n)) != NULL) {
		profile_bad_as(ctx, L, -1, what, floc, why,
		    "a port from 1 to 65535");
		bad = 1;
	} else
		pt->guest = (uint16_t)n;
	lua_pop(L, 1);

	snprintf(what, sizeof what, "ports[%d].host", k);
	floc = profile_field_loc(L, e, "host", eloc);
	lua_getfield(L, e, "host");
	if (!lua_isnil(L, -1)) {
		if ((why = profile_whole(L, -1, 0, 65535, &n)) != NULL) {
			profile_bad_as(ctx, L, -1, what, floc, why,
			    "a port from 1 to 65535, or 0 for any free one");
			bad = 1;
		} else
			pt->host = (uint16_t)n;
	}
	lua_pop(L, 1);

	snprintf(what, sizeof what, "ports[%d].address", k);
	floc = profile_field_loc(L, e, "address", eloc);
	lua_getfield(L, e, "address");
	if (lua_isnil(L, -1))
		pt->address = xstrdup("127.0.0.1");
	else if ((v = profile_plain_string(L, -1)) == NULL ||
	    (inet_pton(AF_INET, v, addr) != 1 &&
	    inet_pton(AF_INET6, v, addr) != 1)) {
		profile_bad_as(ctx, L, -1, what, floc, "is not an IP address",
		    "a host address to listen on (\"127.0.0.1\", \"::1\")");
		bad = 1;
	} else
		pt->address = xstrdup(v);
	lua_pop(L, 1);
	if (bad) {
		free(pt->address);
		pt->address = NULL;
		return (-1);
	}
	return (0);
}

static int
profile_port_twice(struct profile_ctx *ctx, lua_State *L, int tloc, int k,
    const void *item, const void *prev, int from)
{
	const struct net_port	*pt = item, *o = prev;

	if (pt->host == 0 || o->host != pt->host ||
	    strcmp(o->address, pt->address) != 0)
		return (0);
	profile_error(ctx, lua_istable(L, -1) ? profile_item_loc(L, -1, tloc) :
	    tloc, "ports[%d]: host port %u on %s is forwarded twice "
	    "(ports[%d] too)", k, pt->host, pt->address, from);
	return (1);
}

static void
profile_port_free_item(void *item)
{
	struct net_port	*pt = item;

	free(pt->address);
}

void
profile_convert_ports(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	static const struct profile_items it = {
		.size = sizeof (struct net_port),
		.read = profile_port,
		.twice = profile_port_twice,
		.free = profile_port_free_item
	};

	profile_convert_items(ctx, L, idx, s, loc, &it);
}

void
profile_tcp_map_free(void *item)
{
	struct profile_tcp_map	*m = item;

	free(m->name);
	m->name = NULL;
	free(m->host);
	m->host = NULL;
}

/* A host or name field of network_tcp item k: 0, -1 (reported). */
static int
profile_tcp_host(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int eloc, const char *key, int flags, char **out)
{
	const char	*v;
	char		 what[64], *why = NULL;
	int		 floc, rc = 0;

	snprintf(what, sizeof what, "network_tcp[%d].%s", k, key);
	floc = profile_field_loc(L, e, key, eloc);
	lua_getfield(L, e, key);
	if (lua_isnil(L, -1)) {
		if (flags & NET_RULE_HOST_ADDR) {
			profile_error(ctx, eloc, "network_tcp[%d]: has no "
			    "host; write host = \"127.0.0.1\" or a host name",
			    k);
			rc = -1;
		}
	} else if ((v = profile_plain_string(L, -1)) == NULL ||
	    net_rule_parse_host(v, flags, out, &why) == -1) {
		profile_bad_as(ctx, L, -1, what, floc, why != NULL ? why :
		    "is not valid", (flags & NET_RULE_HOST_ADDR) ? "a host name "
		    "or an address on the host's side (\"127.0.0.1\", "
		    "\"db.example.org\")" : "a host name for the guest to "
		    "resolve (\"db\", \"db.internal\")");
		rc = -1;
	}
	free(why);
	lua_pop(L, 1);
	return (rc);
}

/* A port field of network_tcp item k: 0 (*port set if given), -1. */
static int
profile_tcp_port(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int eloc, const char *key, uint16_t *port)
{
	const char	*why;
	char		 what[64];
	long long	 n;
	int		 rc = 0;

	snprintf(what, sizeof what, "network_tcp[%d].%s", k, key);
	lua_getfield(L, e, key);
	if (lua_isnil(L, -1)) {
		if (strcmp(key, "port") == 0) {
			profile_error(ctx, eloc, "network_tcp[%d]: has no "
			    "port; write port = PORT (the host's)", k);
			rc = -1;
		}
	} else if ((why = profile_whole(L, -1, 1, 65535, &n)) != NULL) {
		profile_bad_as(ctx, L, -1, what, profile_field_loc(L, e, key,
		    eloc), why, "a port from 1 to 65535");
		rc = -1;
	} else
		*port = (uint16_t)n;
	lua_pop(L, 1);
	return (rc);
}

/* One item of network_tcp; returns 0 and fills m, or -1 (reported). */
static int
profile_tcp_map(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int tloc, void *item)
{
	struct profile_tcp_map	*m = item;
	static const char	*fields[] = { "host", "port", "name",
	    "guest_port" };
	char			 what[64];
	int			 eloc, bad;

	memset(m, 0, sizeof *m);
	snprintf(what, sizeof what, "network_tcp[%d]", k);
	if (lua_type(L, e) != LUA_TTABLE) {
		profile_bad_as(ctx, L, e, what, tloc, "is not valid",
		    PROFILE_ACCEPTS_TCP);
		return (-1);
	}
	eloc = profile_item_loc(L, e, tloc);
	bad = profile_fields(ctx, L, e, what, fields, 4, eloc);
	if (profile_tcp_host(ctx, L, e, k, eloc, "host", NET_RULE_HOST_ADDR,
	    &m->host) == -1)
		bad = 1;
	if (profile_tcp_port(ctx, L, e, k, eloc, "port", &m->port) == -1)
		bad = 1;
	if (profile_tcp_host(ctx, L, e, k, eloc, "name", 0, &m->name) == -1)
		bad = 1;
	m->guest_port = m->port;
	if (profile_tcp_port(ctx, L, e, k, eloc, "guest_port",
	    &m->guest_port) == -1)
		bad = 1;
	if (bad) {
		profile_tcp_map_free(m);
		return (-1);
	}
	return (0);
}

static int
profile_tcp_map_twice(struct profile_ctx *ctx, lua_State *L, int tloc, int k,
    const void *item, const void *prev, int from)
{
	const struct profile_tcp_map	*m = item, *o = prev;

	if (m->name == NULL || o->name == NULL ||
	    strcmp(o->name, m->name) != 0 || o->guest_port != m->guest_port)
		return (0);
	profile_error(ctx, profile_item_loc(L, -1, tloc), "network_tcp[%d]: "
	    "%s:%u in the guest is mapped twice (network_tcp[%d] too)", k,
	    m->name, m->guest_port, from);
	return (1);
}

void
profile_convert_tcp(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	static const struct profile_items it = {
		.size = sizeof (struct profile_tcp_map),
		.max = PROFILE_TCP_MAX,
		.max_why = "network_tcp: more than %d maps (the guest's "
		    "network has addresses for %d)",
		.read = profile_tcp_map,
		.twice = profile_tcp_map_twice,
		.free = profile_tcp_map_free
	};

	profile_convert_items(ctx, L, idx, s, loc, &it);
}

/*
 * Does forward i of p->ports, compiled from network_rules[k], repeat one
 * before it? Reported, and 1.
 */
static int
profile_rule_port_twice(struct profile_ctx *ctx, int tloc, int k, size_t i)
{
	const struct net_port	*pt = &ctx->p->ports[i], *o;
	size_t				 j;

	for (j = 0; j < i; j++) {
		o = &ctx->p->ports[j];
		if (o->guest != pt->guest || o->host != 0 ||
		    strcmp(o->address, pt->address) != 0)
			continue;
		if (o->from_rule == 0)
			profile_error(ctx, tloc, "network_rules[%d]: forwards "
			    "guest port %u on %s, which ports forwards "
			    "already", k, pt->guest, pt->address);
		else
			profile_error(ctx, tloc, "network_rules[%d]: forwards "
			    "guest port %u on %s, which network_rules[%d] "
			    "forwards already", k, pt->guest, pt->address,
			    o->from_rule);
		return (1);
	}
	return (0);
}

/*
 * The seed's socket rules: kept as written (for show), and compiled into
 * network_allow and ports, which come before them in the schema.
 */
void
profile_convert_rules(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct profile	 *p = ctx->p;
	struct buf	  w = { 0 };
	char		**v = NULL, what[64], *why;
	size_t		  nv = 0, i, len, np;
	int		  n, k, tloc, bad = 0;

	if ((n = profile_list(ctx, L, idx, s, loc, &tloc)) == -1)
		return;
	for (k = 1; k <= n; k++) {
		if (p->nports > PROFILE_LIST_MAX ||
		    p->nnetwork_allow > PROFILE_LIST_MAX) {
			profile_error(ctx, tloc, "network_rules: make more "
			    "than %d rules or port forwards in all",
			    PROFILE_LIST_MAX);
			bad = 1;
			break;
		}
		lua_rawgeti(L, idx, k);
		snprintf(what, sizeof what, "network_rules[%d]", k);
		np = p->nports;
		if (lua_type(L, -1) != LUA_TSTRING ||
		    !profile_string_ok(L, -1, &len)) {
			profile_bad_as(ctx, L, -1, what, tloc, "is not valid",
			    PROFILE_ACCEPTS_SOCKET);
			bad = 1;
		} else if (net_rule_compile(lua_tostring(L, -1), k,
		    &p->network_allow, &p->nnetwork_allow, &p->ports,
		    &p->nports, &why) == -1) {
			buf_consume(&w, w.len);
			profile_show(&w, L, -1);
			profile_error(ctx, tloc, "%s: %s %s", what, w.data,
			    why);
			free(why);
			bad = 1;
		} else {
			v = xreallocarray(v, nv + 1, sizeof *v);
			v[nv++] = xstrdup(lua_tostring(L, -1));
		}
		lua_pop(L, 1);
		for (i = np; i < p->nports; i++) {
			if (profile_rule_port_twice(ctx, tloc, k, i)) {
				bad = 1;
				break;
			}
		}
	}
	buf_free(&w);
	if (!bad && (p->nports > PROFILE_LIST_MAX ||
	    p->nnetwork_allow > PROFILE_LIST_MAX)) {
		profile_error(ctx, tloc, "network_rules: make more than %d "
		    "rules or port forwards in all", PROFILE_LIST_MAX);
		bad = 1;
	}
	profile_strv_store(ctx, s, v, nv, bad);
}

static void
profile_put_port(struct buf *b, const struct net_port *pt, int json)
{
	buf_printf(b, json ? "{" : "{ ");
	profile_put_key(b, "guest", json);
	buf_printf(b, "%u, ", pt->guest);
	profile_put_key(b, "host", json);
	buf_printf(b, "%u, ", pt->host);
	profile_put_key(b, "address", json);
	profile_put_string(b, pt->address, json);
	buf_printf(b, json ? "}" : " }");
}

/* The ports written as such; network_rules' are shown apart. */
void
profile_put_ports(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	size_t	i, n = 0;

	(void)s;
	for (i = 0; i < p->nports; i++) {
		if (p->ports[i].from_rule != 0)
			continue;
		buf_printf(b, "%s", n++ == 0 ? (json ? "[" : "{ ") : ", ");
		profile_put_port(b, &p->ports[i], json);
	}
	if (n == 0)
		buf_printf(b, json ? "[]" : "{}");
	else
		buf_printf(b, json ? "]" : " }");
}

void
profile_put_tcp(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	const struct profile_tcp_map	*m;
	size_t				 i;

	(void)s;
	if (p->nnetwork_tcp == 0) {
		buf_printf(b, json ? "[]" : "{}");
		return;
	}
	buf_printf(b, json ? "[" : "{ ");
	for (i = 0; i < p->nnetwork_tcp; i++) {
		m = &p->network_tcp[i];
		buf_printf(b, "%s%s", i == 0 ? "" : ", ", json ? "{" : "{ ");
		profile_put_key(b, "host", json);
		profile_put_string(b, m->host, json);
		buf_printf(b, ", ");
		profile_put_key(b, "port", json);
		buf_printf(b, "%u, ", m->port);
		if (m->name != NULL || json) {
			profile_put_key(b, "name", json);
			profile_put_string(b, m->name, json);
			buf_printf(b, ", ");
		}
		profile_put_key(b, "guest_port", json);
		buf_printf(b, "%u", m->guest_port);
		buf_printf(b, json ? "}" : " }");
	}
	buf_printf(b, json ? "]" : " }");
}

/*
 * After a setting's line, Lua comments for what network_rules added to it
 * (network_allow or ports), each with its rule and where that was written.
 */
void
profile_put_compiled(struct buf *b, const struct profile *p,
    const struct profile_setting *s, const char *at)
{
	const struct net_rule	*r;
	size_t				 i, start;
	int				 from;

	for (i = 0; ; i++) {
		if (s->type == PROFILE_T_ALLOW && i < p->nnetwork_allow)
			from = p->network_allow[i].from_rule;
		else if (s->type == PROFILE_T_PORTS && i < p->nports)
			from = p->ports[i].from_rule;
		else
			break;
		if (from == 0)
			continue;
		start = b->len;
		if (s->type == PROFILE_T_ALLOW) {
			r = &p->network_allow[i];
			buf_printf(b, "\t-- %s ", r->deny ? "but not" : "and");
			profile_put_string(b, r->text, 0);
		} else {
			buf_printf(b, "\t-- and ");
			profile_put_port(b, &p->ports[i], 0);
		}
		buf_printf(b, ",");
		do
			buf_add(b, " ", 1);
		while (b->len - start < 44);
		buf_printf(b, "-- network_rules[%d]%s%s\n", from,
		    at != NULL ? ", " : "", at != NULL ? at : "");
	}
}

/* In JSON, network_rules' "compiled": each allow, deny and forward. */
void
profile_put_compiled_json(struct buf *b, const struct profile *p)
{
	const struct net_rule	*r;
	size_t				 i, n = 0;

	buf_printf(b, ",\"compiled\":[");
	for (i = 0; i < p->nnetwork_allow; i++) {
		r = &p->network_allow[i];
		if (r->from_rule == 0)
			continue;
		buf_printf(b, "%s{\"rule\":%d,\"%s\":", n++ == 0 ? "" : ",",
		    r->from_rule, r->deny ? "deny" : "allow");
		profile_put_string(b, r->text, 1);
		buf_printf(b, "}");
	}
	for (i = 0; i < p->nports; i++) {
		if (p->ports[i].from_rule == 0)
			continue;
		buf_printf(b, "%s{\"rule\":%d,\"forward\":",
		    n++ == 0 ? "" : ",", p->ports[i].from_rule);
		profile_put_port(b, &p->ports[i], 1);
		buf_printf(b, "}");
	}
	buf_printf(b, "]");
}

/* network_allow as written; network_rules' are shown apart. */
void
profile_put_allow(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	char	**rules;
	size_t	  i, n;

	(void)s;
	rules = xcalloc(p->nnetwork_allow + 1, sizeof *rules);
	for (i = n = 0; i < p->nnetwork_allow; i++) {
		if (p->network_allow[i].from_rule == 0)
			rules[n++] = p->network_allow[i].text;
	}
	profile_put_list(b, rules, n, json);
	free(rules);
}

void
profile_free_allow(struct profile *p, const struct profile_setting *s)
{
	size_t	i;

	(void)s;
	for (i = 0; i < p->nnetwork_allow; i++)
		net_rule_free(&p->network_allow[i]);
	free(p->network_allow);
	p->network_allow = NULL;
	p->nnetwork_allow = 0;
}

void
profile_free_ports(struct profile *p, const struct profile_setting *s)
{
	size_t	i;

	(void)s;
	for (i = 0; i < p->nports; i++)
		free(p->ports[i].address);
	free(p->ports);
	p->ports = NULL;
	p->nports = 0;
}

void
profile_free_tcp(struct profile *p, const struct profile_setting *s)
{
	size_t	i;

	(void)s;
	for (i = 0; i < p->nnetwork_tcp; i++)
		profile_tcp_map_free(&p->network_tcp[i]);
	free(p->network_tcp);
	p->network_tcp = NULL;
	p->nnetwork_tcp = 0;
}

void
profile_accepts_allow(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a list of %s", PROFILE_ACCEPTS_RULE);
}

void
profile_accepts_ports(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a list of %s", PROFILE_ACCEPTS_PORT);
}

void
profile_accepts_tcp(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a list of at most %d %s", PROFILE_TCP_MAX,
	    PROFILE_ACCEPTS_TCP);
}

void
profile_accepts_rules(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a list of %s", PROFILE_ACCEPTS_SOCKET);
}
