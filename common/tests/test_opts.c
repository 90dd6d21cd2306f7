// SPDX-License-Identifier: Apache-2.0
/* Options from tables (common/opts.c): kinds and bounds, variables under the command
 * line, calls, operands, --help's wrapping. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

struct set {
	const char *dir;
	int port;
	size_t bytes;
	double share;
	bool on, quiet, print_fails;
	int calls, printed;
};

static int show(void *s, const char *arg, char *err, size_t n)
{
	struct set *set = s;

	(void)arg;
	if (set->print_fails) {
		snprintf(err, n, "stdout could not be written");
		return -EIO;
	}
	set->printed++;
	return 0;
}

static int count(void *s, const char *arg, char *err, size_t n)
{
	if (arg && strcmp(arg, "ok")) {
		snprintf(err, n, "'%s' is not ok", arg);
		return -EINVAL;
	}
	((struct set *)s)->calls++;
	return 0;
}

static const struct ts_opt table[] = {
	{ "dir", 'd', TS_OPT_STR, offsetof(struct set, dir), 0, 0, "DIR", "T_DIR",
	  "where it goes", NULL },
	{ "port", 'p', TS_OPT_INT, offsetof(struct set, port), -1, 65535, "N", "T_PORT",
	  "a port; a very long help text that has to be wrapped over more than one line of "
	  "the eighty columns --help has", NULL },
	{ "bytes", 0, TS_OPT_SIZE, offsetof(struct set, bytes), 1, 1 << 20, "N", NULL, "bytes",
	  NULL },
	{ "share", 0, TS_OPT_DOUBLE, offsetof(struct set, share), 0, 1, "X", NULL, "a share",
	  NULL },
	{ "on", 0, TS_OPT_TRUE, offsetof(struct set, on), 0, 0, NULL, "T_ON", "turn it on", NULL },
	{ NULL, 0, TS_OPT_NOTE, 0, 0, 0, NULL, NULL, "A note.", NULL },
	{ "check", 0, TS_OPT_CALL, 0, 0, 0, "WORD", NULL, "must be ok", count },
	{ "tick", 't', TS_OPT_CALL, 0, 0, 0, NULL, NULL, "counts", count },
	{ "show", 0, TS_OPT_PRINT, 0, 0, 0, NULL, NULL, "prints, and the program ends", show },
};

static int parse(struct set *s, int argc, const char **argv)
{
	const struct ts_opt_group g[] = { TS_OPTS_GROUP(table, s) };

	return ts_opts_parse(g, 1, "prog", "Usage: prog\n", 0, argc, (char **)argv);
}

static void test_kinds_and_operands(void **state)
{
	const char *argv[] = { "prog", "-d", "/x", "--port=80", "--bytes", "4096", "--share",
			       "0.5", "--on", "--check", "ok", "-tt", "rest", NULL };
	struct set s = { 0 };

	(void)state;
	assert_int_equal(parse(&s, 13, argv), 12);
	assert_string_equal(s.dir, "/x");
	assert_int_equal(s.port, 80);
	assert_int_equal(s.bytes, 4096);
	assert_true(s.share == 0.5);
	assert_true(s.on);
	assert_int_equal(s.calls, 3);
}

/* TS_OPTS_STOP: a command's own options after the first operand are left to it. */
static void test_stop_at_operand(void **state)
{
	const char *argv[] = { "prog", "-d", "/x", "python3", "-p", "5", NULL };
	const struct ts_opt_group g[1] = { TS_OPTS_GROUP(table, NULL) };
	struct set s = { .port = 7 };
	struct ts_opt_group mine = g[0];

	(void)state;
	mine.settings = &s;
	assert_int_equal(ts_opts_parse(&mine, 1, "prog", "", TS_OPTS_STOP, 6, (char **)argv), 3);
	assert_string_equal(s.dir, "/x");
	assert_int_equal(s.port, 7);
	assert_string_equal(argv[3], "python3");
}

