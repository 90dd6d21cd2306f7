// SPDX-License-Identifier: Apache-2.0
/* The number parser of options and environment variables: whole numbers only, bounds
 * kept (common/tests/test_opts.c: an option's bad value said and refused). */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int_accepts),
		cmocka_unit_test(test_int_refuses),
		cmocka_unit_test(test_double),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
