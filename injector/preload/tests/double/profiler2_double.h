// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of a second NCCL profiler plugin (profiler2_double.c): what it was given,
 * for tests/test_ncclchain.c. Never install or ship it. */
#ifndef TSD_PROFILER2_DOUBLE_H
#define TSD_PROFILER2_DOUBLE_H

#include <stdint.h>

#define TSD_PROF2_TYPES 16 /* event types by bit: index 1 = Coll (1 << 1), ... */

struct tsd_prof2_counts {
	uint64_t inits, finalizes;
	uint64_t start[TSD_PROF2_TYPES], stop[TSD_PROF2_TYPES], records;
	uint64_t parented;   /* events whose parent was its own live or past event */
	uint64_t bad_ctx;    /* a start with a context that is not one of its own */
	uint64_t bad_handle; /* a stop or state change of a handle that is not its own */
	uint64_t bad_parent; /* a parent that is not one of its own events */
	uint64_t unasked;    /* an event of a type its mask did not ask for */
	uint64_t full;       /* starts refused: its own event pool was used up */
	uint64_t coll_seq_sum, p2p_peer_sum, send_bytes; /* the descriptors' content arrived */
};

/* Exported by the double: the counts so far. */
void tsd_prof2_counts(struct tsd_prof2_counts *out);

#endif
