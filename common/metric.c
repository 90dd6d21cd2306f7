// SPDX-License-Identifier: Apache-2.0
/* Prometheus families from their declarations (metric.h): the text format's HELP and
 * TYPE lines, plain and histogram samples, and the tables as JSON. */
#include "metric.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include "version.h"

static const char *const type_names[] = { "counter", "gauge", "histogram" };

static const struct ts_metric_family common_metrics[] = {
	{ "trainscope_build_info", TS_GAUGE, "version", "1, labelled with the release." },
};

const struct ts_metric_table ts_metric_common = TS_METRIC_TABLE(common_metrics);

void ts_metric_head(struct ts_buf *b, const struct ts_metric_family *m)
{
	ts_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
		      type_names[m->type]);
}

void ts_metric_sample(struct ts_buf *b, const struct ts_metric_family *m, const char *fmt, ...)
{
	va_list ap;

	ts_buf_printf(b, "%s", m->name);
	va_start(ap, fmt);
	ts_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void ts_metric_u64(struct ts_buf *b, const struct ts_metric_family *m, uint64_t v)
{
	ts_metric_head(b, m);
	ts_buf_printf(b, "%s %" PRIu64 "\n", m->name, v);
}

void ts_metric_double(struct ts_buf *b, const struct ts_metric_family *m, double v)
{
	ts_metric_head(b, m);
	ts_buf_printf(b, "%s %.6f\n", m->name, v);
}

void ts_metric_hist(struct ts_buf *b, const struct ts_metric_family *m, const char *labels,
		    const double *bounds, int nb, const uint64_t *le, uint64_t count, double sum)
{
	const char *name = m->name, *sep = *labels ? "," : "";

	for (int k = 0; k < nb; k++)
		ts_buf_printf(b, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep,
			      bounds[k], le[k]);
	ts_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, count);
	if (*labels)
		ts_buf_printf(b, "%s_sum{%s} %.6f\n%s_count{%s} %" PRIu64 "\n", name, labels, sum,
			      name, labels, count);
	else
		ts_buf_printf(b, "%s_sum %.6f\n%s_count %" PRIu64 "\n", name, sum, name, count);
}

void ts_metric_build_info(struct ts_buf *b)
{
	const struct ts_metric_family *m = &common_metrics[0];

	ts_metric_head(b, m);
	ts_buf_printf(b, "%s{version=\"%s\"} 1\n", m->name, TS_VERSION);
}

static void append(json_t *all, const struct ts_metric_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		json_array_append_new(all, json_pack("{s:s, s:s, s:s?, s:s}", "name", t->m[i].name,
						     "type", type_names[t->m[i].type], "labels",
						     t->m[i].labels, "help", t->m[i].help));
}

int ts_metrics_json(FILE *f, const struct ts_metric_table *t, size_t nt)
{
	json_t *all = json_array();
	int err = -ENOMEM;

	if (all) {
		append(all, &ts_metric_common);
		for (size_t i = 0; i < nt; i++)
			append(all, &t[i]);
		bool bad = json_dumpf(all, f, JSON_INDENT(1)) || fputc('\n', f) == EOF;
		err = bad || fflush(f) ? -EIO : 0;
	}
	json_decref(all);
	return err;
}

static int print_tables(void *settings, const char *arg, char *err, size_t n)
{
	const struct ts_metric_list *l = settings;

	(void)arg;
	snprintf(err, n, "stdout could not be written");
	return ts_metrics_json(stdout, l->t, l->n);
}

const struct ts_opt ts_metric_opts[1] = {
	{ "print-metrics", 0, TS_OPT_PRINT, 0, 0, 0, NULL, NULL,
	  "the families this program serves on /metrics, as JSON (the generated reference's)",
	  print_tables },
};
