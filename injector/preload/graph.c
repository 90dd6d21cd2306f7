// SPDX-License-Identifier: Apache-2.0
/* CUDA graphs: kernel nodes counted at instantiation, replays counted at launch.
 *
 * The table maps an executable graph to its kernel count and the collectives captured
 * into it: lock-free open addressing, written at instantiation (a setup call, where the
 * driver is asked about the graph's nodes) and read at each launch. A handle the driver
 * reuses after cuGraphExecDestroy is simply written again by its next instantiation.
 *
 * A collective called on a stream being captured runs when the graph does: it is kept,
 * by the graph the driver is capturing into, in a small pool (setup calls only, under a
 * spin lock no launch takes), and copied to the executable graph at instantiation. */
#include "graph.h"
#include "gpu.h"
#include "real.h"

#include <stdlib.h>

#define GRAPHS 4096 /* executable graphs tracked at once */
#define CAPS 4096   /* distinct captured collectives (graph, op, communicator, size) */
#define MAX_DEPTH 8 /* child graphs inside child graphs */
#define NODE_KERNEL 0
#define NODE_GRAPH 4

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;

struct gcoll { /* collectives of one kind captured into a graph */
	uint64_t comm, bytes; /* bytes of one call */
	uint32_t nranks, count;
	uint16_t op;
};

static struct {
	_Atomic uint64_t key;
	_Atomic uint32_t kernels;
	_Atomic uint32_t ncolls;
	_Atomic(struct gcoll *) colls;
} table[GRAPHS];

static struct {
	atomic_flag lock;
	struct {
		uint64_t graph, capture; /* graph 0: free */
		struct gcoll c;
	} e[CAPS];
} cap = { .lock = ATOMIC_FLAG_INIT };
static _Atomic uint64_t coll_uncounted; /* captured collectives not kept */
static _Atomic uint64_t coll_replayed;  /* collectives run by replays */

static struct {
	CUresult (*nodes)(CUgraph, CUgraphNode *, size_t *);
	CUresult (*type)(CUgraphNode, int *);
	CUresult (*child)(CUgraphNode, CUgraph *);
	/* cuStreamGetCaptureInfo_v2: status, capture id, graph, dependencies, their count */
	CUresult (*info)(CUstream, int *, uint64_t *, CUgraph *, void *, size_t *);
} drv;
static _Atomic int drv_state; /* 0 unresolved, 1 ready, -1 missing */

void ts_graph_capture(bool begin)
{
	if (begin) {
		atomic_fetch_add(&ts_lib.captures, 1);
		return;
	}
	int n = atomic_load(&ts_lib.captures);
	while (n > 0 && !atomic_compare_exchange_weak(&ts_lib.captures, &n, n - 1))
		;
}

static bool drv_ready(void)
{
	int st = atomic_load(&drv_state);

	if (st)
		return st > 0;
	*(void **)&drv.nodes = ts_find_real("libcuda", "cuGraphGetNodes");
	*(void **)&drv.type = ts_find_real("libcuda", "cuGraphNodeGetType");
	*(void **)&drv.child = ts_find_real("libcuda", "cuGraphChildGraphNodeGetGraph");
	*(void **)&drv.info = ts_find_real("libcuda", "cuStreamGetCaptureInfo_v2");
	st = drv.nodes && drv.type && drv.child ? 1 : -1;
	atomic_store(&drv_state, st);
	return st > 0;
}

/* Kernel nodes of graph and of the graphs nested in it; -1 when the driver fails. */
static long count_kernels(CUgraph graph, int depth)
{
	size_t n = 0;
	long kernels = 0;
	CUgraphNode *nodes;

	if (depth > MAX_DEPTH || drv.nodes(graph, NULL, &n) != TS_CUDA_SUCCESS)
		return -1;
	if (!n)
		return 0;
	if (!(nodes = malloc(n * sizeof(*nodes))))
		return -1;
	if (drv.nodes(graph, nodes, &n) != TS_CUDA_SUCCESS)
		n = 0, kernels = -1;
	for (size_t i = 0; i < n && kernels >= 0; i++) {
		int type = -1;
		CUgraph sub = NULL;
		if (drv.type(nodes[i], &type) != TS_CUDA_SUCCESS)
			kernels = -1;
		else if (type == NODE_KERNEL)
			kernels++;
		else if (type == NODE_GRAPH) {
			long k = drv.child(nodes[i], &sub) == TS_CUDA_SUCCESS
					 ? count_kernels(sub, depth + 1) : -1;
			kernels = k < 0 ? -1 : kernels + k;
		}
	}
	free(nodes);
	return kernels;
}

static uint32_t slot_of(uint64_t key)
{
	key ^= key >> 31;
	key *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(key >> 40) & (GRAPHS - 1);
}

static void cap_lock(void)
{
	while (atomic_flag_test_and_set_explicit(&cap.lock, memory_order_acquire))
		;
}

static void cap_unlock(void)
{
	atomic_flag_clear_explicit(&cap.lock, memory_order_release);
}

static bool same_coll(const struct gcoll *c, const struct ts_op_meta *m)
{
	return c->op == m->op && c->comm == m->comm && c->bytes == m->amount;
}

