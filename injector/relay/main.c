// SPDX-License-Identifier: Apache-2.0
/* trainscope-relay: the sidecar that drains rings into NATS JetStream. */
#include "httpd.h"
#include "log.h"
#include "numparse.h"
#include "signals.h"
#include "relay.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: trainscope-relay [options]\n"
		"Drains the trainscope rings of a folder (one per training process), folds them\n"
		"into per-step records and publishes them to NATS JetStream: each round one\n"
		"Bundle of its ranks' batches per job on ts.v1.<namespace>.<job>.pod.<pod>, or\n"
		"(--wire rank) each rank's on ts.v1.<namespace>.<job>.rank.<rank>. Runs until\n"
		"SIGTERM/SIGINT, then drains everything left and waits for NATS to acknowledge it.\n\n"
		"  -d, --ring-dir DIR       ring folder (env TRAINSCOPE_RING_DIR)\n"
		TSN_HELP
		"  -p, --metrics-port N     serve /metrics and /healthz (0 = any free port,\n"
		"                           -1 = off; default -1)\n"
		"      --metrics-addr ADDR  listen address (default 127.0.0.1)\n"
		"      --flush-ms N         publish pending steps at least every N ms (100)\n"
		"      --wire pod|rank      a Bundle per pod and job a round, or a message per\n"
		"                           rank (env TRAINSCOPE_WIRE; default pod)\n"
		"      --outbox-mb N        bound of data buffered while NATS is away (64)\n"
		"      --drain-timeout-ms N wait this long for acks at exit (10000)\n"
		"  -h, --help\n");
}

/* Codes of the long-only options, after TSN_LONGOPTS'. */
enum relay_opt {
	OPT_METRICS_ADDR = TSN_OPT_END,
	OPT_FLUSH_MS,
	OPT_OUTBOX_MB,
	OPT_DRAIN_TIMEOUT_MS,
	OPT_WIRE,
};

struct relay_cli {
	struct relay_opts ro;
	int metrics_port, drain_timeout_ms;
	const char *metrics_addr;
};

static int parse_args(int argc, char **argv, struct relay_cli *c)
{
	static const struct option longopts[] = {
		{ "ring-dir", required_argument, NULL, 'd' },
		TSN_LONGOPTS,
		{ "metrics-port", required_argument, NULL, 'p' },
		{ "metrics-addr", required_argument, NULL, OPT_METRICS_ADDR },
		{ "flush-ms", required_argument, NULL, OPT_FLUSH_MS },
		{ "outbox-mb", required_argument, NULL, OPT_OUTBOX_MB },
		{ "drain-timeout-ms", required_argument, NULL, OPT_DRAIN_TIMEOUT_MS },
		{ "wire", required_argument, NULL, OPT_WIRE },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *wire = getenv("TRAINSCOPE_WIRE");
	int ch;

	c->ro.ring_dir = getenv("TRAINSCOPE_RING_DIR");
	tsn_opts_from_env(&c->ro.nats, "trainscope-relay");
	c->metrics_port = -1;
	c->drain_timeout_ms = 10000;
	while ((ch = getopt_long(argc, argv, "d:s:p:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd': c->ro.ring_dir = optarg; break;
		case 'p': c->metrics_port = (int)ts_opt_int("--metrics-port", optarg, -1, 65535); break;
		case OPT_METRICS_ADDR: c->metrics_addr = optarg; break;
		case OPT_FLUSH_MS:
			c->ro.flush_ms = (int)ts_opt_int("--flush-ms", optarg, 1, 60000);
			break;
		case OPT_OUTBOX_MB:
			c->ro.nats.outbox_bytes = (size_t)ts_opt_int("--outbox-mb", optarg, 1, 65536) << 20;
			break;
		case OPT_DRAIN_TIMEOUT_MS:
			c->drain_timeout_ms = (int)ts_opt_int("--drain-timeout-ms", optarg, 0, 3600000);
			break;
		case OPT_WIRE: wire = optarg; break;
		case 'h': usage(stdout); exit(0);
		default:
			if (tsn_parse_option(&c->ro.nats, ch, optarg))
				break;
			usage(stderr);
			return -1;
		}
	}
	if (ts_wire_parse(wire, &c->ro.wire)) {
		fprintf(stderr, "trainscope-relay: --wire (TRAINSCOPE_WIRE) %s: want pod or rank\n",
			wire);
		return -1;
	}
	if (!c->ro.ring_dir || !*c->ro.ring_dir) {
		fprintf(stderr, "trainscope-relay: no ring folder: pass --ring-dir or set "
				"TRAINSCOPE_RING_DIR\n");
		return -1;
	}
	tsn_opts_finish(&c->ro.nats);
	c->ro.nats.publish_only = tsn_opts_authenticated(&c->ro.nats);
	return 0;
}

static void render(void *ctx, struct ts_buf *out)
{
	relay_render_metrics(ctx, out);
}

int main(int argc, char **argv)
{
	struct ts_httpd *http = NULL;
	struct relay_cli cli = { 0 };
	struct relay *r = NULL;
	int err;

	ts_log_init("relay");
	if (parse_args(argc, argv, &cli))
		return 2;
	ts_signals_init();
	err = relay_new(&r, &cli.ro);
	if (err)
		return 1;
	if (cli.metrics_port >= 0) {
		err = ts_httpd_start_metrics(&http, cli.metrics_addr, (uint16_t)cli.metrics_port,
					     render, r);
		if (err) {
			relay_free(r);
			return 1;
		}
		ts_info("relay: metrics on http://%s:%u/metrics",
			cli.metrics_addr ? cli.metrics_addr : "127.0.0.1", ts_httpd_port(http));
	}
	ts_info("relay: watching %s, publishing to %s", cli.ro.ring_dir, cli.ro.nats.url);
	while (!ts_stop_requested())
		relay_poll(r, 20);
	err = relay_finish(r, cli.drain_timeout_ms);
	ts_httpd_stop(http);
	relay_free(r);
	return err ? 1 : 0;
}
