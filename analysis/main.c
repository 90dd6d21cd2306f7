// SPDX-License-Identifier: Apache-2.0
/* trainscope-analyzer: consumes the job's batches from JetStream and names slow ranks. */
#include "analyzer.h"
#include "httpd.h"
#include "k8s.h"
#include "k8s_writer.h"
#include "otlp.h"
#include "kube.h"
#include "log.h"
#include "signals.h"
#include "natsw.h"
#include "natskv.h"
#include "numparse.h"
#include "snapshot.h"
#include "node_sync.h"
#include "tsclock.h"

#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: trainscope-analyzer [options]\n"
		"Reads trainscope batches from the NATS JetStream stream TRAINSCOPE with a durable\n"
		"consumer (a restart loses nothing), runs fail-slow, hang and slow-rank detection\n"
		"per job, and writes each job's report as <report-dir>/<namespace>_<job>.json (names\n"
		"made safe for a file name) in the shape of the SlowNodeReport status, with\n"
		"sysTrace's result fields. Its state is saved in JetStream (--snapshot-s): killed\n"
		"and started again, it goes on where it was.\n\n"
		TSN_HELP
		"  -c, --config FILE      detection parameters (YAML; see --print-config);\n"
		"                         TRAINSCOPE_ANALYZER_<KEY> overrides, e.g.\n"
		"                         TRAINSCOPE_ANALYZER_SPACE_EPS=0.1\n"
		"  -r, --report-dir DIR   where reports go (default ./trainscope-reports)\n"
		"      --durable NAME     JetStream durable consumer (default trainscope-analyzer)\n"
		"      --snapshot-s N     save every job's state every N s in a JetStream key-value\n"
		"                         bucket and acknowledge messages only then, so a restart\n"
		"                         resumes from it with the same verdicts (default 5, 0 = off:\n"
		"                         a restart then starts every job afresh)\n"
		"      --snapshot-bucket NAME  the bucket (default trainscope-analyzer; the key is\n"
		"                         the durable consumer's name)\n"
		"      --filter SUBJECT   subjects to read (default ts.v1.>)\n"
		"      --partitions N     share the jobs among N analyzers (TRAINSCOPE_ANALYZER_\n"
		"                         PARTITIONS): the stream's subject transform gives each\n"
		"                         job's subjects a partition of its namespace and job\n"
		"                         (nats-server 2.10 or later); this analyzer reads its own\n"
		"                         with durable consumer trainscope-analyzer-p<K>. Not\n"
		"                         given: one analyzer reads every job, and a stream that\n"
		"                         others partitioned is left so; 1: the transform removed\n"
		"      --partition K|auto the partition read, 0 to N-1; auto: the ordinal ending the\n"
		"                         pod's name (a StatefulSet's, POD_NAME or HOSTNAME)\n"
		"                         (TRAINSCOPE_ANALYZER_PARTITION, default auto)\n"
		"  The stream: TRAINSCOPE_STREAM_REPLICAS (1), _MAX_AGE (24h), _MAX_BYTES (1G) and\n"
		"  _DISCARD (old: drop the oldest when full; new: refuse). The analyzer makes it and\n"
		"  keeps it to these (and its partitions) at each start.\n"
		"  -p, --metrics-port N   /metrics and /healthz (0 = any free port, -1 = off;\n"
		"                         default 9103)\n"
		"      --metrics-addr A   listen address (default 127.0.0.1)\n"
		"      --stall-s N        /healthz answers 503 once the consume loop has not\n"
		"                         turned for N s (default 60)\n"
		"      --max-msg-bytes N  refuse larger messages (default 4194304)\n"
		"      --kubeconfig FILE  Kubernetes mode: keep a SlowNodeReport per job and raise\n"
		"                         Events on slow ranks' pods, through this kubeconfig\n"
		"      --in-cluster       Kubernetes mode with the pod's service account\n"
		"      --k8s-interval-s N rewrite an unchanged report at most every N s (10)\n"
		"      --node-health-s N  Kubernetes mode: every N s (30; 0 = off) add up what the\n"
		"                         jobs' verdicts say about each node and device, across\n"
		"                         partitions (in the --snapshot-bucket) and keep a SlowNode\n"
		"                         per node with findings (docs/report.md, \"Node health\")\n"
		"      --node-conditions  also set a degraded node's TrainscopeDegraded condition\n"
		"                         and raise Events on it (needs patch on nodes/status)\n"
		"      --node-taint       and taint it trainscope.dev/degraded=<cause> (needs patch\n"
		"                         on nodes), removed when it is clean again\n"
		"      --node-taint-dry-run  say what would be tainted, change no node\n"
		"      --node-taint-effect E  PreferNoSchedule (default) or NoSchedule\n"
		"      --node-taint-max-share X  never more than this share of the (GPU) nodes\n"
		"                         tainted at once (0.1)\n"
		"      --node-taint-causes LIST  causes that may taint, comma-separated (Device)\n"
		"      --otlp-endpoint URL  send the job's timeline as OTLP/HTTP traces, e.g.\n"
		"                         http://jaeger:4318 (/v1/traces is added). The standard\n"
		"                         OTEL_EXPORTER_OTLP_[TRACES_]{ENDPOINT,HEADERS,CERTIFICATE,\n"
		"                         CLIENT_CERTIFICATE,CLIENT_KEY,TIMEOUT,COMPRESSION,PROTOCOL},\n"
		"                         OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and\n"
		"                         OTEL_SDK_DISABLED are honoured; a trace holds traces.\n"
		"                         window_steps steps, sampled for large jobs (--config)\n"
		"  -q, --quiet            do not print reports when a verdict changes\n"
		"      --print-config     print the effective parameters and exit\n"
		"  -h, --help\n");
}

