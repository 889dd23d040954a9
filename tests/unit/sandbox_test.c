/*
 * The sandbox's state table: every state/event pair has an action, the
 * ones that must be handled are, and a sandbox without QEMU goes from a
 * failure through stopping to dead, telling its owner in that order.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <ev.h>

#include "cmd.h"
#include "sandbox_int.h"

static struct buf	 said;

static void
failed_cb(struct sandbox *sb, const char *msg, void *arg)
{
	(void)arg;
	buf_printf(&said, "failed(%s) in %d|", msg, sandbox_state(sb));
}

static void
dead_cb(struct sandbox *sb, void *arg)
{
	(void)arg;
	buf_printf(&said, "dead in %d|", sandbox_state(sb));
}

static void
ready_cb(struct sandbox *sb, void *arg)
{
	(void)sb;
	(void)arg;
	buf_puts(&said, "ready|");
}

static struct ev_loop	*loop;
static struct profile	 prof;

static struct sandbox *
new_sandbox(enum sbs state)
{
	struct sandbox_cbs	cbs;
	struct sandbox		*sb;

	memset(&cbs, 0, sizeof cbs);
	cbs.failed = failed_cb;
	cbs.dead = dead_cb;
	cbs.ready = ready_cb;
	sb = sandbox_new(loop, &prof, &cbs);
	sb->state = state;
	return (sb);
}

static void
setup(void)
{
	loop = ev_loop_new(EVFLAG_AUTO);
	memset(&prof, 0, sizeof prof);
	memset(&said, 0, sizeof said);
	buf_add(&said, "", 0);
}

static void
teardown(void)
{
	buf_free(&said);
	ev_loop_destroy(loop);
}

TestSuite(sandbox, .init = setup, .fini = teardown);

Test(sandbox, every_pair_has_an_action)
{
	int	s, e;

	for (s = 0; s < SBS_COUNT; s++)
		for (e = 0; e < SBE_COUNT; e++)
			cr_assert_not_null(sandbox_actions[s][e], "%s x %s",
			    sandbox_sbs_name(s), sandbox_sbe_name(e));
}

Test(sandbox, names_are_unique)
{
	int	i, j;

	for (i = 0; i < SBS_COUNT; i++) {
		cr_assert_str_neq(sandbox_sbs_name(i), "?");
		for (j = 0; j < i; j++)
			cr_assert_str_neq(sandbox_sbs_name(i),
			    sandbox_sbs_name(j));
	}
	for (i = 0; i < SBE_COUNT; i++) {
		cr_assert_not_null(sandbox_sbe_name(i));
		cr_assert_str_neq(sandbox_sbe_name(i), "?");
		for (j = 0; j < i; j++)
			cr_assert_str_neq(sandbox_sbe_name(i),
			    sandbox_sbe_name(j));
	}
}

/* The owner's view only moves forward along the table's order. */
Test(sandbox, public_states_in_order)
{
	int	s;

	cr_assert_eq(sandbox_public(SBS_NEW), SB_NEW);
	cr_assert_eq(sandbox_public(SBS_READY), SB_READY);
	cr_assert_eq(sandbox_public(SBS_STOPPING), SB_STOPPING);
	cr_assert_eq(sandbox_public(SBS_DEAD), SB_DEAD);
	for (s = SBS_BOOTING; s < SBS_READY; s++)
		cr_assert(sandbox_public(s) == SB_BOOTING ||
		    sandbox_public(s) == SB_SAVING, "%s", sandbox_sbs_name(s));
}

/* Whatever it is doing, a sandbox can be stopped; once dead, nothing. */
Test(sandbox, stop_and_exit_are_handled)
{
	sandbox_action	nop = sandbox_actions[SBS_DEAD][SBE_UP];
	int		s, e;

	for (s = 0; s < SBS_STOPPING; s++)
		cr_assert_neq(sandbox_actions[s][SBE_STOP], nop, "%s",
		    sandbox_sbs_name(s));
	cr_assert_eq(sandbox_actions[SBS_STOPPING][SBE_STOP], nop);
	/* QEMU may run, and exit, in every state but these. */
	for (s = SBS_BOOTING; s <= SBS_STOPPING; s++) {
		if (s == SBS_SAVING)
			continue;
		cr_assert_neq(sandbox_actions[s][SBE_EXITED], nop, "%s",
		    sandbox_sbs_name(s));
	}
	cr_assert_neq(sandbox_actions[SBS_STOPPING][SBE_EOF], nop);
	cr_assert_neq(sandbox_actions[SBS_STOPPING][SBE_KILL], nop);
	/* Every state waiting for the agent has a deadline. */
	for (s = SBS_BOOTING; s < SBS_READY; s++) {
		/* Not waiting for the agent: QEMU saves, or is killed. */
		if (s == SBS_SAVING || s == SBS_RELAUNCHING ||
		    s == SBS_RESTARTING || s == SBS_RECOVERING)
			continue;
		cr_assert_neq(sandbox_actions[s][SBE_DEADLINE], nop, "%s",
		    sandbox_sbs_name(s));
		cr_assert_neq(sandbox_actions[s][SBE_UP], nop, "%s",
		    sandbox_sbs_name(s));
	}
	for (e = 0; e < SBE_COUNT; e++)
		cr_assert_eq(sandbox_actions[SBS_DEAD][e], nop, "%s",
		    sandbox_sbe_name(e));
}

