// SPDX-License-Identifier: Apache-2.0
/* ACL runtime hooks (libascendcl, Ascend NPUs): the kernel launches the runtime exposes,
 * stream, device and event synchronisation as the sync region, stream waits that end a
 * busy segment, device memory, captures into model runtime instances (the NPU's graphs);
 * and the event adapters through which gpu.c times NPU streams as it times CUDA ones.
 *
 * Built against the ACL headers torch-npu ships (make fetches them, scripts/npu-headers.sh):
 * every hook below is checked by the compiler against the real prototype. Nothing of
 * CANN is linked; the real functions are found at run time in whatever loaded
 * libascendcl, as the NCCL ones are. */
#include <acl/acl_rt.h>
#include <acl/error_codes/rt_error_codes.h>

#include "driver.h"
#include "gpu.h"
#include "real.h"

/* Any failure of an adapted call, as gpu.c reads results: not success, not "not ready". */
#define ACL_FAILED 999
/* What a hook returns when the runtime it stands for cannot be found. */
#define ACL_MISSING ACL_ERROR_RT_INTERNAL_ERROR

static void *acl_real(_Atomic(void *) *cache, const char *name)
{
	void *f = ts_real(cache, "libascendcl", name);

	if (unlikely(!f))
		ts_missing(name);
	return f;
}

#define ACL_REAL(name, ...)                                              \
	static _Atomic(void *) real;                                      \
	aclError (*f)(__VA_ARGS__) = acl_real(&real, name);               \
	if (unlikely(!f))                                                 \
		return ACL_MISSING;

/* ---- gpu.c's device functions ------------------------------------------------------ */

static struct {
	aclError (*ctx_get)(aclrtContext *);
	aclError (*ctx_set)(aclrtContext);
	aclError (*ev_create)(aclrtEvent *, uint32_t);
	aclError (*ev_record)(aclrtEvent, aclrtStream);
	aclError (*ev_status)(aclrtEvent, aclrtEventRecordedStatus *);
	aclError (*ev_elapsed)(float *, aclrtEvent, aclrtEvent);
	aclError (*capture_info)(aclrtStream, aclmdlRICaptureStatus *, aclmdlRI *);
} rt;

/* The stream table keys the default stream (NULL) as the legacy handle (gpu.c). */
static aclrtStream acl_stream(CUstream s)
{
	return s == TS_STREAM_LEGACY ? NULL : (aclrtStream)s;
}

static CUresult ok(aclError e)
{
	return e == ACL_SUCCESS ? TS_CUDA_SUCCESS : ACL_FAILED;
}

static CUresult ad_ctx_get(CUcontext *c)
{
	aclrtContext x = NULL;
	aclError e = rt.ctx_get(&x);

	*c = (CUcontext)x;
	return ok(e);
}

static CUresult ad_ctx_set(CUcontext c)
{
	return ok(rt.ctx_set((aclrtContext)c));
}

/* Only events made with the time-line flag can be asked for elapsed time. */
static CUresult ad_ev_create(CUevent *ev, unsigned flags)
{
	aclrtEvent x = NULL;
	aclError e = rt.ev_create(&x, ACL_EVENT_TIME_LINE);

	(void)flags;
	*ev = (CUevent)x;
	return ok(e);
}

static CUresult ad_ev_record(CUevent ev, CUstream s)
{
	return ok(rt.ev_record((aclrtEvent)ev, acl_stream(s)));
}

static CUresult ad_ev_query(CUevent ev)
{
	aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;

	if (rt.ev_status((aclrtEvent)ev, &st) != ACL_SUCCESS)
		return ACL_FAILED;
	return st == ACL_EVENT_RECORDED_STATUS_COMPLETE ? TS_CUDA_SUCCESS : TS_CUDA_ERROR_NOT_READY;
}

static CUresult ad_ev_elapsed(float *ms, CUevent a, CUevent b)
{
	return ok(rt.ev_elapsed(ms, (aclrtEvent)a, (aclrtEvent)b));
}

