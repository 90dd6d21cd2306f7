// SPDX-License-Identifier: Apache-2.0
/* trainscope report: prints (or waits for) the analyzer's report of a job. */
#include "cli.h"
#include "analysis/sinks/report.h"
#include "kube.h"
#include "names.h"
#include "numparse.h"
#include "tsclock.h"

#include <dirent.h>
#include <stddef.h>
#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPORT_HEAD                                                                     \
	"Usage: trainscope report [options]\n"                                            \
	"Prints the analyzer's reports: state, step time against its baseline, and each\n" \
	"slow rank with its cause and the numbers that decided.\n"                         \
	"Exit status: 0 printed, 1 no report, 3 timed out waiting, 4 no picture drawn.\n\n"

struct report_q {
	const char *dir, *job, *ns, *plot, *metric;
	const char *kubeconfig;
	bool json, kube, all_ns;
	int64_t wait_step;
	double timeout_s;
	struct tsn_opts nats;
};

static int kubeconfig(void *s, const char *arg, char *err, size_t n)
{
	struct report_q *q = s;

	(void)err, (void)n;
	q->kube = true, q->kubeconfig = arg;
	return 0;
}

#define F(f) offsetof(struct report_q, f)
#define STR(f) TS_OPT_STR, F(f), 0, 0
#define ON(f) TS_OPT_TRUE, F(f), 0, 0, NULL, NULL
static const struct ts_opt report_options[] = {
	{ "dir", 'd', STR(dir), "DIR", NULL, "report folder (default ./trainscope-reports)", NULL },
	{ "kube", 0, ON(kube), "read the SlowNodeReports from the cluster instead, through "
	  "$KUBECONFIG or ~/.kube/config (in a pod: its service account); the default as the "
	  "kubectl plugin (kubectl trainscope report ...)", NULL },
	{ "kubeconfig", 0, TS_OPT_CALL, 0, 0, 0, "FILE", NULL, "that kubeconfig (implies --kube)",
	  kubeconfig },
	{ "all-namespaces", 0, ON(all_ns), "every namespace's reports (--kube, without --job)",
	  NULL },
	{ "job", 'j', STR(job), "NAME", NULL, "only this job", NULL },
	{ "namespace", 'n', STR(ns), "NS", NULL, "its namespace (default default)", NULL },
	{ "json", 0, ON(json), "print the report JSON itself", NULL },
	{ "wait-step", 0, TS_OPT_I64, F(wait_step), 0, 9e15, "N", NULL,
	  "wait until the report has analysed step N", NULL },
	{ "timeout", 0, TS_OPT_DOUBLE, F(timeout_s), 0, 2592000, "SEC", NULL,
	  "give up waiting after SEC seconds (default 60): exit 3", NULL },
	{ "plot", 0, STR(plot), "FILE.svg", NULL, "also draw the job (needs --job and the "
	  "stream): each rank's time per step in one phase over the steps, against the step's "
	  "median rank, the named ranks marked and the alarm windows shaded", NULL },
	{ "plot-metric", 0, STR(metric), "M", NULL, "that phase: compute, launch, dataloader, "
	  "checkpoint, collective or step (default: the slow rank's, else compute)", NULL },
};

static bool report_ready(json_t *root, const struct report_q *q)
{
	json_t *st = json_object_get(root, "status");

	return q->wait_step < 0 ||
	       json_integer_value(json_object_get(st, "lastStep")) >= q->wait_step;
}

static int show_root(json_t *root, const struct report_q *q, bool *ready)
{
	*ready = false;
	if (!root)
		return -1;
	*ready = report_ready(root, q);
	if (*ready) {
		if (q->json) {
			char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
			if (s)
				puts(s);
			free(s);
		} else {
			ts_report_print(root, stdout);
		}
	}
	return 0;
}

static int show(const char *path, const struct report_q *q, bool *ready)
{
	json_t *root = json_load_file(path, 0, NULL);
	int rc = show_root(root, q, ready);

	json_decref(root);
	return rc;
}

