// SPDX-License-Identifier: Apache-2.0
/* The rank's device from the visible-device lists of Ascend's device plugin and docker
 * runtime (ASCEND_VISIBLE_DEVICES), CANN (ASCEND_RT_VISIBLE_DEVICES), NVIDIA's container
 * toolkit (NVIDIA_VISIBLE_DEVICES) and CUDA (CUDA_VISIBLE_DEVICES): the node-level index,
 * or the UUID; bad input falls back to LOCAL_RANK and never crashes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ident.h"
#include "visible.h"

static const char *const vars[] = {
	"ASCEND_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "ASCEND_RUNTIME_OPTIONS",
	"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "TRAINSCOPE_DEVICE_INDEX",
	"TRAINSCOPE_DEVICE_UUID", "LOCAL_RANK", "RANK",
};

static int clear_env(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	return 0;
}

/* ts_visible_device for local_rank: the index, -1 for none, -2 for a UUID (in uuid). */
static int dev(int local_rank, char *uuid)
{
	char u[48] = "";
	int32_t index = -1;
	int rc = ts_visible_device(local_rank, &index, u, sizeof(u));

	if (uuid)
		strcpy(uuid, u);
	return rc == 1 ? index : rc == 2 ? -2 : -1;
}

static void test_no_variables(void **state)
{
	struct ts_ident id;

	(void)state;
	assert_int_equal(dev(3, NULL), -1);
	setenv("LOCAL_RANK", "3", 1);
	ts_ident_from_env(&id);
	assert_int_equal(id.dev_index, 3);
	assert_string_equal(id.dev_uuid, "");
}

/* The device plugin's list (any order, as Go's map gives it), the runtime's ranges and
 * names: the container's device i is the i-th davinci number in ascending order. */
static void test_ascend_lists(void **state)
{
	(void)state;
	setenv("ASCEND_VISIBLE_DEVICES", "4,5,6,7", 1);
	assert_int_equal(dev(0, NULL), 4);
	assert_int_equal(dev(3, NULL), 7);
	assert_int_equal(dev(4, NULL), -1); /* past the list */
	setenv("ASCEND_VISIBLE_DEVICES", "7,5,4,6", 1);
	assert_int_equal(dev(1, NULL), 5);
	setenv("ASCEND_VISIBLE_DEVICES", "0-1, 6 ,4-5", 1);
	assert_int_equal(dev(2, NULL), 4);
	assert_int_equal(dev(4, NULL), 6);
	setenv("ASCEND_VISIBLE_DEVICES", "Ascend910-6,Ascend910-2", 1);
	assert_int_equal(dev(1, NULL), 6);
	setenv("ASCEND_VISIBLE_DEVICES", "3,3,1", 1); /* duplicates count once */
	assert_int_equal(dev(1, NULL), 3);
	/* one device: whatever the local rank */
	setenv("ASCEND_VISIBLE_DEVICES", "5", 1);
	assert_int_equal(dev(6, NULL), 5);
	assert_int_equal(dev(-1, NULL), 5);
}

/* CANN's runtime-level subset indexes the container's devices; it ends at its first
 * entry that is no index there, as CANN reads it. */
static void test_ascend_rt_subset(void **state)
{
	(void)state;
	setenv("ASCEND_VISIBLE_DEVICES", "8-15", 1);
	setenv("ASCEND_RT_VISIBLE_DEVICES", "2,3", 1);
	assert_int_equal(dev(0, NULL), 10);
	assert_int_equal(dev(1, NULL), 11);
	assert_int_equal(dev(2, NULL), -1);
	setenv("ASCEND_RT_VISIBLE_DEVICES", "6", 1);
	assert_int_equal(dev(4, NULL), 14);
	setenv("ASCEND_RT_VISIBLE_DEVICES", "1, 2,3", 1); /* CANN sees "1" alone */
	assert_int_equal(dev(1, NULL), 9);
	setenv("ASCEND_RT_VISIBLE_DEVICES", "1,9,2", 1); /* 9 is past the container's 8 */
	assert_int_equal(dev(0, NULL), 9);
	assert_int_equal(dev(1, NULL), 9);
	/* bare metal: CANN's list alone numbers the node's devices */
	unsetenv("ASCEND_VISIBLE_DEVICES");
	setenv("ASCEND_RT_VISIBLE_DEVICES", "4,5,6,7", 1);
	assert_int_equal(dev(2, NULL), 6);
}

