// SPDX-License-Identifier: Apache-2.0
/* trainscope-agent: the node's eBPF view of the ranks running on it. */
#include "agent.h"
#include "httpd.h"
#include "log.h"
#include "numparse.h"
#include "signals.h"
#include "tsclock.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: trainscope-agent [options]\n"
		"Traces the training ranks of this node with eBPF (scheduling, block I/O, TCP\n"
		"retransmits), reads GPU health through NVML or Ascend NPU health through DCMI,\n"
		"and publishes per-rank host samples to ts.v1.<namespace>.<job>.host.<node>\n"
		"every interval. It learns the ranks from the relays' announcements on\n"
		"ts.v1.*.*.ctl.<node>. Needs BTF and root, or CAP_BPF, CAP_PERFMON and\n"
		"CAP_SYS_PTRACE (and CAP_SYS_RESOURCE on kernels before 5.11).\n"
		"Env TRAINSCOPE_NVML_LIB and TRAINSCOPE_DCMI_LIB name the vendor libraries\n"
		"(default libnvidia-ml.so.1; libdcmi.so, then the Ascend driver's);\n"
		"TRAINSCOPE_NPU_HOT_C (default 90) is the NPU temperature taken as throttling.\n\n"
		TSN_HELP
		"  -n, --node NAME        this node as ranks name it (env TRAINSCOPE_NODE,\n"
		"                         default the host name)\n"
		"  -i, --interval-ms N    sample period (default 1000)\n"
		"  -p, --metrics-port N   /metrics and /healthz (0 = any free port, -1 = off;\n"
		"                         default 9101)\n"
		"      --metrics-addr A   listen address (default 127.0.0.1)\n"
		"      --host-cgroup DIR  the host's /sys/fs/cgroup as mounted in this container\n"
		"                         (env TRAINSCOPE_HOST_CGROUP): ranks' cgroups are found\n"
		"                         there (default: the first cgroup2 mount seen)\n"
		"      --pods-only        trace an announced process only inside the cgroup of the\n"
		"                         pod that announced it (its relay's TRAINSCOPE_POD_UID):\n"
		"                         the default in a Kubernetes pod, where anyone who can\n"
		"                         publish could otherwise name any host process\n"
		"      --trust-host-processes  also trace processes outside pods (trainscope run\n"
		"                         on a host; the default outside Kubernetes). Never pid 1\n"
		"                         or the agent itself.\n"
		"      --sysfs DIR        the host's /sys as mounted here (default /sys): the\n"
		"                         error, drop and link-down counters of the node's\n"
		"                         Ethernet and InfiniBand ports are read there\n"
		"  -h, --help\n");
}

/* Codes of the long-only options, after TSN_LONGOPTS'. */
enum agent_opt {
	OPT_METRICS_ADDR = TSN_OPT_END,
	OPT_HOST_CGROUP,
	OPT_PODS_ONLY,
	OPT_TRUST_HOST_PROCESSES,
	OPT_SYSFS,
};

struct cli {
	struct agent_opts ao;
	int metrics_port;
	const char *metrics_addr;
	char host[64];
};

static int parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option longopts[] = {
		TSN_LONGOPTS,
		{ "node", required_argument, NULL, 'n' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "metrics-port", required_argument, NULL, 'p' },
		{ "metrics-addr", required_argument, NULL, OPT_METRICS_ADDR },
		{ "host-cgroup", required_argument, NULL, OPT_HOST_CGROUP },
		{ "pods-only", no_argument, NULL, OPT_PODS_ONLY },
		{ "trust-host-processes", no_argument, NULL, OPT_TRUST_HOST_PROCESSES },
		{ "sysfs", required_argument, NULL, OPT_SYSFS },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int ch;

	gethostname(c->host, sizeof(c->host) - 1);
	c->ao.node = getenv("TRAINSCOPE_NODE") ? getenv("TRAINSCOPE_NODE") : c->host;
	tsn_opts_from_env(&c->ao.nats, "trainscope-agent");
	c->metrics_port = 9101;
	c->ao.interval_ms = 1000;
	c->ao.host_cgroup = getenv("TRAINSCOPE_HOST_CGROUP");
	c->ao.pods_only = getenv("KUBERNETES_SERVICE_HOST") != NULL;
	while ((ch = getopt_long(argc, argv, "s:n:i:p:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n': c->ao.node = optarg; break;
		case 'i': c->ao.interval_ms = (int)ts_opt_int("--interval-ms", optarg, 1, 600000); break;
		case 'p': c->metrics_port = (int)ts_opt_int("--metrics-port", optarg, -1, 65535); break;
		case OPT_METRICS_ADDR: c->metrics_addr = optarg; break;
		case OPT_HOST_CGROUP: c->ao.host_cgroup = optarg; break;
		case OPT_PODS_ONLY: c->ao.pods_only = true; break;
		case OPT_TRUST_HOST_PROCESSES: c->ao.pods_only = false; break;
		case OPT_SYSFS: c->ao.sysfs = optarg; break;
		case 'h': usage(stdout); exit(0);
		default:
			if (tsn_parse_option(&c->ao.nats, ch, optarg))
				break;
			usage(stderr);
			return -1;
		}
	}
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
