// SPDX-License-Identifier: Apache-2.0
/* The verdict in words. After each evaluation: the alarmed ranks the job waits for, each
 * with its cause and evidence (res.slow, res.summary). At each tick: the job's state and
 * its reason, fail-slow (with the phase that grew job-wide when no rank stands out) and
 * the network's verdict, then a hang, lost ranks or a stall over them. */
#include "job_impl.h"
#include "stats.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static size_t W(const struct ts_job *j) { return (size_t)j->p.space_window; }

static size_t idx(const struct ts_job *j, int rank, int m)
{
	(void)j;
	return (size_t)rank * TS_M_COUNT + (size_t)m;
}

static double rel(double v, double med)
{
	return med > 0 ? (v - med) / med : 0;
}

/* Cause of a metric that stands out high on a rank (collective: see pick_metric). */
static const char *const metric_cause[TS_M_COUNT] = { "Compute", "Communication", "HostCPU",
						       "Storage", "Storage", "HostCPU", "HostCPU",
						       "Compute" };

/* The median of rank k's last change.smooth_steps run-queue delays (ms per step). */
static double recent_runq(const struct ts_job *j, int k)
{
	return ts_median_recent(&j->hist[idx(j, k, TS_M_RUNQ) * W(j)], W(j), ts_job_last_slot(j),
				(size_t)j->p.change.smooth_steps);
}

/* The node agent's latest view of rank k's run-queue delay, in ms per step: NAN with
 * none of the last TS_HOST_VIEW_MAX_AGE_NS. */
static double runq_now(const struct ts_job *j, int k)
{
	const struct ts_host_view *h = &j->meta[k].host;

	if (!h->valid || h->time_ns + TS_HOST_VIEW_MAX_AGE_NS < j->now_ns)
		return NAN;
	return h->runq_ms_per_s * j->step_ms / 1000;
}

/* The phases a host short of CPU slows (host_starves judges them): the device's busy
 * span and the launches, fed late, and the loader's workers. */
static bool starvable(int m)
{
	return m == TS_M_COMPUTE || m == TS_M_LAUNCH || m == TS_M_DATALOADER;
}

/* A starvable alarm raised after the node agent's last sample of the rank: the samples
 * come every second or so and tell of the second before, so whether its host starves it
 * is not known yet. The rank is named once the next one is in. */
static bool host_pending(const struct ts_job *j, int k, int m)
{
	const struct ts_host_view *h = &j->meta[k].host;

	return starvable(m) && !isnan(runq_now(j, k)) && h->time_ns < j->since[idx(j, k, m)];
}

/* A starved host feeds its GPU late: the device-busy estimate grows with the gaps, and
 * the rank's compute or launch time looks slow; its loader's workers, short of CPU too,
 * hand batches late (with the device timed every other step its loader wait can stand
 * out first: bench/data hft-hogs-q1). It is the host's doing when the rank's
 * run-queue delay (the node agent's) has grown past the others' and accounts for at
 * least half the time it lost, and its GEMMs (timed on the device) are not slower.
 * *runq and *ref get the rank's delay and the others' median (ms per step). */
static bool host_starves(struct ts_job *j, int k, int m, double *runq, double *ref)
{
	size_t i = idx(j, k, m);
	int n = 0;

	if (!starvable(m) || j->alarm[idx(j, k, TS_M_GEMM)])
		return false;
	/* the steps' own delays lag the agent's samples: its latest view counts at once */
	*runq = fmax(recent_runq(j, k), runq_now(j, k));
	for (int r = 0; r < j->world && !isnan(*runq); r++) {
		double v = r == k ? NAN : recent_runq(j, r);
		if (!isnan(v))
			j->vals[n++] = v;
	}
	*ref = n ? ts_median(j->vals, (size_t)n, j->scratch) : NAN;
	return !isnan(*ref) && *runq - *ref >= 0.5 * (j->hit_value[i] - j->hit_median[i]) &&
	       *runq >= 2 * *ref + 1;
}

/* A rank whose GPU is slower (another process on it, a slow card) fills its launch
 * queue, and then every launch call waits: its host launch time can stand out more than
 * its device time. Launch time is the host's doing only when the device time is normal
 * or the scheduler shows the host short of CPU. The device time is not normal when it
 * is alarmed, or when over the last steps it grew past its peers' by more ms than the
 * launches did: its own alarm, on half the samples with the device timed every other
 * step (TRAINSCOPE_DEVICE_EVERY), can come after the launches' (bench/data lit-gemm-7). */
