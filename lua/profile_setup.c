/*
 * setup and setup_network: the steps run once over a profile's image,
 * each cached as a layer (core/image/image_layer.c), and the network
 * those steps get: a mode as network takes it, or the rules of an
 * allowlist, which is the usual case (a package mirror, nothing else).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_int.h"

/* One step written as a list: its argv, or NULL (reported). */
static char **
profile_step_argv(struct profile_ctx *ctx, lua_State *L, int k, int loc)
{
	char		**argv;
	char		  what[64];
	size_t		  len;
	lua_Integer	  n, i;
	int		  idx = lua_gettop(L), bad = 0;

	n = (lua_Integer)lua_rawlen(L, idx);
	if (n == 0 || n > PROFILE_LIST_MAX) {
		profile_error(ctx, loc, "setup[%d]: %s", k, n == 0 ?
		    "an empty list; a step is a string (run by sh -c) or a "
		    "list of strings (argv)" : "too many words");
		return (NULL);
	}
	argv = xcalloc((size_t)n + 1, sizeof *argv);
	for (i = 1; i <= n; i++) {
		lua_rawgeti(L, idx, i);
		snprintf(what, sizeof what, "setup[%d][%lld]", k, (long long)i);
		if (lua_type(L, -1) != LUA_TSTRING ||
		    !profile_string_ok(L, -1, &len) || (i == 1 && len == 0)) {
			profile_bad_as(ctx, L, -1, what, loc, "is not valid",
			    i == 1 ? "a non-empty string (the program)" :
			    "a string");
			bad = 1;
		} else
			argv[i - 1] = xstrdup(lua_tostring(L, -1));
		lua_pop(L, 1);
	}
	if (bad) {
		for (i = 0; i < n; i++)
			free(argv[i]);
		free(argv);
		return (NULL);
	}
	return (argv);
}

void
profile_convert_steps(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct profile_step	*v = NULL, st;
	char			 what[64];
	size_t			 nv = 0, i, len;
	int			 n, k, tloc, iloc, bad = 0;

	if ((n = profile_list(ctx, L, idx, s, loc, &tloc)) == -1)
		return;
	for (k = 1; k <= n; k++) {
		lua_rawgeti(L, idx, k);
		/* A list step has a line of its own; a string, the list's. */
		iloc = lua_type(L, -1) == LUA_TTABLE ?
		    profile_item_loc(L, lua_gettop(L), tloc) : tloc;
		snprintf(what, sizeof what, "setup[%d]", k);
		memset(&st, 0, sizeof st);
		if (lua_type(L, -1) == LUA_TSTRING &&
		    profile_string_ok(L, -1, &len) && len > 0) {
			st.shell = 1;
			st.argv = xcalloc(4, sizeof *st.argv);
			st.argv[0] = xstrdup("sh");
			st.argv[1] = xstrdup("-c");
			st.argv[2] = xstrdup(lua_tostring(L, -1));
		} else if (lua_type(L, -1) == LUA_TTABLE)
			st.argv = profile_step_argv(ctx, L, k, iloc);
		else
			profile_bad_as(ctx, L, -1, what, iloc, "is not a step",
			    "a non-empty string (run by sh -c) or a list of "
			    "strings (argv): \"apt-get update\", { \"make\", "
			    "\"-j2\" }");
		lua_pop(L, 1);
		if (st.argv == NULL) {
			bad = 1;
			continue;
		}
		v = xreallocarray(v, nv + 1, sizeof *v);
		v[nv++] = st;
	}
	if (bad) {
		for (i = 0; i < nv; i++)
			profile_step_free(&v[i]);
		free(v);
		return;
	}
	ctx->p->setup = v;
	ctx->p->nsetup = nv;
}

void
profile_step_free(struct profile_step *st)
{
	size_t	i;

	for (i = 0; st->argv != NULL && st->argv[i] != NULL; i++)
		free(st->argv[i]);
	free(st->argv);
	st->argv = NULL;
}

void
profile_accepts_steps(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a list of steps, each a string (run by sh -c) or a "
	    "list of strings (argv)");
}

void
profile_put_steps(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	size_t	i, n;

	(void)s;
	buf_puts(b, json ? "[" : "{");
	for (i = 0; i < p->nsetup; i++) {
		if (i > 0)
			buf_puts(b, json ? "," : ", ");
		if (p->setup[i].shell)
			profile_put_string(b, p->setup[i].argv[2], json);
		else {
			for (n = 0; p->setup[i].argv[n] != NULL; n++)
				;
			profile_put_list(b, p->setup[i].argv, n, json);
		}
	}
	buf_puts(b, json ? "]" : "}");
}

