// SPDX-License-Identifier: Apache-2.0
/* The analyzer's /healthz and /metrics, answered from the HTTP thread while the main
 * thread consumes: the consume loop's heartbeat, and every part's counters. */
#include "main_impl.h"
#include "httpd.h"
#include "tsclock.h"

#include <stdatomic.h>
#include <stdint.h>

/* /healthz: the consume loop turns (a fetch waits 200 ms at most; the Kubernetes and OTLP
 * writers have threads of their own), so one that stopped is stuck: restart it. */
int analyzer_health(void *ctx, struct ts_buf *out)
{
	struct cli *c = ctx;
	uint64_t beat = atomic_load(&c->heartbeat_ns), now = ts_real_ns();
	struct ts_snapshot_stats ss;
	struct ts_snapshots *snap = atomic_load(&c->snap);

	if (atomic_load(&c->standby)) { /* alive, and says why it takes no part */
		pthread_mutex_lock(&c->standby_lock);
		ts_buf_printf(out, "%s\n", c->standby_why);
		pthread_mutex_unlock(&c->standby_lock);
	}
	if (beat && now > beat && now - beat >= (uint64_t)c->stall_s * 1000000000ull) {
		ts_buf_printf(out, "stalled: the consume loop has not turned for %llu s\n",
			      (unsigned long long)((now - beat) / 1000000000ull));
		return 1;
	}
	if (!snap)
		return 0;
	ts_snapshots_get_stats(snap, &ss);
	if (!ss.failing_since_ns || now < ss.failing_since_ns ||
	    now - ss.failing_since_ns < (uint64_t)c->stall_s * 1000000000ull)
		return 0;
	/* a restart would not help, but it must be seen: what is analysed stays unacked */
	ts_buf_printf(out, "JetStream refuses writes: the analyzer's state not stored for %llu s: %s\n",
		      (unsigned long long)((now - ss.failing_since_ns) / 1000000000ull), ss.why);
	return 1;
}

int analyzer_ready(void *ctx, struct ts_buf *out)
{
	struct cli *c = ctx;
	struct tsn *n = atomic_load(&c->nats_conn);
	struct tsn_stats ns;

	if (atomic_load(&c->standby)) {
		pthread_mutex_lock(&c->standby_lock);
		ts_buf_printf(out, "waiting: %s\n", c->standby_why);
		pthread_mutex_unlock(&c->standby_lock);
		return 1;
	}
	if (n) {
		tsn_get_stats(n, &ns);
		if (!ns.connected) {
			ts_buf_printf(out, "waiting: NATS server %s not connected (reconnecting)\n",
				      c->nats.url);
			return 1;
		}
	}
	switch (atomic_load(&c->phase)) {
	case PHASE_STARTING:
		ts_buf_printf(out, "waiting: JetStream at %s (its stream, the snapshot bucket, the "
			      "lease on durable %s)\n", c->nats.url, c->durable);
		return 1;
	case PHASE_RESTORING:
		ts_buf_printf(out, "waiting: restoring the state snapshot\n");
		return 1;
	default:
		ts_buf_printf(out, "ready: consuming as durable %s\n", c->durable);
		return 0;
	}
}

enum {
	SM_NODE_FINDINGS,
	SM_NODES_WITH_FINDINGS,
	SM_NODES_DEGRADED,
	SM_NODE_HEALTH_STORE_FAILURES,
	SM_NODE_TAINTS,
	SM_NODE_UNTAINTS,
	SM_NODE_TAINTS_DRY_RUN,
	SM_NODE_TAINTS_HELD_BACK,
	SM_NODE_WRITES_FAILED,
	SM_CONSUMER_RECREATED,
	SM_SNAPSHOTS,
	SM_SNAPSHOT_FAILURES,
	SM_SNAPSHOT_FAILING,
	SM_SNAPSHOT_BYTES,
	SM_SNAPSHOT_RESTORED_JOBS,
	SM_SNAPSHOT_DROPPED_JOBS,
	SM_K8S_QUEUED,
	SM_K8S_REPORTS_CREATED,
	SM_K8S_STATUS_UPDATES,
	SM_K8S_CONFLICTS,
	SM_K8S_EVENTS,
	SM_K8S_ERRORS,
	SM_K8S_REFUSED,
	SM_OTLP_SPANS_QUEUED,
	SM_OTLP_SPANS_SENT,
	SM_OTLP_SPANS_DROPPED,
	SM_OTLP_RETRIES,
	SM_OTLP_TRACES,
	SM_OTLP_STEPS_SAMPLED_OUT,
	SM_OTLP_SPANS_OVER_TRACE_SIZE,
	SM_OTLP_STEPS_LATE,
};