static bool gpu_blocks_launches(struct ts_job *j, int k)
{
	int n = j->p.change.smooth_steps;
	double mc, tc, ml, tl;

	if (j->alarm[idx(j, k, TS_M_RUNQ)] || j->alarm[idx(j, k, TS_M_OFFCPU)])
		return false;
	return j->alarm[idx(j, k, TS_M_COMPUTE)] ||
	       (ts_job_peer_medians(j, k, TS_M_COMPUTE, n, &mc, &tc) &&
		ts_job_peer_medians_timed(j, k, TS_M_LAUNCH, n, &ml, &tl) && mc - tc > 0 &&
		mc - tc >= ml - tl);
}

/* The rank's cause: the alarmed metric that costs it the most time (ms per step over
 * its reference; a near-zero phase's large relative excess is little time). A high
 * collective time is not a cause by itself: in synchronous training the ranks that
 * wait for a slow one show it. Communication needs evidence beyond one rank (a node's
 * ranks together). */
static int pick_metric(struct ts_job *j, int k)
{
	int best = -1;
	double bd = 0;

	for (int m = 0; m < TS_M_COUNT; m++) {
		size_t i = idx(j, k, m);
		/* time asleep is no cause: a rank waiting on its loader or on a peer sleeps
		 * too (its loader's wait is Storage, a starved host's run-queue HostCPU) */
		if (!j->alarm[i] || m == TS_M_COLLECTIVE ||
		    (m == TS_M_OFFCPU && ts_job_floors(j)))
			continue;
		double d = j->hit_value[i] - j->hit_median[i];
		if (best < 0 || d > bd)
			best = m, bd = d;
	}
	/* the device's doing: Compute once its compute alarm comes, nothing before */
	if (best == TS_M_LAUNCH && gpu_blocks_launches(j, k))
		return j->alarm[idx(j, k, TS_M_COMPUTE)] ? TS_M_COMPUTE : -1;
	/* a starved host: what it costs the step (compute or launch, alarmed first) names
	 * the verdict, its run-queue delay is the evidence (a loader that waits a little
	 * longer is not what the step lost: the run-queue delay names it, node e2e's hog) */
	static const int effects[] = { TS_M_COMPUTE, TS_M_LAUNCH };
	double runq, ref;
	if (best != TS_M_RUNQ && best != TS_M_OFFCPU)
		return best;
	for (size_t e = 0; e < sizeof(effects) / sizeof(effects[0]); e++)
		if (j->alarm[idx(j, k, effects[e])] && host_starves(j, k, effects[e], &runq, &ref))
			return effects[e];
	return best;
}

/* Appends to a fixed buffer; the text is cut, never overrun. */
static void appendf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strnlen(buf, size);
	va_list ap;

	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* The median SM clock of the job's GPUs that reported one. */
static double median_clock(struct ts_job *j)
{
	int n = 0;

	for (int k = 0; k < j->world; k++)
		if (j->meta[k].dev.valid && j->meta[k].dev.sm_clock_mhz)
			j->vals[n++] = j->meta[k].dev.sm_clock_mhz;
	return n ? ts_median(j->vals, (size_t)n, j->scratch) : NAN;
}

/* A clock under 0.9 of the job's median med, not an idle GPU's (NVML's GpuIdle reason:
 * a GPU between kernels clocks down to its floor, 345 MHz on an H100). */
static bool low_clock(const struct ts_device_view *d, double med)
{
	return d->valid && d->sm_clock_mhz && med > 0 && d->sm_clock_mhz < 0.9 * med &&
	       !(d->throttle_reasons & TS_THROTTLE_IDLE);
}

/* Whether rank k's GPU shows what slows a device: XID errors, hardware throttling, a
 * low clock, or another tenant's processes on it. */
static bool device_suspect(struct ts_job *j, int k)
{
	const struct ts_device_view *d = &j->meta[k].dev;

	return d->valid && (d->xid_errors || (d->throttle_reasons & TS_THROTTLE_HW_MASK) ||
			    d->other_procs || low_clock(d, median_clock(j)));
}

/* A compute outlier on a GPU that reports XID errors, or hardware throttling or a clock
 * well below the others' that accounts for at least half its excess, is the device's
 * doing: cause Device. A clock 12 % down under a 4x slower GEMM (a GPU shared with
 * another process, which also heats it) is evidence, not the cause; so are the other
 * processes on it (the cause stays Compute: the card is sound, its time is shared). */
