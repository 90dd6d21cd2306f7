// SPDX-License-Identifier: Apache-2.0
/* A synthetic data-parallel trainer: N rank processes, each step a dataloader phase,
 * a host launch phase, a real CPU compute kernel and a real ring all-reduce over TCP
 * on loopback, so one slow rank makes every other rank wait inside the collective.
 * Steps, regions and collectives are marked through trainscope.h (weakly: without
 * the preload the program runs the same). Run without RANK it is the launcher. */
#define TRAINSCOPE_WEAK
#include "trainscope.h"

#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 256

enum fault { FAULT_NONE, FAULT_COMPUTE, FAULT_STORAGE, FAULT_HOST, FAULT_NETWORK };
static const char *const fault_names[] = { "none", "compute", "storage", "host", "network" };

struct wl {
	int ranks, steps, rank;
	int matrix, compute_iters;
	double dataloader_ms, launch_ms;
	size_t floats;
	enum fault fault;
	int fault_rank, fault_step;
	double fault_factor;
	int heavy_every;      /* ranks r % heavy_every == heavy_every - 1: a heavier stage */
	double heavy_factor;
	int pin;
	int listen_fd, next_fd, prev_fd;
	int ports[MAX_RANKS];
};

#define TS_CALL(fn, ...)              \
	do {                          \
		if (fn)               \
			fn(__VA_ARGS__); \
	} while (0)

