// SPDX-License-Identifier: Apache-2.0
/* Callers built against earlier trainscope.h headers (tests/abi/vN/), as test_api_abi.c,
 * built against the current one, sees them: nothing here includes a trainscope.h. */
#ifndef TS_ABI_CALLER_H
#define TS_ABI_CALLER_H

#include <stdint.h>

/* What the tests fill buffers with before the library writes into them. */
#define ABI_POISON 0xa5a5a5a5a5a5a5a5ull

/* What a v1 caller read: its structs' fields in v1 order, and whether the library wrote
 * into the canary behind either struct. */
struct abi_v1_read {
	uint64_t dev[20]; /* struct trainscope_device_counters of v1 */
	uint64_t ctr[2];  /* struct trainscope_counters of v1 */
	int dev_overrun, ctr_overrun;
};

/* Reads both counter structs through lib (a dlopen handle of libtrainscope.so) the way a
 * program built against the v1 header does: the v1 names, the v1 prototypes, v1-sized
 * structs, each followed by a poisoned canary. 0, or -ENOENT when lib lacks a v1 call. */
int abi_v1_read(void *lib, struct abi_v1_read *out);

#endif
