// SPDX-License-Identifier: Apache-2.0
#include "report.h"
#include "ident.h"
#include "names.h"
#include "tsclock.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static json_t *num_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(round(v * 1000) / 1000);
}

static json_t *time_str(uint64_t ns)
{
	char buf[32];

	ts_rfc3339(ns, buf);
	return json_string(buf);
}

static json_t *slow_rank_json(struct ts_job *j, const struct ts_slow_rank *s)
{
	struct ts_rank_meta *m = ts_job_rank(j, s->rank);
	json_t *o;

	o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:o, s:o}", "rank",
			 s->rank, "pod", m ? m->pod : "", "node", m ? m->node : "", "device",
			 m ? m->device : "", "cause", s->cause, "metric", s->metric, "method",
			 s->method, "degradation", num_or_null(s->degradation), "since",
			 time_str(s->since_ns), "evidence", s->evidence, "valueMs",
			 num_or_null(s->value_ms), "medianMs", num_or_null(s->median_ms));
	if (o) {
		json_object_set_new(o, "onsetStep", json_integer((json_int_t)s->onset_step));
		json_object_set_new(o, "confirmedStep", json_integer((json_int_t)s->confirmed_step));
	}
	return o;
}

static json_t *hang_json(const struct ts_job_result *r)
{
	json_t *h = json_pack("{s:i, s:s}", "rank", r->hang_rank, "stacks", r->hang_stacks);
	json_t *cul = json_array();
	char comm[20];

	for (int i = 0; i < r->nculprits; i++)
		json_array_append_new(cul, json_integer(r->culprits[i]));
	json_object_set_new(h, "culprits", cul);
	if (r->hang_stacks_rank >= 0)
		json_object_set_new(h, "stacksRank", json_integer(r->hang_stacks_rank));
	if (r->hang_op[0]) {
		snprintf(comm, sizeof(comm), "%016llx", (unsigned long long)r->hang_comm);
		json_object_set_new(h, "op", json_string(r->hang_op));
		json_object_set_new(h, "communicator", json_string(comm));
		json_object_set_new(h, "seq", json_integer((json_int_t)r->hang_seq));
		json_object_set_new(h, "waiting", json_integer(r->hang_waiting));
		json_object_set_new(h, "members", json_integer(r->hang_members));
	}
	return h;
}

enum { C_SLOW, C_FAILSLOW, C_HANG, C_DATA, C_STORED, C_RANKS, C_STEPS };
static const char *const cond_types[TS_JOB_CONDITIONS] = { "SlowRanks", "FailSlow", "Hang",
							   "DataComplete", "Stored",
							   "RanksKnown", "StepsFound" };

static json_t *condition(struct ts_job *j, int c, bool status, const char *reason,
			 const char *msg, uint64_t now)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:o}", "type", cond_types[c], "status",
			 status ? "True" : "False", "reason", reason, "message", msg,
			 "lastTransitionTime", time_str(ts_job_condition_since(j, c, status, now)));
}

/* Whether the verdict stands on all the data: the evaluated steps had every rank, none
 * came late, the rings and the transport lost nothing. */
static json_t *completeness(struct ts_job *j, const struct ts_job_result *r, uint64_t now)
{
	bool whole = !r->rank_steps_missing && !r->rank_steps_late && !r->ring_dropped &&
		     !r->batches_lost;
	char msg[256];

	snprintf(msg, sizeof(msg), "%llu of %llu rank-steps of the analysed steps received, %llu "
		 "late; %llu records dropped in rings, %llu batches lost in transit%s",
		 (unsigned long long)(r->rank_steps_expected - r->rank_steps_missing),
		 (unsigned long long)r->rank_steps_expected, (unsigned long long)r->rank_steps_late,
		 (unsigned long long)r->ring_dropped, (unsigned long long)r->batches_lost,
		 whole ? "" : ": the verdict stands on incomplete data");
	return condition(j, C_DATA, whole, whole ? "Complete" : "Incomplete", msg, now);
}

static json_t *lost_ranks(struct ts_job *j)
{
	json_t *a = json_array();
	const struct ts_rank_meta *m;

	for (int k = 0; (m = ts_job_rank(j, k)); k++)
		if (m->lost)
			json_array_append_new(a, json_pack("{s:i, s:s, s:I}", "rank", k, "pod", m->pod,
							   "lastStep", (json_int_t)m->last_step));
	return a;
}