void
profile_free_steps(struct profile *p, const struct profile_setting *s)
{
	size_t	i;

	(void)s;
	for (i = 0; i < p->nsetup; i++)
		profile_step_free(&p->setup[i]);
	free(p->setup);
	p->setup = NULL;
	p->nsetup = 0;
}

/*
 * setup_network: "none", "restricted" or "open" (with network_open_ack,
 * as network), or a list of network_allow's "HOST[:PORT]" rules, which
 * makes it an allowlist of them (one rule alone, as --set gives it, is
 * taken as such a list). "allowlist" alone would allow nothing,
 * and a rule the policy cannot express is refused, named.
 */
void
profile_convert_setup_net(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct net_rule	*v = NULL, r;
	struct buf	 w = { 0 };
	const char	*str;
	char		 what[64], *why = NULL;
	size_t		 nv = 0, i, len;
	int		 n, k, tloc, bad = 0;

	if (lua_type(L, idx) == LUA_TSTRING) {
		str = lua_tostring(L, idx);
		if (strcmp(str, "none") == 0)
			ctx->p->setup_network = NET_MODE_NONE;
		else if (strcmp(str, "restricted") == 0)
			ctx->p->setup_network = NET_MODE_RESTRICTED;
		else if (strcmp(str, "open") == 0)
			ctx->p->setup_network = NET_MODE_OPEN;
		else if (strcmp(str, "allowlist") == 0)
			profile_error(ctx, loc, "setup_network: an allowlist "
			    "is written as its rules: setup_network = { "
			    "\"deb.debian.org:80\", \"deb.debian.org:443\" }");
		else if (strpbrk(str, ".:/[") != NULL &&
		    net_rule_parse(str, &r, &why) == 0) {
			/*
			 * One rule, as --set gives it: deb.debian.org:80.
			 * A bare word is a misspelt mode, not a host.
			 */
			ctx->p->setup_network = NET_MODE_ALLOWLIST;
			ctx->p->setup_allow = xcalloc(1, sizeof r);
			ctx->p->setup_allow[0] = r;
			ctx->p->nsetup_allow = 1;
		} else {
			free(why);
			why = NULL;
			profile_bad(ctx, L, idx, s, loc, "is not valid");
		}
		return;
	}
	if ((n = profile_list(ctx, L, idx, s, loc, &tloc)) == -1)
		return;
	for (k = 1; k <= n; k++) {
		lua_rawgeti(L, idx, k);
		snprintf(what, sizeof what, "setup_network[%d]", k);
		if (lua_type(L, -1) != LUA_TSTRING ||
		    !profile_string_ok(L, -1, &len)) {
			profile_bad_as(ctx, L, -1, what, tloc, "is not valid",
			    PROFILE_ACCEPTS_RULE);
			bad = 1;
		} else if (net_rule_parse(lua_tostring(L, -1), &r, &why) ==
		    -1) {
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
	if (!bad && nv == 0) {
		profile_error(ctx, tloc, "setup_network: an empty allowlist "
		    "lets nothing through; list what setup may reach, or "
		    "write \"none\"");
		bad = 1;
	}
	if (bad) {
		for (i = 0; i < nv; i++)
			net_rule_free(&v[i]);
		free(v);
		return;
	}
	ctx->p->setup_network = NET_MODE_ALLOWLIST;
	ctx->p->setup_allow = v;
	ctx->p->nsetup_allow = nv;
}

void
profile_accepts_setup_net(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "\"none\", \"restricted\", \"open\", or an allowlist: "
	    "a list of \"HOST[:PORT]\" rules, as network_allow takes them "
	    "(or one such rule)");
}

void
profile_put_setup_net(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	char	**rules;
	size_t	  i;

	(void)s;
	if (p->setup_network != NET_MODE_ALLOWLIST) {
		profile_put_string(b, net_mode_name(p->setup_network), json);
		return;
	}
	rules = xcalloc(p->nsetup_allow + 1, sizeof *rules);
	for (i = 0; i < p->nsetup_allow; i++)
		rules[i] = p->setup_allow[i].text;
	profile_put_list(b, rules, p->nsetup_allow, json);
	free(rules);
}

void
profile_free_setup_net(struct profile *p, const struct profile_setting *s)
{
	size_t	i;

	(void)s;
	for (i = 0; i < p->nsetup_allow; i++)
		net_rule_free(&p->setup_allow[i]);
	free(p->setup_allow);
	p->setup_allow = NULL;
	p->nsetup_allow = 0;
	p->setup_network = NET_MODE_NONE;
}