Test(sandbox, new_stops_to_dead_silently)
{
	struct sandbox	*sb = new_sandbox(SBS_NEW);

	sandbox_stop(sb, "test");
	cr_assert_eq(sandbox_state(sb), SB_DEAD);
	cr_assert_str_eq(said.data, "");
	sandbox_stop(sb, "again");
	cr_assert_eq(sandbox_state(sb), SB_DEAD);
	sandbox_free(sb);
}

Test(sandbox, lost_ping_fails_then_dies)
{
	struct sandbox	*sb = new_sandbox(SBS_READY);

	sandbox_event(sb, SBE_LOST, "the guest stopped answering for 9 s");
	cr_assert_str_eq(said.data, "failed(the guest stopped answering "
	    "for 9 s) in 3|dead in 6|");
	cr_assert_eq(sb->state, SBS_DEAD);
	sandbox_free(sb);
}

Test(sandbox, deadline_while_booting)
{
	struct sandbox	*sb = new_sandbox(SBS_BOOTING);

	sandbox_event(sb, SBE_DEADLINE, NULL);
	cr_assert_str_eq(said.data, "failed(the guest did not become ready "
	    "within 60 s (accelerator tcg)) in 1|dead in 6|");
	sandbox_free(sb);
}

Test(sandbox, deadline_once_ready_is_nothing)
{
	struct sandbox	*sb = new_sandbox(SBS_READY);

	sandbox_event(sb, SBE_DEADLINE, NULL);
	sandbox_event(sb, SBE_UP, "late");
	sandbox_event(sb, SBE_REFUSED, "late");
	cr_assert_eq(sb->state, SBS_READY);
	cr_assert_str_eq(said.data, "");
	/* sandbox_free stops it without a word to the owner. */
	sandbox_free(sb);
	cr_assert_str_eq(said.data, "");
}

Test(sandbox, halted_only_matters_when_ready)
{
	struct sandbox	*sb = new_sandbox(SBS_BOOTING);

	sandbox_event(sb, SBE_HALTED, "the guest halted");
	cr_assert_eq(sb->state, SBS_BOOTING);
	sb->state = SBS_READY;
	sandbox_event(sb, SBE_HALTED, "the guest halted");
	cr_assert_str_eq(said.data, "failed(the guest halted) in 3|"
	    "dead in 6|");
	sandbox_free(sb);
}

Test(sandbox, refused_setup_fails_a_boot)
{
	struct sandbox	*sb = new_sandbox(SBS_CONFIGURING);

	sandbox_event(sb, SBE_SETUP_FAILED, "guest setup failed (503): x");
	cr_assert_str_eq(said.data, "failed(guest setup failed (503): x) "
	    "in 2|dead in 6|");
	sandbox_free(sb);
}

Test(sandbox, paused_and_back)
{
	struct sandbox	*sb = new_sandbox(SBS_READY);

	sandbox_event(sb, SBE_PAUSED, NULL);
	cr_assert_eq(sandbox_state(sb), SB_PAUSED);
	/* No pings go while paused: a late "lost" is nothing. */
	sandbox_event(sb, SBE_LOST, "late");
	sandbox_event(sb, SBE_PAUSED, NULL);
	cr_assert_eq(sb->state, SBS_PAUSED);
	sandbox_event(sb, SBE_RESUMED, NULL);
	cr_assert_eq(sandbox_state(sb), SB_READY);
	sandbox_event(sb, SBE_RESUMED, NULL);
	cr_assert_eq(sb->state, SBS_READY);
	cr_assert_str_eq(said.data, "");
	sandbox_free(sb);
}

Test(sandbox, pause_needs_ready)
{
	struct sandbox	*sb = new_sandbox(SBS_BOOTING);
	char		*cause = NULL;

	cr_assert_eq(sandbox_pause(sb, NULL, NULL, &cause), -1);
	cr_assert_str_eq(cause, "the sandbox is booting");
	free(cause);
	cause = NULL;
	cr_assert_eq(sandbox_resume(sb, NULL, NULL, &cause), -1);
	cr_assert_str_eq(cause, "the sandbox is booting");
	free(cause);
	sandbox_free(sb);
}
