// SPDX-License-Identifier: Apache-2.0
/* A key-value bucket in memory, in place of common/natskv.c's JetStream one (a test
 * links this instead): values by key, puts that fail on demand (a store refusing, or an
 * analyzer killed mid-save), and a look at what is stored. */
#ifndef TS_FAKEKV_H
#define TS_FAKEKV_H

#include <stddef.h>
#include "common/natskv.h"

struct tsn_kv *fakekv_new(void);
void fakekv_free(struct tsn_kv *kv);
/* The next n puts go through, those after fail (-EAGAIN); n < 0: all go through. */
void fakekv_fail_after(struct tsn_kv *kv, int n);
/* Keys that match pattern (subject wildcards), and their bytes. */
int fakekv_count(struct tsn_kv *kv, const char *pattern, size_t *bytes);
/* Byte at of the value under key flipped: 0, or -ENOENT. */
int fakekv_damage(struct tsn_kv *kv, const char *key, size_t at);

#endif