/* What a process without a rank lacks, with the cure: the launchers' variables
 * (ts_rank_sources) or a process group or communicator of the whole job. */
static void unranked_cure(char *msg, size_t n, int count, uint64_t steps)
{
	char vars[256];

	snprintf(msg, n, "%d process%s made %llu steps with no rank: no launcher variable (%s) "
		 "and no torch.distributed process group or NCCL/HCCL communicator of the whole "
		 "job gave one; their steps wait in the relay. Set RANK and WORLD_SIZE in each "
		 "process's environment (or TRAINSCOPE_RANK and TRAINSCOPE_WORLD_SIZE), or call "
		 "torch.distributed.init_process_group", count, count > 1 ? "es" : "",
		 (unsigned long long)steps, ts_rank_source_names(vars, sizeof(vars)));
}

static json_t *ranks_known(struct ts_job *j, json_t *st, uint64_t now)
{
	int n, over, count = 0;
	const struct ts_unranked *u = ts_job_unranked_list(j, &n, &over);
	json_t *list = json_array();
	uint64_t steps = 0;
	char msg[1024];

	for (int i = 0; i < n; i++) {
		if (u[i].rank >= 0)
			continue;
		count++;
		steps += u[i].count;
		json_array_append_new(list, json_pack("{s:s, s:i, s:I}", "pod", u[i].pod, "pid",
						      u[i].pid, "steps", (json_int_t)u[i].count));
	}
	if (!count) {
		json_decref(list);
		return condition(j, C_RANKS, true, "Ranked",
				 "every process that made steps has a rank", now);
	}
	json_object_set_new(st, "unranked", list);
	unranked_cure(msg, sizeof(msg), count + over, steps);
	return condition(j, C_RANKS, false, "NoRank", msg, now);
}

/* Ranks that ran collectives or GEMMs and made no step: the shim found no optimizer
 * step in their loop (a framework it does not know, or a loop without torch.optim). */
static json_t *steps_found(struct ts_job *j, json_t *st, uint64_t now)
{
	int n, over;
	const struct ts_unranked *u = ts_job_unranked_list(j, &n, &over);
	json_t *list = json_array();
	char msg[1024];
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		if (u[i].rank < 0)
			continue;
		json_array_append_new(list, json_pack("{s:i, s:s, s:i, s:I}", "rank", u[i].rank,
						      "pod", u[i].pod, "pid", u[i].pid, "operations",
						      (json_int_t)u[i].count));
		if (len < sizeof(msg))
			len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s%d", len ? ", " : "rank"
						"s ", u[i].rank);
	}
	if (!json_array_size(list)) {
		json_decref(list);
		return condition(j, C_STEPS, true, "StepsFound",
				 "every rank that ran collectives or GEMMs made steps", now);
	}
	json_object_set_new(st, "stepless", list);
	if (len < sizeof(msg))
		snprintf(msg + len, sizeof(msg) - len, " ran collectives or GEMMs and made no step: "
			 "no torch.optim optimizer step was seen (a framework the shim does not "
			 "know, or a loop without one). Set TRAINSCOPE_STEP_FUNC="
			 "module@object@function (each call of that function is one step), or call "
			 "trainscope.step() at the end of each iteration");
	return condition(j, C_STEPS, false, "NoSteps", msg, now);
}

static const char *const event_kinds[] = { "SlowRank", "FailSlow", "Hang" };

static json_t *event_json(const struct ts_event *ev)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:o, s:s}", "type", event_kinds[ev->kind % 3],
			      "onsetStep", (json_int_t)ev->onset_step, "raisedStep",
			      (json_int_t)ev->raised_step, "message", ev->text, "raised",
			      time_str(ev->raised_ns), "metric",
			      (ev->kind == TS_EV_SLOW_RANK && ev->metric < TS_M_COUNT) ||
			      (ev->kind == TS_EV_FAILSLOW && ev->metric == TS_M_COLLECTIVE) ?
				      ts_metric_names[ev->metric] : "");
	if (!o)
		return NULL;
	if (ev->rank >= 0)
		json_object_set_new(o, "rank", json_integer(ev->rank));
	if (ev->kind != TS_EV_HANG)
		json_object_set_new(o, "excess", num_or_null(ev->excess));
	if (!ev->open) {
		json_object_set_new(o, "clearedStep", json_integer((json_int_t)ev->cleared_step));
		json_object_set_new(o, "cleared", time_str(ev->cleared_ns));
	}
	return o;
}