static void device_evidence(struct ts_job *j, int k, struct ts_slow_rank *s)
{
	const struct ts_device_view *d = &j->meta[k].dev;
	double med = median_clock(j);
	bool clocked = d->valid && d->sm_clock_mhz && med > 0;
	bool slow_clock = low_clock(d, med);
	bool explains = !clocked || med / d->sm_clock_mhz - 1 >= 0.5 * s->degradation;

	if (d->valid && d->other_procs)
		appendf(s->evidence, sizeof(s->evidence), "; GPU %s is shared: %u process%s on it "
			"that %s no rank of the job", j->meta[k].device, d->other_procs,
			d->other_procs > 1 ? "es" : "", d->other_procs > 1 ? "are" : "is");
	if (!d->valid || !(d->xid_errors || (d->throttle_reasons & TS_THROTTLE_HW_MASK) || slow_clock))
		return;
	if (d->xid_errors || explains)
		s->cause = "Device";
	appendf(s->evidence, sizeof(s->evidence), "; GPU %s: SM clock %u MHz vs median %.0f MHz, "
		"throttle 0x%llx, %u XIDs, %u C", j->meta[k].device, d->sm_clock_mhz, med,
		(unsigned long long)d->throttle_reasons, d->xid_errors, d->temperature_c);
}

/* The detectors that agree on rank k's metric m (cell i): CUSUM, SPACE, TIME. */
static void method(struct ts_job *j, size_t i, int m, struct ts_slow_rank *s)
{
	if (ts_job_by_change(m))
		snprintf(s->method, sizeof(s->method), "CUSUM%s%s", j->dir[i] > 0 ? "+SPACE" : "",
			 j->tdir[i] > 0 ? "+TIME" : "");
	else
		snprintf(s->method, sizeof(s->method), "%s%s", j->dir[i] ? "SPACE" : "",
			 j->tdir[i] > 0 ? (j->dir[i] ? "+TIME" : "TIME") : "");
	if (!s->method[0])
		snprintf(s->method, sizeof(s->method), "SPACE");
}

/* The evidence's first words: the rank's metric against what it is compared with (the
 * group's median, its peers' or its own baseline) since the change, and how its peers
 * were found. */
static void compared_with(struct ts_job *j, int k, int m, struct ts_slow_rank *s)
{
	int peers = ts_job_peers(j, k);

	s->evidence[0] = 0;
	appendf(s->evidence, sizeof(s->evidence), "%s %.2f ms/step vs %s %.2f ms (%+.0f%%) from "
		"step %llu, confirmed at step %llu", s->metric, s->value_ms,
		!ts_job_by_change(m) ? "group median" : peers > 0 ? "peers' median" : "own baseline",
		s->median_ms, 100 * s->degradation, (unsigned long long)s->onset_step,
		(unsigned long long)s->confirmed_step);
	if (ts_job_by_change(m) && peers > 0 && j->has_layout && peers + 1 < j->world)
		appendf(s->evidence, sizeof(s->evidence), " (%d peers under layout %s)", peers,
			j->layout_text);
	else if (ts_job_by_change(m) && peers > 0 && j->classes_from_comms && peers + 1 < j->world)
		appendf(s->evidence, sizeof(s->evidence), " (%d peers by their communicators)",
			peers);
	else if (ts_job_by_change(m) && peers > 0 && j->classes_inferred && peers + 1 < j->world)
		appendf(s->evidence, sizeof(s->evidence), " (%d peers inferred from their times: "
			"set TRAINSCOPE_GROUPS to be sure)", peers);
}

/* The host's part: a host that starves the rank makes it HostCPU, its run-queue delay
 * the evidence; else a compute rank's launches that wait for its busy GPU. True when
 * the host starves it. */
static bool host_evidence(struct ts_job *j, int k, int m, struct ts_slow_rank *s)
{
	size_t l = idx(j, k, TS_M_LAUNCH);

	/* launch time too small a share of the step to be named can still stand out */
	double lv = j->alarm[l] ? j->hit_value[l] : j->win_median[l];
	double lm = j->alarm[l] ? j->hit_median[l] : j->group_median[TS_M_LAUNCH];
	double runq, rref;
	bool starved = host_starves(j, k, m, &runq, &rref);
	if (starved) {
		s->cause = "HostCPU";
		appendf(s->evidence, sizeof(s->evidence), "; the host starves it: run-queue delay "
			"%.1f ms/step vs %.1f ms of the others' (%s)", runq, rref,
			m == TS_M_DATALOADER ? "its loader's workers wait for a CPU"
					     : "the GPU waits for the host");
	} else if (m == TS_M_COMPUTE && (j->alarm[l] || j->dir[l] > 0))
		appendf(s->evidence, sizeof(s->evidence), "; launch %.2f ms vs %.2f ms (%+.0f%%): "
			"launches wait for the busy GPU", lv, lm, 100 * rel(lv, lm));
	return starved;
}

