/*
 * qsup-agent's setup, through the real binary in test mode
 * (agent_helpers.h): shares and binds that fail, config and root lines
 * that do not parse, seed ISOs written the ways seed writers lay them
 * out, no seed at all, and the template state before POST /setup (and
 * its POST /root).
 */
#include "agent_helpers.h"

/* --- Seeds and setup errors. */

Test(agent, mount_failure_is_a_setup_error)
{
	struct tbuf	body;
	char		cfg[512], mnt[256];

	make_dir();
	tmp_path(mnt, sizeof mnt, "share");
	snprintf(cfg, sizeof cfg, "token %s\nmount qsup-no-such-tag %s rw\n",
	    TOKEN, mnt);
	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg),
	    "--apply-mounts");
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 503);
	snprintf(cfg, sizeof cfg, "{\"error\":\"mount qsup-no-such-tag on %s: ",
	    mnt);
	cr_assert_eq(strncmp(body.data, cfg, strlen(cfg)), 0, "%s", body.data);
	free(body.data);
	/* The token is still checked; exec is refused. */
	send_request(&ag.c[0], "GET", "/ping", "wrong", NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 401);
	free(body.data);
	cr_assert_eq(request(&ag.c[0], "POST", "/exec", "{\"argv\":[\"true\"]}",
	    17, &body), 503);
	free(body.data);
}

/* A cow share needs the cow disk its overlay's upper layer lives on. */
Test(agent, cow_mount_without_its_disk_is_a_setup_error)
{
	struct tbuf	body;
	char		cfg[512], mnt[256], want[600];

	make_dir();
	tmp_path(mnt, sizeof mnt, "cow");
	snprintf(cfg, sizeof cfg, "token %s\nmount qsup0 %s cow\n", TOKEN,
	    mnt);
	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg),
	    "--apply-mounts");
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 503);
	snprintf(want, sizeof want, "{\"error\":\"cow share %s: no cow disk "
	    "in the config", mnt);
	cr_assert_eq(strncmp(body.data, want, strlen(want)), 0, "%s",
	    body.data);
	free(body.data);
}

/* A bind whose source is missing is a setup error naming both paths. */
Test(agent, bind_failure_is_a_setup_error)
{
	struct tbuf	body;
	char		cfg[512], dst[256], want[600];

	make_dir();
	tmp_path(dst, sizeof dst, "bound");
	snprintf(cfg, sizeof cfg, "token %s\nbind /nonexistent/qsup-ld %s "
	    "ro\n", TOKEN, dst);
	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg),
	    "--apply-mounts");
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 503);
	snprintf(want, sizeof want, "{\"error\":\"bind /nonexistent/qsup-ld "
	    "on %s: No such file or directory", dst);
	cr_assert_eq(strncmp(body.data, want, strlen(want)), 0, "%s",
	    body.data);
	free(body.data);
}

Test(agent, bad_bind_line_is_a_setup_error)
{
	struct tbuf	 body;
	const char	*cfg = "token " TOKEN "\nbind relative /x ro\n";

	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg), NULL);
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 503);
	cr_assert_not_null(strstr(body.data, "line 2: bind: bind paths must "
	    "be absolute"), "%s", body.data);
	free(body.data);
}

/* root SERIAL grow|keep [BYTES]: anything else names the line. */
Test(agent, bad_root_line_is_a_setup_error)
{
	static const char *const bad[] = { "root qsup-root", "root qsup-root "
	    "shrink", "root qsup-root grow 12x", "root qsup-root keep 0",
	    "root qsup-root grow 1 2", NULL };
	struct tbuf	 body;
	char		 cfg[256];
	size_t		 i;

	for (i = 0; bad[i] != NULL; i++) {
		snprintf(cfg, sizeof cfg, "token %s\n%s\n", TOKEN, bad[i]);
		spawn_agent_with(1, "--config", "qsup-config", cfg,
		    strlen(cfg), NULL);
		cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body),
		    503, "%s", bad[i]);
		cr_assert_not_null(strstr(body.data, "line 2: root: "), "%s: %s",
		    bad[i], body.data);
		free(body.data);
		teardown();
	}
}

/* Not PID 1, there is no disk to mount: the ping says no root. */
Test(agent, root_line_in_test_mode_mounts_nothing)
{
	struct tbuf	body;

	spawn_agent(1, "root qsup-root grow 10737418240\n");
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 200);
	cr_assert_null(strstr(body.data, "\"root\""), "%s", body.data);
	cr_assert_null(strstr(body.data, "\"glibc\""), "%s", body.data);
	free(body.data);
}

