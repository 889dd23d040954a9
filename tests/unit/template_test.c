#include <sys/file.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cmd.h"

static char	dir[] = "/tmp/qsup-tpl.XXXXXX";

static void
setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	setenv("XDG_CACHE_HOME", dir, 1);
}

static void
teardown(void)
{
	util_rm_rf(dir);
}

TestSuite(template, .init = setup, .fini = teardown);

static char *
key_of(const char *const *argv)
{
	struct template	 t;
	char		*key;

	cr_assert_eq(template_init(&t, (char **)(uintptr_t)argv, "/bin/sh",
	    "/bin/ls", TEMPLATE_STREAM), 0);
	key = xstrdup(t.key);
	template_free(&t);
	return (key);
}

Test(template, key_ignores_fds_run_dir_and_share_paths)
{
	const char *a[] = { "qemu-system-x86_64", "-name", "qsup:/run/a",
	    "-m", "512", "-chardev", "socket,id=con,fd=7", "-fsdev",
	    "local,id=fs0,path=/home/a,security_model=none,readonly=on",
	    NULL };
	const char *b[] = { "qemu-system-x86_64", "-name", "qsup:/run/b",
	    "-m", "512", "-chardev", "socket,id=con,fd=12", "-fsdev",
	    "local,id=fs0,path=/srv/b,security_model=none", NULL };
	const char *c[] = { "qemu-system-x86_64", "-name", "qsup:/run/a",
	    "-m", "256", "-chardev", "socket,id=con,fd=7", "-fsdev",
	    "local,id=fs0,path=/home/a,security_model=none,readonly=on",
	    NULL };
	const char *d[] = { "qemu-system-x86_64", "-name", "qsup:/run/a",
	    "-m", "512", "-chardev", "socket,id=con,fd=7", NULL };
	char *ka = key_of(a), *kb = key_of(b), *kc = key_of(c), *kd = key_of(d);

	cr_assert_eq(strlen(ka), 32);
	cr_assert_str_eq(ka, kb);
	cr_assert_str_neq(ka, kc, "memory must change the key");
	cr_assert_str_neq(ka, kd, "a share more or less must change the key");
	free(ka);
	free(kb);
	free(kc);
	free(kd);
}

Test(template, lock_is_exclusive_and_commit_is_whole)
{
	const char	*argv[] = { "qemu-system-x86_64", "-m", "64", NULL };
	struct template	 t1, t2;
	char		*cause = NULL, *lock;
	int		 fd;

	cr_assert_eq(template_init(&t1, (char **)(uintptr_t)argv, "/bin/sh",
	    "/bin/ls", TEMPLATE_STREAM), 0);
	cr_assert_eq(template_init(&t2, (char **)(uintptr_t)argv, "/bin/sh",
	    "/bin/ls", TEMPLATE_STREAM), 0);
	cr_assert_eq(template_exists(&t1), 0);
	cr_assert_eq(template_lock(&t1), 0);
	cr_assert_eq(template_lock(&t2), -1, "two builders of one template");
	fd = template_open_tmp(&t1, &cause);
	cr_assert(fd != -1, "%s", cause);
	cr_assert_eq(write(fd, "state", 5), 5);
	/* Not there until committed. */
	cr_assert_eq(template_exists(&t2), 0);
	cr_assert_eq(template_commit(&t1, fd, &cause), 0, "%s", cause);
	close(fd);
	cr_assert_eq(template_exists(&t2), 1);
	xasprintf(&lock, "%s/%s.lock", t1.dir, t1.key);
	cr_assert_eq(access(lock, F_OK), 0);
	template_unlock(&t1);
	cr_assert_eq(access(lock, F_OK), -1, "the lock's file was left");
	free(lock);
	/* Finished by someone else: no need to lock it. */
	cr_assert_eq(template_lock(&t2), -1);
	/* Changed behind our back: not used. */
	fd = open(t1.state, O_WRONLY|O_APPEND);
	cr_assert_eq(write(fd, "x", 1), 1);
	close(fd);
	cr_assert_eq(template_exists(&t2), 0);
	template_discard(&t2);
	cr_assert_eq(access(t1.state, F_OK), -1);
	template_free(&t1);
	template_free(&t2);
}

static void
touch(const char *tdir, const char *name)
{
	char	*path;
	int	 fd;

	xasprintf(&path, "%s/%s", tdir, name);
	cr_assert_neq(fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, 0600), -1);
	close(fd);
	free(path);
}

