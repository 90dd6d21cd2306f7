// SPDX-License-Identifier: Apache-2.0
/* Where the analyzer's reports go beside their files: the Kubernetes writer (with node
 * health) and the OTLP exporter, started from the options and fed by the report hooks. */
#include "main_impl.h"
#include "hash.h"
#include "log.h"
#include "tsclock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Whether key's span was sent; noted when not. The last 64 are kept, the oldest replaced
 * (it replaced slot 0 alone once full, so 63 stayed for good and a slow rank that came
 * back was sent again and again). */
static bool exported_before(struct cli *c, const char *key)
{
	int cap = (int)(sizeof(c->exported) / sizeof(c->exported[0]));
	uint64_t h = ts_fnv1a(key, strlen(key));

	for (int i = 0; i < c->nexported; i++)
		if (c->exported[i] == h)
			return true;
	c->exported[c->exported_next] = h;
	c->exported_next = (c->exported_next + 1) % cap;
	if (c->nexported < cap)
		c->nexported++;
	return false;
}

/* Each named slow rank once in each window's trace: a span with the evidence, so that
 * the trace the report names (its latest window's) shows who was slow, also after the
 * window it was named in. */
static void otlp_slow_ranks(struct cli *c, json_t *report, uint64_t now_ns)
{
	json_t *md = json_object_get(report, "metadata"), *st = json_object_get(report, "status"), *s;
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *job = json_string_value(json_object_get(md, "name"));
	const char *hex = json_string_value(json_object_get(st, "traceID"));
	uint8_t tid[16] = { 0 };
	char key[320];
	size_t i;

	/* the report's own 32 hex digits: an all-zero trace id is no trace (OTLP) */
	if (!hex || strlen(hex) != 32 || strspn(hex, "0123456789abcdefABCDEF") != 32) {
		ts_warn("otlp: %s/%s: trace id '%s' is not 32 hex digits: its slow ranks not "
			"exported", ns ? ns : "?", job ? job : "?", hex ? hex : "");
		return;
	}
	for (int b = 0; b < 16; b++)
		sscanf(hex + 2 * b, "%2hhx", &tid[b]);
	json_array_foreach(json_object_get(st, "slowRanks"), i, s) {
		int rank = (int)json_integer_value(json_object_get(s, "rank"));
		const char *since = json_string_value(json_object_get(s, "since"));
		snprintf(key, sizeof(key), "%s/%s/%d/%s/%s", ns, job, rank, since ? since : "", hex);
		if (exported_before(c, key))
			continue;
		struct ts_otlp_who who = { ns, job, json_string_value(json_object_get(s, "pod")),
					   json_string_value(json_object_get(s, "node")), rank };
		ts_otlp_slow_rank(c->otlp, &who, tid, now_ns - 1000000000ull, now_ns,
				  json_string_value(json_object_get(s, "cause")),
				  json_string_value(json_object_get(s, "evidence")));
	}
}

/* The report's lost time, for the train.window span of the trace its window ends in. */
static void otlp_lost_time(struct cli *c, json_t *report)
{
	json_t *md = json_object_get(report, "metadata");
	json_t *lt = json_object_get(json_object_get(report, "status"), "lostTime");
	json_t *top = json_array_get(json_object_get(lt, "topRanks"), 0);
	struct ts_otlp_lost l = {
		(uint64_t)json_integer_value(json_object_get(lt, "toStep")),
		json_number_value(json_object_get(lt, "share")),
		json_number_value(json_object_get(lt, "ranks")),
		json_number_value(json_object_get(lt, "stages")),
		json_number_value(json_object_get(lt, "data")),
		top ? (int)json_integer_value(json_object_get(top, "rank")) : -1,
	};

	if (lt)
		ts_otlp_lost_time(c->otlp, json_string_value(json_object_get(md, "namespace")),
				  json_string_value(json_object_get(md, "name")), &l);
}

static void on_report(void *ctx, json_t *report, uint64_t now_ns)
{
	struct cli *c = ctx;

	if (c->k8s)
		ts_k8sw_publish(c->k8s, report, now_ns);
	if (c->nodes)
		ts_node_sync_report(c->nodes, report, ts_real_ns());
	if (c->otlp) {
		otlp_slow_ranks(c, report, now_ns);
		otlp_lost_time(c, report);
	}
}

static void on_forget(void *ctx, struct ts_job *j)
{
	struct cli *c = ctx;

	if (c->k8s)
		ts_k8sw_forget(c->k8s, ts_job_ns(j), ts_job_name(j), ts_real_ns());
	if (c->otlp)
		ts_otlp_job_end(c->otlp, ts_job_ns(j), ts_job_name(j));
}

static void on_finish(void *ctx, struct ts_job *j)
{
	struct cli *c = ctx;

	ts_otlp_job_end(c->otlp, ts_job_ns(j), ts_job_name(j));
}