/* Why the communicators that hold a slow rank slowed with it, by its cause: a starved
 * host runs its part of a CPU collective (and launches NCCL's kernels) late, where a
 * shared or slower GPU runs the kernels slower. */
static const char *transfers_why(const char *cause)
{
	if (!strcmp(cause, "HostCPU"))
		return "its host, short of CPU, runs its part of them late too";
	if (!strcmp(cause, "Compute") || !strcmp(cause, "Device"))
		return "its GPU runs their kernels slower too";
	return "they wait on its part, not on the network";
}

/* Rank k, named for metric m at t_ns: its numbers, method, cause and evidence. */
static void describe(struct ts_job *j, int k, int m, struct ts_slow_rank *s, uint64_t t_ns)
{
	size_t i = idx(j, k, m), c = idx(j, k, TS_M_COLLECTIVE);
	double cv = j->win_median[c], cmed = j->group_median[TS_M_COLLECTIVE];

	/* an alarm outlives its last hit by clear_after_steps: show the numbers that
	 * raised it */
	s->rank = k;
	s->metric = ts_metric_names[m];
	s->cause = metric_cause[m];
	s->value_ms = j->hit_value[i];
	s->median_ms = j->hit_median[i];
	s->degradation = rel(s->value_ms, s->median_ms);
	s->since_ns = j->since[i] ? j->since[i] : t_ns;
	s->onset_step = j->chg[i].onset;
	s->confirmed_step = j->chg[i].confirmed;
	method(j, i, m, s);
	compared_with(j, k, m, s);
	bool starved = host_evidence(j, k, m, s);
	if (m == TS_M_GEMM && s->value_ms > 0)
		appendf(s->evidence, sizeof(s->evidence), " (GEMM-time equivalent): its GEMMs "
			"run at %.0f%% of its peers' throughput: its GPU is slower (shared, "
			"throttled or faulty)", 100 * s->median_ms / s->value_ms);
	if ((m == TS_M_COMPUTE && !starved) || m == TS_M_GEMM)
		device_evidence(j, k, s);
	if (!strcmp(s->cause, "HostCPU") && j->meta[k].blame.top_comm[0])
		appendf(s->evidence, sizeof(s->evidence), ", preempted by %s (pid %d, %.1f ms/s)",
			j->meta[k].blame.top_comm, j->meta[k].blame.top_pid,
			j->meta[k].blame.top_ms_per_s);
	appendf(s->evidence, sizeof(s->evidence), "; collective %.2f ms vs %.2f ms (%+.0f%%)%s", cv,
		cmed, 100 * rel(cv, cmed), cv < cmed ? ": the others wait for it" : "");
	if (j->res.net.explained_rank == k)
		appendf(s->evidence, sizeof(s->evidence), "; its communicators' transfers slowed "
			"with it (%d of %d, worst %+.0f%%): %s", j->res.net.slow_comms,
			j->res.net.comms, 100 * j->res.net.excess, transfers_why(s->cause));
}

/* Each peer class's least collective wait (window medians), into class_wait. */
static void class_waits(struct ts_job *j)
{
	for (int c = 0; c < j->nclass; c++) {
		float least = NAN;
		for (int i = j->cstart[c]; i < j->cstart[c + 1]; i++) {
			float w = j->win_median[idx(j, j->order[i], TS_M_COLLECTIVE)];
			if (!(w >= least))
				least = w;
		}
		j->class_wait[c] = least;
	}
}

/* In synchronous training the job waits for its slowest rank, which waits least. A rank
 * whose alarmed phase costs it no time over its reference, or that waits in its
 * collectives for a peer longer than half again what its phase costs, is not what the
 * job waits for: its rise follows the wait (NCCL's kernels spin beside its GEMMs while
 * the peer is late). The node agent's run-queue and off-CPU times measure the host,
 * which waiting does not raise: they need only the excess. Ranks with no peer are
 * judged on their own past alone. */
