// SPDX-License-Identifier: Apache-2.0
/* Finding the functions the hooks stand in front of. */
#ifndef TS_REAL_H
#define TS_REAL_H

#include <stdatomic.h>
#include "lib.h"

/* glibc's own dlsym, found with dlvsym; this library's dlsym stands in front of it. */
TS_HIDDEN void *ts_real_dlsym(void *handle, const char *name);
/* Sets the pointer the dlsym trampoline jumps through (dlsym.c). */
TS_HIDDEN void ts_real_dlsym_init(void);

/* name in the library loaded after this one (RTLD_NEXT) or, where that fails because
 * the library was loaded in a local scope, in the first loaded object whose file name
 * starts with lib_prefix ("libnccl", "libcublasLt", ...), opened with RTLD_NOLOAD. */
TS_HIDDEN void *ts_find_real(const char *lib_prefix, const char *name);

/* A loaded object's handle by file-name prefix, or NULL when none is loaded. */
TS_HIDDEN void *ts_loaded_lib(const char *lib_prefix);

/* The cached real function: resolved once, then a plain load. */
static inline void *ts_real(_Atomic(void *) *cache, const char *lib_prefix, const char *name)
{
	void *p = atomic_load_explicit(cache, memory_order_relaxed);

	if (likely(p != NULL))
		return p;
	p = ts_find_real(lib_prefix, name);
	atomic_store_explicit(cache, p, memory_order_relaxed);
	return p;
}

/* Says once on stderr that a real function is missing (the hook then fails the call). */
TS_HIDDEN void ts_missing(const char *name);

#endif
