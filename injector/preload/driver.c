// SPDX-License-Identifier: Apache-2.0
/* Wrapped CUDA driver entry points.
 *
 * cuGetProcAddress can hand out several variants of one function (per-thread default
 * stream or legacy, one per ABI version), so each wrapped function has a few wrapper
 * slots, each bound to the real pointer it stands for. A variant beyond the slots is
 * handed out unwrapped and counted. */
#include "driver.h"
#include "cudefs.h"
#include "gpu.h"
#include "hash.h"
#include "real.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum drv_fn {
	F_GETPROC, F_GETPROC2, F_LAUNCH, F_LAUNCHEX, F_MALLOC, F_FREE, F_MALLOCA, F_FREEA,
	F_MEMCREATE, F_MEMRELEASE, F_WAITEVENT, F_STREAMSYNC, F_CTXSYNC, F_EVENTSYNC,
	F_COOP, F_HOSTFUNC, F_GRAPHINST, F_GRAPHLAUNCH, F_BEGINCAP, F_ENDCAP, F_N
};
#define NSLOT 4
#define EACH_SLOT(M) M(0) M(1) M(2) M(3)

struct drv_slot {
	_Atomic(void *) real;
	bool ptsz;
};
static struct drv_slot slots[F_N][NSLOT];
static _Atomic uint64_t unwrapped; /* variants beyond the slots */

typedef CUresult (*getproc_fn)(const char *, void **, int, uint64_t);
typedef CUresult (*getproc2_fn)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*launchex_fn)(const ts_launch_config *, CUfunction, void **, void **);
typedef CUresult (*malloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*malloca_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*freea_fn)(CUdeviceptr, CUstream);
typedef CUresult (*memcreate_fn)(CUmemHandle *, size_t, const void *, unsigned long long);
typedef CUresult (*memrelease_fn)(CUmemHandle);
typedef CUresult (*waitevent_fn)(CUstream, CUevent, unsigned);
typedef CUresult (*streamsync_fn)(CUstream);
typedef CUresult (*ctxsync_fn)(void);
typedef CUresult (*eventsync_fn)(CUevent);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			    unsigned, unsigned, CUstream, void **);
typedef CUresult (*hostfunc_fn)(CUstream, void (*)(void *), void *);
/* Every ABI version of cuGraphInstantiate* takes the executable graph's address and the
 * graph first; the rest (flags, parameters, or an error node and log buffer) are passed
 * through as they came, in integer registers. */
