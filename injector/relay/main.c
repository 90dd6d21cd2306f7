// SPDX-License-Identifier: Apache-2.0
/* trainscope-relay: the sidecar that drains rings into NATS JetStream. */
#include "metric.h"
#include "httpd.h"
#include "log.h"
#include "numparse.h"
#include "signals.h"
#include "relay.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD                                                                                \
	"Usage: trainscope-relay [options]\n"                                                \
	"Drains the trainscope rings of a folder (one per training process), folds them\n"    \
	"into per-step records and publishes them to NATS JetStream: each round one\n"        \
	"Bundle of its ranks' batches per job on ts.v1.<namespace>.<job>.pod.<pod>, or\n"     \
	"(--wire rank) each rank's on ts.v1.<namespace>.<job>.rank.<rank>. Runs until\n"      \
	"SIGTERM/SIGINT, then drains everything left and waits for NATS to acknowledge it.\n\n"

struct relay_cli {
	struct relay_opts ro;
	int metrics_port, drain_timeout_ms;
	const char *metrics_addr;
};

static int outbox_mb(void *s, const char *arg, char *err, size_t n)
{
	long mb;

	if (ts_parse_int(arg, 1, 65536, &mb)) {
		snprintf(err, n, "'%s' is not a whole number from 1 to 65536", arg);
		return -EINVAL;
	}
	((struct relay_cli *)s)->ro.nats.outbox_bytes = (size_t)mb << 20;
	return 0;
}

static int wire(void *s, const char *arg, char *err, size_t n)
{
	if (!ts_wire_parse(arg, &((struct relay_cli *)s)->ro.wire))
		return 0;
	snprintf(err, n, "'%s': want pod or rank", arg);
	return -EINVAL;
}

#define F(f) offsetof(struct relay_cli, f)
static const struct ts_opt options[] = {
	{ "ring-dir", 'd', TS_OPT_STR, F(ro.ring_dir), 0, 0, "DIR", "TRAINSCOPE_RING_DIR",
	  "ring folder", NULL },
	{ "metrics-port", 'p', TS_OPT_INT, F(metrics_port), -1, 65535, "N", NULL,
	  "serve /metrics and /healthz (0 = any free port, -1 = off; default -1)", NULL },
	{ "metrics-addr", 0, TS_OPT_STR, F(metrics_addr), 0, 0, "ADDR", NULL,
	  "listen address (default 127.0.0.1)", NULL },
	{ "flush-ms", 0, TS_OPT_INT, F(ro.flush_ms), 1, 60000, "N", NULL,
	  "publish pending steps at least every N ms (100)", NULL },
	{ "wire", 0, TS_OPT_CALL, 0, 0, 0, "pod|rank", "TRAINSCOPE_WIRE", "a Bundle per pod and "
	  "job a round, or a message per rank (default pod)", wire },
	{ "outbox-mb", 0, TS_OPT_CALL, 0, 0, 0, "N", NULL,
	  "bound of data buffered while NATS is away (64)", outbox_mb },
	{ "drain-timeout-ms", 0, TS_OPT_INT, F(drain_timeout_ms), 0, 3600000, "N", NULL,
	  "wait this long for acks at exit (10000)", NULL },
};

static int parse_args(int argc, char **argv, struct relay_cli *c)
{
	const struct ts_metric_table served[] = { relay_metric_table };
	struct ts_metric_list list = { served, sizeof(served) / sizeof(served[0]) };
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(tsn_opt_table, &c->ro.nats),
					       TS_OPTS_GROUP(options, c),
					       TS_OPTS_GROUP(ts_metric_opts, &list) };
	int rc;

	tsn_opts_from_env(&c->ro.nats, "trainscope-relay");
	c->metrics_port = -1;
	c->drain_timeout_ms = 10000;
	if ((rc = ts_opts_parse(groups, 3, "trainscope-relay", HEAD, 0, argc, argv)) <= 0)
		exit(rc ? 2 : 0);
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
