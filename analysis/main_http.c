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

/* Node health's figures (under core_lock); the writer's in Kubernetes mode. */
static void render_nodes(struct cli *c, struct ts_buf *out)
{
	struct ts_node_sync_stats s;
	struct ts_node_stats w;

	if (!c->nodes)
		return;
	ts_node_sync_get_stats(c->nodes, &s);

	ts_prom(out, "trainscope_analyzer_node_findings_total", "counter",
		"Slow ranks noted against their node (one finding per job, node and device).",
		s.findings);
	ts_prom(out, "trainscope_analyzer_nodes_with_findings", "gauge",
		"Nodes that jobs' verdicts named within the window, every partition's.", s.nodes);
	ts_prom(out, "trainscope_analyzer_nodes_degraded", "gauge",
		"Of those, nodes whose score made them degraded.", s.degraded);
	ts_prom(out, "trainscope_analyzer_node_health_store_failures_total", "counter",
		"Rounds whose findings JetStream did not take (the server's words are logged).",
		s.store_failures);
	ts_node_sync_render(c->nodes, out);
	if (!c->k8s) /* no SlowNodes, conditions or taints to count */
		return;
	ts_k8sw_node_stats(c->k8s, &w);
	ts_prom(out, "trainscope_analyzer_node_taints_total", "counter",
		"Nodes tainted trainscope.dev/degraded by the remediation policy.", w.tainted);
	ts_prom(out, "trainscope_analyzer_node_untaints_total", "counter",
		"Taints removed from nodes clean again.", w.untainted);
	ts_prom(out, "trainscope_analyzer_node_taints_dry_run_total", "counter",
		"Taints the dry run would have set.", w.would_taint);
	ts_prom(out, "trainscope_analyzer_node_taints_held_back_total", "counter",
		"Taints not set: the share of tainted nodes was at its most.", w.held_back);
	ts_prom(out, "trainscope_analyzer_node_writes_failed_total", "counter",
		"SlowNode, node condition, Event or taint writes the API server refused.", w.errors);
}

void analyzer_render(void *ctx, struct ts_buf *out)
{
	struct cli *c = ctx;
	struct ts_k8s_stats ks;

	pthread_mutex_lock(&c->core_lock);
	ts_analyzer_render_metrics(c->analyzer, out);
	ts_prom(out, "trainscope_analyzer_consumer_recreated_total", "counter",
		"Times the durable consumer had vanished and was made again.",
		atomic_load(&c->consumer_recreated));
	render_nodes(c, out);
	struct ts_snapshots *snap = atomic_load(&c->snap);
	if (snap) {
		struct ts_snapshot_stats ss;
		ts_snapshots_get_stats(snap, &ss);
		ts_prom(out, "trainscope_analyzer_snapshots_total", "counter",
			"State snapshots stored.", ss.saved);
		ts_prom(out, "trainscope_analyzer_snapshot_failures_total", "counter",
			"Writes of the analyzer's state (snapshots, its lease) JetStream did not take (the server's words are logged).",
			ss.failed);
		ts_prom(out, "trainscope_analyzer_snapshot_failing", "gauge",
			"1 while JetStream refuses the analyzer's state (the last snapshot or lease write failed).",
			ss.failing_since_ns ? 1 : 0);
		ts_prom(out, "trainscope_analyzer_snapshot_bytes", "gauge",
			"Bytes the last state snapshot stored: what changed since the one before.", ss.bytes);
		ts_prom(out, "trainscope_analyzer_snapshot_restored_jobs", "gauge",
			"Jobs restored from the snapshot at start.", ss.restored_jobs);
		ts_prom(out, "trainscope_analyzer_snapshot_dropped_jobs", "gauge",
			"Jobs the restore at start left out (their part damaged or out of memory): "
			"each started again from the stream after the snapshot.", ss.dropped_jobs);
	}
	if (c->k8s) {
		uint64_t queued;
		ts_k8sw_stats(c->k8s, &ks, &queued);
		ts_prom(out, "trainscope_analyzer_k8s_queued", "gauge",
			"Job reports waiting for the Kubernetes writer.", queued);
		ts_prom(out, "trainscope_analyzer_k8s_reports_created_total", "counter",
			"SlowNodeReports created.", ks.created);
		ts_prom(out, "trainscope_analyzer_k8s_status_updates_total", "counter",
			"SlowNodeReport status writes.", ks.status_updates);
		ts_prom(out, "trainscope_analyzer_k8s_conflicts_total", "counter",
			"Status writes retried after a conflict.", ks.conflicts);
		ts_prom(out, "trainscope_analyzer_k8s_events_total", "counter",
			"Events raised on slow ranks.", ks.events);
		ts_prom(out, "trainscope_analyzer_k8s_errors_total", "counter",
			"Kubernetes writes that failed.", ks.errors);
		ts_prom(out, "trainscope_analyzer_k8s_refused_total", "counter",
			"Reports and Events not written: a system namespace, a name that is not a "
			"namespace, or a pod that is not in the namespace.", ks.refused);
	}
	if (c->otlp) {
		struct ts_otlp_stats os;
		ts_otlp_get_stats(c->otlp, &os);
		ts_prom(out, "trainscope_analyzer_otlp_spans_queued_total", "counter",
			"Spans made for export; each is sent, dropped or still queued.", os.queued);
		ts_prom(out, "trainscope_analyzer_otlp_spans_sent_total", "counter",
			"Spans the collector took.", os.sent);
		ts_prom(out, "trainscope_analyzer_otlp_spans_dropped_total", "counter",
			"Spans lost: queue full or collector unreachable.", os.dropped);
		ts_prom(out, "trainscope_analyzer_otlp_retries_total", "counter",
			"Batches sent again after a failure.", os.retries);
		ts_prom(out, "trainscope_analyzer_otlp_traces_total", "counter",
			"Windows of steps closed, one trace each.", os.windows);
		ts_prom(out, "trainscope_analyzer_otlp_steps_sampled_out_total", "counter",
			"Step spans of healthy ranks left out of large jobs' traces by design "
			"(traces.sample_ranks).", os.sampled_out);
		ts_prom(out, "trainscope_analyzer_otlp_spans_over_trace_size_total", "counter",
			"Spans left out because their trace reached traces.max_trace_kb.", os.over_size);
		ts_prom(out, "trainscope_analyzer_otlp_steps_late_total", "counter",
			"Step spans that came after their trace was closed.", os.late);
	}
	pthread_mutex_unlock(&c->core_lock);
}
