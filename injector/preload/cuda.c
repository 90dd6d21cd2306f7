// SPDX-License-Identifier: Apache-2.0
/* CUDA runtime hooks. torch's own kernels are launched with <<<>>>, which nvcc turns
 * into __cudaLaunchKernel (or its _ptsz twin), not cudaLaunchKernel. The runtime then
 * calls the driver; the nesting depth keeps that one launch from counting twice. */
#include "cudefs.h"
#include "gpu.h"
#include "real.h"

/* What a hook returns when the runtime it stands for cannot be found. */
#define RT_MISSING 98 /* cudaErrorInvalidDeviceFunction */

/* The runtime's own function, cached; NULL (said once) when there is none. */
static void *rt_real(_Atomic(void *) *cache, const char *name)
{
	void *f = ts_real(cache, "libcudart", name);

	if (unlikely(!f))
		ts_missing(name);
	return f;
}

typedef cudaError_t (*rt_launch_fn)(const void *, ts_dim3, ts_dim3, void **, size_t, CUstream);

static cudaError_t launch(_Atomic(void *) *cache, const char *name, bool ptsz, const void *fn,
			  ts_dim3 grid, ts_dim3 block, void **args, size_t shm, CUstream st)
{
	rt_launch_fn real = (rt_launch_fn)rt_real(cache, name);
	uint64_t t0;

	if (unlikely(!real))
		return RT_MISSING;
	if (ts_tls.depth)
		return real(fn, grid, block, args, shm, st);
	int smp = ts_launch_enter(st, ptsz, &t0);
	cudaError_t r = real(fn, grid, block, args, shm, st);
	ts_launch_leave(smp, st, ptsz, t0);
	return r;
}

