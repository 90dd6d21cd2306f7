// SPDX-License-Identifier: Apache-2.0
/* Trace ids from a job's identity, by hashing: the same on every analyzer and restart. */
#include "traceid.h"
#include "hash.h"

#include <string.h>

static uint64_t hash_str(uint64_t h, const char *s)
{
	while (*s)
		h = ts_splitmix64(h ^ (uint8_t)*s++);
	return h;
}

void ts_trace_id(const char *ns, const char *job, uint64_t first_start_ns, uint8_t out[16])
{
	uint64_t a = ts_splitmix64(hash_str(hash_str(1, ns), job) ^ first_start_ns);
	uint64_t b = ts_splitmix64(a ^ 0xabcdef);

	memcpy(out, &a, 8);
	memcpy(out + 8, &b, 8);
}

void ts_window_trace(const uint8_t base[16], uint64_t w, uint8_t out[16])
{
	uint64_t a, b;

	memcpy(out, base, 16);
	if (!w)
		return;
	memcpy(&a, base, 8);
	memcpy(&b, base + 8, 8);
	a = ts_splitmix64(a ^ ts_splitmix64(w));
	b = ts_splitmix64(b ^ a);
	memcpy(out, &a, 8);
	memcpy(out + 8, &b, 8);
}
