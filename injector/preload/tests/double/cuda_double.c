// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of the CUDA driver (libcuda.so.1): see double.h. */
#include "double.h"
#include "cudefs.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NSTREAM 64
#define NEVENT 8192

struct stream {
	uintptr_t key;
	uint64_t clock_ns, done_ns, launches, records;
	int capturing, stalled;
	uint32_t captured; /* kernels launched into the capture under way */
	uint64_t graph, capture_id; /* the capture's graph (made at its begin), and its id */
};

/* A graph: `kernels` kernel nodes, `copies` memcpy nodes, and a child graph node when
 * child >= 0. An executable graph's handle is its graph's plus EXEC. */
#define NGRAPH 64
#define EXEC 0x10000u
#define NODE_SHIFT 16
static struct graph {
	uint32_t kernels, copies;
	int child;
} graphs[NGRAPH];
static int ngraphs;

struct event {
	uintptr_t stream;
	uint64_t at_ns;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct stream streams[NSTREAM];
static struct event events[NEVENT];
static struct tsd_stats st;
static const uint64_t kernel_ns = 1000000;
static uint64_t next_ptr = 0x7f0000000000ull;
static char context; /* the one context: current in every thread */

/* NULL means the legacy default stream, or the per-thread one for _ptsz entry points. */
static struct stream *stream_of(CUstream s, int ptsz)
{
	uintptr_t key = s ? (uintptr_t)s : (ptsz ? 2 : 1);

	for (int i = 0; i < NSTREAM; i++) {
		if (streams[i].key == key)
			return &streams[i];
		if (!streams[i].key) {
			streams[i].key = key;
			return &streams[i];
		}
	}
	abort(); /* a test that uses more streams than the double knows */
}

void tsd_set_stalled(void *s, int on)
{
	pthread_mutex_lock(&mu);
	struct stream *x = stream_of(s, 0);
	x->stalled = on;
	x->done_ns = x->clock_ns;
	pthread_mutex_unlock(&mu);
}

uint64_t tsd_stream_launches(void *s)
{
	pthread_mutex_lock(&mu);
	uint64_t n = stream_of(s, 0)->launches;
	pthread_mutex_unlock(&mu);
	return n;
}

uint64_t tsd_stream_records(void *s)
{
	pthread_mutex_lock(&mu);
	uint64_t n = stream_of(s, 0)->records;
	pthread_mutex_unlock(&mu);
	return n;
}

void tsd_get_stats(struct tsd_stats *out)
{
	pthread_mutex_lock(&mu);
	*out = st;
	pthread_mutex_unlock(&mu);
}

int tsd_probe(void)
{
	return 2;
}

/* n kernels on the stream: run, or recorded into the capture under way. */
static void run_kernels(struct stream *x, uint32_t n)
{
	x->launches += n;
	if (x->capturing) {
		x->captured += n;
		return;
	}
	x->clock_ns += n * kernel_ns;
	if (!x->stalled)
		x->done_ns = x->clock_ns;
	st.launches += n;
}

static CUresult launch(CUstream s, int ptsz)
{
	pthread_mutex_lock(&mu);
	run_kernels(stream_of(s, ptsz), 1);
	pthread_mutex_unlock(&mu);
	return TS_CUDA_SUCCESS;
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				   unsigned bx, unsigned by, unsigned bz, unsigned shm,
				   CUstream s, void **p)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)p;
	return launch(s, 0);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
					unsigned bx, unsigned by, unsigned bz, unsigned shm,
					CUstream s, void **p)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)p;
	return launch(s, 1);
}

static CUresult host_func(CUstream s, int ptsz, void (*fn)(void *), void *data)
{
	pthread_mutex_lock(&mu);
	stream_of(s, ptsz);
	st.host_funcs++;
	pthread_mutex_unlock(&mu);
	fn(data);
	return TS_CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream s, void (*fn)(void *), void *data)
{
	return host_func(s, 0, fn, data);
}