#define RT_LAUNCH(sym, ptsz)                                                                \
	TS_EXPORT cudaError_t sym(const void *fn, ts_dim3 grid, ts_dim3 block, void **args,  \
				  size_t shm, CUstream st)                                   \
	{                                                                                    \
		static _Atomic(void *) real;                                                 \
		return launch(&real, #sym, ptsz, fn, grid, block, args, shm, st);            \
	}

RT_LAUNCH(__cudaLaunchKernel, false)
RT_LAUNCH(__cudaLaunchKernel_ptsz, true)
RT_LAUNCH(cudaLaunchKernel, false)
RT_LAUNCH(cudaLaunchKernel_ptsz, true)
RT_LAUNCH(cudaLaunchCooperativeKernel, false)
RT_LAUNCH(cudaLaunchCooperativeKernel_ptsz, true)

typedef cudaError_t (*rt_launchex_fn)(const ts_rt_launch_config *, const void *, void **);

static cudaError_t launchex(_Atomic(void *) *cache, const char *name, bool ptsz,
			    const ts_rt_launch_config *cfg, const void *fn, void **args)
{
	rt_launchex_fn real = (rt_launchex_fn)rt_real(cache, name);
	CUstream st = cfg ? cfg->stream : NULL;
	uint64_t t0;

	if (unlikely(!real))
		return RT_MISSING;
	if (ts_tls.depth || !cfg)
		return real(cfg, fn, args);
	int smp = ts_launch_enter(st, ptsz, &t0);
	cudaError_t r = real(cfg, fn, args);
	ts_launch_leave(smp, st, ptsz, t0);
	return r;
}

#define RT_LAUNCHEX(sym, ptsz)                                                              \
	TS_EXPORT cudaError_t sym(const ts_rt_launch_config *cfg, const void *fn, void **args) \
	{                                                                                    \
		static _Atomic(void *) real;                                                 \
		return launchex(&real, #sym, ptsz, cfg, fn, args);                           \
	}

RT_LAUNCHEX(cudaLaunchKernelExC, false)
RT_LAUNCHEX(cudaLaunchKernelExC_ptsz, true)

typedef cudaError_t (*rt_hostfunc_fn)(CUstream, void (*)(void *), void *);

static cudaError_t hostfunc(_Atomic(void *) *cache, const char *name, bool ptsz, CUstream st,
			    void (*fn)(void *), void *data)
{
	rt_hostfunc_fn real = (rt_hostfunc_fn)rt_real(cache, name);
	uint64_t t0;

	if (unlikely(!real))
		return RT_MISSING;
	if (ts_tls.depth)
		return real(st, fn, data);
	int smp = ts_host_func_enter(st, ptsz, &t0);
	cudaError_t r = real(st, fn, data);
	ts_launch_leave(smp, st, ptsz, t0);
	return r;
}

#define RT_HOSTFUNC(sym, ptsz)                                                              \
	TS_EXPORT cudaError_t sym(CUstream st, void (*fn)(void *), void *data)              \
	{                                                                                    \
		static _Atomic(void *) real;                                                 \
		return hostfunc(&real, #sym, ptsz, st, fn, data);                            \
	}

RT_HOSTFUNC(cudaLaunchHostFunc, false)
RT_HOSTFUNC(cudaLaunchHostFunc_ptsz, true)

/* CUDA graphs: the runtime reaches the driver's functions (hooked in driver.c) through
 * cuGetProcAddress; the nesting depth keeps one instantiation or replay from counting
 * twice. As there, every ABI version of cudaGraphInstantiate* takes the executable
 * graph's address and the graph first, the rest passed through as it came. */
typedef cudaError_t (*rt_graphinst_fn)(uint64_t *, uint64_t, uint64_t, uint64_t, uint64_t);
typedef cudaError_t (*rt_graphlaunch_fn)(uint64_t, CUstream);

static cudaError_t graphinst(_Atomic(void *) *cache, const char *name, uint64_t *exec,
			     uint64_t graph, uint64_t a, uint64_t b, uint64_t c)
{
	rt_graphinst_fn real = (rt_graphinst_fn)rt_real(cache, name);

	if (unlikely(!real))
		return RT_MISSING;
	if (ts_tls.depth)
		return real(exec, graph, a, b, c);
	ts_tls.depth++;
	cudaError_t r = real(exec, graph, a, b, c);
	if (r == 0 && exec)
		ts_graph_instantiated(*exec, graph);
	ts_tls.depth--;
	return r;
}

#define RT_GRAPHINST(sym)                                                                   \
	TS_EXPORT cudaError_t sym(uint64_t *exec, uint64_t graph, uint64_t a, uint64_t b,    \
				  uint64_t c)                                                \
	{                                                                                    \
		static _Atomic(void *) real;                                                 \
		return graphinst(&real, #sym, exec, graph, a, b, c);                         \
	}

RT_GRAPHINST(cudaGraphInstantiate)
RT_GRAPHINST(cudaGraphInstantiateWithFlags)
RT_GRAPHINST(cudaGraphInstantiateWithParams)

static cudaError_t graphlaunch(_Atomic(void *) *cache, const char *name, bool ptsz,
			       uint64_t exec, CUstream st)
{
	rt_graphlaunch_fn real = (rt_graphlaunch_fn)rt_real(cache, name);
	uint64_t t0;

	if (unlikely(!real))
		return RT_MISSING;
	if (ts_tls.depth)
		return real(exec, st);
	int smp = ts_graph_launch_enter(exec, st, ptsz, &t0);
	cudaError_t r = real(exec, st);
	ts_launch_leave(smp, st, ptsz, t0);
	return r;
}

#define RT_GRAPHLAUNCH(sym, ptsz)                                                           \
	TS_EXPORT cudaError_t sym(uint64_t exec, CUstream st)                                \
	{                                                                                    \
		static _Atomic(void *) real;                                                 \
		return graphlaunch(&real, #sym, ptsz, exec, st);                             \
	}

RT_GRAPHLAUNCH(cudaGraphLaunch, false)
RT_GRAPHLAUNCH(cudaGraphLaunch_ptsz, true)
