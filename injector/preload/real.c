// SPDX-License-Identifier: Apache-2.0
#include "real.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

typedef void *(*dlsym_fn)(void *, const char *);

/* dlsym's version before 2.34: glibc's first on the architecture (glibc_compat.h). */
#ifndef TS_GLIBC_BASE
#define TS_GLIBC_BASE "GLIBC_2.2.5"
#endif

/* Read by the dlsym trampoline (dlsym.c): hidden, so it is a PC-relative load there. */
TS_HIDDEN _Atomic(dlsym_fn) ts_real_dlsym_ptr;

static dlsym_fn real_dlsym_fn(void)
{
	dlsym_fn f = atomic_load_explicit(&ts_real_dlsym_ptr, memory_order_acquire);

	if (likely(f != NULL))
		return f;
	/* dlvsym is not hooked; 2.34 moved dlsym into libc, older glibc has 2.2.5 (2.17) */
	f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!f)
		f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", TS_GLIBC_BASE);
	atomic_store_explicit(&ts_real_dlsym_ptr, f, memory_order_release);
	return f;
}

/* Called by the trampoline before it jumps: makes sure the real pointer is set. */
TS_HIDDEN void ts_real_dlsym_init(void)
{
	(void)real_dlsym_fn();
}

void *ts_real_dlsym(void *handle, const char *name)
{
	dlsym_fn f = real_dlsym_fn();

	return f ? f(handle, name) : NULL;
}

struct find_lib {
	const char *prefix;
	char path[4096];
};

static int match_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_lib *f = arg;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (!base || strncmp(base, f->prefix, strlen(f->prefix)) != 0)
		return 0;
	/* "libcublas" must not take "libcublasLt" */
	char next = base[strlen(f->prefix)];
	if (next != '.' && next != '-' && next != '_')
		return 0;
	snprintf(f->path, sizeof(f->path), "%s", info->dlpi_name);
	return 1;
}

void *ts_loaded_lib(const char *lib_prefix)
{
	struct find_lib f = { .prefix = lib_prefix };

	if (!dl_iterate_phdr(match_lib, &f))
		return NULL;
	return dlopen(f.path, RTLD_LAZY | RTLD_NOLOAD);
}

void *ts_find_real(const char *lib_prefix, const char *name)
{
	void *p = ts_real_dlsym(RTLD_NEXT, name), *h;

	if (p || !lib_prefix)
		return p;
	h = ts_loaded_lib(lib_prefix);
	return h ? ts_real_dlsym(h, name) : NULL;
}

void ts_missing(const char *name)
{
	static _Atomic int said;

	if (!atomic_exchange(&said, 1))
		fprintf(stderr, "trainscope: the real %s was not found; the call fails\n", name);
}