Test(agent, bad_seed_config_is_a_setup_error)
{
	struct tbuf	 body;
	const char	*cfg = "token " TOKEN "\nenv NOEQUALS\n";

	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg), NULL);
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 503);
	cr_assert_not_null(strstr(body.data, "line 2"), "%s", body.data);
	free(body.data);
}

Test(agent, seed_without_token_answers_503)
{
	struct tbuf	 body;
	const char	*cfg = "hostname h\n";

	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg), NULL);
	send_request(&ag.c[0], "GET", "/ping", "anything", NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 503);
	cr_assert_not_null(strstr(body.data, "no token"), "%s", body.data);
	free(body.data);
}

/* A minimal ISO 9660 image, written the way seed writers lay it out. */
#define SECTOR	2048

static void
both16(unsigned char *p, unsigned v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8;
	p[2] = v >> 8;
	p[3] = v & 0xff;
}

static void
both32(unsigned char *p, unsigned v)
{
	int	i;

	for (i = 0; i < 4; i++) {
		p[i] = v >> (8 * i);
		p[7 - i] = v >> (8 * i);
	}
}

static size_t
dirrec(unsigned char *p, unsigned lba, unsigned size, int flags,
    const void *name, size_t nlen, const void *su, size_t sulen)
{
	size_t	len = 33 + nlen + (nlen % 2 == 0 ? 1 : 0) + sulen;

	len += len % 2;
	memset(p, 0, len);
	p[0] = len;
	both32(p + 2, lba);
	both32(p + 10, size);
	p[25] = flags;
	both16(p + 28, 1);
	p[32] = nlen;
	memcpy(p + 33, name, nlen);
	if (sulen > 0)
		memcpy(p + 33 + nlen + (nlen % 2 == 0 ? 1 : 0), su, sulen);
	return (len);
}

enum iso_style {
	ISO_UPPER,		/* QSUP-CONFIG;1 */
	ISO_LOWER,		/* qsup-config */
	ISO_ROCK_RIDGE,		/* QSUP_CON.;1 with NM qsup-config */
	ISO_ROCK_RIDGE_CE,	/* the NM entry in a continuation area */
	ISO_NOT_CIDATA
};

static size_t
make_iso(unsigned char *img, enum iso_style style, const char *config)
{
	unsigned char	*pvd = img + 16 * SECTOR, *dir = img + 18 * SECTOR;
	unsigned char	 su[64], sp[8] = { 'S', 'P', 7, 1, 0xbe, 0xef, 0 };
	size_t		 off = 0, sulen = 0;
	const char	*name;
	int		 rr = style == ISO_ROCK_RIDGE ||
	    style == ISO_ROCK_RIDGE_CE;

	memset(img, 0, 22 * SECTOR);
	pvd[0] = 1;
	memcpy(pvd + 1, "CD001", 5);
	pvd[6] = 1;
	memset(pvd + 8, ' ', 32);
	memset(pvd + 40, ' ', 32);
	memcpy(pvd + 40, style == ISO_NOT_CIDATA ? "OTHER" : QSUP_SEED_VOLUME,
	    style == ISO_NOT_CIDATA ? 5 : strlen(QSUP_SEED_VOLUME));
	both32(pvd + 80, 22);
	both16(pvd + 120, 1);
	both16(pvd + 124, 1);
	both16(pvd + 128, SECTOR);
	dirrec(pvd + 156, 18, SECTOR, 2, "\0", 1, NULL, 0);
	pvd[881] = 1;
	img[17 * SECTOR] = 255;
	memcpy(img + 17 * SECTOR + 1, "CD001", 5);
	img[17 * SECTOR + 6] = 1;

	off += dirrec(dir + off, 18, SECTOR, 2, "\0", 1, rr ? sp : NULL,
	    rr ? 7 : 0);
	off += dirrec(dir + off, 18, SECTOR, 2, "\1", 1, NULL, 0);
	off += dirrec(dir + off, 21, 5, 0, "META_DAT.;1", 11, NULL, 0);
	switch (style) {
	case ISO_LOWER:
		name = "qsup-config";
		break;
	case ISO_ROCK_RIDGE:
	case ISO_ROCK_RIDGE_CE:
		name = "QSUP_CON.;1";
		break;
	default:
		name = "QSUP-CONFIG;1";
		break;
	}
	if (style == ISO_ROCK_RIDGE) {
		/* "qsup-" then "config", split over two NM entries. */
		memcpy(su, "NM\012\001\001qsup-", 10);
		memcpy(su + 10, "NM\013\001\000config", 11);
		sulen = 21;
	} else if (style == ISO_ROCK_RIDGE_CE) {
		memset(su, 0, 28);
		memcpy(su, "CE\034\001", 4);
		both32(su + 4, 20);
		both32(su + 12, 100);
		both32(su + 20, 16);
		sulen = 28;
		memcpy(img + 20 * SECTOR + 100, "NM\020\001\000qsup-config",
		    16);
	}
	off += dirrec(dir + off, 19, strlen(config), 0, name, strlen(name), su,
	    sulen);
	memcpy(img + 19 * SECTOR, config, strlen(config));
	memcpy(img + 21 * SECTOR, "decoy", 5);
	return (22 * SECTOR);
}

