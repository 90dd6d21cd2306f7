// SPDX-License-Identifier: Apache-2.0
/* Records folded into steps, and the Batch encoding read back by protobuf-c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "injector/relay/agg.h"
#include "injector/relay/batch.h"
#include "proto/trainscope.pb-c.h"
#include "trainscope.h"

/* A record of any type whose first word is first: the step (STEP_BEGIN, STEP_END,
 * GPU_STEP), the device's busy ns (DEVICE), the bytes (COLL). */
static bool R(struct ts_agg *g, struct ts_step_sum *s, uint16_t type, uint16_t kind, uint64_t t,
	      uint64_t dur, uint64_t first)
{
	struct ts_rec rec = { .type = type, .kind = kind, .t_ns = t, .dur_ns = dur,
			      .raw = { first } };

	return ts_agg_add(g, &rec, s);
}

/* One step encoded as rank 1 of 4's batch and read back by protobuf-c. */
static Trainscope__V1__Batch *roundtrip(const struct ts_step_sum *s)
{
	struct ts_ident id = { .ns = "team", .job = "llm", .rank = 1, .world_size = 4 };
	struct ts_batch_hdr h = { .id = &id, .seq = 1 };
	uint8_t *buf;
	size_t len;

	assert_int_equal(ts_batch_encode(&h, s, 1, &buf, &len), 0);
	Trainscope__V1__Batch *b = trainscope__v1__batch__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(b);
	return b;
}

static void test_fold_steps(void **state)
{
	struct ts_agg a;
	struct ts_step_sum s;
	const int64_t off = 1000;

	(void)state;
	ts_agg_init(&a, off);
	/* dataloader before step_begin belongs to the step; step 0 */
	assert_false(R(&a, &s, TS_REC_REGION, TRAINSCOPE_REGION_DATALOADER, 100, 20, 0));
	assert_false(R(&a, &s, TS_REC_STEP_BEGIN, 0, 110, 0, 0));
	assert_false(R(&a, &s, TS_REC_REGION, TRAINSCOPE_REGION_COMPUTE, 130, 50, 0));
	assert_false(R(&a, &s, TS_REC_DEVICE, TRAINSCOPE_REGION_COMPUTE, 180, 0, 40));
	assert_false(R(&a, &s, TS_REC_COLL, TRAINSCOPE_COLL_ALL_REDUCE, 180, 10, 4096));
	assert_false(R(&a, &s, TS_REC_COLL, TRAINSCOPE_COLL_ALL_REDUCE, 190, 6, 8000));
	assert_false(R(&a, &s, TS_REC_COLL, TRAINSCOPE_COLL_ALL_GATHER, 196, 4, 1 << 20));
	assert_true(R(&a, &s, TS_REC_STEP_END, 0, 200, 0, 0));
	assert_int_equal(s.step, 0);
	assert_int_equal(s.start_ns, 100 + off);
	assert_int_equal(s.end_ns, 200 + off);
	assert_int_equal(s.dataloader_ns, 20);
	assert_int_equal(s.compute_ns, 40); /* device time wins over wall time */
	assert_int_equal(s.compute_wall_ns, 50);
	assert_int_equal(s.collective_ns, 20);
	assert_int_equal(s.ncoll, 2); /* 4096 and 8000 share the 2^12 bucket */
	assert_int_equal(s.coll[0].count, 2);
	assert_int_equal(s.coll[0].bucket, 12);
	assert_int_equal(s.coll[1].bucket, 20);
	/* step 1 without begin or device time: starts where step 0 ended, wall compute */
	assert_false(R(&a, &s, TS_REC_REGION, TRAINSCOPE_REGION_COMPUTE, 260, 30, 0));
	assert_true(R(&a, &s, TS_REC_STEP_END, 0, 300, 0, 1));
	assert_int_equal(s.step, 1);
	assert_int_equal(s.start_ns, 260 + off);
	assert_int_equal(s.compute_ns, 30);
	assert_true(R(&a, &s, TS_REC_STEP_END, 0, 350, 0, 2));
	assert_int_equal(s.start_ns, 300 + off);
}

/* Collectives a graph replay ran: counted and sized per call, untimed, and kept out of
 * the communicators' transfer times (nothing timed them). */
