// SPDX-License-Identifier: Apache-2.0
/* Time helpers: nanoseconds from vDSO clocks (no syscall on x86-64/arm64). Header-only
 * and libc-only: the preload library (injector/preload/lib.h) uses it too. */
#ifndef TS_CLOCK_H
#define TS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ts_now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ts_mono_ns(void) { return ts_now_ns(CLOCK_MONOTONIC); }
static inline uint64_t ts_real_ns(void) { return ts_now_ns(CLOCK_REALTIME); }

/* RFC 3339 UTC with seconds, as Kubernetes writes times. */
static inline void ts_rfc3339(uint64_t real_ns, char out[32])
{
	time_t s = (time_t)(real_ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

#endif
