// SPDX-License-Identifier: Apache-2.0
#include "analyzer.h"
#include "httpd.h"
#include "log.h"
#include "metrics.h"
#include "names.h"
#include "ident.h"
#include "proto/trainscope.pb-c.h"
#include "report.h"
#include "snap.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct producer {
	uint64_t id, last_seq, dropped;
	uint64_t seen; /* bit i: seq last_seq - i arrived (a resend may come after later ones) */
	bool used;
	bool said_mismatch; /* its batch that disagreed with its subject was logged */
	uint64_t last_ns;   /* the tick before its last batch: silent past limits.job_ttl_s, forgotten */
};

/* Refusals past a limit: counted, and logged the first time for each. */
enum limit { L_JOBS, L_WORLD, L_MEMORY, L_STEP_JUMP, L_COUNT };
static const char *const limit_names[L_COUNT] = { "jobs", "world", "memory", "step_jump" };
static const char *const limit_keys[L_COUNT] = { "max_jobs", "max_world", "memory_mb",
						 "max_step_jump" };

struct ts_analyzer {
	struct ts_analyzer_opts opts;
	struct ts_job **jobs;
	bool *dirty;
	int njobs, capjobs;
	size_t job_bytes;      /* ts_job_bytes of every job followed */
	uint64_t report_failures; /* report writes failed in a row */
	char disk_why[320];       /* why the last report write failed, while they fail */
	char ext_why[320];        /* ts_analyzer_set_trouble's */
	char said_why[660];       /* the trouble the reports say now: both */
	bool limit_said[L_COUNT];
	struct ts_ns_refusals ns_refused[TS_NS_REFUSALS + 1]; /* the last: every other */
	struct producer *prod; /* open addressing, power-of-two size */
	size_t nprod, capprod;
	uint64_t now_ns, next_prune_ns; /* the last tick; when silent producers are next forgotten */
	struct ts_analyzer_stats st;
	struct ts_lag lag;        /* from steps' ends to their analysis, every job's */
};

static int publish_report(struct ts_analyzer *a, struct ts_job *j);
static const char *trouble(const struct ts_analyzer *a);
static void drop_job(struct ts_analyzer *a, int i);

int ts_analyzer_new(struct ts_analyzer **out, const struct ts_analyzer_opts *opts)
{
	struct ts_analyzer *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->opts = *opts;
	if (!a->opts.max_msg_bytes)
		a->opts.max_msg_bytes = 4u << 20;
	a->capprod = 256;
	a->prod = calloc(a->capprod, sizeof(*a->prod));
	if (!a->prod) {
		free(a);
		return -ENOMEM;
	}
	*out = a;
	return 0;
}

void ts_analyzer_free(struct ts_analyzer *a)
{
	if (!a)
		return;
	for (int i = 0; i < a->njobs; i++)
		ts_job_free(a->jobs[i]);
	free(a->jobs);
	free(a->dirty);
	free(a->prod);
	free(a);
}

static struct producer *prod_slot(struct producer *tab, size_t cap, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull) & (cap - 1);

	while (tab[i].used && tab[i].id != id)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static struct producer *prod_get(struct ts_analyzer *a, uint64_t id)
{
	struct producer *p;

	if ((a->nprod + 1) * 2 > a->capprod) {
		size_t cap = a->capprod * 2;
		struct producer *t = calloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i < a->capprod; i++)
			if (a->prod[i].used)
				*prod_slot(t, cap, a->prod[i].id) = a->prod[i];
		free(a->prod);
		a->prod = t;
		a->capprod = cap;
	}
	p = prod_slot(a->prod, a->capprod, id);
	if (!p->used) {
		p->used = true;
		p->id = id;
		a->nprod++;
	}
	p->last_ns = a->now_ns;
	return p;
}

int ts_analyzer_njobs(const struct ts_analyzer *a)
{
	return a->njobs;
}

struct ts_job *ts_analyzer_job(struct ts_analyzer *a, const char *ns, const char *name)
{
	for (int i = 0; i < a->njobs; i++)
		if (!strcmp(ts_job_ns(a->jobs[i]), ns) && !strcmp(ts_job_name(a->jobs[i]), name))
			return a->jobs[i];
	return NULL;
}

static const struct ts_limits *limits(const struct ts_analyzer *a)
{
	return &a->opts.params.limits;
}

/* Counts a refusal past a limit; the first of each kind is logged, with the limit's key. */
static int over_limit(struct ts_analyzer *a, enum limit l, const char *ns, const char *job,
		      const char *what)
{
	a->st.over_limit[l]++;
	if (!a->limit_said[l]) {
		a->limit_said[l] = true;
		ts_warn("analyzer: %s/%s: refused %s, past limits.%s (the first such refusal; "
			"trainscope_analyzer_refused_over_limit_total{limit=\"%s\"} counts them)",
			ns, job, what, limit_keys[l], limit_names[l]);
	}
	return -ERANGE;
}

static int refuse_in_ns(struct ts_analyzer *a, enum limit l, const char *ns, const char *name,
			const char *why);

/* The state bytes of namespace ns's jobs. */
static size_t ns_bytes(const struct ts_analyzer *a, const char *ns)
{
	size_t n = 0;

	for (int i = 0; i < a->njobs; i++)
		if (!strcmp(ts_job_ns(a->jobs[i]), ns))
			n += ts_job_bytes(&a->opts.params, ts_job_world(a->jobs[i]));
	return n;
}

/* Whether the job may hold world ranks under the memory budget, and its namespace under
 * its share of it (limits.namespace_share: a few huge jobs of one tenant must not take
 * every other's room); accounts for it. */
