// SPDX-License-Identifier: Apache-2.0
/* trainscope.v1.Batch messages built by hand, as a producer of the tests' choosing would
 * send them: the analyzer's tests, its fuzzer's seeds and e2e/faults/forge. Linked with
 * the generated protobuf code ($(PROTO_OBJ)). */
#ifndef TS_TESTBATCH_H
#define TS_TESTBATCH_H

#include <stddef.h>
#include <stdint.h>

#include "proto/trainscope.pb-c.h"

#define TS_TEST_BATCH_MAX 64 /* records in one batch */

/* A batch being built: b, its identity and its records; the records point into the
 * arrays here (record i's step, if it is one, is step[i]), so the struct must stay put
 * until packed. A caller sets more of b, id and the records directly. */
struct ts_test_batch {
	Trainscope__V1__Batch b;
	Trainscope__V1__Identity id;
	Trainscope__V1__Record rec[TS_TEST_BATCH_MAX], *recp[TS_TEST_BATCH_MAX];
	Trainscope__V1__Step step[TS_TEST_BATCH_MAX];
};

/* An empty batch of rank of world in namespace ns, job job (the strings are pointed to,
 * not copied), from producer, its number seq. */
void ts_test_batch_init(struct ts_test_batch *x, const char *ns, const char *job, int rank,
			int world, uint64_t producer, uint64_t seq);

/* Adds a record of no kind yet; NULL when the batch is full. */
Trainscope__V1__Record *ts_test_batch_record(struct ts_test_batch *x);

/* Adds step k from start_ns to end_ns, compute_ns of it computing; the Step, for more
 * of its fields, or NULL when the batch is full. */
Trainscope__V1__Step *ts_test_batch_step(struct ts_test_batch *x, uint64_t k, uint64_t start_ns,
					 uint64_t end_ns, uint64_t compute_ns);

/* Packs the batch into buf: its length, or 0 when it needs more than cap bytes. */
size_t ts_test_batch_pack(const struct ts_test_batch *x, uint8_t *buf, size_t cap);

#endif
