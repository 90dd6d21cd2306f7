#ifndef TS_CLI_H
#define TS_CLI_H

#include <stdbool.h>

int cmd_run(int argc, char **argv);
/* kube: read the reports from the cluster unless told otherwise (the kubectl plugin) */
int cmd_report(int argc, char **argv, bool kube);
int cmd_timeline(int argc, char **argv);

#include "natsw.h"
#include "proto/trainscope.pb-c.h"

/* Reads every batch the stream holds for ns/job, in order, then stops. Returns 0, or -1
 * when the stream cannot be read. */
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

#endif
