/*
 * Disk images: image_sha256, image_unverified, disk_size, the catalog
 * (qsup.images) and what image resolves to. Run from the top of the tree.
 */
#include "profile_helpers.h"

/* -------------------------------------------------------------------------
 * Disk images: image_sha256, image_unverified, disk_size, the catalog
 * (qsup.images) and what image resolves to.
 */

/* The catalog's name for this host's architecture, or NULL. */
static const char *
catalog_arch(void)
{
	if (strcmp(facts_arch(), "x86_64") == 0)
		return ("amd64");
	if (strcmp(facts_arch(), "aarch64") == 0)
		return ("arm64");
	return (NULL);
}

/* Load "return { image = "debian-12", LUA }", which must work. */
static void
load_image_ok(struct profile *p, const char *fmt, ...)
{
	va_list	 ap;
	char	*lua, *path;

	va_start(ap, fmt);
	xvasprintf(&lua, fmt, ap);
	va_end(ap);
	path = write_profile("image.lua", "return {\n\timage = "
	    "\"debian-12\",\n\t%s,\n}\n", lua);
	load_ok(p, path);
	free(path);
	free(lua);
}

/* The same, which must fail on line 3 with want in its one message. */
static void
load_image_fails(const char *lua, const char *want)
{
	char	*path, *cause, *where;

	path = write_profile("image.lua", "return {\n\timage = "
	    "\"debian-12\",\n\t%s,\n}\n", lua);
	cause = load_fails(path);
	xasprintf(&where, "%s:3: ", path);
	cr_assert_eq(strncmp(cause, where, strlen(where)), 0, "%s: %s", lua,
	    cause);
	assert_contains(cause, want);
	cr_assert_null(strchr(cause, '\n'), "one error: %s", cause);
	free(where);
	free(cause);
	free(path);
}

Test(profile, image_sha256)
{
	static const struct {
		const char	*lua;
		const char	*want;
	} bad[] = {
		{ "\"abc\"", "is not 64 hexadecimal digits" },
		{ "\"\"", "is not valid" },
		{ "42", "is not valid" },
		{ "true", "is not valid" },
		{ "string.rep(\"0\", 63)", "is not 64 hexadecimal digits" },
		{ "string.rep(\"0\", 65)", "is not 64 hexadecimal digits" },
		{ "string.rep(\"g\", 64)", "is not 64 hexadecimal digits" },
		{ "\"sha256:\" .. string.rep(\"0\", 64)",
		  "(write the digits without \"sha256:\")" },
		{ "string.rep(\"0\", 64) .. \"  debian-12.qcow2\"",
		  "(write the 64 digits alone, without the file name)" },
		{ "string.rep(\"0\", 128)", "(that is a SHA-512 digest" },
		{ "string.rep(\"0\", 63) .. \"\\0\"", "is not valid" },
	};
	struct profile	 p;
	char		*line, *want;
	size_t		 i;

	load_image_ok(&p, "image_sha256 = string.rep(\"aB\", 32)");
	want = xstrdup("abababababababababababababababababababababababababab"
	    "abababababab");
	cr_assert_str_eq(p.image_sha256, want, "in lower case");
	line = show_line(&p, "image_sha256");
	assert_contains(line, want);
	free(line);
	free(want);
	profile_free(&p);
	cr_assert_null(p.image_sha256);

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		xasprintf(&want, "image_sha256 = %s", bad[i].lua);
		load_image_fails(want, bad[i].want);
		load_image_fails(want, "image_sha256: ");
		load_image_fails(want, "expected a SHA-256 digest: 64 "
		    "hexadecimal digits");
		free(want);
	}
	/* The variable, read by the default. */
	setenv("QSUP_IMAGE", "debian-12", 1);
	setenv("QSUP_IMAGE_SHA256", "0123456789ABCDEF0123456789ABCDEF"
	    "0123456789ABCDEF0123456789ABCDEF", 1);
	load_ok(&p, NULL);
	cr_assert_str_eq(p.image_sha256, "0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef");
	profile_free(&p);
	unsetenv("QSUP_IMAGE_SHA256");
	unsetenv("QSUP_IMAGE");
}