static void test_graph_colls(void **state)
{
	struct ts_agg a;
	struct ts_step_sum s;
	struct ts_rec r = { .type = TS_REC_GRAPH_COLL, .kind = TRAINSCOPE_COLL_ALL_REDUCE,
			    .nranks = 8,
			    .graph_coll = { .bytes = 5 * 4096, .step_tag = 1, .comm = 0xc1,
					    .count = 5 } };

	(void)state;
	ts_agg_init(&a, 0);
	assert_false(R(&a, &s, TS_REC_STEP_BEGIN, 0, 10, 0, 0));
	assert_false(ts_agg_add(&a, &r, &s));
	assert_false(R(&a, &s, TS_REC_COLL, TRAINSCOPE_COLL_ALL_REDUCE, 20, 10, 4096));
	assert_true(R(&a, &s, TS_REC_STEP_END, 0, 100, 0, 0));
	assert_int_equal(s.ncoll, 1);
	assert_int_equal(s.coll[0].bucket, 12);
	assert_int_equal(s.coll[0].count, 6);
	assert_int_equal(s.coll[0].bytes, 6 * 4096);
	assert_int_equal(s.coll[0].time_ns, 10);
	assert_int_equal(s.collective_ns, 10);
	assert_int_equal(s.ncomm, 1); /* the eager one's (no communicator: 0) */
	assert_int_equal(s.comm[0].id, 0);
}

/* Network sends per peer, said by the library's poller, land in the open step; past
 * TS_AGG_MAX_PEER pairs a step counts the sends it could not place. */
static void test_peers(void **state)
{
	struct ts_agg a;
	struct ts_step_sum s;

	(void)state;
	ts_agg_init(&a, 0);
	assert_false(R(&a, &s, TS_REC_STEP_BEGIN, 0, 10, 0, 0));
	for (uint32_t p = 0; p < TS_AGG_MAX_PEER + 2; p++) {
		struct ts_rec r = { .type = TS_REC_PEER, .peer_rank = p, .dur_ns = 100000,
				    .peer = { .bytes = 1 << 20, .comm = 0xc1, .sends = 2 } };
		assert_false(ts_agg_add(&a, &r, &s));
		if (p == 0) /* a second record for the same peer adds up */
			assert_false(ts_agg_add(&a, &r, &s));
	}
	assert_true(R(&a, &s, TS_REC_STEP_END, 0, 100, 0, 0));
	assert_int_equal(s.npeer, TS_AGG_MAX_PEER);
	assert_int_equal(s.peer[0].count, 4);
	assert_int_equal(s.peer[0].bytes, 2 << 20);
	assert_int_equal(s.peer[0].time_ns, 200000);
	assert_int_equal(s.peer_overflow, 4);

	Trainscope__V1__Batch *b = roundtrip(&s);
	Trainscope__V1__Step *st = b->records[0]->step;
	assert_int_equal(st->n_peers, TS_AGG_MAX_PEER);
	assert_int_equal(st->peers[1]->peer, 1);
	assert_int_equal(st->peers[1]->comm_hash, 0xc1);
	assert_int_equal(st->peers[1]->bytes, 1 << 20);
	assert_int_equal(st->peers_dropped, 4);
	trainscope__v1__batch__free_unpacked(b, NULL);
}

/* Per communicator: API-timed collectives have none (0); NCCL's carry its hash; past
 * TS_AGG_MAX_COMM communicators a step counts the ops it could not place. */
static void test_per_comm(void **state)
{
	struct ts_agg a;
	struct ts_step_sum s;

	(void)state;
	ts_agg_init(&a, 0);
	assert_false(R(&a, &s, TS_REC_STEP_BEGIN, 0, 10, 0, 0));
	assert_false(R(&a, &s, TS_REC_COLL, TRAINSCOPE_COLL_ALL_REDUCE, 20, 10, 4096));
	for (uint64_t c = 1; c <= TS_AGG_MAX_COMM + 2; c++) {
		struct ts_rec r = { .type = TS_REC_COLL, .kind = TRAINSCOPE_COLL_SEND_RECV,
				    .t_ns = 30, .dur_ns = 5, .nranks = 4,
				    .coll = { .bytes = 100, .step_tag = 0, .comm = 0xc0 + c,
					      .seq = 1 } };
		assert_false(ts_agg_add(&a, &r, &s));
	}
	assert_true(R(&a, &s, TS_REC_STEP_END, 0, 100, 0, 0));
	assert_int_equal(s.ncomm, TS_AGG_MAX_COMM);
	assert_int_equal(s.comm[0].id, 0);
	assert_int_equal(s.comm[0].time_ns, 10);
	assert_int_equal(s.comm[1].id, 0xc1);
	assert_int_equal(s.comm[1].p2p, 1);
	assert_int_equal(s.comm[1].nranks, 4);
	assert_int_equal(s.comm_overflow, 3);

	Trainscope__V1__Batch *b = roundtrip(&s);
	Trainscope__V1__Step *st = b->records[0]->step;
	assert_int_equal(st->n_comms, TS_AGG_MAX_COMM);
	assert_int_equal(st->comms[1]->comm_hash, 0xc1);
	assert_int_equal(st->comms[1]->p2p_count, 1);
	assert_int_equal(st->comms[1]->bytes, 100);
	assert_int_equal(st->comm_ops_dropped, 3);
	trainscope__v1__batch__free_unpacked(b, NULL);
}