/* What the job went through, not only where it stands: alarms raised and cleared,
 * fail-slow spells and hangs since the start. */
static json_t *history_json(const struct ts_job_result *r)
{
	json_t *ranks = json_array(), *events = json_array();

	for (int k = 0; k < r->world; k++)
		if (r->ever_alarmed[k])
			json_array_append_new(ranks, json_integer(k));
	for (int i = 0; i < r->nhistory; i++)
		json_array_append_new(events, event_json(&r->history[i]));
	return json_pack("{s:I, s:o, s:o, s:I}", "alarmsRaised", (json_int_t)r->alarms_raised,
			 "ranksEverAlarmed", ranks, "events", events, "eventsDropped",
			 (json_int_t)r->history_dropped);
}

static json_t *network_json(const struct ts_net_verdict *v)
{
	char comm[17];
	json_t *nodes = json_array();

	for (int i = 0; i < 2; i++)
		if (v->nodes[i][0])
			json_array_append_new(nodes, json_string(v->nodes[i]));
	snprintf(comm, sizeof(comm), "%016llx", (unsigned long long)v->worst_comm);
	return json_pack("{s:s, s:o, s:i, s:i, s:s, s:o, s:o, s:o, s:I, s:I, s:s}", "scope",
			 ts_net_scope_names[v->scope], "nodes", nodes, "communicators", v->comms,
			 "slowCommunicators", v->slow_comms, "worstCommunicator", comm,
			 "transferMs", num_or_null(v->value_ms), "baselineMs", num_or_null(v->ref_ms),
			 "excess", num_or_null(v->excess), "onsetStep", (json_int_t)v->onset_step,
			 "confirmedStep", (json_int_t)v->confirmed_step, "evidence", v->evidence);
}

/* A share of the step time, rounded to 3 decimals like every ratio of the report. */
static double share3(double v)
{
	return round(v * 1000) / 1000;
}

/* The costliest ranks of the lost time, with their pods and nodes. */
static json_t *lost_ranks_json(struct ts_job *j, const struct ts_lost_time *l)
{
	json_t *a = json_array();

	for (int i = 0; i < l->nranks && i < TS_LOST_RANKS; i++) {
		const struct ts_lost_rank *k = &l->rank[i];
		struct ts_rank_meta *m = ts_job_rank(j, k->rank);
		if (share3(k->share) > 0)
			json_array_append_new(a, json_pack("{s:i, s:o, s:s, s:s, s:s}", "rank", k->rank,
							   "share", num_or_null(k->share), "cause",
							   ts_cause_names[k->cause % TS_CAUSE_COUNT],
							   "pod", m ? m->pod : "", "node",
							   m ? m->node : ""));
	}
	return a;
}

/* Where the last analysis window's step time went (status.lostTime): the shares lost to
 * slow ranks, stages and data imbalance, the ranks' share by cause (those that cost
 * any), the share in transfers, and the costliest ranks. */
static json_t *lost_time_json(struct ts_job *j, const struct ts_lost_time *l)
{
	json_t *by = json_object();

	for (int c = 0; c < TS_CAUSE_COUNT; c++)
		if (share3(l->cause[c]) > 0)
			json_object_set_new(by, ts_cause_names[c], num_or_null(l->cause[c]));
	return json_pack("{s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "share",
			 num_or_null(l->share), "stepMs", num_or_null(l->step_ms), "fromStep",
			 (json_int_t)l->from_step, "toStep", (json_int_t)l->to_step, "ranks",
			 num_or_null(l->ranks), "stages", num_or_null(l->stages), "data",
			 num_or_null(l->data), "communication", num_or_null(l->comm), "byCause", by,
			 "topRanks", lost_ranks_json(j, l));
}

/* GPU time lost since the job began (status.gpuTimeLost), in GPU-hours: in all, the
 * slow ranks' part by cause (causes that cost nothing left out), the stages', the data
 * what-if's, and the ranks that cost the most with their pods and nodes. */