static void test_bounds_and_errors(void **state)
{
	const char *big[] = { "prog", "--port", "70000", NULL };
	const char *suffix[] = { "prog", "--bytes", "64k", NULL };
	const char *call[] = { "prog", "--check", "no", NULL };
	const char *unknown[] = { "prog", "--nope", NULL };
	struct set s = { .port = 7 };

	(void)state;
	assert_int_equal(parse(&s, 3, big), -EINVAL);
	assert_int_equal(s.port, 7); /* left as it was */
	assert_int_equal(parse(&s, 3, suffix), -EINVAL);
	assert_int_equal(parse(&s, 3, call), -EINVAL);
	assert_int_equal(parse(&s, 2, unknown), -EINVAL);
}

/* A TS_OPT_PRINT ends the parse as --help does: 0, what follows it not taken; its
 * failure is the program's error. */
static void test_print_ends(void **state)
{
	const char *argv[] = { "prog", "--show", "--port", "5", NULL };
	struct set s = { .port = 7 };

	(void)state;
	assert_int_equal(parse(&s, 4, argv), 0);
	assert_int_equal(s.printed, 1);
	assert_int_equal(s.port, 7);
	s.print_fails = true;
	assert_int_equal(parse(&s, 4, argv), -EINVAL);
	assert_int_equal(s.printed, 1);
}

static void test_variables_under_the_command_line(void **state)
{
	const char *none[] = { "prog", NULL }, *port[] = { "prog", "-p", "9", NULL };
	struct set s = { 0 };

	(void)state;
	setenv("T_DIR", "/env", 1);
	setenv("T_PORT", "8", 1);
	setenv("T_ON", "yes", 1);
	assert_int_equal(parse(&s, 1, none), 1);
	assert_string_equal(s.dir, "/env");
	assert_int_equal(s.port, 8);
	assert_true(s.on);
	assert_int_equal(parse(&s, 3, port), 3);
	assert_int_equal(s.port, 9);
	setenv("T_ON", "maybe", 1);
	assert_int_equal(parse(&s, 1, none), -EINVAL);
	/* --help still answers under a bad variable */
	const char *help[] = { "prog", "--help", NULL };
	assert_int_equal(parse(&s, 2, help), 0);
	unsetenv("T_ON");
	setenv("T_PORT", "x", 1);
	assert_int_equal(parse(&s, 1, none), -EINVAL);
	unsetenv("T_PORT");
	unsetenv("T_DIR");
}

static void test_help(void **state)
{
	const struct ts_opt_group g[] = { TS_OPTS_GROUP(table, NULL) };
	char *text = NULL, *line;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	ts_opts_help(f, "Usage: prog\n", g, 1);
	fclose(f);
	assert_non_null(strstr(text, "  -d, --dir DIR            where it goes (T_DIR)\n"));
	assert_non_null(strstr(text, "      --on                 turn it on (T_ON)\n"));
	assert_non_null(strstr(text, "\n  A note.\n"));
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		assert_true(strlen(line) <= 80);
	free(text);
}

/* An option's comma-separated list: whole entries only, blanks around them ignored. */
static void test_list_has(void **state)
{
	(void)state;
	assert_true(ts_opt_list_has("Device", "Device"));
	assert_true(ts_opt_list_has("Compute,Device", "Device"));
	assert_true(ts_opt_list_has("trainscope, skipped", "skipped"));
	assert_true(ts_opt_list_has(" a ,b", "a"));
	assert_false(ts_opt_list_has("Devices", "Device"));
	assert_false(ts_opt_list_has("HostDevice,x", "Device"));
	assert_false(ts_opt_list_has("a,,b", ""));
	assert_false(ts_opt_list_has("", "a"));
	assert_false(ts_opt_list_has(NULL, "a"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_and_operands),
		cmocka_unit_test(test_stop_at_operand),
		cmocka_unit_test(test_bounds_and_errors),
		cmocka_unit_test(test_print_ends),
		cmocka_unit_test(test_variables_under_the_command_line),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_list_has),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
