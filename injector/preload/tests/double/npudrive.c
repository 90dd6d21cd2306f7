// SPDX-License-Identifier: Apache-2.0
/* TEST DRIVER for the preload library's NPU hooks against the ACL and HCCL test doubles
 * (npu_double.h), in two parts:
 *
 *   npudrive unit | hang       one process under the preload: plays the scenario, drains
 *                              its own ring and prints "key value" lines (test_hooks.c)
 *   npudrive job --ranks N --steps S [--slow-rank R --slow-step K --slow-factor F]
 *                [--hang-rank R --hang-step K] [--kernels N --kernel-us U]
 *                              a torch_npu-like data-parallel job: N rank processes, each
 *                              step N aclnn operators and one HcclAllReduce of the gradients on
 *                              its stream, then a stream synchronize; a slow rank's
 *                              kernels take F times as long from step K; a hanging rank
 *                              never enters step K's all-reduce (e2e/test-npu.sh)
 *
 * Linked with the ACL and HCCL doubles. */
#define TRAINSCOPE_WEAK
#include "npu_double.h"
#include "drive.h"
#include "hccl_defs.h"
#include "ring.h"
#include "trainscope.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int aclError;
aclError aclrtSetDevice(int32_t);
aclError aclrtCreateStream(void **);
aclError aclrtLaunchKernel(void *, uint32_t, const void *, size_t, void *);
aclError aclrtLaunchKernelV2(void *, uint32_t, const void *, size_t, void *, void *);
aclError aclrtLaunchKernelWithConfig(void *, uint32_t, void *, void *, void *, void *);
aclError aclrtLaunchKernelWithHostArgs(void *, uint32_t, void *, void *, void *, size_t, void *,
				       size_t);
aclError aclrtSynchronizeStream(void *);
aclError aclrtCreateEventWithFlag(void **, uint32_t);
aclError aclrtRecordEvent(void *, void *);
aclError aclrtStreamWaitEvent(void *, void *);
aclError aclrtMalloc(void **, size_t, int);
aclError aclrtFree(void *);
aclError aclmdlRICaptureBegin(void *, int);
aclError aclmdlRICaptureEnd(void *, void **);
ts_hccl_result HcclGetRootInfo(ts_hccl_root_info *);
#define X(name, params) ts_hccl_result name params;
TS_HCCL_FNS(X)
#undef X

/* aclnnMatmul from libopapi, found by name as torch_npu finds its operators. */
typedef int (*aclnn_ws_fn)(const void *, const void *, void *, int8_t, uint64_t *, void **);
typedef int (*aclnn_run_fn)(void *, uint64_t, void *, void *);
static struct {
	void *lib;
	aclnn_ws_fn ws;
	aclnn_run_fn run;
	bool ws_wrapped, run_wrapped;
} opapi;

#define MS 1000000ull
static struct tsd_seen seen; /* what the ring said */

static void die(const char *what)
{
	fprintf(stderr, "npudrive: %s\n", what);
	exit(2);
}

static void check(int r, const char *what)
{
	if (r != 0) {
		fprintf(stderr, "npudrive: %s failed: %d\n", what, r);
		exit(3);
	}
}

static void drain(void)
{
	tsd_drain(&seen);
}

/* Polls the ring (the library's poller works asynchronously) until done or 10 s. */
static void wait_for(bool (*done)(void), const char *what)
{
	uint64_t end = tsd_now_ms() + 10000;

	while (drain(), !done()) {
		if (tsd_now_ms() > end)
			die(what);
		struct timespec t = { 0, 1000000 };
		nanosleep(&t, NULL);
	}
}

static struct trainscope_device_counters counters(void)
{
	struct trainscope_device_counters c;

	if (trainscope_get_device_counters_sized(&c, sizeof(c)) < 0)
		die("trainscope_get_device_counters_sized");
	return c;
}

