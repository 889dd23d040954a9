/*
 * Linked into the unit suites of the sanitizer build only (build/asan/),
 * with -Wl,--wrap=criterion_internal_test_main: LeakSanitizer looks for
 * leaks right after each test's body, in the test's own process, and a
 * leak fails the test. Left to its check at exit, a leak would only be
 * printed: Criterion ignores how a test's process ends once the test has
 * reported. What fini functions free is still reachable at that point
 * (through globals), so it is not taken for a leak. Parameterized tests
 * are not supported (their parameter is not passed on); no suite has one.
 */
#include <sanitizer/lsan_interface.h>

#include <criterion/criterion.h>

void	__real_criterion_internal_test_main(void (*)(void));
void	__wrap_criterion_internal_test_main(void (*)(void));

static void	(*leak_check_body)(void);

static void
leak_check_run(void)
{
	leak_check_body();
	if (__lsan_do_recoverable_leak_check() != 0)
		cr_assert_fail("LeakSanitizer: this test leaked memory (the "
		    "report above says where)");
}

void
__wrap_criterion_internal_test_main(void (*fn)(void))
{
	leak_check_body = fn;
	__real_criterion_internal_test_main(leak_check_run);
}
