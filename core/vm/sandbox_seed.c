/*
 * The guest's configuration, in the seed's qsup-config format: on the
 * seed ISO of a cold boot, or posted to /setup after a template build or
 * restore. Its values are percent-encoded (core/wire/wire.h). And what
 * the agent's answer to a launch's first request says of it (the ping of
 * a boot, the /setup of a restore or a saved build), reported to the
 * state table as an event (sb->event).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>
#include <jansson.h>

#include "sandbox_int.h"

/*
 * The guest's own firewall (guest_firewall), as iptables-restore input:
 * out only to what qsup's network answers for this mode (its DNS, and in
 * allowlist mode the proxy and the TCP maps), in only to forwarded ports.
 * A second line behind the host's enforcement, never instead of it.
 */
static void
sandbox_firewall(struct sandbox *sb, struct buf *b)
{
	const struct profile	*p = sb->profile;
	size_t			 i;

	buf_puts(b, "*filter\n:INPUT DROP [0:0]\n:FORWARD DROP [0:0]\n"
	    ":OUTPUT DROP [0:0]\n-A INPUT -i lo -j ACCEPT\n"
	    "-A OUTPUT -o lo -j ACCEPT\n"
	    "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n"
	    "-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n");
	buf_printf(b, "-A OUTPUT -d %s/32 -p udp --dport 53 -j ACCEPT\n",
	    NET_DNS_ADDR);
	if (p->network == NET_MODE_ALLOWLIST)
		buf_printf(b, "-A OUTPUT -d %s/32 -p tcp --dport %d -j ACCEPT\n",
		    NET_PROXY_ADDR, NET_PROXY_PORT);
	/* TCP maps (net_add_tcp_map). */
	buf_printf(b, "-A OUTPUT -p tcp -m iprange --dst-range "
	    "10.0.2.%d-10.0.2.%d -j ACCEPT\n", NET_MAP_FIRST,
	    NET_MAP_FIRST + NET_MAPS_MAX - 1);
	for (i = 0; i < p->nports; i++)
		buf_printf(b, "-A INPUT -p tcp --dport %u -j ACCEPT\n",
		    p->ports[i].guest);
	buf_puts(b, "COMMIT\n");
}

/* Does a share show host library directories (closure_prepare)? */
static int
sandbox_host_libs(struct sandbox *sb)
{
	size_t	i;

	for (i = 0; i < sb->nshares; i++) {
		if (sb->shares[i].host_libs)
			return (1);
	}
	return (0);
}

/* The config's line for the image's root: its disk, grown or not. */
static void
sandbox_root_line(struct sandbox *sb, struct buf *cfg)
{
	buf_printf(cfg, "root %s %s %llu\n", QSUP_ROOT_SERIAL,
	    sb->disk.grow ? "grow" : "keep", (unsigned long long)sb->disk.size);
}