static int budget_world(struct ts_analyzer *a, struct ts_job *j, int world, const char *ns,
			const char *name)
{
	const struct ts_params *p = &a->opts.params;
	size_t have = j ? ts_job_bytes(p, ts_job_world(j)) : 0, want = ts_job_bytes(p, world);
	size_t budget = (size_t)limits(a)->memory_mb << 20;

	if (world > limits(a)->max_world)
		return over_limit(a, L_WORLD, ns, name, "a world this large");
	if (want > have && a->job_bytes - have + want > budget)
		return over_limit(a, L_MEMORY, ns, name, "the state of a job this large");
	if (want > have && (double)(ns_bytes(a, ns) - have + want) >
				   limits(a)->namespace_share * (double)budget) {
		return refuse_in_ns(a, L_MEMORY, ns, name, "its namespace's jobs hold its share "
				    "of limits.memory_mb (limits.namespace_share)");
	}
	a->job_bytes = a->job_bytes - have + want;
	return 0;
}

/* Room for one more job in the table. */
static int jobs_reserve(struct ts_analyzer *a)
{
	if (a->njobs < a->capjobs)
		return 0;
	int cap = a->capjobs ? 2 * a->capjobs : 8;
	struct ts_job **nj = realloc(a->jobs, (size_t)cap * sizeof(*nj));
	bool *nd = realloc(a->dirty, (size_t)cap * sizeof(*nd));
	if (nj)
		a->jobs = nj;
	if (nd)
		a->dirty = nd;
	if (!nj || !nd)
		return -ENOMEM;
	a->capjobs = cap;
	return 0;
}

/* Counts a job refused (or kept from growing) in namespace ns, past limit l; the first
 * refusal of each namespace named is logged. Returns -ERANGE. */
static int refuse_in_ns(struct ts_analyzer *a, enum limit l, const char *ns, const char *name,
			const char *why)
{
	struct ts_ns_refusals *r = &a->ns_refused[TS_NS_REFUSALS];

	for (int i = 0; i < TS_NS_REFUSALS; i++)
		if (!a->ns_refused[i].ns[0] || !strcmp(a->ns_refused[i].ns, ns)) {
			r = &a->ns_refused[i];
			break;
		}
	if (!r->count)
		ts_warn("analyzer: %s/%s: refused: %s (the first in %s; "
			"trainscope_analyzer_jobs_refused_total counts them)", ns, name, why,
			r == &a->ns_refused[TS_NS_REFUSALS] ? "the namespaces past the first 16"
							    : "this namespace");
	if (r != &a->ns_refused[TS_NS_REFUSALS])
		snprintf(r->ns, sizeof(r->ns), "%s", ns);
	r->count++;
	a->st.over_limit[l]++;
	return -ERANGE;
}

/* Where job j (one followed) stands in the table. */
static int job_index(const struct ts_analyzer *a, const struct ts_job *j)
{
	int i = 0;

	while (a->jobs[i] != j)
		i++;
	return i;
}

/* Jobs of namespace ns followed now. */
static int jobs_in_ns(const struct ts_analyzer *a, const char *ns)
{
	int n = 0;

	for (int i = 0; i < a->njobs; i++)
		n += !strcmp(ts_job_ns(a->jobs[i]), ns);
	return n;
}

/* Job i's tick: its verdict brought up to date, its report published when it changed,
 * its end told once. */
static void tick_job(struct ts_analyzer *a, int i, uint64_t now_ns)
{
	struct ts_job *j = a->jobs[i];
	enum ts_state before = ts_job_result(j)->state;
	char summary[512];

	snprintf(summary, sizeof(summary), "%s", ts_job_result(j)->summary);
	bool changed = ts_job_tick(j, now_ns);
	ts_job_take_lag(j, &a->lag);
	if (changed || a->dirty[i]) {
		a->dirty[i] = publish_report(a, j) != 0;
		json_t *rep = a->opts.on_report ? ts_report_json(j, trouble(a)) : NULL;
		if (rep)
			a->opts.on_report(a->opts.on_report_ctx, rep, now_ns);
		json_decref(rep);
	}
	if (a->opts.on_finish && ts_job_finished_news(j))
		a->opts.on_finish(a->opts.on_report_ctx, j);
	const struct ts_job_result *r = ts_job_result(j);
	if (a->opts.print_changes && (r->state != before || strcmp(summary, r->summary))) {
		json_t *rep = ts_report_json(j, trouble(a));
		if (rep)
			ts_report_print(rep, stdout);
		fflush(stdout);
		json_decref(rep);
	}
}

/* A full table gives up the job that finished first (or ended since the last tick), of
 * namespace ns (NULL: any); its report is published as it goes: a finished job need not stay in memory, and a flood of
 * short jobs must not keep a real one out until their ttl. False when none finished. */
static bool give_up_finished(struct ts_analyzer *a, const char *ns)
{
	int best = -1;
	uint64_t first = UINT64_MAX;

	for (int i = 0; i < a->njobs; i++) {
		struct ts_job *j = a->jobs[i];
		uint64_t q = ts_job_finished(j) ? ts_job_quiet_since_ns(j) : 0;
		if ((ts_job_finished(j) || ts_job_exited(j)) && q < first &&
		    (!ns || !strcmp(ts_job_ns(j), ns)))
			best = i, first = q;
	}
	if (best < 0)
		return false;
	/* ended since the last tick (a burst of short jobs comes faster than ticks): its
	 * last steps judged, its end told, before it goes */
	if (!ts_job_finished(a->jobs[best]))
		tick_job(a, best, a->now_ns);
	ts_debug("analyzer: gave up finished job %s/%s for a new one (its report stays)",
		 ts_job_ns(a->jobs[best]), ts_job_name(a->jobs[best]));
	drop_job(a, best);
	a->st.jobs_given_up++;
	return true;
}

/* Room for a new job of namespace ns: under the namespace's share of the table (its own
 * finished jobs give way), and a place free or a finished job's. 0 or -ERANGE (refused
 * in that namespace, counted). */
