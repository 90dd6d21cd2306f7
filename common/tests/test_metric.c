// SPDX-License-Identifier: Apache-2.0
/* Families from their declarations (common/metric.c): the text format's lines, a
 * histogram's series, and the tables as JSON. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metric.h"
#include "version.h"

static const struct ts_metric_family fams[] = {
	{ "t_things_total", TS_COUNTER, NULL, "Things seen." },
	{ "t_rank_ratio", TS_GAUGE, "rank,pod", "A rank's share." },
	{ "t_wait_seconds", TS_HISTOGRAM, NULL, "Waits." },
};

static void test_lines(void **state)
{
	struct ts_buf b = { 0 };

	(void)state;
	ts_metric_u64(&b, &fams[0], 42);
	ts_metric_head(&b, &fams[1]);
	ts_metric_sample(&b, &fams[1], "{rank=\"%d\",pod=\"%s\"} %.2f\n", 3, "p-3", 0.5);
	assert_string_equal(b.data, "# HELP t_things_total Things seen.\n"
				    "# TYPE t_things_total counter\n"
				    "t_things_total 42\n"
				    "# HELP t_rank_ratio A rank's share.\n"
				    "# TYPE t_rank_ratio gauge\n"
				    "t_rank_ratio{rank=\"3\",pod=\"p-3\"} 0.50\n");
	ts_buf_free(&b);
}

static void test_histogram(void **state)
{
	const double bounds[] = { 0.1, 1 };
	const uint64_t le[] = { 2, 5 };
	struct ts_buf b = { 0 };

	(void)state;
	ts_metric_hist(&b, &fams[2], "", bounds, 2, le, 6, 3.25);
	ts_metric_hist(&b, &fams[2], "job=\"j\"", bounds, 1, le, 6, 3.25);
	assert_string_equal(b.data, "t_wait_seconds_bucket{le=\"0.1\"} 2\n"
				    "t_wait_seconds_bucket{le=\"1\"} 5\n"
				    "t_wait_seconds_bucket{le=\"+Inf\"} 6\n"
				    "t_wait_seconds_sum 3.250000\n"
				    "t_wait_seconds_count 6\n"
				    "t_wait_seconds_bucket{job=\"j\",le=\"0.1\"} 2\n"
				    "t_wait_seconds_bucket{job=\"j\",le=\"+Inf\"} 6\n"
				    "t_wait_seconds_sum{job=\"j\"} 3.250000\n"
				    "t_wait_seconds_count{job=\"j\"} 6\n");
	ts_buf_free(&b);
}

static void test_build_info(void **state)
{
	struct ts_buf b = { 0 };
	char want[128];

	(void)state;
	ts_metric_build_info(&b);
	snprintf(want, sizeof(want), "\ntrainscope_build_info{version=\"%s\"} 1\n", TS_VERSION);
	assert_non_null(strstr(b.data, want));
	assert_non_null(strstr(b.data, "# TYPE trainscope_build_info gauge\n"));
	ts_buf_free(&b);
}

/* --print-metrics: the common family first, then each table's in order, labels null
 * where none; a stdout that cannot be written is the program's error. */
static void test_json(void **state)
{
	const struct ts_metric_table t[] = { TS_METRIC_TABLE(fams) };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	json_error_t jerr;

	(void)state;
	assert_non_null(f);
	assert_int_equal(ts_metrics_json(f, t, 1), 0);
	fclose(f);
	json_t *all = json_loads(text, 0, &jerr);
	assert_non_null(all);
	assert_int_equal(json_array_size(all), 4);
	assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "name")),
			    "trainscope_build_info");
	json_t *ratio = json_array_get(all, 2);
	assert_string_equal(json_string_value(json_object_get(ratio, "type")), "gauge");
	assert_string_equal(json_string_value(json_object_get(ratio, "labels")), "rank,pod");
	assert_true(json_is_null(json_object_get(json_array_get(all, 1), "labels")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(all, 3), "type")),
			    "histogram");
	json_decref(all);
	free(text);

	FILE *full = fopen("/dev/full", "w");
	assert_non_null(full);
	assert_int_equal(ts_metrics_json(full, t, 1), -EIO);
	fclose(full);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_build_info),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