Test(profile, image_unverified)
{
	struct profile	 p;

	load_image_ok(&p, "cpus = 1");
	cr_assert_eq(p.image_unverified, 0, "refused unless told");
	profile_free(&p);
	load_image_ok(&p, "image_unverified = true");
	cr_assert_eq(p.image_unverified, 1);
	profile_free(&p);
	load_image_fails("image_unverified = \"yes\"",
	    "image_unverified: \"yes\" is not valid (write true, without "
	    "quotes); expected true or false");
	load_image_fails("image_unverified = 1", "expected true or false");
}

Test(profile, disk_size_forms)
{
	static const struct {
		const char	*lua;
		uint64_t	 bytes;
		const char	*shown;
	} ok[] = {
		{ "\"10G\"", (uint64_t)10 << 30, "\"10G\"" },
		{ "\"512M\"", (uint64_t)512 << 20, "\"512M\"" },
		{ "\"512m\"", (uint64_t)512 << 20, "\"512M\"" },
		{ "\"1.5G\"", (uint64_t)1536 << 20, "\"1536M\"" },
		{ "\"2T\"", (uint64_t)2 << 40, "\"2T\"" },
		{ "\"1M\"", (uint64_t)1 << 20, "\"1M\"" },
		{ "\"1025k\"", (uint64_t)1025 << 10, "\"1025k\"" },
		{ "10737418240", (uint64_t)10 << 30, "\"10G\"" },
		{ "1048576.0", (uint64_t)1 << 20, "\"1M\"" },
		{ "\"1049088\"", 1049088, "1049088" },	/* bytes, not MiB */
		{ "1049088", 1049088, "1049088" },
	};
	struct profile	 p;
	char		*line, *want;
	size_t		 i;

	for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		load_image_ok(&p, "disk_size = %s", ok[i].lua);
		cr_assert_eq(p.disk_size, ok[i].bytes, "%s: %llu", ok[i].lua,
		    (unsigned long long)p.disk_size);
		line = show_line(&p, "disk_size");
		xasprintf(&want, "disk_size = %s,", ok[i].shown);
		cr_assert_eq(strncmp(line, want, strlen(want)), 0, "%s", line);
		free(want);
		free(line);
		profile_free(&p);
	}
	load_image_ok(&p, "cpus = 1");
	cr_assert_eq(p.disk_size, 0, "the base image's own");
	line = show_line(&p, "disk_size");
	cr_assert_eq(strncmp(line, "disk_size = nil,", 16), 0, "%s", line);
	free(line);
	profile_free(&p);
}

/* Refused loudly, saying what would be taken; never rounded. */
Test(profile, disk_size_refused)
{
	static const struct {
		const char	*lua;
		const char	*want;
	} bad[] = {
		{ "\"10GB\"", "\"10GB\" is not a size (write \"10G\")" },
		{ "\"10GiB\"", "is not a size (write \"10G\")" },
		{ "\"10 G\"", "is not a size (write \"10G\")" },
		{ "\"G\"", "is not a size" },
		{ "\"\"", "is not a size" },
		{ "\"-1G\"", "is not a size" },
		{ "\"10G\\0\"", "is not a size" },
		{ "\"2P\"", "is not a size" },
		{ "\"1048577\"", "is not a multiple of 512 bytes" },
		{ "1048577", "is not a multiple of 512 bytes" },
		{ "\"1.0000001G\"", "is not a whole number of bytes" },
		{ "1048576.5", "is not a whole number of bytes" },
		{ "0", "is out of range" },
		{ "\"0\"", "is out of range" },
		{ "-1", "is out of range" },
		{ "\"512k\"", "is out of range" },
		{ "\"3T\"", "is out of range" },
		{ "\"2049G\"", "is out of range" },
		{ "\"99999999999999999999\"", "is out of range" },
		{ "1e300", "is out of range" },
		{ "0/0", "is not a whole number of bytes" },
		{ "true", "is not valid" },
		{ "{}", "is not valid" },
	};
	char	*lua;
	size_t	 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		xasprintf(&lua, "disk_size = %s", bad[i].lua);
		load_image_fails(lua, bad[i].want);
		load_image_fails(lua, "disk_size: ");
		load_image_fails(lua, "a multiple of 512 bytes, from 1M to 2T");
		free(lua);
	}
}

