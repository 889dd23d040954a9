/*
 * The schema: every setting, its type, range or choices, default and
 * help, in one table (what "qsup profile settings" prints), with the names
 * a profile may write for one; beside it the table of setting types, a row
 * of operations (convert, accepts, hint, put, free) per PROFILE_T_*, from
 * the files of the types below it (profile_type.c, profile_list.c,
 * profile_net.c, profile_share.c, profile_image.c), which never call up
 * to here; and showing a loaded profile, as Lua that loads back to the
 * same settings or as JSON, each setting with where it came from.
 */

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "profile_int.h"

_Static_assert(sizeof(enum profile_kvm) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_virtfs) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_sm) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_ld) == sizeof(int), "enum size");
_Static_assert(sizeof(enum net_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_image) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_boot) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_display) == sizeof(int), "enum size");

static const struct profile_choice profile_display_choices[] = {
	{ "none", PROFILE_DISPLAY_NONE, 0 },
	{ "vnc", PROFILE_DISPLAY_VNC, 0 },
	{ NULL, 0, 0 }
};

static const struct profile_choice profile_boot_choices[] = {
	{ "kernel", PROFILE_BOOT_KERNEL, 0 },
	{ "image", PROFILE_BOOT_IMAGE, 0 },
	{ NULL, 0, 0 }
};

static const struct profile_choice profile_kvm_choices[] = {
	{ "true", PROFILE_KVM_ON, 0 },
	{ "false", PROFILE_KVM_OFF, 0 },
	{ "auto", PROFILE_KVM_AUTO, 0 },
	{ NULL, 0, 0 }
};

static const struct profile_choice profile_tram_choices[] = {
	{ "shared", PROFILE_TRAM_SHARED, 0 },
	{ "stream", PROFILE_TRAM_STREAM, 0 },
	{ NULL, 0, 0 }
};

static const struct profile_choice profile_virtfs_choices[] = {
	{ "auto", PROFILE_VIRTFS_AUTO, 0 },
	{ "on", PROFILE_VIRTFS_ON, 0 },
	{ "off", PROFILE_VIRTFS_OFF, 0 },
	{ NULL, 0, 0 }
};

/*
 * QEMU's own names; the seed's "auto" (QEMU has none) is qsup's choice,
 * "none": the mapped models break every host symlink (core/share.c).
 */
static const struct profile_choice profile_sm_choices[] = {
	{ "none", PROFILE_SM_NONE, 0 },
	{ "mapped-xattr", PROFILE_SM_MAPPED_XATTR, 0 },
	{ "mapped-file", PROFILE_SM_MAPPED_FILE, 0 },
	{ "passthrough", PROFILE_SM_PASSTHROUGH, 0 },
	{ "auto", PROFILE_SM_NONE, 1 },
	{ NULL, 0, 0 }
};

static const struct profile_choice profile_ld_choices[] = {
	{ "full", PROFILE_LD_FULL, 0 },
	{ "sparse", PROFILE_LD_SPARSE, 0 },
	{ "minimal", PROFILE_LD_SPARSE, 1 },
	{ "ldd", PROFILE_LD_SPARSE, 1 },
	{ NULL, 0, 0 }
};

static const struct profile_choice profile_net_choices[] = {
	{ "none", NET_MODE_NONE, 0 },
	{ "restricted", NET_MODE_RESTRICTED, 0 },
	{ "allowlist", NET_MODE_ALLOWLIST, 0 },
	{ "open", NET_MODE_OPEN, 0 },
	{ NULL, 0, 0 }
};

#define PROFILE_ITEM_TABLES	"a list: { { host = ... }, ... }"

/*
 * Every setting type: one row of operations each (struct
 * profile_type_ops in profile_int.h). The settings themselves are rows
 * of profile_schema.
 */
