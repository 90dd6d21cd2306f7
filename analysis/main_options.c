// SPDX-License-Identifier: Apache-2.0
/* The analyzer's options: the usage text, the command line and TRAINSCOPE_ANALYZER_*
 * variables read into struct cli, and the partition of the stream it reads. */
#include "main_impl.h"
#include "analysis/sinks/metrics.h"
#include "numparse.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEAD                                                                                \
	"Usage: trainscope-analyzer [options]\n"                                             \
	"Reads trainscope batches from the NATS JetStream stream TRAINSCOPE with a durable\n"  \
	"consumer (a restart loses nothing), runs fail-slow, hang and slow-rank detection\n"   \
	"per job, and writes each job's report as <report-dir>/<namespace>_<job>.json (names\n" \
	"made safe for a file name) in the shape of the SlowNodeReport status, with\n"         \
	"sysTrace's result fields. Its state is saved in JetStream (--snapshot-s): killed\n"   \
	"and started again, it goes on where it was.\n\n"

static int quiet(void *s, const char *arg, char *err, size_t n)
{
	(void)arg, (void)err, (void)n;
	((struct cli *)s)->ao.print_changes = 0;
	return 0;
}

static int taint(void *s, const char *arg, char *err, size_t n)
{
	struct cli *c = s;

	(void)arg, (void)err, (void)n;
	c->np.taint = c->np.conditions = true;
	return 0;
}

#define F(f) offsetof(struct cli, f)
#define STR(f) TS_OPT_STR, F(f), 0, 0
#define INT(f, lo, hi) TS_OPT_INT, F(f), lo, hi
#define ON(f) TS_OPT_TRUE, F(f), 0, 0, NULL
/* Every option of the analyzer but NATS's (tsn_opt_table), in --help's order. */
static const struct ts_opt options[] = {
	{ "config", 'c', STR(config), "FILE", NULL, "detection parameters (YAML; see "
	  "--print-config); TRAINSCOPE_ANALYZER_<KEY> overrides, "
	  "e.g. TRAINSCOPE_ANALYZER_SPACE_EPS=0.1", NULL },
	{ "report-dir", 'r', STR(ao.report_dir), "DIR", NULL,
	  "where reports go (default ./trainscope-reports)", NULL },
	{ "durable", 0, STR(durable), "NAME", NULL,
	  "JetStream durable consumer (default trainscope-analyzer)", NULL },
	{ "snapshot-s", 0, INT(snapshot_s, 0, 86400), "N", NULL, "save what changed in every "
	  "job's state every N s in a JetStream key-value bucket and acknowledge messages only "
	  "then, so a restart resumes from it with the same verdicts (default 5, 0 = off: a "
	  "restart then starts every job afresh)", NULL },
	{ "snapshot-bucket", 0, STR(snapshot_bucket), "NAME", NULL, "the bucket (default "
	  "trainscope-analyzer; the key is the durable consumer's name)", NULL },
	{ "filter", 0, STR(filter), "SUBJECT", NULL, "subjects to read (default ts.v1.>)", NULL },
	{ "partitions", 0, STR(parts_arg), "N", "TRAINSCOPE_ANALYZER_PARTITIONS", "share the "
	  "jobs among N analyzers: the stream's subject transform gives each job's subjects a "
	  "partition of its namespace and job (nats-server 2.10 or later); this analyzer reads "
	  "its own with durable consumer trainscope-analyzer-p<K>. Not given: one analyzer "
	  "reads every job, and a stream that others partitioned is left so; 1: the transform "
	  "removed", NULL },
	{ "partition", 0, STR(part_arg), "K|auto", "TRAINSCOPE_ANALYZER_PARTITION", "the "
	  "partition read, 0 to N-1; auto (the default): the ordinal ending the pod's name (a "
	  "StatefulSet's, POD_NAME or HOSTNAME)", NULL },
	{ NULL, 0, TS_OPT_NOTE, 0, 0, 0, NULL, NULL, "The stream: TRAINSCOPE_STREAM_REPLICAS "
	  "(1), _MAX_AGE (24h), _MAX_BYTES (1G) and _DISCARD (old: drop the oldest when full; "
	  "new: refuse). The analyzer makes it and keeps it to these (and its partitions) at "
	  "each start.", NULL },
	{ "metrics-port", 'p', INT(metrics_port, -1, 65535), "N", NULL, "/metrics, /healthz "
	  "(alive) and /readyz (consuming, or what it waits on) (0 = any free port, -1 = off; "
	  "default 9103)", NULL },
	{ "metrics-addr", 0, STR(metrics_addr), "A", NULL, "listen address (default 127.0.0.1)",
	  NULL },
	{ "stall-s", 0, INT(stall_s, 1, 86400), "N", NULL, "/healthz answers 503 once the "
	  "consume loop has not turned for N s (default 60)", NULL },
	{ "max-msg-bytes", 0, TS_OPT_SIZE, F(ao.max_msg_bytes), 1, 1l << 30, "N", NULL,
	  "refuse larger messages (default 4194304)", NULL },
	{ "kubeconfig", 0, STR(kubeconfig), "FILE", NULL, "Kubernetes mode: keep a "
	  "SlowNodeReport per job and raise Events on slow ranks' pods, through this "
	  "kubeconfig", NULL },
	{ "in-cluster", 0, ON(in_cluster), NULL, "Kubernetes mode with the pod's service account",
	  NULL },
	{ "k8s-interval-s", 0, INT(k8s_interval_s, 1, 86400), "N", NULL,
	  "rewrite an unchanged report at most every N s (10)", NULL },
	{ "k8s-stop-s", 0, INT(k8s_stop_s, 0, 3600), "N", NULL, "on SIGTERM, give the API "
	  "server up to N s more to take the last statuses; keep it under the pod's "
	  "terminationGracePeriodSeconds (default 20)", NULL },
	{ "node-health-s", 0, INT(node_health_s, 0, 86400), "N", NULL, "every N s (30; 0 = off) "
	  "add up what the jobs' verdicts say about each node and device, across partitions "
	  "(in the --snapshot-bucket): degraded nodes in /metrics, and in Kubernetes mode a "
	  "SlowNode per node with findings (docs/report.md, \"Node health\")", NULL },
	{ "node-conditions", 0, ON(np.conditions), NULL, "also set a degraded node's "
	  "TrainscopeDegraded condition and raise Events on it (needs patch on nodes/status)",
	  NULL },
	{ "node-taint", 0, TS_OPT_CALL, 0, 0, 0, NULL, NULL, "and taint it "
	  "trainscope.dev/degraded=<cause> (needs patch on nodes), removed when it is clean "
	  "again", taint },
	{ "node-taint-dry-run", 0, ON(np.dry_run), NULL, "say what would be tainted, change no "
	  "node", NULL },
	{ "node-taint-effect", 0, STR(np.effect), "E", NULL,
	  "PreferNoSchedule (default) or NoSchedule", NULL },
	{ "node-taint-max-share", 0, TS_OPT_DOUBLE, F(np.max_share), 0, 1, "X", NULL,
	  "never more than this share of the (GPU) nodes tainted at once (0.1)", NULL },
	{ "node-taint-causes", 0, STR(np.causes), "LIST", NULL,
	  "causes that may taint, comma-separated (Device)", NULL },
	{ "otlp-endpoint", 0, STR(otlp_endpoint), "URL", NULL, "send the job's timeline as "
	  "OTLP/HTTP traces, e.g. http://jaeger:4318 (/v1/traces is added). The standard "
	  "OTEL_EXPORTER_OTLP_[TRACES_]{ENDPOINT,HEADERS,CERTIFICATE,CLIENT_CERTIFICATE,"
	  "CLIENT_KEY,TIMEOUT,COMPRESSION,PROTOCOL}, OTEL_SERVICE_NAME, "
	  "OTEL_RESOURCE_ATTRIBUTES and OTEL_SDK_DISABLED are honoured; a trace holds "
	  "traces.window_steps steps, sampled for large jobs (--config)", NULL },
	{ "quiet", 'q', TS_OPT_CALL, 0, 0, 0, NULL, NULL,
	  "do not print reports when a verdict changes", quiet },
	{ "print-config", 0, ON(print_config), NULL, "print the effective parameters and exit",
	  NULL },
	{ "config-schema", 0, ON(config_schema), NULL, "print the JSON Schema of --config's keys "
	  "and exit (the chart's values.schema.json holds it)", NULL },
};

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

