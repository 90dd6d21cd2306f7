// SPDX-License-Identifier: Apache-2.0
/* YAML configuration: binding, bounds, errors that name key and line, env overrides. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

struct conf {
	int window;
	double eps;
	bool scaling;
	char mode[16];
};

static const struct ts_cfg_field fields[] = {
	{ "space.window", TS_CFG_INT, offsetof(struct conf, window), 0, 1, 64, "" },
	{ "space.eps", TS_CFG_DOUBLE, offsetof(struct conf, eps), 0, 0, 10, "" },
	{ "space.scaling", TS_CFG_BOOL, offsetof(struct conf, scaling), 0, 1, 0, "" },
	{ "mode", TS_CFG_STRING, offsetof(struct conf, mode), 16, 1, 0, "" },
};
#define NF (sizeof(fields) / sizeof(fields[0]))

static int load(const char *text, struct conf *c, char *err)
{
	struct ts_cfg_opts o = { .env_prefix = "TSTEST_", .err = err, .errlen = 256 };

	*c = (struct conf){ 10, 0.1, false, "x" };
	return ts_cfg_load_text(text, fields, NF, c, &o);
}

static void test_nested_values(void **state)
{
	struct conf c;
	char err[256] = "";

	(void)state;
	assert_int_equal(load("space:\n  window: 20\n  eps: 0.25\n  scaling: yes\nmode: fast\n", &c,
			      err), 0);
	assert_int_equal(c.window, 20);
	assert_true(c.eps > 0.249 && c.eps < 0.251);
	assert_true(c.scaling);
	assert_string_equal(c.mode, "fast");
	/* dotted keys at top level work too, and defaults stay */
	assert_int_equal(load("space.eps: 0.5\n", &c, err), 0);
	assert_int_equal(c.window, 10);
	assert_true(c.eps > 0.49);
}

static void test_errors_name_key_and_line(void **state)
{
	struct conf c;
	char err[256];

	(void)state;
	assert_int_equal(load("space:\n  window: 20\n  epz: 1\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, ":3:"));
	assert_non_null(strstr(err, "space.epz"));
	assert_non_null(strstr(err, "unknown key"));
	assert_int_equal(load("space:\n  window: 100\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, ":2:"));
	assert_non_null(strstr(err, "outside"));
	assert_int_equal(load("space:\n  window: ten\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "not an integer"));
	assert_int_equal(load("space:\n  scaling: maybe\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "boolean"));
	assert_int_equal(load("space: [1, 2]\n", &c, err), -EINVAL);
	assert_int_equal(load("space:\n  window: 3\n bad\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "YAML"));
	assert_int_equal(load("mode: abcdefghijklmnopqrstuvwxyz\n", &c, err), -EINVAL);
}

static void test_env_overrides_file(void **state)
{
	struct conf c;
	char err[256];

	(void)state;
	setenv("TSTEST_SPACE_WINDOW", "33", 1);
	assert_int_equal(load("space:\n  window: 20\n", &c, err), 0);
	assert_int_equal(c.window, 33);
	setenv("TSTEST_SPACE_WINDOW", "0", 1);
	assert_int_equal(load(NULL, &c, err), -EINVAL);
	assert_non_null(strstr(err, "TSTEST_SPACE_WINDOW"));
	unsetenv("TSTEST_SPACE_WINDOW");
}

/* A list at top level read before the key stack (found by make fuzz), and keys near
 * KEY_MAX (255) long under two levels overflowed the joined key (found reading it). */
static void test_odd_shapes_refused(void **state)
{
	char text[600], err[256];
	struct conf c;

	(void)state;
	assert_int_equal(load("[ele", &c, err), -EINVAL);
	assert_int_equal(load("- 1\n- 2\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "top level"));
	memset(text, 'a', 255);
	strcpy(text + 255, ":\n  b:\n    c: 1\n");
	assert_int_equal(load(text, &c, err), -EINVAL); /* unknown key (the message is cut) */
	assert_non_null(strstr(err, "<config>:3: key 'aaaa"));
	strcpy(text + 255, ":\n  b:\n    c: [1]\n");
	assert_int_equal(load(text, &c, err), -EINVAL); /* a list */
	assert_non_null(strstr(err, "<config>:3: key 'aaaa"));
}

static void test_missing_file(void **state)
{
	struct ts_cfg_opts o = { .err = (char[256]){ 0 }, .errlen = 256 };
	struct conf c;

	(void)state;
	assert_int_equal(ts_cfg_load_file("/nonexistent/x.yaml", fields, NF, &c, &o), -ENOENT);
	assert_non_null(strstr(o.err, "/nonexistent/x.yaml"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested_values),
		cmocka_unit_test(test_errors_name_key_and_line),
		cmocka_unit_test(test_env_overrides_file),
		cmocka_unit_test(test_odd_shapes_refused),
		cmocka_unit_test(test_missing_file),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