const struct profile_type_ops profile_types[] = {
	[PROFILE_T_BOOL] = { .convert = profile_convert_bool,
	    .accepts = profile_accepts_bool, .hint = profile_hint_bool,
	    .put = profile_put_bool },
	[PROFILE_T_CHOICE] = { .convert = profile_convert_choice,
	    .accepts = profile_accepts_choice, .hint = profile_hint_choice,
	    .put = profile_put_choice },
	[PROFILE_T_SIZE] = { .convert = profile_convert_size,
	    .accepts = profile_accepts_size, .hint = profile_hint_size,
	    .put = profile_put_size },
	[PROFILE_T_BYTES] = { .convert = profile_convert_bytes,
	    .accepts = profile_accepts_bytes, .hint = profile_hint_size,
	    .put = profile_put_bytes },
	[PROFILE_T_INT] = { .convert = profile_convert_int,
	    .accepts = profile_accepts_int, .hint = profile_hint_number,
	    .put = profile_put_int },
	[PROFILE_T_SECONDS] = { .convert = profile_convert_seconds,
	    .accepts = profile_accepts_seconds, .hint = profile_hint_number,
	    .put = profile_put_seconds },
	[PROFILE_T_PATH] = { .convert = profile_convert_path,
	    .accepts = profile_accepts_path, .put = profile_put_str,
	    .free = profile_free_str, .textual = 1 },
	[PROFILE_T_GUEST_PATH] = { .convert = profile_convert_path,
	    .accepts = profile_accepts_guest_path, .put = profile_put_str,
	    .free = profile_free_str, .textual = 1 },
	[PROFILE_T_ENV] = { .convert = profile_convert_env,
	    .accepts = profile_accepts_env, .put = profile_put_strs,
	    .free = profile_free_strs, .set_list = 1, .textual = 1 },
	[PROFILE_T_IMAGE] = { .convert = profile_convert_image,
	    .accepts = profile_accepts_image, .put = profile_put_str,
	    .notes = profile_image_notes, .json_more = profile_image_json,
	    .free = profile_image_free, .textual = 1 },
	[PROFILE_T_SHA256] = { .convert = profile_convert_sha256,
	    .accepts = profile_accepts_sha256, .hint = profile_hint_sha256,
	    .put = profile_put_str, .free = profile_free_str, .textual = 1 },
	[PROFILE_T_URL] = { .convert = profile_convert_url,
	    .accepts = profile_accepts_url, .put = profile_put_str,
	    .free = profile_free_str, .textual = 1 },
	[PROFILE_T_DIR] = { .convert = profile_convert_dir,
	    .accepts = profile_accepts_dir, .put = profile_put_str,
	    .free = profile_free_str, .textual = 1 },
	[PROFILE_T_OUTFILE] = { .convert = profile_convert_outfile,
	    .accepts = profile_accepts_outfile, .put = profile_put_str,
	    .free = profile_free_str, .textual = 1 },
	[PROFILE_T_SHARES] = { .convert = profile_convert_shares,
	    .accepts = profile_accepts_shares, .put = profile_put_shares,
	    .free = profile_free_shares, .list_form = PROFILE_ITEM_TABLES },
	[PROFILE_T_ALLOW] = { .convert = profile_convert_allow,
	    .accepts = profile_accepts_allow, .put = profile_put_allow,
	    .notes = profile_put_compiled, .free = profile_free_allow,
	    .set_list = 1, .textual = 1 },
	[PROFILE_T_PORTS] = { .convert = profile_convert_ports,
	    .accepts = profile_accepts_ports, .put = profile_put_ports,
	    .notes = profile_put_compiled, .free = profile_free_ports },
	[PROFILE_T_TCP] = { .convert = profile_convert_tcp,
	    .accepts = profile_accepts_tcp, .put = profile_put_tcp,
	    .free = profile_free_tcp, .list_form = PROFILE_ITEM_TABLES },
	[PROFILE_T_RULES] = { .convert = profile_convert_rules,
	    .accepts = profile_accepts_rules, .put = profile_put_strs,
	    .json_more = profile_put_compiled_json, .free = profile_free_strs,
	    .set_list = 1, .textual = 1 },
	[PROFILE_T_ARGS] = { .convert = profile_convert_args,
	    .accepts = profile_accepts_args, .put = profile_put_strs,
	    .free = profile_free_strs, .set_list = 1, .textual = 1 },
	[PROFILE_T_LIBS] = { .convert = profile_convert_libs,
	    .accepts = profile_accepts_libs, .put = profile_put_strs,
	    .free = profile_free_strs, .set_list = 1, .textual = 1 },
	[PROFILE_T_STEPS] = { .convert = profile_convert_steps,
	    .accepts = profile_accepts_steps, .put = profile_put_steps,
	    .free = profile_free_steps, .set_list = 1, .textual = 1 },
	[PROFILE_T_SETUP_NET] = { .convert = profile_convert_setup_net,
	    .accepts = profile_accepts_setup_net,
	    .put = profile_put_setup_net, .free = profile_free_setup_net },
	[PROFILE_T_REGISTRIES] = { .convert = profile_convert_registries,
	    .accepts = profile_accepts_registries,
	    .put = profile_put_registries, .free = profile_free_strs },
	[PROFILE_T_POOL] = { .convert = profile_convert_pool,
	    .accepts = profile_accepts_pool, .put = profile_put_pool,
	    .free = profile_free_strs },
	[PROFILE_T_GEOMETRY] = { .convert = profile_convert_geometry,
	    .accepts = profile_accepts_geometry, .put = profile_put_str,
	    .free = profile_free_str, .textual = 1 },
};
_Static_assert(sizeof profile_types / sizeof profile_types[0] ==
    PROFILE_T_GEOMETRY + 1, "a row per type");