static json_t *gpu_lost_json(struct ts_job *j, const struct ts_gpu_lost *g)
{
	json_t *by = json_object(), *top = json_array();
	int world = ts_job_result(j)->world, best[TS_LOST_RANKS], n = 0;

	for (int c = 0; c < TS_CAUSE_COUNT; c++)
		if (g->cause_s[c] > 0)
			json_object_set_new(by, ts_cause_names[c], json_real(g->cause_s[c] / 3600));
	for (int k = 0; k < world; k++) { /* the costliest ranks, most first */
		struct ts_rank_meta *m = ts_job_rank(j, k);
		if (!m || !(m->gpu_lost_s > 0))
			continue;
		int at = n < TS_LOST_RANKS ? n++ : TS_LOST_RANKS;
		while (at > 0 && ts_job_rank(j, best[at - 1])->gpu_lost_s < m->gpu_lost_s) {
			if (at < TS_LOST_RANKS)
				best[at] = best[at - 1];
			at--;
		}
		if (at < TS_LOST_RANKS)
			best[at] = k;
	}
	for (int i = 0; i < n; i++) {
		struct ts_rank_meta *m = ts_job_rank(j, best[i]);
		json_array_append_new(top, json_pack("{s:i, s:f, s:s, s:s}", "rank", best[i],
						     "gpuHours", m->gpu_lost_s / 3600, "pod", m->pod,
						     "node", m->node));
	}
	return json_pack("{s:f, s:o, s:f, s:f, s:I, s:o}", "gpuHours", g->total_s / 3600,
			 "byCause", by, "stages", g->stages_s / 3600, "data", g->data_s / 3600,
			 "throughStep", (json_int_t)g->through_step, "topRanks", top);
}

/* What kubectl's DEGRADATION column shows: the first slow rank's excess over its peers,
 * else the job's step-time change, in percent. */
static json_t *percent(const struct ts_job_result *r)
{
	double d = r->nslow ? r->slow[0].degradation : r->degradation;
	char buf[32] = "";

	if (!isnan(d))
		snprintf(buf, sizeof(buf), "%+.1f%%", 100 * d);
	return json_string(buf);
}

/* A pod of the job (its lowest rank's), from which the analyzer finds the job's
 * controller to own the report (k8s.c). */
static const char *some_pod(struct ts_job *j, int world)
{
	for (int k = 0; k < world; k++) {
		struct ts_rank_meta *m = ts_job_rank(j, k);
		if (m && m->pod[0])
			return m->pod;
	}
	return NULL;
}

static json_t *status_json(struct ts_job *j, const struct ts_job_result *r, uint64_t now,
			   const char *trouble)
{
	json_t *slow = json_array(), *conds = json_array();
	uint8_t tid[16];
	char trace[33] = "";
	for (int i = 0; ts_job_report_trace(j, tid) && i < 16; i++)
		snprintf(trace + 2 * i, 3, "%02x", tid[i]);
	bool failslow = r->state == TS_STATE_FAILSLOW, hang = r->state == TS_STATE_HANG;

	for (int i = 0; i < r->nslow; i++)
		json_array_append_new(slow, slow_rank_json(j, &r->slow[i]));
	json_array_append_new(conds, condition(j, C_SLOW, r->nslow > 0,
					       r->nslow ? "SlowRanksFound" : "NoSlowRank",
					       r->nslow ? r->summary : "no rank stands out", now));
	json_array_append_new(conds, condition(j, C_FAILSLOW, failslow,
					       failslow ? "Degraded" : "Normal",
					       failslow && r->reason[0] ? r->reason
									: "step time at baseline",
					       now));
	json_array_append_new(conds, condition(j, C_HANG, hang, hang ? "NoProgress" : "Progressing",
					       hang ? r->reason : "steps complete", now));
	json_array_append_new(conds, completeness(j, r, now));
	json_array_append_new(conds, condition(j, C_STORED, !trouble,
					       trouble ? "StoreFailing" : "Stored",
					       trouble ? trouble : "report files and the analyzer's "
					       "state are stored", now));
	json_t *st = json_pack("{s:s, s:i, s:{s:o, s:o, s:o}, s:o, s:s, s:o, s:s, s:i, s:o, s:I, s:I}",
			 "state", ts_state_names[r->state], "worldSize", r->world, "stepTime",
			 "baselineMs", num_or_null(r->baseline_ms), "currentMs",
			 num_or_null(r->current_ms), "degradation", num_or_null(r->degradation),
			 "slowRanks", slow, "summary", r->summary, "conditions", conds, "traceID", trace,
			 "observedGeneration", 0, "lastUpdateTime", time_str(now), "lastStep",
			 (json_int_t)r->last_step, "stepsAnalyzed", (json_int_t)r->steps_evaluated);
	if (st)
		json_object_set_new(st, "data", json_pack("{s:I, s:I, s:I, s:I, s:I}",
			"rankStepsExpected", (json_int_t)r->rank_steps_expected,
			"rankStepsMissing", (json_int_t)r->rank_steps_missing,
			"rankStepsLate", (json_int_t)r->rank_steps_late,
			"droppedInRings", (json_int_t)r->ring_dropped,
			"batchesLost", (json_int_t)r->batches_lost));
	if (st) {
		json_array_append_new(conds, ranks_known(j, st, now));
		json_array_append_new(conds, steps_found(j, st, now));
	}
	if (st && r->nlost)
		json_object_set_new(st, "lostRanks", lost_ranks(j));
	if (st && hang && r->hang_rank >= 0)
		json_object_set_new(st, "hang", hang_json(r));
	if (st && r->net.scope != TS_NET_NONE)
		json_object_set_new(st, "network", network_json(&r->net));
	else if (st && r->net.held_why[0])
		json_object_set_new(st, "networkHeld", json_string(r->net.held_why));
	if (st && r->lost.valid)
		json_object_set_new(st, "lostTime", lost_time_json(j, &r->lost));
	if (st && r->gpu_lost.counted)
		json_object_set_new(st, "gpuTimeLost", gpu_lost_json(j, &r->gpu_lost));
	if (st) {
		json_object_set_new(st, "history", history_json(r));
		json_object_set_new(st, "degradation", percent(r));
	}
	return st;
}