static bool waits_for_peer(struct ts_job *j, int k, int m, bool *waits_known)
{
	size_t i = idx(j, k, m);
	double d = j->hit_value[i] - j->hit_median[i];

	if (ts_job_peers(j, k) < 1)
		return false;
	if (!(d > 0))
		return true;
	if (m == TS_M_RUNQ || m == TS_M_OFFCPU)
		return false;
	if (!*waits_known)
		class_waits(j), *waits_known = true;
	double wait = j->win_median[idx(j, k, TS_M_COLLECTIVE)] -
		      j->class_wait[j->meta[k].peer_class];
	return wait > 1.5 * d;
}

/* A host that feeds its GPU late stretches the device's busy span with its own gaps: the
 * rank's launch time rises with its device time while its GEMMs (timed on the device)
 * keep their rate. A slower device leaves the launches be (the GEMM neighbours of
 * bench/data raise launch time by at most 0.07 of their busy span's rise), so when launch
 * rose by a quarter of it or more, its host not starved either, the rank's device is not
 * what the job waits for: a healthy rank 0's host held accelerate's job for 13 steps at
 * +70 %, launch and device time up alike (acc-ok-1); Lightning's ranks take turns in
 * spells of busy 1.4-1.8x with launch 1.2-1.4x (lit-ok-1, lit-gemm-2 before its GEMMs). */
static bool host_fed(struct ts_job *j, int k)
{
	int recent = j->p.change.smooth_steps;
	double c = ts_job_peer_ratio(j, k, TS_M_COMPUTE, recent),
	       l = ts_job_peer_ratio_timed(j, k, TS_M_LAUNCH, recent);

	return !j->alarm[idx(j, k, TS_M_GEMM)] && !device_suspect(j, k) && c > 1 &&
	       l - 1 >= 0.25 * (c - 1);
}

/* The metrics of a rank's device and launches, whose excess a role can hold. */
static const int device_metrics[] = { TS_M_COMPUTE, TS_M_LAUNCH, TS_M_GEMM };

static bool felt_valid(const struct ts_job *j, size_t i)
{
	return j->alarm[i] && j->felt_of[i] == j->chg[i].confirmed + 1;
}

/* A rank can hold an excess for good and the job not slow for it: the rank that comes
 * last by role (its GEMMs overlap the others' all-reduce, bench/data spawn-sleep-2: busy
 * 1.5x its peer's from step 20, the step unchanged). An alarm the job has run with for
 * two windows since it was confirmed, its step clearly under verdict.min_slowdown, is
 * absorbed: its ratio to the peers then (the window's, which lags a new fault's first
 * steps) is kept, and with it the rank's busy ratio. Only alarmed ranks cost the work. */
static void absorb(struct ts_job *j)
{
	uint64_t w2 = 2 * W(j);

	if (!ts_job_floors(j) || j->fs.slow || !(ts_job_slowdown(j) < 0.5 * j->p.verdict.min_slowdown))
		return;
	for (int k = 0; k < j->world; k++)
		for (size_t e = 0; e < sizeof(device_metrics) / sizeof(*device_metrics); e++) {
			size_t i = idx(j, k, device_metrics[e]);
			const struct ts_change *c = &j->chg[i];
			double r;
			if (!j->alarm[i] || j->res.last_step < c->confirmed + w2 ||
			    isnan(r = ts_job_peer_ratio(j, k, device_metrics[e], 0)))
				continue;
			j->felt[i] = (float)r, j->felt_of[i] = c->confirmed + 1;
			j->felt_busy[k] = (float)ts_job_peer_ratio(j, k, -1, 0);
		}
}

/* Whether rank k's metric m (absorbed) grew since by less than half the time the job
 * lost: the old excess is no cause of the new slowdown. */
static bool absorbed(struct ts_job *j, int k, int m)
{
	size_t i = idx(j, k, m);
	double mine, theirs, lost = ts_job_slowdown(j) * j->fs.baseline;

	return felt_valid(j, i) &&
	       ts_job_peer_medians(j, k, m, j->p.change.smooth_steps, &mine, &theirs) &&
	       mine - theirs * j->felt[i] < 0.5 * lost;
}

/* Rank k's busy ratio to its peers over its last steps (or pairs of steps: a phase slow
 * every other step explains a wait every other step), less what the job absorbed of it
 * (absorb), plus 1: what of its busy time can explain a new wait. */
