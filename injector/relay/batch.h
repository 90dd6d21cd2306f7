// SPDX-License-Identifier: Apache-2.0
/* Encodes step summaries of one producer as a protobuf trainscope.v1.Batch. */
#ifndef TS_BATCH_H
#define TS_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "agg.h"
#include "ident.h"

struct ts_hang_info {
	uint64_t time_ns, comm_hash, seq, pending_ns;
	unsigned op;  /* enum trainscope_coll_op, 0 for a kernel */
	char *stacks; /* may be NULL */
};

struct ts_batch_hdr {
	const struct ts_ident *id;
	const char *pod_uid;      /* the relay's own pod, "" outside Kubernetes */
	uint64_t producer_id;
	uint64_t seq;
	uint64_t dropped_records;
	bool hello;               /* prepend a Hello record (first batch of a producer) */
	uint64_t start_real_ns;   /* for Hello */
	bool final;               /* the producer exited: nothing follows */
	bool died;                /* ... without its exit record, after making steps */
	uint64_t unranked_steps;  /* a notice: the process made these with no rank (held) */
	uint64_t stepless_records; /* a notice: the rank ran these collectives and GEMMs and
				    * made no step */
	const struct ts_hang_info *hang; /* append a Hang record */
	const char *const *groups;       /* Hello groups ("layout:...", "nccl:...") */
	size_t ngroups;
};

/* Returns 0 with *out malloc'ed (caller frees), or -ENOMEM. */
int ts_batch_encode(const struct ts_batch_hdr *h, const struct ts_step_sum *steps, int n,
		    uint8_t **out, size_t *len);

#endif
