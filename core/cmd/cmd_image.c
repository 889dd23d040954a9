/*
 * "qsup image pull | ls | rm | build": the disk images in images_dir,
 * pulled from the profile's image (a catalog name or a URL) or one named,
 * listed with what they came from and which sandbox uses them, removed
 * when none does, or built from a container's file system. The mechanics
 * are core/image's.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "cmd.h"
#include "image.h"

static int	cmd_image_exec(const struct cmd_entry *, int, char **);
static int	cmd_image_pull(const struct cmd_entry *, int, char **);
static int	cmd_image_ls(const struct cmd_entry *, int, char **);
static int	cmd_image_rm(const struct cmd_entry *, int, char **);
static int	cmd_image_build(const struct cmd_entry *, int, char **);
static int	cmd_image_prune(const struct cmd_entry *, int, char **);

#define CMD_IMAGE_SET		(CMD_O_LONG + 0)
#define CMD_IMAGE_JSON		(CMD_O_LONG + 1)
#define CMD_IMAGE_SHA256	(CMD_O_LONG + 2)
#define CMD_IMAGE_SUMS_URL	(CMD_O_LONG + 3)
#define CMD_IMAGE_UNVERIFIED	(CMD_O_LONG + 4)
#define CMD_IMAGE_SIZE		(CMD_O_LONG + 5)
#define CMD_IMAGE_OLDER		(CMD_O_LONG + 6)

#define CMD_IMAGE_PROFILE_OPTIONS \
	{ 'p', "profile", CMD_V_PROFILE, "FILE", 0, \
	  "the profile whose images_dir (and, for pull, whose\n" \
	  "image settings) are used (default: builtin:default)" }, \
	{ CMD_IMAGE_SET, "set", CMD_V_SETTING, "NAME=VALUE", CMD_O_REPEAT, \
	  "override a profile setting (repeatable)" }
/* pull's options, which ls and rm take too, unsaid. */
#define CMD_IMAGE_PULL_OPTIONS(hide) \
	{ CMD_IMAGE_SHA256, "sha256", CMD_V_STRING, "HEX", (hide), \
	  "the digest to check against (image_sha256)" }, \
	{ CMD_IMAGE_SUMS_URL, "sums-url", CMD_V_STRING, "URL", (hide), \
	  "the checksum file to read it from (image_sums_url)" }, \
	{ CMD_IMAGE_UNVERIFIED, "unverified", CMD_V_NONE, NULL, (hide), \
	  "no digest found: use it anyway (image_unverified)" }
#define CMD_IMAGE_VERBOSE(hide) \
	{ 'v', "verbose", CMD_V_NONE, NULL, (hide), \
	  "say what qsup is doing" }, \
	CMD_OPTION_HELP, \
	{ 0, NULL, 0, NULL, 0, NULL }

static const struct cmd_option cmd_image_pull_options[] = {
	CMD_IMAGE_PROFILE_OPTIONS,
	CMD_IMAGE_PULL_OPTIONS(0),
	{ CMD_IMAGE_JSON, "json", CMD_V_NONE, NULL, 0,
	  "no progress; a JSON object on stdout" },
	CMD_IMAGE_VERBOSE(0)
};

static const struct cmd_option cmd_image_ls_options[] = {
	CMD_IMAGE_PROFILE_OPTIONS,
	{ CMD_IMAGE_JSON, "json", CMD_V_NONE, NULL, 0,
	  "a JSON object on stdout" },
	CMD_IMAGE_PULL_OPTIONS(CMD_O_HIDDEN),
	CMD_IMAGE_VERBOSE(CMD_O_HIDDEN)
};

static const struct cmd_option cmd_image_rm_options[] = {
	CMD_IMAGE_PROFILE_OPTIONS,
	{ CMD_IMAGE_JSON, "json", CMD_V_NONE, NULL, CMD_O_HIDDEN, NULL },
	CMD_IMAGE_PULL_OPTIONS(CMD_O_HIDDEN),
	CMD_IMAGE_VERBOSE(CMD_O_HIDDEN)
};