/*
 * Every setting. The defaults here and in profiles/default.lua must agree
 * (a test loads both).
 */
const struct profile_setting profile_schema[] = {
	{ .name = "use_kvm", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, use_kvm),
	  .choices = profile_kvm_choices, .def = "\"auto\"",
	  .help = "true: KVM or fail; false: never KVM; \"auto\": KVM when "
	  "it is measured to work, emulation otherwise" },
	{ .name = "memory", .type = PROFILE_T_SIZE,
	  .offset = offsetof(struct profile, memory_mib),
	  .min = 16, .max = 1024 * 1024, .def = "512",
	  .help = "guest RAM" },
	{ .name = "cpus", .type = PROFILE_T_INT,
	  .offset = offsetof(struct profile, cpus),
	  .min = 1, .max = 64, .def = "1",
	  .help = "virtual CPUs" },
	{ .name = "start_timeout", .type = PROFILE_T_SECONDS,
	  .offset = offsetof(struct profile, start_timeout),
	  .min = 0, .max = 3600, .def = "0",
	  .help = "seconds the guest has to answer, boot included; 0: by "
	  "accelerator (short with KVM, long when emulated)" },
	{ .name = "timeout", .type = PROFILE_T_SECONDS,
	  .offset = offsetof(struct profile, timeout),
	  .min = 0, .max = 7 * 86400, .def = "0",
	  .help = "seconds a command may run before it is killed and qsup "
	  "exits 124; 0: no limit; --timeout overrides it" },
	{ .name = "show_boot_console", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, show_boot_console),
	  .def = "false",
	  .help = "copy the guest's console (kernel, boot) to stderr; with "
	  "boot = \"image\", cloud-init's and the bootstrap's output "
	  "too, verbose" },
	{ .name = "console_log", .type = PROFILE_T_OUTFILE,
	  .offset = offsetof(struct profile, console_log),
	  .help = "a file the guest's console is written to as it comes, "
	  "kept after the run (replaced by the next); nil: only the run "
	  "directory's copy, removed with it" },
	{ .name = "console_on_failure", .type = PROFILE_T_INT,
	  .offset = offsetof(struct profile, console_on_failure),
	  .min = 0, .max = 100000, .def = "20",
	  .help = "lines of the guest's console shown when the sandbox "
	  "fails (it does not start, QEMU dies); 0: none" },
	{ .name = "warm_start", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, warm_start),
	  .def = "true",
	  .help = "start from a saved VM state (a template) of this guest "
	  "shape instead of booting, when one exists; the first run of a "
	  "shape boots and saves it" },
	{ .name = "template_ram", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, template_ram),
	  .choices = profile_tram_choices, .def = "\"shared\"",
	  .help = "where a template keeps the guest's memory: \"shared\", "
	  "a file of its own that every restored guest maps copy-on-write "
	  "(fast, and their unchanged pages are shared); \"stream\", in "
	  "the saved state, read into each restored guest's own memory "
	  "(the format before shared memory, kept to compare)" },
	{ .name = "template_cache_max", .type = PROFILE_T_BYTES,
	  .offset = offsetof(struct profile, template_cache_max),
	  .min = 0, .max = (double)((uint64_t)1 << 40), .def = "\"4G\"",
	  .help = "the most disk the templates may take (allocated bytes); "
	  "past it, saving a template removes the least recently used "
	  "others; 0: no limit" },
	{ .name = "serve_max_sandboxes", .type = PROFILE_T_INT,
	  .offset = offsetof(struct profile, serve_max_sandboxes),
	  .min = 1, .max = 4096, .def = "16",
	  .help = "qsup serve: sandboxes at once, dead ones not counted "
	  "(read from the server's profile; --max-sandboxes)" },
	{ .name = "serve_max_memory", .type = PROFILE_T_SIZE,
	  .offset = offsetof(struct profile, serve_max_memory_mib),
	  .min = 0, .max = 1024.0 * 1024 * 1024, .def = "0",
	  .help = "qsup serve: guest memory of all its sandboxes together; "
	  "0: three quarters of the host's (--max-memory)" },
	{ .name = "serve_max_body", .type = PROFILE_T_BYTES,
	  .offset = offsetof(struct profile, serve_max_body),
	  .min = 1024, .max = 1024.0 * 1024 * 1024, .def = "\"1M\"",
	  .help = "qsup serve: a JSON request body's size; file and stdin "
	  "bodies are streamed, any size (--max-body)" },
	{ .name = "serve_max_header", .type = PROFILE_T_BYTES,
	  .offset = offsetof(struct profile, serve_max_header),
	  .min = 1024, .max = 1024 * 1024, .def = "\"16K\"",
	  .help = "qsup serve: a request's head, its start line and "
	  "headers (--max-header)" },
	{ .name = "serve_max_connections", .type = PROFILE_T_INT,
	  .offset = offsetof(struct profile, serve_max_connections),
	  .min = 1, .max = 65536, .def = "256",
	  .help = "qsup serve: API connections open at once "
	  "(--max-connections)" },
	{ .name = "serve_max_connections_per_address", .type = PROFILE_T_INT,
	  .offset = offsetof(struct profile, serve_max_conns_per_addr),
	  .min = 0, .max = 65536, .def = "64",
	  .help = "qsup serve: connections from one TCP client address (an "
	  "IPv6 /64); past it, its oldest connection without the token is "
	  "closed, or the new one gets 503; unix socket clients, all the "
	  "server's user, are not counted; 0: no cap "
	  "(--max-connections-per-address)" },
	{ .name = "serve_max_unauthenticated", .type = PROFILE_T_INT,
	  .offset = offsetof(struct profile, serve_max_unauthenticated),
	  .min = 0, .max = 65536, .def = "0",
	  .help = "qsup serve: connections that have not yet sent the token; "
	  "past it (or with every connection taken) the oldest of them "
	  "waiting for a request is closed for the new one, so they never "
	  "hold the rest; 0: half of serve_max_connections "
	  "(--max-unauthenticated)" },
	{ .name = "serve_head_timeout", .type = PROFILE_T_SECONDS,
	  .offset = offsetof(struct profile, serve_head_timeout),
	  .min = 0.1, .max = 3600, .def = "10",
	  .help = "qsup serve: seconds a request's head has to arrive whole, "
	  "from the connection or the next request's first byte; then 408 "
	  "and closed (--head-timeout)" },
	{ .name = "serve_idle_timeout", .type = PROFILE_T_SECONDS,
	  .offset = offsetof(struct profile, serve_idle_timeout),
	  .min = 0.1, .max = 86400, .def = "60",
	  .help = "qsup serve: seconds a kept-alive connection may wait for "
	  "its next request (or leave an answer unread); event and exec "
	  "streams are not timed (--idle-timeout)" },
	{ .name = "serve_body_timeout", .type = PROFILE_T_SECONDS,
	  .offset = offsetof(struct profile, serve_body_timeout),
	  .min = 0.1, .max = 86400, .def = "60",
	  .help = "qsup serve: seconds a request body may send nothing (a "
	  "stdin or file upload too); then 408 and closed (--body-timeout)" },
	{ .name = "serve_pool", .type = PROFILE_T_POOL,
	  .offset = offsetof(struct profile, serve_pool),
	  .offset_n = offsetof(struct profile, nserve_pool), .def = "{}",
	  .help = "qsup serve: sandboxes kept booted and paused per profile, "
	  "so that a create of that profile (no extra_args; settings only "
	  "if they change nothing) is answered from them at once "
	  "(\"start\": \"pool\") and the pool "
	  "refilled behind it; a key is a profile's name or path as a "
	  "create's \"profile\" gives it, or \"default\" for the server's "
	  "own (read from the server's profile only)" },
	{ .name = "boot", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, boot),
	  .choices = profile_boot_choices, .def = "\"kernel\"",
	  .help = "\"kernel\": qsup's fast kernel and agent, with the "
	  "image (if any) as the root file system; \"image\": the image "
	  "boots as a PC would (firmware, its boot loader, kernel and init) "
	  "and cloud-init starts qsup's agent from the seed; slow under "
	  "emulation (about a minute), but for warm starts: a template is "
	  "taken once cloud-init has finished, its disk kept with it" },
	{ .name = "kernel", .type = PROFILE_T_PATH,
	  .offset = offsetof(struct profile, kernel),
	  .help = "guest kernel image; nil: the built-in guest's" },
	{ .name = "initramfs", .type = PROFILE_T_PATH,
	  .offset = offsetof(struct profile, initramfs),
	  .help = "guest initramfs; nil: the built-in guest's" },
	{ .name = "image", .type = PROFILE_T_IMAGE,
	  .offset = offsetof(struct profile, image),
	  .offset_n = offsetof(struct profile, image_kind),
	  .def = "qsup.env(\"QSUP_IMAGE\") or "
	  "qsup.env(\"PYSANDBOXES_QEMU_IMAGE_URL\")",
	  .help = "the guest's disk image: a name (of qsup's catalog, "
	  "qsup.images, or of a file at image_base_url), an http(s) URL, "
	  "an OCI registry's docker://REF or a file; nil: the built-in "
	  "guest, which needs none" },
	{ .name = "image_base_url", .type = PROFILE_T_URL,
	  .offset = offsetof(struct profile, image_base_url),
	  .def = "qsup.env(\"QSUP_IMAGE_BASE_URL\") or "
	  "qsup.env(\"PYSANDBOXES_QEMU_IMAGE_BASE_URL\")",
	  .help = "a mirror image names are downloaded from: the catalog's "
	  "file name for the host's architecture (or the name itself, for "
	  "one it lacks), the checksum file beside it; nil: the catalog's "
	  "own URLs" },
	{ .name = "images_dir", .type = PROFILE_T_DIR,
	  .offset = offsetof(struct profile, images_dir),
	  .def = "qsup.env(\"QSUP_IMAGES_DIR\") or "
	  "qsup.env(\"PYSANDBOXES_VM_IMAGES_DIR\")",
	  .help = "where downloaded images are kept; nil: "
	  "$XDG_DATA_HOME/qsup/images" },
	{ .name = "image_sha256", .type = PROFILE_T_SHA256,
	  .offset = offsetof(struct profile, image_sha256),
	  .def = "qsup.env(\"QSUP_IMAGE_SHA256\")",
	  .help = "the downloaded image's SHA-256, pinned: a download that "
	  "does not match is removed; nil: the digest in the checksum file "
	  "beside the image (SHA256SUMS or SHA512SUMS); only with an image "
	  "that is downloaded (a name or a URL)" },
	{ .name = "image_unverified", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, image_unverified),
	  .def = "false",
	  .help = "use a downloaded image for which no digest is found (no "
	  "image_sha256, no checksum file naming it); false: such an image "
	  "is refused" },
	{ .name = "image_max_size", .type = PROFILE_T_BYTES,
	  .offset = offsetof(struct profile, image_max_size),
	  .min = (double)PROFILE_MIB, .max = (double)((uint64_t)2 << 40),
	  .def = "\"16G\"",
	  .help = "the most bytes a downloaded image may have: a larger "
	  "Content-Length is refused before the download, a body that goes "
	  "past it is stopped, and nothing of either is kept; never more "
	  "than the free space of images_dir's file system less a margin "
	  "(5% of it, at most 1G)" },
	{ .name = "registries", .type = PROFILE_T_REGISTRIES,
	  .offset = offsetof(struct profile, registries),
	  .offset_n = offsetof(struct profile, nregistries), .def = "{}",
	  .help = "docker:// images: per registry, mirrors tried in order "
	  "before it (replacing registries.conf's for that registry) and "
	  "insecure = true to allow plain http (added to registries.conf's); "
	  "plain http only on loopback or to a registry named insecure" },
	{ .name = "disk_size", .type = PROFILE_T_BYTES,
	  .offset = offsetof(struct profile, disk_size),
	  .min = (double)PROFILE_MIB, .max = (double)((uint64_t)2 << 40),
	  .help = "the guest's disk: its overlay and root file system are "
	  "grown to this size (never shrunk); nil: the base image's own; "
	  "only with an image (the built-in guest has no disk)" },
	{ .name = "cow_size", .type = PROFILE_T_BYTES,
	  .offset = offsetof(struct profile, cow_size),
	  .min = (double)(16 * PROFILE_MIB), .max = (double)((uint64_t)2 << 40),
	  .def = "\"4G\"",
	  .help = "room for the guest's writes to its mode = \"cow\" shares: "
	  "one sparse disk per sandbox, in its run directory, holding them "
	  "all (it costs the host only what is written); once full, writes "
	  "fail with ENOSPC in the guest" },
	{ .name = "setup", .type = PROFILE_T_STEPS,
	  .offset = offsetof(struct profile, setup),
	  .offset_n = offsetof(struct profile, nsetup), .def = "{}",
	  .help = "steps run once over image, each a string (sh -c) or an "
	  "argv list; each result is cached as a layer keyed by its parent, "
	  "the step and env, and runs start from the top layer" },
	{ .name = "setup_network", .type = PROFILE_T_SETUP_NET,
	  .offset = offsetof(struct profile, setup_network),
	  .def = "\"none\"",
	  .help = "the network of setup steps: \"none\", \"restricted\", "
	  "\"open\", or an allowlist's \"HOST[:PORT]\" rules" },
	{ .name = "env", .type = PROFILE_T_ENV,
	  .offset = offsetof(struct profile, env),
	  .offset_n = offsetof(struct profile, nenv), .def = "{}",
	  .help = "environment of every command in the guest" },
	{ .name = "cwd", .type = PROFILE_T_GUEST_PATH,
	  .offset = offsetof(struct profile, cwd), .def = "\"/\"",
	  .help = "working directory of commands in the guest" },
	{ .name = "shares", .type = PROFILE_T_SHARES,
	  .offset = offsetof(struct profile, shares),
	  .offset_n = offsetof(struct profile, nshares), .def = "{}",
	  .help = "host directories the guest sees (virtio-9p): read-only "
	  "unless mode = \"rw\" (writes reach the host) or \"cow\" (writes "
	  "stay in the sandbox, see cow_size); at the same path unless "
	  "guest = ...; names "
	  "matching an ignore glob left out; create = true makes a missing "
	  "rw share's host directory at the start" },
	{ .name = "virtfs", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, virtfs),
	  .choices = profile_virtfs_choices, .def = "\"auto\"",
	  .help = "copy shared trees to a temporary directory before sharing "
	  "them (against overlayfs + mmap crashes in nested containers); "
	  "\"auto\": when qsup runs in a container" },
	{ .name = "virtfs_security_model", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, virtfs_security_model),
	  .choices = profile_sm_choices, .def = "\"none\"",
	  .help = "QEMU's 9p security model for read-write shares (read-only "
	  "ones and copies use \"none\"): \"none\", the host's files as "
	  "they are; \"mapped-xattr\", the guest's owners and modes kept in "
	  "xattrs, but no symlinks; never \"passthrough\" with a read-write "
	  "share" },
	{ .name = "virtfs_cache", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, virtfs_cache),
	  .def = "false",
	  .help = "keep copied trees (hard links) in the cache directory "
	  "between runs and use them again while their source is unchanged "
	  "(checked entry by entry); false: a fresh copy in the run "
	  "directory every run, removed with the sandbox" },
	{ .name = "ld_closure_libs", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, ld_closure_libs),
	  .choices = profile_ld_choices, .def = "\"full\"",
	  .help = "what shares of the host's C-library directories show: "
	  "\"full\" all of them, \"sparse\" only the closure of what can "
	  "run, found as the loader would (smaller; may miss what a program "
	  "dlopens: see ld_closure_extra)" },
	{ .name = "ld_closure_extra", .type = PROFILE_T_LIBS,
	  .offset = offsetof(struct profile, ld_closure_extra),
	  .offset_n = offsetof(struct profile, nld_closure_extra),
	  .def = "{}",
	  .help = "libraries added to the \"sparse\" closure, with what "
	  "they need: sonames searched as the loader does (\"libbz2.so.1.0\", "
	  "for what a program dlopens) or absolute host paths" },
	{ .name = "network", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, network),
	  .choices = profile_net_choices, .def = "\"restricted\"",
	  .help = "\"none\": no network card; \"restricted\": the guest "
	  "reaches nothing, ports still forwarded in; \"allowlist\": only "
	  "network_allow; \"open\": everything, the host's 127.0.0.1 "
	  "included (needs network_open_ack = true)" },
	{ .name = "network_allow", .type = PROFILE_T_ALLOW,
	  .offset = offsetof(struct profile, network_allow),
	  .offset_n = offsetof(struct profile, nnetwork_allow), .def = "{}",
	  .help = "what the guest may reach with network = \"allowlist\"" },
	{ .name = "network_open_ack", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, network_open_ack),
	  .def = "false",
	  .help = "true accepts that network = \"open\" lets the guest reach "
	  "services listening on the host's 127.0.0.1 (as 10.0.2.2)" },
	{ .name = "ports", .type = PROFILE_T_PORTS,
	  .offset = offsetof(struct profile, ports),
	  .offset_n = offsetof(struct profile, nports), .def = "{}",
	  .help = "guest ports forwarded from the host" },
	{ .name = "network_tcp", .type = PROFILE_T_TCP,
	  .offset = offsetof(struct profile, network_tcp),
	  .offset_n = offsetof(struct profile, nnetwork_tcp), .def = "{}",
	  .help = "plain TCP destinations on the host's side (a database), "
	  "each mapped to an address and port of the guest's network, found "
	  "in the guest by name when one is given; with network = "
	  "\"restricted\" or \"allowlist\"" },
	{ .name = "network_rules", .type = PROFILE_T_RULES,
	  .offset = offsetof(struct profile, network_rules),
	  .offset_n = offsetof(struct profile, nnetwork_rules), .def = "{}",
	  .help = "the seed's socket rules, compiled into network_allow and "
	  "ports: ALLOW ... OUT allows (with network = \"allowlist\"), DENY "
	  "... OUT refuses whatever else allows, ALLOW ... IN forwards each "
	  "port from a free host port on 127.0.0.1: inbound never binds "
	  "beyond loopback unless HOST names an address" },
	{ .name = "guest_firewall", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, guest_firewall),
	  .def = "false",
	  .help = "the guest loads a firewall of its own too (iptables-restore "
	  "in the guest, or the sandbox does not start): defence in depth "
	  "only, the policy is enforced on the host either way; with "
	  "network = \"restricted\" or \"allowlist\"" },
	{ .name = "display", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, display),
	  .choices = profile_display_choices, .def = "\"none\"",
	  .help = "a virtual screen, keyboard and tablet for the guest: "
	  "\"vnc\", QEMU's VNC server on a unix socket in the run directory "
	  "only (never TCP), the screenshot and input routes of qsup serve; "
	  "\"none\": no screen" },
	{ .name = "display_size", .type = PROFILE_T_GEOMETRY,
	  .offset = offsetof(struct profile, display_size),
	  .def = "\"1024x768\"",
	  .help = "the screen's size in pixels, \"WIDTHxHEIGHT\", from "
	  "320x200 to 3840x2160; with display = \"vnc\"" },
	{ .name = "extra_args", .type = PROFILE_T_ARGS,
	  .offset = offsetof(struct profile, extra_args),
	  .offset_n = offsetof(struct profile, nextra_args), .def = "{}",
	  .help = "raw QEMU flags added to its command line; flags that "
	  "weaken isolation or that qsup manages are refused" },
};
_Static_assert(sizeof profile_schema / sizeof profile_schema[0] ==
    PROFILE_NSETTINGS, "PROFILE_NSETTINGS");