void ts_graph_capture_coll(CUstream s, unsigned sk, const struct ts_op_meta *m)
{
	int status = 0, at = -1;
	uint64_t id = 0, g;
	CUgraph graph = NULL;

	if (sk == TS_SK_ACL || !drv_ready() || !drv.info ||
	    drv.info(s, &status, &id, &graph, NULL, NULL) != TS_CUDA_SUCCESS || status != 1 ||
	    !graph) {
		atomic_fetch_add(&coll_uncounted, 1);
		return;
	}
	g = (uint64_t)(uintptr_t)graph;
	cap_lock();
	for (int i = 0; i < CAPS; i++) {
		if (cap.e[i].graph == g && cap.e[i].capture != id)
			cap.e[i].graph = 0; /* a destroyed graph's: the driver reused its handle */
		if (cap.e[i].graph == g && same_coll(&cap.e[i].c, m))
			at = i;
		else if (!cap.e[i].graph && at < 0)
			at = i;
	}
	if (at >= 0 && !cap.e[at].graph) {
		cap.e[at].graph = g;
		cap.e[at].capture = id;
		cap.e[at].c = (struct gcoll){ .comm = m->comm, .bytes = m->amount,
					      .nranks = m->nranks, .op = m->op };
	}
	if (at >= 0)
		cap.e[at].c.count++;
	cap_unlock();
	if (at < 0)
		atomic_fetch_add(&coll_uncounted, 1); /* the pool is full */
}

/* A copy of the collectives captured into graph, for its executable graphs. */
static struct gcoll *graph_colls(uint64_t graph, uint32_t *n)
{
	struct gcoll *out = NULL;
	uint32_t k = 0;

	cap_lock();
	for (int i = 0; i < CAPS; i++)
		k += cap.e[i].graph == graph;
	if (k && (out = malloc(k * sizeof(*out)))) {
		k = 0;
		for (int i = 0; i < CAPS; i++)
			if (cap.e[i].graph == graph)
				out[k++] = cap.e[i].c;
	}
	cap_unlock();
	*n = out ? k : 0;
	return out;
}

static void set_colls(uint32_t j, uint64_t graph)
{
	uint32_t n = 0;
	struct gcoll *c = graph_colls(graph, &n);

	atomic_store(&table[j].ncolls, n);
	free(atomic_exchange(&table[j].colls, c)); /* the handle's earlier graph's */
}

void ts_graph_instantiated(uint64_t exec, uint64_t graph)
{
	long k = exec && graph && drv_ready() ? count_kernels((CUgraph)(uintptr_t)graph, 0) : -1;

	if (k < 0) {
		ts_gpu_graph_note(TS_GRAPH_UNCOUNTED);
		return;
	}
	for (uint32_t i = 0, h = slot_of(exec); i < GRAPHS; i++) {
		uint32_t j = (h + i) & (GRAPHS - 1);
		uint64_t cur = atomic_load(&table[j].key);
		if (cur == exec || (!cur && (atomic_compare_exchange_strong(&table[j].key, &cur, exec) ||
					     cur == exec))) {
			atomic_store(&table[j].kernels, (uint32_t)k);
			set_colls(j, graph);
			ts_gpu_graph_note(TS_GRAPH_INSTANTIATED);
			return;
		}
	}
	ts_gpu_graph_note(TS_GRAPH_UNCOUNTED); /* the table is full */
}

uint32_t ts_graph_kernels(uint64_t exec, int *slot)
{
	*slot = -1;
	for (uint32_t i = 0, h = slot_of(exec); i < GRAPHS; i++) {
		uint32_t j = (h + i) & (GRAPHS - 1);
		uint64_t cur = atomic_load_explicit(&table[j].key, memory_order_acquire);
		if (cur == exec) {
			*slot = (int)j;
			return atomic_load_explicit(&table[j].kernels, memory_order_relaxed);
		}
		if (!cur)
			break;
	}
	ts_gpu_graph_note(TS_GRAPH_UNKNOWN_LAUNCH);
	return 0;
}

void ts_graph_colls_replayed(int slot)
{
	const struct gcoll *c = atomic_load_explicit(&table[slot].colls, memory_order_acquire);
	uint32_t n = c ? atomic_load_explicit(&table[slot].ncolls, memory_order_relaxed) : 0;
	uint64_t step = atomic_load_explicit(&ts_lib.step, memory_order_relaxed);

	for (uint32_t i = 0; i < n; i++) {
		struct ts_rec r = { .type = TS_REC_GRAPH_COLL, .kind = c[i].op,
				    .nranks = c[i].nranks,
				    .graph_coll = { .bytes = c[i].bytes * c[i].count,
						    .step_tag = step + 1, .comm = c[i].comm,
						    .count = c[i].count } };
		ts_count(TS_CNT_COLLS, c[i].count);
		ts_ctr_add(&coll_replayed, c[i].count);
		ts_emit(&r);
	}
}

void ts_graph_coll_counts(uint64_t *replayed, uint64_t *uncounted)
{
	*replayed = atomic_load(&coll_replayed);
	*uncounted = atomic_load(&coll_uncounted);
}