static const struct cmd_option cmd_image_prune_options[] = {
	CMD_IMAGE_PROFILE_OPTIONS,
	{ CMD_IMAGE_OLDER, "older-than", CMD_V_STRING, "AGE", 0,
	  "only layers unused for AGE at least (seconds, or\n"
	  "30m, 12h, 7d)" },
	{ CMD_IMAGE_JSON, "json", CMD_V_NONE, NULL, 0,
	  "a JSON object on stdout" },
	CMD_IMAGE_PULL_OPTIONS(CMD_O_HIDDEN),
	CMD_IMAGE_VERBOSE(CMD_O_HIDDEN)
};

static const struct cmd_option cmd_image_build_options[] = {
	{ 'o', "output", CMD_V_FILE, "FILE", 0,
	  "the image to write (required)" },
	{ CMD_IMAGE_SIZE, "size", CMD_V_SIZE, "SIZE", 0,
	  "the disk's size (4G, 512M, bytes; default: the\n"
	  "tree's size, a third more and 64 MiB)" },
	{ 'p', "profile", CMD_V_PROFILE, "FILE", 0,
	  "docker://REF only: the profile whose registries,\n"
	  "images_dir (the blob cache) and image_max_size the\n"
	  "pull uses (default: builtin:default)" },
	{ CMD_IMAGE_SET, "set", CMD_V_SETTING, "NAME=VALUE", CMD_O_REPEAT,
	  "docker://REF only: override a profile setting\n"
	  "(repeatable)" },
	CMD_IMAGE_VERBOSE(0)
};

static const struct cmd_entry cmd_image_pull_entry = {
	.name = "pull",
	.usage = "image pull [--profile FILE] [options] [NAME|URL|docker://REF]",
	.summary = "download an image into images_dir, verified",
	.help =
"Download NAME (from the catalog) or URL, or the profile's image, into\n"
"images_dir, checked against image_sha256, else a SHA256SUMS or SHA512SUMS\n"
"file beside it (image_sums_url: another one); refused with no digest\n"
"unless image_unverified is set. Resumed where a dropped connection, a\n"
"stall or an interrupted pull stopped. At most image_max_size bytes, and\n"
"never more than images_dir's disk has room for. An image already there\n"
"is used as it is. The path is printed on stdout. HTTPS trusts the\n"
"system's CAs, or the bundle named by $CURL_CA_BUNDLE or $SSL_CERT_FILE\n"
"(and $SSL_CERT_DIR).\n"
"docker://REF ([REGISTRY/]REPO[:TAG][@sha256:HEX], Docker Hub's when no\n"
"registry is named) is pulled from its OCI registry, every blob checked\n"
"against its digest, and built into a bootable image; credentials come\n"
"from $REGISTRY_AUTH_FILE, containers' auth.json or ~/.docker/config.json\n"
"(or the docker-credential-NAME its credHelpers or credsStore names),\n"
"mirrors and insecure registries from the profile's registries setting\n"
"and registries.conf.\n"
"\n",
	.options = cmd_image_pull_options,
	.notes =
"\n"
"$QSUP_IMAGE_STALL_TIMEOUT: seconds without data before giving up (30).\n",
	.exec = cmd_image_pull
};

static const struct cmd_entry cmd_image_ls_entry = {
	.name = "ls",
	.usage = "image ls [--profile FILE] [--json]",
	.summary = "the images: size, digest, source, in use by; and "
	    "setup's layers",
	.options = cmd_image_ls_options,
	.exec = cmd_image_ls
};

static const struct cmd_entry cmd_image_rm_entry = {
	.name = "rm",
	.usage = "image rm [--profile FILE] NAME...",
	.summary = "remove images no running sandbox uses",
	.options = cmd_image_rm_options,
	.exec = cmd_image_rm
};

static const struct cmd_entry cmd_image_prune_entry = {
	.name = "prune",
	.usage = "image prune [--profile FILE] [--older-than AGE] [--json]",
	.summary = "remove setup's layers no running sandbox uses, unused blobs",
	.help =
"Remove the layers of setup steps (images_dir/layers) that no run holds:\n"
"a run holds every layer of its chain while it runs, and those are kept,\n"
"with their parents. Base images are never removed (qsup image rm). The\n"
"docker:// blob cache loses the blobs and tag records no image in\n"
"images_dir uses (unless a docker:// pull is under way: then it is kept).\n"
"\n",
	.options = cmd_image_prune_options,
	.exec = cmd_image_prune
};