/* Settings that would do nothing are refused, not ignored. */
Test(profile, image_settings_need_an_image)
{
	char	*path, *cause, *want;

	path = write_profile("needs.lua", "return {\n"
	    "\tdisk_size = \"10G\",\n"
	    "\timage_sha256 = string.rep(\"0\", 64),\n}\n");
	cause = load_fails(path);
	xasprintf(&want, "%s:2: disk_size: the built-in guest has no disk; "
	    "set image too\n%s:3: image_sha256: pins a downloaded image, and "
	    "image is nil (the built-in guest)", path, path);
	cr_assert_str_eq(cause, want);
	free(want);
	free(cause);
	free(path);

	path = write_profile("needs.lua", "return {\n"
	    "\timage = \"%s/" FIXTURES "/files/vmlinuz\",\n"
	    "\timage_sha256 = string.rep(\"0\", 64),\n"
	    "\tdisk_size = \"10G\",\n}\n", top);
	cause = load_fails(path);
	xasprintf(&want, "%s:3: image_sha256: pins a downloaded image, and "
	    "image is a file (nothing is downloaded)", path);
	cr_assert_str_eq(cause, want, "a file image takes a disk_size");
	free(want);
	free(cause);
	free(path);
}

/* A profile of image settings only, loaded. */
static void
load_images(struct profile *p, const char *fmt, ...)
{
	va_list	 ap;
	char	*lua, *path;

	va_start(ap, fmt);
	xvasprintf(&lua, fmt, ap);
	va_end(ap);
	path = write_profile("resolve.lua", "return {\n%s\n}\n", lua);
	load_ok(p, path);
	free(path);
	free(lua);
}

/* image = NAME: the catalog's URLs for this host; a mirror's; its glibc. */
Test(profile, image_names_resolve)
{
	struct profile	 p;
	const char	*arch;
	char		*want, *text;

	if ((arch = catalog_arch()) == NULL)
		cr_skip_test("the catalog has no images for %s", facts_arch());

	load_images(&p, "image = \"debian-12\"");
	xasprintf(&want, "https://cloud.debian.org/images/cloud/bookworm/"
	    "latest/debian-12-generic-%s.qcow2", arch);
	cr_assert_str_eq(p.image_url, want);
	free(want);
	cr_assert_str_eq(p.image_sums_url, "https://cloud.debian.org/images/"
	    "cloud/bookworm/latest/SHA512SUMS");
	cr_assert_str_eq(p.image_glibc, "2.36");
	/* show says what it resolved to, as comments that load back. */
	text = show(&p, 0);
	xasprintf(&want, "\n\t-- image_url = \"https://cloud.debian.org/"
	    "images/cloud/bookworm/latest/debian-12-generic-%s.qcow2\",\n"
	    "\t-- image_sums_url = \"https://cloud.debian.org/images/cloud/"
	    "bookworm/latest/SHA512SUMS\",\n\t-- image_glibc = \"2.36\",\n",
	    arch);
	assert_contains(text, want);
	free(want);
	free(text);
	text = show(&p, PROFILE_PRINT_JSON);
	assert_contains(text, "\"sums_url\":\"https://cloud.debian.org/"
	    "images/cloud/bookworm/latest/SHA512SUMS\",\"glibc\":\"2.36\"}");
	free(text);
	profile_free(&p);
	cr_assert_null(p.image_url);
	cr_assert_null(p.image_sums_url);
	cr_assert_null(p.image_glibc);

	load_images(&p, "image = \"ubuntu-24.04\"");
	xasprintf(&want, "https://cloud-images.ubuntu.com/releases/24.04/"
	    "release/ubuntu-24.04-server-cloudimg-%s.img", arch);
	cr_assert_str_eq(p.image_url, want);
	free(want);
	cr_assert_str_eq(p.image_sums_url, "https://cloud-images.ubuntu.com/"
	    "releases/24.04/release/SHA256SUMS");
	cr_assert_str_eq(p.image_glibc, "2.39");
	profile_free(&p);

	/* A mirror: the catalog's file name there, its sums beside it. */
	load_images(&p, "image = \"ubuntu-22.04\", image_base_url = "
	    "\"https://mirror.example/vm\"");
	xasprintf(&want, "https://mirror.example/vm/ubuntu-22.04-server-"
	    "cloudimg-%s.img", arch);
	cr_assert_str_eq(p.image_url, want);
	free(want);
	cr_assert_str_eq(p.image_sums_url, "https://mirror.example/vm/"
	    "SHA256SUMS");
	cr_assert_str_eq(p.image_glibc, "2.35", "the same file");
	profile_free(&p);
	load_images(&p, "image = \"debian-13\", image_base_url = "
	    "\"http://10.0.0.1:8080/images/\"");
	xasprintf(&want, "http://10.0.0.1:8080/images/debian-13-generic-"
	    "%s.qcow2", arch);
	cr_assert_str_eq(p.image_url, want, "one slash");
	free(want);
	cr_assert_str_eq(p.image_sums_url, "http://10.0.0.1:8080/images/"
	    "SHA512SUMS");
	profile_free(&p);

	/* A name the catalog lacks: the mirror's file of that name. */
	load_images(&p, "image = \"my-image.qcow2\", image_base_url = "
	    "\"https://mirror.example/vm/\"");
	cr_assert_str_eq(p.image_url, "https://mirror.example/vm/"
	    "my-image.qcow2");
	cr_assert_null(p.image_sums_url, "beside it");
	cr_assert_null(p.image_glibc, "not known");
	text = show(&p, 0);
	assert_contains(text, "\n\t-- image_sums_url = nil,");
	assert_contains(text, "-- SHA256SUMS or SHA512SUMS beside it\n");
	free(text);
	profile_free(&p);
}

