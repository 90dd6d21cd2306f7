// SPDX-License-Identifier: Apache-2.0
/* Hashes: FNV-1a of bytes, and mixers of 64-bit keys. */
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

/* splitmix64's output function: seeds, ids, deterministic noise, checks. What it made
 * may be kept (the relay's .relay record's check, a trace's ids): it must not change. */
static inline uint64_t ts_splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* MurmurHash3's 64-bit finalizer: spreads a key's bits for open addressing. */
static inline uint64_t ts_mix64(uint64_t x)
{
	x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
	return x;
}

#endif
