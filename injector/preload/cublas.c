// SPDX-License-Identifier: Apache-2.0
/* cuBLAS and cuBLASLt GEMM hooks: every call counted, 1 in N timed with an event pair
 * on the handle's stream, giving device time and TFLOPS by flop-count bucket. cuBLAS
 * calls cuBLASLt inside; only the outermost GEMM counts. */
#include "cudefs.h"
#include "gpu.h"
#include "real.h"

typedef cublasStatus_t (*getstream_fn)(cublasHandle_t, CUstream *);

static _Atomic(void *) real_getstream;

static CUstream handle_stream(cublasHandle_t h)
{
	getstream_fn f = (getstream_fn)ts_real(&real_getstream, "libcublas", "cublasGetStream_v2");
	CUstream s = NULL;

	if (!f || f(h, &s) != 0)
		return NULL;
	return s;
}

struct gemm_call {
	uint64_t t0;
	int slot;
	bool outer;
	CUstream stream;
};

/* sampled: this call is the 1 in N (decided before, so only it looks its stream up). */
static void gemm_enter(struct gemm_call *c, CUstream stream, bool sampled)
{
	c->outer = ts_tls.lib_depth == 0;
	c->slot = -1;
	ts_tls.lib_depth++;
	if (!c->outer)
		return;
	c->t0 = ts_ticks();
	ts_count(TS_CNT_API, 1);
	ts_count(TS_CNT_GEMMS, 1);
	if (sampled) {
		c->stream = stream;
		if ((c->slot = ts_gpu_timed_begin(stream, TS_SK_CUDA)) < 0)
			ts_gpu_gemm_unsampled();
	}
}

static void gemm_leave(struct gemm_call *c, double flops)
{
	ts_tls.lib_depth--;
	if (!c->outer)
		return;
	if (c->slot >= 0) {
		struct ts_op_meta m = { .kind = TS_T_GEMM, .amount = (uint64_t)flops };
		ts_gpu_timed_end(c->slot, c->stream, TS_SK_CUDA, &m);
	}
	ts_count(TS_CNT_TICKS, ts_ticks() - c->t0);
}

/* The stream is only looked up when this call will be sampled. */
#define GEMM_BODY(libname, name, flops, call_args, ...)                                     \
	static _Atomic(void *) real;                                                         \
	cublasStatus_t (*f)(__VA_ARGS__) = ts_real(&real, libname, name);                    \
	struct gemm_call c;                                                                  \
	if (unlikely(!f)) {                                                                  \
		ts_missing(name);                                                            \
		return TS_CUBLAS_NOT_INITIALIZED;                                            \
	}                                                                                    \
	TS_ST_BEGIN(st0);                                                                    \
	bool smp = ts_tls.lib_depth == 0 && ts_gpu_sample_gemm();                            \
	gemm_enter(&c, smp ? handle_stream(h) : NULL, smp);                                  \
	TS_ST_END(TS_ST_GEMM, st0);                                                          \
	cublasStatus_t r = f call_args;                                                      \
	TS_ST_BEGIN(st1);                                                                    \
	gemm_leave(&c, (flops));                                                             \
	TS_ST_END(TS_ST_GEMM, st1);                                                          \
	return r;

TS_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t h, int ta, int tb, int m, int n, int k,
					const void *al, const void *A, int lda, const void *B,
					int ldb, const void *be, void *C, int ldc)
{
	GEMM_BODY("libcublas", "cublasSgemm_v2", 2.0 * m * n * k,
		  (h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc), cublasHandle_t, int, int,
		  int, int, int, const void *, const void *, int, const void *, int, const void *,
		  void *, int)
}

TS_EXPORT cublasStatus_t cublasHgemm(cublasHandle_t h, int ta, int tb, int m, int n, int k,
				     const void *al, const void *A, int lda, const void *B,
				     int ldb, const void *be, void *C, int ldc)
{
	GEMM_BODY("libcublas", "cublasHgemm", 2.0 * m * n * k,
		  (h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc), cublasHandle_t, int, int,
		  int, int, int, const void *, const void *, int, const void *, int, const void *,
		  void *, int)
}

TS_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t h, int ta, int tb, int m, int n, int k,
				      const void *al, const void *A, int at, int lda,
				      const void *B, int bt, int ldb, const void *be, void *C,
				      int ct, int ldc, int compute, int algo)
{
	GEMM_BODY("libcublas", "cublasGemmEx", 2.0 * m * n * k,
		  (h, ta, tb, m, n, k, al, A, at, lda, B, bt, ldb, be, C, ct, ldc, compute, algo),
		  cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int,
		  const void *, int, int, const void *, void *, int, int, int, int)
}

