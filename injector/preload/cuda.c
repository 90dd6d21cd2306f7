/* CUDA runtime hooks. torch's own kernels are launched with <<<>>>, which nvcc turns
 * into __cudaLaunchKernel (or its _ptsz twin), not cudaLaunchKernel. The runtime then
 * calls the driver; the nesting depth keeps that one launch from counting twice. */
#include "cudefs.h"
#include "gpu.h"
#include "real.h"

typedef cudaError_t (*rt_launch_fn)(const void *, ts_dim3, ts_dim3, void **, size_t, CUstream);

static cudaError_t launch(_Atomic(void *) *cache, const char *name, bool ptsz, const void *fn,
			  ts_dim3 grid, ts_dim3 block, void **args, size_t shm, CUstream st)
{
	rt_launch_fn real = (rt_launch_fn)ts_real(cache, "libcudart", name);
	uint64_t t0;

	if (unlikely(!real)) {
		ts_missing(name);
		return 98; /* cudaErrorInvalidDeviceFunction */
	}
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
