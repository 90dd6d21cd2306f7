// SPDX-License-Identifier: Apache-2.0
/* Trace ids of a job's attempts and of their windows of steps: derived, not stored, so
 * the detection core that dates a verdict and the OTLP sink that exports its spans
 * agree on them without calling each other. */
#ifndef TS_TRACEID_H
#define TS_TRACEID_H

#include <stdint.h>

/* The trace of a job attempt: derived from its namespace, name and first step. */
void ts_trace_id(const char *ns, const char *job, uint64_t first_start_ns, uint8_t out[16]);
/* The trace of window w of that attempt (window 0's is the attempt's own). */
void ts_window_trace(const uint8_t base[16], uint64_t w, uint8_t out[16]);

#endif