Test(profile, image_unknown_name)
{
	char	*path, *cause, *want;

	path = write_profile("unknown.lua", "return {\n"
	    "\timage = \"ubuntu-2404\",\n}\n");
	cause = load_fails(path);
	xasprintf(&want, "%s:2: image: \"ubuntu-2404\" is not in qsup's "
	    "catalog (did you mean \"ubuntu-24.04\"?); it has debian-12, "
	    "debian-13, ubuntu-22.04, ubuntu-23.04, ubuntu-24.04, "
	    "ubuntu-25.04, ubuntu-25.10, ubuntu-26.04; set image_base_url to "
	    "take it from "
	    "a mirror, or give an http(s) URL or a file", path);
	cr_assert_str_eq(cause, want);
	free(want);
	free(cause);
	free(path);

	/* From --set too, named as such. */
	path = write_profile("unknown.lua", "return {}\n");
	cause = load_fails_set(path, (char *[]){ "image=centos-9" }, 1);
	cr_assert_eq(strncmp(cause, "--set image=centos-9: image: "
	    "\"centos-9\" is not in qsup's catalog; it has debian-12, ", 76),
	    0, "%s", cause);
	free(cause);
	free(path);
}

Test(profile, image_url_and_file_resolve)
{
	struct profile	 p;
	char		 real[PATH_MAX];

	load_images(&p, "image = \"https://example.org/x/disk.img\"");
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_URL);
	cr_assert_str_eq(p.image_url, "https://example.org/x/disk.img");
	cr_assert_null(p.image_sums_url, "beside it");
	cr_assert_null(p.image_glibc);
	profile_free(&p);

	load_images(&p, "image = \"%s/" FIXTURES "/files/vmlinuz\", "
	    "disk_size = \"2G\"", top);
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_FILE);
	cr_assert_not_null(realpath(FIXTURES "/files/vmlinuz", real));
	cr_assert_str_eq(p.image, real);
	cr_assert_null(p.image_url, "nothing to download");
	cr_assert_null(p.image_sums_url);
	cr_assert_eq(p.disk_size, (uint64_t)2 << 30);
	profile_free(&p);

	load_images(&p, "cpus = 1");
	cr_assert_null(p.image_url, "the built-in guest");
	cr_assert_null(p.image_glibc);
	profile_free(&p);
}

