/*
 * The settings that only make sense together, checked once each has been
 * converted on its own (bad[i]: setting i of profile_schema was refused,
 * so checks that read it are left out): shares against
 * virtfs_security_model, the network settings against network, and the
 * image settings against image, which is then resolved. Above the schema,
 * since the settings are found by name; the loader calls it.
 */
#include <stdlib.h>
#include <string.h>

#include <lua.h>

#include "profile_int.h"

/*
 * "passthrough" gives the guest's owners and modes to the host's files: never
 * with a read-write share (core/share.c checks --share ones at start).
 */
static void
profile_check_shares(struct profile_ctx *ctx, const int *bad)
{
	const struct profile	*p = ctx->p;
	int			 sm =
	    profile_setting_index("virtfs_security_model");
	int			 shares = profile_setting_index("shares");
	size_t			 i;

	if (bad[sm] || bad[shares] ||
	    p->virtfs_security_model != PROFILE_SM_PASSTHROUGH)
		return;
	for (i = 0; i < p->nshares && !p->shares[i].rw; i++)
		;
	if (i == p->nshares)
		return;
	profile_error(ctx, ctx->set_loc[sm], "virtfs_security_model: "
	    "\"passthrough\" would let the guest chown files and set setuid "
	    "bits on the host through the read-write share of %s; write "
	    "\"none\" (the default) or \"mapped-xattr\"", p->shares[i].host);
}

/* What network_rules compiled into, against the network mode. */
static void
profile_check_rules(struct profile_ctx *ctx, int loc)
{
	const struct profile			*p = ctx->p;
	const struct net_rule		*r;
	const char				*mode;
	size_t					 i;
	int					 out = 0, deny = 0, in = 0;

	mode = net_mode_name(p->network);
	for (i = 0; i < p->nnetwork_allow; i++) {
		r = &p->network_allow[i];
		if (r->from_rule != 0 && !r->deny && out == 0)
			out = r->from_rule;
		if (r->from_rule != 0 && r->deny && deny == 0)
			deny = r->from_rule;
	}
	for (i = 0; i < p->nports && in == 0; i++)
		in = p->ports[i].from_rule;
	if (out != 0 && p->network != NET_MODE_ALLOWLIST)
		profile_error(ctx, loc, "network_rules[%d]: ALLOW ... OUT "
		    "needs network = \"allowlist\", and network is \"%s\"; "
		    "write network = \"allowlist\" for qsup to let the rules "
		    "through", out, mode);
	if (deny != 0 && p->network == NET_MODE_OPEN)
		profile_error(ctx, loc, "network_rules[%d]: DENY ... OUT is "
		    "enforced with network = \"allowlist\" only, and "
		    "network = \"open\" lets everything through", deny);
	if (in != 0 && p->network == NET_MODE_NONE)
		profile_error(ctx, loc, "network_rules[%d]: ALLOW ... IN "
		    "forwards ports, which needs a network card, and network "
		    "is \"none\"; write network = \"restricted\" (the guest "
		    "still reaches nothing)", in);
}

/* The network settings that only make sense together. */
static void
profile_check_net(struct profile_ctx *ctx, const int *bad)
{
	const struct profile	*p = ctx->p;
	int			 net = profile_setting_index("network");
	int			 allow = profile_setting_index("network_allow");
	int			 ack =
	    profile_setting_index("network_open_ack");
	int			 ports = profile_setting_index("ports");
	int			 tcp = profile_setting_index("network_tcp");
	int			 rules = profile_setting_index("network_rules");
	int			 fw = profile_setting_index("guest_firewall");
	size_t			 i, nallow = 0, nwritten = 0, nports = 0;

	if (bad[net] || bad[allow] || bad[ack] || bad[ports] || bad[tcp] ||
	    bad[rules] || bad[fw])
		return;
	for (i = 0; i < p->nnetwork_allow; i++) {
		nallow += !p->network_allow[i].deny;
		nwritten += p->network_allow[i].from_rule == 0;
	}
	for (i = 0; i < p->nports; i++)
		nports += p->ports[i].from_rule == 0;
	if (p->network == NET_MODE_OPEN && !p->network_open_ack)
		profile_error(ctx, ctx->set_loc[net], "network: \"open\" lets "
		    "the guest reach the internet and every service listening "
		    "on the host's 127.0.0.1 (as 10.0.2.2); to accept that, "
		    "also write network_open_ack = true, or list what it needs "
		    "with network = \"allowlist\" and network_allow");
	if (p->network == NET_MODE_ALLOWLIST && nallow == 0)
		profile_error(ctx, ctx->set_loc[net], "network: \"allowlist\" "
		    "with an empty network_allow lets nothing through; list "
		    "what the guest may reach in network_allow, or write "
		    "network = \"restricted\"");
	if (p->network != NET_MODE_ALLOWLIST && nwritten > 0)
		profile_error(ctx, ctx->set_loc[allow], "network_allow: has "
		    "no effect unless network = \"allowlist\"");
	if (p->network == NET_MODE_NONE && nports > 0)
		profile_error(ctx, ctx->set_loc[ports], "ports: forwarding "
		    "needs a network card, and network is \"none\"; write "
		    "network = \"restricted\" (the guest still reaches "
		    "nothing)");
	if ((p->network == NET_MODE_NONE ||
	    p->network == NET_MODE_OPEN) && p->nnetwork_tcp > 0)
		profile_error(ctx, ctx->set_loc[tcp], "network_tcp: maps need "
		    "network = \"restricted\" or \"allowlist\", and network "
		    "is \"%s\"%s", net_mode_name(p->network),
		    p->network == NET_MODE_NONE ? " (no network card)" :
		    " (the guest reaches everything without them)");
	if (p->guest_firewall && (p->network == NET_MODE_NONE ||
	    p->network == NET_MODE_OPEN))
		profile_error(ctx, ctx->set_loc[fw], "guest_firewall: needs "
		    "network = \"restricted\" or \"allowlist\", and network "
		    "is \"%s\"%s", net_mode_name(p->network),
		    p->network == NET_MODE_NONE ? " (no network card to "
		    "guard)" : " (it would let everything through)");
	profile_check_rules(ctx, ctx->set_loc[rules]);
}