/* The guest's configuration, in the seed's qsup-config format. */
static void
sandbox_config(struct sandbox *sb, struct buf *cfg)
{
	struct timespec	 ts;
	struct buf	 rules = { 0 };
	struct share	*sh;
	char		*entropy, *src, *const *env;
	size_t		 i, j;

	clock_gettime(CLOCK_REALTIME, &ts);
	entropy = token_hex(64);
	buf_printf(cfg, "token %s\nhostname " SANDBOX_HOSTNAME "\n"
	    "time %lld.%09ld\nentropy %s\n", sb->token, (long long)ts.tv_sec,
	    ts.tv_nsec, entropy);
	explicit_bzero(entropy, strlen(entropy));
	free(entropy);
	/* The proxy first: the profile's own env may override it. */
	for (env = sb->net != NULL ? net_guest_env(sb->net) : NULL;
	    env != NULL && *env != NULL; env++)
		buf_seed_line(cfg, "env", *env);
	for (i = 0; i < sb->profile->nenv; i++)
		buf_seed_line(cfg, "env", sb->profile->env[i]);
	if (sb->profile->guest_firewall && sb->net != NULL) {
		sandbox_firewall(sb, &rules);
		buf_seed_line(cfg, "firewall", rules.data);
		buf_free(&rules);
	}
	if (sb->profile->cwd != NULL)
		buf_seed_line(cfg, "cwd", sb->profile->cwd);
	/*
	 * The image's root before the shares, which mount inside it;
	 * an image that boots itself has its root already.
	 */
	if (sb->disk.base != NULL && !sandbox_boot_image(sb))
		sandbox_root_line(sb, cfg);
	/* Its glibc matters only under the host's library directories. */
	if (sb->disk.base != NULL && sandbox_host_libs(sb))
		buf_puts(cfg, "root_glibc 1\n");
	/* The cow shares' disk, before the mounts that use it. */
	if (sb->cow.path != NULL)
		buf_printf(cfg, "cow %s\n", sb->cow.serial);
	for (i = 0; i < sb->nshares; i++) {
		buf_printf(cfg, "mount %s ", sb->shares[i].tag);
		buf_seed_value(cfg, sb->shares[i].guest);
		buf_printf(cfg, " %s\n", sb->shares[i].cow ? "cow" :
		    sb->shares[i].readonly ? "ro" : "rw");
	}
	/* After every mount: their sources lie in the shares. */
	for (i = 0; i < sb->nshares; i++) {
		sh = &sb->shares[i];
		for (j = 0; j < sh->nbinds; j++) {
			xasprintf(&src, "%s%s", strcmp(sh->guest, "/") == 0 ?
			    "" : sh->guest, sh->binds[j].src);
			buf_add(cfg, "bind ", 5);
			buf_seed_value(cfg, src);
			buf_add(cfg, " ", 1);
			buf_seed_value(cfg, sh->binds[j].dst);
			buf_printf(cfg, " %s\n", sh->readonly ? "ro" : "rw");
			free(src);
		}
	}
}

/* The seed ISO of a cold boot: the configuration, and cloud-init's files. */
int
sandbox_write_seed(struct sandbox *sb, char **cause)
{
	struct seed_file	 files[5];
	struct buf		 cfg = { 0 }, meta = { 0 }, user = { 0 };
	char			*path, *agent = NULL;
	size_t			 n = 3, agent_len;
	int			 rc;

	/* An image that boots itself gets the agent, and a bootstrap. */
	if (sandbox_boot_image(sb)) {
		if (sandbox_boot_agent(sb, &agent, &agent_len, cause) == -1)
			return (-1);
		sandbox_boot_user_data(sb, &user);
		files[3].name = SANDBOX_BOOT_AGENT;
		files[3].data = agent;
		files[3].len = agent_len;
		files[4].name = "network-config";
		files[4].data = sandbox_boot_network_config();
		files[4].len = strlen(files[4].data);
		n = 5;
	} else
		buf_puts(&user, "#cloud-config\n");
	/*
	 * An image booting to template state, or restored from one, has
	 * its seed too (the same in both: a restore's devices are the
	 * build's), but what makes the sandbox its own comes with /setup.
	 */
	if (sb->mode != SB_COLD)
		buf_puts(&cfg, "template 1\n");
	else
		sandbox_config(sb, &cfg);
	/* meta-data and user-data keep the seed usable by cloud-init. */
	buf_printf(&meta, "instance-id: qsup-%s\nlocal-hostname: qsup\n",
	    strrchr(sb->rundir, '-') + 1);
	files[0].name = "meta-data";
	files[0].data = meta.data;
	files[0].len = meta.len;
	files[1].name = QSUP_SEED_CONFIG;
	files[1].data = cfg.data;
	files[1].len = cfg.len;
	files[2].name = "user-data";
	files[2].data = user.data;
	files[2].len = user.len;
	xasprintf(&path, "%s/seed.iso", sb->rundir);
	rc = seed_iso_write(path, files, n, cause);
	free(path);
	explicit_bzero(cfg.data, cfg.len);
	buf_free(&cfg);
	buf_free(&meta);
	buf_free(&user);
	free(agent);
	return (rc);
}

/* A mount error names a tag; say which host tree that is. */
static const char *
sandbox_share_named(struct sandbox *sb, const char *body)
{
	static char	 what[PATH_MAX + 32];
	const char	*p;
	size_t		 i;

	if ((p = strstr(body, "mount qsup")) == NULL)
		return ("");
	for (i = 0; i < sb->nshares; i++) {
		if (strncmp(p + 6, sb->shares[i].tag,
		    strlen(sb->shares[i].tag)) == 0 &&
		    p[6 + strlen(sb->shares[i].tag)] == ' ') {
			snprintf(what, sizeof what, " (the share of %s)",
			    sb->shares[i].host);
			return (what);
		}
	}
	return ("");
}


