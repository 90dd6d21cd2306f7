/* CUDA graphs: kernel nodes counted at instantiation, replays counted at launch.
 *
 * The table maps an executable graph to its kernel count: lock-free open addressing,
 * written at instantiation (a setup call, where the driver is asked about the graph's
 * nodes) and read at each launch. A handle the driver reuses after cuGraphExecDestroy
 * is simply written again by its next instantiation. */
#include "graph.h"
#include "gpu.h"
#include "real.h"

#include <stdlib.h>

#define GRAPHS 4096 /* executable graphs tracked at once */
#define MAX_DEPTH 8 /* child graphs inside child graphs */
#define NODE_KERNEL 0
#define NODE_GRAPH 4

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;

_Atomic int ts_captures;

static struct {
	_Atomic uint64_t key;
	_Atomic uint32_t kernels;
} table[GRAPHS];

static struct {
	CUresult (*nodes)(CUgraph, CUgraphNode *, size_t *);
	CUresult (*type)(CUgraphNode, int *);
	CUresult (*child)(CUgraphNode, CUgraph *);
} drv;
static _Atomic int drv_state; /* 0 unresolved, 1 ready, -1 missing */

void ts_graph_capture(bool begin)
{
	if (begin) {
		atomic_fetch_add(&ts_captures, 1);
		return;
	}
	int n = atomic_load(&ts_captures);
	while (n > 0 && !atomic_compare_exchange_weak(&ts_captures, &n, n - 1))
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
			ts_gpu_graph_note(TS_GRAPH_INSTANTIATED);
			return;
		}
	}
	ts_gpu_graph_note(TS_GRAPH_UNCOUNTED); /* the table is full */
}

uint32_t ts_graph_kernels(uint64_t exec)
{
	for (uint32_t i = 0, h = slot_of(exec); i < GRAPHS; i++) {
		uint32_t j = (h + i) & (GRAPHS - 1);
		uint64_t cur = atomic_load_explicit(&table[j].key, memory_order_acquire);
		if (cur == exec)
			return atomic_load_explicit(&table[j].kernels, memory_order_relaxed);
		if (!cur)
			break;
	}
	ts_gpu_graph_note(TS_GRAPH_UNKNOWN_LAUNCH);
	return 0;
}