static int
exists(const char *tdir, const char *name)
{
	char	*path;
	int	 rc;

	xasprintf(&path, "%s/%s", tdir, name);
	rc = access(path, F_OK) == 0;
	free(path);
	return (rc);
}

/* A pid that no process has now: a child that has been reaped. */
static long
dead_pid(void)
{
	pid_t	pid;

	cr_assert_neq(pid = fork(), -1);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return ((long)pid);
}

Test(template, sweep_removes_half_written_files_of_dead_writers)
{
	const char	*key = "0123456789abcdef0123456789abcdef";
	char		*tdir, *path, name[128];
	long		 dead = dead_pid(), live = (long)getpid();
	int		 held;
	struct template	 t;
	const char	*argv[] = { "qemu-system-x86_64", NULL };

	xasprintf(&tdir, "%s/qsup/templates", dir);
	cr_assert_eq(util_mkdir_p(tdir, 0700), 0);
	snprintf(name, sizeof name, "%s.state.%ld", key, dead);
	touch(tdir, name);
	snprintf(name, sizeof name, "%s.meta.%ld", key, dead);
	touch(tdir, name);
	snprintf(name, sizeof name, "%s.shape.%ld", key, dead);
	touch(tdir, name);
	snprintf(name, sizeof name, "%s.state.%ld", key, live);
	touch(tdir, name);
	touch(tdir, "0123456789abcdef0123456789abcdef.state");
	touch(tdir, "0123456789abcdef0123456789abcdef.lock");
	/* A builder's lock, held. */
	xasprintf(&path, "%s/fedcba9876543210fedcba9876543210.lock", tdir);
	held = open(path, O_RDWR|O_CREAT|O_CLOEXEC, 0600);
	cr_assert(held != -1 && flock(held, LOCK_EX|LOCK_NB) == 0);
	free(path);
	touch(tdir, "other.1");

	/* Every start with warm start sweeps. */
	cr_assert_eq(template_init(&t, (char **)(uintptr_t)argv, "/bin/sh",
	    "/bin/ls", TEMPLATE_STREAM), 0);
	template_free(&t);
	snprintf(name, sizeof name, "%s.state.%ld", key, dead);
	cr_assert(!exists(tdir, name), "a dead writer's state was left");
	snprintf(name, sizeof name, "%s.meta.%ld", key, dead);
	cr_assert(!exists(tdir, name));
	snprintf(name, sizeof name, "%s.shape.%ld", key, dead);
	cr_assert(!exists(tdir, name));
	snprintf(name, sizeof name, "%s.state.%ld", key, live);
	cr_assert(exists(tdir, name), "a live writer's state was removed");
	cr_assert(exists(tdir, "0123456789abcdef0123456789abcdef.state"));
	cr_assert(!exists(tdir, "0123456789abcdef0123456789abcdef.lock"),
	    "a lock no one holds was left");
	cr_assert(exists(tdir, "fedcba9876543210fedcba9876543210.lock"),
	    "a held lock was removed");
	cr_assert(exists(tdir, "other.1"));
	cr_assert_eq(template_sweep(tdir), 0);
	close(held);
	free(tdir);
}

/* A whole template of argv, its kernel kernel: its key. */
static char *
saved(const char *const *argv, const char *kernel)
{
	struct template	 t;
	char		*cause = NULL, *key;
	int		 fd;

	cr_assert_eq(template_init(&t, (char **)(uintptr_t)argv, kernel,
	    "/bin/ls", TEMPLATE_STREAM), 0);
	cr_assert_eq(template_lock(&t), 0);
	fd = template_open_tmp(&t, &cause);
	cr_assert(fd != -1, "%s", cause);
	cr_assert_eq(write(fd, "state", 5), 5);
	cr_assert_eq(template_commit(&t, fd, &cause), 0, "%s", cause);
	close(fd);
	key = xstrdup(t.key);
	template_free(&t);
	return (key);
}

struct seen {
	char			*name[8];
	struct template_info	 ti[8];
	int			 n;
};

static void
seen_cb(const struct template_info *ti, void *arg)
{
	struct seen	*s = arg;

	cr_assert_lt(s->n, 8);
	s->ti[s->n] = *ti;
	s->name[s->n] = xstrdup(ti->name);	/* ti->name is readdir's */
	s->ti[s->n].name = s->name[s->n];
	s->n++;
}