typedef CUresult (*graphinst_fn)(uint64_t *, uint64_t, uint64_t, uint64_t, uint64_t);
typedef CUresult (*graphlaunch_fn)(uint64_t, CUstream);
/* cuStreamBeginCapture (stream), _v2 (stream, mode) and ...ToGraph (six arguments). */
typedef CUresult (*begincap_fn)(CUstream, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
typedef CUresult (*endcap_fn)(CUstream, void *);

static void *wrap_fn(enum drv_fn fn, void *real, bool ptsz);

/* ---- memory ---------------------------------------------------------------------- */

#define MEM_SLOTS (1u << 15)
#define MEM_TOMB 1ull
static struct {
	_Atomic uint64_t key;
	uint64_t size;
} mem[MEM_SLOTS];
static _Atomic uint64_t mem_untracked;

static uint32_t mem_hash(uint64_t k)
{
	return (uint32_t)ts_mix64(k) & (MEM_SLOTS - 1);
}

void ts_mem_alloc(uint64_t key, uint64_t size)
{
	uint32_t h = mem_hash(key);

	for (uint32_t i = 0; i < 64; i++) {
		uint32_t j = (h + i) & (MEM_SLOTS - 1);
		uint64_t cur = atomic_load_explicit(&mem[j].key, memory_order_relaxed);
		if ((cur == 0 || cur == MEM_TOMB) &&
		    atomic_compare_exchange_strong(&mem[j].key, &cur, key)) {
			mem[j].size = size;
			uint64_t live = atomic_fetch_add(&ts_lib.mem_live, size) + size;
			uint64_t peak = atomic_load(&ts_lib.mem_peak);
			while (live > peak &&
			       !atomic_compare_exchange_weak(&ts_lib.mem_peak, &peak, live))
				;
			return;
		}
	}
	atomic_fetch_add_explicit(&mem_untracked, 1, memory_order_relaxed);
}

void ts_mem_free(uint64_t key)
{
	uint32_t h = mem_hash(key);

	for (uint32_t i = 0; i < 64; i++) {
		uint32_t j = (h + i) & (MEM_SLOTS - 1);
		uint64_t cur = atomic_load_explicit(&mem[j].key, memory_order_relaxed);
		if (cur == 0)
			return;
		if (cur == key && atomic_compare_exchange_strong(&mem[j].key, &cur, MEM_TOMB)) {
			atomic_fetch_sub(&ts_lib.mem_live, mem[j].size);
			return;
		}
	}
}

void ts_mem_failed(void)
{
	atomic_fetch_add_explicit(&ts_lib.alloc_failures, 1, memory_order_relaxed);
}

/* A generic allocation handle lives in another number space than device pointers. */
#define HANDLE_KEY(h) ((h) ^ 0xa5a5000000000000ull)

static void mem_result(CUresult r, uint64_t key, size_t n)
{
	if (r == TS_CUDA_SUCCESS)
		ts_mem_alloc(key, n);
	else if (r == TS_CUDA_ERROR_OUT_OF_MEMORY)
		ts_mem_failed();
}

/* ---- the wrapped behaviours ------------------------------------------------------ */

static inline void *slot_real(struct drv_slot *s)
{
	return atomic_load_explicit(&s->real, memory_order_relaxed);
}

static CUresult do_launch(struct drv_slot *s, CUfunction f, unsigned gx, unsigned gy,
			  unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shm,
			  CUstream st, void **params, void **extra)
{
	launch_fn real = (launch_fn)slot_real(s);
	uint64_t t0;

	if (ts_tls.depth)
		return real(f, gx, gy, gz, bx, by, bz, shm, st, params, extra);
	int smp = ts_launch_enter(st, s->ptsz, &t0);
	CUresult r = real(f, gx, gy, gz, bx, by, bz, shm, st, params, extra);
	ts_launch_leave(smp, st, s->ptsz, t0);
	return r;
}

static CUresult do_launchex(struct drv_slot *s, const ts_launch_config *cfg, CUfunction f,
			    void **params, void **extra)
{
	launchex_fn real = (launchex_fn)slot_real(s);
	CUstream st = cfg ? cfg->stream : NULL;
	uint64_t t0;

	if (ts_tls.depth || !cfg)
		return real(cfg, f, params, extra);
	int smp = ts_launch_enter(st, s->ptsz, &t0);
	CUresult r = real(cfg, f, params, extra);
	ts_launch_leave(smp, st, s->ptsz, t0);
	return r;
}

static CUresult do_malloc(struct drv_slot *s, CUdeviceptr *p, size_t n)
{
	CUresult r = ((malloc_fn)slot_real(s))(p, n);

	mem_result(r, p ? *p : 0, n);
	return r;
}

static CUresult do_free(struct drv_slot *s, CUdeviceptr p)
{
	ts_mem_free(p);
	return ((free_fn)slot_real(s))(p);
}

static CUresult do_malloca(struct drv_slot *s, CUdeviceptr *p, size_t n, CUstream st)
{
	CUresult r = ((malloca_fn)slot_real(s))(p, n, st);

	mem_result(r, p ? *p : 0, n);
	return r;
}

static CUresult do_freea(struct drv_slot *s, CUdeviceptr p, CUstream st)
{
	ts_mem_free(p);
	return ((freea_fn)slot_real(s))(p, st);
}

static CUresult do_memcreate(struct drv_slot *s, CUmemHandle *h, size_t n, const void *prop,
			     unsigned long long flags)
{
	CUresult r = ((memcreate_fn)slot_real(s))(h, n, prop, flags);

	mem_result(r, h ? HANDLE_KEY(*h) : 0, n);
	return r;
}

static CUresult do_memrelease(struct drv_slot *s, CUmemHandle h)
{
	ts_mem_free(HANDLE_KEY(h));
	return ((memrelease_fn)slot_real(s))(h);
}

static CUresult do_waitevent(struct drv_slot *s, CUstream st, CUevent e, unsigned flags)
{
	if (!ts_tls.depth)
		ts_gpu_stream_wait(st, s->ptsz);
	return ((waitevent_fn)slot_real(s))(st, e, flags);
}

static inline CUresult sync_done(CUresult r, uint64_t t0)
{
	ts_count(TS_CNT_SYNC_NS, ts_mono_ns() - t0);
	return r;
}

static CUresult do_streamsync(struct drv_slot *s, CUstream st)
{
	uint64_t t0 = ts_mono_ns();

	return sync_done(((streamsync_fn)slot_real(s))(st), t0);
}

static CUresult do_ctxsync(struct drv_slot *s)
{
	uint64_t t0 = ts_mono_ns();

	return sync_done(((ctxsync_fn)slot_real(s))(), t0);
}

static CUresult do_eventsync(struct drv_slot *s, CUevent e)
{
	uint64_t t0 = ts_mono_ns();

	return sync_done(((eventsync_fn)slot_real(s))(e), t0);
}

static CUresult do_coop(struct drv_slot *s, CUfunction f, unsigned gx, unsigned gy,
			unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shm,
			CUstream st, void **params)
{
	coop_fn real = (coop_fn)slot_real(s);
	uint64_t t0;

	if (ts_tls.depth)
		return real(f, gx, gy, gz, bx, by, bz, shm, st, params);
	int smp = ts_launch_enter(st, s->ptsz, &t0);
	CUresult r = real(f, gx, gy, gz, bx, by, bz, shm, st, params);
	ts_launch_leave(smp, st, s->ptsz, t0);
	return r;
}

static CUresult do_hostfunc(struct drv_slot *s, CUstream st, void (*fn)(void *), void *data)
{
	hostfunc_fn real = (hostfunc_fn)slot_real(s);
	uint64_t t0;

	if (ts_tls.depth)
		return real(st, fn, data);
	int smp = ts_host_func_enter(st, s->ptsz, &t0);
	CUresult r = real(st, fn, data);
	ts_launch_leave(smp, st, s->ptsz, t0);
	return r;
}

static CUresult do_graphinst(struct drv_slot *s, uint64_t *exec, uint64_t graph, uint64_t a,
			     uint64_t b, uint64_t c)
{
	graphinst_fn real = (graphinst_fn)slot_real(s);

	if (ts_tls.depth)
		return real(exec, graph, a, b, c);
	ts_tls.depth++;
	CUresult r = real(exec, graph, a, b, c);
	if (r == TS_CUDA_SUCCESS && exec)
		ts_graph_instantiated(*exec, graph);
	ts_tls.depth--;
	return r;
}

static CUresult do_graphlaunch(struct drv_slot *s, uint64_t exec, CUstream st)
{
	graphlaunch_fn real = (graphlaunch_fn)slot_real(s);
	uint64_t t0;

	if (ts_tls.depth)
		return real(exec, st);
	int smp = ts_graph_launch_enter(exec, st, s->ptsz, &t0);
	CUresult r = real(exec, st);
	ts_launch_leave(smp, st, s->ptsz, t0);
	return r;
}

static CUresult do_begincap(struct drv_slot *s, CUstream st, uint64_t a, uint64_t b,
			    uint64_t c, uint64_t d, uint64_t e)
{
	CUresult r = ((begincap_fn)slot_real(s))(st, a, b, c, d, e);

	if (r == TS_CUDA_SUCCESS && !ts_tls.depth)
		ts_graph_capture(true);
	return r;
}

static CUresult do_endcap(struct drv_slot *s, CUstream st, void *graph)
{
	if (!ts_tls.depth)
		ts_graph_capture(false);
	return ((endcap_fn)slot_real(s))(st, graph);
}

static void *wrap_proc(const char *symbol, void *p, int ver, uint64_t flags);

static CUresult do_getproc(struct drv_slot *s, const char *sym, void **pfn, int ver,
			   uint64_t flags)
{
	CUresult r = ((getproc_fn)slot_real(s))(sym, pfn, ver, flags);

	if (r == TS_CUDA_SUCCESS && pfn && *pfn && sym)
		*pfn = wrap_proc(sym, *pfn, ver, flags);
	return r;
}

static CUresult do_getproc2(struct drv_slot *s, const char *sym, void **pfn, int ver,
			    uint64_t flags, int *status)
{
	CUresult r = ((getproc2_fn)slot_real(s))(sym, pfn, ver, flags, status);

	if (r == TS_CUDA_SUCCESS && pfn && *pfn && sym)
		*pfn = wrap_proc(sym, *pfn, ver, flags);
	return r;
}

/* ---- one wrapper per slot -------------------------------------------------------- */

#define W_GETPROC(i)                                                                        \
	static CUresult w_getproc_##i(const char *a, void **b, int c, uint64_t d)            \
	{ return do_getproc(&slots[F_GETPROC][i], a, b, c, d); }
#define W_GETPROC2(i)                                                                       \
	static CUresult w_getproc2_##i(const char *a, void **b, int c, uint64_t d, int *e)   \
	{ return do_getproc2(&slots[F_GETPROC2][i], a, b, c, d, e); }
#define W_LAUNCH(i)                                                                         \
	static CUresult w_launch_##i(CUfunction f, unsigned a, unsigned b, unsigned c,       \
				     unsigned d, unsigned e, unsigned g, unsigned h,         \
				     CUstream st, void **p, void **x)                        \
	{ return do_launch(&slots[F_LAUNCH][i], f, a, b, c, d, e, g, h, st, p, x); }