static void test_busbw_factors(void **state)
{
	(void)state;
	assert_true(ts_busbw_factor(TRAINSCOPE_COLL_ALL_REDUCE, 8) == 2.0 * 7 / 8);
	assert_true(ts_busbw_factor(TRAINSCOPE_COLL_ALL_GATHER, 4) == 0.75);
	assert_true(ts_busbw_factor(TRAINSCOPE_COLL_BROADCAST, 4) == 1.0);
	assert_true(ts_busbw_factor(TRAINSCOPE_COLL_ALL_REDUCE, 1) == 1.0);
}

static void test_batch_roundtrip(void **state)
{
	struct ts_ident id = { .ns = "team", .job = "llm", .pod = "p-3", .node = "n1",
			       .rank = 3, .world_size = 8, .pid = 42, .dev_index = 3 };
	struct ts_step_sum steps[2] = { { .step = 7, .start_ns = 10, .end_ns = 20,
					  .compute_ns = 5, .ncoll = 1,
					  .coll = { { .op = 1, .bucket = 10, .count = 1, .bytes = 1024,
						      .time_ns = 1000 } } },
					{ .step = 8, .start_ns = 20, .end_ns = 31 } };
	struct ts_batch_hdr h = { .id = &id, .producer_id = 0xabcdef, .seq = 5, .dropped_records = 17,
				  .hello = true, .start_real_ns = 123, .final = true };
	Trainscope__V1__Batch *b;
	uint8_t *buf;
	size_t len;

	(void)state;
	assert_int_equal(ts_batch_encode(&h, steps, 2, &buf, &len), 0);
	b = trainscope__v1__batch__unpack(NULL, len, buf);
	assert_non_null(b);
	assert_string_equal(b->id->job, "llm");
	assert_int_equal(b->id->rank, 3);
	assert_int_equal(b->producer_id, 0xabcdef);
	assert_int_equal(b->seq, 5);
	assert_int_equal(b->dropped_records, 17);
	assert_true(b->final);
	assert_int_equal(b->n_records, 3);
	assert_int_equal(b->records[0]->kind_case, TRAINSCOPE__V1__RECORD__KIND_HELLO);
	assert_int_equal(b->records[1]->step->step, 7);
	assert_int_equal(b->records[1]->step->n_colls, 1);
	/* 1024 B in 1 us = 1.024 GB/s algbw, x 2*7/8 for all-reduce on 8 ranks */
	assert_true(b->records[1]->step->colls[0]->bus_bw_gbps > 1.79 &&
		    b->records[1]->step->colls[0]->bus_bw_gbps < 1.8);
	assert_int_equal(b->records[2]->step->end_ns, 31);
	trainscope__v1__batch__free_unpacked(b, NULL);
	free(buf);
}

/* Idle: every record added is in a step sum returned already (the relay reserves the next
 * batch's seq while it is not). */
static void test_idle(void **state)
{
	struct ts_agg a;
	struct ts_step_sum s;

	(void)state;
	ts_agg_init(&a, 0);
	assert_true(ts_agg_idle(&a));
	assert_false(R(&a, &s, TS_REC_STEP_BEGIN, 0, 100, 0, 0));
	assert_false(ts_agg_idle(&a));
	assert_true(R(&a, &s, TS_REC_STEP_END, 0, 200, 0, 0));
	assert_true(ts_agg_idle(&a));
	/* with device records: a closed step is held for its GPU_STEP */
	assert_false(R(&a, &s, TS_REC_GPU_STEP, 0, 210, 0, 0)); /* late: for no held step */
	assert_true(ts_agg_idle(&a));
	assert_false(R(&a, &s, TS_REC_STEP_END, 0, 300, 0, 1));
	assert_false(ts_agg_idle(&a));
	assert_false(R(&a, &s, TS_REC_COLL, TRAINSCOPE_COLL_ALL_REDUCE, 310, 5, 4096));
	assert_true(R(&a, &s, TS_REC_GPU_STEP, 0, 320, 0, 1));
	assert_false(ts_agg_idle(&a)); /* the collective is step 2's */
	assert_false(R(&a, &s, TS_REC_STEP_END, 0, 400, 0, 2));
	assert_true(ts_agg_flush(&a, &s));
	assert_true(ts_agg_idle(&a));
}

/* A fresh aggregator that has seen a device record, then steps 0 to n - 1 closed (each with
 * a compute region of region_ns, if any), all held for their GPU_STEP. */
