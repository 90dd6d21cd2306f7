// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of the CUDA runtime (libcudart.so.13): see double.h. Like the real one it
 * reaches the driver only through dlopen + dlsym("cuGetProcAddress_v2") and then
 * cuGetProcAddress, never by linking libcuda. */
#include "double.h"
#include "cudefs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

typedef CUresult (*getproc2_fn)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);

typedef CUresult (*launchex_fn)(const ts_launch_config *, CUfunction, void **, void **);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			    unsigned, unsigned, CUstream, void **);
typedef CUresult (*hostfunc_fn)(CUstream, void (*)(void *), void *);
typedef CUresult (*graphinst_fn)(uint64_t *, uint64_t, unsigned long long);
typedef CUresult (*graphlaunch_fn)(uint64_t, CUstream);
typedef CUresult (*begincap_fn)(CUstream, int);
typedef CUresult (*endcap_fn)(CUstream, uint64_t *);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct {
	launch_fn launch, launch_ptsz;
	launchex_fn launchex;
	coop_fn coop;
	hostfunc_fn hostfunc;
	graphinst_fn graphinst;
	graphlaunch_fn graphlaunch;
	begincap_fn begincap;
	endcap_fn endcap;
} drv;

static void init(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	getproc2_fn getproc = h ? (getproc2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	int status;

#define GET(field, name, flags) getproc(name, (void **)&drv.field, 12000, flags, &status)
	if (!getproc || GET(launch, "cuLaunchKernel", 0) ||
	    GET(launch_ptsz, "cuLaunchKernel", TS_PROC_PER_THREAD_DEFAULT_STREAM) ||
	    GET(launchex, "cuLaunchKernelEx", 0) || GET(coop, "cuLaunchCooperativeKernel", 0) ||
	    GET(hostfunc, "cuLaunchHostFunc", 0) || GET(graphinst, "cuGraphInstantiate", 0) ||
	    GET(graphlaunch, "cuGraphLaunch", 0) || GET(begincap, "cuStreamBeginCapture", 0) ||
	    GET(endcap, "cuStreamEndCapture", 0))
		abort(); /* the double cannot work: the test must fail loudly */
#undef GET
}

static cudaError_t launch(bool ptsz, const void *fn, ts_dim3 g, ts_dim3 b, void **args,
			  size_t shm, CUstream s)
{
	pthread_once(&once, init);
	return (ptsz ? drv.launch_ptsz : drv.launch)((CUfunction)fn, g.x, g.y, g.z, b.x, b.y, b.z,
						    (unsigned)shm, s, args, NULL);
}

cudaError_t __cudaLaunchKernel(const void *fn, ts_dim3 g, ts_dim3 b, void **args, size_t shm,
			       CUstream s)
{
	return launch(false, fn, g, b, args, shm, s);
}

cudaError_t __cudaLaunchKernel_ptsz(const void *fn, ts_dim3 g, ts_dim3 b, void **args,
				    size_t shm, CUstream s)
{
	return launch(true, fn, g, b, args, shm, s);
}

cudaError_t cudaLaunchKernel(const void *fn, ts_dim3 g, ts_dim3 b, void **args, size_t shm,
			     CUstream s)
{
	return launch(false, fn, g, b, args, shm, s);
}

cudaError_t cudaLaunchCooperativeKernel(const void *fn, ts_dim3 g, ts_dim3 b, void **args,
					size_t shm, CUstream s)
{
	pthread_once(&once, init);
	return drv.coop((CUfunction)fn, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shm, s, args);
}

cudaError_t cudaLaunchKernelExC(const ts_rt_launch_config *c, const void *fn, void **args)
{
	ts_launch_config d = { c->grid.x, c->grid.y, c->grid.z, c->block.x, c->block.y,
			       c->block.z, (unsigned)c->shared_mem, c->stream, NULL, 0 };

	pthread_once(&once, init);
	return drv.launchex(&d, (CUfunction)fn, args, NULL);
}

cudaError_t cudaLaunchHostFunc(CUstream s, void (*fn)(void *), void *data)
{
	pthread_once(&once, init);
	return drv.hostfunc(s, fn, data);
}

cudaError_t cudaStreamBeginCapture(CUstream s, int mode)
{
	pthread_once(&once, init);
	return drv.begincap(s, mode);
}

cudaError_t cudaStreamEndCapture(CUstream s, uint64_t *graph)
{
	pthread_once(&once, init);
	return drv.endcap(s, graph);
}

cudaError_t cudaGraphInstantiate(uint64_t *exec, uint64_t graph, unsigned long long flags)
{
	pthread_once(&once, init);
	return drv.graphinst(exec, graph, flags);
}

cudaError_t cudaGraphLaunch(uint64_t exec, CUstream s)
{
	pthread_once(&once, init);
	return drv.graphlaunch(exec, s);
}

int tsd_probe(void)
{
	return 1;
}

int tsd_next_probe(void)
{
	int (*f)(void) = (int (*)(void))dlsym(RTLD_NEXT, "tsd_probe");

	return f ? f() : -1;
}