static void die(const char *what)
{
	fprintf(stderr, "workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t ns_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(double ms)
{
	uint64_t ns = (uint64_t)(ms * 1e6);
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: workload [options]\n"
		"A synthetic data-parallel training job of --ranks processes on this machine.\n\n"
		"  --ranks N           rank processes (default 8)\n"
		"  --steps N           training steps (default 100)\n"
		"  --matrix N          GEMM size of the compute kernel (default 96)\n"
		"  --compute-iters N   GEMMs per step (default 10)\n"
		"  --dataloader-ms X   time to load a batch (default 40)\n"
		"  --launch-ms X       host work to launch the step (default 0.1)\n"
		"  --bytes N           all-reduce size in bytes (default 262144)\n"
		"  --fault KIND        none | compute | storage | host | network (default none)\n"
		"  --fault-rank R      rank to slow (default 5)\n"
		"  --fault-step S      first slow step (default 40)\n"
		"  --fault-factor F    compute: GEMMs x F (default 2); storage: dataloader x F\n"
		"                      (default 1.5); host: a CPU hog ('stress') pinned with the\n"
		"                      rank to CPU rank mod ncpu; network: the rank's link\n"
		"                      delays each of its ring sends by (F - 1) x 2 ms\n"
		"  --heavy-every N     ranks r with r %% N = N - 1 compute --heavy-factor F times\n"
		"                      more from the first step: the last stage of a pipeline\n"
		"                      whose stage is the fastest dimension (TRAINSCOPE_GROUPS=ppN-...)\n"
		"  --pin               pin every rank r to CPU r mod ncpu\n"
		"  -h, --help\n");
}

static int parse(int argc, char **argv, struct wl *w)
{
	static const struct option o[] = {
		{ "ranks", 1, 0, 'n' }, { "steps", 1, 0, 's' }, { "matrix", 1, 0, 'm' },
		{ "compute-iters", 1, 0, 'c' }, { "dataloader-ms", 1, 0, 'd' },
		{ "launch-ms", 1, 0, 'l' }, { "bytes", 1, 0, 'b' }, { "fault", 1, 0, 'f' },
		{ "fault-rank", 1, 0, 'r' }, { "fault-step", 1, 0, 't' },
		{ "fault-factor", 1, 0, 'x' }, { "pin", 0, 0, 'p' }, { "help", 0, 0, 'h' },
		{ "heavy-every", 1, 0, 'e' }, { "heavy-factor", 1, 0, 'y' }, { 0 }
	};
	int ch;

	*w = (struct wl){ .ranks = 8, .steps = 100, .matrix = 96, .compute_iters = 10,
			  .dataloader_ms = 40, .launch_ms = 0.1, .floats = 262144 / 4,
			  .fault_rank = 5, .fault_step = 40, .fault_factor = 0, .rank = -1 };
	while ((ch = getopt_long(argc, argv, "h", o, NULL)) != -1) {
		switch (ch) {
		case 'n': w->ranks = atoi(optarg); break;
		case 's': w->steps = atoi(optarg); break;
		case 'm': w->matrix = atoi(optarg); break;
		case 'c': w->compute_iters = atoi(optarg); break;
		case 'd': w->dataloader_ms = atof(optarg); break;
		case 'l': w->launch_ms = atof(optarg); break;
		case 'b': w->floats = (size_t)atol(optarg) / 4; break;
		case 'r': w->fault_rank = atoi(optarg); break;
		case 't': w->fault_step = atoi(optarg); break;
		case 'x': w->fault_factor = atof(optarg); break;
		case 'e': w->heavy_every = atoi(optarg); break;
		case 'y': w->heavy_factor = atof(optarg); break;
		case 'p': w->pin = 1; break;
		case 'f':
			w->fault = FAULT_NONE;
			for (int i = 0; i < 5; i++)
				if (!strcmp(optarg, fault_names[i]))
					w->fault = (enum fault)i;
			if (strcmp(optarg, fault_names[w->fault])) {
				fprintf(stderr, "workload: unknown fault '%s'\n", optarg);
				return -1;
			}
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (w->ranks < 2 || w->ranks > MAX_RANKS || w->steps < 1 || w->matrix < 1 ||
	    w->floats < (size_t)w->ranks) {
		fprintf(stderr, "workload: need 2..%d ranks, steps >= 1, bytes >= 4 x ranks\n",
			MAX_RANKS);
		return -1;
	}
	if (w->fault_factor <= 0)
		/* compute: twice a ~6 ms modelled device time, 5-10 % of a 60-120 ms step on a
		 * loaded 2-core machine; 1.3x was 1.5-3 %, change.drift's floor, and named or
		 * not by the machine's speed (compute-8 and -16 Healthy in CI) */
		w->fault_factor = w->fault == FAULT_STORAGE ? 1.5 : 2.0;
	return 0;
}

/* ---- ring all-reduce over TCP ------------------------------------------------ */

static int xfer(int sfd, const char *sbuf, size_t slen, int rfd, char *rbuf, size_t rlen)
{
	size_t sent = 0, got = 0;

	while (sent < slen || got < rlen) {
		struct pollfd p[2] = { { sfd, sent < slen ? POLLOUT : 0, 0 },
				       { rfd, got < rlen ? POLLIN : 0, 0 } };
		if (poll(p, 2, 60000) <= 0)
			return -1;
		if (p[0].revents & (POLLOUT | POLLERR)) {
			ssize_t n = send(sfd, sbuf + sent, slen - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN)
				return -1;
			sent += n > 0 ? (size_t)n : 0;
		}
		if (p[1].revents & (POLLIN | POLLERR | POLLHUP)) {
			ssize_t n = recv(rfd, rbuf + got, rlen - got, MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				return -1;
			got += n > 0 ? (size_t)n : 0;
		}
	}
	return 0;
}

/* Reduce-scatter then all-gather: 2(N-1) exchanges of one chunk each; link_ms: a slow
 * link from this rank delays each of its sends. */
static int allreduce(struct wl *w, float *buf, float *tmp, double link_ms)
{
	size_t n = w->floats, chunk = n / (size_t)w->ranks;
	int N = w->ranks, r = w->rank;

	for (int s = 0; s < 2 * (N - 1); s++) {
		if (link_ms > 0)
			sleep_ms(link_ms);
		int send_c = ((r - s) % N + N) % N, recv_c = ((r - s - 1) % N + N) % N;
		if (xfer(w->next_fd, (char *)(buf + (size_t)send_c * chunk), chunk * 4, w->prev_fd,
			 (char *)tmp, chunk * 4))
			return -1;
		float *dst = buf + (size_t)recv_c * chunk;
		for (size_t i = 0; i < chunk; i++)
			dst[i] = s < N - 1 ? dst[i] + tmp[i] : tmp[i];
	}
	return 0;
}

/* ---- the phases of a step -------------------------------------------------- */

/* A GEMM's time on the modelled device: 2 n^3 flops at 3 GFLOP/s (about what one core
 * of the machines the tests run on does with gemm() below: 0.6 ms at n = 96). */
static uint64_t gemm_device_ns(int n)
{
	return (uint64_t)(2.0 * n * n * n / 3.0);
}

static double gemm(const float *a, const float *b, float *c, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			float s = 0;
			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
	return c[0];
}

/* Host work of a fixed size: a contended CPU stretches its wall time, as it would a
 * framework's kernel launches. */
static void host_work(uint64_t iters)
{
	for (volatile uint64_t x = 0; x < iters; x++)
		;
}

/* Loop iterations per ms of this thread's CPU time, whatever else runs. */
static uint64_t calibrate(void)
{
	uint64_t iters = 100000, t0, t;

	for (;;) {
		t0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
		host_work(iters);
		t = ns_of(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (t > 5000000)
			return (uint64_t)((double)iters / ((double)t / 1e6));
		iters *= 2;
	}
}

/* A CPU hog ('stress') pinned to the calling rank's CPU, far heavier than the rank: nice
 * -20 against its 0 (CPU weights 88761 to 1024), as another pod's busy threads with a
 * larger CPU weight would be. A waking rank then waits for the hog to use up most of a
 * slice before it runs: on a 2-core host its run-queue delay grew 20-40 fold while the
 * others' hardly moved. Nice -10 (weights 9 to 1) starved it 3x at best, and on a host busy with
 * other work not much more than the others, whom the hog's core is taken from too. Where
 * the hog may not be raised (no CAP_SYS_NICE), the rank's thread is lowered to nice 19
 * instead (15 to 1024). */
static void start_hog(int cpu)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "stress");
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
		for (volatile uint64_t x = 0;; x++)
			;
	}
	if (pid < 0) {
		fprintf(stderr, "workload: no hog (fork: %s)\n", strerror(errno));
		return;
	}
	if (setpriority(PRIO_PROCESS, (id_t)pid, -20) == 0)
		return;
	int err = errno;
	if (setpriority(PRIO_PROCESS, 0, 19) == 0)
		fprintf(stderr, "workload: hog at normal priority (%s): the rank at nice 19 instead\n",
			strerror(err));
	else
		fprintf(stderr, "workload: hog and rank at the same priority (%s)\n", strerror(errno));
}

/* This thread's time waiting on a run queue so far (ns, /proc/thread-self/schedstat's
 * second field); 0 where the kernel does not keep it. */
static uint64_t runq_ns(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) != 2)
			wait = 0;
		fclose(f);
	}
	return wait;
}

