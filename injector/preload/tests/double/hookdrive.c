// SPDX-License-Identifier: Apache-2.0
/* TEST DRIVER for the preload library against the CUDA/NCCL/cuBLAS test doubles.
 * Run with libtrainscope.so in LD_PRELOAD: `hookdrive SCENARIO` plays one scenario,
 * drains its own ring (it is the only consumer) and prints "key value" lines that
 * test_hooks.c checks. Linked with the runtime and driver doubles; the framework double
 * (with NCCL and cuBLAS behind it) is opened RTLD_LOCAL. */
#define TRAINSCOPE_WEAK
#include "double.h"
#include "drive.h"
#include "cudefs.h"
#include "ncclprof.h"
#include "ring.h"
#include "trainscope.h"

#include <dirent.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

cudaError_t __cudaLaunchKernel(const void *, ts_dim3, ts_dim3, void **, size_t, CUstream);
cudaError_t __cudaLaunchKernel_ptsz(const void *, ts_dim3, ts_dim3, void **, size_t, CUstream);
cudaError_t cudaLaunchKernel(const void *, ts_dim3, ts_dim3, void **, size_t, CUstream);

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*launchex_fn)(const ts_launch_config *, CUfunction, void **, void **);
typedef CUresult (*getproc_fn)(const char *, void **, int, uint64_t);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			    unsigned, unsigned, CUstream, void **);
typedef CUresult (*hostfunc_fn)(CUstream, void (*)(void *), void *);
typedef CUresult (*graphinst_fn)(uint64_t *, uint64_t, unsigned long long);
typedef CUresult (*graphlaunch_fn)(uint64_t, CUstream);

cudaError_t cudaLaunchCooperativeKernel(const void *, ts_dim3, ts_dim3, void **, size_t,
					CUstream);
cudaError_t cudaLaunchKernelExC(const ts_rt_launch_config *, const void *, void **);
cudaError_t cudaLaunchHostFunc(CUstream, void (*)(void *), void *);
cudaError_t cudaStreamBeginCapture(CUstream, int);
cudaError_t cudaStreamEndCapture(CUstream, uint64_t *);
cudaError_t cudaGraphInstantiate(uint64_t *, uint64_t, unsigned long long);
cudaError_t cudaGraphLaunch(uint64_t, CUstream);
typedef CUresult (*getproc2_fn)(const char *, void **, int, uint64_t, int *);

#define A ((CUstream)0x1000)
#define B ((CUstream)0x2000)
#define C ((CUstream)0x3000)
static struct {
	void *user; /* the framework double, RTLD_LOCAL */
	struct tsd_seen seen; /* what the ring said */
	volatile sig_atomic_t dumps;
} d;

static void die(const char *what)
{
	fprintf(stderr, "hookdrive: %s\n", what);
	exit(2);
}

static void *user_fn(const char *name)
{
	void *f = dlsym(d.user, name);

	if (!f)
		die(name);
	return f;
}

static void rt_launch(int how, CUstream s)
{
	ts_dim3 one = { 1, 1, 1 };
	cudaError_t r = how == 0 ? __cudaLaunchKernel(NULL, one, one, NULL, 0, s)
		      : how == 1 ? __cudaLaunchKernel_ptsz(NULL, one, one, NULL, 0, s)
				 : cudaLaunchKernel(NULL, one, one, NULL, 0, s);
	if (r)
		die("runtime launch failed");
}

static void drain(void)
{
	tsd_drain(&d.seen);
}

static struct trainscope_device_counters counters(void)
{
	struct trainscope_device_counters c;

	if (trainscope_get_device_counters_sized(&c, sizeof(c)) < 0)
		die("trainscope_get_device_counters_sized");
	return c;
}

/* Polls (the library's poller works asynchronously) until done() or 10 s. */
static void wait_until(bool (*done)(void *), void *arg, const char *what)
{
	uint64_t end = tsd_now_ms() + 10000;

	for (;;) {
		drain();
		if (done(arg))
			return;
		if (tsd_now_ms() > end)
			die(what);
		struct timespec t = { 0, 1000000 };
		nanosleep(&t, NULL);
	}
}

static bool have_gpu_steps(void *n)
{
	return d.seen.gpu_steps >= *(int *)n;
}

static bool all_read_back(void *arg)
{
	struct trainscope_device_counters c = counters();

	(void)arg;
	return c.completed >= c.segments + c.samples;
}

static void wait_gpu_steps(int n)
{
	wait_until(have_gpu_steps, &n, "timed out waiting for GPU_STEP records");
}

/* ---- scenarios ------------------------------------------------------------------- */

/* Every launch path counts once: the runtime's (which calls the driver inside), and the
 * driver pointers from dlsym and cuGetProcAddress. */
