// SPDX-License-Identifier: Apache-2.0
/* What libtrainscope.so asks of the C library, read back from the built file with
 * readelf: no glibc symbol version above the baseline (2.17: aarch64's first, and every
 * x86-64 glibc a training image still ships), so that the library loads into a process
 * of an older image instead of stopping it with "version GLIBC_2.34 not found"; and
 * libdl.so.2 and libpthread.so.0 by name, where glibc before 2.34 keeps the old dlopen
 * and pthread_create. A failure names the symbol: pin it in glibc_compat.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tests/testutil.h"

#define BASE_MAJOR 2
#define BASE_MINOR 17

static FILE *readelf(const char *what)
{
	char cmd[4300];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf %s -W '%s' 2>/dev/null", what, ts_test_lib_path());
	f = popen(cmd, "r");
	if (!f)
		fail_msg("cannot run %s", cmd);
	return f;
}

/* "dlopen@GLIBC_2.34 (3)" -> true and the version when above the baseline. */
static bool above_base(const char *name, int *major, int *minor)
{
	const char *v = strstr(name, "@GLIBC_");

	*major = *minor = 0;
	if (!v || sscanf(v + strlen("@GLIBC_"), "%d.%d", major, minor) < 1)
		return false;
	return *major > BASE_MAJOR || (*major == BASE_MAJOR && *minor > BASE_MINOR);
}

static void test_glibc_versions_at_most_base(void **state)
{
	char line[1024], name[512];
	int n = 0, bad = 0, major, minor;
	FILE *f = readelf("--dyn-syms");

	(void)state;
	while (fgets(line, sizeof(line), f)) {
		/* "   1: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND getenv@GLIBC_2.2.5 (2)" */
		if (sscanf(line, "%*d: %*s %*s %*s %*s %*s %*s %511s", name) != 1)
			continue;
		n += strstr(name, "@GLIBC_") != NULL;
		if (above_base(name, &major, &minor)) {
			fprintf(stderr, "libtrainscope.so needs %s: above GLIBC_%d.%d, pin it in "
				"injector/preload/glibc_compat.h\n", name, BASE_MAJOR, BASE_MINOR);
			bad++;
		}
	}
	assert_int_equal(pclose(f), 0);
	assert_true(n > 10); /* the parse saw the imports */
	assert_int_equal(bad, 0);
}

static void test_old_homes_needed(void **state)
{
	char line[1024];
	bool dl = false, pthread = false;
	FILE *f = readelf("--dynamic");

	(void)state;
	while (fgets(line, sizeof(line), f)) {
		dl |= strstr(line, "(NEEDED)") && strstr(line, "[libdl.so.2]");
		pthread |= strstr(line, "(NEEDED)") && strstr(line, "[libpthread.so.0]");
	}
	assert_int_equal(pclose(f), 0);
	assert_true(dl);
	assert_true(pthread);
}

/* Text relocations would make the loader write to the code pages of every process
 * (and fail where W^X is enforced): the trampolines in dlsym.c must stay PC-relative. */
static void test_no_text_relocations(void **state)
{
	char line[1024];
	int n = 0, textrel = 0;
	FILE *f = readelf("--dynamic");

	(void)state;
	while (fgets(line, sizeof(line), f)) {
		n += strstr(line, "(NEEDED)") != NULL;
		if (strstr(line, "TEXTREL")) {
			fprintf(stderr, "libtrainscope.so has text relocations: %s", line);
			textrel++;
		}
	}
	assert_int_equal(pclose(f), 0);
	assert_true(n > 0); /* the parse saw the dynamic section */
	assert_int_equal(textrel, 0);
}

static void test_version_parse(void **state)
{
	int major, minor;

	(void)state;
	assert_true(above_base("dlopen@GLIBC_2.34 (3)", &major, &minor));
	assert_int_equal(minor, 34);
	assert_true(above_base("arc4random@GLIBC_2.36", &major, &minor));
	assert_true(above_base("x@GLIBC_3", &major, &minor));
	assert_false(above_base("clock_gettime@GLIBC_2.17 (3)", &major, &minor));
	assert_false(above_base("getenv@GLIBC_2.2.5 (2)", &major, &minor));
	assert_false(above_base("trainscope_step_end", &major, &minor));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_parse),
		cmocka_unit_test(test_glibc_versions_at_most_base),
		cmocka_unit_test(test_old_homes_needed),
		cmocka_unit_test(test_no_text_relocations),
	};
	return cmocka_run_group_tests_name("preload ABI", tests, NULL, NULL);
}