CUresult cuLaunchHostFunc_ptsz(CUstream s, void (*fn)(void *), void *data)
{
	return host_func(s, 1, fn, data);
}

/* ---- graphs ---------------------------------------------------------------------- */

void *tsd_graph_new(uint32_t kernels, uint32_t copies, void *child)
{
	pthread_mutex_lock(&mu);
	if (ngraphs == NGRAPH)
		abort();
	int g = ngraphs++;
	graphs[g] = (struct graph){ kernels, copies, child ? (int)(uintptr_t)child - 1 : -1 };
	pthread_mutex_unlock(&mu);
	return (void *)(uintptr_t)(g + 1);
}

static struct graph *graph_of(uint64_t h)
{
	return h >= 1 && h <= (uint64_t)ngraphs ? &graphs[h - 1] : NULL;
}

static uint32_t graph_kernels(const struct graph *g)
{
	return g->kernels + (g->child >= 0 ? graph_kernels(&graphs[g->child]) : 0);
}

CUresult cuGraphGetNodes(uint64_t graph, uint64_t *nodes, size_t *n)
{
	struct graph *g = graph_of(graph);

	if (!g || !n)
		return 1;
	size_t total = g->kernels + g->copies + (g->child >= 0);
	for (size_t i = 0; nodes && i < total && i < *n; i++)
		nodes[i] = graph << NODE_SHIFT | i;
	*n = total;
	return TS_CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(uint64_t node, int *type)
{
	struct graph *g = graph_of(node >> NODE_SHIFT);
	uint64_t i = node & ((1u << NODE_SHIFT) - 1);

	if (!g)
		return 400;
	*type = i < g->kernels ? 0 : i < g->kernels + g->copies ? 1 : 4;
	return TS_CUDA_SUCCESS;
}

CUresult cuGraphChildGraphNodeGetGraph(uint64_t node, uint64_t *child)
{
	struct graph *g = graph_of(node >> NODE_SHIFT);

	if (!g || g->child < 0)
		return 400;
	*child = (uint64_t)g->child + 1;
	return TS_CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(uint64_t *exec, uint64_t graph, unsigned long long flags)
{
	(void)flags;
	if (!graph_of(graph) || !exec)
		return 400;
	*exec = graph + EXEC;
	return TS_CUDA_SUCCESS;
}

static CUresult graph_launch(uint64_t exec, CUstream s, int ptsz)
{
	struct graph *g = exec > EXEC ? graph_of(exec - EXEC) : NULL;

	if (!g)
		return 400;
	pthread_mutex_lock(&mu);
	run_kernels(stream_of(s, ptsz), graph_kernels(g));
	pthread_mutex_unlock(&mu);
	return TS_CUDA_SUCCESS;
}

CUresult cuGraphLaunch(uint64_t exec, CUstream s)
{
	return graph_launch(exec, s, 0);
}

CUresult cuGraphLaunch_ptsz(uint64_t exec, CUstream s)
{
	return graph_launch(exec, s, 1);
}

CUresult cuStreamBeginCapture_v2(CUstream s, int mode)
{
	static uint64_t ids;
	uint64_t graph = (uint64_t)(uintptr_t)tsd_graph_new(0, 0, NULL);

	(void)mode;
	pthread_mutex_lock(&mu);
	struct stream *x = stream_of(s, 0);
	x->capturing = 1;
	x->captured = 0;
	x->graph = graph;
	x->capture_id = ++ids;
	pthread_mutex_unlock(&mu);
	return TS_CUDA_SUCCESS;
}

/* The graph holds the kernels launched into the stream while it captured. */
CUresult cuStreamEndCapture(CUstream s, uint64_t *graph)
{
	pthread_mutex_lock(&mu);
	struct stream *x = stream_of(s, 0);
	struct graph *g = graph_of(x->graph);
	if (g)
		g->kernels = x->captured;
	*graph = x->graph;
	x->capturing = 0;
	x->graph = 0;
	pthread_mutex_unlock(&mu);
	return *graph ? TS_CUDA_SUCCESS : 900; /* CUDA_ERROR_STREAM_CAPTURE_UNMATCHED */
}

/* Status, capture id and graph; no dependencies are listed. */
CUresult cuStreamGetCaptureInfo_v2(CUstream s, int *status, uint64_t *id, uint64_t *graph,
				   const void **deps, size_t *ndeps)
{
	pthread_mutex_lock(&mu);
	struct stream *x = stream_of(s, 0);
	if (status)
		*status = x->capturing;
	if (id)
		*id = x->capturing ? x->capture_id : 0;
	if (graph)
		*graph = x->capturing ? x->graph : 0;
	pthread_mutex_unlock(&mu);
	if (deps)
		*deps = NULL;
	if (ndeps)
		*ndeps = 0;
	return TS_CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			unsigned by, unsigned bz, unsigned shm, CUstream s, void **p, void **x)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)p,
		(void)x;
	return launch(s, 0);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			     unsigned by, unsigned bz, unsigned shm, CUstream s, void **p,
			     void **x)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)p,
		(void)x;
	return launch(s, 1);
}