/* sysTrace's slow-node result: resultCode 200 normal / 201 abnormal. */
static void add_systrace(json_t *root, struct ts_job *j, const struct ts_job_result *r,
			 uint64_t now)
{
	json_t *abn = json_array(), *norm = json_array();
	bool compute = false, network = false, storage = false;
	char id[16], dev[32];

	for (int k = 0; k < r->world; k++) {
		const struct ts_slow_rank *s = NULL;
		struct ts_rank_meta *m = ts_job_rank(j, k);
		for (int i = 0; i < r->nslow; i++)
			if (r->slow[i].rank == k)
				s = &r->slow[i];
		snprintf(id, sizeof(id), "%d", k);
		snprintf(dev, sizeof(dev), "rank_%d", k);
		json_t *d = json_pack("{s:s, s:s, s:s, s:s, s:s, s:[], s:[], s:[]}", "objectId", id,
				      "serverIp", m ? m->node : "", "deviceInfo", dev, "kpiId",
				      s ? s->metric : "step", "methodType", s ? s->method : "SPACE",
				      "kpiData", "relaIds", "omittedDevices");
		if (s) {
			json_t *rel = json_object_get(d, "relaIds");
			for (int o = 0; o < r->world; o++)
				if (o != k)
					json_array_append_new(rel, json_integer(o));
			compute |= strcmp(s->cause, "Compute") == 0 || strcmp(s->cause, "HostCPU") == 0;
			network |= strcmp(s->cause, "Communication") == 0;
			storage |= strcmp(s->cause, "Storage") == 0;
		}
		json_array_append_new(s ? abn : norm, d);
	}
	network |= r->net.scope != TS_NET_NONE;
	json_object_set_new(root, "resultCode", json_integer(r->nslow || network ? 201 : 200));
	json_object_set_new(root, "compute", json_boolean(compute));
	json_object_set_new(root, "network", json_boolean(network));
	json_object_set_new(root, "storage", json_boolean(storage));
	json_object_set_new(root, "abnormalDetail", abn);
	json_object_set_new(root, "normalDetail", norm);
	json_object_set_new(root, "errorMsg", json_string(""));
	json_object_set_new(root, "timestamp", json_integer((json_int_t)(now / 1000000000ull)));
}

