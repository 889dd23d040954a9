/*
 * Host facts a profile reads: the Python a shell would run (qsup.python,
 * python.lua), and the image variables of the environment. Run from the
 * top of the tree.
 */
#include "profile_helpers.h"

/* -------------------------------------------------------------------------
 * Host facts: the Python a shell would run.
 */

Test(profile, python_by_its_link)
{
	struct facts_python	py;
	char			*want;

	make_exec("opt/py/bin/python3.12", "#!/bin/sh\nexit 1\n");
	make_link("python3.12", "opt/py/bin/python3");
	set_path("empty:opt/py/bin");
	cr_assert_eq(facts_python(&py), 0);
	xasprintf(&want, "%s/opt/py/bin/python3", tmpdir);
	cr_assert_str_eq(py.path, want);
	free(want);
	xasprintf(&want, "%s/opt/py/bin/python3.12", tmpdir);
	cr_assert_str_eq(py.executable, want);
	free(want);
	cr_assert_str_eq(py.version, "3.12");
	xasprintf(&want, "%s/opt/py", tmpdir);
	cr_assert_str_eq(py.prefix, want);
	free(want);
	cr_assert_null(py.venv);
	facts_python_free(&py);
}

Test(profile, python_in_a_venv)
{
	struct facts_python	py;
	char			*want;

	make_exec("opt/py/bin/python3.11", "#!/bin/sh\nexit 1\n");
	free(write_file("venv/pyvenv.cfg", "home = x\n"));
	xasprintf(&want, "%s/opt/py/bin/python3.11", tmpdir);
	make_link(want, "venv/bin/python3");
	free(want);
	set_path("venv/bin");
	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.11");
	xasprintf(&want, "%s/venv", tmpdir);
	cr_assert_str_eq(py.venv, want);
	free(want);
	facts_python_free(&py);
}

/* pyenv's shims are read, not run: PYENV_VERSION, then the version file. */
Test(profile, python_through_pyenv)
{
	struct facts_python	py;
	char			*shim, *want;

	xasprintf(&shim, "#!/usr/bin/env bash\nset -e\n"
	    "export PYENV_ROOT=\"%s/pyenv\"\n"
	    "exec \"%s/pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n",
	    tmpdir, tmpdir);
	make_exec("pyenv/shims/python3", shim);
	free(shim);
	make_exec("pyenv/versions/3.10.4/bin/python3.10", "");
	make_link("python3.10", "pyenv/versions/3.10.4/bin/python3");
	make_exec("pyenv/versions/3.13.1/bin/python3.13", "");
	make_link("python3.13", "pyenv/versions/3.13.1/bin/python3");
	free(write_file("pyenv/version", "3.10.4\n"));
	make_exec("usr/bin/python3.9", "");
	make_link("python3.9", "usr/bin/python3");
	set_path("pyenv/shims:usr/bin");
	unsetenv("PYENV_VERSION");
	cr_assert_eq(chdir(tmpdir), 0);

	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.10");
	xasprintf(&want, "%s/pyenv/versions/3.10.4", tmpdir);
	cr_assert_str_eq(py.prefix, want);
	free(want);
	facts_python_free(&py);

	free(write_file(".python-version", "3.13.1\n"));
	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.13", ".python-version wins");
	facts_python_free(&py);

	setenv("PYENV_VERSION", "system", 1);
	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.9", "system: the next on PATH");
	facts_python_free(&py);
}

/* A python3 whose name says nothing is asked, once, with a deadline. */
Test(profile, python_asked)
{
	struct facts_python	py;

	make_exec("bin/python3", "#!/bin/sh\necho 3.8\n"
	    "echo /opt/python/bin/python3.8\n");
	set_path("bin");
	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.8");
	cr_assert_str_eq(py.executable, "/opt/python/bin/python3.8");
	cr_assert_str_eq(py.prefix, "/opt/python");
	facts_python_free(&py);

	set_path("empty");
	cr_assert_eq(facts_python(&py), -1, "no python3 at all");
}

/* python.lua, with a Python of our making: it loads and resolves. */
Test(profile, python_profile)
{
	struct profile	 p;
	char		*want;

	make_exec("opt/py/bin/python3.12", "");
	make_link("python3.12", "opt/py/bin/python3");
	set_path("opt/py/bin");
	load_ok(&p, "profiles/python.lua");
	/* The default guest: no image; the interpreter on the host's glibc. */
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_NONE);
	cr_assert_eq(p.nshares, 4);
	xasprintf(&want, "%s/opt/py", tmpdir);
	cr_assert_str_eq(p.shares[0].host, want);
	cr_assert_str_eq(p.shares[0].guest, want);
	cr_assert_eq(p.shares[0].rw, 0);
	free(want);
	cr_assert_str_eq(p.shares[1].guest, "/lib/x86_64-linux-gnu");
	cr_assert_str_eq(p.shares[2].guest, "/lib64");
	cr_assert_str_eq(p.shares[3].guest, "/app");
	cr_assert_str_eq(p.cwd, "/app");
	cr_assert_eq(p.virtfs_security_model, PROFILE_SM_NONE);
	profile_free(&p);

	/* The seed's variable names the image outright. */
	setenv("PYSANDBOXES_QEMU_IMAGE_URL", "https://example.org/x.img", 1);
	load_ok(&p, "profiles/python.lua");
	cr_assert_str_eq(p.image, "https://example.org/x.img");
	profile_free(&p);
}

/* The default profile (and every other) honours the image variables. */
Test(profile, image_variables)
{
	struct profile	 p;
	char		*dir, *path;

	setenv("PYSANDBOXES_QEMU_IMAGE_URL", "https://example.org/a.img", 1);
	setenv("PYSANDBOXES_QEMU_IMAGE_BASE_URL", "https://example.org/", 1);
	xasprintf(&dir, "%s/images", tmpdir);
	setenv("PYSANDBOXES_VM_IMAGES_DIR", dir, 1);
	load_ok(&p, NULL);
	cr_assert_str_eq(p.image, "https://example.org/a.img");
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_URL);
	cr_assert_str_eq(p.image_base_url, "https://example.org/");
	cr_assert_str_eq(p.images_dir, dir);
	profile_free(&p);

	setenv("QSUP_IMAGE", "debian-12", 1);
	load_ok(&p, FIXTURES "/empty.lua");
	cr_assert_str_eq(p.image, "debian-12", "qsup's own wins");
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_NAME);
	profile_free(&p);

	/* A profile cannot take qsup.env away from the defaults. */
	path = write_file("clobber.lua", "qsup = nil\nreturn {}\n");
	load_ok(&p, path);
	cr_assert_str_eq(p.image, "debian-12");
	profile_free(&p);
	free(path);
	free(dir);
}