static const struct ts_metric_family service_metrics[] = {
	[SM_NODE_FINDINGS] = { "trainscope_analyzer_node_findings_total", TS_COUNTER, NULL,
		"Slow ranks noted against their node (one finding per job, node and "
		"device)." },
	[SM_NODES_WITH_FINDINGS] = { "trainscope_analyzer_nodes_with_findings", TS_GAUGE, NULL,
		"Nodes that jobs' verdicts named within the window, every partition's." },
	[SM_NODES_DEGRADED] = { "trainscope_analyzer_nodes_degraded", TS_GAUGE, NULL,
		"Of those, nodes whose score made them degraded." },
	[SM_NODE_HEALTH_STORE_FAILURES] = { "trainscope_analyzer_node_health_store_failures_total",
		TS_COUNTER, NULL,
		"Rounds whose findings JetStream did not take (the server's words are "
		"logged)." },
	[SM_NODE_TAINTS] = { "trainscope_analyzer_node_taints_total", TS_COUNTER, NULL,
		"Nodes tainted trainscope.dev/degraded by the remediation policy." },
	[SM_NODE_UNTAINTS] = { "trainscope_analyzer_node_untaints_total", TS_COUNTER, NULL,
		"Taints removed from nodes clean again." },
	[SM_NODE_TAINTS_DRY_RUN] = { "trainscope_analyzer_node_taints_dry_run_total",
		TS_COUNTER, NULL,
		"Taints the dry run would have set." },
	[SM_NODE_TAINTS_HELD_BACK] = { "trainscope_analyzer_node_taints_held_back_total",
		TS_COUNTER, NULL,
		"Taints not set: the share of tainted nodes was at its most." },
	[SM_NODE_WRITES_FAILED] = { "trainscope_analyzer_node_writes_failed_total",
		TS_COUNTER, NULL,
		"SlowNode, node condition, Event or taint writes the API server "
		"refused." },
	[SM_CONSUMER_RECREATED] = { "trainscope_analyzer_consumer_recreated_total",
		TS_COUNTER, NULL,
		"Times the durable consumer had vanished and was made again." },
	[SM_SNAPSHOTS] = { "trainscope_analyzer_snapshots_total", TS_COUNTER, NULL,
		"State snapshots stored." },
	[SM_SNAPSHOT_FAILURES] = { "trainscope_analyzer_snapshot_failures_total", TS_COUNTER, NULL,
		"Writes of the analyzer's state (snapshots, its lease) JetStream did "
		"not take (the server's words are logged)." },
	[SM_SNAPSHOT_FAILING] = { "trainscope_analyzer_snapshot_failing", TS_GAUGE, NULL,
		"1 while JetStream refuses the analyzer's state (the last snapshot or "
		"lease write failed)." },
	[SM_SNAPSHOT_BYTES] = { "trainscope_analyzer_snapshot_bytes", TS_GAUGE, NULL,
		"Bytes the last state snapshot stored: what changed since the one "
		"before." },
	[SM_SNAPSHOT_RESTORED_JOBS] = { "trainscope_analyzer_snapshot_restored_jobs",
		TS_GAUGE, NULL,
		"Jobs restored from the snapshot at start." },
	[SM_SNAPSHOT_DROPPED_JOBS] = { "trainscope_analyzer_snapshot_dropped_jobs", TS_GAUGE, NULL,
		"Jobs the restore at start left out (their part damaged or out of "
		"memory): each started again from the stream after the snapshot." },
	[SM_K8S_QUEUED] = { "trainscope_analyzer_k8s_queued", TS_GAUGE, NULL,
		"Job reports waiting for the Kubernetes writer." },
	[SM_K8S_REPORTS_CREATED] = { "trainscope_analyzer_k8s_reports_created_total",
		TS_COUNTER, NULL,
		"SlowNodeReports created." },
	[SM_K8S_STATUS_UPDATES] = { "trainscope_analyzer_k8s_status_updates_total",
		TS_COUNTER, NULL,
		"SlowNodeReport status writes." },
	[SM_K8S_CONFLICTS] = { "trainscope_analyzer_k8s_conflicts_total", TS_COUNTER, NULL,
		"Status writes retried after a conflict." },
	[SM_K8S_EVENTS] = { "trainscope_analyzer_k8s_events_total", TS_COUNTER, NULL,
		"Events raised on slow ranks." },
	[SM_K8S_ERRORS] = { "trainscope_analyzer_k8s_errors_total", TS_COUNTER, NULL,
		"Kubernetes writes that failed." },
	[SM_K8S_REFUSED] = { "trainscope_analyzer_k8s_refused_total", TS_COUNTER, NULL,
		"Reports and Events not written: a system namespace, a name that is not "
		"a namespace, or a pod that is not in the namespace." },
	[SM_OTLP_SPANS_QUEUED] = { "trainscope_analyzer_otlp_spans_queued_total", TS_COUNTER, NULL,
		"Spans made for export; each is sent, dropped or still queued." },
	[SM_OTLP_SPANS_SENT] = { "trainscope_analyzer_otlp_spans_sent_total", TS_COUNTER, NULL,
		"Spans the collector took." },
	[SM_OTLP_SPANS_DROPPED] = { "trainscope_analyzer_otlp_spans_dropped_total",
		TS_COUNTER, NULL,
		"Spans lost: queue full or collector unreachable." },
	[SM_OTLP_RETRIES] = { "trainscope_analyzer_otlp_retries_total", TS_COUNTER, NULL,
		"Batches sent again after a failure." },
	[SM_OTLP_TRACES] = { "trainscope_analyzer_otlp_traces_total", TS_COUNTER, NULL,
		"Windows of steps closed, one trace each." },
	[SM_OTLP_STEPS_SAMPLED_OUT] = { "trainscope_analyzer_otlp_steps_sampled_out_total",
		TS_COUNTER, NULL,
		"Step spans of healthy ranks left out of large jobs' traces by design "
		"(traces.sample_ranks)." },
	[SM_OTLP_SPANS_OVER_TRACE_SIZE] = { "trainscope_analyzer_otlp_spans_over_trace_size_total",
		TS_COUNTER, NULL,
		"Spans left out because their trace reached traces.max_trace_kb." },
	[SM_OTLP_STEPS_LATE] = { "trainscope_analyzer_otlp_steps_late_total", TS_COUNTER, NULL,
		"Step spans that came after their trace was closed." },
};