static const struct cmd_entry cmd_image_build_entry = {
	.name = "build",
	.usage = "image build FROM -o OUT.qcow2 [--size SIZE] [--profile FILE] "
	    "[--set NAME=VALUE]",
	.summary = "a bootable image from a directory, tarball or OCI layout",
	.help =
"Make OUT.qcow2, which qsup run --set image=OUT.qcow2 boots, from FROM:\n"
"a directory, a tarball (docker/podman export, mmdebstrap; plain, gzip,\n"
"xz or zstd), oci:DIR[:TAG], an OCI image layout (skopeo copy, podman\n"
"save --format oci-dir), or docker://REF, pulled from its registry as\n"
"qsup image pull pulls it (the registries setting of --profile and\n"
"--set, and registries.conf); the layers applied in order with their\n"
"whiteouts. No privileges needed: owners, modes, device nodes, hard\n"
"links and xattrs are the archive's, not the builder's. Every entry is\n"
"checked first (no absolute path, no \"..\", no link out of the tree),\n"
"every OCI blob's digest too. An OCI config's Env, WorkingDir and\n"
"Entrypoint become the sandbox's defaults (the image's "
QSUP_IMAGE_CONF ").\n"
"On any failure or signal nothing is left at OUT.\n"
"\n",
	.options = cmd_image_build_options,
	.exec = cmd_image_build
};

static const struct cmd_entry *const cmd_image_subs[] = {
	&cmd_image_pull_entry,
	&cmd_image_ls_entry,
	&cmd_image_rm_entry,
	&cmd_image_build_entry,
	&cmd_image_prune_entry,
	NULL
};

const struct cmd_entry cmd_image_entry = {
	.name = "image",
	.summary = "pull, list, remove or build disk images",
	.subs = cmd_image_subs,
	.exec = cmd_image_exec
};

struct cmd_image_opts {
	const char	*profile;
	char		**sets;		/* one more slot, for pull's image */
	size_t		 nsets;
	int		 json;
	const char	*sha256;	/* pull's --sha256, --sums-url */
	const char	*sums_url;
	int		 unverified;	/* --unverified */
	int		 optind;
};

/* The options every subcommand takes; -1 on a usage error (said). */
static int
cmd_image_args(const struct cmd_entry *self, int argc, char **argv,
    struct cmd_image_opts *o)
{
	struct cmd_args	  a;
	char		**sets, *what;
	int		  rc;

	memset(o, 0, sizeof *o);
	if ((rc = cmd_args_parse(self, argc, argv, &a)) == 1)
		cmd_usage(self, stdout);
	else if (rc == -1) {
		xasprintf(&what, "image %s", self->name);
		(void)cmd_args_bad(&a, what);
		free(what);
	} else {
		o->profile = cmd_args_get(&a, 'p');
		sets = cmd_args_list(&a, CMD_IMAGE_SET, &o->nsets);
		o->sets = xcalloc(o->nsets + 1, sizeof *o->sets);
		if (o->nsets > 0)
			memcpy(o->sets, sets, o->nsets * sizeof *o->sets);
		o->json = cmd_args_has(&a, CMD_IMAGE_JSON);
		o->sha256 = cmd_args_get(&a, CMD_IMAGE_SHA256);
		o->sums_url = cmd_args_get(&a, CMD_IMAGE_SUMS_URL);
		o->unverified = cmd_args_has(&a, CMD_IMAGE_UNVERIFIED);
		if (cmd_args_has(&a, 'v'))
			log_verbose = 1;
		o->optind = argc - a.argc;
	}
	cmd_args_free(&a);
	return (rc);
}

/* The profile named (or the default), with o's --set and extra. */
static int
cmd_image_profile(struct cmd_image_opts *o, char *extra, struct profile *p)
{
	char	*cause;

	if (extra != NULL)
		o->sets[o->nsets++] = extra;
	if (profile_load_set(p, o->profile, o->sets, o->nsets, &cause) == -1) {
		fprintf(stderr, "%s\n", cause);
		free(cause);
		return (-1);
	}
	return (0);
}

/* images_dir: the profile's when one is named or --set, else default. */
static char *
cmd_image_dir(struct cmd_image_opts *o)
{
	struct profile	 p;
	char		*dir;

	if (o->profile == NULL && o->nsets == 0)
		return (image_default_dir());
	if (cmd_image_profile(o, NULL, &p) == -1)
		return (NULL);
	dir = p.images_dir != NULL ? xstrdup(p.images_dir) :
	    image_default_dir();
	profile_free(&p);
	return (dir);
}