static void held_steps(struct ts_agg *a, struct ts_step_sum *s, uint64_t n, uint64_t region_ns)
{
	ts_agg_init(a, 0);
	assert_false(R(a, s, TS_REC_GPU_STEP, 0, 10, 0, 99)); /* device records exist */
	for (uint64_t k = 0; k < n; k++) {
		assert_false(R(a, s, TS_REC_STEP_BEGIN, 0, 100 * k + 1, 0, k));
		if (region_ns)
			assert_false(R(a, s, TS_REC_REGION, TRAINSCOPE_REGION_COMPUTE, 100 * k + 2,
				       region_ns, 0));
		assert_false(R(a, s, TS_REC_STEP_END, 0, 100 * k + 90, 0, k));
	}
}

/* A host that runs ahead of its GPU (no sync in the loop): its GPU_STEP records come
 * steps after their STEP_END. Each step still gets its own device time, in order; past
 * TS_AGG_HOLD steps held the oldest goes without it, counted. */
static void test_host_runs_ahead(void **state)
{
	struct ts_rec gpu = { .type = TS_REC_GPU_STEP };
	struct ts_step_sum s;
	struct ts_agg a;

	(void)state;
	held_steps(&a, &s, 3, 0);
	for (uint64_t k = 0; k < 3; k++) {
		gpu.gpu_step.step = k, gpu.gpu_step.compute_ns = 1000 + k;
		assert_true(ts_agg_add(&a, &gpu, &s));
		assert_int_equal(s.step, k);
		assert_int_equal(s.compute_ns, 1000 + k);
		assert_true(s.have_device);
	}
	assert_true(ts_agg_idle(&a));
	for (uint64_t k = 3; k < 3 + TS_AGG_HOLD; k++)
		assert_false(R(&a, &s, TS_REC_STEP_END, 0, 100 * k + 90, 0, k));
	assert_true(R(&a, &s, TS_REC_STEP_END, 0, 100 * 11 + 90, 0, 3 + TS_AGG_HOLD));
	assert_int_equal(s.step, 3);
	assert_false(s.have_device);
	assert_int_equal(a.undeviced, 1);
	gpu.gpu_step.step = 4, gpu.gpu_step.compute_ns = 7;
	assert_true(ts_agg_add(&a, &gpu, &s));
	assert_int_equal(s.step, 4);
	assert_int_equal(s.compute_ns, 7);
	for (uint64_t k = 5; k <= 3 + TS_AGG_HOLD; k++) {
		assert_true(ts_agg_flush(&a, &s));
		assert_int_equal(s.step, k);
	}
	assert_false(ts_agg_flush(&a, &s));
	assert_true(ts_agg_idle(&a));
}

/* A step the device was not timed in (TRAINSCOPE_DEVICE_EVERY): its GPU_STEP says so, the
 * step keeps no compute (not its compute regions' wall time either) and the batch says
 * device_untimed; the timed step beside it is as before. */
static void test_device_untimed(void **state)
{
	struct ts_step_sum s;
	struct ts_agg a;

	(void)state;
	held_steps(&a, &s, 2, 50);
	struct ts_rec gpu = { .type = TS_REC_GPU_STEP, .gpu_step = { .step = 0, .compute_ns = 40 } };
	assert_true(ts_agg_add(&a, &gpu, &s));
	assert_int_equal(s.compute_ns, 40);
	assert_false(s.device_untimed);
	gpu = (struct ts_rec){ .type = TS_REC_GPU_STEP, .kind = TS_GPU_STEP_UNTIMED,
			       .gpu_step = { .step = 1, .comm_ns = 9 } };
	assert_true(ts_agg_add(&a, &gpu, &s));
	assert_int_equal(s.step, 1);
	assert_true(s.device_untimed);
	assert_int_equal(s.compute_ns, 0);
	assert_int_equal(s.compute_wall_ns, 50);
	assert_int_equal(s.comm_busy_ns, 9);
	Trainscope__V1__Batch *b = roundtrip(&s);
	assert_true(b->records[0]->step->device_untimed);
	assert_int_equal(b->records[0]->step->compute_ns, 0);
	trainscope__v1__batch__free_unpacked(b, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold_steps),
		cmocka_unit_test(test_device_untimed),
		cmocka_unit_test(test_host_runs_ahead),
		cmocka_unit_test(test_per_comm),
		cmocka_unit_test(test_busbw_factors),
		cmocka_unit_test(test_graph_colls),
		cmocka_unit_test(test_peers),
		cmocka_unit_test(test_batch_roundtrip),
		cmocka_unit_test(test_idle),
	};
	return cmocka_run_group_tests_name("relay aggregation", tests, NULL, NULL);
}
