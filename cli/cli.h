// SPDX-License-Identifier: Apache-2.0
#ifndef TS_CLI_H
#define TS_CLI_H

#include <stdbool.h>
#include <sys/types.h>

int cmd_run(int argc, char **argv);
/* kube: read the reports from the cluster unless told otherwise (the kubectl plugin) */
int cmd_report(int argc, char **argv, bool kube);
int cmd_timeline(int argc, char **argv);
int cmd_record(int argc, char **argv);

#include "natsw.h"
#include "proto/trainscope.pb-c.h"

/* Gives fn every message the stream holds for ns/job (every kind), as the server holds it
 * and in the stream's order, then stops once the stream has nothing more (two fetches of
 * 0.5 s come back empty). fn returns 0 to go on or a negative errno, which ends the read.
 * Returns 0; -EAGAIN when the stream cannot be read; -ECONNRESET when the server went away
 * at the end, so that whether the stream held more is not known (fn had what came before);
 * or fn's error. */
typedef int (*cli_msg_fn)(void *arg, natsMsg *m);
int cli_read_job_msgs(struct tsn *n, const char *ns, const char *job, cli_msg_fn fn, void *arg);
/* Reads every batch the stream holds for ns/job, in order, then stops (cli_read_job_msgs,
 * the messages decoded; a batch that does not decode is skipped). Returns 0 (also when the
 * server went away at the end: fn had what was read), or -1 when the stream cannot be read. */
typedef void (*cli_batch_fn)(void *arg, const Trainscope__V1__Batch *b);
int cli_read_job(struct tsn *n, const char *ns, const char *job, cli_batch_fn fn, void *arg);

#include <jansson.h>

/* report_kube.c: the cluster's SlowNodeReports */
struct ts_kube;
int cli_kube_open(struct ts_kube **out, const char *kubeconfig);
json_t *cli_kube_reports(struct ts_kube *k, const char *ns, const char *job);
/* Draws the job of report (its per-rank heatmap of one metric, named ranks, alarm
 * windows) into the SVG file path, from the job's steps in the stream. metric: compute,
 * launch, dataloader, checkpoint, collective or step; NULL: the first slow rank's.
 * Returns 0 or -1 (said on stderr). */
int cli_plot(struct tsn *n, json_t *report, const char *path, const char *metric);
/* Writes the job's Chrome/Perfetto trace (all its ranks and steps, as trainscope timeline
 * does without filters) into the file out, from the stream. Returns 0 or -errno (said on
 * stderr). */
int cli_timeline(struct tsn *n, const char *ns, const char *job, const char *out);

/* run.c: <folder of this executable>/<rel>, where the relay and analyzer are installed. */
void beside_self(char *out, size_t n, const char *rel);

/* local.c: trainscope run --local, a private NATS and analyzer for one run. */
struct cli_local_opts {
	const char *nats;        /* a NATS server (JetStream) of the user's instead of one of ours */
	const char *nats_server; /* the nats-server program (default: the one on PATH) */
	const char *out;         /* the folder for the report, picture and timeline (default
				  * ./trainscope-<job>-<time>) */
};
struct cli_local;
/* Starts the run's nats-server (unless o->nats) and analyzer, for the job its ranks will
 * name (TRAINSCOPE_JOB, TRAINSCOPE_NAMESPACE). Returns 0 with *out set, or -errno, said
 * on stderr, with nothing left running. */
int cli_local_start(struct cli_local **out, const struct cli_local_opts *o);
/* The NATS URL the run's relay publishes to. */
const char *cli_local_url(const struct cli_local *l);
/* Shows the job's verdict on stderr until the process child has ended; the caller
 * reaps it. */
void cli_local_watch(struct cli_local *l, pid_t child);
/* Once the command and relay are done: waits for the analyzer to evaluate the job's last
 * step, prints the report, and writes it, the picture and the timeline into the out
 * folder, saying their paths. From here SIGINT, SIGTERM and SIGHUP cut the wait short.
 * Returns 0 or -errno (said on stderr). */
int cli_local_finish(struct cli_local *l);
/* Stops the analyzer and nats-server, removes the private folder, frees l (NULL: none). */
void cli_local_stop(struct cli_local *l);

#endif
