// SPDX-License-Identifier: Apache-2.0
/* Binds the glibc symbols libtrainscope.so imports to their oldest version, so that the
 * library built against a new glibc still loads into a process of an older image.
 *
 * Included before anything else in every object of the library (-include in module.mk,
 * pic objects only). glibc 2.34 moved dlopen, dlvsym and pthread_create from libdl and
 * libpthread into libc under a new version, 2.32 and 2.33 did the same for
 * pthread_sigmask, stat and fstat; the library links libdl.so.2 and libpthread.so.0 by
 * name (stubs since 2.34) so that the old versions are found where they used to live.
 * tests/test_abi.c fails naming any import above the baseline: pin a new one here. */
#ifndef TS_GLIBC_COMPAT_H
#define TS_GLIBC_COMPAT_H

#include <features.h>

#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))

#include <sys/stat.h>

#if defined(__x86_64__)
#define TS_GLIBC_BASE "GLIBC_2.2.5"
#define TS_STAT_VER 1 /* _STAT_VER_LINUX */
#else
#define TS_GLIBC_BASE "GLIBC_2.17"
#define TS_STAT_VER 0
#endif

#define TS_SYMVER(sym) __asm__(".symver " #sym "," #sym "@" TS_GLIBC_BASE)

TS_SYMVER(dlopen);
TS_SYMVER(dlvsym);
TS_SYMVER(pthread_create);
TS_SYMVER(pthread_key_create); /* these three: 2.34 on either, moved into libc */
TS_SYMVER(pthread_once);
TS_SYMVER(pthread_setspecific);
TS_SYMVER(pthread_sigmask);
TS_SYMVER(memcpy); /* 2.14 on x86-64 */

/* stat and fstat exist only since 2.33; before, the headers called these. */
int __xstat(int ver, const char *path, struct stat *st);
int __fxstat(int ver, int fd, struct stat *st);
TS_SYMVER(__xstat);
TS_SYMVER(__fxstat);

static inline int ts_compat_stat(const char *path, struct stat *st)
{
	return __xstat(TS_STAT_VER, path, st);
}

static inline int ts_compat_fstat(int fd, struct stat *st)
{
	return __fxstat(TS_STAT_VER, fd, st);
}

/* function-like: "struct stat" is left alone */
#define stat(path, st) ts_compat_stat(path, st)
#define fstat(fd, st) ts_compat_fstat(fd, st)

#endif
#endif