static int job_room(struct ts_analyzer *a, const char *ns, const char *name)
{
	int share = (int)(limits(a)->max_jobs * limits(a)->namespace_share);

	if (share < 1)
		share = 1;
	if (jobs_in_ns(a, ns) >= share && !give_up_finished(a, ns))
		return refuse_in_ns(a, L_JOBS, ns, name, "its namespace holds its share of "
				    "limits.max_jobs (limits.namespace_share), none finished");
	if (a->njobs >= limits(a)->max_jobs && !give_up_finished(a, NULL))
		return refuse_in_ns(a, L_JOBS, ns, name, "limits.max_jobs jobs followed, none finished");
	return 0;
}

/* The job, made when new: 0, -ERANGE (past a limit: counted) or -ENOMEM. */
static int job_get(struct ts_analyzer *a, const char *ns, const char *name, int world,
		   struct ts_job **out)
{
	struct ts_job *j = ts_analyzer_job(a, ns, name);

	if ((*out = j))
		return 0;
	if (world < 1)
		world = 1;
	if (job_room(a, ns, name))
		return -ERANGE;
	if (jobs_reserve(a))
		return -ENOMEM;
	if (budget_world(a, NULL, world, ns, name))
		return -ERANGE;
	if (ts_job_new(&j, ns, name, world, &a->opts.params)) {
		a->job_bytes -= ts_job_bytes(&a->opts.params, world);
		return -ENOMEM;
	}
	a->dirty[a->njobs] = true;
	a->jobs[a->njobs++] = j;
	a->st.jobs++;
	ts_info("analyzer: new job %s/%s (world %d)", ns, name, world);
	*out = j;
	return 0;
}

enum kind { K_RANK, K_HOST, K_DEV, K_HANG, K_CTL, K_BAD };
static const char *const kinds[] = { "rank", "host", "dev", "hang", "ctl" };

/* ts.v1.<ns>.<job>.<kind>.<leaf>[.<partition>]: 6 tokens, none empty, a known kind, and
 * the partition the stream's subject transform appends (a number) when partitioned.
 * *base: the length without the partition; *part: the partition or -1. */
static enum kind subject_kind(const char *s, size_t *base, long *part)
{
	const char *tok[7] = { s };
	int dots = 0;

	if (strncmp(s, "ts.v1.", 6) != 0)
		return K_BAD;
	for (const char *c = s; *c; c++)
		if (*c == '.') {
			if (c[1] == '.' || c[1] == 0 || ++dots > 6)
				return K_BAD;
			tok[dots] = c + 1;
		}
	if (dots < 5)
		return K_BAD;
	*base = strlen(s);
	*part = -1;
	if (dots == 6) {
		char *end;
		*part = strtol(tok[6], &end, 10);
		if (*end || *part < 0 || *part > 65535 || !isdigit((unsigned char)*tok[6]))
			return K_BAD;
		*base = (size_t)(tok[6] - s - 1);
	}
	for (int k = 0; k < K_BAD; k++)
		if ((size_t)(tok[5] - tok[4] - 1) == strlen(kinds[k]) &&
		    !strncmp(tok[4], kinds[k], strlen(kinds[k])))
			return (enum kind)k;
	return K_BAD;
}

/* A partitioned analyzer's messages carry the partition NATS computed; one that is not
 * the job's partition under this analyzer's count was mapped under another count. */
static void check_partition(struct ts_analyzer *a, const char *subject, long part)
{
	const char *ns = subject + 6, *job = strchr(ns, '.') + 1, *kind = strchr(job, '.');

	if (part < 0 || a->opts.partitions <= 1)
		return;
	if ((long)ts_partition(ns, (size_t)(job - 1 - ns), job, (size_t)(kind - job),
			       (unsigned)a->opts.partitions) == part)
		return;
	if (!a->st.other_partition++)
		ts_warn("analyzer: %s was mapped to partition %ld, which its job is not under %d "
			"partitions: the partition count changed while it was stored (counted in "
			"trainscope_analyzer_other_partition_total; analysed all the same)", subject,
			part, a->opts.partitions);
}

/* The step's sampled GEMMs: device ns per flop (their tflops is flops / ns / 1e3); NAN
 * when none was sampled. */
static double gemm_ns_per_flop(const Trainscope__V1__Step *s)
{
	double ns = 0, flops = 0;

	for (size_t i = 0; i < s->n_gemms; i++) {
		ns += (double)s->gemms[i]->time_ns;
		flops += s->gemms[i]->tflops * (double)s->gemms[i]->time_ns * 1e3;
	}
	return ns > 0 && flops > 0 ? ns / flops : NAN;
}

static void to_rank_step(const Trainscope__V1__Step *s, struct ts_rank_step *out)
{
	out->step = s->step;
	out->start_ns = s->start_ns;
	out->end_ns = s->end_ns;
	out->m[TS_M_COMPUTE] = (double)s->compute_ns / 1e6;
	out->m[TS_M_COLLECTIVE] = (double)s->collective_ns / 1e6;
	out->m[TS_M_LAUNCH] = (double)s->launch_ns / 1e6;
	out->m[TS_M_DATALOADER] = (double)s->dataloader_ns / 1e6;
	out->m[TS_M_CHECKPOINT] = (double)s->checkpoint_ns / 1e6;
	out->m[TS_M_GEMM] = gemm_ns_per_flop(s);
	out->ncomm = 0;
	for (size_t i = 0; i < s->n_comms && out->ncomm < TS_STEP_COMMS; i++) {
		const Trainscope__V1__CommStat *c = s->comms[i];
		out->comm[out->ncomm++] = (struct ts_comm_time){
			.id = c->comm_hash, .nranks = c->nranks, .count = c->count,
			.p2p = c->p2p_count, .ms = (double)c->time_ns / 1e6,
			.mb = (double)c->bytes / 1e6 };
	}
	out->npeer = 0;
	for (size_t i = 0; i < s->n_peers && out->npeer < TS_STEP_PEERS; i++) {
		const Trainscope__V1__PeerStat *p = s->peers[i];
		out->peer[out->npeer++] = (struct ts_peer_time){
			.comm = p->comm_hash, .peer = p->peer, .ns = (double)p->time_ns,
			.bytes = (double)p->bytes };
	}
}

