/* Encodes step summaries of one producer as a protobuf trainscope.v1.Batch. */
#ifndef TS_BATCH_H
#define TS_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "agg.h"
#include "ident.h"

struct ts_batch_hdr {
	const struct ts_ident *id;
	uint64_t producer_id;
	uint64_t seq;
	uint64_t dropped_records;
	bool hello;               /* prepend a Hello record (first batch of a producer) */
	uint64_t start_real_ns;   /* for Hello */
	bool final;               /* the producer exited: nothing follows */
};

/* Returns 0 with *out malloc'ed (caller frees), or -ENOMEM. */
int ts_batch_encode(const struct ts_batch_hdr *h, const struct ts_step_sum *steps, int n,
		    uint8_t **out, size_t *len);

#endif
