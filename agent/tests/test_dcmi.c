// SPDX-License-Identifier: Apache-2.0
/* NPU health through DCMI, against the test double of libdcmi.so (dcmi_double.h): the
 * NPUs found and their ids, every sampled field, the mapping onto the fields the
 * analyzer's Device cause reads, and clean failures. */
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

#include "agent/dcmi.h"
#include "agent/tests/dcmi_double.h"
#include "analysis/detect/job.h" /* TS_THROTTLE_HW_MASK: the bits the analyzer reads */

static char double_path[4096];
static void *dbl; /* the test's own hold on the double: its state outlives ts_dcmi_close */
static tsd_npu_fn npu_of;
static tsd_fail_fn inject;
static tsd_reset_fn reset;

/* build/test/test_dcmi -> build/test/dcmi/libdcmi.so */
static int find_double(void)
{
	ssize_t len = readlink("/proc/self/exe", double_path, sizeof(double_path) - 1);
	char *slash;

	if (len <= 0)
		return -1;
	double_path[len] = 0;
	if (!(slash = strrchr(double_path, '/')))
		return -1;
	snprintf(slash, sizeof(double_path) - (size_t)(slash - double_path), "/dcmi/libdcmi.so");
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	if (find_double() || !(dbl = dlopen(double_path, RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "test_dcmi: no DCMI test double at %s: %s\n", double_path,
			dlerror());
		return -1;
	}
	*(void **)&npu_of = dlsym(dbl, "tsd_dcmi_npu");
	*(void **)&inject = dlsym(dbl, "tsd_dcmi_fail");
	*(void **)&reset = dlsym(dbl, "tsd_dcmi_reset");
	return npu_of && inject && reset ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	dlclose(dbl);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	reset();
	setenv("TRAINSCOPE_DCMI_LIB", double_path, 1);
	unsetenv("TRAINSCOPE_NPU_HOT_C");
	return 0;
}

static struct ts_dcmi *open_ok(void)
{
	struct ts_dcmi *d = NULL;

	assert_int_equal(ts_dcmi_open(&d), 0);
	assert_non_null(d);
	return d;
}

static void test_missing_library(void **state)
{
	struct ts_dcmi *d = (struct ts_dcmi *)0x1;

	(void)state;
	setenv("TRAINSCOPE_DCMI_LIB", "/nonexistent/libdcmi.so", 1);
	assert_int_equal(ts_dcmi_open(&d), -ENOENT);
	assert_ptr_equal(d, (struct ts_dcmi *)0x1); /* untouched */
	assert_int_equal(ts_dcmi_count(NULL), 0);
	ts_dcmi_close(NULL);
}

/* (card, device) -> logic id -> physical id, in DCMI's order: the rank's index is the
 * physical id. */
static void test_enumeration(void **state)
{
	static const struct { int card, device; } where[TSD_NPUS] = {
		{ 0, 0 }, { 0, 1 }, { 5, 0 }, { 5, 1 },
	};
	struct ts_dcmi *d = open_ok();
	struct ts_npu_id id;

	(void)state;
	assert_int_equal(ts_dcmi_count(d), TSD_NPUS);
	for (int i = 0; i < TSD_NPUS; i++) {
		assert_int_equal(ts_dcmi_npu(d, i, &id), 0);
		assert_int_equal(id.card, where[i].card);
		assert_int_equal(id.device, where[i].device);
		assert_int_equal(id.logic_id, i);
		assert_int_equal(id.index, TSD_PHY(i));
	}
	assert_int_equal(ts_dcmi_npu(d, TSD_NPUS, &id), -ERANGE);
	assert_int_equal(ts_dcmi_npu(d, -1, &id), -ERANGE);
	ts_dcmi_close(d);
}

/* No physical id from DCMI: the logic id stands in, as on a host that sees all NPUs. */
static void test_no_physical_id(void **state)
{
	struct ts_dcmi *d;
	struct ts_npu_id id;

	(void)state;
	inject("dcmi_get_device_phyid_from_logicid", -8255);
	d = open_ok();
	for (int i = 0; i < TSD_NPUS; i++) {
		assert_int_equal(ts_dcmi_npu(d, i, &id), 0);
		assert_int_equal(id.index, id.logic_id);
	}
	ts_dcmi_close(d);
}

static void test_every_field(void **state)
{
	struct tsd_npu *n = npu_of(2); /* card 5 device 0, physical id 0 */
	struct ts_dcmi *d = open_ok();
	struct ts_npu_sample s;
	struct ts_gpu_sample g;

	(void)state;
	*n = (struct tsd_npu){
		.aicore_mhz = 1750, .aicore_rated_mhz = 1800, .hbm_mhz = 1600,
		.aicore_util = 87, .hbm_util = 64, .hbm_bw_util = 42,
		.temperature_c = 61, .power_dw = 3125, .ecc_enabled = 1,
		.ecc_sbe = 9, .ecc_dbe = 0, .ecc_dbe_total = 3,
	};
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(2), &s), 0);
	assert_int_equal(s.id.index, 0);
	assert_int_equal(s.id.card, 5);
	assert_int_equal(s.id.device, 0);
	assert_int_equal(s.id.logic_id, 2);
	assert_int_equal(s.aicore_mhz, 1750);
	assert_int_equal(s.aicore_rated_mhz, 1800);
	assert_int_equal(s.hbm_mhz, 1600);
	assert_int_equal(s.aicore_util, 87);
	assert_int_equal(s.hbm_util, 64);
	assert_int_equal(s.hbm_bw_util, 42);
	assert_int_equal(s.temperature_c, 61);
	assert_int_equal(s.power_mw, 312500); /* 312.5 W in 0.1 W units */
	assert_int_equal(s.health, 0);
	assert_int_equal(s.nerrors, 0);
	assert_int_equal(s.ecc_dbe, 0);
	assert_int_equal(s.ecc_dbe_total, 3);
	assert_int_equal(s.ecc_dbe_new, 0);

	/* a healthy NPU at 97% of its rated clock: no cause in the GPU's terms */
	ts_dcmi_to_gpu(d, &s, &g);
	assert_int_equal(g.index, 0);
	assert_int_equal(g.sm_clock_mhz, 1750);
	assert_int_equal(g.temperature_c, 61);
	assert_int_equal(g.power_mw, 312500);
	assert_int_equal(g.throttle_reasons, 0);
	assert_int_equal(g.xid_errors, 0);
	assert_int_equal(g.ecc_errors, 0);
	assert_int_equal(g.pcie_replays, 0);

	/* another NPU keeps its own values */
	assert_int_equal(ts_dcmi_sample_gpu(d, TSD_PHY(3), &g), 0);
	assert_int_equal(g.index, TSD_PHY(3));
	assert_int_equal(g.temperature_c, 43);
	assert_int_equal(g.power_mw, 100300);
	assert_int_equal(ts_dcmi_sample(d, 17, &s), -ENODEV); /* not on this node */
	ts_dcmi_close(d);
}

