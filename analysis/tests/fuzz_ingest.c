// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: the analyzer's batch ingestion (ts_analyzer_ingest), then evaluation
 * (ts_analyzer_tick), the reports and /metrics. A fresh analyzer per input, default
 * parameters, no report files.
 *
 * An input is a run of NATS messages, each one frame:
 *   subject '\n'           up to 255 bytes, e.g. ts.v1.ns.job.rank.0
 *   length                 2 bytes, big endian
 *   payload                a trainscope.v1.Batch (on a pod subject a Bundle): length
 *                          bytes, or what is left
 * A subject without its '\n' in the next 256 bytes ends the input. The analyzer ticks
 * after every message (one second apart, as the daemon does), and once more an hour
 * later so that the hang watch fires. analysis/tests/fuzz_seeds.c writes the seeds. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ingest/analyzer.h"
#include "buf.h"
#include "log.h"

#define SUBJECT_MAX 255
#define T0_NS 1700000000000000000ull /* the seeds' steps end just before it */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* As Kubernetes mode and OTLP take it. A job named in bytes that are not UTF-8 has no
 * report (jansson refuses the strings): NULL, as ts_k8s_publish accepts. */
static void on_report(void *ctx, json_t *report, uint64_t now_ns)
{
	(void)ctx;
	(void)now_ns;
	free(json_dumps(report, JSON_COMPACT | JSON_SORT_KEYS));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	struct ts_analyzer_opts o = { .on_report = on_report };
	struct ts_analyzer *a;
	struct ts_buf metrics = { 0 };
	char subject[SUBJECT_MAX + 1];
	uint64_t now = T0_NS;

	if (!quiet) { /* refusals are logged as warnings: one line per input */
		ts_log_set_level(TS_LOG_ERROR);
		quiet = 1;
	}
	ts_params_defaults(&o.params);
	if (ts_analyzer_new(&a, &o))
		abort();
	while (size > 0) {
		const uint8_t *nl = memchr(data, '\n', size < SUBJECT_MAX + 1 ? size : SUBJECT_MAX + 1);
		size_t n, len;
		if (!nl)
			break;
		n = (size_t)(nl - data);
		memcpy(subject, data, n);
		subject[n] = 0;
		data += n + 1, size -= n + 1;
		len = size >= 2 ? (size_t)data[0] << 8 | data[1] : 0;
		data += size >= 2 ? 2 : size, size -= size >= 2 ? 2 : size;
		if (len > size)
			len = size;
		/* a copy the exact size, so that ASan sees a read past the payload */
		uint8_t *msg = malloc(len ? len : 1);
		if (!msg)
			abort();
		memcpy(msg, data, len);
		ts_analyzer_ingest(a, subject, msg, len);
		free(msg);
		data += len, size -= len;
		ts_analyzer_tick(a, now);
		now += 1000000000ull;
	}
	ts_analyzer_tick(a, now + 3600 * 1000000000ull);
	ts_analyzer_render_metrics(a, &metrics);
	if (metrics.oom || !metrics.data)
		abort();
	ts_buf_free(&metrics);
	ts_analyzer_free(a);
	return 0;
}