/* Seed and other names a profile may write for a setting. */
static const struct {
	const char	*from;
	const char	*to;
} profile_aliases[] = {
	{ "virtfs_stage", "virtfs" },
	{ "kvm", "use_kvm" },
	{ "mem", "memory" },
	{ "ram", "memory" },
	{ "smp", "cpus" },
	{ "environment", "env" },
	{ "workdir", "cwd" },
	{ "net", "network" },
	{ "allow", "network_allow" },
	{ "forwards", "ports" },
	{ "qemu_args", "extra_args" },
};

const struct profile_setting *
profile_setting_find(const char *name)
{
	size_t	i;

	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		if (strcmp(profile_schema[i].name, name) == 0)
			return (&profile_schema[i]);
	}
	return (NULL);
}

/* The row of setting name in profile_schema, or -1. */
int
profile_setting_index(const char *name)
{
	const struct profile_setting	*s = profile_setting_find(name);

	return (s == NULL ? -1 : (int)(s - profile_schema));
}

/* The setting a misspelt name probably meant, or NULL. */
const char *
profile_suggest(const char *name)
{
	const char	*names[PROFILE_NSETTINGS];
	size_t		 i;

	/* The seed's "qemu.memory". */
	if (strncmp(name, "qemu.", 5) == 0 && name[5] != '\0')
		name += 5;
	if (profile_setting_find(name) != NULL)
		return (profile_setting_find(name)->name);
	for (i = 0; i < sizeof profile_aliases / sizeof profile_aliases[0];
	    i++) {
		if (strcmp(profile_aliases[i].from, name) == 0)
			return (profile_aliases[i].to);
	}
	for (i = 0; i < PROFILE_NSETTINGS; i++)
		names[i] = profile_schema[i].name;
	return (profile_closest(name, names, PROFILE_NSETTINGS));
}