static double new_busy_ratio(struct ts_job *j, int k)
{
	int n = j->p.change.smooth_steps;
	double r = fmax(ts_job_peer_ratio(j, k, -1, n), ts_job_peer_ratio_pairs(j, k, -1, n));

	for (size_t e = 0; e < sizeof(device_metrics) / sizeof(*device_metrics); e++)
		if (felt_valid(j, idx(j, k, device_metrics[e])) && j->felt_busy[k] > 1)
			return r - (j->felt_busy[k] - 1);
	return r;
}

/* Rank k's metric m is slow from the start: alarmed, its change began in the job's first
 * windows and has held for two windows since, verdict.level_ratio times its peers'. A
 * device slow from step 0 stays slow; a role does not: in a GPU-bound DDP job the rank
 * that arrives last (its GEMMs timed 7x slower while its all-reduce overlaps its backward
 * pass) hands the role on after some 30-50 steps (torchvision's ResNet-50, bench/data
 * vis-ok-q1) with no change in the step time. */
static bool level_from_start(struct ts_job *j, int k, int m)
{
	const struct ts_change *c = &j->chg[idx(j, k, m)];
	uint64_t first = j->res.last_step + 1 - j->res.steps_evaluated,
		 w = (uint64_t)j->p.space_window;

	return j->alarm[idx(j, k, m)] && c->alarm && c->onset <= first + 2 * w &&
	       j->res.last_step >= c->confirmed + 2 * w &&
	       ts_job_peer_ratio(j, k, m, 0) >= j->p.verdict.level_ratio;
}

/* Rank k's run-queue delay grew by half the time the job lost or more: a host short of
 * CPU can cost the job that. A GPU neighbour's process adds a little delay too, and with
 * the device timed every other step its compute alarm can come a few steps after that
 * one (bench/data compd-gemm-1). */
static bool runq_explains(struct ts_job *j, int k)
{
	size_t i = idx(j, k, TS_M_RUNQ);

	return j->hit_value[i] - j->hit_median[i] >= 0.5 * ts_job_slowdown(j) * j->fs.baseline;
}

/* Whether rank k, alarmed on metric m, is worth naming: the job waits for it step after
 * step (verdict.wait_floor), and the job slowed (verdict.min_slowdown) with the rank's
 * own evidence as large as its cause needs: its loader or checkpoint delay as it is, its
 * run-queue delay half the time lost, a busy time verdict.compute_ratio times its
 * peers' (the slowdown held verdict.min_slow_s: ts_job_slowed); or, with no slowdown to
 * see (slow from its first step), a busy time verdict.level_ratio times its peers' while
 * the others wait three times the floor for it (a device twice as slow for the
 * same work costs the job about half its step). */
static bool worth_naming(struct ts_job *j, int k, int m)
{
	const struct ts_params *p = &j->p;
	double share, last, runq, ref;

	if (!ts_job_floors(j))
		return true;
	if (!ts_job_waited_for(j, k, &share, &last) || last < 0.75 ||
	    !(share >= p->verdict.wait_floor))
		return false;
	bool slowed = ts_job_slowed(j);
	if (m == TS_M_RUNQ)
		return slowed && runq_explains(j, k);
	if ((m != TS_M_COMPUTE && m != TS_M_LAUNCH && m != TS_M_GEMM) ||
	    host_starves(j, k, m, &runq, &ref))
		return slowed;
	if (host_fed(j, k) || (slowed && absorbed(j, k, m)))
		return false;
	if (slowed)
		return ts_job_peer_ratio(j, k, m, 0) >= p->verdict.compute_ratio;
	/* and its device shows why: the role can hold 60 steps and more (the last stage's
	 * replicas of a pipeline job, bench/data pp-ok-q2); a GPU shared, throttled or failing
	 * from the start says so to the node agent, and slower GEMMs to the preload */
	if (share < 3 * p->verdict.wait_floor ||
	    !(device_suspect(j, k) || j->alarm[idx(j, k, TS_M_GEMM)]))
		return false;
	/* any of its busy times will do, not only the one alarmed most: one slow GEMM bucket
	 * of several leaves the GEMM median as it was while its compute doubles (bench/data
	 * spawn-slow0), and with the device timed every other step the GEMM alarm comes late */
	static const int busy[] = { TS_M_COMPUTE, TS_M_LAUNCH, TS_M_GEMM };
	for (size_t b = 0; b < sizeof(busy) / sizeof(busy[0]); b++)
		if (level_from_start(j, k, busy[b]))
			return true;
	return false;
}