/* A pull of "qsup image pull", and the signal that stopped it. */
struct cmd_image_pulling {
	struct pull	 p;
	int		 sig;
};

/* SIGINT, SIGTERM: stop, keeping the part for the next pull. */
static void
cmd_image_pull_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct cmd_image_pulling	*ip = w->data;

	(void)loop;
	(void)revents;
	ip->sig = w->signum;
	pull_cancel(&ip->p);
}

/* Pull req on the default loop until done or a signal; qsup's status. */
static int
cmd_image_pull_run(const struct image_req *req, int json)
{
	struct ev_loop			*loop = ev_default_loop(EVFLAG_AUTO);
	struct cmd_image_pulling	 ip = { .sig = 0 };
	struct pull			*cp = &ip.p;
	ev_signal			 si, st;
	struct buf			 b = { 0 };
	int				 rc = 0;

	ev_signal_init(&si, cmd_image_pull_signal, SIGINT);
	ev_signal_init(&st, cmd_image_pull_signal, SIGTERM);
	si.data = st.data = &ip;
	ev_signal_start(loop, &si);
	ev_signal_start(loop, &st);
	(void)pull_get(loop, req, cp);
	ev_signal_stop(loop, &si);
	ev_signal_stop(loop, &st);
	if (ip.sig != 0) {
		log_warnx("interrupted: the part is kept, and the next pull "
		    "resumes it");
		rc = 128 + ip.sig;
	} else if (cp->path == NULL) {
		log_warnx("image pull: %s", cp->cause);
		rc = QSUP_EXIT_ERROR;
	} else if (json) {
		buf_puts(&b, "{\"path\":");
		buf_json_string(&b, cp->path);
		buf_puts(&b, ",\"url\":");
		buf_json_string(&b, req->url);
		buf_printf(&b, ",\"cached\":%s}\n", cp->cached ? "true" :
		    "false");
		fputs(b.data, stdout);
		buf_free(&b);
	} else
		printf("%s\n", cp->path);
	pull_free(cp);
	return (rc);
}

/* "qsup image pull [NAME|URL]": the profile's image, or the one named. */
static int
cmd_image_pull(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_image_opts	 o;
	struct image_req	 req;
	struct profile		 p;
	char			*set = NULL;
	int			 rc;

	if ((rc = cmd_image_args(self, argc, argv, &o)) != 0)
		return (rc == 1 ? 0 : QSUP_EXIT_ERROR);
	if (argc - o.optind > 1) {
		log_warnx("usage: qsup %s", self->usage);
		free(o.sets);
		return (QSUP_EXIT_ERROR);
	}
	if (o.optind < argc)
		xasprintf(&set, "image=%s", argv[o.optind]);
	rc = cmd_image_profile(&o, set, &p);
	free(set);
	free(o.sets);
	if (rc == -1)
		return (QSUP_EXIT_ERROR);
	plan_image(&p, o.json, &req);
	if (o.sums_url != NULL)
		req.sums_url = o.sums_url;
	if (o.sha256 != NULL)
		req.sha256 = o.sha256;
	req.unverified_ok |= o.unverified;
	if (p.image_kind == PROFILE_IMAGE_NONE)
		log_warnx("image pull: no image named, and the profile has "
		    "none: qsup image pull NAME|URL");
	else if (p.image_kind == PROFILE_IMAGE_FILE)
		log_warnx("image pull: %s is a file: nothing to pull", p.image);
	else if (req.url == NULL)
		log_warnx("image pull: \"%s\": no URL known for this name "
		    "(image_base_url, the catalog); give its URL", p.image);
	rc = req.url == NULL ? QSUP_EXIT_ERROR : cmd_image_pull_run(&req,
	    o.json);
	profile_free(&p);
	return (rc);
}

struct cmd_image_list {
	char		*run_base;
	int		 json;
	int		 n;
	struct buf	 b;
};