/* Codes of the long-only options, after TSN_LONGOPTS'. */
enum analyzer_opt {
	OPT_DURABLE = TSN_OPT_END,
	OPT_FILTER,
	OPT_METRICS_ADDR,
	OPT_MAX_MSG_BYTES,
	OPT_PRINT_CONFIG,
	OPT_KUBECONFIG,
	OPT_IN_CLUSTER,
	OPT_K8S_INTERVAL_S,
	OPT_STALL_S,
	OPT_OTLP_ENDPOINT,
	OPT_SNAPSHOT_S,
	OPT_SNAPSHOT_BUCKET,
	OPT_PARTITIONS,
	OPT_PARTITION,
	OPT_NODE_HEALTH_S,
	OPT_NODE_CONDITIONS,
	OPT_NODE_TAINT,
	OPT_NODE_TAINT_DRY_RUN,
	OPT_NODE_TAINT_EFFECT,
	OPT_NODE_TAINT_MAX_SHARE,
	OPT_NODE_TAINT_CAUSES,
};

struct cli {
	struct ts_analyzer_opts ao;
	struct tsn_opts nats;
	const char *config, *durable, *filter, *metrics_addr, *snapshot_bucket;
	int metrics_port, k8s_interval_s, snapshot_s;
	int partitions, partition; /* this analyzer reads partition of partitions */
	char durable_buf[96], filter_buf[64];
	struct ts_snapshots *_Atomic snap; /* set once JetStream answers; read by /healthz */
	int restored;                      /* the restore's result; -EAGAIN: not done yet */
	uint64_t replay_after;             /* the stream sequence a restored state is as of */
	char kv_why[256];                  /* the bucket's last refusal, said once */
	bool print_config, in_cluster;
	const char *kubeconfig, *otlp_endpoint;
	struct ts_kube *kube;
	struct ts_k8sw *k8s;   /* the Kubernetes writer's thread */
	struct ts_node_sync *nodes;  /* node health; NULL: off */
	struct ts_node_policy np;
	int node_health_s;
	struct ts_otlp *otlp;
	char exported[64][96]; /* slow-rank spans sent: "<ns>/<job>/<rank>/<since>" */
	int nexported;
	struct ts_analyzer *analyzer;
	uint64_t consumer_recreated; /* the durable consumer vanished and was made again */
	int stall_s;                 /* /healthz fails when the consume loop stops this long */
	_Atomic uint64_t heartbeat_ns; /* the consume loop's last turn */
	/* the lease on the durable (natskv.h): one analyzer consumes it, another waits */
	struct tsn_kv *lease_kv;
	char owner[160];
	uint64_t lease_at_ns;        /* when it was last taken or renewed */
	_Atomic bool standby;
	char standby_why[512];       /* read by /healthz while standby */
};