static const struct template_info *
seen_find(struct seen *s, const char *name)
{
	int	i;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->name[i], name) == 0)
			return (&s->ti[i]);
	}
	cr_assert_fail("%s not listed", name);
	return (NULL);
}

static void
seen_free(struct seen *s)
{
	int	i;

	for (i = 0; i < s->n; i++)
		free(s->name[i]);
	memset(s, 0, sizeof *s);
}

/* What qsup cache lists and clears (core/cmd/cmd_cache.c). */
Test(template, each_lists_whole_stale_and_half_written_and_remove_clears)
{
	const char	*a[] = { "qemu-system-x86_64", "-m", "64", NULL };
	const char	*b[] = { "qemu-system-x86_64", "-m", "128", NULL };
	const struct template_info *ti;
	struct seen	 s = { 0 };
	char		*tdir, *kernel, *ka, *kb, name[128];
	FILE		*f;

	cr_assert_not_null(tdir = template_dir());
	xasprintf(&kernel, "%s/vmlinux", dir);
	cr_assert_not_null(f = fopen(kernel, "w"));
	fclose(f);
	ka = saved(a, "/bin/sh");
	kb = saved(b, kernel);
	/* b's kernel changes: b is stale. */
	cr_assert_not_null(f = fopen(kernel, "w"));
	fputs("new", f);
	fclose(f);
	snprintf(name, sizeof name, "%s.state.%ld", ka, (long)getpid());
	touch(tdir, name);

	cr_assert_eq(template_each(tdir, seen_cb, &s), 0);
	cr_assert_eq(s.n, 3);
	ti = seen_find(&s, ka);
	cr_assert(!ti->stale && ti->writer == 0 && ti->size == 5 &&
	    ti->mtime != 0);
	ti = seen_find(&s, kb);
	cr_assert(ti->stale && ti->writer == 0);
	ti = seen_find(&s, name);
	cr_assert(ti->writer == (long)getpid() && ti->writer_alive);
	seen_free(&s);

	template_remove(tdir, kb);
	snprintf(name, sizeof name, "%s.state", kb);
	cr_assert(!exists(tdir, name));
	snprintf(name, sizeof name, "%s.shape", kb);
	cr_assert(!exists(tdir, name));
	snprintf(name, sizeof name, "%s.meta", kb);
	cr_assert(!exists(tdir, name));
	snprintf(name, sizeof name, "%s.state", ka);
	cr_assert(exists(tdir, name), "another template was removed");
	cr_assert_eq(template_each(tdir, seen_cb, &s), 0);
	cr_assert_eq(s.n, 2);
	seen_free(&s);
	cr_assert_eq(template_each("/nonexistent/qsup", seen_cb, &s), -1);
	free(ka);
	free(kb);
	free(kernel);
	free(tdir);
}

/* The format is part of the key; the RAM file's path and mode are not. */
Test(template, shared_key_ignores_the_ram_path)
{
	const char *a[] = { "qemu-system-x86_64", "-m", "512", "-object",
	    "memory-backend-file,id=ram,size=512M,mem-path=/c/K.ram.12,"
	    "share=on", NULL };
	const char *b[] = { "qemu-system-x86_64", "-m", "512", "-object",
	    "memory-backend-file,id=ram,size=512M,mem-path=/proc/self/fd/9,"
	    "share=off", NULL };
	struct template	 ta, tb, tc;

	cr_assert_eq(template_init(&ta, (char **)(uintptr_t)a, "/bin/sh",
	    "/bin/ls", TEMPLATE_SHARED), 0);
	cr_assert_eq(template_init(&tb, (char **)(uintptr_t)b, "/bin/sh",
	    "/bin/ls", TEMPLATE_SHARED), 0);
	cr_assert_eq(template_init(&tc, (char **)(uintptr_t)a, "/bin/sh",
	    "/bin/ls", TEMPLATE_STREAM), 0);
	cr_assert_str_eq(ta.key, tb.key);
	cr_assert_str_neq(ta.key, tc.key, "the format must change the key");
	cr_assert(strncmp(ta.shape, "qsup-template 2 ram shared protocol ",
	    36) == 0, "%s", ta.shape);
	cr_assert(strncmp(tc.shape, "qsup-template 1 protocol ", 25) == 0);
	template_free(&ta);
	template_free(&tb);
	template_free(&tc);
}