static void sc_dispatch(void)
{
	launch_fn drv = (launch_fn)dlsym(RTLD_DEFAULT, "cuLaunchKernel");
	getproc2_fn gp = (getproc2_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
	launchex_fn ex = NULL;
	ts_launch_config cfg = { 1, 1, 1, 1, 1, 1, 0, B, NULL, 0 };
	int st;

	if (!drv || !gp || gp("cuLaunchKernelEx", (void **)&ex, 12000, 0, &st) || !ex)
		die("driver entry points");
	for (uint64_t s = 0; s < 10; s++) {
		trainscope_step_begin(s);
		for (int i = 0; i < 4; i++)
			rt_launch(0, A);
		for (int i = 0; i < 2; i++)
			rt_launch(1, NULL);
		for (int i = 0; i < 2; i++)
			rt_launch(2, A);
		drv(NULL, 1, 1, 1, 1, 1, 1, 0, B, NULL, NULL);
		ex(&cfg, NULL, NULL, NULL);
		trainscope_step_end(s);
	}
	wait_gpu_steps(10);
	printf("per_thread_stream_launches %llu\n",
	       (unsigned long long)tsd_stream_launches((void *)2));
}

typedef CUresult (*wait_fn)(CUstream, CUevent, unsigned);

/* cuStreamWaitEvent as a program finds it (through the preload's wrapper). */
static wait_fn stream_wait(void)
{
	wait_fn wait = (wait_fn)dlsym(RTLD_DEFAULT, "cuStreamWaitEvent");

	if (!wait)
		die("cuStreamWaitEvent");
	return wait;
}

/* A stream's wait on another's work ends its busy segment; the next launch opens one. */
static void sc_segwait(void)
{
	wait_fn wait = stream_wait();

	for (uint64_t s = 0; s < 5; s++) {
		trainscope_step_begin(s);
		rt_launch(0, A);
		wait(A, NULL, 0);
		wait(A, NULL, 0); /* none open: nothing ends */
		rt_launch(0, A);
		trainscope_step_end(s);
	}
	wait_gpu_steps(5);
}

/* A stream that waits on another's work before each of its HOOKDRIVE_SEGMENTS (20)
 * kernels a step (autograd's gradient stream under Lightning): its first segments timed,
 * then one in N, and its busy time still every kernel's. */
static void sc_segtail(void)
{
	wait_fn wait = stream_wait();
	int segs = atoi(getenv("HOOKDRIVE_SEGMENTS") ?: "20");

	for (uint64_t s = 0; s < 5; s++) {
		trainscope_step_begin(s);
		rt_launch(0, B);
		for (int i = 0; i < segs; i++) {
			rt_launch(0, A);
			wait(A, NULL, 0);
		}
		trainscope_step_end(s);
	}
	wait_gpu_steps(5);
}

/* Three one-kernel segments on stream A on even steps only, 64 steps (a stream that works
 * every other step), and B's one kernel every step. Each step is waited for, as a real
 * job's host stays within a few steps of its GPU (the poller's tallies span NACC). */
static void sc_segparity(void)
{
	wait_fn wait = stream_wait();

	for (uint64_t s = 0; s < 64; s++) {
		trainscope_step_begin(s);
		rt_launch(0, B);
		for (int i = 0; s % 2 == 0 && i < 3; i++) {
			rt_launch(0, A);
			wait(A, NULL, 0);
		}
		trainscope_step_end(s);
		wait_gpu_steps((int)s + 1);
	}
}

static int in_object(void *p, const char *name)
{
	Dl_info info;

	return p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, name) != NULL;
}

static int in_lib(void *p)
{
	return in_object(p, "libtrainscope");
}