#define W_LAUNCHEX(i)                                                                       \
	static CUresult w_launchex_##i(const ts_launch_config *c, CUfunction f, void **p,    \
				       void **x)                                             \
	{ return do_launchex(&slots[F_LAUNCHEX][i], c, f, p, x); }
#define W_MALLOC(i)                                                                         \
	static CUresult w_malloc_##i(CUdeviceptr *p, size_t n)                               \
	{ return do_malloc(&slots[F_MALLOC][i], p, n); }
#define W_FREE(i)                                                                           \
	static CUresult w_free_##i(CUdeviceptr p) { return do_free(&slots[F_FREE][i], p); }
#define W_MALLOCA(i)                                                                        \
	static CUresult w_malloca_##i(CUdeviceptr *p, size_t n, CUstream s)                  \
	{ return do_malloca(&slots[F_MALLOCA][i], p, n, s); }
#define W_FREEA(i)                                                                          \
	static CUresult w_freea_##i(CUdeviceptr p, CUstream s)                               \
	{ return do_freea(&slots[F_FREEA][i], p, s); }
#define W_MEMCREATE(i)                                                                      \
	static CUresult w_memcreate_##i(CUmemHandle *h, size_t n, const void *p,             \
					unsigned long long f)                                \
	{ return do_memcreate(&slots[F_MEMCREATE][i], h, n, p, f); }