/*
 * The image settings that would do nothing (a digest for a file, a disk
 * size for the built-in guest) or cannot be (boot = "image" without one);
 * then image resolved (profile_image.c).
 */
static void
profile_check_image(struct profile_ctx *ctx, lua_State *L, const int *bad)
{
	struct profile	*p = ctx->p;
	int		 img = profile_setting_index("image");
	int		 base = profile_setting_index("image_base_url");
	int		 sha = profile_setting_index("image_sha256");
	int		 disk = profile_setting_index("disk_size");

	if (bad[img])
		return;
	if (p->image_sha256 != NULL && !bad[sha] &&
	    (p->image_kind == PROFILE_IMAGE_NONE ||
	    p->image_kind == PROFILE_IMAGE_FILE))
		profile_error(ctx, ctx->set_loc[sha], "image_sha256: pins a "
		    "downloaded image, and image is %s", p->image_kind ==
		    PROFILE_IMAGE_NONE ? "nil (the built-in guest)" :
		    "a file (nothing is downloaded)");
	if (p->disk_size != 0 && !bad[disk] &&
	    p->image_kind == PROFILE_IMAGE_NONE)
		profile_error(ctx, ctx->set_loc[disk], "disk_size: the "
		    "built-in guest has no disk; set image too");
	if (p->boot == PROFILE_BOOT_IMAGE && p->image_kind ==
	    PROFILE_IMAGE_NONE)
		profile_error(ctx, ctx->set_loc[profile_setting_index("boot")],
		    "boot: \"image\" boots the image's own kernel, and image "
		    "is nil; set image too");
	if (p->boot == PROFILE_BOOT_IMAGE && (p->kernel != NULL ||
	    p->initramfs != NULL))
		profile_error(ctx, ctx->set_loc[profile_setting_index(
		    p->kernel != NULL ? "kernel" : "initramfs")], "%s: "
		    "boot = \"image\" boots the image's own kernel; leave "
		    "kernel and initramfs nil", p->kernel != NULL ? "kernel" :
		    "initramfs");
	profile_image_resolve(ctx, L, ctx->set_loc[img], bad[base]);
}

/*
 * setup needs a disk to cache its layers on (the built-in guest has
 * none), and its network is checked as network is.
 */
static void
profile_check_setup(struct profile_ctx *ctx, const int *bad)
{
	const struct profile	*p = ctx->p;
	int			 setup = profile_setting_index("setup");
	int			 net = profile_setting_index("setup_network");
	int			 ack =
	    profile_setting_index("network_open_ack");

	if (!bad[setup] && p->nsetup > 0 && !bad[profile_setting_index(
	    "image")] && p->image_kind == PROFILE_IMAGE_NONE)
		profile_error(ctx, ctx->set_loc[setup], "setup: the steps are "
		    "cached as layers of an image, and image is nil (the "
		    "built-in guest has no disk); set image too");
	if (!bad[net] && !bad[ack] && p->setup_network == NET_MODE_OPEN &&
	    !p->network_open_ack)
		profile_error(ctx, ctx->set_loc[net], "setup_network: \"open\" "
		    "lets setup reach the internet and every service on the "
		    "host's 127.0.0.1; to accept that, also write "
		    "network_open_ack = true, or list what setup needs: "
		    "setup_network = { \"deb.debian.org:80\" }");
	if (!bad[net] && !bad[setup] && p->nsetup == 0 &&
	    p->setup_network != NET_MODE_NONE)
		profile_error(ctx, ctx->set_loc[net], "setup_network: has no "
		    "effect without setup steps");
}

/* After every setting is converted (under lua_pcall: it may allocate). */
void
profile_check(struct profile_ctx *ctx, lua_State *L, const int *bad)
{
	profile_check_shares(ctx, bad);
	profile_check_net(ctx, bad);
	profile_check_image(ctx, L, bad);	/* image_url, from the catalog */
	profile_check_setup(ctx, bad);
}