static void
seed_test(enum iso_style style)
{
	static unsigned char	 img[22 * SECTOR];
	struct tbuf		 body;
	const char		*cfg = "token%20ignored x\ntoken " TOKEN "\n";
	size_t			 len;

	len = make_iso(img, style, cfg);
	spawn_agent_with(1, "--seed", "seed.iso", img, len, NULL);
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 200,
	    "style %d: %s", style, body.data);
	free(body.data);
	send_request(&ag.c[0], "GET", "/ping", "wrong", NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 401);
	free(body.data);
}

Test(agent, seed_iso_upper_case_name)
{
	seed_test(ISO_UPPER);
}

Test(agent, seed_iso_lower_case_name)
{
	seed_test(ISO_LOWER);
}

Test(agent, seed_iso_rock_ridge_name)
{
	seed_test(ISO_ROCK_RIDGE);
}

Test(agent, seed_iso_rock_ridge_continuation)
{
	seed_test(ISO_ROCK_RIDGE_CE);
}

Test(agent, no_seed_answers_503_to_everything)
{
	static unsigned char	 img[22 * SECTOR];
	struct tbuf		 body;
	size_t			 len;

	len = make_iso(img, ISO_NOT_CIDATA, "token " TOKEN "\n");
	spawn_agent_with(1, "--seed", "seed.iso", img, len, NULL);
	/* No token to check against: 503 whatever the request says. */
	send_request(&ag.c[0], "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 503);
	cr_assert_str_eq(body.data, "{\"error\":\"no seed disk\"}");
	free(body.data);
	send_request(&ag.c[0], "POST", "/exec", "x", "{\"argv\":[\"true\"]}",
	    17);
	cr_assert_eq(read_response(&ag.c[0], &body), 503);
	free(body.data);
}

Test(agent, seed_without_config_file_is_a_setup_error)
{
	static unsigned char	 img[22 * SECTOR];
	struct tbuf		 body;
	size_t			 len;

	len = make_iso(img, ISO_UPPER, "token " TOKEN "\n");
	/* Rename the file: the seed has no qsup-config now. */
	memcpy(memmem(img + 18 * SECTOR, SECTOR, "QSUP-CONFIG", 11),
	    "QSUP-CONFIX", 11);
	spawn_agent_with(1, "--seed", "seed.iso", img, len, NULL);
	send_request(&ag.c[0], "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 503);
	cr_assert_not_null(strstr(body.data, "no qsup-config"), "%s",
	    body.data);
	free(body.data);
}

/* --- Template state: booted for a VM state template, configured later. */

Test(agent, template_state_serves_ping_and_setup_only)
{
	struct tbuf	 body;
	struct result	 r;
	struct conn	*c = &ag.c[0];
	const char	*exec = "{\"argv\":[\"sh\",\"-c\",\"echo $FOO\"]}";
	char		 cfg[256];

	spawn_agent_with(2, "--template", NULL, NULL, 0, NULL);
	/* No token exists yet: ping answers without one, and says so. */
	send_request(c, "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(c, &body), 200);
	cr_assert_not_null(strstr(body.data, "\"template\":true"), "%s",
	    body.data);
	free(body.data);
	/* Nothing runs before setup, whatever the token. */
	send_request(c, "POST", "/exec", TOKEN, exec, strlen(exec));
	cr_assert_eq(read_response(c, &body), 503);
	free(body.data);
	/* A setup without a token, or that does not parse, is refused. */
	send_request(c, "POST", "/setup", NULL, "hostname x\n", 11);
	cr_assert_eq(read_response(c, &body), 400);
	free(body.data);
	send_request(c, "POST", "/setup", NULL, "env NOEQUALS\n", 13);
	cr_assert_eq(read_response(c, &body), 400);
	free(body.data);
	snprintf(cfg, sizeof cfg, "token %s\nenv FOO=from-setup\n", TOKEN);
	send_request(c, "POST", "/setup", NULL, cfg, strlen(cfg));
	cr_assert_eq(read_response(c, &body), 200);
	cr_assert_null(strstr(body.data, "template"), "%s", body.data);
	free(body.data);
	/* From now on the token is required, and the setup is in force. */
	send_request(c, "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(c, &body), 401);
	free(body.data);
	send_request(c, "POST", "/setup", TOKEN, cfg, strlen(cfg));
	cr_assert_eq(read_response(c, &body), 409);
	free(body.data);
	send_request(&ag.c[1], "GET", "/ping", "other", NULL, 0);
	cr_assert_eq(read_response(&ag.c[1], &body), 401);
	free(body.data);
	exec_run(c, exec, &r);
	cr_assert_str_eq(r.out.data, "from-setup\n");
	cr_assert_eq(r.status, 0, "exit: %s", r.exit);
	result_free(&r);
}

/*
 * POST /root: a template build's root, mounted before the save. Only in
 * template state, only POST, only a "root" and a "hostname" line; in test
 * mode (not PID 1) there is no root to mount, and saying so is an error
 * the host sees, never a silent success.
 */
Test(agent, root_in_template_state_only)
{
	static const char *const bad[] = {
		"",
		"hostname h\n",
		"root qsup-root keep 1024\ntoken x\n",
		"root qsup-root keep 1024\nenv A=b\n",
		"root qsup-root sideways 1024\n",
	};
	struct tbuf	 body;
	struct conn	*c = &ag.c[0];
	const char	*root = "root qsup-root keep 1048576\nhostname qsup\n";
	char		 cfg[256];
	size_t		 i;

	spawn_agent_with(2, "--template", NULL, NULL, 0, NULL);
	send_request(c, "GET", "/root", NULL, NULL, 0);
	cr_assert_eq(read_response(c, &body), 405);
	free(body.data);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		send_request(c, "POST", "/root", NULL, bad[i], strlen(bad[i]));
		cr_assert_geq(read_response(c, &body), 400, "%s", bad[i]);
		free(body.data);
	}
	send_request(c, "POST", "/root", NULL, root, strlen(root));
	cr_assert_eq(read_response(c, &body), 503);
	cr_assert_not_null(strstr(body.data, "not PID 1"), "%s", body.data);
	free(body.data);
	/* Still a template: setup goes on as before. */
	snprintf(cfg, sizeof cfg, "token %s\n", TOKEN);
	send_request(c, "POST", "/setup", NULL, cfg, strlen(cfg));
	cr_assert_eq(read_response(c, &body), 200);
	free(body.data);
	send_request(c, "POST", "/root", TOKEN, root, strlen(root));
	cr_assert_eq(read_response(c, &body), 409);
	free(body.data);
}

/*
 * POST /refresh (the clock, entropy and a card's address, set by the
 * agent itself after a pause, a restore or a fork): only those lines,
 * each checked. In test mode nothing is applied (the host's clock).
 */
Test(agent, refresh_checks_its_lines)
{
	static const char *const bad[] = {
		"",
		"token x\ntime 1.0\n",
		"hostname h\n",
		"mac 53:54:00:00:00:01\n",		/* a group address */
		"mac 52:54:00:00:00\n",
		"mac 52-54-00-00-00-01\n",
		"time yesterday\n",
		"entropy 0g\n",
	};
	struct tbuf	body;
	const char	*ok = "time 1796400000.5\nentropy 00ff\n"
			    "mac 52:54:00:8f:cc:43\n";
	size_t		i;

	spawn_agent(1, NULL);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(request(&ag.c[0], "POST", "/refresh", bad[i],
		    strlen(bad[i]), &body), 400, "%s", bad[i]);
		free(body.data);
	}
	cr_assert_eq(request(&ag.c[0], "GET", "/refresh", NULL, 0, &body),
	    405);
	free(body.data);
	cr_assert_eq(request(&ag.c[0], "POST", "/refresh", ok, strlen(ok),
	    &body), 204);
	free(body.data);
}