static void on_step(void *ctx, struct ts_job *j, const Trainscope__V1__Identity *id,
		    const Trainscope__V1__Step *s)
{
	struct cli *c = ctx;
	const uint8_t *tid = ts_job_trace_id(j);
	struct ts_otlp_who who = { id->namespace_, id->job, id->pod, id->node, id->rank };
	struct ts_otlp_phase ph[] = {
		{ "dataloader", s->dataloader_ns }, { "launch", s->launch_ns },
		{ "compute", s->compute_wall_ns ? s->compute_wall_ns : s->compute_ns },
		{ "collective", s->collective_ns }, { "checkpoint", s->checkpoint_ns },
	};

	if (tid)
		ts_otlp_step(c->otlp, &who, tid, s->step, s->start_ns, s->end_ns, ph, 5);
}

int analyzer_open_otlp(struct cli *c)
{
	const struct ts_trace_opts *t = &c->ao.params.traces;
	struct ts_otlp_env env;
	char err[512] = "";
	int rc;

	if ((rc = ts_otlp_env_load(&env, c->otlp_endpoint, err, sizeof(err))) || !env.enabled) {
		if (rc)
			fprintf(stderr, "trainscope-analyzer: OTLP: %s\n", err);
		return rc;
	}
	env.opts.window_steps = t->window_steps;
	env.opts.sample_ranks = t->sample_ranks ? t->sample_ranks : -1;
	env.opts.max_trace_kb = t->max_trace_kb;
	if ((rc = ts_otlp_new(&c->otlp, &env.opts, err, sizeof(err)))) {
		fprintf(stderr, "trainscope-analyzer: cannot start the OTLP exporter: %s\n",
			rc == -ENOMEM ? "out of memory" : err);
		return -1;
	}
	c->ao.on_report = on_report;
	c->ao.on_step = on_step;
	c->ao.on_forget = on_forget;
	c->ao.on_finish = on_finish;
	c->ao.on_report_ctx = c;
	ts_info("analyzer: OTLP traces to %s (%d steps a trace, %s)", env.url, t->window_steps,
		t->sample_ranks ? "healthy ranks sampled in large jobs" : "every rank");
	return 0;
}

/* Node health (node_sync.h) beside the reports: /metrics counts the degraded nodes, in
 * Kubernetes mode the SlowNodes too, and by policy the nodes' conditions and taints,
 * written by the Kubernetes writer's thread. */
int analyzer_open_nodes(struct cli *c)
{
	struct ts_nh_opts o;
	struct ts_k8s_nodes *kn = NULL;
	char host[128] = "";

	if (c->node_health_s == 0)
		return 0;
	ts_nh_opts_default(&o);
	o.window_s = c->ao.params.nodes.window_s, o.half_life_s = c->ao.params.nodes.half_life_s;
	o.degraded_score = c->ao.params.nodes.degraded_score;
	o.clear_score = c->ao.params.nodes.clear_score;
	o.device_weight = c->ao.params.nodes.device_weight;
	o.min_held_s = c->ao.params.nodes.min_held_s;
	gethostname(host, sizeof(host) - 1);
	if (ts_node_sync_new(&c->nodes, &o, c->partitions > 1 ? c->partition : 0, c->partitions,
			     c->node_health_s) ||
	    (c->k8s && ts_k8s_nodes_new(&kn, c->kube, &c->np, host))) {
		fprintf(stderr, "trainscope-analyzer: node health: out of memory, or nodes.clear_score "
			"above nodes.degraded_score\n");
		return -1;
	}
	c->ao.on_report = on_report;
	c->ao.on_report_ctx = c;
	if (!c->k8s) {
		ts_info("analyzer: node health every %d s (in /metrics; SlowNodes in Kubernetes mode)",
			c->node_health_s);
		return 0;
	}
	ts_k8sw_set_nodes(c->k8s, kn);
	ts_info("analyzer: node health every %d s (conditions %s, taints %s)", c->node_health_s,
		c->np.conditions ? "on" : "off",
		!c->np.taint ? "off" : c->np.dry_run ? "dry run" : c->np.effect);
	return 0;
}

int analyzer_open_k8s(struct cli *c)
{
	char err[512] = "";

	if (!c->kubeconfig && !c->in_cluster)
		return 0;
	struct ts_k8s *k = NULL;

	if (ts_kube_open(&c->kube, c->in_cluster ? NULL : c->kubeconfig, err, sizeof(err)) ||
	    ts_k8s_new(&k, c->kube, c->k8s_interval_s) || ts_k8sw_start(&c->k8s, k)) {
		fprintf(stderr, "trainscope-analyzer: Kubernetes: %s\n", *err ? err : "out of memory");
		ts_k8s_free(k);
		return -1;
	}
	c->ao.on_report = on_report;
	c->ao.on_forget = on_forget;
	c->ao.on_report_ctx = c;
	ts_info("analyzer: Kubernetes mode (%s)", c->in_cluster ? "in cluster" : c->kubeconfig);
	return 0;
}