/* One image of "qsup image ls": a line, or a JSON object. */
static void
cmd_image_ls_one(const struct image_info *ii, void *arg)
{
	struct cmd_image_list	*l = arg;
	char			*by;

	image_in_use(l->run_base, ii->path, &by);
	if (l->json) {
		buf_puts(&l->b, l->n++ == 0 ? "" : ",");
		buf_puts(&l->b, "{\"name\":");
		buf_json_string(&l->b, ii->name);
		buf_puts(&l->b, ",\"path\":");
		buf_json_string(&l->b, ii->path);
		buf_printf(&l->b, ",\"size\":%llu,\"sha256\":",
		    (unsigned long long)ii->size);
		if (ii->sha256 != NULL)
			buf_json_string(&l->b, ii->sha256);
		else
			buf_puts(&l->b, "null");
		buf_puts(&l->b, ",\"url\":");
		if (ii->url != NULL)
			buf_json_string(&l->b, ii->url);
		else
			buf_puts(&l->b, "null");
		buf_puts(&l->b, ",\"checked\":");
		if (ii->checked != NULL)
			buf_json_string(&l->b, ii->checked);
		else
			buf_puts(&l->b, "null");
		buf_printf(&l->b, ",\"pulled\":%lld,\"in_use_by\":",
		    ii->pulled);
		if (by != NULL)
			buf_json_string(&l->b, by);
		else
			buf_puts(&l->b, "null");
		buf_puts(&l->b, "}");
	} else {
		printf("%s  %.1f MB  %.12s  %s%s%s\n", ii->name, ii->size / 1e6,
		    ii->sha256 != NULL ? ii->sha256 : "-", ii->url != NULL ?
		    ii->url : "(not pulled by qsup)", by != NULL ?
		    "  in use by " : "", by != NULL ? by : "");
		l->n++;
	}
	free(by);
}

/*
 * The options and images_dir of ls (names: 0, none taken) and rm (names:
 * 1, one at least); NULL with *rc, qsup's status, when the command ends.
 */
static char *
cmd_image_setup(const struct cmd_entry *self, int argc, char **argv,
    struct cmd_image_opts *o, int names, int *rc)
{
	char	*dir;

	if ((*rc = cmd_image_args(self, argc, argv, o)) != 0) {
		*rc = *rc == 1 ? 0 : QSUP_EXIT_ERROR;
		return (NULL);
	}
	if ((o->optind < argc) != names) {
		log_warnx("usage: qsup %s", self->usage);
		free(o->sets);
		*rc = QSUP_EXIT_ERROR;
		return (NULL);
	}
	dir = cmd_image_dir(o);
	free(o->sets);
	if (dir == NULL) {
		log_warnx("no images_dir (set XDG_DATA_HOME or HOME)");
		*rc = QSUP_EXIT_ERROR;
	}
	return (dir);
}

/*
 * The docker:// blob cache pruned after rm or prune: a line (or, json,
 * a ,"blobs":{...} for the caller's object into b); a pull under way
 * keeps it whole. -1 if it could not be (said).
 */
static int
cmd_image_prune_blobs(const char *dir, int json, struct buf *b)
{
	struct image_reg_pruned	 pr;
	char			*cause;
	int			 rc;

	if ((rc = image_reg_prune(dir, &pr, &cause)) == -1) {
		log_warnx("image prune: %s", cause);
		free(cause);
		return (-1);
	}
	if (json)
		buf_printf(b, ",\"blobs\":{\"pruned\":%s,\"removed\":%zu,"
		    "\"bytes\":%llu,\"tags\":%zu}", rc == 1 ? "false" : "true",
		    pr.blobs, (unsigned long long)pr.bytes, pr.refs);
	else if (rc == 1)
		printf("blob cache kept: a docker:// pull is under way\n");
	else if (pr.blobs > 0 || pr.refs > 0)
		printf("%zu blob%s removed from the blob cache (%.1f MB), "
		    "%zu tag record%s\n", pr.blobs, pr.blobs == 1 ? "" : "s",
		    pr.bytes / 1e6, pr.refs, pr.refs == 1 ? "" : "s");
	return (0);
}