json_t *ts_report_json(struct ts_job *j, const char *trouble)
{
	const struct ts_job_result *r = ts_job_result(j);
	uint64_t now = r->updated_ns ? r->updated_ns : ts_real_ns();
	json_t *root = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion",
				 "trainscope.dev/v1alpha1", "kind", "SlowNodeReport", "metadata",
				 "name", ts_job_name(j), "namespace", ts_job_ns(j));

	const char *pod = some_pod(j, r->world);
	if (pod)
		json_object_set_new(json_object_get(root, "metadata"), "annotations",
				    json_pack("{s:s}", TS_REPORT_POD_ANNOTATION, pod));
	json_object_set_new(root, "status", status_json(j, r, now, trouble));
	add_systrace(root, j, r, now);
	json_object_set(root, "history", json_object_get(json_object_get(root, "status"), "history"));
	return root;
}

json_t *ts_report_refused_json(const char *ns, const char *job, int world, const char *why,
			       uint64_t at_ns)
{
	char summary[512];

	snprintf(summary, sizeof(summary), "not analysed: the analyzer refused this job of %d "
		 "ranks: %s (raise the limit in the analyzer's configuration; docs/kubernetes.md, "
		 "\"Large jobs\")", world, why);
	json_t *cond = json_pack("{s:s, s:s, s:s, s:s, s:o}", "type", "DataComplete", "status",
				 "False", "reason", "Refused", "message", summary,
				 "lastTransitionTime", time_str(at_ns));
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:[], s:s, s:[o], s:o, s:I}}",
			 "apiVersion", "trainscope.dev/v1alpha1", "kind", "SlowNodeReport",
			 "metadata", "name", job, "namespace", ns, "status", "state", "Unknown",
			 "worldSize", world, "slowRanks", "summary", summary, "conditions", cond,
			 "lastUpdateTime", time_str(at_ns), "stepsAnalyzed", (json_int_t)0);
}

int ts_report_write(json_t *root, const char *dir, const char *ns, const char *job)
{
	char path[4096], tmp[4200] = "";
	int err = 0;

	errno = 0;
	if (ts_name_report_path(path, sizeof(path), dir, ns, job))
		err = -ENAMETOOLONG;
	else if (!root)
		err = -EINVAL; /* a name jansson cannot encode */
	else if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) < 0 || json_dump_file(root, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) < 0 ||
		 rename(tmp, path) < 0)
		err = errno ? -errno : -EIO;
	if (err && tmp[0])
		unlink(tmp); /* no half-written file left on a full disk */
	return err;
}

/* The lostTime line: the shares in percent, the ranks that cost at least 1 % named. */
static void print_lost_time(FILE *f, json_t *lt)
{
	json_t *k;
	size_t i, n = 0;

	fprintf(f, "  lost time (steps %lld-%lld, mean step %.1f ms): %.0f%%: ranks %.0f%%",
		(long long)json_integer_value(json_object_get(lt, "fromStep")),
		(long long)json_integer_value(json_object_get(lt, "toStep")),
		json_number_value(json_object_get(lt, "stepMs")),
		100 * json_number_value(json_object_get(lt, "share")),
		100 * json_number_value(json_object_get(lt, "ranks")));
	json_array_foreach(json_object_get(lt, "topRanks"), i, k) {
		const char *cause = json_string_value(json_object_get(k, "cause"));
		if (json_number_value(json_object_get(k, "share")) >= 0.005)
			fprintf(f, "%srank %lld %s %.0f%%", n++ ? ", " : " (",
				(long long)json_integer_value(json_object_get(k, "rank")),
				cause ? cause : "-", 100 * json_number_value(json_object_get(k, "share")));
	}
	fprintf(f, "%s, stages %.0f%%, variation among ranks %.0f%% (data, sequence lengths, "
		"noise); transfers take %.0f%% of "
		"the step\n", n ? ")" : "", 100 * json_number_value(json_object_get(lt, "stages")),
		100 * json_number_value(json_object_get(lt, "data")),
		100 * json_number_value(json_object_get(lt, "communication")));
}