/* CANN before 8.1 has no capture: nothing is ever being captured there. */
static CUresult ad_is_capturing(CUstream s, int *status)
{
	aclmdlRICaptureStatus st = ACL_MODEL_RI_CAPTURE_STATUS_NONE;
	aclmdlRI ri = NULL;

	*status = 0;
	if (!rt.capture_info)
		return TS_CUDA_SUCCESS;
	if (rt.capture_info(acl_stream(s), &st, &ri) != ACL_SUCCESS)
		return ACL_FAILED;
	*status = st != ACL_MODEL_RI_CAPTURE_STATUS_NONE;
	return TS_CUDA_SUCCESS;
}

bool ts_acl_dev_fns(struct ts_dev_fns *d)
{
#define R(field, name) *(void **)&rt.field = ts_find_real("libascendcl", name)
	R(ctx_get, "aclrtGetCurrentContext");
	R(ctx_set, "aclrtSetCurrentContext");
	R(ev_create, "aclrtCreateEventWithFlag");
	R(ev_record, "aclrtRecordEvent");
	R(ev_status, "aclrtQueryEventStatus");
	R(ev_elapsed, "aclrtEventElapsedTime");
	R(capture_info, "aclmdlRICaptureGetInfo");
#undef R
	if (!rt.ctx_get || !rt.ctx_set || !rt.ev_create || !rt.ev_record || !rt.ev_status ||
	    !rt.ev_elapsed)
		return false;
	*d = (struct ts_dev_fns){ .ctx_get = ad_ctx_get, .ctx_set = ad_ctx_set,
				  .ev_create = ad_ev_create, .ev_record = ad_ev_record,
				  .ev_query = ad_ev_query, .ev_elapsed = ad_ev_elapsed,
				  .is_capturing = ad_is_capturing };
	return true;
}

/* ---- launches ---------------------------------------------------------------------- */

/* One kernel on stream st: counted, its stream's segment opened, maybe sampled. */
#define ACL_LAUNCH(st, call)                                        \
	if (ts_tls.depth)                                            \
		return f call;                                       \
	uint64_t t0;                                                 \
	int smp = ts_launch_enter((CUstream)(st), TS_SK_ACL, &t0);   \
	aclError r = f call;                                         \
	ts_launch_leave(smp, (CUstream)(st), TS_SK_ACL, t0);         \
	return r;

TS_EXPORT aclError aclrtLaunchKernel(aclrtFuncHandle fn, uint32_t blocks, const void *args,
				     size_t size, aclrtStream st)
{
	ACL_REAL("aclrtLaunchKernel", aclrtFuncHandle, uint32_t, const void *, size_t, aclrtStream)
	ACL_LAUNCH(st, (fn, blocks, args, size, st))
}

TS_EXPORT aclError aclrtLaunchKernelV2(aclrtFuncHandle fn, uint32_t blocks, const void *args,
				       size_t size, aclrtLaunchKernelCfg *cfg, aclrtStream st)
{
	ACL_REAL("aclrtLaunchKernelV2", aclrtFuncHandle, uint32_t, const void *, size_t,
		 aclrtLaunchKernelCfg *, aclrtStream)
	ACL_LAUNCH(st, (fn, blocks, args, size, cfg, st))
}

TS_EXPORT aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle fn, uint32_t blocks,
					       aclrtStream st, aclrtLaunchKernelCfg *cfg,
					       aclrtArgsHandle args, void *reserve)
{
	ACL_REAL("aclrtLaunchKernelWithConfig", aclrtFuncHandle, uint32_t, aclrtStream,
		 aclrtLaunchKernelCfg *, aclrtArgsHandle, void *)
	ACL_LAUNCH(st, (fn, blocks, st, cfg, args, reserve))
}

TS_EXPORT aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle fn, uint32_t blocks,
						 aclrtStream st, aclrtLaunchKernelCfg *cfg,
						 void *args, size_t size,
						 aclrtPlaceHolderInfo *holders, size_t nholders)
{
	ACL_REAL("aclrtLaunchKernelWithHostArgs", aclrtFuncHandle, uint32_t, aclrtStream,
		 aclrtLaunchKernelCfg *, void *, size_t, aclrtPlaceHolderInfo *, size_t)
	ACL_LAUNCH(st, (fn, blocks, st, cfg, args, size, holders, nholders))
}