static void note_identity(struct ts_job *j, const Trainscope__V1__Identity *id)
{
	struct ts_rank_meta *m = ts_job_rank(j, id->rank);

	if (!m)
		return;
	snprintf(m->pod, sizeof(m->pod), "%s", id->pod ? id->pod : "");
	snprintf(m->node, sizeof(m->node), "%s", id->node ? id->node : "");
	if (id->device && id->device->uuid && *id->device->uuid)
		snprintf(m->device, sizeof(m->device), "%s", id->device->uuid);
	else if (id->device)
		snprintf(m->device, sizeof(m->device), "%d", id->device->index);
	m->pid = id->pid;
	m->device_index = id->device ? id->device->index : id->local_rank;
}

static void host_sample(struct ts_job *j, const Trainscope__V1__HostSample *h)
{
	double per_s = h->interval_ns ? 1e9 / (double)h->interval_ns : 0;
	struct ts_host_view v = {
		.valid = per_s > 0,
		.time_ns = h->start_ns + h->interval_ns,
		.runq_ms_per_s = (double)h->runq_delay_ns / 1e6 * per_s,
		.offcpu_ms_per_s = (double)h->offcpu_ns / 1e6 * per_s,
		.oncpu_ms_per_s = (double)h->oncpu_ns / 1e6 * per_s,
		.involuntary_per_s = h->involuntary_switches * per_s,
		.tcp_retrans_per_s = h->tcp_retransmits * per_s,
		.nic_err_per_s = (double)h->nic_errors * per_s,
		.nic_drop_per_s = (double)h->nic_drops * per_s,
		.link_down_per_s = h->nic_link_downs * per_s,
	};

	if (h->n_preemptors && h->preemptors[0]->comm) {
		snprintf(v.top_comm, sizeof(v.top_comm), "%s", h->preemptors[0]->comm);
		v.top_pid = h->preemptors[0]->pid;
		v.top_ms_per_s = (double)h->preemptors[0]->time_ns / 1e6 * per_s;
	}
	ts_job_host_view(j, h->rank, &v);
}

static void device_sample(struct ts_job *j, const char *node, const Trainscope__V1__DeviceSample *d)
{
	struct ts_device_view v = {
		.valid = true,
		.sm_clock_mhz = d->sm_clock_mhz,
		.throttle_reasons = d->throttle_reasons,
		.xid_errors = d->xid_errors,
		.temperature_c = d->temperature_c,
	};

	ts_job_device_view(j, node ? node : "", d->device ? d->device->index : -1, &v);
}

static int refuse(struct ts_analyzer *a, uint64_t *counter, int err, const char *subject,
		  const char *why)
{
	(*counter)++;
	ts_warn("analyzer: refused message on %s: %s", subject, why);
	(void)a;
	return err;
}

/* Per producer: duplicates dropped (1 is returned), gaps counted. A batch behind the
 * last one by less than 64 that never came is a resend stored out of order: taken, and
 * no longer counted lost. */
static int check_seq(struct ts_analyzer *a, const Trainscope__V1__Batch *b, uint64_t *dropped,
		     int64_t *lost)
{
	struct producer *p = prod_get(a, b->producer_id);
	uint64_t back;

	if (!p)
		return -ENOMEM;
	if (b->seq <= p->last_seq) {
		back = p->last_seq - b->seq;
		if (back >= 64 || (p->seen >> back) & 1) {
			a->st.duplicates++;
			return 1;
		}
		p->seen |= 1ull << back;
		a->st.reordered++;
		if (a->st.lost_batches)
			a->st.lost_batches--;
		*lost = -1;
		return 0;
	}
	if (p->last_seq && b->seq > p->last_seq + 1) {
		a->st.lost_batches += b->seq - p->last_seq - 1;
		*lost = (int64_t)(b->seq - p->last_seq - 1);
		ts_debug("analyzer: %" PRIu64 " batches missing from producer %016" PRIx64 " (rank %d)",
			 b->seq - p->last_seq - 1, b->producer_id, b->id->rank);
	}
	back = b->seq - p->last_seq;
	p->seen = (back >= 64 ? 0 : p->seen << back) | 1;
	p->last_seq = b->seq;
	if (b->dropped_records > p->dropped) {
		a->st.ring_dropped += b->dropped_records - p->dropped;
		*dropped = b->dropped_records - p->dropped;
		p->dropped = b->dropped_records;
	}
	return 0;
}

/* A rank or world past the job's size grows it, within the limits. */
static int grow_for(struct ts_analyzer *a, struct ts_job *j, const Trainscope__V1__Identity *id)
{
	int want = id->rank >= id->world_size ? (id->rank < INT_MAX ? id->rank + 1 : INT_MAX)
					       : id->world_size;

	if (want <= ts_job_world(j))
		return 0;
	return budget_world(a, j, want, id->namespace_, id->job);
}

static void rank_records(struct ts_analyzer *a, struct ts_job *j, const Trainscope__V1__Batch *b)
{
	const Trainscope__V1__Identity *id = b->id;
	int rc;

	note_identity(j, id);
	for (size_t i = 0; i < b->n_records; i++) {
		const Trainscope__V1__Record *r = b->records[i];
		struct ts_rank_step rs;
		if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_HANG) {
			const Trainscope__V1__Hang *h = r->hang;
			ts_job_rank_hang(j, id->rank, h->op, h->comm_hash, h->seq, h->pending_ns,
					 h->stacks);
			a->st.hangs++;
			ts_warn("analyzer: %s/%s rank %d reports a hang: %s seq %llu", id->namespace_,
				id->job, id->rank, h->op, (unsigned long long)h->seq);
			continue;
		}
		if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_HELLO && r->hello->n_groups &&
		    !grow_for(a, j, id)) {
			ts_job_rank_groups(j, id->rank, (const char *const *)r->hello->groups,
					   r->hello->n_groups);
			continue;
		}
		if (r->kind_case != TRAINSCOPE__V1__RECORD__KIND_STEP)
			continue;
		if (r->step->end_ns < r->step->start_ns) {
			a->st.bad_steps++;
			continue;
		}
		to_rank_step(r->step, &rs);
		if (grow_for(a, j, id))
			continue; /* counted as past a limit */
		if ((rc = ts_job_add_step(j, id->rank, id->world_size, &rs))) {
			if (rc == -EDOM)
				over_limit(a, L_STEP_JUMP, id->namespace_, id->job, "a step far ahead");
			else
				a->st.bad_steps++;
			continue;
		}
		a->st.steps++;
		if (a->opts.on_step)
			a->opts.on_step(a->opts.on_report_ctx, j, id, r->step);
	}
	if (b->final && b->died)
		ts_job_rank_died(j, id->rank);
	else if (b->final)
		ts_job_rank_final(j, id->rank);
}