#define W_MEMRELEASE(i)                                                                     \
	static CUresult w_memrelease_##i(CUmemHandle h)                                      \
	{ return do_memrelease(&slots[F_MEMRELEASE][i], h); }
#define W_WAITEVENT(i)                                                                      \
	static CUresult w_waitevent_##i(CUstream s, CUevent e, unsigned f)                   \
	{ return do_waitevent(&slots[F_WAITEVENT][i], s, e, f); }
#define W_STREAMSYNC(i)                                                                     \
	static CUresult w_streamsync_##i(CUstream s)                                         \
	{ return do_streamsync(&slots[F_STREAMSYNC][i], s); }
#define W_CTXSYNC(i)                                                                        \
	static CUresult w_ctxsync_##i(void) { return do_ctxsync(&slots[F_CTXSYNC][i]); }
#define W_EVENTSYNC(i)                                                                      \
	static CUresult w_eventsync_##i(CUevent e)                                           \
	{ return do_eventsync(&slots[F_EVENTSYNC][i], e); }

#define W_COOP(i)                                                                           \
	static CUresult w_coop_##i(CUfunction f, unsigned a, unsigned b, unsigned c,         \
				   unsigned d, unsigned e, unsigned g, unsigned h,           \
				   CUstream st, void **p)                                    \
	{ return do_coop(&slots[F_COOP][i], f, a, b, c, d, e, g, h, st, p); }