/* Every name in the catalog resolves, for both of its architectures. */
Test(profile, catalog_entries)
{
	struct profile	 p;

	load_ok(&p, FIXTURES "/images.lua");
	cr_assert_str_eq(p.image, "ubuntu-24.04");
	cr_assert_eq(p.disk_size, (uint64_t)10 << 30);
	cr_assert_eq(p.image_unverified, 1);
	profile_free(&p);

	load_images(&p, "env = { NAMES = table.concat(qsup.images.names, "
	    "\",\"), N = #qsup.images.names,\n"
	    "\tARM = qsup.images[\"debian-13\"].url.arm64,\n"
	    "\tUARM = qsup.images[\"ubuntu-25.10\"].sums.arm64 }");
	cr_assert_eq(p.nenv, 4);
	cr_assert_str_eq(p.env[0], "ARM=https://cloud.debian.org/images/cloud/"
	    "trixie/latest/debian-13-generic-arm64.qcow2");
	cr_assert_str_eq(p.env[1], "N=8");
	cr_assert_str_eq(p.env[2], "NAMES=debian-12,debian-13,ubuntu-22.04,"
	    "ubuntu-23.04,ubuntu-24.04,ubuntu-25.04,ubuntu-25.10,ubuntu-26.04");
	cr_assert_str_eq(p.env[3], "UARM=https://cloud-images.ubuntu.com/"
	    "releases/25.10/release/SHA256SUMS");
	profile_free(&p);
}

/* The seed's Python -> image table, and with the host's glibc. */
Test(profile, catalog_for_python)
{
	static const struct {
		const char	*call;
		const char	*want;
	} cases[] = {
		{ "\"3.11\"", "ubuntu-23.04" },
		{ "\"3.12\"", "ubuntu-24.04" },
		{ "\"3.13\"", "ubuntu-25.04" },
		{ "\"3.14\"", "ubuntu-25.04" },
		{ "\"3.12.3\"", "ubuntu-24.04" },
		{ "\"3.11\", \"2.36\"", "debian-12" },	/* 23.04 has 2.37 */
		{ "\"3.11\", \"2.37\"", "ubuntu-23.04" },
		{ "\"3.11\", \"2.41\"", "ubuntu-23.04" },
		{ "\"3.12\", \"2.39\"", "ubuntu-24.04" },
		{ "\"3.12\", \"2.40\"", "ubuntu-24.04" },
		{ "\"3.12\", \"2.38\"", "nil no image of qsup's catalog has "
		  "Python 3.12 and a glibc no newer than 2.38 (ubuntu-24.04 "
		  "has 2.39)" },
		{ "\"3.13\", \"2.41\"", "ubuntu-25.04" },
		{ "\"3.13\", \"2.36\"", "nil no image of qsup's catalog has "
		  "Python 3.13 and a glibc no newer than 2.36 (ubuntu-25.04 "
		  "has 2.41)" },
		{ "\"3.11\", \"10.1\"", "ubuntu-23.04" },  /* numbers, not text */
		{ "\"3.9\"", "nil no image of qsup's catalog is mapped to "
		  "Python 3.9 (mapped: 3.11, 3.12, 3.13, 3.14)" },
	};
	struct profile	 p;
	char		*want;
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		load_images(&p, "env = { R = (function(a, b) return "
		    "tostring(a) .. (b and \" \" .. b or \"\") end)("
		    "qsup.images.for_python(%s)) }", cases[i].call);
		xasprintf(&want, "R=%s", cases[i].want);
		cr_assert_str_eq(p.env[0], want, "for_python(%s)",
		    cases[i].call);
		free(want);
		profile_free(&p);
	}
	/* As the data, and as the image. */
	load_images(&p, "image = qsup.images.for_python(\"3.12\"),\n"
	    "env = { T = qsup.images.python[\"3.13\"] }");
	cr_assert_str_eq(p.image, "ubuntu-24.04");
	cr_assert_str_eq(p.image_glibc, "2.39");
	cr_assert_str_eq(p.env[0], "T=ubuntu-25.04");
	profile_free(&p);
	/* With this host's own glibc: never an image with a newer one. */
	load_images(&p, "image = qsup.images.for_python(\"3.11\", "
	    "qsup.glibc) or qsup.images.default");
	cr_assert_not_null(p.image_glibc);
	profile_free(&p);
}