static void node_records(struct ts_analyzer *a, struct ts_job *j, const Trainscope__V1__Batch *b)
{
	for (size_t i = 0; i < b->n_records; i++) {
		const Trainscope__V1__Record *r = b->records[i];
		if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_HOST_SAMPLE) {
			host_sample(j, r->host_sample);
			a->st.host_samples++;
		} else if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_DEVICE_SAMPLE) {
			device_sample(j, b->id->node, r->device_sample);
			a->st.device_samples++;
		}
	}
}

/* A rank that ended (exit record, or lost) and steps again from before the steps the
 * job has analysed is a new run of the job: a launcher's restart, or the same name run
 * again. (A helper process of a live rank that exits, say a dataloader worker that
 * recorded something, sends an exit record too; the rank's steps then go on ahead.) */
static bool new_attempt(struct ts_job *j, const Trainscope__V1__Batch *b)
{
	const struct ts_rank_meta *m = ts_job_rank(j, b->id->rank);

	if (!m || !(m->final || m->lost))
		return false;
	for (size_t i = 0; i < b->n_records; i++)
		if (b->records[i]->kind_case == TRAINSCOPE__V1__RECORD__KIND_STEP)
			return b->records[i]->step->step < ts_job_next_step(j);
	return false;
}

/* The subject a producer of this identity publishes on (ts_subject, as the relay and the
 * agent make it): anything else is a batch that claims someone else's job. */
static bool subject_matches(const char *subject, size_t base, enum kind kind,
			    const Trainscope__V1__Batch *b)
{
	const Trainscope__V1__Identity *id = b->id;
	char want[512], leaf[16];
	int len;

	snprintf(leaf, sizeof(leaf), "%d", id->rank);
	len = ts_subject(want, sizeof(want), id->namespace_, id->job, kinds[kind],
			 kind == K_RANK || kind == K_HANG ? leaf : id->node ? id->node : "");
	return len >= 0 && (size_t)len == base && !strncmp(want, subject, base);
}

static int refuse_mismatch(struct ts_analyzer *a, const char *subject,
			   const Trainscope__V1__Batch *b)
{
	struct producer *p = prod_get(a, b->producer_id);

	a->st.mismatched++;
	if (p && !p->said_mismatch) { /* once per producer: a forger may send many */
		p->said_mismatch = true;
		ts_warn("analyzer: refused batches of producer %016" PRIx64 " on %s: they claim job "
			"%s/%s rank %d node %s, which publishes elsewhere (counted in "
			"trainscope_analyzer_mismatched_batches_total)", b->producer_id, subject,
			b->id->namespace_, b->id->job, b->id->rank, b->id->node ? b->id->node : "");
	}
	return -EBADMSG;
}

/* A relay's word that its process makes steps with no rank (it holds them), or that a
 * rank runs collectives and GEMMs and makes no step: no records, only the count. */
static bool unranked_notice(const Trainscope__V1__Batch *b)
{
	return b->id->rank < 0 ? b->unranked_steps > 0 && !b->n_records
			       : b->stepless_records > 0 && !b->n_records;
}

/* The job's report says which processes cannot be used and what to set; said once per
 * process here. */
static int unranked(struct ts_analyzer *a, struct ts_job *j, const Trainscope__V1__Batch *b)
{
	const Trainscope__V1__Identity *id = b->id;
	bool norank = id->rank < 0;
	uint64_t n = norank ? b->unranked_steps : b->stepless_records;

	a->st.unranked_notices++;
	if (!ts_job_unranked(j, b->producer_id, id->pod, id->pid, norank ? -1 : id->rank, n))
		return 0;
	a->st.unranked_processes++;
	ts_warn("analyzer: %s/%s: process %d (pod %s, rank %d) made %" PRIu64 " %s: its report "
		"says what to set", id->namespace_, id->job, id->pid,
		id->pod && *id->pod ? id->pod : "-", id->rank, n,
		norank ? "steps with no rank" : "collectives and GEMMs and no step");
	return 0;
}

static bool has_steps(const Trainscope__V1__Batch *b)
{
	for (size_t i = 0; i < b->n_records; i++)
		if (b->records[i]->kind_case == TRAINSCOPE__V1__RECORD__KIND_STEP)
			return true;
	return false;
}

/* Reports are JSON: a name must be UTF-8 text (NULL, unset, is fine). */
static bool utf8(const char *s)
{
	json_t *t;

	if (!s)
		return true;
	t = json_string(s);
	json_decref(t);
	return t != NULL;
}