/* ---- synchronisation: the host waiting on the device --------------------------------- */

#define ACL_SYNC(call)                                           \
	uint64_t t0 = ts_mono_ns();                               \
	aclError r = f call;                                      \
	ts_count(TS_CNT_SYNC_NS, ts_mono_ns() - t0);       \
	return r;

TS_EXPORT aclError aclrtSynchronizeStream(aclrtStream st)
{
	ACL_REAL("aclrtSynchronizeStream", aclrtStream)
	ACL_SYNC((st))
}

TS_EXPORT aclError aclrtSynchronizeStreamWithTimeout(aclrtStream st, int32_t timeout)
{
	ACL_REAL("aclrtSynchronizeStreamWithTimeout", aclrtStream, int32_t)
	ACL_SYNC((st, timeout))
}

TS_EXPORT aclError aclrtSynchronizeDevice(void)
{
	ACL_REAL("aclrtSynchronizeDevice", void)
	ACL_SYNC(())
}

TS_EXPORT aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout)
{
	ACL_REAL("aclrtSynchronizeDeviceWithTimeout", int32_t)
	ACL_SYNC((timeout))
}

TS_EXPORT aclError aclrtSynchronizeEvent(aclrtEvent ev)
{
	ACL_REAL("aclrtSynchronizeEvent", aclrtEvent)
	ACL_SYNC((ev))
}

/* The stream is about to wait on another's work: its busy segment ends here. */
TS_EXPORT aclError aclrtStreamWaitEvent(aclrtStream st, aclrtEvent ev)
{
	ACL_REAL("aclrtStreamWaitEvent", aclrtStream, aclrtEvent)
	if (!ts_tls.depth)
		ts_gpu_stream_wait((CUstream)st, TS_SK_ACL);
	return f(st, ev);
}

/* ---- device memory ----------------------------------------------------------------- */

/* Out of device memory is ACL_ERROR_RT_MEMORY_ALLOCATION, or ACL_ERROR_BAD_ALLOC. */
static aclError mem_result(aclError r, void **p, size_t n)
{
	if (r == ACL_SUCCESS && p && *p)
		ts_mem_alloc((uint64_t)(uintptr_t)*p, n);
	else if (r == ACL_ERROR_RT_MEMORY_ALLOCATION || r == ACL_ERROR_BAD_ALLOC)
		ts_mem_failed();
	return r;
}

TS_EXPORT aclError aclrtMalloc(void **p, size_t n, aclrtMemMallocPolicy policy)
{
	ACL_REAL("aclrtMalloc", void **, size_t, aclrtMemMallocPolicy)
	return mem_result(f(p, n, policy), p, n);
}

TS_EXPORT aclError aclrtMallocAlign32(void **p, size_t n, aclrtMemMallocPolicy policy)
{
	ACL_REAL("aclrtMallocAlign32", void **, size_t, aclrtMemMallocPolicy)
	return mem_result(f(p, n, policy), p, n);
}

TS_EXPORT aclError aclrtMallocCached(void **p, size_t n, aclrtMemMallocPolicy policy)
{
	ACL_REAL("aclrtMallocCached", void **, size_t, aclrtMemMallocPolicy)
	return mem_result(f(p, n, policy), p, n);
}

TS_EXPORT aclError aclrtFree(void *p)
{
	ACL_REAL("aclrtFree", void *)
	ts_mem_free((uint64_t)(uintptr_t)p);
	return f(p);
}

/* ---- captures: work launched into a capturing stream runs when the model does ------- */

TS_EXPORT aclError aclmdlRICaptureBegin(aclrtStream st, aclmdlRICaptureMode mode)
{
	ACL_REAL("aclmdlRICaptureBegin", aclrtStream, aclmdlRICaptureMode)
	aclError r = f(st, mode);
	if (r == ACL_SUCCESS)
		ts_graph_capture(true);
	return r;
}

TS_EXPORT aclError aclmdlRICaptureEnd(aclrtStream st, aclmdlRI *ri)
{
	ACL_REAL("aclmdlRICaptureEnd", aclrtStream, aclmdlRI *)
	aclError r = f(st, ri);
	ts_graph_capture(false);
	return r;
}
