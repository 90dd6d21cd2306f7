// SPDX-License-Identifier: Apache-2.0
/* Hashes: FNV-1a of bytes, and a mixer of 64-bit keys. */
#ifndef TS_HASH_H
#define TS_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t ts_fnv1a(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* MurmurHash3's 64-bit finalizer: spreads a key's bits for open addressing. */
static inline uint64_t ts_mix64(uint64_t x)
{
	x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
	return x;
}

#endif