static void test_cuda_numeric(void **state)
{
	struct ts_ident id;

	(void)state;
	setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
	assert_int_equal(dev(1, NULL), 3);
	setenv("NVIDIA_VISIBLE_DEVICES", "4,5,6,7", 1);
	assert_int_equal(dev(0, NULL), 6);
	unsetenv("CUDA_VISIBLE_DEVICES");
	assert_int_equal(dev(3, NULL), 7);
	setenv("NVIDIA_VISIBLE_DEVICES", "all", 1);
	assert_int_equal(dev(3, NULL), -1);
	setenv("CUDA_VISIBLE_DEVICES", "5", 1);
	assert_int_equal(dev(3, NULL), 5);
	/* into the identity; TRAINSCOPE_DEVICE_INDEX still wins */
	setenv("LOCAL_RANK", "0", 1);
	ts_ident_from_env(&id);
	assert_int_equal(id.dev_index, 5);
	setenv("TRAINSCOPE_DEVICE_INDEX", "1", 1);
	ts_ident_from_env(&id);
	assert_int_equal(id.dev_index, 1);
}

#define UUID_A "GPU-8a7f6b2e-3c1d-4e5f-9a0b-1c2d3e4f5a6b"
#define UUID_B "GPU-0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e"

/* NVIDIA's device plugin hands UUIDs by default: the rank's UUID, the index stays. */
static void test_cuda_uuid(void **state)
{
	struct ts_ident id;
	char uuid[48];

	(void)state;
	setenv("NVIDIA_VISIBLE_DEVICES", UUID_A "," UUID_B, 1);
	assert_int_equal(dev(1, uuid), -2);
	assert_string_equal(uuid, UUID_B);
	setenv("CUDA_VISIBLE_DEVICES", "1,0", 1);
	assert_int_equal(dev(1, uuid), -2);
	assert_string_equal(uuid, UUID_A);
	unsetenv("NVIDIA_VISIBLE_DEVICES");
	setenv("CUDA_VISIBLE_DEVICES", UUID_B, 1);
	assert_int_equal(dev(4, uuid), -2);
	assert_string_equal(uuid, UUID_B);
	setenv("LOCAL_RANK", "0", 1);
	ts_ident_from_env(&id);
	assert_int_equal(id.dev_index, 0);
	assert_string_equal(id.dev_uuid, UUID_B);
	setenv("TRAINSCOPE_DEVICE_UUID", "GPU-mine", 1);
	ts_ident_from_env(&id);
	assert_string_equal(id.dev_uuid, "GPU-mine");
	/* a UUID too long for the identity is no UUID */
	setenv("CUDA_VISIBLE_DEVICES", "MIG-GPU-8a7f6b2e-3c1d-4e5f-9a0b-1c2d3e4f5a6b/1/0", 1);
	assert_int_equal(dev(0, NULL), -1);
}