/* "qsup image ls [--json]": every image in images_dir. */
static int
cmd_image_ls(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_image_opts	 o;
	struct cmd_image_list	 l;
	struct buf		 d = { 0 };
	char			*dir;
	uint64_t		 blob_bytes;
	size_t			 nblobs;
	int			 rc;

	if ((dir = cmd_image_setup(self, argc, argv, &o, 0, &rc)) == NULL)
		return (rc);
	image_reg_cache_size(dir, &blob_bytes, &nblobs);
	memset(&l, 0, sizeof l);
	l.run_base = sandbox_run_path();
	l.json = o.json;
	if (image_each(dir, cmd_image_ls_one, &l) == -1) {
		log_warn("%s", dir);
		rc = QSUP_EXIT_ERROR;
	} else if (o.json) {
		buf_json_string(&d, dir);
		printf("{\"dir\":%s,\"images\":[%s],\"blob_cache\":"
		    "{\"blobs\":%zu,\"bytes\":%llu},\"layers\":[", d.data,
		    l.b.data != NULL ? l.b.data : "", nblobs,
		    (unsigned long long)blob_bytes);
		buf_free(&d);
		if (cmd_image_ls_layers(dir, 1, &d) == -1)
			rc = QSUP_EXIT_ERROR;
		printf("%s]}\n", d.data != NULL ? d.data : "");
		buf_free(&d);
	} else {
		if (l.n == 0)
			printf("no images in %s\n", dir);
		if (nblobs > 0)
			printf("blob cache (docker:// layers): %zu blob%s, "
			    "%.1f MB\n", nblobs, nblobs == 1 ? "" : "s",
			    blob_bytes / 1e6);
		if (cmd_image_ls_layers(dir, 0, NULL) == -1)
			rc = QSUP_EXIT_ERROR;
	}
	buf_free(&l.b);
	free(l.run_base);
	free(dir);
	return (rc);
}

/* "qsup image rm NAME...": each, unless a running sandbox uses it. */
static int
cmd_image_rm(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_image_opts	 o;
	char			*dir, *base, *path, *by, *cause;
	int			 i, rc, oci = 0;

	if ((dir = cmd_image_setup(self, argc, argv, &o, 1, &rc)) == NULL)
		return (rc);
	base = sandbox_run_path();
	for (i = o.optind; i < argc; i++) {
		xasprintf(&path, "%s/%s", dir, argv[i]);
		if (strchr(argv[i], '/') == NULL &&
		    image_in_use(base, path, &by)) {
			log_warnx("image rm: %s is in use by sandbox %s: not "
			    "removed", argv[i], by);
			free(by);
			rc = QSUP_EXIT_ERROR;
		} else if (image_remove(dir, argv[i], &cause) == -1) {
			log_warnx("image rm: %s", cause);
			free(cause);
			rc = QSUP_EXIT_ERROR;
		} else {
			printf("removed %s\n", argv[i]);
			oci |= strncmp(argv[i], "oci-", 4) == 0;
		}
		free(path);
	}
	/* The blobs only the images removed used, and their tags. */
	if (oci && cmd_image_prune_blobs(dir, 0, NULL) == -1)
		rc = QSUP_EXIT_ERROR;
	free(base);
	free(dir);
	return (rc);
}

/* "qsup image prune [--older-than AGE]": setup's layers no run holds. */
static int
cmd_image_prune(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_image_opts o_prune;
	struct cmd_args	 a;
	long long	 older = 0;
	const char	*age = NULL;
	struct buf	 b = { 0 };
	char		*dir;
	int		 rc;

	/* --older-than is prune's alone: read before the common options. */
	if ((rc = cmd_args_parse(self, argc, argv, &a)) == 0)
		age = cmd_args_get(&a, CMD_IMAGE_OLDER);
	if (rc == 0 && age != NULL && cmd_image_age(age, &older) == -1) {
		log_warnx("image prune: --older-than %s: not an age (seconds, "
		    "or a number with s, m, h or d)", age);
		cmd_args_free(&a);
		return (QSUP_EXIT_ERROR);
	}
	cmd_args_free(&a);
	if ((dir = cmd_image_setup(self, argc, argv, &o_prune, 0, &rc)) ==
	    NULL)
		return (rc);
	if (cmd_image_prune_blobs(dir, o_prune.json, &b) == -1)
		rc = QSUP_EXIT_ERROR;
	else
		rc = cmd_image_prune_layers(dir, older, o_prune.json,
		    b.data != NULL ? b.data : "");
	buf_free(&b);
	free(dir);
	return (rc);
}

/* "qsup image" naming no subcommand: alone, it lists. */
static int
cmd_image_exec(const struct cmd_entry *self, int argc, char **argv)
{
	(void)self;
	if (argc < 2)
		return (cmd_image_ls(&cmd_image_ls_entry, argc, argv));
	log_warnx("unknown subcommand '%s': qsup image pull | ls | rm | build "
	    "| prune",
	    argv[1]);
	return (QSUP_EXIT_ERROR);
}