#define W_HOSTFUNC(i)                                                                       \
	static CUresult w_hostfunc_##i(CUstream s, void (*f)(void *), void *d)               \
	{ return do_hostfunc(&slots[F_HOSTFUNC][i], s, f, d); }
#define W_GRAPHINST(i)                                                                      \
	static CUresult w_graphinst_##i(uint64_t *x, uint64_t g, uint64_t a, uint64_t b,     \
					uint64_t c)                                          \
	{ return do_graphinst(&slots[F_GRAPHINST][i], x, g, a, b, c); }
#define W_GRAPHLAUNCH(i)                                                                    \
	static CUresult w_graphlaunch_##i(uint64_t x, CUstream s)                            \
	{ return do_graphlaunch(&slots[F_GRAPHLAUNCH][i], x, s); }
#define W_BEGINCAP(i)                                                                       \
	static CUresult w_begincap_##i(CUstream s, uint64_t a, uint64_t b, uint64_t c,       \
				       uint64_t d, uint64_t e)                               \
	{ return do_begincap(&slots[F_BEGINCAP][i], s, a, b, c, d, e); }
#define W_ENDCAP(i)                                                                         \
	static CUresult w_endcap_##i(CUstream s, void *g)                                    \
	{ return do_endcap(&slots[F_ENDCAP][i], s, g); }

EACH_SLOT(W_GETPROC)
EACH_SLOT(W_GETPROC2)
EACH_SLOT(W_LAUNCH)
EACH_SLOT(W_LAUNCHEX)
EACH_SLOT(W_MALLOC)
EACH_SLOT(W_FREE)
EACH_SLOT(W_MALLOCA)
EACH_SLOT(W_FREEA)
EACH_SLOT(W_MEMCREATE)
EACH_SLOT(W_MEMRELEASE)
EACH_SLOT(W_WAITEVENT)
EACH_SLOT(W_STREAMSYNC)
EACH_SLOT(W_CTXSYNC)
EACH_SLOT(W_EVENTSYNC)
EACH_SLOT(W_COOP)
EACH_SLOT(W_HOSTFUNC)
EACH_SLOT(W_GRAPHINST)
EACH_SLOT(W_GRAPHLAUNCH)
EACH_SLOT(W_BEGINCAP)
EACH_SLOT(W_ENDCAP)

#define ROW(name) { (void *)w_##name##_0, (void *)w_##name##_1, (void *)w_##name##_2, \
		    (void *)w_##name##_3 }
static void *const wrappers[F_N][NSLOT] = {
	[F_GETPROC] = ROW(getproc),       [F_GETPROC2] = ROW(getproc2),
	[F_LAUNCH] = ROW(launch),         [F_LAUNCHEX] = ROW(launchex),
	[F_MALLOC] = ROW(malloc),         [F_FREE] = ROW(free),
	[F_MALLOCA] = ROW(malloca),       [F_FREEA] = ROW(freea),
	[F_MEMCREATE] = ROW(memcreate),   [F_MEMRELEASE] = ROW(memrelease),
	[F_WAITEVENT] = ROW(waitevent),   [F_STREAMSYNC] = ROW(streamsync),
	[F_CTXSYNC] = ROW(ctxsync),       [F_EVENTSYNC] = ROW(eventsync),
	[F_COOP] = ROW(coop),             [F_HOSTFUNC] = ROW(hostfunc),
	[F_GRAPHINST] = ROW(graphinst),   [F_GRAPHLAUNCH] = ROW(graphlaunch),
	[F_BEGINCAP] = ROW(begincap),     [F_ENDCAP] = ROW(endcap),
};