/* Lists that say nothing usable are ignored: LOCAL_RANK, and never a crash. */
static void test_bad_input(void **state)
{
	static char huge[20000];
	const char *bad_ascend[] = { "void", "x", "1,,2", "3-1", "-1", "2-", "0x1", "1-2-3",
				     "4096", "99999999999999999999", "Ascend910", "Ascend910-2c-100-0",
				     "0-4000", ",", " ", "1;2", "1 2" };
	const char *bad_cuda[] = { "-1", "x", "GPU", "abc,1", "", "99999999999" };
	struct ts_ident id;

	(void)state;
	setenv("LOCAL_RANK", "2", 1);
	for (size_t i = 0; i < sizeof(bad_ascend) / sizeof(bad_ascend[0]); i++) {
		setenv("ASCEND_VISIBLE_DEVICES", bad_ascend[i], 1);
		assert_int_equal(dev(2, NULL), -1);
		ts_ident_from_env(&id);
		assert_int_equal(id.dev_index, 2);
	}
	unsetenv("ASCEND_VISIBLE_DEVICES");
	for (size_t i = 0; i < sizeof(bad_cuda) / sizeof(bad_cuda[0]); i++) {
		setenv("CUDA_VISIBLE_DEVICES", bad_cuda[i], 1);
		assert_int_equal(dev(0, NULL), -1);
	}
	/* a rank that is no whole 32-bit number is none: 2^32 + 1 is not rank 1 */
	const char *bad_rank[] = { "4294967297", "3x", "", "x", "-2147483649" };
	for (size_t i = 0; i < sizeof(bad_rank) / sizeof(bad_rank[0]); i++) {
		setenv("RANK", bad_rank[i], 1);
		ts_ident_from_env(&id);
		assert_int_equal(id.rank, -1);
	}
	unsetenv("RANK");
	setenv("NVIDIA_VISIBLE_DEVICES", "none", 1);
	setenv("CUDA_VISIBLE_DEVICES", "0", 1);
	assert_int_equal(dev(0, NULL), -1);
	/* the device plugin's volume-mounts strategy: no list in the variable */
	setenv("NVIDIA_VISIBLE_DEVICES", "/var/run/nvidia-container-devices", 1);
	assert_int_equal(dev(0, NULL), -1);
	unsetenv("NVIDIA_VISIBLE_DEVICES");
	unsetenv("CUDA_VISIBLE_DEVICES");
	/* vNPUs: the numbers are no chips */
	setenv("ASCEND_VISIBLE_DEVICES", "100", 1);
	setenv("ASCEND_RUNTIME_OPTIONS", "VIRTUAL", 1);
	assert_int_equal(dev(0, NULL), -1);
	unsetenv("ASCEND_RUNTIME_OPTIONS");
	/* a list longer than any node's, and entries longer than any device's name */
	for (size_t i = 0; i + 2 < sizeof(huge); i += 2)
		memcpy(huge + i, "1,", 2);
	huge[sizeof(huge) - 2] = '1';
	setenv("ASCEND_VISIBLE_DEVICES", huge, 1);
	assert_int_equal(dev(0, NULL), -1); /* more entries than a node has devices */
	memset(huge, '7', sizeof(huge) - 1);
	setenv("ASCEND_VISIBLE_DEVICES", huge, 1);
	assert_int_equal(dev(0, NULL), -1);
	setenv("CUDA_VISIBLE_DEVICES", huge, 1);
	assert_int_equal(dev(0, NULL), -1);
	setenv("ASCEND_VISIBLE_DEVICES", "0-255", 1); /* 256 entries fit */
	assert_int_equal(dev(255, NULL), 255);
	setenv("ASCEND_VISIBLE_DEVICES", "0-256", 1);
	assert_int_equal(dev(0, NULL), -1);
	/* a LOCAL_RANK past the list, or none, with several devices */
	setenv("ASCEND_VISIBLE_DEVICES", "0,1", 1);
	assert_int_equal(dev(-1, NULL), -1);
	setenv("TRAINSCOPE_DEVICE_INDEX", "junk", 1);
	ts_ident_from_env(&id);
	assert_int_equal(id.dev_index, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_no_variables, clear_env),
		cmocka_unit_test_setup(test_ascend_lists, clear_env),
		cmocka_unit_test_setup(test_ascend_rt_subset, clear_env),
		cmocka_unit_test_setup(test_cuda_numeric, clear_env),
		cmocka_unit_test_setup(test_cuda_uuid, clear_env),
		cmocka_unit_test_setup(test_bad_input, clear_env),
	};
	return cmocka_run_group_tests_name("rank device", tests, NULL, NULL);
}
