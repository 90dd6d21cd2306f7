// SPDX-License-Identifier: Apache-2.0
/* A program built against the v1 trainscope.h (beside this file, found first by the
 * quoted include), reading the counters from whatever libtrainscope.so it is given. */
#include "trainscope.h" /* tests/abi/v1/trainscope.h, not the current one */

#include "../abi_caller.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

_Static_assert(sizeof(struct trainscope_device_counters) == sizeof(((struct abi_v1_read *)0)->dev),
	       "v1's device counters are 20 fields");
_Static_assert(sizeof(struct trainscope_counters) == sizeof(((struct abi_v1_read *)0)->ctr),
	       "v1's counters are 2 fields");

/* Nonzero when any byte of p[0, n) is not the poison. */
static int touched(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)ABI_POISON)
			return 1;
	return 0;
}

/* By name, as the dynamic linker binds an unversioned reference and ctypes finds a
 * function: the library has no symbol versions to tell one caller from another. */
int abi_v1_read(void *lib, struct abi_v1_read *out)
{
	__typeof__(&trainscope_get_device_counters) get_dev;
	__typeof__(&trainscope_get_counters) get_ctr;
	struct {
		struct trainscope_device_counters c;
		uint64_t canary[8];
	} dev;
	struct {
		struct trainscope_counters c;
		uint64_t canary[8];
	} ctr;

	*(void **)&get_dev = dlsym(lib, "trainscope_get_device_counters");
	*(void **)&get_ctr = dlsym(lib, "trainscope_get_counters");
	if (!get_dev || !get_ctr)
		return -ENOENT;
	memset(&dev, (unsigned char)ABI_POISON, sizeof(dev));
	memset(&ctr, (unsigned char)ABI_POISON, sizeof(ctr));
	get_dev(&dev.c);
	get_ctr(&ctr.c);
	out->dev_overrun = touched(dev.canary, sizeof(dev.canary));
	out->ctr_overrun = touched(ctr.canary, sizeof(ctr.canary));
	memcpy(out->dev, &dev.c, sizeof(out->dev));
	memcpy(out->ctr, &ctr.c, sizeof(out->ctr));
	return 0;
}