/* Wrong arguments are the profile's error, at its line. */
Test(profile, catalog_for_python_refused)
{
	static const struct {
		const char	*call;
		const char	*want;
	} cases[] = {
		{ "3.12", "the Python version is a string (\"3.12\"), not a "
		  "number" },
		{ "", "the Python version is a string (\"3.12\"), not a nil" },
		{ "\"python3\"", "\"python3\" is not a Python version "
		  "(\"3.12\")" },
		{ "\"3.12\", 2.36", "the glibc version is a string (\"2.36\", "
		  "as qsup.glibc), not a number" },
		{ "\"3.12\", \"new\"", "the glibc version is a string "
		  "(\"2.36\", as qsup.glibc), not \"new\"" },
	};
	char	*path, *cause, *want;
	size_t	 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		path = write_profile("py.lua", "local x = 1\n"
		    "return { image = qsup.images.for_python(%s) }\n",
		    cases[i].call);
		cause = load_fails(path);
		xasprintf(&want, "%s:2: qsup.images.for_python: %s", path,
		    cases[i].want);
		cr_assert_str_eq(cause, want);
		free(want);
		free(cause);
		free(path);
	}
}

/*
 * qsup.images is read-only, and what a profile does to its view, its
 * globals or the string library never reaches what the loader resolves.
 */
Test(profile, catalog_read_only)
{
	static const char	*writes[] = {
		"qsup.images.default = \"evil\"",
		"qsup.images[\"debian-12\"].url.amd64 = \"https://evil.example/\"",
		"qsup.images.entries[\"debian-12\"].glibc = \"9.99\"",
		"table.insert(qsup.images.names, \"evil\")",
		"setmetatable(qsup.images, nil)",
		"getmetatable(qsup.images).__index = {}",
	};
	struct profile	 p;
	const char	*arch;
	char		*path, *cause, *want;
	size_t		 i;

	for (i = 0; i < sizeof writes / sizeof writes[0]; i++) {
		path = write_profile("ro.lua", "local x = 1\n%s\n"
		    "return {}\n", writes[i]);
		cause = load_fails(path);
		xasprintf(&want, "%s:2: ", path);
		cr_assert_eq(strncmp(cause, want, strlen(want)), 0, "%s: %s",
		    writes[i], cause);
		cr_assert_null(strchr(cause, '\n'), "%s", cause);
		free(want);
		free(cause);
		free(path);
	}
	path = write_profile("ro.lua", "qsup.images.default = 1\n"
	    "return {}\n");
	cause = load_fails(path);
	xasprintf(&want, "%s:1: qsup.images is read-only; copy what you "
	    "change into a table of your own", path);
	cr_assert_str_eq(cause, want);
	free(want);
	free(cause);
	free(path);

	/* rawset() changes a view only; string.match is the catalog's own. */
	path = write_profile("ro.lua", "local e = qsup.images[\"debian-12\"]\n"
	    "rawset(e.url, \"amd64\", \"https://evil.example/a\")\n"
	    "rawset(e.url, \"arm64\", \"https://evil.example/b\")\n"
	    "rawset(qsup.images.entries, \"debian-12\", { url = {} })\n"
	    "string.match = function() return nil end\n"
	    "tonumber = nil\n"
	    "return { image = \"debian-12\", env = { R = qsup.images."
	    "for_python(\"3.11\", \"2.36\") } }\n");
	load_ok(&p, path);
	cr_assert_str_eq(p.env[0], "R=debian-12");
	if ((arch = catalog_arch()) != NULL)
		cr_assert_not_null(strstr(p.image_url, "cloud.debian.org"),
		    "%s", p.image_url);
	cr_assert_str_eq(p.image_glibc, "2.36");
	profile_free(&p);
	/* And the next load is untouched by the last. */
	load_images(&p, "env = { U = qsup.images[\"debian-12\"].url.arm64 }");
	cr_assert_str_eq(p.env[0], "U=https://cloud.debian.org/images/cloud/"
	    "bookworm/latest/debian-12-generic-arm64.qcow2");
	profile_free(&p);
	free(path);
}