static int ingest_batch(struct ts_analyzer *a, const char *subject, size_t base, enum kind kind,
			Trainscope__V1__Batch *b)
{
	const Trainscope__V1__Identity *id = b->id;
	uint64_t dropped = 0;
	int64_t lost = 0;
	struct ts_job *j;
	int rc;

	if (!id || !id->namespace_ || !*id->namespace_ || !id->job || !*id->job ||
	    (kind == K_RANK && id->rank < 0 && !unranked_notice(b)))
		return refuse(a, &a->st.bad_msgs, -EBADMSG, subject, "batch without identity");
	if (!b->producer_id || !b->seq)
		return refuse(a, &a->st.bad_msgs, -EBADMSG, subject, "batch without producer/seq");
	if (!utf8(id->namespace_) || !utf8(id->job) || !utf8(id->pod) || !utf8(id->node))
		return refuse(a, &a->st.bad_msgs, -EBADMSG, subject, "names that are not UTF-8");
	if (!subject_matches(subject, base, kind, b))
		return refuse_mismatch(a, subject, b);
	if (kind == K_CTL) { /* announcements are for node agents */
		a->st.control++;
		return 1;
	}
	if ((rc = check_seq(a, b, &dropped, &lost)))
		return rc;
	if ((rc = job_get(a, id->namespace_, id->job, id->world_size, &j)))
		return rc;
	if (kind == K_RANK && new_attempt(j, b)) {
		ts_info("analyzer: %s/%s: a new run (rank %d steps again after its exit): the "
			"report starts afresh", id->namespace_, id->job, id->rank);
		drop_job(a, job_index(a, j));
		a->st.attempts++;
		if ((rc = job_get(a, id->namespace_, id->job, id->world_size, &j)))
			return rc;
	}
	if (dropped || lost) { /* news for the report, a gap filled late too */
		ts_job_data_loss(j, dropped, lost);
		a->dirty[job_index(a, j)] = true;
	}
	if (kind == K_RANK && unranked_notice(b))
		return unranked(a, j, b);
	if (kind == K_RANK && has_steps(b))
		ts_job_ranked(j, b->producer_id);
	if (kind == K_RANK || kind == K_HANG)
		rank_records(a, j, b);
	else
		node_records(a, j, b);
	return 0;
}

int ts_analyzer_ingest(struct ts_analyzer *a, const char *subject, const void *data, size_t len)
{
	Trainscope__V1__Batch *b;
	int err;

	a->st.msgs++;
	if (len > a->opts.max_msg_bytes)
		return refuse(a, &a->st.oversized, -EMSGSIZE, subject, "larger than the message limit");
	size_t base = 0;
	long part = -1;
	enum kind kind = subject ? subject_kind(subject, &base, &part) : K_BAD;
	if (kind == K_BAD)
		return refuse(a, &a->st.bad_subject, -EINVAL, subject ? subject : "(none)",
			      "subject is not ts.v1.<ns>.<job>.<rank|host|dev|hang|ctl>.<id>"
			      "[.<partition>]");
	check_partition(a, subject, part);
	b = trainscope__v1__batch__unpack(NULL, len, data);
	if (!b)
		return refuse(a, &a->st.bad_msgs, -EBADMSG, subject, "not a trainscope.v1.Batch");
	err = ingest_batch(a, subject, base, kind, b);
	trainscope__v1__batch__free_unpacked(b, NULL);
	if (!err)
		a->st.batches++;
	return err > 0 ? 0 : err; /* a duplicate is not an error */
}

static const char *trouble(const struct ts_analyzer *a)
{
	return a->said_why[0] ? a->said_why : NULL;
}

void ts_analyzer_set_trouble(struct ts_analyzer *a, const char *why)
{
	snprintf(a->ext_why, sizeof(a->ext_why), "%s", why ? why : "");
}

/* A trouble that comes or goes is news for every report. */
static void update_trouble(struct ts_analyzer *a)
{
	char now[sizeof(a->said_why)];

	snprintf(now, sizeof(now), "%s%s%s", a->ext_why, a->ext_why[0] && a->disk_why[0] ? "; " : "",
		 a->disk_why);
	if (!strcmp(now, a->said_why))
		return;
	memcpy(a->said_why, now, sizeof(now));
	for (int i = 0; i < a->njobs; i++)
		a->dirty[i] = true;
}

/* Writes the job's report file: 0, or the error (the caller tries again later). A
 * folder that fails (a full disk) is said once, and again when it works again. */
static int publish_report(struct ts_analyzer *a, struct ts_job *j)
{
	int err;

	if (!a->opts.report_dir)
		return 0;
	if ((err = ts_report_write(j, a->opts.report_dir, trouble(a)))) {
		a->st.report_errors++;
		snprintf(a->disk_why, sizeof(a->disk_why), "report files cannot be written in %s: %s",
			 a->opts.report_dir, strerror(-err));
		if (!a->report_failures++)
			ts_error("analyzer: cannot write the report of %s/%s in %s: %s (retried every "
				 "tick; trainscope_analyzer_report_write_errors_total counts)",
				 ts_job_ns(j), ts_job_name(j), a->opts.report_dir, strerror(-err));
		return err;
	}
	if (a->report_failures)
		ts_info("analyzer: report folder %s writable again (%" PRIu64 " writes had failed)",
			a->opts.report_dir, a->report_failures);
	a->report_failures = 0;
	a->disk_why[0] = 0;
	a->st.reports_written++;
	return 0;
}

/* Frees job i after its last report file and on_forget. */
static void drop_job(struct ts_analyzer *a, int i)
{
	struct ts_job *j = a->jobs[i];

	if (a->dirty[i])
		publish_report(a, j);
	if (a->opts.on_forget)
		a->opts.on_forget(a->opts.on_report_ctx, j);
	a->job_bytes -= ts_job_bytes(&a->opts.params, ts_job_world(j));
	ts_job_free(j);
	a->jobs[i] = a->jobs[a->njobs - 1];
	a->dirty[i] = a->dirty[a->njobs - 1];
	a->njobs--;
}

/* A job whose ranks all ended, or that sent nothing, for limits.job_ttl_s: its last
 * report was published; its state goes (a later batch of that name starts a new job).
 * Jobs that only ever sent garbage thus do not hold limits.max_jobs for good. */
static bool forget_quiet(struct ts_analyzer *a, int i, uint64_t now_ns)
{
	struct ts_job *j = a->jobs[i];
	uint64_t quiet = ts_job_quiet_since_ns(j);

	if (!quiet || a->dirty[i] || now_ns < quiet ||
	    (double)(now_ns - quiet) < limits(a)->job_ttl_s * 1e9)
		return false;
	ts_info("analyzer: forgot %s job %s/%s (its report stays)",
		ts_job_result(j)->steps_evaluated ? "finished or silent" : "silent", ts_job_ns(j),
		ts_job_name(j));
	drop_job(a, i);
	a->st.jobs_forgotten++;
	return true;
}

