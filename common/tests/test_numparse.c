// SPDX-License-Identifier: Apache-2.0
/* The number parser of options and environment variables: whole numbers only, bounds
 * kept, and a bad option's value said and refused with exit status 2. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "numparse.h"

static void test_int_accepts(void **state)
{
	long v = 0;

	(void)state;
	assert_int_equal(ts_parse_int("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(ts_parse_int("10", 0, 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(ts_parse_int("-1", -1, 65535, &v), 0);
	assert_int_equal(v, -1);
	assert_int_equal(ts_parse_int("+7", 0, 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(ts_parse_int("007", 0, 10, &v), 0); /* decimal, not octal */
	assert_int_equal(v, 7);
	assert_int_equal(ts_parse_int("9223372036854775807", 0, LONG_MAX, &v), 0);
	assert_true(v == LONG_MAX);
	assert_int_equal(ts_parse_int("-9223372036854775808", LONG_MIN, 0, &v), 0);
	assert_true(v == LONG_MIN);
}

static void test_int_refuses(void **state)
{
	static const char *const junk[] = { "", " ", " 5", "5 ", "5x", "x5", "0x10", "-0x1",
					    "1.5", "1e3", "--1", "+", "-", "5\n", "٣" };
	long v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		if (ts_parse_int(junk[i], LONG_MIN, LONG_MAX, &v) != -EINVAL)
			fail_msg("'%s' taken for a number", junk[i]);
	assert_int_equal(ts_parse_int(NULL, 0, 10, &v), -EINVAL);
	assert_int_equal(ts_parse_int("11", 0, 10, &v), -ERANGE);
	assert_int_equal(ts_parse_int("-1", 0, 10, &v), -ERANGE);
	assert_int_equal(ts_parse_int("-2", -1, 65535, &v), -ERANGE);
	assert_int_equal(ts_parse_int("9223372036854775808", LONG_MIN, LONG_MAX, &v), -ERANGE);
	assert_int_equal(ts_parse_int("-99999999999999999999", LONG_MIN, LONG_MAX, &v), -ERANGE);
	assert_int_equal(v, 42); /* untouched by every failure */
}

static void test_double(void **state)
{
	static const char *const junk[] = { "", " 1", "1 ", "1s", "inf", "-inf", "nan",
					    "infinity", "0x1p3", ".", "e3", "1e", "1,5" };
	double v = 42;

	(void)state;
	assert_int_equal(ts_parse_double("0.5", 0, 1, &v), 0);
	assert_true(v == 0.5);
	assert_int_equal(ts_parse_double("60", 0, 86400, &v), 0);
	assert_true(v == 60);
	assert_int_equal(ts_parse_double("1e3", 0, 86400, &v), 0);
	assert_true(v == 1000);
	assert_int_equal(ts_parse_double("-.25", -1, 1, &v), 0);
	assert_true(v == -0.25);
	v = 42;
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		if (ts_parse_double(junk[i], -1e300, 1e300, &v) != -EINVAL)
			fail_msg("'%s' taken for a number", junk[i]);
	assert_int_equal(ts_parse_double(NULL, 0, 1, &v), -EINVAL);
	assert_int_equal(ts_parse_double("1.0001", 0, 1, &v), -ERANGE);
	assert_int_equal(ts_parse_double("-0.1", 0, 1, &v), -ERANGE);
	assert_int_equal(ts_parse_double("1e999", -1e300, 1e300, &v), -ERANGE);
	assert_true(v == 42);
}

/* ts_opt_int in a child: its exit status, and what it printed on stderr into err. */
static int opt_child(const char *arg, long min, long max, char *err, size_t n)
{
	int fd[2], status = -1;
	ssize_t got;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		_exit(ts_opt_int("--flush-ms", arg, min, max) == 250 ? 0 : 1);
	}
	close(fd[1]);
	got = read(fd[0], err, n - 1);
	err[got > 0 ? got : 0] = 0;
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_option_helper(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(ts_opt_int("--flush-ms", "250", 1, 60000), 250);
	assert_true(ts_opt_double("--timeout", "2.5", 0, 86400) == 2.5);
	assert_int_equal(opt_child("250", 1, 60000, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(opt_child("fast", 1, 60000, err, sizeof(err)), 2);
	assert_non_null(strstr(err, ": --flush-ms: 'fast' is not a number between 1 and 60000\n"));
	assert_int_equal(opt_child("0", 1, 60000, err, sizeof(err)), 2);
	assert_non_null(strstr(err, ": --flush-ms: '0' is not a number between 1 and 60000\n"));
	assert_int_equal(opt_child("", -1, 65535, err, sizeof(err)), 2);
	assert_non_null(strstr(err, ": --flush-ms: '' is not a number between -1 and 65535\n"));
	ts_opt_program("trainscope report");
	assert_int_equal(opt_child("1m", 1, 60000, err, sizeof(err)), 2);
	assert_string_equal(err, "trainscope report: --flush-ms: '1m' is not a number between 1 and "
				 "60000\n");
	ts_opt_program(NULL);
	assert_int_equal(opt_child("x", 1, 60000, err, sizeof(err)), 2);
	assert_string_equal(err, "test_numparse: --flush-ms: 'x' is not a number between 1 and "
				 "60000\n");
}

/* ts_opt_double in a child, as opt_child. */
static int opt_double_child(const char *arg, double min, double max, char *err, size_t n)
{
	int fd[2], status = -1;
	ssize_t got;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		_exit(ts_opt_double("--timeout", arg, min, max) == 2.5 ? 0 : 1);
	}
	close(fd[1]);
	got = read(fd[0], err, n - 1);
	err[got > 0 ? got : 0] = 0;
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_option_helper_double(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(opt_double_child("2.5", 0, 2592000, err, sizeof(err)), 0);
	assert_int_equal(opt_double_child("3m", 0, 2592000, err, sizeof(err)), 2);
	assert_string_equal(err, "test_numparse: --timeout: '3m' is not a number between 0 and "
				 "2592000\n");
	assert_int_equal(opt_double_child("-1", 0.5, 1.5, err, sizeof(err)), 2);
	assert_string_equal(err, "test_numparse: --timeout: '-1' is not a number between 0.5 and "
				 "1.5\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int_accepts),
		cmocka_unit_test(test_int_refuses),
		cmocka_unit_test(test_double),
		cmocka_unit_test(test_option_helper),
		cmocka_unit_test(test_option_helper_double),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