/* "4G", "512M", "64k", bytes: binary units; -1 if not a size. */
static int
cmd_image_size(const char *s, uint64_t *bytes)
{
	unsigned long long	 v;
	char			*end;
	int			 shift = 0;

	errno = 0;
	if (*s < '0' || *s > '9')
		return (-1);
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return (-1);
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'i' && shift != 0)
		end++;
	if (*end == 'B' && shift != 0)
		end++;
	if (*end != '\0' || v == 0 || v > (UINT64_MAX >> shift))
		return (-1);
	*bytes = (uint64_t)v << shift;
	return (0);
}

/*
 * "qsup image build docker://REF -o OUT": pulled as qsup image pull
 * pulls it (the profile's registries, images_dir, image_max_size), then
 * built into OUT.
 */
static int
cmd_image_build_ref(const struct image_build_req *b, struct cmd_image_opts *o)
{
	struct image_req	 req;
	struct profile		 p;
	struct pull		 cp;
	int			 rc = 0;

	if (cmd_image_profile(o, NULL, &p) == -1)
		return (QSUP_EXIT_ERROR);
	plan_image(&p, 0, &req);
	req.url = b->from;
	req.sums_url = req.sha256 = NULL;	/* the profile's image's */
	req.unverified_ok = 0;
	req.out = b->out;
	req.out_size = b->size;
	if (pull_get(ev_default_loop(EVFLAG_AUTO), &req, &cp) == -1) {
		log_warnx("image build: %s", cp.cause != NULL ? cp.cause :
		    "interrupted");
		rc = QSUP_EXIT_ERROR;
	} else
		printf("%s\n", b->out);
	pull_free(&cp);
	profile_free(&p);
	return (rc);
}

/* "qsup image build FROM -o OUT [--size SIZE]". */
static int
cmd_image_build(const struct cmd_entry *self, int argc, char **argv)
{
	struct image_build_req	 req;
	struct cmd_image_opts	 o;
	struct cmd_args		 a;
	char			*cause = NULL, **sizes, **sets;
	size_t			 i, n;
	int			 sig, r, rc;

	memset(&req, 0, sizeof req);
	memset(&o, 0, sizeof o);
	/* The sizes before a --help or a bad option are checked first. */
	r = cmd_args_parse(self, argc, argv, &a);
	sizes = cmd_args_list(&a, CMD_IMAGE_SIZE, &n);
	for (i = 0; i < n; i++) {
		if (cmd_image_size(sizes[i], &req.size) == -1) {
			log_warnx("--size %s: not a size (4G, 512M, bytes)",
			    sizes[i]);
			cmd_args_free(&a);
			return (QSUP_EXIT_ERROR);
		}
	}
	req.out = cmd_args_get(&a, 'o');
	if (r == 1)
		cmd_usage(self, stdout);
	else if (r == -1)
		(void)cmd_args_bad(&a, "image build");
	else if (a.argc != 1 || req.out == NULL) {
		log_warnx("usage: qsup %s", self->usage);
		r = -1;
	} else
		req.from = a.argv[0];
	if (cmd_args_has(&a, 'v'))
		log_verbose = 1;
	o.profile = cmd_args_get(&a, 'p');
	sets = cmd_args_list(&a, CMD_IMAGE_SET, &o.nsets);
	o.sets = xcalloc(o.nsets + 1, sizeof *o.sets);
	if (o.nsets > 0)
		memcpy(o.sets, sets, o.nsets * sizeof *o.sets);
	if (r == 0 && strncmp(req.from, "docker://", 9) == 0) {
		/* o's strings are a's: freed after. */
		rc = cmd_image_build_ref(&req, &o);
		free(o.sets);
		cmd_args_free(&a);
		return (rc);
	}
	if (r == 0 && (o.profile != NULL || o.nsets > 0)) {
		/* Nothing of a profile applies to a local FROM. */
		log_warnx("image build: --profile and --set apply to "
		    "docker://REF only, not to %s", req.from);
		r = -1;
	}
	free(o.sets);
	cmd_args_free(&a);
	if (r != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if (image_build(&req, &sig, &cause) == -1) {
		log_warnx("image build: %s", cause);
		free(cause);
		return (sig != 0 ? 128 + sig : QSUP_EXIT_ERROR);
	}
	printf("%s\n", req.out);
	return (0);
}