/* The name of value in a table of choices, aliases aside. */
static const char *
profile_choice_name(const struct profile_choice *c, int value,
    const char *otherwise)
{
	for (; c->name != NULL; c++) {
		if (!c->alias && c->value == value)
			return (c->name);
	}
	return (otherwise);
}

/* The name QEMU's -virtfs security_model= wants. */
const char *
profile_sm_name(enum profile_sm sm)
{
	return (profile_choice_name(profile_sm_choices, sm, "none"));
}

/* -------------------------------------------------------------------------
 * A setting's operations, through its type's row.
 */

/* What a setting accepts, for help. */
static void
profile_accepts(struct buf *b, const struct profile_setting *s)
{
	profile_types[s->type].accepts(b, s);
}

/* Check the value at idx against setting s and store it in the profile. */
void
profile_convert(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	if (lua_isnil(L, idx))
		return;		/* stays NULL: the built-in choice */
	profile_types[s->type].convert(ctx, L, idx, s, loc);
}

/* The value of setting s in p. */
static void
profile_put(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	profile_types[s->type].put(b, p, s, json);
}

/* -------------------------------------------------------------------------
 * Showing a profile: as Lua that loads back to the same settings, or JSON.
 */

/*
 * Every setting of a loaded profile and where it came from: as a Lua
 * profile (it loads back to the same settings), as one JSON object
 * (PROFILE_PRINT_JSON), or as Lua without comments (PROFILE_PRINT_BARE).
 */
