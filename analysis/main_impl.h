// SPDX-License-Identifier: Apache-2.0
/* The analyzer daemon's insides, for the files that make up its program (no other file
 * includes this):
 *   main.c         the consume loop: ingest and ticks, a clean stop
 *   main_keeper.c  the keeper thread: the lease on the durable, snapshots, node health
 *   main_options.c its options, the partition it reads, and the usage text
 *   main_http.c    /metrics, /healthz and /readyz, answered from the HTTP thread
 *   main_lease.c   the lease's holder, and whether Kubernetes shows its pod gone
 *   main_export.c  where reports go beside their files: Kubernetes (node health with it)
 *                  and OTLP traces */
#ifndef TS_MAIN_IMPL_H
#define TS_MAIN_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "analysis/ingest/analyzer.h"
#include "buf.h"
#include "metric.h"
#include "analysis/sinks/k8s_nodes.h"
#include "analysis/sinks/k8s_writer.h"
#include "kube.h"
#include "natskv.h"
#include "natsw.h"
#include "analysis/sinks/node_sync.h"
#include "analysis/sinks/otlp.h"
#include "analysis/state/snapshot.h"

struct cli {
	struct ts_analyzer_opts ao;
	struct tsn_opts nats;
	const char *config, *durable, *filter, *metrics_addr, *snapshot_bucket;
	int metrics_port, k8s_interval_s, k8s_stop_s, snapshot_s;
	int partitions, partition; /* this analyzer reads partition of partitions */
	char durable_buf[96], filter_buf[64];
	struct ts_snapshots *_Atomic snap; /* set once JetStream answers; read by /healthz */
	int restored;                      /* the restore's result; -EAGAIN: not done yet */
	uint64_t replay_after;             /* the stream sequence a restored state is as of */
	char kv_why[256];                  /* the bucket's last refusal, said once */
	bool print_config, config_schema, in_cluster;
	const char *parts_arg, *part_arg; /* --partitions, --partition as given */
	const char *kubeconfig, *otlp_endpoint;
	struct ts_kube *kube;
	struct ts_kube *kube_lease;  /* the main thread's, for the lease's holder */
	struct ts_k8sw *k8s;   /* the Kubernetes writer's thread */
	struct ts_node_sync *nodes;  /* node health; NULL: off */
	struct ts_node_policy np;
	int node_health_s;
	struct ts_otlp *otlp;
	uint64_t exported[64]; /* slow-rank spans sent: hashes of "<ns>/<job>/<rank>/<since>/<trace>" */
	int nexported, exported_next; /* entries held; the slot the next replaces */
	struct ts_analyzer *analyzer;
	/* the HTTP thread renders metrics while the main thread ingests: one lock between them */
	pthread_mutex_t core_lock;
	_Atomic uint64_t consumer_recreated; /* the durable consumer vanished and was made
					      * again; read by /metrics */
	int stall_s;                 /* /healthz fails when the consume loop stops this long */
	_Atomic uint64_t heartbeat_ns; /* the consume loop's last turn */
	/* the lease on the durable (natskv.h): one analyzer consumes it, another waits */
	struct tsn_kv *lease_kv;     /* start()'s, then the keeper's alone */
	char owner[160];
	_Atomic uint64_t lease_at_ns; /* when it was last taken or renewed (the keeper's) */
	pthread_t keeper;            /* main_keeper.c, while keeper_running */
	bool keeper_running;
	bool lease_stale;            /* the consume loop's: it waits for a renewal */
	_Atomic bool keeper_stop, lease_lost;
	_Atomic bool standby;
	_Atomic int phase;           /* enum analyzer_phase: what /readyz says it waits on */
	struct tsn *_Atomic nats_conn; /* for /readyz: whether the server is connected */
	pthread_mutex_t standby_lock; /* standby_why: /healthz may still read the last one */
	char standby_why[512];       /* read by /healthz while standby */
};

/* Where the analyzer is, for /readyz: ready once it consumes. */
enum analyzer_phase { PHASE_STARTING, PHASE_RESTORING, PHASE_CONSUMING };

/* Two analyzers on one durable consumer would each get part of its messages and judge
 * no job whole: the first holds a lease on it, renewed every LEASE_S / 3 (the keeper);
 * another one waits and says so, and takes over once the lease is LEASE_S old (its
 * holder killed). The holder consumes only while its lease is under LEASE_HELD_S old: a
 * keeper held up by a slow server must not let a successor and it consume together. */
#define LEASE_S 10.0
#define LEASE_HELD_S 8.0

/* main_keeper.c: analyzer_lease takes or renews the lease on the durable: 0 (held), 1
 * (another analyzer holds it: standby, said once a spell) or -EAGAIN; without snapshots
 * there is none (0). The keeper thread (c->analyzer and c->nats_conn set) renews it,
 * saves snapshots and runs node health's rounds until analyzer_keeper_stop; losing the
 * lease sets c->lease_lost and ends it. start: 0 or a negative errno, said. */
int analyzer_lease(struct cli *c, struct tsn *n);
int analyzer_keeper_start(struct cli *c);
void analyzer_keeper_stop(struct cli *c);

/* main_lease.c: c->owner, the lease's text: host, pid, start, and the pod in Kubernetes.
 * analyzer_holder_gone: whether the API server shows the pod a holder's text names gone
 * or made anew (false outside Kubernetes, for a holder with no pod, or no answer). */
void analyzer_owner(struct cli *c, const char *host, int pid, unsigned long long started_ms);
bool analyzer_holder_gone(struct cli *c, const char *holder);

/* main_options.c: fills c from the command line and TRAINSCOPE_* variables (defaults
 * first, --config's parameters last); --help prints the usage and exits 0. 0, or -1
 * once stderr said why (the usage for an unknown option). */
int analyzer_parse_args(int argc, char **argv, struct cli *c);

/* main_http.c: the handlers ts_httpd_start_metrics_health calls from its thread, with
 * the struct cli as ctx. /healthz: 0 healthy, 1 failing (out says why); /metrics takes
 * core_lock. */
int analyzer_health(void *ctx, struct ts_buf *out);
/* /readyz: 0 while it consumes (connected, the lease held, the state restored), else 1
 * with what it waits on: JetStream, the restore, the lease held by another analyzer. */
int analyzer_ready(void *ctx, struct ts_buf *out);
void analyzer_render(void *ctx, struct ts_buf *out);
/* The families analyzer_render writes itself (besides the parts'). */
extern const struct ts_metric_table analyzer_service_metrics;

/* main_export.c: Kubernetes mode (--kubeconfig or --in-cluster), node health, and the
 * OTLP exporter: each, when asked for, started and hooked to the analyzer's
 * reports (c->ao, before ts_analyzer_new). 0 (started, or not asked for) or -1 once
 * stderr said why. */
int analyzer_open_k8s(struct cli *c);
int analyzer_open_otlp(struct cli *c);
/* Node health, when --node-health-s is not 0 (after analyzer_open_k8s). 0 or -1, said. */
int analyzer_open_nodes(struct cli *c);

#endif
