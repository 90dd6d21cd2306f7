// SPDX-License-Identifier: Apache-2.0
/* The analyzer's options: the usage text, the command line and TRAINSCOPE_ANALYZER_*
 * variables read into struct cli, and the partition of the stream it reads. */
#include "main_impl.h"
#include "numparse.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
		"      --snapshot-s N     save what changed in every job's state every N s in a\n"
		"                         JetStream key-value bucket and acknowledge messages only\n"
		"                         then, so a restart resumes from it with the same verdicts\n"
		"                         (default 5, 0 = off: a restart then starts every job afresh)\n"
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
		"  -p, --metrics-port N   /metrics, /healthz (alive) and /readyz (consuming, or\n"
		"                         what it waits on) (0 = any free port, -1 = off;\n"
		"                         default 9103)\n"
		"      --metrics-addr A   listen address (default 127.0.0.1)\n"
		"      --stall-s N        /healthz answers 503 once the consume loop has not\n"
		"                         turned for N s (default 60)\n"
		"      --max-msg-bytes N  refuse larger messages (default 4194304)\n"
		"      --kubeconfig FILE  Kubernetes mode: keep a SlowNodeReport per job and raise\n"
		"                         Events on slow ranks' pods, through this kubeconfig\n"
		"      --in-cluster       Kubernetes mode with the pod's service account\n"
		"      --k8s-interval-s N rewrite an unchanged report at most every N s (10)\n"
		"      --node-health-s N  every N s (30; 0 = off) add up what the jobs' verdicts\n"
		"                         say about each node and device, across partitions (in\n"
		"                         the --snapshot-bucket): degraded nodes in /metrics, and\n"
		"                         in Kubernetes mode a SlowNode per node with findings\n"
		"                         (docs/report.md, \"Node health\")\n"
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
		"      --config-schema    print the JSON Schema of --config's keys and exit (the\n"
		"                         chart's values.schema.json holds it)\n"
		"  -h, --help\n");
}

/* Codes of the long-only options, after TSN_LONGOPTS'. */
enum analyzer_opt {
	OPT_DURABLE = TSN_OPT_END,
	OPT_FILTER,
	OPT_METRICS_ADDR,
	OPT_MAX_MSG_BYTES,
	OPT_PRINT_CONFIG,
	OPT_CONFIG_SCHEMA,
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

int analyzer_parse_args(int argc, char **argv, struct cli *c)
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
		{ "config-schema", no_argument, NULL, OPT_CONFIG_SCHEMA },
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
		case OPT_CONFIG_SCHEMA: c->config_schema = true; break;
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
