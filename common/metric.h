// SPDX-License-Identifier: Apache-2.0
/* Prometheus families declared once: a table per part (name, type, labels, help), from
 * which /metrics's HELP and TYPE lines, the programs' --print-metrics and the generated
 * reference all come. The parts write only their samples' values and label values. */
#ifndef TS_METRIC_H
#define TS_METRIC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "buf.h"
#include "opts.h"

enum ts_metric_type { TS_COUNTER, TS_GAUGE, TS_HISTOGRAM };

struct ts_metric_family {
	const char *name;
	enum ts_metric_type type;
	const char *labels; /* the samples' label names, comma separated; NULL: none */
	const char *help;   /* one sentence or a few, for HELP and the reference */
};

/* A part's families. */
struct ts_metric_table {
	const struct ts_metric_family *m;
	size_t n;
};

#define TS_METRIC_TABLE(arr) { (arr), sizeof(arr) / sizeof((arr)[0]) }

/* trainscope_build_info{version="..."} 1, which every program serves first. */
extern const struct ts_metric_table ts_metric_common;

/* The HELP and TYPE lines of m; its samples follow, written by the caller with m->name. */
void ts_metric_head(struct ts_buf *b, const struct ts_metric_family *m);

/* One sample of m: its name, then fmt's labels and value ("{k=\"v\"} 1\n"). */
void ts_metric_sample(struct ts_buf *b, const struct ts_metric_family *m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* HELP, TYPE and m's one sample, unlabelled. */
void ts_metric_u64(struct ts_buf *b, const struct ts_metric_family *m, uint64_t v);
void ts_metric_double(struct ts_buf *b, const struct ts_metric_family *m, double v);

/* One histogram series of m (no head): its nb buckets' cumulative counts le at bounds,
 * +Inf, _sum and _count. labels: "" or the series' label pairs, without braces. */
void ts_metric_hist(struct ts_buf *b, const struct ts_metric_family *m, const char *labels,
		    const double *bounds, int nb, const uint64_t *le, uint64_t count, double sum);

/* The build_info family (ts_metric_common) with its sample. */
void ts_metric_build_info(struct ts_buf *b);

/* The tables a program serves: TS_OPTS_GROUP(ts_metric_opts, &list) among its option
 * groups gives it --print-metrics, which prints them (ts_metrics_json). */
struct ts_metric_list {
	const struct ts_metric_table *t;
	size_t n;
};
extern const struct ts_opt ts_metric_opts[1];

/* --print-metrics: the tables as one JSON array, [{"name", "type", "labels", "help"}...],
 * ts_metric_common first. Returns 0, or -EIO when f could not be written. */
int ts_metrics_json(FILE *f, const struct ts_metric_table *t, size_t nt);

#endif
