// SPDX-License-Identifier: Apache-2.0
/* GPU health through NVML, against the test double of libnvidia-ml.so.1
 * (nvml_double.h): the sampled fields and the processes on each GPU, whose list the agent
 * turns into the other tenants a GPU has; a list NVML cannot give is told apart from an
 * empty one. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/nvml.h"
#include "agent/tests/nvml_double.h"

static char double_path[4096];
static void *dbl;
static tsv_gpu_fn gpu_of;
static tsv_reset_fn reset;

/* build/test/test_nvml -> build/test/nvml/libnvidia-ml.so.1 */
static int group_setup(void **state)
{
	ssize_t len = readlink("/proc/self/exe", double_path, sizeof(double_path) - 1);
	char *slash;

	(void)state;
	if (len <= 0)
		return -1;
	double_path[len] = 0;
	if (!(slash = strrchr(double_path, '/')))
		return -1;
	snprintf(slash, sizeof(double_path) - (size_t)(slash - double_path),
		 "/nvml/libnvidia-ml.so.1");
	if (!(dbl = dlopen(double_path, RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "test_nvml: no NVML test double at %s: %s\n", double_path, dlerror());
		return -1;
	}
	*(void **)&gpu_of = dlsym(dbl, "tsv_nvml_gpu");
	*(void **)&reset = dlsym(dbl, "tsv_nvml_reset");
	setenv("TRAINSCOPE_NVML_LIB", double_path, 1);
	return gpu_of && reset ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	dlclose(dbl);
	return 0;
}

static struct ts_nvml *open_ok(void)
{
	struct ts_nvml *n = NULL;

	reset();
	assert_int_equal(ts_nvml_open(&n), 0);
	assert_int_equal(ts_nvml_count(n), TSV_GPUS);
	return n;
}

static void test_fields(void **state)
{
	struct ts_nvml *n = open_ok();
	struct ts_gpu_sample s;

	(void)state;
	gpu_of(1)->sm_mhz = 345, gpu_of(1)->temperature_c = 87, gpu_of(1)->reasons = 0x20;
	assert_int_equal(ts_nvml_sample(n, 1, &s), 0);
	assert_int_equal(s.index, 1);
	assert_string_equal(s.uuid, "GPU-double-1");
	assert_int_equal(s.sm_clock_mhz, 345);
	assert_int_equal(s.temperature_c, 87);
	assert_int_equal(s.throttle_reasons, 0x20);
	assert_int_equal(s.npids, 0);
	assert_int_equal(ts_nvml_sample(n, TSV_GPUS, &s), -EIO);
	assert_int_equal(ts_nvml_sample(n, -1, &s), -EIO);
	ts_nvml_close(n);
}

/* The rank's own process and a neighbour's on GPU 0: both listed, by host PID. */
static void test_processes(void **state)
{
	struct ts_nvml *n = open_ok();
	struct ts_gpu_sample s;
	struct tsv_gpu *g;

	(void)state;
	g = gpu_of(0);
	g->npids = 2, g->pids[0] = 4242, g->pids[1] = 777;
	assert_int_equal(ts_nvml_sample(n, 0, &s), 0);
	assert_int_equal(s.npids, 2);
	assert_int_equal(s.pids[0], 4242);
	assert_int_equal(s.pids[1], 777);
	/* NVML refusing, or more than the agent takes: unknown, not "none" */
	g->procs_fail = 2;
	assert_int_equal(ts_nvml_sample(n, 0, &s), 0);
	assert_int_equal(s.npids, -1);
	g->procs_fail = 0, g->npids = TSV_MAX_PIDS;
	assert_int_equal(ts_nvml_sample(n, 0, &s), 0);
	assert_int_equal(s.npids, -1);
	ts_nvml_close(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_processes),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
