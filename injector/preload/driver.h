// SPDX-License-Identifier: Apache-2.0
/* CUDA driver entry points handed out by dlsym and cuGetProcAddress, wrapped. */
#ifndef TS_DRIVER_H
#define TS_DRIVER_H

#include <stdbool.h>
#include "lib.h"

/* True when dlsym should hand out a wrapper for this name (cheap prefix test). */
TS_HIDDEN bool ts_drv_wants(const char *name);
/* The wrapper for real, a pointer dlsym found for name; real where none applies. */
TS_HIDDEN void *ts_drv_wrap_dlsym(const char *name, void *real);

/* With TRAINSCOPE_DEBUG_NAMES=1, says on stderr which name was looked up and how. */
TS_HIDDEN void ts_drv_debug_name(const char *how, const char *name, int ver, uint64_t flags);

/* Device memory bookkeeping (driver.c): live and peak bytes, allocation failures. */
TS_HIDDEN void ts_mem_alloc(uint64_t key, uint64_t size);
TS_HIDDEN void ts_mem_free(uint64_t key);
TS_HIDDEN void ts_mem_failed(void);

#endif