/* Producers silent for limits.job_ttl_s are forgotten, like their jobs: processes come
 * and go over a long life, and each left an entry. The table is made again around those
 * that remain (deleting in place would break open addressing's probe chains). */
static void prune_producers(struct ts_analyzer *a, uint64_t now_ns)
{
	uint64_t ttl = (uint64_t)(limits(a)->job_ttl_s * 1e9);
	size_t cap = 256, keep = 0;
	struct producer *t;

	if (now_ns < a->next_prune_ns)
		return;
	a->next_prune_ns = now_ns + (ttl / 4 > 1000000000ull ? ttl / 4 : 1000000000ull);
	for (size_t i = 0; i < a->capprod; i++)
		keep += a->prod[i].used && a->prod[i].last_ns + ttl > now_ns;
	if (keep == a->nprod)
		return;
	while ((keep + 1) * 2 > cap)
		cap *= 2;
	if (!(t = calloc(cap, sizeof(*t))))
		return; /* tried again at the next prune */
	for (size_t i = 0; i < a->capprod; i++)
		if (a->prod[i].used && a->prod[i].last_ns + ttl > now_ns)
			*prod_slot(t, cap, a->prod[i].id) = a->prod[i];
	free(a->prod);
	a->prod = t;
	a->capprod = cap;
	a->nprod = keep;
}

void ts_analyzer_tick(struct ts_analyzer *a, uint64_t now_ns)
{
	if (!a->now_ns) /* producers seen before the first tick: as of now */
		for (size_t i = 0; i < a->capprod; i++)
			a->prod[i].last_ns = a->prod[i].used ? now_ns : 0;
	a->now_ns = now_ns;
	prune_producers(a, now_ns);
	update_trouble(a);
	for (int i = 0; i < a->njobs; i++) {
		tick_job(a, i, now_ns);
		if (forget_quiet(a, i, now_ns))
			i--;
	}
}

void ts_analyzer_flush_reports(struct ts_analyzer *a)
{
	for (int i = 0; i < a->njobs; i++)
		publish_report(a, a->jobs[i]);
}

void ts_analyzer_get_stats(struct ts_analyzer *a, struct ts_analyzer_stats *out)
{
	*out = a->st;
	out->producers = a->nprod;
	out->late_steps = 0;
	for (int i = 0; i < a->njobs; i++)
		out->late_steps += ts_job_late_steps(a->jobs[i]);
}

static void render_lag(const struct ts_lag *l, struct ts_buf *b)
{
	const char *n = "trainscope_analyzer_verdict_lag_seconds";

	ts_buf_printf(b, "# HELP %s From a step's end (its last rank's) to its analysis: the "
			 "analyzer's lag behind the jobs.\n# TYPE %s histogram\n", n, n);
	ts_render_hist(b, n, "", ts_lag_bucket_s, TS_LAG_BUCKETS, l->le, l->count, l->sum_s);
	ts_buf_printf(b, "# HELP trainscope_analyzer_verdict_lag_max_seconds The largest lag since "
			 "the start.\n# TYPE trainscope_analyzer_verdict_lag_max_seconds gauge\n"
			 "trainscope_analyzer_verdict_lag_max_seconds %.6f\n", l->max_s);
}

