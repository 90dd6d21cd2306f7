// SPDX-License-Identifier: Apache-2.0
/* The analyzer proper: the jobs it follows, within its limits (jobs, a world's size, the
 * memory their state holds, a namespace's share of both), their ticks, report files and
 * ends, and its counters and /metrics. What comes in: analyzer_ingest.c; its state in a
 * snapshot: analyzer_snap.c. */
#include "analyzer_impl.h"
#include "httpd.h"
#include "log.h"
#include "analysis/sinks/metrics.h"
#include "names.h"
#include "analysis/sinks/report.h"
#include "tsclock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each limit's name in /metrics, and its key under limits in the configuration. */
static const char *const limit_names[L_COUNT] = { "jobs", "world", "memory", "step_jump" };
static const char *const limit_keys[L_COUNT] = { "max_jobs", "max_world", "memory_mb",
						 "max_step_jump" };

static int publish_report(struct ts_analyzer *a, int i, uint64_t now_ns);
static const char *trouble(const struct ts_analyzer *a);

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
	free(a->report_due);
	free(a->prod);
	free(a);
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
int ts_analyzer_over_limit(struct ts_analyzer *a, enum limit l, const char *ns, const char *job,
			   const char *what)
{
	a->st.over_limit[l]++;
	snprintf(a->refuse_why, sizeof(a->refuse_why), "%s is past limits.%s", what, limit_keys[l]);
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
int ts_analyzer_budget_world(struct ts_analyzer *a, struct ts_job *j, int world, const char *ns,
			     const char *name)
{
	const struct ts_params *p = &a->opts.params;
	size_t have = j ? ts_job_bytes(p, ts_job_world(j)) : 0, want = ts_job_bytes(p, world);
	size_t budget = (size_t)limits(a)->memory_mb << 20;

	if (world > limits(a)->max_world)
		return ts_analyzer_over_limit(a, L_WORLD, ns, name, "a world this large");
	if (want > have && a->job_bytes - have + want > budget)
		return ts_analyzer_over_limit(a, L_MEMORY, ns, name,
					      "the state of a job this large");
	if (want > have && (double)(ns_bytes(a, ns) - have + want) >
				   limits(a)->namespace_share * (double)budget) {
		return refuse_in_ns(a, L_MEMORY, ns, name, "its namespace's jobs hold its share "
				    "of limits.memory_mb (limits.namespace_share)");
	}
	a->job_bytes = a->job_bytes - have + want;
	return 0;
}

/* Room for one more job in the table. */
int ts_analyzer_jobs_reserve(struct ts_analyzer *a)
{
	if (a->njobs < a->capjobs)
		return 0;
	int cap = a->capjobs ? 2 * a->capjobs : 8;
	struct ts_job **nj = realloc(a->jobs, (size_t)cap * sizeof(*nj));
	bool *nd = realloc(a->dirty, (size_t)cap * sizeof(*nd));
	uint64_t *nr = realloc(a->report_due, (size_t)cap * sizeof(*nr));
	if (nj)
		a->jobs = nj;
	if (nd)
		a->dirty = nd;
	if (nr)
		a->report_due = nr;
	if (!nj || !nd || !nr)
		return -ENOMEM;
	memset(nr + a->capjobs, 0, (size_t)(cap - a->capjobs) * sizeof(*nr));
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
	snprintf(a->refuse_why, sizeof(a->refuse_why), "%s", why);
	return -ERANGE;
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
 * its end told once. A report is built from every rank (O(world)): for a large job that
 * is most of a step's work, so a report whose verdict stays is refreshed at most as
 * often as keeps it under REPORT_SHARE of a core; a new verdict goes out at once. */
static void tick_job(struct ts_analyzer *a, int i, uint64_t now_ns)
{
	struct ts_job *j = a->jobs[i];
	const struct ts_job_result *r = ts_job_result(j);
	enum ts_state before = r->state;
	int nslow = r->nslow;
	char summary[512];

	snprintf(summary, sizeof(summary), "%s", r->summary);
	a->dirty[i] |= ts_job_tick(j, now_ns);
	ts_job_take_lag(j, &a->lag);
	bool news = r->state != before || r->nslow != nslow || ts_job_finished(j) ||
		    ts_job_exited(j);
	if (a->dirty[i] && (news || now_ns >= a->report_due[i]))
		a->dirty[i] = publish_report(a, i, now_ns) != 0;
	if (a->opts.on_finish && ts_job_finished_news(j))
		a->opts.on_finish(a->opts.on_report_ctx, j);
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
	ts_analyzer_drop_job(a, best);
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
int ts_analyzer_job_get(struct ts_analyzer *a, const char *ns, const char *name, int world,
			struct ts_job **out)
{
	struct ts_job *j = ts_analyzer_job(a, ns, name);

	if ((*out = j))
		return 0;
	if (world < 1)
		world = 1;
	int err = job_room(a, ns, name);
	if (!err && (err = ts_analyzer_jobs_reserve(a)))
		return err;
	if (!err)
		err = ts_analyzer_budget_world(a, NULL, world, ns, name);
	if (err) { /* its own report says so */
		ts_refusals_note(&a->refused, ns, name, world, a->refuse_why, a->now_ns);
		return err;
	}
	if (ts_job_new(&j, ns, name, world, &a->opts.params)) {
		a->job_bytes -= ts_job_bytes(&a->opts.params, world);
		return -ENOMEM;
	}
	a->dirty[a->njobs] = true;
	a->jobs[a->njobs++] = j;
	a->st.jobs++;
	ts_refusals_forget(&a->refused, ns, name);
	ts_info("analyzer: new job %s/%s (world %d)", ns, name, world);
	*out = j;
	return 0;
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

/* The share of a core a job's routine report refreshes may take (tick_job). */
#define REPORT_SHARE 10

/* Writes job ns/name's report file: 0, or the error (the caller tries again later). A
 * folder that fails (a full disk) is said once, and again when it works again. */
static int write_report(struct ts_analyzer *a, const char *ns, const char *name, json_t *rep)
{
	int err;

	if (!a->opts.report_dir)
		return 0;
	if ((err = ts_report_write(rep, a->opts.report_dir, ns, name))) {
		a->st.report_errors++;
		snprintf(a->disk_why, sizeof(a->disk_why), "report files cannot be written in %s: %s",
			 a->opts.report_dir, strerror(-err));
		if (!a->report_failures++)
			ts_error("analyzer: cannot write the report of %s/%s in %s: %s (retried every "
				 "tick; trainscope_analyzer_report_write_errors_total counts)",
				 ns, name, a->opts.report_dir, strerror(-err));
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

/* Job ns/name's report to its file, then to on_report: a job's and a refused job's alike.
 * 0, or the file's error. */
static int deliver_report(struct ts_analyzer *a, const char *ns, const char *name, json_t *rep,
			  uint64_t now_ns)
{
	int err = write_report(a, ns, name, rep);

	if (rep && a->opts.on_report)
		a->opts.on_report(a->opts.on_report_ctx, rep, now_ns);
	return err;
}

/* Job i's report, built once, to its file and to on_report; its next routine refresh
 * paced by what this one cost. 0, or the file's error (the caller tries again). */
static int publish_report(struct ts_analyzer *a, int i, uint64_t now_ns)
{
	struct ts_job *j = a->jobs[i];
	uint64_t t0 = ts_mono_ns();
	json_t *rep = ts_report_json(j, trouble(a));
	int err = deliver_report(a, ts_job_ns(j), ts_job_name(j), rep, now_ns);

	json_decref(rep);
	a->report_due[i] = now_ns + (ts_mono_ns() - t0) * REPORT_SHARE;
	return err;
}

/* Each job refused whole gets a report of its own that says why, once. */
static void tell_refusals(struct ts_analyzer *a, uint64_t now_ns)
{
	struct ts_refusal *r;

	while ((r = ts_refusals_untold(&a->refused))) {
		if (!r->at_ns) /* refused before the first tick: as of now */
			r->at_ns = now_ns;
		json_t *rep = ts_report_refused_json(r->ns, r->job, r->world, r->why, r->at_ns);
		int err = rep ? deliver_report(a, r->ns, r->job, rep, now_ns) : 0;

		json_decref(rep);
		if (err)
			return; /* the folder's trouble is said by the jobs' reports; next tick */
		ts_refusals_told(&a->refused, r);
	}
}

/* Frees job i after its last report file and on_forget. */
void ts_analyzer_drop_job(struct ts_analyzer *a, int i)
{
	struct ts_job *j = a->jobs[i];

	if (a->dirty[i])
		publish_report(a, i, a->now_ns);
	if (a->opts.on_forget)
		a->opts.on_forget(a->opts.on_report_ctx, j);
	a->job_bytes -= ts_job_bytes(&a->opts.params, ts_job_world(j));
	ts_job_free(j);
	a->jobs[i] = a->jobs[a->njobs - 1];
	a->dirty[i] = a->dirty[a->njobs - 1];
	a->report_due[i] = a->report_due[a->njobs - 1];
	a->report_due[a->njobs - 1] = 0; /* a job that takes the slot reports at once */
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
	ts_analyzer_drop_job(a, i);
	a->st.jobs_forgotten++;
	return true;
}

void ts_analyzer_tick(struct ts_analyzer *a, uint64_t now_ns)
{
	if (!a->now_ns) /* producers seen before the first tick: as of now */
		for (size_t i = 0; i < a->capprod; i++)
			a->prod[i].last_ns = a->prod[i].used ? now_ns : 0;
	a->now_ns = now_ns;
	ts_analyzer_prune_producers(a, now_ns);
	update_trouble(a);
	tell_refusals(a, now_ns);
	for (int i = 0; i < a->njobs; i++) {
		tick_job(a, i, now_ns);
		if (forget_quiet(a, i, now_ns))
			i--;
	}
}

void ts_analyzer_flush_reports(struct ts_analyzer *a)
{
	for (int i = 0; i < a->njobs; i++)
		a->dirty[i] = publish_report(a, i, a->now_ns) != 0;
}

void ts_analyzer_get_stats(struct ts_analyzer *a, struct ts_analyzer_stats *out)
{
	*out = a->st;
	out->producers = a->nprod;
	out->late_steps = 0;
	for (int i = 0; i < a->njobs; i++)
		out->late_steps += ts_job_late_steps(a->jobs[i]);
}

enum {
	IM_MESSAGES,
	IM_BATCHES,
	IM_BUNDLES,
	IM_REJECTED_MALFORMED,
	IM_REJECTED_OVERSIZED,
	IM_REJECTED_SUBJECT,
	IM_DUPLICATE_BATCHES,
	IM_PRODUCERS,
	IM_OTHER_PARTITION,
	IM_MISMATCHED_BATCHES,
	IM_LOST_BATCHES,
	IM_REORDERED_BATCHES,
	IM_RING_DROPPED_RECORDS,
	IM_STEPS,
	IM_BAD_STEPS,
	IM_LATE_STEPS,
	IM_REPORTS_WRITTEN,
	IM_REPORT_WRITE_ERRORS,
	IM_REPORT_DIR_FAILING,
	IM_JOBS_GIVEN_UP,
	IM_CONTROL_MESSAGES,
	IM_HOST_SAMPLES,
	IM_DEVICE_SAMPLES,
	IM_JOBS,
	IM_JOBS_STARTED,
	IM_JOBS_FORGOTTEN,
	IM_JOB_ATTEMPTS,
	IM_UNRANKED_NOTICES,
	IM_UNRANKED_PROCESSES,
	IM_JOB_STATE_BYTES,
	IM_VERDICT_LAG,
	IM_VERDICT_LAG_MAX,
	IM_REFUSED_OVER_LIMIT,
	IM_JOBS_REFUSED,
};

static const struct ts_metric_family ingest_metrics[] = {
	[IM_MESSAGES] = { "trainscope_analyzer_messages_total", TS_COUNTER, NULL,
		"NATS messages received." },
	[IM_BATCHES] = { "trainscope_analyzer_batches_total", TS_COUNTER, NULL,
		"Batches accepted." },
	[IM_BUNDLES] = { "trainscope_analyzer_bundles_total", TS_COUNTER, NULL,
		"Relays' Bundles received (pod subjects): each of their batches is "
		"counted as one that came alone." },
	[IM_REJECTED_MALFORMED] = { "trainscope_analyzer_rejected_malformed_total",
		TS_COUNTER, NULL,
		"Messages refused: not a valid batch (or a Bundle's batch that is "
		"none)." },
	[IM_REJECTED_OVERSIZED] = { "trainscope_analyzer_rejected_oversized_total",
		TS_COUNTER, NULL,
		"Messages refused: over the size limit." },
	[IM_REJECTED_SUBJECT] = { "trainscope_analyzer_rejected_subject_total", TS_COUNTER, NULL,
		"Messages refused: bad subject." },
	[IM_DUPLICATE_BATCHES] = { "trainscope_analyzer_duplicate_batches_total", TS_COUNTER, NULL,
		"Batches seen twice and dropped." },
	[IM_PRODUCERS] = { "trainscope_analyzer_producers", TS_GAUGE, NULL,
		"Producers followed (sequence checks); silent ones are forgotten after "
		"limits.job_ttl_s." },
	[IM_OTHER_PARTITION] = { "trainscope_analyzer_other_partition_total", TS_COUNTER, NULL,
		"Messages mapped to this analyzer's partition under another partition "
		"count (the count changed), analysed all the same." },
	[IM_MISMATCHED_BATCHES] = { "trainscope_analyzer_mismatched_batches_total",
		TS_COUNTER, NULL,
		"Batches refused: the job, rank or node they claim publishes on another "
		"subject." },
	[IM_LOST_BATCHES] = { "trainscope_analyzer_lost_batches_total", TS_COUNTER, NULL,
		"Gaps in producers' sequence numbers (less those filled later)." },
	[IM_REORDERED_BATCHES] = { "trainscope_analyzer_reordered_batches_total", TS_COUNTER, NULL,
		"Batches stored after later ones of their producer (resends), taken." },
	[IM_RING_DROPPED_RECORDS] = { "trainscope_analyzer_ring_dropped_records_total",
		TS_COUNTER, NULL,
		"Records the ranks' rings dropped." },
	[IM_STEPS] = { "trainscope_analyzer_steps_total", TS_COUNTER, NULL,
		"Rank steps accepted." },
	[IM_BAD_STEPS] = { "trainscope_analyzer_bad_steps_total", TS_COUNTER, NULL,
		"Rank steps refused (bad times or rank)." },
	[IM_LATE_STEPS] = { "trainscope_analyzer_late_steps_total", TS_COUNTER, NULL,
		"Rank steps that came after their step was analysed." },
	[IM_REPORTS_WRITTEN] = { "trainscope_analyzer_reports_written_total", TS_COUNTER, NULL,
		"Report files written." },
	[IM_REPORT_WRITE_ERRORS] = { "trainscope_analyzer_report_write_errors_total",
		TS_COUNTER, NULL,
		"Report files that could not be written (retried)." },
	[IM_REPORT_DIR_FAILING] = { "trainscope_analyzer_report_dir_failing", TS_GAUGE, NULL,
		"1 while report files cannot be written (a full disk)." },
	[IM_JOBS_GIVEN_UP] = { "trainscope_analyzer_jobs_given_up_total", TS_COUNTER, NULL,
		"Finished jobs whose place in the job table went to a new one (their "
		"reports stay)." },
	[IM_CONTROL_MESSAGES] = { "trainscope_analyzer_control_messages_total", TS_COUNTER, NULL,
		"Rank announcements seen (for node agents)." },
	[IM_HOST_SAMPLES] = { "trainscope_analyzer_host_samples_total", TS_COUNTER, NULL,
		"Node agents' host samples joined." },
	[IM_DEVICE_SAMPLES] = { "trainscope_analyzer_device_samples_total", TS_COUNTER, NULL,
		"Node agents' GPU samples joined." },
	[IM_JOBS] = { "trainscope_analyzer_jobs", TS_GAUGE, NULL,
		"Jobs followed now." },
	[IM_JOBS_STARTED] = { "trainscope_analyzer_jobs_started_total", TS_COUNTER, NULL,
		"Jobs followed since the start." },
	[IM_JOBS_FORGOTTEN] = { "trainscope_analyzer_jobs_forgotten_total", TS_COUNTER, NULL,
		"Jobs forgotten after limits.job_ttl_s quiet." },
	[IM_JOB_ATTEMPTS] = { "trainscope_analyzer_job_attempts_total", TS_COUNTER, NULL,
		"New runs of a job name whose ranks had ended: started afresh." },
	[IM_UNRANKED_NOTICES] = { "trainscope_analyzer_unranked_notices_total", TS_COUNTER, NULL,
		"Relays' notices that a process makes steps with no rank (held by its "
		"relay), or that a rank runs collectives and GEMMs with no step: the "
		"job's report says what to set." },
	[IM_UNRANKED_PROCESSES] = { "trainscope_analyzer_unranked_processes_total",
		TS_COUNTER, NULL,
		"Processes that made steps with no rank, or ranks that made no step "
		"(once each)." },
	[IM_VERDICT_LAG] = { "trainscope_analyzer_verdict_lag_seconds", TS_HISTOGRAM, NULL,
		"From a step's end (its last rank's) to its analysis: the analyzer's lag "
		"behind the jobs." },
	[IM_VERDICT_LAG_MAX] = { "trainscope_analyzer_verdict_lag_max_seconds", TS_GAUGE, NULL,
		"The largest lag since the start." },
	[IM_REFUSED_OVER_LIMIT] = { "trainscope_analyzer_refused_over_limit_total", TS_COUNTER,
		"limit", "Data refused past a limit (limits.*)." },
	[IM_JOBS_REFUSED] = { "trainscope_analyzer_jobs_refused_total", TS_COUNTER,
		"k8s_namespace", "Jobs refused (or kept from growing), by namespace: its share "
		"of limits.max_jobs or of limits.memory_mb, or the table full of running jobs; "
		"past 16 namespaces as (other)." },
	[IM_JOB_STATE_BYTES] = { "trainscope_analyzer_job_state_bytes", TS_GAUGE, NULL,
		"Memory held by the jobs' state (limits.memory_mb bounds it)." },
};

const struct ts_metric_table ts_analyzer_metrics = TS_METRIC_TABLE(ingest_metrics);

#define PUT(b, id, v) ts_metric_u64((b), &ingest_metrics[(id)], (uint64_t)(v))

static void render_lag(const struct ts_lag *l, struct ts_buf *b)
{
	ts_metric_head(b, &ingest_metrics[IM_VERDICT_LAG]);
	ts_metric_hist(b, &ingest_metrics[IM_VERDICT_LAG], "", ts_lag_bucket_s, TS_LAG_BUCKETS,
		       l->le, l->count, l->sum_s);
	ts_metric_double(b, &ingest_metrics[IM_VERDICT_LAG_MAX], l->max_s);
}

void ts_analyzer_render_metrics(struct ts_analyzer *a, struct ts_buf *b)
{
	const struct ts_metric_family *f;
	struct ts_analyzer_stats s;

	ts_analyzer_get_stats(a, &s);
	PUT(b, IM_MESSAGES, s.msgs);
	PUT(b, IM_BATCHES, s.batches);
	PUT(b, IM_BUNDLES, s.bundles);
	PUT(b, IM_REJECTED_MALFORMED, s.bad_msgs);
	PUT(b, IM_REJECTED_OVERSIZED, s.oversized);
	PUT(b, IM_REJECTED_SUBJECT, s.bad_subject);
	PUT(b, IM_DUPLICATE_BATCHES, s.duplicates);
	PUT(b, IM_PRODUCERS, s.producers);
	PUT(b, IM_OTHER_PARTITION, s.other_partition);
	PUT(b, IM_MISMATCHED_BATCHES, s.mismatched);
	PUT(b, IM_LOST_BATCHES, s.lost_batches);
	PUT(b, IM_REORDERED_BATCHES, s.reordered);
	PUT(b, IM_RING_DROPPED_RECORDS, s.ring_dropped);
	PUT(b, IM_STEPS, s.steps);
	PUT(b, IM_BAD_STEPS, s.bad_steps);
	PUT(b, IM_LATE_STEPS, s.late_steps);
	PUT(b, IM_REPORTS_WRITTEN, s.reports_written);
	PUT(b, IM_REPORT_WRITE_ERRORS, s.report_errors);
	PUT(b, IM_REPORT_DIR_FAILING, a->report_failures > 0);
	PUT(b, IM_JOBS_GIVEN_UP, s.jobs_given_up);
	PUT(b, IM_CONTROL_MESSAGES, s.control);
	PUT(b, IM_HOST_SAMPLES, s.host_samples);
	PUT(b, IM_DEVICE_SAMPLES, s.device_samples);
	PUT(b, IM_JOBS, a->njobs);
	PUT(b, IM_JOBS_STARTED, s.jobs);
	PUT(b, IM_JOBS_FORGOTTEN, s.jobs_forgotten);
	PUT(b, IM_JOB_ATTEMPTS, s.attempts);
	PUT(b, IM_UNRANKED_NOTICES, s.unranked_notices);
	PUT(b, IM_UNRANKED_PROCESSES, s.unranked_processes);
	PUT(b, IM_JOB_STATE_BYTES, a->job_bytes);
	render_lag(&a->lag, b);
	f = &ingest_metrics[IM_REFUSED_OVER_LIMIT];
	ts_metric_head(b, f);
	for (int l = 0; l < L_COUNT; l++)
		ts_metric_sample(b, f, "{limit=\"%s\"} %" PRIu64 "\n", limit_names[l],
				 s.over_limit[l]);
	ts_metric_head(b, f = &ingest_metrics[IM_JOBS_REFUSED]);
	for (int i = 0; i <= TS_NS_REFUSALS; i++)
		if (a->ns_refused[i].count)
			ts_metric_sample(b, f, "{k8s_namespace=\"%s\"} %" PRIu64 "\n",
					 i < TS_NS_REFUSALS ? a->ns_refused[i].ns : "(other)",
					 a->ns_refused[i].count);
	ts_jobs_render_metrics(a->jobs, a->njobs, a->opts.params.metrics_top_ranks, b);
}