/* The gpuTimeLost line: GPU-hours lost so far, by cause, and the ranks that cost most. */
static void print_gpu_lost(FILE *f, json_t *g)
{
	json_t *by = json_object_get(g, "byCause"), *v, *k;
	const char *cause;
	size_t i, n = 0;

	fprintf(f, "  GPU time lost since the job began (through step %lld): %.3f GPU-hours",
		(long long)json_integer_value(json_object_get(g, "throughStep")),
		json_number_value(json_object_get(g, "gpuHours")));
	json_object_foreach(by, cause, v)
		fprintf(f, "%s%s %.3f", n++ ? ", " : " (", cause, json_number_value(v));
	fprintf(f, "%sstages %.3f, variation %.3f)", n ? ", " : " (",
		json_number_value(json_object_get(g, "stages")),
		json_number_value(json_object_get(g, "data")));
	n = 0;
	json_array_foreach(json_object_get(g, "topRanks"), i, k) {
		const char *node = json_string_value(json_object_get(k, "node"));
		fprintf(f, "%srank %lld on %s %.3f", n++ ? ", " : "; most to ",
			(long long)json_integer_value(json_object_get(k, "rank")),
			node && node[0] ? node : "-", json_number_value(json_object_get(k, "gpuHours")));
	}
	fprintf(f, "\n");
}

void ts_report_print(json_t *root, void *file)
{
	FILE *f = file;
	json_t *st = json_object_get(root, "status"), *md = json_object_get(root, "metadata");
	json_t *slow = json_object_get(st, "slowRanks"), *s;
	json_t *stime = json_object_get(st, "stepTime");
	size_t i;

	fprintf(f, "SlowNodeReport %s/%s: %s  (world %d, step %lld, %lld steps analysed)\n",
		json_string_value(json_object_get(md, "namespace")),
		json_string_value(json_object_get(md, "name")),
		json_string_value(json_object_get(st, "state")),
		(int)json_integer_value(json_object_get(st, "worldSize")),
		(long long)json_integer_value(json_object_get(st, "lastStep")),
		(long long)json_integer_value(json_object_get(st, "stepsAnalyzed")));
	if (json_is_number(json_object_get(stime, "baselineMs")))
		fprintf(f, "  step time: baseline %.1f ms, current %.1f ms (%+.1f%%)\n",
			json_number_value(json_object_get(stime, "baselineMs")),
			json_number_value(json_object_get(stime, "currentMs")),
			100 * json_number_value(json_object_get(stime, "degradation")));
	if (json_object_get(st, "lostTime"))
		print_lost_time(f, json_object_get(st, "lostTime"));
	if (json_object_get(st, "gpuTimeLost"))
		print_gpu_lost(f, json_object_get(st, "gpuTimeLost"));
	if (!json_array_size(slow))
		fprintf(f, "  no slow rank\n");
	json_array_foreach(slow, i, s)
		fprintf(f, "  slow rank %lld  cause %-13s node %s  pod %s  method %s\n    %s\n",
			(long long)json_integer_value(json_object_get(s, "rank")),
			json_string_value(json_object_get(s, "cause")),
			json_string_value(json_object_get(s, "node")),
			*json_string_value(json_object_get(s, "pod")) ?
				json_string_value(json_object_get(s, "pod")) : "-",
			json_string_value(json_object_get(s, "method")),
			json_string_value(json_object_get(s, "evidence")));
	json_t *net = json_object_get(st, "network");
	if (json_string_value(json_object_get(net, "evidence")))
		fprintf(f, "  communication (%s): %s\n",
			json_string_value(json_object_get(net, "scope")) ?
				json_string_value(json_object_get(net, "scope")) : "-",
			json_string_value(json_object_get(net, "evidence")));
	if (json_string_value(json_object_get(st, "networkHeld")))
		fprintf(f, "  communication: no verdict: %s\n",
			json_string_value(json_object_get(st, "networkHeld")));
	fprintf(f, "  summary: %s\n", json_string_value(json_object_get(st, "summary"))[0] ?
					      json_string_value(json_object_get(st, "summary")) : "-");
	json_array_foreach(json_object_get(st, "conditions"), i, s) {
		const char *type = json_string_value(json_object_get(s, "type"));
		const char *status = json_string_value(json_object_get(s, "status"));
		if (type && status && ((!strcmp(type, "Hang") && !strcmp(status, "True")) ||
				       (!strcmp(type, "DataComplete") && !strcmp(status, "False")) ||
				       (!strcmp(type, "RanksKnown") && !strcmp(status, "False")) ||
				       (!strcmp(type, "StepsFound") && !strcmp(status, "False"))))
			fprintf(f, "  %s: %s\n", !strcmp(type, "Hang") ? "hang" :
				!strcmp(type, "RanksKnown") ? "ranks" :
				!strcmp(type, "StepsFound") ? "steps" : "data",
				json_string_value(json_object_get(s, "message")));
	}
}
