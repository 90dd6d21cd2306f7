// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of cuBLAS (libcublas.so.13): see double.h. A GEMM is one kernel on the
 * handle's stream, launched through the driver as the real library does. GemmEx calls
 * Sgemm through its exported symbol, so a hook sees a GEMM inside a GEMM. */
#include "double.h"
#include "cudefs.h"

#include <dlfcn.h>
#include <stdlib.h>

typedef CUresult (*getproc_fn)(const char *, void **, int, uint64_t);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);

struct handle {
	CUstream stream;
};

static launch_fn driver_launch(void)
{
	static launch_fn f;

	if (!f) {
		/* a static cudart finds the driver with dlsym on the default scope */
		getproc_fn gp = (getproc_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress");
		if (!gp || gp("cuLaunchKernel", (void **)&f, 11000, 0))
			abort();
	}
	return f;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
	*h = calloc(1, sizeof(struct handle));
	return *h ? 0 : TS_CUBLAS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
	free(h);
	return 0;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, CUstream s)
{
	((struct handle *)h)->stream = s;
	return 0;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t h, CUstream *s)
{
	*s = ((struct handle *)h)->stream;
	return 0;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, int ta, int tb, int m, int n, int k,
			      const void *al, const void *A, int lda, const void *B, int ldb,
			      const void *be, void *C, int ldc)
{
	(void)ta, (void)tb, (void)m, (void)n, (void)k, (void)al, (void)A, (void)lda, (void)B,
		(void)ldb, (void)be, (void)C, (void)ldc;
	return driver_launch()(NULL, 1, 1, 1, 1, 1, 1, 0, ((struct handle *)h)->stream, NULL,
			       NULL);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, int ta, int tb, int m, int n, int k,
			    const void *al, const void *A, int at, int lda, const void *B, int bt,
			    int ldb, const void *be, void *C, int ct, int ldc, int compute,
			    int algo)
{
	(void)at, (void)bt, (void)ct, (void)compute, (void)algo;
	return cublasSgemm_v2(h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
}