static bool all_read_back(void)
{
	struct trainscope_device_counters c = counters();

	return c.completed >= c.segments + c.samples;
}

static int want_steps;
static bool have_steps(void)
{
	return seen.gpu_steps >= want_steps;
}

static bool have_hang(void)
{
	return seen.nhang > 0;
}

/* Later work on waiter starts after other's work so far: torch_npu's HCCL stream waits
 * for the gradients, the compute stream for the reduced ones. */
static void stream_after(void *waiter, void *other, void *ev)
{
	check(aclrtRecordEvent(ev, other), "aclrtRecordEvent");
	check(aclrtStreamWaitEvent(waiter, ev), "aclrtStreamWaitEvent");
}

static void open_opapi(const char *self)
{
	char path[4096];
	const char *slash = strrchr(self, '/');
	void *(*addr)(void);

	snprintf(path, sizeof(path), "%.*s/libopapi.so", slash ? (int)(slash - self) : 1,
		 slash ? self : ".");
	if (!(opapi.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
		die(dlerror());
	*(void **)&opapi.ws = dlsym(opapi.lib, "aclnnMatmulGetWorkspaceSize");
	*(void **)&opapi.run = dlsym(opapi.lib, "aclnnMatmul");
	if (!opapi.ws || !opapi.run)
		die("libopapi has no aclnnMatmul");
	*(void **)&addr = dlsym(opapi.lib, "tsd_opapi_ws_addr");
	opapi.ws_wrapped = addr() != (void *)opapi.ws;
	*(void **)&addr = dlsym(opapi.lib, "tsd_opapi_run_addr");
	opapi.run_wrapped = addr() != (void *)opapi.run;
}

/* One operator on the stream, in aclnn's two phases. */
static void matmul(void *stream)
{
	uint64_t size;
	void *executor;

	check(opapi.ws(NULL, NULL, NULL, 0, &size, &executor), "aclnnMatmulGetWorkspaceSize");
	check(opapi.run(NULL, size, executor, stream), "aclnnMatmul");
}

static void comm_world(void **comm, uint32_t n, uint32_t rank)
{
	ts_hccl_root_info root;

	check(HcclGetRootInfo(&root), "HcclGetRootInfo");
	check(HcclCommInitRootInfo(n, &root, rank, comm), "HcclCommInitRootInfo");
}

/* ---- unit scenarios --------------------------------------------------------------- */

/* 4 steps: each launches one kernel through each of the four launch paths and one aclnn
 * operator (1 ms each on the double), then on a communication stream an all-reduce, an all-gather, a group of
 * two reduce-scatters, a batched send and receive; memory comes and goes; a capture's
 * work counts as captured. */
static void sc_unit(void)
{
	void *s, *cs, *ev, *c, *sub, *p[4];
	uint32_t ids[2] = { 0, 1 };
	ts_hccl_sr_item items[2] = { { TS_HCCL_SEND, NULL, 10, 4, 1 },
				     { TS_HCCL_RECV, NULL, 30, 3, 1 } };

	check(aclrtSetDevice(0), "aclrtSetDevice");
	check(aclrtCreateStream(&s), "aclrtCreateStream");
	check(aclrtCreateStream(&cs), "aclrtCreateStream");
	check(aclrtCreateEventWithFlag(&ev, 0x8), "aclrtCreateEventWithFlag");
	comm_world(&c, 4, 0);
	check(HcclCreateSubCommConfig(&c, 2, ids, 5, 0, NULL, &sub), "HcclCreateSubCommConfig");
	for (uint64_t step = 0; step < 4; step++) {
		trainscope_step_begin(step);
		check(aclrtLaunchKernel(NULL, 1, NULL, 0, s), "aclrtLaunchKernel");
		check(aclrtLaunchKernelV2(NULL, 1, NULL, 0, NULL, s), "aclrtLaunchKernelV2");
		check(aclrtLaunchKernelWithConfig(NULL, 1, s, NULL, NULL, NULL), "WithConfig");
		check(aclrtLaunchKernelWithHostArgs(NULL, 1, s, NULL, NULL, 0, NULL, 0), "HostArgs");
		matmul(s);
		stream_after(cs, s, ev);
		check(HcclAllReduce(NULL, NULL, 256, 4 /* FP32 */, 0, c, cs), "HcclAllReduce");
		check(HcclAllGather(NULL, NULL, 10, 11 /* BF16 */, c, cs), "HcclAllGather");
		check(HcclGroupStart(), "HcclGroupStart");
		check(HcclReduceScatter(NULL, NULL, 8, 3 /* FP16 */, 0, c, cs), "HcclReduceScatter");
		check(HcclReduceScatter(NULL, NULL, 8, 3, 0, c, cs), "HcclReduceScatter");
		check(HcclGroupEnd(), "HcclGroupEnd");
		check(HcclBatchSendRecv(items, 2, sub, cs), "HcclBatchSendRecv");
		check(aclrtSynchronizeStream(cs), "aclrtSynchronizeStream");
		trainscope_step_end(step);
	}
	for (int i = 0; i < 4; i++)
		check(aclrtMalloc(&p[i], (size_t)(i + 1) << 20, 0), "aclrtMalloc");
	check(aclrtFree(p[3]), "aclrtFree");
	setenv("TSD_NPU_MEM_LIMIT", "1048576", 1);
	if (aclrtMalloc(&p[3], 2u << 20, 0) == 0)
		die("the double's memory limit did not fail the allocation");
	check(aclmdlRICaptureBegin(s, 0), "aclmdlRICaptureBegin");
	check(aclrtLaunchKernel(NULL, 1, NULL, 0, s), "captured launch");
	check(aclmdlRICaptureEnd(s, NULL), "aclmdlRICaptureEnd");
	check(HcclCommDestroy(sub), "HcclCommDestroy");
	want_steps = 4;
	wait_for(have_steps, "no GPU_STEP records");
	wait_for(all_read_back, "events were not read back");
}

/* An all-reduce whose peer never enters: the kernel before it finishes, the all-reduce
 * never does, so the hang watch names it (and not the kernels' busy time). */
static void sc_hang(void)
{
	void *s, *c;

	check(aclrtSetDevice(0), "aclrtSetDevice");
	check(aclrtCreateStream(&s), "aclrtCreateStream");
	comm_world(&c, 2, 0);
	tsd_npu_set_stalled(s, 1);
	trainscope_step_begin(0);
	check(aclrtLaunchKernel(NULL, 1, NULL, 0, s), "aclrtLaunchKernel");
	check(HcclAllReduce(NULL, NULL, 16, 4, 0, c, s), "HcclAllReduce");
	wait_for(have_hang, "no hang record");
}

static void print_all(void)
{
	struct trainscope_device_counters c = counters();
	struct tsd_npu_stats t;

	drain();
	tsd_npu_get_stats(&t);
	tsd_kv("ts.launches", -1, 0, c.launches);
	tsd_kv("aclnn.run_wrapped", -1, 0, opapi.run_wrapped);
	tsd_kv("aclnn.ws_wrapped", -1, 0, opapi.ws_wrapped);
	tsd_kv("ts.colls", -1, 0, c.colls);
	tsd_kv("ts.segments", -1, 0, c.segments);
	tsd_kv("ts.mem_live", -1, 0, c.mem_live);
	tsd_kv("ts.alloc_failures", -1, 0, c.alloc_failures);
	tsd_kv("ts.captured", -1, 0, c.captured);
	tsd_kv("ts.capture_skips", -1, 0, c.capture_skips);
	tsd_kv("dbl.launches", -1, 0, t.launches);
	tsd_kv("dbl.records_while_capturing", -1, 0, t.records_while_capturing);
	tsd_kv("ring.step_ctr_launches", -1, 0, seen.ctr_launches);
	tsd_kv("ring.gpu_steps", -1, 0, (uint64_t)seen.gpu_steps);
	for (int i = 0; i < seen.gpu_steps; i++) {
		tsd_kv("gpu_step", i, "compute_ns", seen.gpu_step[i].gpu_step.compute_ns);
		tsd_kv("gpu_step", i, "comm_ns", seen.gpu_step[i].gpu_step.comm_ns);
	}
	tsd_kv("ring.comms", -1, 0, (uint64_t)seen.ncomm);
	for (int i = 0; i < seen.ncomm; i++) {
		tsd_kv("comm", i, "id", seen.comm[i].comm.hash);
		tsd_kv("comm", i, "ranks", seen.comm[i].comm.members);
		tsd_kv("comm", i, "rank", seen.comm[i].comm.rank);
	}
	tsd_kv("ring.colls", -1, 0, (uint64_t)seen.ncoll);
	for (int i = 0; i < seen.ncoll; i++) {
		tsd_kv("coll", i, "op", seen.coll[i].kind & 0xff);
		tsd_kv("coll", i, "bytes", seen.coll[i].coll.bytes);
		tsd_kv("coll", i, "ranks", seen.coll[i].nranks);
		tsd_kv("coll", i, "seq", seen.coll[i].coll.seq);
		tsd_kv("coll", i, "comm", seen.coll[i].coll.comm);
		tsd_kv("coll", i, "dur_us", seen.coll[i].dur_ns / 1000);
	}
	tsd_kv("ring.hangs", -1, 0, (uint64_t)seen.nhang);
	for (int i = 0; i < seen.nhang; i++) {
		tsd_kv("hang", i, "op", seen.hang[i].kind);
		tsd_kv("hang", i, "comm", seen.hang[i].hang.comm);
		tsd_kv("hang", i, "seq", seen.hang[i].hang.seq);
		tsd_kv("hang", i, "pending_ms", seen.hang[i].dur_ns / MS);
	}
}

static int unit(const char *name)
{
	if (!trainscope_step_begin)
		die("usage: LD_PRELOAD=libtrainscope.so npudrive unit|hang");
	if (tsd_open_ring(&seen))
		die("no ring: is TRAINSCOPE_RING_DIR set?");
	if (!strcmp(name, "unit"))
		sc_unit();
	else if (!strcmp(name, "hang"))
		sc_hang();
	else
		die("unknown scenario");
	print_all();
	return 0;
}

/* ---- the job ---------------------------------------------------------------------- */

struct job {
	int ranks, steps, kernels, kernel_us;
	int slow_rank, slow_step, hang_rank, hang_step;
	double slow_factor;
};

static void rank_main(const struct job *j, int rank)
{
	void *s, *cs, *ev, *done, *c;
	uint64_t kernel_ns = (uint64_t)j->kernel_us * 1000;

	check(aclrtSetDevice(rank), "aclrtSetDevice");
	check(aclrtCreateStream(&s), "aclrtCreateStream");
	check(aclrtCreateStream(&cs), "aclrtCreateStream");
	check(aclrtCreateEventWithFlag(&ev, 0x8), "aclrtCreateEventWithFlag");
	check(aclrtCreateEventWithFlag(&done, 0x8), "aclrtCreateEventWithFlag");
	comm_world(&c, (uint32_t)j->ranks, (uint32_t)rank);
	tsd_npu_set_kernel_ns(kernel_ns);
	for (int step = 0; step < j->steps; step++) {
		if (rank == j->slow_rank && step == j->slow_step)
			tsd_npu_set_kernel_ns((uint64_t)((double)kernel_ns * j->slow_factor));
		if (trainscope_step_begin)
			trainscope_step_begin((uint64_t)step);
		for (int k = 0; k < j->kernels; k++)
			matmul(s); /* torch_npu's operators: aclnn */
		if (rank == j->hang_rank && step == j->hang_step) {
			fprintf(stderr, "npudrive: rank %d is stuck before the all-reduce of step %d\n",
				rank, step);
			for (;;) /* the others wait in the all-reduce until the launcher ends it */
				pause();
		}
		stream_after(cs, s, ev);
		check(HcclAllReduce(NULL, NULL, 1 << 20, 4, 0, c, cs), "HcclAllReduce");
		/* the optimizer waits for the reduced gradients on the compute stream */
		stream_after(s, cs, done);
		check(aclrtLaunchKernel(NULL, 1, NULL, 0, s), "aclrtLaunchKernel");
		check(aclrtSynchronizeStream(s), "aclrtSynchronizeStream");
		if (trainscope_step_end)
			trainscope_step_end((uint64_t)step);
	}
}

static int job(int argc, char **argv)
{
	struct job j = { .ranks = 4, .steps = 100, .kernels = 10, .kernel_us = 1000,
			 .slow_rank = -1, .hang_rank = -1, .slow_factor = 1 };
	static const struct option opts[] = {
		{ "ranks", 1, 0, 'n' },	     { "steps", 1, 0, 's' },	  { "kernels", 1, 0, 'k' },
		{ "kernel-us", 1, 0, 'u' },  { "slow-rank", 1, 0, 'r' },  { "slow-step", 1, 0, 't' },
		{ "slow-factor", 1, 0, 'f' }, { "hang-rank", 1, 0, 'h' }, { "hang-step", 1, 0, 'g' },
		{ 0, 0, 0, 0 } };
	char shm[] = "/tmp/tsd-npu-XXXXXX", num[16];
	int o, fd, status, bad = 0;
	pid_t pids[256];

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n': j.ranks = atoi(optarg); break;
		case 's': j.steps = atoi(optarg); break;
		case 'k': j.kernels = atoi(optarg); break;
		case 'u': j.kernel_us = atoi(optarg); break;
		case 'r': j.slow_rank = atoi(optarg); break;
		case 't': j.slow_step = atoi(optarg); break;
		case 'f': j.slow_factor = atof(optarg); break;
		case 'h': j.hang_rank = atoi(optarg); break;
		case 'g': j.hang_step = atoi(optarg); break;
		default: die("usage: npudrive job --ranks N --steps S [...]");
		}
	}
	if (j.ranks < 1 || j.ranks > 256 || j.steps < 1)
		die("--ranks 1..256 and --steps >= 1");
	if (getenv("RANK")) {
		rank_main(&j, atoi(getenv("RANK")));
		return 0;
	}
	/* the launcher: the shared arrival table, then one process per rank */
	if ((fd = mkstemp(shm)) < 0 || ftruncate(fd, (off_t)tsd_npu_shm_size()) != 0)
		die("cannot make the shared arrival table");
	close(fd);
	setenv("TSD_NPU_SHM", shm, 1);
	snprintf(num, sizeof(num), "%d", j.ranks);
	setenv("WORLD_SIZE", num, 1);
	for (int r = 0; r < j.ranks; r++) {
		if ((pids[r] = fork()) == 0) {
			snprintf(num, sizeof(num), "%d", r);
			setenv("RANK", num, 1);
			setenv("LOCAL_RANK", num, 1);
			execv("/proc/self/exe", argv - 1);
			_exit(127);
		}
	}
	/* as torchrun does: the first rank that fails ends the others */
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (!bad++)
				for (int r = 0; r < j.ranks; r++)
					kill(pids[r], SIGTERM);
		}
	unlink(shm);
	fprintf(stderr, "npudrive: %d of %d ranks failed\n", bad, j.ranks);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	open_opapi(argv[0]);
	if (argc >= 2 && !strcmp(argv[1], "job"))
		return job(argc - 1, argv + 1);
	if (argc != 2)
		die("usage: npudrive unit|hang|job ...");
	return unit(argv[1]);
}