CUresult cuLaunchKernelEx(const ts_launch_config *c, CUfunction f, void **p, void **x)
{
	(void)f, (void)p, (void)x;
	return c ? launch(c->stream, 0) : 1 /* CUDA_ERROR_INVALID_VALUE */;
}

static CUresult alloc(CUdeviceptr *p, size_t n)
{
	if (n > (1ull << 40))
		return TS_CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	*p = next_ptr;
	next_ptr += (n + 0xfff) & ~0xfffull;
	st.allocs++;
	pthread_mutex_unlock(&mu);
	return TS_CUDA_SUCCESS;
}

static CUresult release(void)
{
	pthread_mutex_lock(&mu);
	st.frees++;
	pthread_mutex_unlock(&mu);
	return TS_CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	return alloc(p, n);
}

/* The CUDA 2.x ABI: a 32-bit pointer. cuGetProcAddress hands it out below version 3020. */
CUresult cuMemAlloc(unsigned *p, unsigned n)
{
	CUdeviceptr d;
	CUresult r = alloc(&d, n);

	*p = (unsigned)d;
	return r;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	(void)p;
	return release();
}

CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
	(void)s;
	return alloc(p, n);
}

CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	(void)p, (void)s;
	return release();
}

CUresult cuMemCreate(CUmemHandle *h, size_t n, const void *prop, unsigned long long flags)
{
	(void)prop, (void)flags;
	return alloc(h, n);
}

CUresult cuMemRelease(CUmemHandle h)
{
	(void)h;
	return release();
}

CUresult cuCtxGetCurrent(CUcontext *c)
{
	*c = (CUcontext)&context;
	return TS_CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c)
{
	return c == (CUcontext)&context ? TS_CUDA_SUCCESS : 201 /* INVALID_CONTEXT */;
}

CUresult cuEventCreate(CUevent *e, unsigned flags)
{
	(void)flags;
	pthread_mutex_lock(&mu);
	uint64_t i = st.events_created;
	if (i < NEVENT)
		st.events_created++;
	pthread_mutex_unlock(&mu);
	if (i >= NEVENT)
		return TS_CUDA_ERROR_OUT_OF_MEMORY;
	*e = (CUevent)(uintptr_t)(i + 1);
	return TS_CUDA_SUCCESS;
}

static struct event *event_of(CUevent e)
{
	uintptr_t i = (uintptr_t)e;

	return i >= 1 && i <= NEVENT ? &events[i - 1] : NULL;
}

