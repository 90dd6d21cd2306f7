// SPDX-License-Identifier: Apache-2.0
/* trainscope-agent: the node's eBPF view of the ranks running on it. */
#include "metric.h"
#include "agent.h"
#include "httpd.h"
#include "log.h"
#include "numparse.h"
#include "signals.h"
#include "tsclock.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HEAD                                                                           \
	"Usage: trainscope-agent [options]\n"                                           \
	"Traces the training ranks of this node with eBPF (scheduling, block I/O, TCP\n"  \
	"retransmits), reads GPU health through NVML or Ascend NPU health through DCMI,\n" \
	"and publishes per-rank host samples to ts.v1.<namespace>.<job>.host.<node>\n"    \
	"every interval. It learns the ranks from the relays' announcements on\n"         \
	"ts.v1.*.*.ctl.<node>. Needs BTF and root, or CAP_BPF, CAP_PERFMON and\n"         \
	"CAP_SYS_PTRACE (and CAP_SYS_RESOURCE on kernels before 5.11).\n"                 \
	"Env TRAINSCOPE_NVML_LIB and TRAINSCOPE_DCMI_LIB name the vendor libraries\n"     \
	"(default libnvidia-ml.so.1; libdcmi.so, then the Ascend driver's);\n"            \
	"TRAINSCOPE_NPU_HOT_C (default 90) is the NPU temperature taken as throttling.\n\n"

struct cli {
	struct agent_opts ao;
	int metrics_port;
	const char *metrics_addr;
	char host[64];
};

#define F(f) offsetof(struct cli, f)
static const struct ts_opt options[] = {
	{ "node", 'n', TS_OPT_STR, F(ao.node), 0, 0, "NAME", "TRAINSCOPE_NODE",
	  "this node as ranks name it (default the host name)", NULL },
	{ "interval-ms", 'i', TS_OPT_INT, F(ao.interval_ms), 1, 600000, "N", NULL,
	  "sample period (default 1000)", NULL },
	{ "metrics-port", 'p', TS_OPT_INT, F(metrics_port), -1, 65535, "N", NULL,
	  "/metrics and /healthz (0 = any free port, -1 = off; default 9101)", NULL },
	{ "metrics-addr", 0, TS_OPT_STR, F(metrics_addr), 0, 0, "A", NULL,
	  "listen address (default 127.0.0.1)", NULL },
	{ "host-cgroup", 0, TS_OPT_STR, F(ao.host_cgroup), 0, 0, "DIR", "TRAINSCOPE_HOST_CGROUP",
	  "the host's /sys/fs/cgroup as mounted in this container: ranks' cgroups are found "
	  "there (default: the first cgroup2 mount seen)", NULL },
	{ "pods-only", 0, TS_OPT_TRUE, F(ao.pods_only), 0, 0, NULL, NULL, "trace an announced "
	  "process only inside the cgroup of the pod that announced it (its relay's "
	  "TRAINSCOPE_POD_UID): the default in a Kubernetes pod, where anyone who can publish "
	  "could otherwise name any host process", NULL },
	{ "trust-host-processes", 0, TS_OPT_FALSE, F(ao.pods_only), 0, 0, NULL, NULL, "also "
	  "trace processes outside pods (trainscope run on a host; the default outside "
	  "Kubernetes). Never pid 1 or the agent itself.", NULL },
	{ "sysfs", 0, TS_OPT_STR, F(ao.sysfs), 0, 0, "DIR", NULL, "the host's /sys as mounted "
	  "here (default /sys): the error, drop and link-down counters of the node's Ethernet "
	  "and InfiniBand ports are read there", NULL },
};

static int parse_args(int argc, char **argv, struct cli *c)
{
	const struct ts_metric_table served[] = { agent_metric_table };
	struct ts_metric_list list = { served, sizeof(served) / sizeof(served[0]) };
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(tsn_opt_table, &c->ao.nats),
					       TS_OPTS_GROUP(options, c),
					       TS_OPTS_GROUP(ts_metric_opts, &list) };
	int rc;

	gethostname(c->host, sizeof(c->host) - 1);
	c->ao.node = c->host;
	tsn_opts_from_env(&c->ao.nats, "trainscope-agent");
	c->metrics_port = 9101;
	c->ao.interval_ms = 1000;
	c->ao.pods_only = getenv("KUBERNETES_SERVICE_HOST") != NULL;
	if ((rc = ts_opts_parse(groups, 3, "trainscope-agent", HEAD, 0, argc, argv)) <= 0)
		exit(rc ? 2 : 0);
	tsn_opts_finish(&c->ao.nats);
	c->ao.nats.publish_only = tsn_opts_authenticated(&c->ao.nats);
	return 0;
}

static void sleep_until(uint64_t deadline_ns)
{
	uint64_t now = ts_mono_ns();

	if (deadline_ns <= now)
		return;
	struct timespec ts = { (time_t)((deadline_ns - now) / 1000000000ull),
			       (long)((deadline_ns - now) % 1000000000ull) };
	nanosleep(&ts, NULL); /* the sample period itself; a signal cuts it short */
}

int main(int argc, char **argv)
{
	struct ts_httpd *http = NULL;
	struct agent *a = NULL;
	struct ts_buf desc = { 0 };
	struct cli c = { 0 };
	char err[512] = "";
	uint64_t next;

	ts_log_init("agent");
	if (parse_args(argc, argv, &c))
		return 2;
	if (agent_new(&a, &c.ao, err, sizeof(err))) {
		fprintf(stderr, "trainscope-agent: %s\n", err);
		return 1;
	}
	agent_describe(a, &desc);
	for (char *line = strtok(desc.data, "\n"); line; line = strtok(NULL, "\n"))
		ts_info("agent: %s", line);
	ts_buf_free(&desc);
	if (c.metrics_port >= 0) {
		if (ts_httpd_start_metrics(&http, c.metrics_addr, (uint16_t)c.metrics_port,
					   agent_render_metrics, a)) {
			agent_free(a);
			return 1;
		}
		ts_info("agent: metrics on http://%s:%u/metrics",
			c.metrics_addr ? c.metrics_addr : "127.0.0.1", ts_httpd_port(http));
	}
	ts_signals_init();
	next = ts_mono_ns();
	while (!ts_stop_requested()) {
		agent_tick(a);
		next += (uint64_t)c.ao.interval_ms * 1000000ull;
		sleep_until(next);
	}
	ts_httpd_stop(http);
	agent_free(a);
	return 0;
}
