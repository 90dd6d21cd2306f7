// SPDX-License-Identifier: Apache-2.0
/* Helpers of the cmocka tests (the preload library's, the relay's): run a program, find
 * the ring it left, find the preload library and the test doubles. */
#ifndef TS_TESTUTIL_H
#define TS_TESTUTIL_H

#include <stddef.h>

/* Runs argv (PATH is searched) with each "NAME=value" of env (NULL-terminated, may be
 * NULL) added; "NAME=" removes NAME. stdout goes into out (NUL-terminated, cut at n - 1
 * bytes). Returns the exit status (128 + signal when killed), or -1 when it could not
 * run. A program the kernel cannot run (aarch64 on x86-64) runs under $TS_TEST_QEMU. */
int ts_test_spawn(char *const argv[], char *const env[], char *out, size_t n);

/* How many files of dir end in suffix (temporary ".tmp" names left out); the path of
 * the last one found goes into path. */
int ts_test_find(const char *dir, const char *suffix, char *path, size_t n);

/* The preload library under test, as an absolute path ($TRAINSCOPE_LIB, default
 * build/lib/libtrainscope.so): a child may be a wrapper script (pyenv) that runs
 * elsewhere. NULL when there is no such file. */
const char *ts_test_lib(void);

/* ts_test_lib(), or the running test fails when there is no such file. */
const char *ts_test_lib_path(void);

/* <the test binary's folder>/double/<name>: where the build puts the test doubles
 * (build/test/test_x -> build/test/double/name). 0, or -1 when it cannot be said. */
int ts_test_double_path(const char *name, char *buf, size_t n);

/* Removes a test's temporary folder and what it holds; 0 or -1. */
int ts_test_rmdir(const char *dir);

#endif
