// SPDX-License-Identifier: Apache-2.0
#include "coll.h"
#include "comms.h"
#include "nccl.h"

/* Per-thread state of an open group. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	CUstream stream;
	unsigned sk;
	struct ts_op_meta meta;
	uint32_t ops;
} group;

static _Atomic uint64_t coll_seq;

uint64_t ts_coll_comm_hash(void *comm)
{
	uint64_t x = (uint64_t)(uintptr_t)comm;

	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

/* The op's communicator, size and number, as every member numbers it. */
static void coll_meta(struct ts_coll_call *c, unsigned op, uint64_t count, unsigned elem,
		      void *comm)
{
	struct ts_comm *cm = ts_comm_find(comm, ts_coll_comm_hash(comm), 0);
	uint64_t id = cm ? atomic_load_explicit(&cm->id, memory_order_acquire) : 0;
	uint32_t n = cm ? atomic_load_explicit(&cm->nranks, memory_order_relaxed) : 0;

	if (!n && (n = c->lib->ranks(comm)) && cm) /* a communicator found on first use */
		atomic_store_explicit(&cm->nranks, n, memory_order_relaxed);
	c->meta = (struct ts_op_meta){ .kind = TS_T_COLL, .op = (uint16_t)op, .nranks = n,
				       .comm = id ? id : ts_coll_comm_hash(comm),
				       .seq = id ? atomic_fetch_add(&cm->seq, 1) + 1
						 : atomic_fetch_add(&coll_seq, 1) + 1 };
	c->meta.amount = elem ? ts_nccl_bytes(op, count, elem, n) : count;
}

void ts_coll_enter(struct ts_coll_call *c, const struct ts_coll_lib *lib, unsigned op,
		   uint64_t count, unsigned elem, void *comm, CUstream stream)
{
	c->outer = ts_tls.coll_depth == 0;
	c->slot = -1;
	c->lib = lib;
	ts_tls.coll_depth++;
	ts_tls.lib_depth++;
	if (!c->outer)
		return;
	c->t0 = ts_ticks();
	ts_count(TS_CNT_API, 1);
	if (unlikely(atomic_load_explicit(&ts_lib.captures, memory_order_relaxed) > 0) &&
	    ts_gpu_captured(stream, lib->sk)) { /* it runs, and counts, with its graph */
		coll_meta(c, op, count, elem, comm);
		ts_graph_capture_coll(stream, lib->sk, &c->meta);
		return;
	}
	ts_count(TS_CNT_COLLS, 1);
	if (ts_gpu_plugin_active())
		return;
	c->stream = stream;
	if (lib->unseen_launches)
		(void)ts_gpu_launch(stream, lib->sk, false, 1); /* lib_depth: never sampled */
	coll_meta(c, op, count, elem, comm);
	if (ts_tls.group_depth) {
		if (!group.ops++) {
			group.stream = stream;
			group.sk = lib->sk;
			group.meta = c->meta;
		} else {
			group.meta.amount += c->meta.amount;
		}
		return;
	}
	c->slot = ts_gpu_timed_begin(stream, lib->sk);
}

void ts_coll_leave(struct ts_coll_call *c)
{
	ts_tls.coll_depth--;
	ts_tls.lib_depth--;
	if (!c->outer)
		return;
	if (c->slot >= 0)
		ts_gpu_timed_end(c->slot, c->stream, c->lib->sk, &c->meta);
	ts_count(TS_CNT_TICKS, ts_ticks() - c->t0);
}

void ts_coll_group_start(void)
{
	if (ts_tls.coll_depth == 0 && ts_tls.group_depth++ == 0)
		group.ops = 0;
}

int ts_coll_group_end_enter(bool *outer)
{
	int slot = -1;

	*outer = ts_tls.coll_depth == 0 && ts_tls.group_depth > 0 && --ts_tls.group_depth == 0;
	if (*outer && group.ops && !ts_gpu_plugin_active())
		slot = ts_gpu_timed_begin(group.stream, group.sk);
	ts_tls.coll_depth++; /* the group's kernels launch here */
	return slot;
}

void ts_coll_group_end_leave(int slot, bool outer)
{
	ts_tls.coll_depth--;
	if (slot >= 0)
		ts_gpu_timed_end(slot, group.stream, group.sk, &group.meta);
	if (outer)
		group.ops = 0;
}
