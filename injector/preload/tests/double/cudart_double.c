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

static pthread_once_t once = PTHREAD_ONCE_INIT;
static launch_fn launch_legacy, launch_ptsz;

static void init(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	getproc2_fn getproc = h ? (getproc2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	int status;

	if (!getproc ||
	    getproc("cuLaunchKernel", (void **)&launch_legacy, 12000, 0, &status) ||
	    getproc("cuLaunchKernel", (void **)&launch_ptsz, 12000,
		    TS_PROC_PER_THREAD_DEFAULT_STREAM, &status))
		abort(); /* the double cannot work: the test must fail loudly */
}

static cudaError_t launch(bool ptsz, const void *fn, ts_dim3 g, ts_dim3 b, void **args,
			  size_t shm, CUstream s)
{
	pthread_once(&once, init);
	return (ptsz ? launch_ptsz : launch_legacy)((CUfunction)fn, g.x, g.y, g.z, b.x, b.y, b.z,
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

int tsd_probe(void)
{
	return 1;
}

int tsd_next_probe(void)
{
	int (*f)(void) = (int (*)(void))dlsym(RTLD_NEXT, "tsd_probe");

	return f ? f() : -1;
}