static void
write_at(const char *path, off_t off, const char *data)
{
	int	fd;

	cr_assert_neq(fd = open(path, O_WRONLY), -1, "%s", path);
	cr_assert_eq(pwrite(fd, data, strlen(data), off),
	    (ssize_t)strlen(data));
	close(fd);
}

/*
 * Format 2: the RAM file exists from the build's start (KEY.ram.PID),
 * lands with the state, and template_open hands out exactly the files
 * checked; one changed, gone or of another boot is no template.
 */
Test(template, shared_commit_open_and_change)
{
	const char	*argv[] = { "qemu-system-x86_64", "-m", "64", NULL };
	struct template	 t;
	char		*cause = NULL, *meta, *path, buf[8];
	int		 fd, sfd, rfd;

	cr_assert_eq(template_init(&t, (char **)(uintptr_t)argv, "/bin/sh",
	    "/bin/ls", TEMPLATE_SHARED), 0);
	cr_assert_eq(template_lock(&t), 0);
	cr_assert_eq(template_ram_tmp(&t, &cause), 0, "%s", cause);
	cr_assert(access(t.ram_tmp, F_OK) == 0);
	cr_assert(truncate(t.ram_tmp, 1 << 20) == 0);
	write_at(t.ram_tmp, 4096, "guest");
	fd = template_open_tmp(&t, &cause);
	cr_assert(fd != -1, "%s", cause);
	cr_assert_eq(write(fd, "devices", 7), 7);
	cr_assert_eq(template_exists(&t), 0);
	cr_assert_eq(template_commit(&t, fd, &cause), 0, "%s", cause);
	close(fd);
	cr_assert_null(t.ram_tmp);
	cr_assert_eq(template_exists(&t), 1);
	cr_assert_eq(template_open(&t, &sfd, &rfd, &cause), 0, "%s", cause);
	cr_assert_eq(pread(rfd, buf, 5, 4096), 5);
	cr_assert(memcmp(buf, "guest", 5) == 0);
	close(sfd);
	close(rfd);

	/* Written in another boot: not trusted (it was never fsync'ed). */
	path = NULL;
	xasprintf(&path, "%s/%s.meta", t.dir, t.key);
	meta = util_read_file(path, NULL, 4096);
	cr_assert_not_null(meta);
	cr_assert(strncmp(meta, "2 boot ", 7) == 0, "%s", meta);
	write_at(path, 7, "X");
	cr_assert_eq(template_exists(&t), 0);
	cr_assert_eq(template_open(&t, &sfd, &rfd, &cause), -1);
	free(cause);
	cause = NULL;
	cr_assert_eq(util_write_file(path, meta), 0);
	cr_assert_eq(template_exists(&t), 1);

	/* The RAM file changed in size: no template. */
	cr_assert(truncate(t.ram, 2 << 20) == 0);
	cr_assert_eq(template_exists(&t), 0);
	cr_assert_eq(util_write_file(path, meta), 0);
	cr_assert_eq(template_exists(&t), 0);

	/* Gone: no template; discard removes every file. */
	cr_assert_eq(unlink(t.ram), 0);
	cr_assert_eq(template_exists(&t), 0);
	cr_assert_eq(template_open(&t, &sfd, &rfd, &cause), -1);
	cr_assert(strstr(cause, ".ram") != NULL, "%s", cause);
	free(cause);
	template_discard(&t);
	cr_assert(access(t.state, F_OK) == -1);
	cr_assert(access(path, F_OK) == -1);
	free(meta);
	free(path);
	template_free(&t);
}

/* A save given up removes the half-built RAM file too. */
Test(template, shared_abandon_removes_the_ram)
{
	const char	*argv[] = { "qemu-system-x86_64", "-m", "64", NULL };
	struct template	 t;
	char		*cause = NULL, *ram;

	cr_assert_eq(template_init(&t, (char **)(uintptr_t)argv, "/bin/sh",
	    "/bin/ls", TEMPLATE_SHARED), 0);
	cr_assert_eq(template_ram_tmp(&t, &cause), 0, "%s", cause);
	ram = xstrdup(t.ram_tmp);
	template_abandon(&t);
	cr_assert(access(ram, F_OK) == -1, "%s was left", ram);
	free(ram);
	template_free(&t);
}