static void *wrap_fn(enum drv_fn fn, void *real, bool ptsz)
{
	for (int i = 0; i < NSLOT; i++) {
		struct drv_slot *s = &slots[fn][i];
		void *cur = atomic_load(&s->real);
		if (cur == real)
			return wrappers[fn][i];
		if (!cur) {
			s->ptsz = ptsz; /* written before the pointer is published */
			if (atomic_compare_exchange_strong(&s->real, &cur, real) || cur == real)
				return wrappers[fn][i];
		}
	}
	atomic_fetch_add_explicit(&unwrapped, 1, memory_order_relaxed);
	return real;
}

/* ---- names ----------------------------------------------------------------------- */

struct name_map {
	const char *name;
	enum drv_fn fn;
	bool ptsz;
	int min_ver; /* cuGetProcAddress: the first CUDA version with this ABI */
};

/* dlsym sees ABI names, suffixes included. */
static const struct name_map dlsym_names[] = {
	{ "cuGetProcAddress", F_GETPROC, 0, 0 },
	{ "cuGetProcAddress_v2", F_GETPROC2, 0, 0 },
	{ "cuLaunchKernel", F_LAUNCH, 0, 0 },
	{ "cuLaunchKernel_ptsz", F_LAUNCH, 1, 0 },
	{ "cuLaunchKernelEx", F_LAUNCHEX, 0, 0 },
	{ "cuLaunchKernelEx_ptsz", F_LAUNCHEX, 1, 0 },
	{ "cuMemAlloc_v2", F_MALLOC, 0, 0 },
	{ "cuMemFree_v2", F_FREE, 0, 0 },
	{ "cuMemAllocAsync", F_MALLOCA, 0, 0 },
	{ "cuMemAllocAsync_ptsz", F_MALLOCA, 1, 0 },
	{ "cuMemFreeAsync", F_FREEA, 0, 0 },
	{ "cuMemFreeAsync_ptsz", F_FREEA, 1, 0 },
	{ "cuMemCreate", F_MEMCREATE, 0, 0 },
	{ "cuMemRelease", F_MEMRELEASE, 0, 0 },
	{ "cuStreamWaitEvent", F_WAITEVENT, 0, 0 },
	{ "cuStreamWaitEvent_ptsz", F_WAITEVENT, 1, 0 },
	{ "cuStreamSynchronize", F_STREAMSYNC, 0, 0 },
	{ "cuStreamSynchronize_ptsz", F_STREAMSYNC, 1, 0 },
	{ "cuCtxSynchronize", F_CTXSYNC, 0, 0 },
	{ "cuEventSynchronize", F_EVENTSYNC, 0, 0 },
	{ "cuLaunchCooperativeKernel", F_COOP, 0, 0 },
	{ "cuLaunchCooperativeKernel_ptsz", F_COOP, 1, 0 },
	{ "cuLaunchHostFunc", F_HOSTFUNC, 0, 0 },
	{ "cuLaunchHostFunc_ptsz", F_HOSTFUNC, 1, 0 },
	{ "cuGraphInstantiate", F_GRAPHINST, 0, 0 },
	{ "cuGraphInstantiate_v2", F_GRAPHINST, 0, 0 },
	{ "cuGraphInstantiateWithFlags", F_GRAPHINST, 0, 0 },
	{ "cuGraphInstantiateWithParams", F_GRAPHINST, 0, 0 },
	{ "cuGraphInstantiateWithParams_ptsz", F_GRAPHINST, 1, 0 },
	{ "cuGraphLaunch", F_GRAPHLAUNCH, 0, 0 },
	{ "cuGraphLaunch_ptsz", F_GRAPHLAUNCH, 1, 0 },
	{ "cuStreamBeginCapture", F_BEGINCAP, 0, 0 },
	{ "cuStreamBeginCapture_v2", F_BEGINCAP, 0, 0 },
	{ "cuStreamBeginCapture_ptsz", F_BEGINCAP, 1, 0 },
	{ "cuStreamBeginCapture_v2_ptsz", F_BEGINCAP, 1, 0 },
	{ "cuStreamBeginCaptureToGraph", F_BEGINCAP, 0, 0 },
	{ "cuStreamBeginCaptureToGraph_ptsz", F_BEGINCAP, 1, 0 },
	{ "cuStreamEndCapture", F_ENDCAP, 0, 0 },
	{ "cuStreamEndCapture_ptsz", F_ENDCAP, 1, 0 },
};

