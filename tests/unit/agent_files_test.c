/*
 * qsup-agent's file jobs (POST /exec with "read" or "write"), through the
 * real binary in test mode (agent_helpers.h): streams byte exact, the
 * errno of what failed, and a write that is whole or leaves nothing.
 * What only a compiled-in job.c can be made to do is agent_job_test.c's.
 */
#include "agent_helpers.h"

/* --- File jobs. */

static void
read_back(const char *path, struct tbuf *out)
{
	char	chunk[4096];
	ssize_t	n;
	int	fd;

	memset(out, 0, sizeof *out);
	tbuf_add(out, "", 0);
	fd = open(path, O_RDONLY);
	cr_assert(fd != -1, "open %s: %s", path, strerror(errno));
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		tbuf_add(out, chunk, n);
	close(fd);
}

/* The names in the test's folder, sorted, one line each. */
static void
dir_names(char *out, size_t size)
{
	char	cmd[256];
	FILE	*f;
	size_t	n;

	snprintf(cmd, sizeof cmd, "ls -A %s", ag.dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	pclose(f);
}

static void
job_json(char *out, size_t size, const char *kind, const char *path,
    const char *rest)
{
	snprintf(out, size, "{\"%s\":\"%s\"%s}", kind, path, rest);
}

Test(agent, read_job_streams_the_file_byte_exact)
{
	struct result	 r;
	unsigned char	*data;
	char		 path[256], json[512];
	size_t		 len = 300000, i;

	spawn_agent(1, NULL);
	data = malloc(len);
	for (i = 0; i < len; i++)
		data[i] = (i * 7919) ^ (i >> 8);
	tmp_path(path, sizeof path, "blob");
	write_file(path, data, len, 0600);
	job_json(json, sizeof json, "read", path, "");
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, 0, "exit: %s (%s)", r.exit, r.err.data);
	cr_assert_eq(r.out.len, len);
	cr_assert_eq(memcmp(r.out.data, data, len), 0);
	cr_assert_eq(r.err.len, 0);
	result_free(&r);

	/* An empty file: no output, status 0. */
	tmp_path(path, sizeof path, "empty");
	write_file(path, "", 0, 0644);
	job_json(json, sizeof json, "read", path, "");
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.out.len, 0);
	result_free(&r);
	free(data);
}

Test(agent, read_job_failures_are_the_errno)
{
	struct result	r;
	char		path[256], json[512];

	spawn_agent(1, NULL);
	tmp_path(path, sizeof path, "missing");
	job_json(json, sizeof json, "read", path, "");
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, ENOENT, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.err.data, path), "%s", r.err.data);
	cr_assert_not_null(strstr(r.err.data, strerror(ENOENT)), "%s",
	    r.err.data);
	cr_assert_eq(r.out.len, 0);
	result_free(&r);

	job_json(json, sizeof json, "read", ag.dir, "");
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, EISDIR, "exit: %s", r.exit);
	result_free(&r);

	exec_run(&ag.c[0], "{\"read\":\"etc/passwd\"}", &r);
	cr_assert_eq(r.status, EINVAL, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.err.data, "etc/passwd"), "%s", r.err.data);
	result_free(&r);
}

Test(agent, write_job_puts_the_file_in_place_whole)
{
	struct result	 r;
	struct tbuf	 back;
	struct stat	 st, before;
	char		 path[256], json[512], names[512];
	char		*big;
	size_t		 len = 200000;
	mode_t		 old;

	spawn_agent(2, NULL);
	big = malloc(len);
	memset(big, 'z', len);
	big[0] = '\0';
	tmp_path(path, sizeof path, "out");
	write_file(path, "old contents", 12, 0600);
	cr_assert_eq(stat(path, &before), 0);
	job_json(json, sizeof json, "write", path, ",\"mode\":1909");
	exec_begin(&ag.c[0], json, &r);
	stdin_send(&ag.c[1], r.id, big, len, 204);
	stdin_send(&ag.c[1], r.id, "tail", 4, 204);
	/* Until the close, the old file is there, whole. */
	read_back(path, &back);
	cr_assert_str_eq(back.data, "old contents");
	free(back.data);
	stdin_close(&ag.c[1], r.id);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, 0, "exit: %s (%s)", r.exit, r.err.data);
	cr_assert_eq(r.err.len, 0);
	read_back(path, &back);
	cr_assert_eq(back.len, len + 4);
	cr_assert_eq(memcmp(back.data, big, len), 0);
	cr_assert_eq(memcmp(back.data + len, "tail", 4), 0);
	free(back.data);
	cr_assert_eq(stat(path, &st), 0);
	/* 1909 is 03565: exactly, whatever the umask. */
	cr_assert_eq(st.st_mode & 07777, 03565, "mode %o", st.st_mode & 07777);
	cr_assert_neq(st.st_ino, before.st_ino, "written in place");
	dir_names(names, sizeof names);
	cr_assert_str_eq(names, "out\nqsup-config\n");
	result_free(&r);

	/* No mode: 0644, even under a umask that would take bits away. */
	old = umask(0);
	umask(old);
	tmp_path(path, sizeof path, "new");
	job_json(json, sizeof json, "write", path, "");
	exec_begin(&ag.c[0], json, &r);
	stdin_close(&ag.c[1], r.id);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, 0, "exit: %s (%s)", r.exit, r.err.data);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 0);
	cr_assert_eq(st.st_mode & 07777, 0644, "mode %o", st.st_mode & 07777);
	result_free(&r);
	free(big);
}

Test(agent, write_job_failures_leave_nothing)
{
	struct result	r;
	char		path[256], json[512], names[512];
	struct tbuf	back;

	spawn_agent(2, NULL);
	job_json(json, sizeof json, "write", ag.dir, "");
	exec_begin(&ag.c[0], json, &r);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, EISDIR, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.err.data, ag.dir), "%s", r.err.data);
	result_free(&r);

	tmp_path(path, sizeof path, "no/such/dir/f");
	job_json(json, sizeof json, "write", path, "");
	exec_begin(&ag.c[0], json, &r);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, ENOENT, "exit: %s", r.exit);
	result_free(&r);

	exec_begin(&ag.c[0], "{\"write\":\"relative\"}", &r);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, EINVAL, "exit: %s", r.exit);
	result_free(&r);

	/* Killed half-way: the old file stays, and nothing is left beside. */
	tmp_path(path, sizeof path, "keep");
	write_file(path, "kept", 4, 0644);
	job_json(json, sizeof json, "write", path, "");
	exec_begin(&ag.c[0], json, &r);
	stdin_send(&ag.c[1], r.id, "partial", 7, 204);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "signal", "9"), 204);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.signal, SIGKILL, "exit: %s", r.exit);
	result_free(&r);
	read_back(path, &back);
	cr_assert_str_eq(back.data, "kept");
	free(back.data);
	dir_names(names, sizeof names);
	cr_assert_str_eq(names, "keep\nqsup-config\n");
}