void ts_analyzer_render_metrics(struct ts_analyzer *a, struct ts_buf *b)
{
	struct ts_analyzer_stats s;

	ts_analyzer_get_stats(a, &s);
#define M(name, type, help, v) ts_prom(b, "trainscope_analyzer_" name, type, help, (uint64_t)(v))
	M("messages_total", "counter", "NATS messages received.", s.msgs);
	M("batches_total", "counter", "Batches accepted.", s.batches);
	M("rejected_malformed_total", "counter", "Messages refused: not a valid batch.", s.bad_msgs);
	M("rejected_oversized_total", "counter", "Messages refused: over the size limit.",
	  s.oversized);
	M("rejected_subject_total", "counter", "Messages refused: bad subject.", s.bad_subject);
	M("duplicate_batches_total", "counter", "Batches seen twice and dropped.", s.duplicates);
	M("producers", "gauge", "Producers followed (sequence checks); silent ones are forgotten "
	  "after limits.job_ttl_s.", s.producers);
	M("other_partition_total", "counter", "Messages mapped to this analyzer's partition "
	  "under another partition count (the count changed), analysed all the same.",
	  s.other_partition);
	M("mismatched_batches_total", "counter",
	  "Batches refused: the job, rank or node they claim publishes on another subject.",
	  s.mismatched);
	M("lost_batches_total", "counter", "Gaps in producers' sequence numbers (less those "
	  "filled later).", s.lost_batches);
	M("reordered_batches_total", "counter", "Batches stored after later ones of their "
	  "producer (resends), taken.", s.reordered);
	M("ring_dropped_records_total", "counter", "Records the ranks' rings dropped.",
	  s.ring_dropped);
	M("steps_total", "counter", "Rank steps accepted.", s.steps);
	M("bad_steps_total", "counter", "Rank steps refused (bad times or rank).", s.bad_steps);
	M("late_steps_total", "counter", "Rank steps that came after their step was analysed.",
	  s.late_steps);
	M("reports_written_total", "counter", "Report files written.", s.reports_written);
	M("report_write_errors_total", "counter", "Report files that could not be written "
	  "(retried).", s.report_errors);
	M("report_dir_failing", "gauge", "1 while report files cannot be written (a full disk).",
	  a->report_failures > 0);
	M("jobs_given_up_total", "counter", "Finished jobs whose place in the job table went "
	  "to a new one (their reports stay).", s.jobs_given_up);
	M("control_messages_total", "counter", "Rank announcements seen (for node agents).",
	  s.control);
	M("host_samples_total", "counter", "Node agents' host samples joined.", s.host_samples);
	M("device_samples_total", "counter", "Node agents' GPU samples joined.", s.device_samples);
	M("jobs", "gauge", "Jobs followed now.", a->njobs);
	M("jobs_started_total", "counter", "Jobs followed since the start.", s.jobs);
	M("jobs_forgotten_total", "counter", "Jobs forgotten after limits.job_ttl_s quiet.",
	  s.jobs_forgotten);
	M("job_attempts_total", "counter", "New runs of a job name whose ranks had ended: "
	  "started afresh.", s.attempts);
	M("unranked_notices_total", "counter", "Relays' notices that a process makes steps with "
	  "no rank (held by its relay), or that a rank runs collectives and GEMMs with no step: "
	  "the job's report says what to set.", s.unranked_notices);
	M("unranked_processes_total", "counter", "Processes that made steps with no rank, or "
	  "ranks that made no step (once each).", s.unranked_processes);
	M("job_state_bytes", "gauge", "Memory held by the jobs' state (limits.memory_mb bounds it).",
	  a->job_bytes);
#undef M
	render_lag(&a->lag, b);
	ts_buf_printf(b, "# HELP trainscope_analyzer_refused_over_limit_total Data refused past a "
			 "limit (limits.*).\n# TYPE trainscope_analyzer_refused_over_limit_total counter\n");
	for (int l = 0; l < L_COUNT; l++)
		ts_buf_printf(b, "trainscope_analyzer_refused_over_limit_total{limit=\"%s\"} %" PRIu64 "\n",
			      limit_names[l], s.over_limit[l]);
	ts_buf_printf(b, "# HELP trainscope_analyzer_jobs_refused_total Jobs refused (or kept "
			 "from growing), by namespace: its share of limits.max_jobs or of "
			 "limits.memory_mb, or the table full of running jobs; past 16 namespaces "
			 "as (other).\n"
			 "# TYPE trainscope_analyzer_jobs_refused_total counter\n");
	for (int i = 0; i <= TS_NS_REFUSALS; i++)
		if (a->ns_refused[i].count)
			ts_buf_printf(b, "trainscope_analyzer_jobs_refused_total{k8s_namespace=\"%s\"} "
				      "%" PRIu64 "\n", i < TS_NS_REFUSALS ? a->ns_refused[i].ns :
				      "(other)", a->ns_refused[i].count);
	ts_jobs_render_metrics(a->jobs, a->njobs, a->opts.params.metrics_top_ranks, b);
}

/* ---- snapshots ------------------------------------------------------------------ */

#define SNAP_MAGIC 0x3150414e53535400ull /* "\0TSSNAP1" */

struct snap_head {
	uint64_t magic, layout, stream_seq, nprod;
	int32_t njobs, pad;
};

static uint64_t snap_layout(void)
{
	return ts_job_snap_layout() ^ (sizeof(struct producer) << 48);
}

int ts_analyzer_save(struct ts_analyzer *a, uint64_t stream_seq, struct ts_buf *out)
{
	struct snap_head h = { SNAP_MAGIC, snap_layout(), stream_seq, a->nprod, a->njobs, 0 };
	struct ts_snap s = { .out = out };

	TS_SNAP_VAR(&s, h);
	for (size_t i = 0; i < a->capprod && !s.err; i++)
		if (a->prod[i].used)
			TS_SNAP_VAR(&s, a->prod[i]);
	for (int i = 0; i < a->njobs && !s.err; i++)
		ts_job_save(a->jobs[i], &s);
	return s.err;
}

/* A job read back joins the table like a new one, within today's limits. */
static int adopt_job(struct ts_analyzer *a, struct ts_job *j)
{
	const char *ns = ts_job_ns(j), *name = ts_job_name(j);

	if (a->njobs >= limits(a)->max_jobs)
		return over_limit(a, L_JOBS, ns, name, "a job from the snapshot");
	if (jobs_reserve(a))
		return -ENOMEM;
	if (budget_world(a, NULL, ts_job_world(j), ns, name))
		return -ERANGE;
	a->dirty[a->njobs] = true;
	a->jobs[a->njobs++] = j;
	return 0;
}

static int restore_body(struct ts_analyzer *a, struct ts_snap *s, const struct snap_head *h,
			uint64_t now_ns)
{
	for (uint64_t i = 0; i < h->nprod && !s->err; i++) {
		struct producer p = { 0 }, *q;
		TS_SNAP_VAR(s, p);
		if (!s->err && !(q = prod_get(a, p.id)))
			return -ENOMEM;
		if (!s->err)
			*q = p;
	}
	for (int i = 0; i < h->njobs && !s->err; i++) {
		struct ts_job *j;
		int err = ts_job_load(&j, s, limits(a)->max_world, now_ns);
		if (err)
			return err;
		if (adopt_job(a, j))
			ts_job_free(j);
	}
	return s->err;
}

int ts_analyzer_restore(struct ts_analyzer *a, const void *data, size_t len, uint64_t now_ns,
			uint64_t *stream_seq)
{
	struct ts_snap s = { .in = data, .len = len };
	struct snap_head h = { 0 };
	int err;

	if (a->njobs || a->nprod)
		return -EBUSY;
	TS_SNAP_VAR(&s, h);
	if (s.err || h.magic != SNAP_MAGIC || h.njobs < 0)
		return -EBADMSG;
	if (h.layout != snap_layout())
		return -EPROTO;
	if ((err = restore_body(a, &s, &h, now_ns)) || s.off != s.len) {
		for (int i = 0; i < a->njobs; i++) /* never reported: dropped without a word */
			ts_job_free(a->jobs[i]);
		a->njobs = 0;
		a->job_bytes = 0;
		memset(a->prod, 0, a->capprod * sizeof(*a->prod));
		a->nprod = 0;
		return err ? err : -EBADMSG;
	}
	*stream_seq = h.stream_seq;
	return 0;
}