/* cuGetProcAddress sees base names; the flags choose the default-stream variant. */
static const struct name_map proc_names[] = {
	{ "cuLaunchKernel", F_LAUNCH, 0, 0 },
	{ "cuLaunchKernelEx", F_LAUNCHEX, 0, 0 },
	{ "cuMemAlloc", F_MALLOC, 0, 3020 },
	{ "cuMemFree", F_FREE, 0, 3020 },
	{ "cuMemAllocAsync", F_MALLOCA, 0, 0 },
	{ "cuMemFreeAsync", F_FREEA, 0, 0 },
	{ "cuMemCreate", F_MEMCREATE, 0, 0 },
	{ "cuMemRelease", F_MEMRELEASE, 0, 0 },
	{ "cuStreamWaitEvent", F_WAITEVENT, 0, 0 },
	{ "cuStreamSynchronize", F_STREAMSYNC, 0, 0 },
	{ "cuCtxSynchronize", F_CTXSYNC, 0, 0 },
	{ "cuEventSynchronize", F_EVENTSYNC, 0, 0 },
	{ "cuLaunchCooperativeKernel", F_COOP, 0, 0 },
	{ "cuLaunchHostFunc", F_HOSTFUNC, 0, 0 },
	{ "cuGraphInstantiate", F_GRAPHINST, 0, 0 },
	{ "cuGraphInstantiateWithFlags", F_GRAPHINST, 0, 0 },
	{ "cuGraphInstantiateWithParams", F_GRAPHINST, 0, 0 },
	{ "cuGraphLaunch", F_GRAPHLAUNCH, 0, 0 },
	{ "cuStreamBeginCapture", F_BEGINCAP, 0, 0 },
	{ "cuStreamBeginCaptureToGraph", F_BEGINCAP, 0, 0 },
	{ "cuStreamEndCapture", F_ENDCAP, 0, 0 },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

bool ts_drv_wants(const char *name)
{
	if (name[0] != 'c' || name[1] != 'u')
		return false;
	for (size_t i = 0; i < NELEM(dlsym_names); i++)
		if (!strcmp(name, dlsym_names[i].name))
			return true;
	return false;
}

void *ts_drv_wrap_dlsym(const char *name, void *real)
{
	for (size_t i = 0; i < NELEM(dlsym_names); i++)
		if (!strcmp(name, dlsym_names[i].name))
			return wrap_fn(dlsym_names[i].fn, real, dlsym_names[i].ptsz);
	return real;
}

/* TRAINSCOPE_DEBUG_NAMES=1: every driver name looked up is written to stderr, so a
 * GPU run can tell which entry points a new library version reaches for. */
static bool debug_names(void)
{
	static _Atomic int on = -1;
	int v = atomic_load_explicit(&on, memory_order_relaxed);

	if (v < 0) {
		const char *e = getenv("TRAINSCOPE_DEBUG_NAMES");
		v = e && *e == '1';
		atomic_store(&on, v);
	}
	return v;
}

void ts_drv_debug_name(const char *how, const char *name, int ver, uint64_t flags)
{
	if (debug_names())
		fprintf(stderr, "trainscope-name %s %s %d %llu\n", how, name, ver,
			(unsigned long long)flags);
}

static void *wrap_proc(const char *symbol, void *p, int ver, uint64_t flags)
{
	bool ptsz = (flags & TS_PROC_PER_THREAD_DEFAULT_STREAM) != 0;

	ts_drv_debug_name("proc", symbol, ver, flags);
	if (symbol[0] != 'c' || symbol[1] != 'u')
		return p;
	if (!strcmp(symbol, "cuGetProcAddress"))
		return wrap_fn(ver >= 12000 ? F_GETPROC2 : F_GETPROC, p, false);
	for (size_t i = 0; i < NELEM(proc_names); i++)
		if (!strcmp(symbol, proc_names[i].name))
			return ver >= proc_names[i].min_ver ? wrap_fn(proc_names[i].fn, p, ptsz)
							      : p;
	return p;
}