/* What the analyzer runs with when nothing says otherwise. */
static void analyzer_defaults(struct cli *c)
{
	tsn_opts_from_env(&c->nats, "trainscope-analyzer");
	c->durable = "trainscope-analyzer";
	c->ao.report_dir = "trainscope-reports";
	c->ao.print_changes = 1;
	c->metrics_port = 9103;
	c->stall_s = 60;
	c->k8s_stop_s = 20;
	c->snapshot_s = 5;
	c->restored = -EAGAIN;
	c->snapshot_bucket = "trainscope-analyzer";
	c->node_health_s = 30;
	ts_node_policy_default(&c->np);
	c->np.conditions = false;
}

int analyzer_parse_args(int argc, char **argv, struct cli *c)
{
	const struct ts_metric_table served[] = { ts_analyzer_metrics, ts_job_metrics,
						  analyzer_service_metrics, ts_node_sync_metrics };
	struct ts_metric_list list = { served, sizeof(served) / sizeof(served[0]) };
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(tsn_opt_table, &c->nats),
					       TS_OPTS_GROUP(options, c),
					       TS_OPTS_GROUP(ts_metric_opts, &list) };
	char err[512];
	int rc;

	analyzer_defaults(c);
	if ((rc = ts_opts_parse(groups, 3, "trainscope-analyzer", HEAD, 0, argc, argv)) <= 0)
		exit(rc ? 2 : 0);
	if (rc < argc) {
		fprintf(stderr, "trainscope-analyzer: %s: no operand is taken\n", argv[rc]);
		return -1;
	}
	if (ts_node_policy_check(&c->np, err, sizeof(err)) ||
	    partitioning(c, c->parts_arg, c->part_arg, err, sizeof(err))) {
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