static int show_all(const struct report_q *q)
{
	struct dirent *de;
	DIR *d = opendir(q->dir);
	int shown = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char path[4096];
		bool ready;
		if (n < 6 || strcmp(de->d_name + n - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", q->dir, de->d_name);
		if (show(path, q, &ready) == 0 && ready)
			shown++;
	}
	closedir(d);
	return shown;
}

static int plot(json_t *root, const struct report_q *q, const struct tsn_opts *o)
{
	struct tsn *n;
	int rc = 4;

	if (root && tsn_open(&n, o) == 0) {
		rc = cli_plot(n, root, q->plot, q->metric) ? 4 : 0;
		tsn_close(n);
	} else {
		fprintf(stderr, "trainscope report: %s\n", root ? "cannot reach NATS to draw the job"
								  : "the report went away");
	}
	return rc;
}

static void pause_poll(void)
{
	struct timespec ts = { 0, 100000000 };
	nanosleep(&ts, NULL); /* polling a report another process rewrites */
}

/* The cluster's reports: one job (waited for as with files), or a namespace's, or all. */
static int from_cluster(const struct report_q *q, const struct tsn_opts *o)
{
	struct ts_kube *k;
	uint64_t deadline = ts_mono_ns() + (uint64_t)(q->timeout_s * 1e9);
	int rc = 1, shown = 0;
	size_t i;
	json_t *it;

	if (cli_kube_open(&k, q->kubeconfig))
		return 1;
	for (;;) {
		bool ready = false;
		json_t *r = cli_kube_reports(k, q->all_ns && !q->job ? NULL : q->ns, q->job);
		if (!q->job) {
			json_array_foreach(json_object_get(r, "items"), i, it)
				if (show_root(it, q, &ready) == 0 && ready)
					shown++;
			if (r && !shown)
				fprintf(stderr, "trainscope report: no SlowNodeReport in %s\n",
					q->all_ns ? "the cluster" : q->ns);
			rc = shown ? 0 : 1;
		} else if (r && show_root(r, q, &ready) == 0 && ready) {
			rc = q->plot ? plot(r, q, o) : 0;
		} else if (q->wait_step >= 0 && ts_mono_ns() <= deadline) {
			json_decref(r);
			pause_poll();
			continue;
		} else if (q->wait_step >= 0) {
			fprintf(stderr, "trainscope report: %s/%s did not reach step %lld within %.0f s\n",
				q->ns, q->job, (long long)q->wait_step, q->timeout_s);
			rc = 3;
		}
		json_decref(r);
		break;
	}
	ts_kube_close(k);
	return rc;
}

int cmd_report(int argc, char **argv, bool kube)
{
	struct report_q q = { .dir = "trainscope-reports", .ns = "default", .kube = kube,
			      .wait_step = -1, .timeout_s = 60 };
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(report_options, &q),
					       TS_OPTS_GROUP(tsn_opt_table, &q.nats) };
	struct tsn_opts *o = &q.nats;
	uint64_t deadline;
	char path[4096];
	int at;

	tsn_opts_from_env(o, "trainscope-report");
	if ((at = ts_opts_parse(groups, 2, "trainscope report", REPORT_HEAD, 0, argc, argv)) <= 0)
		return at ? 2 : 0;
	if (at < argc) {
		fprintf(stderr, "trainscope report: %s: no operand is taken (--job NAME?)\n",
			argv[at]);
		return 2;
	}
	tsn_opts_finish(o);
	if (!q.job && q.plot) {
		fprintf(stderr, "trainscope report: --plot draws one job: give --job\n");
		return 2;
	}
	if (q.kube)
		return from_cluster(&q, o);
	if (!q.job) {
		if (show_all(&q))
			return 0;
		fprintf(stderr, "trainscope report: no report in %s\n", q.dir);
		return 1;
	}
	if (ts_name_report_path(path, sizeof(path), q.dir, q.ns, q.job)) {
		fprintf(stderr, "trainscope report: a folder and a name this long make no path\n");
		return 2;
	}
	deadline = ts_mono_ns() + (uint64_t)(q.timeout_s * 1e9);
	for (;;) {
		bool ready;
		int rc = show(path, &q, &ready);
		if (rc == 0 && ready && q.plot) {
			json_t *root = json_load_file(path, 0, NULL);
			rc = plot(root, &q, o);
			json_decref(root);
			return rc;
		}
		if (rc == 0 && ready)
			return 0;
		if (q.wait_step < 0) {
			fprintf(stderr, "trainscope report: no report for %s/%s in %s\n", q.ns, q.job,
				q.dir);
			return 1;
		}
		if (ts_mono_ns() > deadline) {
			fprintf(stderr, "trainscope report: %s/%s did not reach step %lld within %.0f s\n",
				q.ns, q.job, (long long)q.wait_step, q.timeout_s);
			return 3;
		}
		pause_poll();
	}
}