/* The rank of class c that waits least in its collectives (window medians); -1 none. */
static int least_waiting(struct ts_job *j, int lo, int hi, bool all)
{
	int best = -1;
	float least = INFINITY;

	for (int i = lo; i < hi; i++) {
		int k = all ? i : j->order[i];
		float w = j->win_median[idx(j, k, TS_M_COLLECTIVE)];
		if (w < least)
			least = w, best = k;
	}
	return best;
}

/* A job that slowed waiting for a rank none of whose phases explains it (its busy time
 * over its last steps within a quarter of its peers'): its host holds each step (a
 * sleep, a lock, a blocking call in its loop) between the phases trainscope times. The
 * weakest evidence, so it needs twice the slowdown (verdict.min_slowdown) and twice the
 * wait (verdict.wait_floor) of a named phase: HostCPU. */
static void host_gap(struct ts_job *j, uint64_t t_ns)
{
	struct ts_job_result *res = &j->res;
	bool singles = j->nclass >= j->world;
	double share, last, slow = ts_job_slowdown(j);

	/* slowed (for verdict.min_slow_s), and twice the slowdown ts_job_slowed asks */
	if (res->nslow || !ts_job_floors(j) || !ts_job_slowed(j) ||
	    !(slow >= 2 * j->p.verdict.min_slowdown))
		return;
	for (int c = 0; c < (singles ? 1 : j->nclass); c++) {
		int k = singles ? least_waiting(j, 0, j->world, true)
				: j->cstart[c + 1] - j->cstart[c] < 2 ? -1
				: least_waiting(j, j->cstart[c], j->cstart[c + 1], false);
		if (k < 0 || !(new_busy_ratio(j, k) < 1.25) ||
		    !ts_job_waited_for(j, k, &share, &last) || last < 0.75 ||
		    !(share >= 2 * j->p.verdict.wait_floor))
			continue;
		struct ts_slow_rank *s = &res->slow[res->nslow++];
		memset(s, 0, sizeof(*s));
		s->rank = k;
		/* its GPU shared, throttled or failing: its kernels are what it waits on (a
		 * program that syncs each step hides them in its host's time) */
		bool dev = device_suspect(j, k);
		s->cause = dev ? "Compute" : "HostCPU";
		s->metric = "step";
		s->value_ms = share * j->step_ms;
		s->degradation = slow;
		s->since_ns = t_ns;
		s->onset_step = s->confirmed_step = res->last_step;
		snprintf(s->method, sizeof(s->method), "WAIT");
		snprintf(s->evidence, sizeof(s->evidence), "the others wait %.2f ms/step (%.0f%% "
			 "of the step) for it in their collectives, it came last in %.0f%% of the "
			 "last steps, and none of its busy, loader or checkpoint time explains it: "
			 "%s; the job's step %+.0f%% over its baseline", s->value_ms, 100 * share,
			 100 * last, dev ? "its device does (below)"
			 : "its host holds each step (a sleep, a lock, a blocking call)", 100 * slow);
		if (dev)
			device_evidence(j, k, s);
		appendf(res->summary, sizeof(res->summary), "%s%d(%s)", res->summary[0] ? "," : "",
			k, s->cause);
	}
}

void ts_job_compose(struct ts_job *j, uint64_t t_ns)
{
	struct ts_job_result *res = &j->res;
	size_t len = 0;
	bool waits_known = false;

	res->nslow = 0;
	res->summary[0] = 0;
	absorb(j);
	for (int k = 0; k < j->world; k++) {
		int m = pick_metric(j, k);
		if (m < 0 || waits_for_peer(j, k, m, &waits_known) || host_pending(j, k, m) ||
		    !worth_naming(j, k, m))
			continue;
		struct ts_slow_rank *s = &res->slow[res->nslow++];
		describe(j, k, m, s, t_ns);
		if (len < sizeof(res->summary))
			len += (size_t)snprintf(res->summary + len, sizeof(res->summary) - len,
						"%s%d(%s)", len ? "," : "", k, s->cause);
	}
	host_gap(j, t_ns);
	ts_job_net_name(j);
}

static enum ts_state state_of(const struct ts_job *j)
{
	uint64_t warm = (uint64_t)(j->p.fs.task_stable_step + j->p.fs.min_startup_detection_steps);

	if (j->res.nslow || j->fs.slow || j->res.net.scope != TS_NET_NONE)
		return TS_STATE_FAILSLOW;
	return j->res.steps_evaluated >= warm ? TS_STATE_HEALTHY : TS_STATE_UNKNOWN;
}

