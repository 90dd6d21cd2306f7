/* FNV-1a, 64 bits: a quick hash of bytes (subject keys, blob checks, name suffixes). */
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

#endif
