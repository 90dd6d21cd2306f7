// SPDX-License-Identifier: Apache-2.0
/* Names from the wire mapped to each sink: hostile names never reach a path, an object
 * name or a metric line as they are, and two names never map to one. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "names.h"

#include "k8s_rules.h"

/* Hostile and unlucky job names: each maps to a name both rules accept, and no two of
 * them to one. */
static void test_object_names_k8s_rules(void **state)
{
	static const char *const names[] = {
		"../x", "x", "./x", "x/..", ".x", "x.", "a..b", "a.-b", "a-.b", "-a", "a-", "A.B",
		"a.b", "llama.7b", "a b", "", "~", "..", "...", "a_b", "a/b", "Ünïcödé", "a\nb",
		"0123456789012345678901234567890123456789012345678901234567890123",
		"0123456789012345678901234567890123456789012345678901234567890124",
		"a.0123456789012345678901234567890123456789012345678901234567890123456789",
	};
	enum { N = sizeof(names) / sizeof(names[0]) };
	char out[N][300], big[400];

	(void)state;
	for (size_t i = 0; i < N; i++) {
		ts_name_object(out[i], sizeof(out[i]), names[i]);
		if (!k8s_subdomain(out[i]) || !k8s_label_value(out[i]) || !ts_name_is_object(out[i]))
			fail_msg("'%s' mapped to '%s': not a DNS-1123 subdomain and label value",
				 names[i], out[i]);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(out[i], out[k]))
				fail_msg("'%s' and '%s' both map to '%s'", names[k], names[i], out[i]);
	}
	ts_name_object(out[0], sizeof(out[0]), "llama.7b");
	assert_string_equal(out[0], "llama.7b"); /* a valid name stays itself */
	memset(big, 'a', 300);
	big[300] = 0;
	ts_name_object(out[0], sizeof(out[0]), big);
	big[299] = 'b';
	ts_name_object(out[1], sizeof(out[1]), big);
	assert_true(k8s_label_value(out[0]) && k8s_label_value(out[1]));
	assert_string_not_equal(out[0], out[1]); /* cut, but hashed apart */
	/* the checks themselves: what Kubernetes refuses, they refuse */
	assert_false(k8s_subdomain("x.-x-838c62fa"));
	assert_false(ts_name_is_object("x.-x-838c62fa"));
	assert_false(ts_name_is_object("a..b"));
	assert_false(k8s_label_value(big));
}

static void test_object_names(void **state)
{
	char a[300], b[300], long_name[400];

	(void)state;
	ts_name_object(a, sizeof(a), "upper-case");
	assert_string_equal(a, "upper-case"); /* a valid name stays itself */
	ts_name_object(b, sizeof(b), "Upper-Case");
	assert_string_not_equal(a, b);
	assert_true(ts_name_is_object(b));
	ts_name_object(a, sizeof(a), "a/b");
	ts_name_object(b, sizeof(b), "a_b");
	assert_string_not_equal(a, b);
	assert_true(ts_name_is_object(a) && ts_name_is_object(b));
	const char *bad[] = { "", "-x", "x-", ".x", "…/victim/status?x=", "a\nb" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ts_name_object(a, sizeof(a), bad[i]);
		assert_true(ts_name_is_object(a));
	}
	memset(long_name, 'a', 300);
	long_name[300] = 0;
	ts_name_object(a, sizeof(a), long_name);
	assert_true(ts_name_is_object(a));
	assert_true(strlen(a) <= 63);
	assert_true(ts_name_is_namespace("team-a"));
	assert_false(ts_name_is_namespace("../../escaped"));
	assert_false(ts_name_is_namespace("Team"));
	assert_true(ts_name_is_system_namespace("kube-system"));
	assert_false(ts_name_is_system_namespace("default"));
}

static void test_report_paths(void **state)
{
	char a[512], b[512];

	(void)state;
	assert_int_equal(ts_name_report_path(a, sizeof(a), "/r", "default", "my_job-1.x"), 0);
	assert_string_equal(a, "/r/default_my_job-1.x.json");
	assert_int_equal(ts_name_report_path(a, sizeof(a), "/r", "../../escaped", "x"), 0);
	assert_null(strchr(a + 3, '/'));
	assert_int_equal(ts_name_report_path(a, sizeof(a), "/r", "ok", "../../x"), 0);
	assert_null(strchr(a + 3, '/'));
	assert_int_equal(ts_name_report_path(a, sizeof(a), "/r", "a_b", "c"), 0);
	assert_int_equal(ts_name_report_path(b, sizeof(b), "/r", "a", "b_c"), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(ts_name_report_path(a, sizeof(a), "/r", "ns", ".hidden"), 0);
	assert_null(strstr(a, "/."));
	assert_int_equal(ts_name_report_path(a, 10, "/r", "ns", "job"), -ENAMETOOLONG);
}

static void test_labels(void **state)
{
	char out[64];

	(void)state;
	assert_string_equal(ts_name_label(out, sizeof(out), "plain"), "plain");
	assert_string_equal(ts_name_label(out, sizeof(out), "a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
	ts_name_label(out, 6, "\"\"\"\"\"\"");
	assert_true(strlen(out) < 6 && out[strlen(out) - 1] == '"'); /* never a lone backslash */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object_names),
		cmocka_unit_test(test_object_names_k8s_rules),
		cmocka_unit_test(test_report_paths),
		cmocka_unit_test(test_labels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