TS_EXPORT cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, int ta, int tb, int m,
						   int n, int k, const void *al, const void *A,
						   int lda, long long sa, const void *B, int ldb,
						   long long sb, const void *be, void *C, int ldc,
						   long long sc, int batch)
{
	GEMM_BODY("libcublas", "cublasSgemmStridedBatched", 2.0 * m * n * k * batch,
		  (h, ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, batch),
		  cublasHandle_t, int, int, int, int, int, const void *, const void *, int,
		  long long, const void *, int, long long, const void *, void *, int, long long,
		  int)
}

TS_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
	cublasHandle_t h, int ta, int tb, int m, int n, int k, const void *al, const void *A,
	int at, int lda, long long sa, const void *B, int bt, int ldb, long long sb,
	const void *be, void *C, int ct, int ldc, long long sc, int batch, int compute, int algo)
{
	GEMM_BODY("libcublas", "cublasGemmStridedBatchedEx", 2.0 * m * n * k * batch,
		  (h, ta, tb, m, n, k, al, A, at, lda, sa, B, bt, ldb, sb, be, C, ct, ldc, sc,
		   batch, compute, algo),
		  cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int,
		  long long, const void *, int, int, long long, const void *, void *, int, int,
		  long long, int, int, int)
}

/* ---- cuBLASLt ---------------------------------------------------------------------- */

typedef cublasStatus_t (*lt_attr_fn)(const void *, int, void *, size_t, size_t *);
static _Atomic(void *) real_layout_attr, real_desc_attr;

static uint64_t layout_u64(const void *layout, int attr, size_t width)
{
	lt_attr_fn f = (lt_attr_fn)ts_real(&real_layout_attr, "libcublasLt",
					   "cublasLtMatrixLayoutGetAttribute");
	uint64_t v = 0;
	size_t n = 0;

	if (f)
		f(layout, attr, &v, width, &n);
	return v;
}

/* 2·m·n·k·batch from D's shape and A's shape as the op sees it. */
static double lt_flops(const void *desc, const void *adesc, const void *ddesc)
{
	enum { ROWS = 2, COLS = 3, BATCH = 5, TRANSA = 3 };
	lt_attr_fn df = (lt_attr_fn)ts_real(&real_desc_attr, "libcublasLt",
					    "cublasLtMatmulDescGetAttribute");
	int32_t ta = 0;
	size_t n = 0;
	uint64_t m = layout_u64(ddesc, ROWS, 8), cols = layout_u64(ddesc, COLS, 8);
	uint64_t batch = (uint32_t)layout_u64(ddesc, BATCH, 4);

	if (df)
		df(desc, TRANSA, &ta, sizeof(ta), &n);
	uint64_t k = layout_u64(adesc, ta ? ROWS : COLS, 8);
	return 2.0 * (double)m * (double)cols * (double)k * (double)(batch ? batch : 1);
}

typedef cublasStatus_t (*lt_matmul_fn)(cublasLtHandle_t, const void *, const void *,
				       const void *, const void *, const void *, const void *,
				       const void *, const void *, const void *, void *,
				       const void *, const void *, void *, size_t, CUstream);

TS_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, const void *desc, const void *al,
					const void *A, const void *ad, const void *B,
					const void *bd, const void *be, const void *C,
					const void *cd, void *D, const void *dd, const void *algo,
					void *ws, size_t wss, CUstream st)
{
	static _Atomic(void *) real;
	lt_matmul_fn f = (lt_matmul_fn)ts_real(&real, "libcublasLt", "cublasLtMatmul");
	struct gemm_call c;

	if (unlikely(!f)) {
		ts_missing("cublasLtMatmul");
		return TS_CUBLAS_NOT_INITIALIZED;
	}
	TS_ST_BEGIN(st0);
	gemm_enter(&c, st, ts_tls.lib_depth == 0 && ts_gpu_sample_gemm());
	TS_ST_END(TS_ST_GEMM, st0);
	cublasStatus_t r = f(h, desc, al, A, ad, B, bd, be, C, cd, D, dd, algo, ws, wss, st);
	TS_ST_BEGIN(st1);
	gemm_leave(&c, c.slot >= 0 ? lt_flops(desc, ad, dd) : 0);
	TS_ST_END(TS_ST_GEMM, st1);
	return r;
}