void
profile_print(const struct profile *p, int flags, struct buf *b)
{
	static const char		*from[] = { "default", "profile",
	    "command line" };
	const struct profile_setting	*s;
	const struct profile_origin	*o;
	const char			*rules_at = NULL;
	size_t				 i, start;
	int				 json = flags & PROFILE_PRINT_JSON;

	if (flags & PROFILE_PRINT_BARE) {
		buf_printf(b, "return {\n");
		for (i = 0; i < PROFILE_NSETTINGS; i++) {
			buf_printf(b, "\t%s = ", profile_schema[i].name);
			profile_put(b, p, &profile_schema[i], 0);
			buf_printf(b, ",\n");
		}
		buf_printf(b, "}\n");
		return;
	}
	for (i = 0; i < PROFILE_NSETTINGS && p->origins != NULL; i++) {
		if (profile_schema[i].type == PROFILE_T_RULES)
			rules_at = p->origins[i].at;
	}
	if (json) {
		buf_printf(b, "{\"profile\":");
		buf_json_string(b, p->path != NULL ? p->path : "");
		buf_printf(b, ",\"settings\":{");
	} else
		buf_printf(b, "-- %s, as qsup will use it; after each setting, "
		    "where it came from\nreturn {\n", p->path);
	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		s = &profile_schema[i];
		o = p->origins != NULL ? &p->origins[i] : NULL;
		if (json) {
			buf_printf(b, "%s\"%s\":{\"value\":", i == 0 ? "" : ",",
			    s->name);
			profile_put(b, p, s, 1);
			buf_printf(b, ",\"from\":\"%s\"", from[o == NULL ?
			    0 : o->from]);
			if (o != NULL && o->at != NULL) {
				buf_printf(b, ",\"at\":");
				buf_json_string(b, o->at);
			}
			if (profile_types[s->type].json_more != NULL)
				profile_types[s->type].json_more(b, p);
			buf_printf(b, "}");
			continue;
		}
		start = b->len;
		buf_printf(b, "\t%s = ", s->name);
		profile_put(b, p, s, 0);
		buf_printf(b, ",");
		do
			buf_add(b, " ", 1);
		while (b->len - start < 44);
		buf_printf(b, "-- %s", from[o == NULL ? 0 : o->from]);
		if (o != NULL && o->at != NULL)
			buf_printf(b, ", %s", o->at);
		buf_printf(b, "\n");
		if (profile_types[s->type].notes != NULL)
			profile_types[s->type].notes(b, p, s, rules_at);
	}
	buf_printf(b, json ? "}}\n" : "}\n");
}

/* Every setting with its default, what it accepts and what it does. */
void
profile_help(struct buf *b)
{
	const struct profile_setting	*s;
	size_t				 i;

	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		s = &profile_schema[i];
		buf_printf(b, "%s = %s\n\t%s\n\t(", s->name,
		    s->def == NULL ? "nil" : s->def, s->help);
		profile_accepts(b, s);
		buf_printf(b, ")\n");
	}
}