/* Two analyzers on one durable consumer would each get part of its messages and judge
 * no job whole: the first holds a lease on it, renewed every LEASE_S / 3; another one
 * waits and says so, and takes over once the lease is LEASE_S old (its holder killed). */
#define LEASE_S 10.0

/* The ordinal ending a StatefulSet pod's name (trainscope-analyzer-2): -1 without one. */
static int pod_ordinal(void)
{
	const char *name = getenv("POD_NAME"), *d;
	char host[256];
	long ordinal;

	if (!name || !*name) {
		if (gethostname(host, sizeof(host)))
			return -1;
		host[sizeof(host) - 1] = 0;
		name = host;
	}
	d = strrchr(name, '-');
	if (!d || strspn(d + 1, "0123456789") != strlen(d + 1) ||
	    ts_parse_int(d + 1, 0, 99999, &ordinal))
		return -1;
	return (int)ordinal;
}

/* Partitioned: the stream transformed into N partitions, this analyzer's consumer and
 * snapshots those of partition K only. */
static int partitioning(struct cli *c, const char *parts, const char *part, char *err, size_t len)
{
	long v = 1;

	if (parts && *parts && ts_parse_int(parts, 1, 1024, &v)) {
		snprintf(err, len, "--partitions %s: a count from 1 to 1024", parts);
		return -EINVAL;
	}
	c->partitions = (int)v;
	c->nats.manage_stream = true;
	/* not given: a stream partitioned by others stays so (this one reads all of it) */
	c->nats.stream_partitions = parts && *parts ? c->partitions : -1;
	c->ao.partitions = c->partitions;
	if (c->partitions == 1)
		return 0;
	if (!part || !*part || !strcmp(part, "auto")) {
		c->partition = pod_ordinal();
		if (c->partition < 0) {
			snprintf(err, len, "--partition auto: the pod's name (POD_NAME or the host name) "
				 "ends in no ordinal; give --partition 0 to %d", c->partitions - 1);
			return -EINVAL;
		}
	} else {
		/* not a partition: said below as one past the last */
		c->partition = ts_parse_int(part, 0, c->partitions - 1, &v) ? c->partitions : (int)v;
	}
	if (c->partition >= c->partitions) {
		snprintf(err, len, "partition %s is not one of the %d partitions (0 to %d): a "
			 "StatefulSet has more replicas than --partitions says?", part ? part : "auto",
			 c->partitions, c->partitions - 1);
		return -EINVAL;
	}
	if (!c->filter) {
		snprintf(c->filter_buf, sizeof(c->filter_buf), "ts.v1.*.*.*.*.%d", c->partition);
		c->filter = c->filter_buf;
	}
	if (!strcmp(c->durable, "trainscope-analyzer")) {
		snprintf(c->durable_buf, sizeof(c->durable_buf), "%s-p%d", c->durable, c->partition);
		c->durable = c->durable_buf;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option longopts[] = {
		TSN_LONGOPTS,
		{ "config", required_argument, NULL, 'c' },
		{ "report-dir", required_argument, NULL, 'r' },
		{ "durable", required_argument, NULL, OPT_DURABLE },
		{ "filter", required_argument, NULL, OPT_FILTER },
		{ "metrics-port", required_argument, NULL, 'p' },
		{ "metrics-addr", required_argument, NULL, OPT_METRICS_ADDR },
		{ "max-msg-bytes", required_argument, NULL, OPT_MAX_MSG_BYTES },
		{ "quiet", no_argument, NULL, 'q' },
		{ "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
		{ "kubeconfig", required_argument, NULL, OPT_KUBECONFIG },
		{ "in-cluster", no_argument, NULL, OPT_IN_CLUSTER },
		{ "k8s-interval-s", required_argument, NULL, OPT_K8S_INTERVAL_S },
		{ "stall-s", required_argument, NULL, OPT_STALL_S },
		{ "otlp-endpoint", required_argument, NULL, OPT_OTLP_ENDPOINT },
		{ "snapshot-s", required_argument, NULL, OPT_SNAPSHOT_S },
		{ "snapshot-bucket", required_argument, NULL, OPT_SNAPSHOT_BUCKET },
		{ "partitions", required_argument, NULL, OPT_PARTITIONS },
		{ "partition", required_argument, NULL, OPT_PARTITION },
		{ "node-health-s", required_argument, NULL, OPT_NODE_HEALTH_S },
		{ "node-conditions", no_argument, NULL, OPT_NODE_CONDITIONS },
		{ "node-taint", no_argument, NULL, OPT_NODE_TAINT },
		{ "node-taint-dry-run", no_argument, NULL, OPT_NODE_TAINT_DRY_RUN },
		{ "node-taint-effect", required_argument, NULL, OPT_NODE_TAINT_EFFECT },
		{ "node-taint-max-share", required_argument, NULL, OPT_NODE_TAINT_MAX_SHARE },
		{ "node-taint-causes", required_argument, NULL, OPT_NODE_TAINT_CAUSES },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *parts = getenv("TRAINSCOPE_ANALYZER_PARTITIONS");
	const char *part = getenv("TRAINSCOPE_ANALYZER_PARTITION");
	char err[512];
	int ch;

	tsn_opts_from_env(&c->nats, "trainscope-analyzer");
	c->durable = "trainscope-analyzer";
	c->ao.report_dir = "trainscope-reports";
	c->ao.print_changes = 1;
	c->metrics_port = 9103;
	c->stall_s = 60;
	c->snapshot_s = 5;
	c->restored = -EAGAIN;
	c->snapshot_bucket = "trainscope-analyzer";
	c->node_health_s = 30;
	ts_node_policy_default(&c->np);
	c->np.conditions = false;
	while ((ch = getopt_long(argc, argv, "s:c:r:p:qh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': c->config = optarg; break;
		case 'r': c->ao.report_dir = optarg; break;
		case OPT_DURABLE: c->durable = optarg; break;
		case OPT_FILTER: c->filter = optarg; break;
		case 'p': c->metrics_port = (int)ts_opt_int("--metrics-port", optarg, -1, 65535); break;
		case OPT_METRICS_ADDR: c->metrics_addr = optarg; break;
		case OPT_MAX_MSG_BYTES:
			c->ao.max_msg_bytes = (size_t)ts_opt_int("--max-msg-bytes", optarg, 1, 1l << 30);
			break;
		case 'q': c->ao.print_changes = 0; break;
		case OPT_PRINT_CONFIG: c->print_config = true; break;
		case OPT_KUBECONFIG: c->kubeconfig = optarg; break;
		case OPT_IN_CLUSTER: c->in_cluster = true; break;
		case OPT_K8S_INTERVAL_S:
			c->k8s_interval_s = (int)ts_opt_int("--k8s-interval-s", optarg, 1, 86400);
			break;
		case OPT_STALL_S: c->stall_s = (int)ts_opt_int("--stall-s", optarg, 1, 86400); break;
		case OPT_OTLP_ENDPOINT: c->otlp_endpoint = optarg; break;
		case OPT_SNAPSHOT_S: c->snapshot_s = (int)ts_opt_int("--snapshot-s", optarg, 0, 86400); break;
		case OPT_SNAPSHOT_BUCKET: c->snapshot_bucket = optarg; break;
		case OPT_PARTITIONS: parts = optarg; break;
		case OPT_PARTITION: part = optarg; break;
		case OPT_NODE_HEALTH_S:
			c->node_health_s = (int)ts_opt_int("--node-health-s", optarg, 0, 86400);
			break;
		case OPT_NODE_CONDITIONS: c->np.conditions = true; break;
		case OPT_NODE_TAINT: c->np.taint = c->np.conditions = true; break;
		case OPT_NODE_TAINT_DRY_RUN: c->np.dry_run = true; break;
		case OPT_NODE_TAINT_EFFECT: c->np.effect = optarg; break;
		case OPT_NODE_TAINT_MAX_SHARE:
			c->np.max_share = ts_opt_double("--node-taint-max-share", optarg, 0, 1);
			break;
		case OPT_NODE_TAINT_CAUSES: c->np.causes = optarg; break;
		case 'h': usage(stdout); exit(0);
		default:
			if (tsn_parse_option(&c->nats, ch, optarg))
				break;
			usage(stderr);
			return -1;
		}
	}
	if (ts_node_policy_check(&c->np, err, sizeof(err))) {
		fprintf(stderr, "trainscope-analyzer: %s\n", err);
		return -1;
	}
	if (partitioning(c, parts, part, err, sizeof(err))) {
		fprintf(stderr, "trainscope-analyzer: %s\n", err);
		return -1;
	}
	tsn_opts_finish(&c->nats);
	ts_params_defaults(&c->ao.params);
	if (ts_params_load(&c->ao.params, c->config, NULL, err, sizeof(err))) {
		fprintf(stderr, "trainscope-analyzer: bad configuration: %s\n", err);
		return -1;
	}
	return 0;
}

/* The HTTP thread renders metrics while the main thread ingests: one lock between them. */
static pthread_mutex_t core_lock = PTHREAD_MUTEX_INITIALIZER;

/* /healthz: the consume loop turns (a fetch waits 200 ms at most; the Kubernetes and OTLP
 * writers have threads of their own), so one that stopped is stuck: restart it. */
static int health(void *ctx, struct ts_buf *out)
{
	struct cli *c = ctx;
	uint64_t beat = atomic_load(&c->heartbeat_ns), now = ts_real_ns();
	struct ts_snapshot_stats ss;
	struct ts_snapshots *snap = atomic_load(&c->snap);

	if (atomic_load(&c->standby)) /* alive, and says why it takes no part */
		ts_buf_printf(out, "%s\n", c->standby_why);
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

/* Node health's figures (under core_lock). */
static void render_nodes(struct cli *c, struct ts_buf *out)
{
	struct ts_node_sync_stats s;
	struct ts_node_stats w;

	if (!c->nodes)
		return;
	ts_node_sync_get_stats(c->nodes, &s);
	ts_k8sw_node_stats(c->k8s, &w);
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

static void render(void *ctx, struct ts_buf *out)
{
	struct cli *c = ctx;
	struct ts_k8s_stats ks;

	pthread_mutex_lock(&core_lock);
	ts_analyzer_render_metrics(c->analyzer, out);
	ts_prom(out, "trainscope_analyzer_consumer_recreated_total", "counter",
		"Times the durable consumer had vanished and was made again.", c->consumer_recreated);
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
			"Size of the last state snapshot.", ss.bytes);
		ts_prom(out, "trainscope_analyzer_snapshot_restored_jobs", "gauge",
			"Jobs restored from the snapshot at start.", ss.restored_jobs);
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
	pthread_mutex_unlock(&core_lock);
}

static bool exported_before(struct cli *c, const char *key)
{
	for (int i = 0; i < c->nexported; i++)
		if (!strcmp(c->exported[i], key))
			return true;
	snprintf(c->exported[c->nexported++ % 64], sizeof(c->exported[0]), "%s", key);
	if (c->nexported > 64)
		c->nexported = 64;
	return false;
}

/* Each newly named slow rank once: a span over its slow spell, with the evidence. */
static void otlp_slow_ranks(struct cli *c, json_t *report, uint64_t now_ns)
{
	json_t *md = json_object_get(report, "metadata"), *st = json_object_get(report, "status"), *s;
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *job = json_string_value(json_object_get(md, "name"));
	const char *hex = json_string_value(json_object_get(st, "traceID"));
	uint8_t tid[16] = { 0 };
	char key[96];
	size_t i;

	for (int b = 0; hex && strlen(hex) == 32 && b < 16; b++)
		sscanf(hex + 2 * b, "%2hhx", &tid[b]);
	json_array_foreach(json_object_get(st, "slowRanks"), i, s) {
		int rank = (int)json_integer_value(json_object_get(s, "rank"));
		const char *since = json_string_value(json_object_get(s, "since"));
		snprintf(key, sizeof(key), "%s/%s/%d/%s", ns, job, rank, since ? since : "");
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

static int open_otlp(struct cli *c)
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

/* Node health (node_sync.h) beside the reports: the SlowNodes, and by policy the nodes'
 * conditions and taints, written by the Kubernetes writer's thread. */
static int open_node_health(struct cli *c)
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
	gethostname(host, sizeof(host) - 1);
	if (ts_node_sync_new(&c->nodes, &o, c->partitions > 1 ? c->partition : 0, c->partitions,
			     c->node_health_s) ||
	    ts_k8s_nodes_new(&kn, c->kube, &c->np, host)) {
		fprintf(stderr, "trainscope-analyzer: node health: out of memory, or nodes.clear_score "
			"above nodes.degraded_score\n");
		return -1;
	}
	ts_k8sw_set_nodes(c->k8s, kn);
	ts_info("analyzer: node health every %d s (conditions %s, taints %s)", c->node_health_s,
		c->np.conditions ? "on" : "off",
		!c->np.taint ? "off" : c->np.dry_run ? "dry run" : c->np.effect);
	return 0;
}

/* Node health's round when due, in the bucket that holds the lease (start() took it
 * before the consume loop runs this). */
static void node_health(struct cli *c, uint64_t now)
{
	if (!c->nodes || !ts_node_sync_due(c->nodes, now))
		return;
	pthread_mutex_lock(&core_lock); /* reports note findings and /metrics reads them */
	ts_node_sync_tick(c->nodes, c->lease_kv, c->k8s, now);
	pthread_mutex_unlock(&core_lock);
}

static int open_k8s(struct cli *c)
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
	return open_node_health(c);
}

/* Acknowledging the last message acknowledges the batch: at once without snapshots,
 * else once a snapshot holds what it did. */
static void consume(struct cli *c, struct ts_analyzer *a, struct tsn_sub *sub)
{
	natsMsgList list;
	int n = tsn_fetch(sub, &list, 512, 200);

	if (n < 0) {
		nats_Sleep(200);
		return;
	}
	pthread_mutex_lock(&core_lock);
	for (int i = 0; i < list.Count; i++) {
		natsMsg *m = list.Msgs[i];
		ts_analyzer_ingest(a, natsMsg_GetSubject(m), natsMsg_GetData(m),
				   (size_t)natsMsg_GetDataLength(m));
	}
	pthread_mutex_unlock(&core_lock);
	if (list.Count && c->snap) {
		ts_snapshots_hold(c->snap, list.Msgs[list.Count - 1], tsn_sub_last_seq(sub),
				  (size_t)list.Count);
		list.Msgs[list.Count - 1] = NULL;
	} else if (list.Count) {
		natsMsg_Ack(list.Msgs[list.Count - 1], NULL);
	}
	natsMsgList_Destroy(&list);
}

/* Saves when due; while the store refuses, every report says so. */
static void snapshot(struct cli *c, struct ts_analyzer *a, uint64_t now)
{
	struct ts_snapshot_stats ss;
	char why[360] = "";

	ts_snapshots_tick(c->snap, a, &core_lock, now, false);
	ts_snapshots_get_stats(c->snap, &ss);
	if (ss.failing_since_ns)
		snprintf(why, sizeof(why), "JetStream refuses the analyzer's writes (state snapshots, lease): %s",
			 ss.why);
	pthread_mutex_lock(&core_lock);
	ts_analyzer_set_trouble(a, why[0] ? why : NULL);
	pthread_mutex_unlock(&core_lock);
}

/* Takes or renews the lease on the durable. 0 (held), 1 (another analyzer holds it:
 * standby, said once a spell) or -EAGAIN. Without the bucket (no snapshots) there is
 * no lease: 0. */
static int lease(struct cli *c, struct tsn *n)
{
	char holder[256] = "", why[256] = "";
	double age = 0;
	int rc;

	if (c->snapshot_s <= 0)
		return 0;
	if (!c->lease_kv && tsn_kv_open(n, c->snapshot_bucket, &c->lease_kv, why, sizeof(why)))
		return -EAGAIN;
	rc = tsn_kv_lease(c->lease_kv, c->durable, c->owner, LEASE_S, holder, sizeof(holder),
			  &age, why, sizeof(why));
	if (c->snap && rc <= 0)
		ts_snapshots_note_write(c->snap, rc ? why : NULL, ts_real_ns());
	if (rc == 1 && !atomic_load(&c->standby)) {
		snprintf(c->standby_why, sizeof(c->standby_why), "standby: durable consumer %s is "
			 "held by analyzer %s (its lease renewed %.0f s ago): two analyzers on one "
			 "durable would each get part of its messages and judge no job whole; this "
			 "one waits, and takes over when that one stops (give each analyzer its own "
			 "--partition of --partitions, or its own --durable)", c->durable, holder, age);
		ts_warn("analyzer: %s", c->standby_why);
		atomic_store(&c->standby, true);
	}
	if (rc == 0) {
		if (atomic_load(&c->standby))
			ts_info("analyzer: the lease on durable %s is ours: taking over", c->durable);
		atomic_store(&c->standby, false);
		c->lease_at_ns = ts_real_ns();
	}
	return rc;
}

/* With snapshots: the last one restored and the stream replayed after it; a first
 * start (none stored) resumes the durable consumer; one unreadable replays it all. The
 * lease comes first: a standby restores nothing until it takes over. */
static int start(struct cli *c, struct ts_analyzer *a, struct tsn *n, struct tsn_sub **sub)
{
	struct ts_snapshots *snap = NULL;
	char why[256] = "";

	if (lease(c, n))
		return -EAGAIN;

	if (c->snapshot_s > 0 && !c->snap) {
		if (ts_snapshots_open(&snap, n, c->snapshot_bucket, c->durable, c->snapshot_s, why,
				      sizeof(why))) {
			if (strcmp(why, c->kv_why)) /* a refusal is said, not only at debug */
				ts_warn("analyzer: snapshot bucket %s: %s", c->snapshot_bucket, why);
			snprintf(c->kv_why, sizeof(c->kv_why), "%s", why);
			return -EAGAIN;
		}
		atomic_store(&c->snap, snap);
	}
	/* restored once: a subscription that fails after it is tried again from the same
	 * sequence, never from a state restored twice */
	if (c->restored == -EAGAIN)
		c->restored = c->snap ? ts_snapshots_restore(c->snap, a, ts_real_ns(), &c->replay_after)
				      : -ENOENT;
	if (c->restored == -EAGAIN)
		return -EAGAIN;
	if (c->restored == -ENOENT)
		return tsn_subscribe(n, c->durable, c->filter, sub);
	return tsn_subscribe_after(n, c->durable, c->filter, c->restored ? 0 : c->replay_after, sub);
}

static int run(struct cli *c, struct ts_analyzer *a, struct tsn *n)
{
	struct tsn_sub *sub = NULL;
	uint64_t last_tick = 0;

	for (int tries = 0; !ts_stop_requested() && start(c, a, n, &sub); tries++) {
		atomic_store(&c->heartbeat_ns, ts_real_ns());
		if (tries % 30 == 0 && !atomic_load(&c->standby)) /* the cause is said above */
			ts_warn("analyzer: waiting for JetStream at %s", c->nats.url);
		nats_Sleep(1000);
	}
	if (!sub)
		return 0;
	if (c->partitions > 1)
		ts_info("analyzer: consuming %s as durable %s: partition %d of %d", c->filter,
			c->durable, c->partition, c->partitions);
	else
		ts_info("analyzer: consuming %s as durable %s", c->filter ? c->filter : TSN_SUBJECTS,
			c->durable);
	uint64_t last_check = ts_real_ns();
	while (!ts_stop_requested()) {
		consume(c, a, sub);
		uint64_t now = ts_real_ns();
		if (c->snap)
			snapshot(c, a, now);
		atomic_store(&c->heartbeat_ns, now);
		if (c->lease_kv && now - c->lease_at_ns > (uint64_t)(LEASE_S / 3 * 1e9) &&
		    lease(c, n) == 1) {
			ts_error("analyzer: lost the lease on durable %s: stopping, so that two "
				 "analyzers do not split its messages", c->durable);
			tsn_unsubscribe(sub); /* no last snapshot: the state is the new holder's */
			return 1;
		}
		/* another client may delete the consumer: nothing would arrive again */
		if (now - last_check > 5000000000ull) {
			if (tsn_sub_check(sub) == 1)
				c->consumer_recreated++;
			last_check = now;
		}
		if (now - last_tick > 100000000ull) {
			pthread_mutex_lock(&core_lock);
			ts_analyzer_tick(a, now);
			pthread_mutex_unlock(&core_lock);
			last_tick = now;
		}
		node_health(c, now);
	}
	pthread_mutex_lock(&core_lock);
	ts_analyzer_tick(a, ts_real_ns());
	ts_analyzer_flush_reports(a);
	pthread_mutex_unlock(&core_lock);
	if (c->snap) /* a clean stop resumes exactly here */
		ts_snapshots_tick(c->snap, a, &core_lock, ts_real_ns(), true);
	tsn_unsubscribe(sub);
	if (c->lease_kv) /* a successor need not wait for it to age */
		tsn_kv_release(c->lease_kv, c->durable, c->owner);
	return 0;
}

int main(int argc, char **argv)
{
	struct ts_httpd *http = NULL;
	struct ts_analyzer *a = NULL;
	struct tsn *n = NULL;
	struct cli c = { 0 };
	int rc = 1;

	ts_log_init("analyzer");
	if (parse_args(argc, argv, &c))
		return 2;
	if (c.print_config) {
		ts_params_print(&c.ao.params, stdout);
		return 0;
	}
	if (mkdir(c.ao.report_dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "trainscope-analyzer: cannot create %s: %s\n", c.ao.report_dir,
			strerror(errno));
		return 1;
	}
	ts_signals_init();
	if (open_k8s(&c) || open_otlp(&c) || ts_analyzer_new(&a, &c.ao) || tsn_open(&n, &c.nats))
		goto out;
	c.analyzer = a;
	if (c.metrics_port >= 0) {
		if (ts_httpd_start_metrics_health(&http, c.metrics_addr, (uint16_t)c.metrics_port,
						  render, health, &c))
			goto out;
		ts_info("analyzer: metrics on http://%s:%u/metrics",
			c.metrics_addr ? c.metrics_addr : "127.0.0.1", ts_httpd_port(http));
	}
	ts_info("analyzer: reports in %s", c.ao.report_dir);
	char host[64] = "";
	gethostname(host, sizeof(host) - 1);
	snprintf(c.owner, sizeof(c.owner), "%s pid %d, started %llu", host, (int)getpid(),
		 (unsigned long long)(ts_real_ns() / 1000000));
	rc = run(&c, a, n);
out:
	ts_httpd_stop(http);
	ts_snapshots_close(c.snap);
	tsn_kv_close(c.lease_kv);
	ts_node_sync_free(c.nodes);
	tsn_close(n);
	ts_analyzer_free(a);
	ts_otlp_free(c.otlp);
	ts_k8sw_stop(c.k8s, 20); /* the last statuses, unless the API server keeps silent */
	ts_kube_close(c.kube);
	return rc;
}