/* A network verdict adds its cause and place to the reason. */
static void net_reason(struct ts_job *j)
{
	const struct ts_net_verdict *v = &j->res.net;
	size_t len = strlen(j->res.reason);

	if (v->scope == TS_NET_NONE)
		return;
	snprintf(j->res.reason + len, sizeof(j->res.reason) - len, "%sCommunication: %s%s%s%s",
		 len ? "; " : "", v->scope == TS_NET_JOB ? "the job's network, no rank or node stands out"
		 : v->scope == TS_NET_NODE ? "the network of node " : "the link between ",
		 v->nodes[0], v->nodes[1][0] ? " and " : "", v->nodes[1]);
	len = strlen(j->res.reason);
	snprintf(j->res.reason + len, sizeof(j->res.reason) - len, " (%d of %d communicators "
		 "%+.0f%%)", v->slow_comms, v->comms, 100 * v->excess);
}

/* The job slowed as a whole (no rank stands out: every rank of a one-node job starved
 * together, a job-wide slowdown): the phase that grew the most ms per step on the
 * median rank since the first full window, against the job's own past, into the
 * reason. Collective time grows with transfers and with the waits of a slower rank
 * alike: Communication only when nothing else grew as much. */
static void jobwide_cause(struct ts_job *j)
{
	static const int phase[] = { TS_M_COMPUTE, TS_M_LAUNCH, TS_M_DATALOADER, TS_M_CHECKPOINT,
				     TS_M_RUNQ, TS_M_COLLECTIVE };
	size_t last = ts_job_last_slot(j);
	int best = -1;
	double grew = 0, now_best = 0;

	for (size_t p = 0; p < sizeof(phase) / sizeof(phase[0]) && j->job_base_set; p++) {
		int m = phase[p], n = 0;
		for (int k = 0; k < j->world; k++) {
			double v = ts_median_recent(&j->hist[idx(j, k, m) * W(j)], W(j), last,
						    (size_t)j->p.change.smooth_steps);
			if (!isnan(v))
				j->vals[n++] = v;
		}
		double now = n ? ts_median(j->vals, (size_t)n, j->scratch) : NAN;
		double d = now - j->job_base[m];
		bool more = best < 0 || (m == TS_M_COLLECTIVE ? d > 2 * grew : d > grew);
		if (!isnan(d) && d > 0.05 * j->fs.baseline && more)
			best = m, grew = d, now_best = now;
	}
	if (best < 0)
		return;
	appendf(j->res.reason, sizeof(j->res.reason), "; the whole job: %s %.1f ms/step vs %.1f "
		"ms at its start (%s%s)", ts_metric_names[best], now_best, j->job_base[best],
		metric_cause[best], best == TS_M_RUNQ ? ": its ranks wait for CPU together, "
		"a host or a node starved" : "");
}

void ts_job_verdict(struct ts_job *j)
{
	j->res.state = state_of(j);
	j->res.baseline_ms = j->fs.baseline;
	j->res.current_ms = j->fs.current;
	j->res.degradation = j->fs.degradation;
	j->res.reason[0] = 0;
	if (j->fs.slow) {
		snprintf(j->res.reason, sizeof(j->res.reason),
			 "step time %.1f ms vs baseline %.1f ms (%+.0f%%)", j->fs.current,
			 j->fs.baseline, 100 * j->fs.degradation);
		if (!j->res.nslow)
			jobwide_cause(j);
	}
	net_reason(j);
}

void ts_job_stopped(struct ts_job *j, uint64_t now_ns)
{
	if (j->res.nlost) {
		j->res.state = TS_STATE_HANG;
		/* a hang first, then ranks lost: the report says both */
		snprintf(j->res.reason, sizeof(j->res.reason), "%s%s%s", j->hang_reason,
			 j->hang_reason[0] ? "; then " : "", j->lost_reason);
	} else if (j->hang_reason[0] && !ts_job_all_final(j)) {
		j->res.state = TS_STATE_HANG;
		snprintf(j->res.reason, sizeof(j->res.reason), "%s", j->hang_reason);
	} else if (j->any_step && j->last_progress_ns && !ts_job_all_final(j) &&
	    now_ns - j->last_progress_ns > (uint64_t)(j->p.hang_timeout_s * 1e9)) {
		j->res.state = TS_STATE_HANG;
		snprintf(j->res.reason, sizeof(j->res.reason), "no step completed for %.0f s after step %llu",
			 (double)(now_ns - j->last_progress_ns) / 1e9,
			 (unsigned long long)j->res.last_step);
	}
}