/* Each Device symptom lands in a field the analyzer reads. */
static void test_slow_clock_and_heat(void **state)
{
	struct tsd_npu *n = npu_of(0);
	struct ts_dcmi *d;
	struct ts_gpu_sample g;

	(void)state;
	d = open_ok();
	n->aicore_mhz = 1200; /* rated 1800 */
	assert_int_equal(ts_dcmi_sample_gpu(d, TSD_PHY(0), &g), 0);
	assert_int_equal(g.sm_clock_mhz, 1200);
	assert_true(g.throttle_reasons & TS_THROTTLE_HW_MASK);
	assert_int_equal(g.throttle_reasons, 0x8);

	n->aicore_mhz = 1800;
	n->temperature_c = TS_NPU_HOT_C_DEFAULT;
	assert_int_equal(ts_dcmi_sample_gpu(d, TSD_PHY(0), &g), 0);
	assert_true(g.throttle_reasons & TS_THROTTLE_HW_MASK);
	assert_int_equal(g.throttle_reasons, 0x40);
	ts_dcmi_close(d);

	/* the hot threshold is the user's to set */
	setenv("TRAINSCOPE_NPU_HOT_C", "100", 1);
	d = open_ok();
	assert_int_equal(ts_dcmi_sample_gpu(d, TSD_PHY(0), &g), 0);
	assert_int_equal(g.throttle_reasons, 0);
	n->temperature_c = 101;
	assert_int_equal(ts_dcmi_sample_gpu(d, TSD_PHY(0), &g), 0);
	assert_int_equal(g.throttle_reasons, 0x40);
	assert_int_equal(g.temperature_c, 101);
	ts_dcmi_close(d);
}

static void test_health_and_error_codes(void **state)
{
	struct tsd_npu *n = npu_of(1);
	struct ts_dcmi *d = open_ok();
	struct ts_npu_sample s;
	struct ts_gpu_sample g;

	(void)state;
	n->health = 2; /* major alarm, no code (yet) */
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(1), &s), 0);
	assert_int_equal(s.health, 2);
	ts_dcmi_to_gpu(d, &s, &g);
	assert_int_equal(g.xid_errors, 1);

	n->health = 3;
	n->nerrors = 10; /* more than a sample keeps: the count stays exact */
	for (int i = 0; i < n->nerrors; i++)
		n->errors[i] = 0x80e01801u + (unsigned int)i;
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(1), &s), 0);
	assert_int_equal(s.health, 3);
	assert_int_equal(s.nerrors, 10);
	for (int i = 0; i < TS_NPU_ERRORS; i++)
		assert_int_equal(s.errors[i], 0x80e01801u + (unsigned int)i);
	ts_dcmi_to_gpu(d, &s, &g);
	assert_int_equal(g.xid_errors, 10);

	n->health = 0; /* recovered */
	n->nerrors = 0;
	assert_int_equal(ts_dcmi_sample_gpu(d, TSD_PHY(1), &g), 0);
	assert_int_equal(g.xid_errors, 0);
	ts_dcmi_close(d);
}