/*
 * A configured agent (not one in template state) of a sandbox with an
 * image says which device it mounted as the root (its commands would
 * otherwise run in the initramfs, silently) and the image's glibc, which
 * must not be newer than the host's when host library directories are
 * shared over the image's. NULL, or why the sandbox cannot go on.
 */
static char *
sandbox_image_refused(struct sandbox *sb, const char *body, size_t len)
{
	json_t		*j;
	char		*why = NULL;

	if (sb->disk.base == NULL)
		return (NULL);
	if ((j = json_read(body, len, 0)) == NULL)
		return (NULL);	/* the state table judges it */
	if (json_is_true(json_object_get(j, "template")))
		goto out;
	if (json_path_str(j, "root") == NULL) {
		why = xstrdup("the agent answered without having mounted the "
		    "image's root file system (an agent too old for disk "
		    "images?)");
		goto out;
	}
	log_debug("the image's root is %s in the guest (glibc %s)",
	    json_path_str(j, "root"), json_path_str(j, "glibc") != NULL ?
	    json_path_str(j, "glibc") : "not found");
	if (sandbox_host_libs(sb))
		(void)closure_glibc_newer(json_path_str(j, "glibc"), &why);
out:
	json_decref(j);
	return (why);
}

/*
 * The answer to the first request of a launch: the ping of a boot, or
 * the /setup of a restore or a saved build.
 */
void
sandbox_reply_cb(int status, const char *body, size_t len, void *arg)
{
	struct sandbox	*sb = arg;
	char		*msg;

	if (status == AGENT_CLOSED)
		return;		/* QEMU is gone; SBE_EXITED says why */
	if (status == 200 &&
	    (msg = sandbox_image_refused(sb, body, len)) != NULL) {
		sb->event(sb, SBE_REFUSED, msg);
		free(msg);
		return;
	}
	if (status == 200 || status == AGENT_BROKEN) {
		xasprintf(&msg, "%.*s", (int)len, body);
		sb->event(sb, status == 200 ? SBE_UP : SBE_BROKEN, msg);
	} else {
		xasprintf(&msg, "guest setup failed (%d): %.*s%s", status,
		    (int)len, body, sandbox_share_named(sb, body));
		/* A template of another agent would refuse so. */
		sb->event(sb, status == 503 ? SBE_SETUP_FAILED :
		    SBE_REFUSED, msg);
	}
	free(msg);
}

/* Give the guest its own configuration (template builds and restores). */
void
sandbox_send_setup(struct sandbox *sb)
{
	struct buf	cfg = { 0 };

	sandbox_config(sb, &cfg);
	agent_request(sb->ports[0], "POST", "/setup", cfg.data, cfg.len,
	    sandbox_reply_cb, NULL, sb);
	explicit_bzero(cfg.data, cfg.len);
	buf_free(&cfg);
}

/*
 * Does a template of this sandbox have the image's root mounted (and its
 * overlay kept, template.c's KEY.disk)? Every disk image qsup mounts as
 * the root, not one that boots itself, nor a disk of the guest's own
 * (never a template's).
 */
int
sandbox_root_early(const struct sandbox *sb)
{
	return (sb->disk.base != NULL && !sb->disk.writable &&
	    !sandbox_boot_image(sb));
}

/*
 * A template build of such an image: the root, mounted before the save,
 * and what /setup writes into it that every sandbox shares (its host
 * name), so that a restore has it all done. The answer is the build's
 * first, as a ping's would be.
 */
void
sandbox_send_root(struct sandbox *sb)
{
	struct buf	cfg = { 0 };

	sandbox_root_line(sb, &cfg);
	buf_puts(&cfg, "hostname " SANDBOX_HOSTNAME "\n");
	agent_request(sb->ports[0], "POST", "/root", cfg.data, cfg.len,
	    sandbox_reply_cb, NULL, sb);
	buf_free(&cfg);
}
