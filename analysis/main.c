/* trainscope-analyzer: consumes the job's batches from JetStream and names slow ranks. */
#include "analyzer.h"
#include "httpd.h"
#include "log.h"
#include "natsw.h"
#include "tsclock.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: trainscope-analyzer [options]\n"
		"Reads trainscope batches from the NATS JetStream stream TRAINSCOPE with a durable\n"
		"consumer (a restart loses nothing), runs fail-slow, hang and slow-rank detection\n"
		"per job, and writes each job's report as <report-dir>/<namespace>_<job>.json in\n"
		"the shape of the SlowNodeReport status, with sysTrace's result fields.\n\n"
		"  -s, --nats URL         NATS server (env TRAINSCOPE_NATS_URL,\n"
		"                         default nats://127.0.0.1:4222)\n"
		"      --nats-creds FILE  --nats-token TOKEN  --nats-ca FILE\n"
		"  -c, --config FILE      detection parameters (YAML; see --print-config);\n"
		"                         TRAINSCOPE_ANALYZER_<KEY> overrides, e.g.\n"
		"                         TRAINSCOPE_ANALYZER_SPACE_EPS=0.1\n"
		"  -r, --report-dir DIR   where reports go (default ./trainscope-reports)\n"
		"      --durable NAME     JetStream durable consumer (default trainscope-analyzer)\n"
		"      --filter SUBJECT   subjects to read (default ts.v1.>)\n"
		"  -p, --metrics-port N   /metrics and /healthz (0 = any free port, -1 = off;\n"
		"                         default 9103)\n"
		"      --metrics-addr A   listen address (default 127.0.0.1)\n"
		"      --max-msg-bytes N  refuse larger messages (default 4194304)\n"
		"  -q, --quiet            do not print reports when a verdict changes\n"
		"      --print-config     print the effective parameters and exit\n"
		"  -h, --help\n");
}

struct cli {
	struct ts_analyzer_opts ao;
	struct tsn_opts nats;
	const char *config, *durable, *filter, *metrics_addr;
	int metrics_port;
	bool print_config;
};

static int parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option longopts[] = {
		{ "nats", required_argument, NULL, 's' },
		{ "nats-creds", required_argument, NULL, 'C' },
		{ "nats-token", required_argument, NULL, 'T' },
		{ "nats-ca", required_argument, NULL, 'A' },
		{ "config", required_argument, NULL, 'c' },
		{ "report-dir", required_argument, NULL, 'r' },
		{ "durable", required_argument, NULL, 'D' },
		{ "filter", required_argument, NULL, 'F' },
		{ "metrics-port", required_argument, NULL, 'p' },
		{ "metrics-addr", required_argument, NULL, 'a' },
		{ "max-msg-bytes", required_argument, NULL, 'M' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "print-config", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	char err[512];
	int ch;

	c->nats.url = getenv("TRAINSCOPE_NATS_URL");
	c->nats.token = getenv("TRAINSCOPE_NATS_TOKEN");
	c->nats.name = "trainscope-analyzer";
	c->durable = "trainscope-analyzer";
	c->ao.report_dir = "trainscope-reports";
	c->ao.print_changes = 1;
	c->metrics_port = 9103;
	while ((ch = getopt_long(argc, argv, "s:c:r:p:qh", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': c->nats.url = optarg; break;
		case 'C': c->nats.creds_file = optarg; break;
		case 'T': c->nats.token = optarg; break;
		case 'A': c->nats.tls_ca = optarg; break;
		case 'c': c->config = optarg; break;
		case 'r': c->ao.report_dir = optarg; break;
		case 'D': c->durable = optarg; break;
		case 'F': c->filter = optarg; break;
		case 'p': c->metrics_port = atoi(optarg); break;
		case 'a': c->metrics_addr = optarg; break;
		case 'M': c->ao.max_msg_bytes = strtoul(optarg, NULL, 10); break;
		case 'q': c->ao.print_changes = 0; break;
		case 'P': c->print_config = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (!c->nats.url || !*c->nats.url)
		c->nats.url = "nats://127.0.0.1:4222";
	ts_params_defaults(&c->ao.params);
	if (ts_params_load(&c->ao.params, c->config, NULL, err, sizeof(err))) {
		fprintf(stderr, "trainscope-analyzer: bad configuration: %s\n", err);
		return -1;
	}
	return 0;
}

/* The HTTP thread renders metrics while the main thread ingests: one lock between them. */
static pthread_mutex_t core_lock = PTHREAD_MUTEX_INITIALIZER;

static void render(void *ctx, struct ts_buf *out)
{
	pthread_mutex_lock(&core_lock);
	ts_analyzer_render_metrics(ctx, out);
	pthread_mutex_unlock(&core_lock);
}

static void consume(struct ts_analyzer *a, struct tsn_sub *sub)
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
		natsMsg_Ack(m, NULL);
	}
	pthread_mutex_unlock(&core_lock);
	natsMsgList_Destroy(&list);
}

static int run(struct cli *c, struct ts_analyzer *a, struct tsn *n)
{
	struct tsn_sub *sub = NULL;
	uint64_t last_tick = 0;

	while (!stop_requested && tsn_subscribe(n, c->durable, c->filter, &sub)) {
		ts_warn("analyzer: waiting for JetStream at %s", c->nats.url);
		nats_Sleep(1000);
	}
	if (!sub)
		return 0;
	ts_info("analyzer: consuming %s as durable %s", c->filter ? c->filter : TSN_SUBJECTS,
		c->durable);
	while (!stop_requested) {
		consume(a, sub);
		uint64_t now = ts_real_ns();
		if (now - last_tick > 100000000ull) {
			pthread_mutex_lock(&core_lock);
			ts_analyzer_tick(a, now);
			pthread_mutex_unlock(&core_lock);
			last_tick = now;
		}
	}
	pthread_mutex_lock(&core_lock);
	ts_analyzer_tick(a, ts_real_ns());
	ts_analyzer_flush_reports(a);
	pthread_mutex_unlock(&core_lock);
	tsn_unsubscribe(sub);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
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
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (ts_analyzer_new(&a, &c.ao) || tsn_open(&n, &c.nats))
		goto out;
	if (c.metrics_port >= 0) {
		if (ts_httpd_start_metrics(&http, c.metrics_addr, (uint16_t)c.metrics_port, render, a))
			goto out;
		ts_info("analyzer: metrics on http://%s:%u/metrics",
			c.metrics_addr ? c.metrics_addr : "127.0.0.1", ts_httpd_port(http));
	}
	ts_info("analyzer: reports in %s", c.ao.report_dir);
	rc = run(&c, a, n);
out:
	ts_httpd_stop(http);
	tsn_close(n);
	ts_analyzer_free(a);
	return rc;
}