const struct ts_metric_table analyzer_service_metrics = TS_METRIC_TABLE(service_metrics);

#define PUT(b, id, v) ts_metric_u64((b), &service_metrics[(id)], (uint64_t)(v))

/* Node health's figures (under core_lock); the writer's in Kubernetes mode. */
static void render_nodes(struct cli *c, struct ts_buf *out)
{
	struct ts_node_sync_stats s;
	struct ts_node_stats w;

	if (!c->nodes)
		return;
	ts_node_sync_get_stats(c->nodes, &s);

	PUT(out, SM_NODE_FINDINGS, s.findings);
	PUT(out, SM_NODES_WITH_FINDINGS, s.nodes);
	PUT(out, SM_NODES_DEGRADED, s.degraded);
	PUT(out, SM_NODE_HEALTH_STORE_FAILURES, s.store_failures);
	ts_node_sync_render(c->nodes, out);
	if (!c->k8s) /* no SlowNodes, conditions or taints to count */
		return;
	ts_k8sw_node_stats(c->k8s, &w);
	PUT(out, SM_NODE_TAINTS, w.tainted);
	PUT(out, SM_NODE_UNTAINTS, w.untainted);
	PUT(out, SM_NODE_TAINTS_DRY_RUN, w.would_taint);
	PUT(out, SM_NODE_TAINTS_HELD_BACK, w.held_back);
	PUT(out, SM_NODE_WRITES_FAILED, w.errors);
}

void analyzer_render(void *ctx, struct ts_buf *out)
{
	struct cli *c = ctx;
	struct ts_k8s_stats ks;

	pthread_mutex_lock(&c->core_lock);
	ts_analyzer_render_metrics(c->analyzer, out);
	PUT(out, SM_CONSUMER_RECREATED, atomic_load(&c->consumer_recreated));
	render_nodes(c, out);
	struct ts_snapshots *snap = atomic_load(&c->snap);
	if (snap) {
		struct ts_snapshot_stats ss;
		ts_snapshots_get_stats(snap, &ss);
		PUT(out, SM_SNAPSHOTS, ss.saved);
		PUT(out, SM_SNAPSHOT_FAILURES, ss.failed);
		PUT(out, SM_SNAPSHOT_FAILING, ss.failing_since_ns ? 1 : 0);
		PUT(out, SM_SNAPSHOT_BYTES, ss.bytes);
		PUT(out, SM_SNAPSHOT_RESTORED_JOBS, ss.restored_jobs);
		PUT(out, SM_SNAPSHOT_DROPPED_JOBS, ss.dropped_jobs);
	}
	if (c->k8s) {
		uint64_t queued;
		ts_k8sw_stats(c->k8s, &ks, &queued);
		PUT(out, SM_K8S_QUEUED, queued);
		PUT(out, SM_K8S_REPORTS_CREATED, ks.created);
		PUT(out, SM_K8S_STATUS_UPDATES, ks.status_updates);
		PUT(out, SM_K8S_CONFLICTS, ks.conflicts);
		PUT(out, SM_K8S_EVENTS, ks.events);
		PUT(out, SM_K8S_ERRORS, ks.errors);
		PUT(out, SM_K8S_REFUSED, ks.refused);
	}
	if (c->otlp) {
		struct ts_otlp_stats os;
		ts_otlp_get_stats(c->otlp, &os);
		PUT(out, SM_OTLP_SPANS_QUEUED, os.queued);
		PUT(out, SM_OTLP_SPANS_SENT, os.sent);
		PUT(out, SM_OTLP_SPANS_DROPPED, os.dropped);
		PUT(out, SM_OTLP_RETRIES, os.retries);
		PUT(out, SM_OTLP_TRACES, os.windows);
		PUT(out, SM_OTLP_STEPS_SAMPLED_OUT, os.sampled_out);
		PUT(out, SM_OTLP_SPANS_OVER_TRACE_SIZE, os.over_size);
		PUT(out, SM_OTLP_STEPS_LATE, os.late);
	}
	pthread_mutex_unlock(&c->core_lock);
}