/* Uncorrected HBM errors: the count since the driver loaded goes out as ecc_errors; the
 * ones new since the previous sample are faults (the first sample sets the baseline). */
static void test_hbm_ecc(void **state)
{
	struct tsd_npu *n = npu_of(3);
	struct ts_dcmi *d = open_ok();
	struct ts_npu_sample s;
	struct ts_gpu_sample g;

	(void)state;
	n->ecc_dbe = 5;
	n->ecc_dbe_total = 12;
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(3), &s), 0);
	assert_int_equal(s.ecc_dbe, 5);
	assert_int_equal(s.ecc_dbe_total, 12);
	assert_int_equal(s.ecc_dbe_new, 0);
	ts_dcmi_to_gpu(d, &s, &g);
	assert_int_equal(g.ecc_errors, 5);
	assert_int_equal(g.xid_errors, 0);

	n->ecc_dbe = 7;
	n->ecc_dbe_total = 14;
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(3), &s), 0);
	assert_int_equal(s.ecc_dbe_new, 2);
	ts_dcmi_to_gpu(d, &s, &g);
	assert_int_equal(g.ecc_errors, 7);
	assert_int_equal(g.xid_errors, 2);

	assert_int_equal(ts_dcmi_sample_gpu(d, TSD_PHY(3), &g), 0); /* nothing new */
	assert_int_equal(g.xid_errors, 0);

	n->ecc_enabled = 0; /* ECC off: nothing to count */
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(3), &s), 0);
	assert_int_equal(s.ecc_dbe, 0);
	ts_dcmi_close(d);
}

static void test_open_failures(void **state)
{
	struct ts_dcmi *d = NULL;

	(void)state;
	inject("dcmi_init", -8005);
	assert_int_equal(ts_dcmi_open(&d), -EIO);
	assert_null(d);
	inject("dcmi_init", 0);

	inject("dcmi_get_card_num_list", -8002);
	assert_int_equal(ts_dcmi_open(&d), -EIO);
	assert_null(d);
	inject("dcmi_get_card_num_list", 0);

	/* no NPU answers with its logic id: nothing to sample, as a node without NPUs */
	inject("dcmi_get_device_logic_id", -8008);
	assert_int_equal(ts_dcmi_open(&d), -ENOENT);
	assert_null(d);
	inject("dcmi_get_device_logic_id", 0);

	inject("dcmi_get_device_num_in_card", -8007);
	assert_int_equal(ts_dcmi_open(&d), -ENOENT);
	assert_null(d);
	inject("dcmi_get_device_num_in_card", 0);

	/* working again: a failed open left nothing behind */
	d = open_ok();
	assert_int_equal(ts_dcmi_count(d), TSD_NPUS);
	ts_dcmi_close(d);
}

/* An NPU that stops answering gives -EIO until it answers again; a field DCMI cannot
 * give stays 0 and the rest of the sample stands. */
static void test_sample_failures(void **state)
{
	struct tsd_npu *n = npu_of(0);
	struct ts_dcmi *d = open_ok();
	struct ts_npu_sample s;

	(void)state;
	inject("dcmi_get_device_health", -8008);
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(0), &s), -EIO);
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(0), &s), -EIO);
	inject("dcmi_get_device_health", 0);
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(0), &s), 0);

	n->health = 0xffffffffu; /* DCMI's "no such device" */
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(0), &s), -EIO);
	n->health = 0;

	inject("dcmi_get_device_temperature", -8255);
	inject("dcmi_get_device_frequency", -8005);
	inject("dcmi_get_device_utilization_rate", -8255);
	inject("dcmi_get_device_ecc_info", -8255);
	inject("dcmi_get_device_errorcode_v2", -8005);
	n->ecc_dbe = 4;
	assert_int_equal(ts_dcmi_sample(d, TSD_PHY(0), &s), 0);
	assert_int_equal(s.temperature_c, 0);
	assert_int_equal(s.aicore_mhz, 0);
	assert_int_equal(s.aicore_rated_mhz, 0);
	assert_int_equal(s.hbm_mhz, 0);
	assert_int_equal(s.aicore_util, 0);
	assert_int_equal(s.hbm_bw_util, 0);
	assert_int_equal(s.ecc_dbe, 0);
	assert_int_equal(s.nerrors, 0);
	assert_int_equal(s.power_mw, 100000); /* still read */
	ts_dcmi_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_missing_library, setup),
		cmocka_unit_test_setup(test_enumeration, setup),
		cmocka_unit_test_setup(test_no_physical_id, setup),
		cmocka_unit_test_setup(test_every_field, setup),
		cmocka_unit_test_setup(test_slow_clock_and_heat, setup),
		cmocka_unit_test_setup(test_health_and_error_codes, setup),
		cmocka_unit_test_setup(test_hbm_ecc, setup),
		cmocka_unit_test_setup(test_open_failures, setup),
		cmocka_unit_test_setup(test_sample_failures, setup),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