/* What dlsym and cuGetProcAddress hand out, and that callers' RTLD_NEXT still works. */
static void sc_rtld(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	getproc2_fn gp = (getproc2_fn)dlsym(cuda, "cuGetProcAddress_v2");
	getproc2_fn nested = NULL;
	getproc_fn gp1 = (getproc_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress");
	void *p = NULL, *q = NULL, *old = NULL, *ptsz = NULL, *via1 = NULL;
	struct tsd_stats before, after;
	int st;

	if (!cuda || !gp || !gp1)
		die("libcuda double");
	printf("exe_next_in_lib %d\n", in_lib(dlsym(RTLD_NEXT, "cudaLaunchKernel")));
	printf("cudart_next_probe %d\n", tsd_next_probe());
	printf("default_probe %d\n", ((int (*)(void))dlsym(RTLD_DEFAULT, "tsd_probe"))());
	printf("getproc_in_lib %d\n", in_lib((void *)gp));
	printf("default_launch_in_lib %d\n", in_lib(dlsym(RTLD_DEFAULT, "cuLaunchKernel")));
	printf("unhooked_in_double %d\n", in_object(dlsym(RTLD_DEFAULT, "cuEventQuery"), "libcuda.so"));
	printf("missing_is_null %d\n", dlsym(RTLD_DEFAULT, "cuNoSuchFunction") == NULL);
	gp("cuMemAlloc", &p, 12000, 0, &st);
	gp("cuMemAlloc", &old, 3000, 0, &st);
	printf("memalloc_v2_in_lib %d\n", in_lib(p));
	printf("memalloc_old_in_double %d\n", in_object(old, "libcuda.so"));
	gp("cuEventQuery", &q, 12000, 0, &st);
	printf("getproc_unhooked_in_double %d\n", in_object(q, "libcuda.so"));
	gp("cuGetProcAddress", (void **)&nested, 12000, 0, &st);
	printf("nested_getproc_in_lib %d\n", in_lib((void *)nested));
	nested("cuLaunchKernel", &p, 12000, 0, &st);
	nested("cuLaunchKernel", &ptsz, 12000, TS_PROC_PER_THREAD_DEFAULT_STREAM, &st);
	gp1("cuLaunchKernel", &via1, 11000, 0);
	printf("launch_from_nested_in_lib %d\n", in_lib(p));
	printf("ptsz_is_own_wrapper %d\n", in_lib(ptsz) && ptsz != p);
	printf("getproc_v1_launch_in_lib %d\n", in_lib(via1));
	tsd_get_stats(&before);
	trainscope_step_begin(0);
	((launch_fn)p)(NULL, 1, 1, 1, 1, 1, 1, 0, A, NULL, NULL);
	((launch_fn)ptsz)(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	tsd_get_stats(&after);
	printf("calls_reach_double %llu\n", (unsigned long long)(after.launches - before.launches));
	printf("ptsz_records %llu\n", (unsigned long long)tsd_stream_records((void *)2));
	trainscope_step_end(0);
	wait_gpu_steps(1);
}

/* Device memory through the wrapped allocators: live bytes and failures. */
static void sc_memory(void)
{
	getproc2_fn gp = (getproc2_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
	CUresult (*ma)(CUdeviceptr *, size_t) = NULL, (*mf)(CUdeviceptr) = NULL;
	CUresult (*mc)(CUmemHandle *, size_t, const void *, unsigned long long);
	CUresult (*mr)(CUmemHandle);
	CUresult (*maa)(CUdeviceptr *, size_t, CUstream), (*mfa)(CUdeviceptr, CUstream);
	CUdeviceptr p[4];
	CUmemHandle h[2];
	int st;

	gp("cuMemAlloc", (void **)&ma, 12000, 0, &st);
	gp("cuMemFree", (void **)&mf, 12000, 0, &st);
	*(void **)&mc = dlsym(RTLD_DEFAULT, "cuMemCreate");
	*(void **)&mr = dlsym(RTLD_DEFAULT, "cuMemRelease");
	*(void **)&maa = dlsym(RTLD_DEFAULT, "cuMemAllocAsync");
	*(void **)&mfa = dlsym(RTLD_DEFAULT, "cuMemFreeAsync");
	if (!ma || !mf || !mc || !mr || !maa || !mfa)
		die("memory entry points");
	for (int i = 0; i < 3; i++)
		ma(&p[i], 1 << 20);
	mf(p[1]);
	printf("oom_result %d\n", ma(&p[3], 1ull << 50));
	mc(&h[0], 4 << 20, NULL, 0);
	mc(&h[1], 4 << 20, NULL, 0);
	mr(h[0]);
	maa(&p[3], 2 << 20, A);
	mfa(p[3], A);
	mf(0x1234); /* never allocated: ignored */
}

/* Event pairs come from a pool: thousands of timed operations, a bounded number of
 * events. A stalled stream exhausts the pool; launches then go on untimed, never wait. */
static void sc_pool(void)
{
	uint64_t s = 0;

	for (int round = 0; round < 6; round++) {
		for (int i = 0; i < 500; i++, s++) {
			trainscope_step_begin(s);
			rt_launch(0, A);
			trainscope_step_end(s);
		}
		wait_until(all_read_back, NULL, "event pairs not read back");
	}
	struct trainscope_device_counters c = counters();
	printf("before_stall.skipped %llu\n", (unsigned long long)c.timed_skipped);
	tsd_set_stalled(C, 1);
	trainscope_step_begin(s);
	for (int i = 0; i < 1100; i++)
		rt_launch(0, C);
	printf("stalled_launches %llu\n", (unsigned long long)tsd_stream_launches(C));
	c = counters();
	printf("stalled.skipped %llu\n", (unsigned long long)c.timed_skipped);
	tsd_set_stalled(C, 0);
	trainscope_step_end(s);
	wait_until(all_read_back, NULL, "event pairs not read back after the stall");
}

/* A stream that captures a CUDA graph gets no event, from any hook. The capture begins
 * through the runtime, as every capture does: the library asks the driver whether a
 * stream captures only while one is under way. */
static void sc_capture(void)
{
	int (*gemm)(void *, int, int, int) = (int (*)(void *, int, int, int))user_fn("tsd_user_gemm");

	if (cudaStreamBeginCapture(C, 0))
		die("begin capture");
	for (uint64_t s = 0; s < 10; s++) {
		trainscope_step_begin(s);
		for (int i = 0; i < 5; i++) {
			rt_launch(0, C);
			rt_launch(0, A);
		}
		if (gemm(C, 8, 8, 8))
			die("gemm");
		trainscope_step_end(s);
	}
	wait_gpu_steps(10);
	printf("captured_launches %llu\n", (unsigned long long)tsd_stream_launches(C));
	printf("captured_records %llu\n", (unsigned long long)tsd_stream_records(C));
}

/* Two threads launch and multiply in each of 40 steps, new ones each step (the counter
 * slots of those that ended are taken again); then 70 at once in step 40, past the
 * library's 64 slots, all alive until each has done its work. */
static int (*threads_gemm)(void *, int, int, int);
static pthread_barrier_t threads_all;

static void *threads_work(void *arg)
{
	for (int i = 0; i < 100; i++)
		rt_launch(0, A);
	for (int i = 0; i < 3; i++)
		if (threads_gemm(A, 8, 8, 8))
			die("gemm");
	if (arg)
		pthread_barrier_wait(arg);
	return NULL;
}

static void threads_step(uint64_t s, int n, pthread_barrier_t *all)
{
	pthread_t t[70];

	trainscope_step_begin(s);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, threads_work, all))
			die("pthread_create");
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	trainscope_step_end(s);
}

static void sc_threads(void)
{
	threads_gemm = (int (*)(void *, int, int, int))user_fn("tsd_user_gemm");
	for (uint64_t s = 0; s < 40; s++)
		threads_step(s, 2, NULL);
	pthread_barrier_init(&threads_all, NULL, 70);
	threads_step(40, 70, &threads_all);
	pthread_barrier_destroy(&threads_all);
	wait_gpu_steps(41);
}

static void count_call(void *n)
{
	++*(int *)n;
}

/* CUDA graphs and the other launch paths. A graph captured through the runtime (5
 * kernels, on C) and one made by hand (4 kernels, 2 copies, a child of 3 kernels: 7
 * kernels, on A) replay each step; B gets a kernel each through cudaLaunchKernelExC and
 * the cooperative launches of the runtime and the driver; A gets two host functions. */
static void sc_graphs(void)
{
	getproc2_fn gp = (getproc2_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
	graphinst_fn inst = (graphinst_fn)dlsym(RTLD_DEFAULT, "cuGraphInstantiateWithFlags");
	coop_fn coop = (coop_fn)dlsym(RTLD_DEFAULT, "cuLaunchCooperativeKernel");
	graphlaunch_fn glaunch = NULL;
	hostfunc_fn hf = NULL;
	ts_dim3 one = { 1, 1, 1 };
	ts_rt_launch_config cfg = { one, one, 0, B, NULL, 0 };
	uint64_t graph = 0, exec = 0, hand, hexec = 0;
	int calls = 0, st;

	if (!gp || !inst || !coop || gp("cuGraphLaunch", (void **)&glaunch, 12000, 0, &st) ||
	    gp("cuLaunchHostFunc", (void **)&hf, 12000, 0, &st))
		die("driver entry points");
	if (cudaStreamBeginCapture(C, 0))
		die("begin capture");
	for (int i = 0; i < 5; i++)
		rt_launch(0, C);
	if (cudaStreamEndCapture(C, &graph) || cudaGraphInstantiate(&exec, graph, 0))
		die("capture");
	hand = (uint64_t)(uintptr_t)tsd_graph_new(4, 2, tsd_graph_new(3, 0, NULL));
	if (inst(&hexec, hand, 0))
		die("instantiate");
	for (uint64_t s = 0; s < 10; s++) {
		trainscope_step_begin(s);
		if (cudaGraphLaunch(exec, C) || glaunch(hexec, A) ||
		    cudaLaunchKernelExC(&cfg, NULL, NULL) ||
		    cudaLaunchCooperativeKernel(NULL, one, one, NULL, 0, B) ||
		    coop(NULL, 1, 1, 1, 1, 1, 1, 0, B, NULL) ||
		    cudaLaunchHostFunc(A, count_call, &calls) || hf(A, count_call, &calls))
			die("launch");
		trainscope_step_end(s);
	}
	wait_gpu_steps(10);
	printf("host_calls %d\n", calls);
}

/* Collectives captured into a graph (two all-reduces, a group of three, an
 * all-gather, and a kernel, on C) run with each of 4 replays; one eager all-reduce on B
 * follows. */
static void sc_graph_colls(void)
{
	void *(*comm_of)(int) = (void *(*)(int))user_fn("tsd_user_comm");
	int (*allreduce)(void *, void *, uint64_t) =
		(int (*)(void *, void *, uint64_t))user_fn("tsd_user_allreduce");
	int (*group)(void *, void *, int, uint64_t) =
		(int (*)(void *, void *, int, uint64_t))user_fn("tsd_user_group_allreduce");
	int (*allgather)(void *, void *, uint64_t) =
		(int (*)(void *, void *, uint64_t))user_fn("tsd_user_allgather");
	void *comm = comm_of(4);
	uint64_t graph = 0, exec = 0;

	if (cudaStreamBeginCapture(C, 0))
		die("begin capture");
	if (allreduce(comm, C, 256) || allreduce(comm, C, 256) || group(comm, C, 3, 256) ||
	    allgather(comm, C, 10))
		die("capture nccl");
	rt_launch(0, C);
	if (cudaStreamEndCapture(C, &graph) || cudaGraphInstantiate(&exec, graph, 0))
		die("capture");
	for (uint64_t s = 0; s < 4; s++) {
		trainscope_step_begin(s);
		if (cudaGraphLaunch(exec, C))
			die("graph launch");
		trainscope_step_end(s);
	}
	trainscope_step_begin(4);
	if (allreduce(comm, B, 8))
		die("allreduce");
	trainscope_step_end(4);
	wait_gpu_steps(5);
	drain();
	tsd_kv("ring.graph_colls", -1, 0, (uint64_t)d.seen.ngcoll);
	for (int i = 0; i < d.seen.ngcoll; i++) {
		tsd_kv("gcoll", i, "op", d.seen.gcoll[i].kind);
		tsd_kv("gcoll", i, "bytes", d.seen.gcoll[i].graph_coll.bytes);
		tsd_kv("gcoll", i, "step", d.seen.gcoll[i].graph_coll.step_tag - 1);
		tsd_kv("gcoll", i, "count", d.seen.gcoll[i].graph_coll.count);
		tsd_kv("gcoll", i, "ranks", d.seen.gcoll[i].nranks);
	}
}

/* ---- cost: ns per call of each hooked path, run with the preload and without ---- */

#define COST_REPS 7

static double ns_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct cost_ctx {
	launch_fn drv, proc;
	graphlaunch_fn glaunch;
	uint64_t exec;
	int (*allreduce)(void *, void *, uint64_t);
	int (*sgemm)(void *, int, int, int, int, int, const void *, const void *, int,
		     const void *, int, const void *, void *, int);
	void *comm, *blas;
	wait_fn wait;
};

static void c_runtime(struct cost_ctx *c)
{
	(void)c;
	rt_launch(0, A);
}

/* A stream's wait on another's work, then its one kernel: a small segment a call, as
 * Lightning's gradient stream makes 101 a step (the hooked wait and launch together). */
static void c_wait_launch(struct cost_ctx *c)
{
	c->wait(B, NULL, 0);
	rt_launch(0, B);
}

static void c_dlsym(struct cost_ctx *c)
{
	c->drv(NULL, 1, 1, 1, 1, 1, 1, 0, A, NULL, NULL);
}

static void c_getproc(struct cost_ctx *c)
{
	c->proc(NULL, 1, 1, 1, 1, 1, 1, 0, A, NULL, NULL);
}

static void c_graph(struct cost_ctx *c)
{
	c->glaunch(c->exec, A);
}

static void c_nccl(struct cost_ctx *c)
{
	c->allreduce(c->comm, B, 256);
}

static void c_gemm(struct cost_ctx *c)
{
	c->sgemm(c->blas, 0, 0, 64, 32, 16, NULL, NULL, 64, NULL, 32, NULL, NULL, 64);
}

/* The preload's cublasSgemm_v2 where it is preloaded, else the library's own. */
static void *blas_fn(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);

	return f ? f : user_fn(name);
}

/* Cold caches, as a training program leaves them between two launches (its Python and
 * dispatch touch far more than L1 and L2 hold): len bytes of buf read before each call. */
struct evict {
	const unsigned char *buf;
	size_t len;
};

static volatile unsigned char evict_sink;

static void evict(const struct evict *e)
{
	unsigned char acc = 0;

	for (size_t i = 0; i < e->len; i += 64)
		acc ^= e->buf[i];
	evict_sink = acc;
}

/* ns per call of one round of n calls: the loop timed whole, or with e, each call timed
 * alone after its eviction (the clock's own cost is the same with and without the
 * preload). */
static double round_ns(void (*call)(struct cost_ctx *), struct cost_ctx *c, int n,
		       const struct evict *e)
{
	double sum = 0, t0;

	if (!e) { /* nothing else in the loop: the warm rows' numbers as before */
		t0 = ns_now();
		for (int i = 0; i < n; i++)
			call(c);
		return (ns_now() - t0) / n;
	}
	for (int i = 0; i < n; i++) {
		evict(e);
		t0 = ns_now();
		call(c);
		sum += ns_now() - t0;
	}
	return sum / n;
}

/* The median over COST_REPS rounds of n calls (round_ns; e: NULL, or cold caches);
 * between rounds the library's poller reads every event back and the ring is drained,
 * so each round starts from the same state. */
static void cost_of(const char *name, void (*call)(struct cost_ctx *), struct cost_ctx *c, int n,
		    const struct evict *e)
{
	double v[COST_REPS];

	for (int r = 0; r < COST_REPS; r++) {
		v[r] = round_ns(call, c, n, e);
		if (trainscope_step_end) {
			trainscope_step_end((uint64_t)r);
			wait_until(all_read_back, NULL, "events not read back");
		}
	}
	qsort(v, COST_REPS, sizeof(v[0]), cmp_double);
	printf("cost.%s %.1f\n", name, v[COST_REPS / 2]);
}

static void cold_costs(struct cost_ctx *c)
{
	const char *kb = getenv("HOOKDRIVE_EVICT_KB");
	size_t len = kb ? (size_t)strtoul(kb, NULL, 10) * 1024 : 0;
	unsigned char *buf;

	if (!len)
		return;
	if (!(buf = malloc(len)))
		die("evict buffer");
	memset(buf, 1, len);
	struct evict e = { buf, len };
	cost_of("cold_runtime_launch", c_runtime, c, 4000, &e);
	cost_of("cold_cublas_gemm", c_gemm, c, 4000, &e);
	free(buf);
}

/* HOOKDRIVE_PAUSED=1 (with TRAINSCOPE_AB_STEPS=1): the calls measured run in a step
 * the in-run A/B pauses (an odd one), else in a recorded one. */
static uint64_t measured_step(uint64_t recorded)
{
	return atoi(getenv("HOOKDRIVE_PAUSED") ?: "0") ? 1 : recorded;
}

static void sc_cost(void)
{
	getproc2_fn gp = (getproc2_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
	graphinst_fn inst = (graphinst_fn)dlsym(RTLD_DEFAULT, "cuGraphInstantiateWithFlags");
	struct cost_ctx c = { .drv = (launch_fn)dlsym(RTLD_DEFAULT, "cuLaunchKernel"),
			      .wait = stream_wait() };
	void *(*comm_of)(int) = (void *(*)(int))user_fn("tsd_user_comm");
	int st;

	c.allreduce = (int (*)(void *, void *, uint64_t))user_fn("tsd_user_allreduce");
	int (*create)(void **) = (int (*)(void **))user_fn("cublasCreate_v2");
	int (*set_stream)(void *, void *) = (int (*)(void *, void *))user_fn("cublasSetStream_v2");
	*(void **)&c.sgemm = blas_fn("cublasSgemm_v2");
	c.comm = comm_of(4);
	if (create(&c.blas) || set_stream(c.blas, A))
		die("cublas handle");
	if (!c.drv || !gp || !inst || gp("cuLaunchKernel", (void **)&c.proc, 12000, 0, &st) ||
	    gp("cuGraphLaunch", (void **)&c.glaunch, 12000, 0, &st) ||
	    inst(&c.exec, (uint64_t)(uintptr_t)tsd_graph_new(7, 0, NULL), 0))
		die("driver entry points");
	if (trainscope_step_begin)
		trainscope_step_begin(measured_step(0));
	cold_costs(&c);
	cost_of("runtime_launch", c_runtime, &c, 200000, NULL);
	cost_of("dlsym_launch", c_dlsym, &c, 200000, NULL);
	cost_of("getproc_launch", c_getproc, &c, 200000, NULL);
	cost_of("graph_launch", c_graph, &c, 200000, NULL);
	cost_of("wait_launch", c_wait_launch, &c, 200000, NULL);
	cost_of("nccl_allreduce", c_nccl, &c, 500, NULL);
	cost_of("cublas_gemm", c_gemm, &c, 20000, NULL);
}

/* 1 in N kernels timed; with a tiny host budget N grows. */
/* CPU ns the process's threads other than the calling one have used: the library's
 * poller, in a process that starts no thread of its own (Linux schedstat). */
static uint64_t others_cpu_ns(void)
{
	char path[300];
	uint64_t sum = 0, ns;
	long self = (long)syscall(SYS_gettid);
	DIR *dir = opendir("/proc/self/task");
	struct dirent *t;

	while (dir && (t = readdir(dir))) {
		if (t->d_name[0] == '.' || strtol(t->d_name, NULL, 10) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", t->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%" SCNu64, &ns) == 1)
			sum += ns;
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return sum;
}

/* The poller's own CPU with nothing in flight, once a step's launch has set the device
 * up and its segment is read back: what it costs a process to wake every
 * TRAINSCOPE_POLL_MS and scan, over one second (with TRAINSCOPE_AB_STEPS=1 and
 * HOOKDRIVE_PAUSED=1, in a paused step). A benchmark's wait, not a test's
 * synchronisation. */
static void sc_idle(void)
{
	struct timespec second = { 1, 0 };

	trainscope_step_begin(0);
	rt_launch(0, A);
	trainscope_step_end(0);
	wait_until(all_read_back, NULL, "the step's segment not read back");
	trainscope_step_begin(measured_step(2));
	uint64_t before = others_cpu_ns();
	nanosleep(&second, NULL);
	printf("cost.idle_poller_us_per_s %.1f\n", (double)(others_cpu_ns() - before) / 1e3);
}

static void sc_sampling(void)
{
	uint64_t max_n = 0;

	for (uint64_t s = 0; s < 10; s++) {
		trainscope_step_begin(s);
		for (int i = 0; i < 40; i++)
			rt_launch(0, A);
		trainscope_step_end(s);
		uint64_t n = counters().sample_n;
		max_n = n > max_n ? n : max_n;
	}
	wait_gpu_steps(10);
	printf("max_sample_n %llu\n", (unsigned long long)max_n);
}

/* 30 steps of 200 launches with N falling from its start (TRAINSCOPE_SAMPLE_N) as
 * sampling costs nothing: the thread's launches must sample again once it has. */
static void sc_samplefall(void)
{
	for (uint64_t s = 0; s < 30; s++) {
		trainscope_step_begin(s);
		for (int i = 0; i < 200; i++)
			rt_launch(0, A);
		trainscope_step_end(s);
	}
	wait_gpu_steps(30);
}

static void on_dump(int sig)
{
	(void)sig;
	d.dumps++;
}

static bool hang_seen(void *arg)
{
	(void)arg;
	return d.seen.nhang > 0;
}

/* A collective that never completes: a Hang record after the timeout, dump signal first. */
static void sc_hang(void)
{
	void *(*comm_of)(int) = (void *(*)(int))user_fn("tsd_user_comm");
	int (*allreduce)(void *, void *, uint64_t) =
		(int (*)(void *, void *, uint64_t))user_fn("tsd_user_allreduce");
	void *comm = comm_of(4);

	signal(SIGUSR1, on_dump);
	trainscope_set_dump_signal(SIGUSR1);
	trainscope_step_begin(0);
	rt_launch(0, A);
	tsd_set_stalled(B, 1);
	uint64_t t0 = tsd_now_ms();
	if (allreduce(comm, B, 1024))
		die("allreduce");
	wait_until(hang_seen, NULL, "no hang reported");
	printf("hang_after_ms %llu\n", (unsigned long long)(tsd_now_ms() - t0));
	printf("dumps %d\n", (int)d.dumps);
}

/* Collectives in a local-scope NCCL: outermost only, a group timed as one. */
static void sc_nccl(void)
{
	void *(*comm_of)(int) = (void *(*)(int))user_fn("tsd_user_comm");
	int (*group)(void *, void *, int, uint64_t) =
		(int (*)(void *, void *, int, uint64_t))user_fn("tsd_user_group_allreduce");
	int (*bcast)(void *, void *, uint64_t) =
		(int (*)(void *, void *, uint64_t))user_fn("tsd_user_bcast");
	int (*allgather)(void *, void *, uint64_t) =
		(int (*)(void *, void *, uint64_t))user_fn("tsd_user_allgather");
	void *comm = comm_of(4);

	trainscope_step_begin(0);
	if (group(comm, B, 3, 256) || bcast(comm, B, 100) || allgather(comm, B, 10))
		die("nccl");
	trainscope_step_end(0);
	wait_gpu_steps(1);
}

/* A blocking collective runs on the compute stream (PyTorch does so for synchronous
 * collectives): the stream's busy time before and after it is compute, its own is
 * communication, in every step. */
static void sc_sync_coll(void)
{
	void *(*comm_of)(int) = (void *(*)(int))user_fn("tsd_user_comm");
	int (*allreduce)(void *, void *, uint64_t) =
		(int (*)(void *, void *, uint64_t))user_fn("tsd_user_allreduce");
	void *comm = comm_of(2);

	for (int st = 0; st < 3; st++) {
		trainscope_step_begin((uint64_t)st);
		rt_launch(0, A);
		rt_launch(0, A);
		if (allreduce(comm, A, 1024))
			die("allreduce");
		for (int k = 0; k < 3; k++)
			rt_launch(0, A);
		trainscope_step_end((uint64_t)st);
	}
	wait_gpu_steps(3);
}


/* Communicators made through ncclCommInitRank and ncclCommSplit are announced with the
 * name every member gives them, and each numbers its own collectives from 1. */
static void sc_comms(void)
{
	void *(*init)(int, int, char) = (void *(*)(int, int, char))user_fn("tsd_user_comm_init");
	void *(*split)(void *, int, int) = (void *(*)(void *, int, int))user_fn("tsd_user_comm_split");
	int (*destroy)(void *) = (int (*)(void *))user_fn("tsd_user_comm_destroy");
	int (*allreduce)(void *, void *, uint64_t) =
		(int (*)(void *, void *, uint64_t))user_fn("tsd_user_allreduce");
	void *world = init(4, 2, 'x'), *same = init(4, 3, 'x'), *half;

	if (!world || !same || !(half = split(world, 1, 1)))
		die("comm init");
	trainscope_step_begin(0);
	if (allreduce(world, B, 8) || allreduce(world, B, 8) || allreduce(half, B, 8) ||
	    allreduce(same, B, 8))
		die("allreduce");
	trainscope_step_end(0);
	wait_gpu_steps(1);
	destroy(half);
	drain();
	for (int i = 0; i < d.seen.ncomm; i++) {
		tsd_kv("comm", i, "nranks", d.seen.comm[i].comm.members);
		tsd_kv("comm", i, "rank", d.seen.comm[i].comm.rank);
	}
	/* the rank as the ring now says it: the first communicator's, for a process that
	 * had none (later ones, and splits, change nothing) */
	printf("ring.rank %d\nring.world %d\nring.idents %d\n", d.seen.ring->id.rank,
	       d.seen.ring->id.world_size, d.seen.nident);
	printf("comm_ids_agree %d\n", d.seen.ncomm >= 2 &&
	       d.seen.comm[0].comm.hash == d.seen.comm[1].comm.hash);
	printf("split_id_differs %d\n", d.seen.ncomm >= 3 &&
	       d.seen.comm[2].comm.hash != d.seen.comm[0].comm.hash);
	/* two members of one communicator made by ncclCommInitRankScalable, non-blocking */
	void *(*scalable)(int, int, char) =
		(void *(*)(int, int, char))user_fn("tsd_user_comm_init_scalable");
	int before = d.seen.ncomm;
	if (!scalable(8, 5, 'y') || !scalable(8, 6, 'y'))
		die("scalable init");
	trainscope_step_begin(1);
	trainscope_step_end(1);
	wait_gpu_steps(2);
	drain();
	printf("scalable_comms %d\n", d.seen.ncomm - before);
	if (d.seen.ncomm == before + 2) {
		tsd_kv("scalable", 0, "nranks", d.seen.comm[before].comm.members);
		tsd_kv("scalable", 0, "rank", d.seen.comm[before].comm.rank);
		uint64_t h = d.seen.comm[before].comm.hash;
		printf("scalable_ids_agree %d\n", h == d.seen.comm[before + 1].comm.hash &&
							   h != d.seen.comm[0].comm.hash);
	}
	for (int i = 0; i < d.seen.ncoll; i++)
		printf("coll.%d.comm_is %d\n", i,
		       d.seen.coll[i].coll.comm == d.seen.comm[0].comm.hash ? 0 :
		       d.seen.coll[i].coll.comm == d.seen.comm[2].comm.hash ? 2 : -1);
}

/* A GEMM whose library calls another GEMM inside counts once, with its flops. */
static void sc_cublas(void)
{
	int (*gemm)(void *, int, int, int) = (int (*)(void *, int, int, int))user_fn("tsd_user_gemm");

	trainscope_step_begin(0);
	if (gemm(A, 64, 32, 16))
		die("gemm");
	trainscope_step_end(0);
	wait_gpu_steps(1);
}

/* NCCL's profiler plugin, v5 and v4 as NCCL would drive them: collectives whose
 * channels' GPU timers give their device time; v3 takes no events. */
static ts_profiler_v5 *p5;
static ts_profiler_v4 *p4;

static void plugin_v5_coll(void *ctx, uint64_t seq, uint64_t t0)
{
	ts_prof_descr_v5 d5 = { .type = TS_PROF_COLL };
	ts_prof_state_args_v5 a = { 0 };
	void *op = NULL, *ch[2] = { 0 };

	d5.coll.seq = seq, d5.coll.func = "AllGather", d5.coll.count = 256;
	d5.coll.dtype = "ncclFloat32", d5.coll.nchannels = 2, d5.coll.algo = "Ring";
	p5->start_event(ctx, &op, &d5);
	for (int i = 0; i < 2; i++) {
		ts_prof_descr_v5 k = { .type = TS_PROF_KERNEL_CH, .parent = op };
		k.kernel_ch.ptimer = t0 + 200 * (uint64_t)i;
		p5->start_event(ctx, &ch[i], &k);
	}
	p5->stop_event(op); /* the host side ends before the kernel */
	for (int i = 0; i < 2; i++) {
		a.kernel_ch.ptimer = t0 + 4000 - 1000 * (uint64_t)i;
		p5->record_event_state(ch[i], TS_PROF_KERNEL_CH_STOP, &a);
		p5->stop_event(ch[i]);
	}
}

static void plugin_v4_coll(void *ctx, uint64_t seq, uint64_t t0)
{
	ts_prof_descr_v4 d4 = { .type = TS_PROF_COLL };
	ts_prof_state_args_v4 a = { 0 };
	void *op = NULL, *ch = NULL;

	d4.coll.seq = seq, d4.coll.func = "AllReduce", d4.coll.count = 1000;
	d4.coll.dtype = "ncclBfloat16", d4.coll.nchannels = 1, d4.coll.algo = "Tree";
	p4->start_event(ctx, &op, &d4);
	ts_prof_descr_v4 k = { .type = TS_PROF_KERNEL_CH, .parent = op };
	k.kernel_ch.ptimer = t0;
	p4->start_event(ctx, &ch, &k);
	a.kernel_ch.ptimer = t0 + 2500;
	p4->record_event_state(ch, TS_PROF_KERNEL_CH_STOP, &a);
	p4->stop_event(ch);
	p4->stop_event(op);
}

static bool have_colls(void *n)
{
	return d.seen.ncoll >= *(int *)n;
}

static bool have_peers(void *n)
{
	drain();
	return d.seen.npeer >= *(int *)n;
}

/* A proxy op of `steps` network transfers of `size` bytes, each taking `ms` or more. */
static void plugin_proxy(void *ctx, bool v5, int peer, int is_send, int steps, size_t size, int ms)
{
	void *op = NULL;

	if (v5) {
		ts_prof_descr_v5 e = { .type = TS_PROF_PROXY_OP };
		e.proxy_op.peer = peer, e.proxy_op.is_send = is_send;
		p5->start_event(ctx, &op, &e);
	} else {
		ts_prof_descr_v4 e = { .type = TS_PROF_PROXY_OP };
		e.proxy_op.peer = peer, e.proxy_op.is_send = is_send;
		p4->start_event(ctx, &op, &e);
	}
	for (int i = 0; i < steps; i++) {
		void *st = NULL;
		struct timespec t = { 0, ms * 1000000L };
		if (v5) {
			ts_prof_descr_v5 e = { .type = TS_PROF_PROXY_STEP, .parent = op };
			ts_prof_state_args_v5 a = { .proxy_step.size = size };
			p5->start_event(ctx, &st, &e);
			p5->record_event_state(st, TS_PROF_STEP_SEND_WAIT, &a);
		} else {
			ts_prof_descr_v4 e = { .type = TS_PROF_PROXY_STEP, .parent = op };
			ts_prof_state_args_v4 a = { .proxy_step.size = size };
			p4->start_event(ctx, &st, &e);
			p4->record_event_state(st, TS_PROF_STEP_SEND_WAIT, &a);
		}
		nanosleep(&t, NULL); /* the transfer's duration, not a wait for anything */
		(v5 ? p5->stop_event : p4->stop_event)(st);
	}
	(v5 ? p5->stop_event : p4->stop_event)(op);
}

static void sc_plugin(void)
{
	ts_profiler_v1 *p3 = dlsym(RTLD_DEFAULT, "ncclProfiler_v3");
	void *c5 = NULL, *c4 = NULL, *c3 = NULL;
	int m5 = 0, m4 = 0, m3 = -1, two = 2;

	p5 = dlsym(RTLD_DEFAULT, "ncclProfiler_v5");
	p4 = dlsym(RTLD_DEFAULT, "ncclProfiler_v4");
	if (!p5 || !p4 || !p3 || !dlsym(RTLD_DEFAULT, "ncclProfiler_v1"))
		die("profiler plugin symbols");
	trainscope_step_begin(0);
	p5->init(&c5, 0xabc, &m5, "c5", 1, 4, 0, NULL);
	p4->init(&c4, &m4, "c4", 0xdef, 1, 2, 0, NULL);
	p3->init(&c3, &m3);
	printf("mask_v5 %d\nmask_v4 %d\nmask_v3 %d\n", m5, m4, m3);
	plugin_v5_coll(c5, 7, 1000000);
	plugin_v4_coll(c4, 3, 2000000);
	wait_until(have_colls, &two, "no collective from the plugin");
	/* network sends: 2 x 1 MiB to peer 1 of c5, one 4 KiB to peer 0 of c4; a receive
	 * (it waits for its sender too) is no transfer time */
	plugin_proxy(c5, true, 1, 1, 2, 1 << 20, 2);
	plugin_proxy(c5, true, 3, 0, 2, 1 << 20, 2);
	plugin_proxy(c4, false, 0, 1, 1, 4096, 1);
	trainscope_step_end(0);
	trainscope_step_begin(1);
	wait_until(have_peers, &two, "no per-peer sends from the plugin");
	for (int i = 0; i < d.seen.npeer; i++) {
		const struct ts_rec *r = &d.seen.peer[i];
		int k = r->peer.comm == 0xabc ? 0 : 1;
		tsd_kv("peer", k, "peer", r->peer_rank);
		tsd_kv("peer", k, "bytes", r->peer.bytes);
		tsd_kv("peer", k, "sends", r->peer.sends);
		tsd_kv("peer", k, "ms", r->dur_ns / 1000000);
	}
	tsd_kv("ring.peers", -1, 0, (uint64_t)d.seen.npeer);
	p5->finalize(c5);
	p4->finalize(c4);
	p3->finalize(c3);
}

/* ---- output ---------------------------------------------------------------------- */

static void print_all(void)
{
	struct trainscope_device_counters c = counters();
	struct tsd_stats t;
	struct tsd_seen *s = &d.seen;

	drain();
	tsd_get_stats(&t);
	tsd_kv("ts.launches", -1, 0, c.launches);
	tsd_kv("ts.api_calls", -1, 0, c.api_calls);
	tsd_kv("ts.segments", -1, 0, c.segments);
	tsd_kv("ts.samples", -1, 0, c.samples);
	tsd_kv("ts.completed", -1, 0, c.completed);
	tsd_kv("ts.timed_skipped", -1, 0, c.timed_skipped);
	tsd_kv("ts.capture_skips", -1, 0, c.capture_skips);
	tsd_kv("ts.hangs", -1, 0, c.hangs);
	tsd_kv("ts.sample_n", -1, 0, c.sample_n);
	tsd_kv("ts.mem_live", -1, 0, c.mem_live);
	tsd_kv("ts.alloc_failures", -1, 0, c.alloc_failures);
	tsd_kv("ts.gemms", -1, 0, c.gemms);
	tsd_kv("ts.colls", -1, 0, c.colls);
	tsd_kv("ts.graphs", -1, 0, c.graphs);
	tsd_kv("ts.graphs_uncounted", -1, 0, c.graphs_uncounted);
	tsd_kv("ts.graph_launches", -1, 0, c.graph_launches);
	tsd_kv("ts.graph_colls", -1, 0, c.graph_colls);
	tsd_kv("ts.graph_colls_uncounted", -1, 0, c.graph_colls_uncounted);
	tsd_kv("ts.seg_waits", -1, 0, c.seg_waits);
	tsd_kv("ts.seg_switches", -1, 0, c.seg_switches);
	tsd_kv("ts.seg_untimed", -1, 0, c.seg_untimed);
	tsd_kv("ts.tail_unsampled", -1, 0, c.tail_unsampled);
	tsd_kv("ts.captured", -1, 0, c.captured);
	tsd_kv("ts.host_funcs", -1, 0, c.host_funcs);
	tsd_kv("dbl.host_funcs", -1, 0, t.host_funcs);
	tsd_kv("dbl.launches", -1, 0, t.launches);
	tsd_kv("dbl.events_created", -1, 0, t.events_created);
	tsd_kv("dbl.records_while_capturing", -1, 0, t.records_while_capturing);
	tsd_kv("ring.step_ctr_launches", -1, 0, s->ctr_launches);
	tsd_kv("ring.step_ctrs", -1, 0, (uint64_t)s->ctr_steps);
	tsd_kv("ring.step_ctr_unclocked", -1, 0, (uint64_t)s->ctr_unclocked);
	tsd_kv("ring.gpu_steps", -1, 0, (uint64_t)s->gpu_steps);
	for (int i = 0; i < s->gpu_steps; i++) {
		tsd_kv("gpu_step", i, "compute_ns", s->gpu_step[i].gpu_step.compute_ns);
		tsd_kv("gpu_step", i, "comm_ns", s->gpu_step[i].gpu_step.comm_ns);
		tsd_kv("gpu_step", i, "ksamples", s->gpu_step[i].gpu_step.ksamples);
		tsd_kv("gpu_step", i, "ksample_ns", s->gpu_step[i].dur_ns);
		tsd_kv("gpu_step", i, "untimed", s->gpu_step[i].kind == TS_GPU_STEP_UNTIMED);
	}
	tsd_kv("ring.colls", -1, 0, (uint64_t)s->ncoll);
	tsd_kv("ring.comms", -1, 0, (uint64_t)s->ncomm);
	for (int i = 0; i < s->ncoll; i++) {
		tsd_kv("coll", i, "op", s->coll[i].kind & 0xff);
		tsd_kv("coll", i, "bytes", s->coll[i].coll.bytes);
		tsd_kv("coll", i, "ranks", s->coll[i].nranks);
		tsd_kv("coll", i, "seq", s->coll[i].coll.seq);
		tsd_kv("coll", i, "has_comm", s->coll[i].coll.comm != 0);
		tsd_kv("coll", i, "dur_ns", s->coll[i].dur_ns);
		tsd_kv("coll", i, "algo", s->coll[i].kind >> 8);
		tsd_kv("coll", i, "comm", s->coll[i].coll.comm);
	}
	tsd_kv("ring.gemms", -1, 0, (uint64_t)s->ngemm);
	for (int i = 0; i < s->ngemm; i++) {
		tsd_kv("gemm", i, "flops", s->gemm[i].gemm.flops);
		tsd_kv("gemm", i, "dur_ns", s->gemm[i].dur_ns);
	}
	tsd_kv("ring.hangs", -1, 0, (uint64_t)s->nhang);
	for (int i = 0; i < s->nhang; i++) {
		tsd_kv("hang", i, "op", s->hang[i].kind);
		tsd_kv("hang", i, "has_comm", s->hang[i].hang.comm != 0);
		tsd_kv("hang", i, "seq", s->hang[i].hang.seq);
		tsd_kv("hang", i, "pending_ms", s->hang[i].dur_ns / 1000000);
	}
}

static const struct {
	const char *name;
	void (*run)(void);
} scenarios[] = {
	{ "dispatch", sc_dispatch }, { "segwait", sc_segwait }, { "segtail", sc_segtail }, { "segparity", sc_segparity }, { "rtld", sc_rtld },         { "memory", sc_memory },
	{ "pool", sc_pool },         { "capture", sc_capture },   { "sampling", sc_sampling }, { "samplefall", sc_samplefall },
	{ "hang", sc_hang },         { "nccl", sc_nccl },         { "sync_coll", sc_sync_coll },         { "comms", sc_comms },         { "cublas", sc_cublas },
	{ "plugin", sc_plugin },     { "graphs", sc_graphs },     { "graph_colls", sc_graph_colls },     { "cost", sc_cost },
	{ "threads", sc_threads },   { "idle", sc_idle },
};

static void open_ring(void)
{
	if (tsd_open_ring(&d.seen))
		die("no ring: is TRAINSCOPE_RING_DIR set?");
}

static void open_user(const char *self)
{
	char path[4096];
	const char *slash = strrchr(self, '/');

	snprintf(path, sizeof(path), "%.*s/libtsd_user.so", slash ? (int)(slash - self) : 1,
		 slash ? self : ".");
	d.user = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!d.user)
		die(dlerror());
}

int main(int argc, char **argv)
{
	bool cost = argc == 2 && !strcmp(argv[1], "cost"); /* also runs without the preload */

	if (argc != 2 || (!trainscope_step_begin && !cost))
		die("usage: LD_PRELOAD=libtrainscope.so hookdrive SCENARIO");
	open_user(argv[0]);
	if (cost) {
		if (trainscope_step_begin)
			open_ring();
		sc_cost();
		return 0;
	}
	open_ring();
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(argv[1], scenarios[i].name)) {
			scenarios[i].run();
			print_all();
			return 0;
		}
	die("unknown scenario");
}