static int my_cpu(const struct wl *w)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return w->rank % (int)(n > 0 ? n : 1);
}

static int run_rank(struct wl *w)
{
	size_t mm = (size_t)w->matrix * (size_t)w->matrix;
	float *a = malloc(mm * 4), *b = malloc(mm * 4), *c = malloc(mm * 4);
	float *grad = malloc(w->floats * 4), *tmp = malloc(w->floats * 4);
	char *batch = malloc(1 << 16);
	double sink = 0;
	uint64_t launch_iters = (uint64_t)(w->launch_ms * (double)calibrate());

	if (!a || !b || !c || !grad || !tmp || !batch)
		die("malloc");
	for (size_t i = 0; i < mm; i++)
		a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.2f;
	/* the fault rank's mean step before its fault and once it settled: whether the
	 * fault took, told apart from whether the tool saw it (the e2e tests read it) */
	double sum[2] = { 0, 0 };
	int cnt[2] = { 0, 0 };
	/* with a host fault, every rank's run-queue wait on each side: whether the hog
	 * starved its rank alone or the whole host */
	uint64_t runq[2] = { 0, 0 }, runq_at = 0;
	for (int step = 0; step < w->steps; step++) {
		bool slow = w->rank == w->fault_rank && step >= w->fault_step;
		uint64_t t_step = ns_of(CLOCK_MONOTONIC);
		if (w->fault == FAULT_HOST && (step == 10 || step == w->fault_step + 10))
			runq_at = runq_ns();
		if (slow && w->fault == FAULT_HOST && step == w->fault_step)
			start_hog(my_cpu(w));
		TS_CALL(trainscope_step_begin, (uint64_t)step);

		TS_CALL(trainscope_region_begin, TRAINSCOPE_REGION_DATALOADER);
		sleep_ms(w->dataloader_ms * (slow && w->fault == FAULT_STORAGE ? w->fault_factor : 1));
		memset(batch, step & 0xff, 1 << 16);
		TS_CALL(trainscope_region_end, TRAINSCOPE_REGION_DATALOADER);

		TS_CALL(trainscope_region_begin, TRAINSCOPE_REGION_LAUNCH);
		host_work(launch_iters);
		TS_CALL(trainscope_region_end, TRAINSCOPE_REGION_LAUNCH);

		/* The "device" is modelled: its time is the kernels' work at a fixed rate, as a
		 * GPU's kernel time does not change with the host's load. This thread does the
		 * work for real (the step's wall time), but its CPU time on a shared 2-core
		 * machine strays by a third for many steps at a time: a healthy rank would be
		 * flagged as slow. */
		bool heavy = w->heavy_every > 0 && w->rank % w->heavy_every == w->heavy_every - 1;
		int iters = (int)(w->compute_iters *
				  (slow && w->fault == FAULT_COMPUTE ? w->fault_factor : 1) *
				  (heavy && w->heavy_factor > 0 ? w->heavy_factor : 1) + 0.5);
		TS_CALL(trainscope_region_begin, TRAINSCOPE_REGION_COMPUTE);
		for (int i = 0; i < iters; i++)
			sink += gemm(a, b, c, w->matrix);
		TS_CALL(trainscope_compute_device_ns, (uint64_t)iters * gemm_device_ns(w->matrix));
		TS_CALL(trainscope_region_end, TRAINSCOPE_REGION_COMPUTE);

		for (size_t i = 0; i < w->floats; i++)
			grad[i] = c[i % mm];
		TS_CALL(trainscope_collective_begin, TRAINSCOPE_COLL_ALL_REDUCE, w->floats * 4);
		if (allreduce(w, grad, tmp,
			      slow && w->fault == FAULT_NETWORK ? 2 * (w->fault_factor - 1) : 0)) {
			fprintf(stderr, "workload: rank %d: all-reduce failed at step %d\n", w->rank, step);
			return 1;
		}
		TS_CALL(trainscope_collective_end, TRAINSCOPE_COLL_ALL_REDUCE);
		TS_CALL(trainscope_step_end, (uint64_t)step);
		int side = step >= 10 && step < w->fault_step ? 0 : step >= w->fault_step + 10 ? 1 : -1;
		if (side >= 0)
			sum[side] += (double)(ns_of(CLOCK_MONOTONIC) - t_step) / 1e6, cnt[side]++;
		if (w->fault == FAULT_HOST && side >= 0 &&
		    (step + 1 == w->fault_step || step + 1 == w->steps))
			runq[side] = runq_ns() - runq_at;
	}
	if (w->fault == FAULT_HOST && cnt[0] && cnt[1])
		fprintf(stderr, "workload: rank %d: runq %.2f ms/step before the fault, %.2f ms/step "
			"from 10 steps after it\n", w->rank, (double)runq[0] / 1e6 / cnt[0],
			(double)runq[1] / 1e6 / cnt[1]);
	if (w->fault != FAULT_NONE && w->rank == w->fault_rank && cnt[0] && cnt[1])
		fprintf(stderr, "workload: rank %d: step %.1f ms before its fault, %.1f ms from "
			"10 steps after it (%+.0f%%)\n", w->rank, sum[0] / cnt[0], sum[1] / cnt[1],
			100 * (sum[1] / cnt[1] / (sum[0] / cnt[0]) - 1));
	if (sink == 12345.678)
		puts("");
	free(a), free(b), free(c), free(grad), free(tmp), free(batch);
	return 0;
}