CUresult cuEventRecord(CUevent e, CUstream s)
{
	struct event *ev = event_of(e);

	if (!ev)
		return 400; /* INVALID_HANDLE */
	pthread_mutex_lock(&mu);
	struct stream *x = stream_of(s, 0);
	ev->stream = x->key;
	ev->at_ns = x->clock_ns;
	x->records++;
	st.event_records++;
	if (x->capturing)
		st.records_while_capturing++;
	pthread_mutex_unlock(&mu);
	return TS_CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent e)
{
	struct event *ev = event_of(e);
	CUresult r = TS_CUDA_SUCCESS;

	if (!ev)
		return 400;
	pthread_mutex_lock(&mu);
	struct stream *x = stream_of((CUstream)ev->stream, 0);
	if (x->stalled && ev->at_ns > x->done_ns)
		r = TS_CUDA_ERROR_NOT_READY;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	struct event *x = event_of(a), *y = event_of(b);

	if (!x || !y)
		return 400;
	pthread_mutex_lock(&mu);
	*ms = (float)((double)(y->at_ns - x->at_ns) / 1e6);
	pthread_mutex_unlock(&mu);
	return TS_CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream s, int *status)
{
	pthread_mutex_lock(&mu);
	*status = stream_of(s, 0)->capturing;
	pthread_mutex_unlock(&mu);
	return TS_CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
	(void)s, (void)e, (void)flags;
	return TS_CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	return TS_CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
	return TS_CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e)
{
	(void)e;
	return TS_CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags);
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *status);

/* What cuGetProcAddress knows: the base name, its per-thread-stream variant, and the
 * variant for versions below min_ver (the old ABI). */
static const struct {
	const char *name;
	void *fn, *ptsz, *old;
	int min_ver;
} procs[] = {
	{ "cuLaunchKernel", (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz, NULL, 0 },
	{ "cuLaunchKernelEx", (void *)cuLaunchKernelEx, NULL, NULL, 0 },
	{ "cuMemAlloc", (void *)cuMemAlloc_v2, NULL, (void *)cuMemAlloc, 3020 },
	{ "cuMemFree", (void *)cuMemFree_v2, NULL, NULL, 3020 },
	{ "cuMemCreate", (void *)cuMemCreate, NULL, NULL, 0 },
	{ "cuMemRelease", (void *)cuMemRelease, NULL, NULL, 0 },
	{ "cuEventQuery", (void *)cuEventQuery, NULL, NULL, 0 },
	{ "cuLaunchCooperativeKernel", (void *)cuLaunchCooperativeKernel,
	  (void *)cuLaunchCooperativeKernel_ptsz, NULL, 0 },
	{ "cuLaunchHostFunc", (void *)cuLaunchHostFunc, (void *)cuLaunchHostFunc_ptsz, NULL, 0 },
	{ "cuGraphInstantiate", (void *)cuGraphInstantiateWithFlags, NULL, NULL, 0 },
	{ "cuGraphLaunch", (void *)cuGraphLaunch, (void *)cuGraphLaunch_ptsz, NULL, 0 },
	{ "cuStreamBeginCapture", (void *)cuStreamBeginCapture_v2, NULL, NULL, 0 },
	{ "cuStreamEndCapture", (void *)cuStreamEndCapture, NULL, NULL, 0 },
	{ "cuGetProcAddress", (void *)cuGetProcAddress_v2, NULL, (void *)cuGetProcAddress, 12000 },
};

static void *proc(const char *sym, int ver, uint64_t flags)
{
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (strcmp(sym, procs[i].name))
			continue;
		if (ver < procs[i].min_ver)
			return procs[i].old;
		if ((flags & TS_PROC_PER_THREAD_DEFAULT_STREAM) && procs[i].ptsz)
			return procs[i].ptsz;
		return procs[i].fn;
	}
	return NULL;
}

CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags)
{
	*pfn = proc(sym, ver, flags);
	return *pfn ? TS_CUDA_SUCCESS : TS_CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *status)
{
	*pfn = proc(sym, ver, flags);
	if (status)
		*status = *pfn ? 0 : 1; /* CU_GET_PROC_ADDRESS_SUCCESS, _SYMBOL_NOT_FOUND */
	return *pfn ? TS_CUDA_SUCCESS : TS_CUDA_ERROR_NOT_FOUND;
}