/* ---- wiring ranks together ------------------------------------------------- */

static int connect_port(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;

	for (int tries = 0; tries < 200; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			die("socket");
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		close(fd);
		sleep_ms(10); /* the peer is still starting: its socket already listens */
	}
	die("connect to the next rank");
	return -1;
}

static int rank_main(struct wl *w)
{
	int one = 1;
	char *ports = getenv("WORKLOAD_PORTS");

	w->rank = atoi(getenv("RANK"));
	w->listen_fd = atoi(getenv("WORKLOAD_LISTEN_FD"));
	for (int i = 0; i < w->ranks && ports; i++) {
		w->ports[i] = (int)strtol(ports, &ports, 10);
		if (*ports == ',')
			ports++;
	}
	/* a host fault pins the victim and its hog together; the others stay free to move
	 * away, as ranks with cores of their own would */
	if (w->pin || (w->fault == FAULT_HOST && w->rank == w->fault_rank)) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(my_cpu(w), &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	w->next_fd = connect_port(w->ports[(w->rank + 1) % w->ranks]);
	w->prev_fd = accept4(w->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (w->prev_fd < 0)
		die("accept");
	setsockopt(w->prev_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return run_rank(w);
}

static int listen_any(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len))
		die("listen on loopback");
	*port = ntohs(sa.sin_port);
	return fd;
}

static int launch(struct wl *w, char **argv)
{
	int fds[MAX_RANKS], failed = 0;
	pid_t pids[MAX_RANKS];
	char ports[MAX_RANKS * 8] = "", num[32];

	for (int r = 0; r < w->ranks; r++) {
		fds[r] = listen_any(&w->ports[r]);
		snprintf(num, sizeof(num), "%s%d", r ? "," : "", w->ports[r]);
		strcat(ports, num);
	}
	setenv("WORKLOAD_PORTS", ports, 1);
	snprintf(num, sizeof(num), "%d", w->ranks);
	setenv("WORLD_SIZE", num, 1);
	fprintf(stderr, "workload: %d ranks, %d steps, fault %s", w->ranks, w->steps,
		fault_names[w->fault]);
	if (w->fault != FAULT_NONE)
		fprintf(stderr, " on rank %d from step %d (x%.2f)", w->fault_rank, w->fault_step,
			w->fault_factor);
	fputc('\n', stderr);
	for (int r = 0; r < w->ranks; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			die("fork");
		if (pids[r] == 0) {
			/* as torchrun's workers: the ranks end with their launcher (a killed
			 * `trainscope run` must leave no rank behind); kept across exec */
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			snprintf(num, sizeof(num), "%d", r);
			setenv("RANK", num, 1);
			setenv("LOCAL_RANK", num, 1);
			int fd = dup(fds[r]); /* dup drops CLOEXEC: only this rank's socket passes */
			snprintf(num, sizeof(num), "%d", fd);
			setenv("WORKLOAD_LISTEN_FD", num, 1);
			execv("/proc/self/exe", argv);
			die("exec");
		}
	}
	for (int r = 0; r < w->ranks; r++) {
		int st;
		close(fds[r]);
		if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "workload: rank %d failed\n", r);
			failed = 1;
			/* the others would wait forever in the all-reduce */
			for (int k = 0; k < w->ranks; k++)
				if (k != r)
					kill(pids[k], SIGTERM);
		}
	}
	return failed;
}

int main(int argc, char **argv)
{
	struct wl w;

	if (parse(argc, argv, &w))
		return 2;
	if (getenv("RANK") && getenv("WORKLOAD_LISTEN_FD"))
		return rank_main(&w);
	return launch(&w, argv);
}
