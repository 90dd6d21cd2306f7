// SPDX-License-Identifier: Apache-2.0
/* Node health: a node named by three jobs in a few hours, or once with a Device cause, is degraded;
 * one job naming it many times counts once; findings decay and expire; two
 * partitions' findings add up; a restarted analyzer resumes its own from its blob;
 * node_sync.c's rounds through a bucket in memory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sinks/node_sync.h"
#include "analysis/sinks/nodehealth.h"
#include "fakekv.h"

#define S 1000000000ull
#define T0 (1700000000ull * S)
#define HOUR (3600 * S)

static struct ts_nodehealth *nh(int partition)
{
	struct ts_nh_opts o;
	struct ts_nodehealth *h;

	ts_nh_opts_default(&o);
	assert_int_equal(ts_nh_new(&h, &o, partition), 0);
	return h;
}

static int view(struct ts_nodehealth *h, uint64_t now, struct ts_nh_node *v)
{
	return ts_nh_nodes(h, now, v, 4);
}

static void test_three_jobs_degrade(void **state)
{
	struct ts_nodehealth *h = nh(0);
	struct ts_nh_node v[4];

	(void)state;
	for (int i = 0; i < 50; i++) /* one job naming the node again and again */
		ts_nh_note(h, "team", "a", "gpu-7", "GPU-3", "Compute", 0.3, T0 + (uint64_t)i * S);
	assert_int_equal(view(h, T0 + 50 * S, v), 1);
	assert_string_equal(v[0].node, "gpu-7");
	assert_int_equal(v[0].njobs, 1);
	assert_true(v[0].score > 0.99 && v[0].score <= 1.0);
	assert_false(v[0].degraded);
	/* a second slow rank of the same job on the node: still one job's evidence */
	ts_nh_note(h, "team", "a", "gpu-7", "GPU-5", "Compute", 0.2, T0 + 50 * S);
	assert_int_equal(view(h, T0 + 50 * S, v), 1);
	assert_int_equal(v[0].njobs, 1);
	assert_int_equal(v[0].ndevices, 2);
	assert_true(v[0].score > 0.99 && v[0].score <= 1.0);
	ts_nh_note(h, "team", "b", "gpu-7", "GPU-3", "Compute", 0.2, T0 + 60 * S);
	ts_nh_note(h, "other", "c", "gpu-7", "GPU-3", "HostCPU", 0.2, T0 + 70 * S);
	ts_nh_note(h, "team", "d", "gpu-2", "GPU-0", "Storage", 0.5, T0 + 70 * S);
	assert_int_equal(view(h, T0 + 70 * S, v), 2);
	assert_string_equal(v[0].node, "gpu-7"); /* highest score first */
	assert_int_equal(v[0].njobs, 3);
	assert_true(v[0].degraded);
	assert_string_equal(v[0].cause, "Compute");
	assert_int_equal(v[0].ndevices, 2);
	assert_string_equal(v[0].devices[0], "GPU-3");
	assert_false(v[1].degraded);
	ts_nh_free(h);
}

static void test_device_alone_degrades(void **state)
{
	struct ts_nodehealth *h = nh(0);
	struct ts_nh_node v[4];

	(void)state;
	ts_nh_note(h, "team", "a", "gpu-1", "GPU-5", "Device", 0.4, T0);
	assert_int_equal(view(h, T0, v), 1);
	assert_true(v[0].degraded);
	assert_string_equal(v[0].cause, "Device");
	ts_nh_free(h);
}

/* Weights halve every 24 hours; a degraded node stays so down to a score of 1 and the
 * findings go after 72 hours. */
static void test_decay_and_hysteresis(void **state)
{
	struct ts_nodehealth *h = nh(0);
	struct ts_nh_node v[4];

	(void)state;
	for (int j = 0; j < 3; j++) {
		char job[8] = { (char)('a' + j), 0 };
		ts_nh_note(h, "team", job, "gpu-4", "", "Compute", 0.3, T0);
	}
	assert_int_equal(view(h, T0, v), 1);
	assert_true(v[0].degraded);
	assert_int_equal(view(h, T0 + 24 * HOUR, v), 1); /* 1.5: below 2.5, above 1 */
	assert_true(fabs(v[0].score - 1.5) < 1e-6);
	assert_true(v[0].degraded);
	assert_int_equal(view(h, T0 + 52 * HOUR, v), 1); /* 0.67 */
	assert_false(v[0].degraded);
	ts_nh_note(h, "team", "e", "gpu-4", "", "Compute", 0.3, T0 + 52 * HOUR);
	assert_int_equal(view(h, T0 + 52 * HOUR, v), 1); /* 1.67: not degraded again yet */
	assert_false(v[0].degraded);
	ts_nh_expire(h, T0 + 73 * HOUR); /* the first three are past the window */
	assert_int_equal(view(h, T0 + 73 * HOUR, v), 1);
	assert_int_equal(v[0].njobs, 1);
	ts_nh_expire(h, T0 + 125 * HOUR);
	assert_int_equal(view(h, T0 + 125 * HOUR, v), 0);
	ts_nh_free(h);
}

/* Partition 0 saw two jobs name gpu-9, partition 1 one more: each sees it degraded.
 * Partition 0 restarted reads its own blob back and still does. */
static void test_partitions_add_up(void **state)
{
	struct ts_nodehealth *p0 = nh(0), *p1 = nh(1), *again;
	struct ts_nh_node v[4];
	size_t l0, l1;
	char *b0, *b1;

	(void)state;
	ts_nh_note(p0, "team", "a", "gpu-9", "GPU-1", "Compute", 0.3, T0);
	ts_nh_note(p0, "team", "b", "gpu-9", "GPU-1", "Compute", 0.3, T0);
	ts_nh_note(p1, "lab", "c", "gpu-9", "GPU-1", "Compute", 0.3, T0);
	assert_non_null(b0 = ts_nh_export(p0, &l0));
	assert_non_null(b1 = ts_nh_export(p1, &l1));
	assert_int_equal(view(p0, T0, v), 1);
	assert_false(v[0].degraded);
	assert_int_equal(ts_nh_import(p0, 1, b1, l1), 0);
	assert_int_equal(ts_nh_import(p1, 0, b0, l0), 0);
	assert_int_equal(view(p0, T0, v), 1);
	assert_true(v[0].degraded);
	assert_int_equal(v[0].njobs, 3);
	assert_int_equal(view(p1, T0, v), 1);
	assert_true(v[0].degraded);
	assert_int_equal(ts_nh_import(p1, 0, b0, l0), 0); /* a newer blob replaces, never adds */
	assert_int_equal(view(p1, T0, v), 1);
	assert_int_equal(v[0].njobs, 3);
	again = nh(0);
	/* a report noted before the blob is read back is kept */
	ts_nh_note(again, "team", "z", "gpu-8", "", "Compute", 0.3, T0);
	assert_int_equal(ts_nh_import(again, 0, b0, l0), 0);
	assert_int_equal(ts_nh_import(again, 1, b1, l1), 0);
	assert_int_equal(view(again, T0, v), 2);
	assert_string_equal(v[0].node, "gpu-9");
	assert_true(v[0].degraded);
	/* its own findings are local again: renewing one does not add a fourth */
	ts_nh_note(again, "team", "a", "gpu-9", "GPU-1", "Compute", 0.3, T0);
	assert_int_equal(view(again, T0, v), 2);
	assert_int_equal(v[0].njobs, 3);
	free(b0), free(b1);
	ts_nh_free(p0), ts_nh_free(p1), ts_nh_free(again);
}

static void test_bad_blob(void **state)
{
	struct ts_nodehealth *h = nh(0);
	struct ts_nh_node v[4];
	static const char *bad[] = { "", "{", "[]", "{\"v\":2,\"findings\":[]}",
				     "{\"v\":1,\"findings\":[{\"job\":\"x\"}]}" };

	(void)state;
	ts_nh_note(h, "team", "a", "gpu-1", "", "Compute", 0.3, T0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(ts_nh_import(h, 0, bad[i], strlen(bad[i])), -EBADMSG);
		assert_int_equal(ts_nh_import(h, 3, bad[i], strlen(bad[i])), -EBADMSG);
	}
	assert_int_equal(view(h, T0, v), 1);
	assert_int_equal(v[0].njobs, 1);
	ts_nh_free(h);
}

static void test_from_report(void **state)
{
	struct ts_nodehealth *h = nh(0);
	struct ts_nh_node v[4];
	json_t *r = json_pack("{s:{s:s, s:s}, s:{s:[{s:i, s:s, s:s, s:s, s:f}, {s:i, s:s, s:s}]}}",
			      "metadata", "namespace", "team", "name", "llm", "status", "slowRanks",
			      "rank", 5, "node", "gpu-3", "device", "GPU-5", "cause", "Device",
			      "degradation", 40.0, "rank", 6, "node", "", "cause", "Compute");

	(void)state;
	assert_int_equal(ts_nh_note_report(h, r, T0), 1); /* a rank with no node is no evidence */
	assert_int_equal(view(h, T0, v), 1);
	assert_true(v[0].degraded);
	json_t *j = ts_nh_node_json(&v[0]);
	assert_string_equal(json_string_value(json_object_get(j, "node")), "gpu-3");
	assert_int_equal(json_integer_value(json_object_get(j, "jobsAffected")), 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(j, "jobs"), 0), "job")), "llm");
	json_decref(j);
	json_decref(r);
	ts_nh_free(h);
}

/* A report of job ns/name naming rank 5 (Compute, +100 %) and, if rank3, rank 3 (HostCPU,
 * +20 %) on node n1. */
static json_t *report_of(const char *name, bool rank3)
{
	json_t *slow = json_pack("[{s:i, s:s, s:s, s:s, s:f}]", "rank", 5, "node", "n1", "device",
				 "5", "cause", "Compute", "degradation", 1.0);

	if (rank3)
		json_array_append_new(slow, json_pack("{s:i, s:s, s:s, s:s, s:f}", "rank", 3, "node",
						      "n1", "device", "3", "cause", "HostCPU",
						      "degradation", 0.2));
	return json_pack("{s:{s:s, s:s}, s:{s:o}}", "metadata", "namespace", "team", "name", name,
			 "status", "slowRanks", slow);
}

/* An alarm the job took back within min_held_s is withdrawn; one held longer stays; one
 * still named at the job's end stays. A job with two ranks on the node takes the cause of
 * the worse, whichever was renewed last. */
static void test_passing_alarm_withdrawn(void **state)
{
	struct ts_nodehealth *h = nh(0);
	struct ts_nh_node v[4];
	json_t *both = report_of("a", true), *one = report_of("a", false);

	(void)state;
	ts_nh_note_report(h, both, T0);
	assert_int_equal(view(h, T0, v), 1);
	assert_int_equal(v[0].ndevices, 2);
	assert_string_equal(v[0].cause, "Compute"); /* rank 5's, the worse */
	ts_nh_note_report(h, one, T0 + 60 * S);      /* rank 3 taken back after a minute */
	assert_int_equal(view(h, T0 + 60 * S, v), 1);
	assert_int_equal(v[0].ndevices, 1);
	assert_string_equal(v[0].devices[0], "5");
	json_decref(both), json_decref(one);

	/* held 10 minutes, then taken back: kept */
	both = report_of("b", true), one = report_of("b", false);
	ts_nh_note_report(h, both, T0);
	ts_nh_note_report(h, both, T0 + 600 * S);
	ts_nh_note_report(h, one, T0 + 601 * S);
	assert_int_equal(view(h, T0 + 601 * S, v), 1);
	assert_int_equal(v[0].njobs, 2);
	assert_int_equal(v[0].ndevices, 2);
	json_decref(both), json_decref(one);

	/* rank 3 renewed after rank 5: the job's cause is still its worse rank's */
	ts_nh_note(h, "team", "c", "n1", "5", "Compute", 1.0, T0 + 700 * S);
	ts_nh_note(h, "team", "c", "n1", "3", "HostCPU", 0.2, T0 + 701 * S);
	ts_nh_note(h, "team", "d", "n1", "3", "HostCPU", 0.2, T0 + 701 * S);
	assert_int_equal(view(h, T0 + 701 * S, v), 1);
	assert_int_equal(v[0].njobs, 4);
	assert_true(v[0].degraded);
	assert_string_equal(v[0].cause, "Compute"); /* a, b, c against d */
	for (int i = 0; i < v[0].nshown; i++)
		if (!strcmp(v[0].jobs[i].job, "c"))
			assert_string_equal(v[0].jobs[i].device, "5");
	ts_nh_free(h);

	/* a GPU's UUID (40 characters) renewed is one finding, kept whole */
	const char *uuid = "GPU-8f0c2a3e-5b7d-4c1e-9a2b-3d4e5f6a7b8c";
	h = nh(0);
	ts_nh_note(h, "team", "e", "n2", uuid, "Compute", 1.0, T0);
	ts_nh_note(h, "team", "e", "n2", uuid, "Compute", 1.0, T0 + 700 * S);
	assert_int_equal(view(h, T0 + 700 * S, v), 1);
	assert_int_equal(v[0].ndevices, 1);
	assert_string_equal(v[0].devices[0], uuid);
	ts_nh_free(h);
}

/* The GPU time each job lost to its ranks on a node (its report's gpuTimeLost.topRanks)
 * rides on its finding there, across partitions' blobs: the node's is their sum, a job's
 * two findings on it (two devices) counting once. */
static void test_gpu_time_by_node(void **state)
{
	struct ts_nodehealth *p0 = nh(0), *p1 = nh(1);
	struct ts_nh_node v[4];
	size_t len;
	char *blob;
	json_t *r = json_pack("{s:{s:s, s:s}, s:{s:[{s:i, s:s, s:s, s:s, s:f}, {s:i, s:s, s:s, s:s}],"
			      " s:{s:[{s:i, s:f, s:s}, {s:i, s:f, s:s}, {s:i, s:f, s:s}]}}}",
			      "metadata", "namespace", "team", "name", "llm", "status", "slowRanks",
			      "rank", 5, "node", "gpu-3", "device", "GPU-5", "cause", "Compute",
			      "degradation", 0.4, "rank", 6, "node", "gpu-3", "device", "GPU-6",
			      "cause", "Compute", "gpuTimeLost", "topRanks", "rank", 5, "gpuHours",
			      1.5, "node", "gpu-3", "rank", 6, "gpuHours", 0.5, "node", "gpu-3",
			      "rank", 9, "gpuHours", 0.25, "node", "gpu-4");

	(void)state;
	assert_int_equal(ts_nh_note_report(p1, r, T0), 2);
	ts_nh_note(p0, "lab", "cv", "gpu-3", "", "HostCPU", 0.3, T0);
	ts_nh_note_cost(p0, "lab", "cv", "gpu-3", 1800);
	assert_non_null(blob = ts_nh_export(p1, &len));
	assert_int_equal(ts_nh_import(p0, 1, blob, len), 0);
	assert_int_equal(view(p0, T0, v), 1);
	assert_int_equal(v[0].njobs, 2);
	assert_true(fabs(v[0].gpu_s - (7200 + 1800)) < 1e-6); /* llm's 2 h on gpu-3, cv's 0.5 h */
	json_t *j = ts_nh_node_json(&v[0]);
	assert_true(fabs(json_number_value(json_object_get(j, "gpuHoursLost")) - 2.5) < 1e-9);
	json_t *llm = json_array_get(json_object_get(j, "jobs"), 0);
	if (strcmp(json_string_value(json_object_get(llm, "job")), "llm")) /* equal weights */
		llm = json_array_get(json_object_get(j, "jobs"), 1);
	assert_string_equal(json_string_value(json_object_get(llm, "job")), "llm");
	assert_true(fabs(json_number_value(json_object_get(llm, "gpuHoursLost")) - 2.0) < 1e-9);
	json_decref(j);
	json_decref(r);
	free(blob);
	ts_nh_free(p0), ts_nh_free(p1);
}

/* A full table gives up the finding renewed longest ago. */
static void test_full_table(void **state)
{
	struct ts_nh_opts o;
	struct ts_nodehealth *h;
	struct ts_nh_node v[4];

	(void)state;
	ts_nh_opts_default(&o);
	o.max_findings = 2;
	assert_int_equal(ts_nh_new(&h, &o, 0), 0);
	ts_nh_note(h, "t", "a", "n1", "", "Compute", 0, T0);
	ts_nh_note(h, "t", "b", "n2", "", "Compute", 0, T0 + S);
	ts_nh_note(h, "t", "c", "n3", "", "Compute", 0, T0 + 2 * S);
	assert_int_equal(view(h, T0 + 2 * S, v), 2);
	assert_true(strcmp(v[0].node, "n1") && strcmp(v[1].node, "n1"));
	ts_nh_free(h);
	o.sz = 8;
	assert_int_equal(ts_nh_new(&h, &o, 0), -EINVAL);
	assert_null(h);
}

/* A report naming rank 2 on node n with cause Compute, job name. */
static json_t *report_on(const char *job, const char *node)
{
	return json_pack("{s:{s:s, s:s}, s:{s:[{s:i, s:s, s:s, s:s, s:f}]}}", "metadata",
			 "namespace", "team", "name", job, "status", "slowRanks", "rank", 2,
			 "node", node, "device", "GPU-2", "cause", "Compute", "degradation", 30.0);
}

/* One round of partition s's sync, the three parts as the analyzer runs them. */
static void round_of(struct ts_node_sync *s, struct tsn_kv *kv, uint64_t now)
{
	struct ts_node_round *r = ts_node_sync_begin(s, kv != NULL, now);

	assert_non_null(r);
	ts_node_sync_io(r, kv);
	ts_node_sync_end(s, r, NULL, now);
}

/* The rounds of node_sync.c: nothing before its period; two partitions add up through
 * the bucket; a restarted partition resumes its own findings in a round that stores
 * nothing (its blob would lack them), and the degraded node has its series. */
static void test_sync_rounds(void **state)
{
	struct ts_nh_opts o;
	struct ts_node_sync *p0, *p1, *again;
	struct ts_node_sync_stats st;
	struct tsn_kv *kv = fakekv_new();
	struct ts_buf b = { 0 };
	size_t bytes0, bytes1;

	(void)state;
	ts_nh_opts_default(&o);
	assert_int_equal(ts_node_sync_new(&p0, &o, 0, 2, 1.0), 0);
	assert_int_equal(ts_node_sync_new(&p1, &o, 1, 2, 1.0), 0);
	for (const char *j = "abc"; *j; j++) {
		char name[2] = { *j, 0 };
		json_t *r = report_on(name, "gpu-4");
		ts_node_sync_report(*j == 'c' ? p1 : p0, r, T0);
		json_decref(r);
	}
	/* each partition's first round resumes (nothing stored yet), the second stores */
	for (int k = 0; k < 2; k++) {
		struct ts_node_round *r0 = ts_node_sync_begin(p0, true, T0 + (uint64_t)k * 2 * S);
		struct ts_node_round *r1 = ts_node_sync_begin(p1, true, T0 + (uint64_t)k * 2 * S);
		assert_non_null(r0);
		assert_null(ts_node_sync_begin(p0, true, T0 + (uint64_t)k * 2 * S)); /* not due */
		ts_node_sync_io(r0, kv);
		ts_node_sync_io(r1, kv);
		ts_node_sync_end(p0, r0, NULL, T0 + (uint64_t)k * 2 * S);
		ts_node_sync_end(p1, r1, NULL, T0 + (uint64_t)k * 2 * S);
		ts_node_sync_get_stats(p0, &st);
		assert_int_equal(st.stored, (uint64_t)k);
	}
	int keys = fakekv_count(kv, "nodehealth.>", &bytes0); /* a head and parts a blob */
	assert_true(keys >= 2);
	/* p1 stored after p0 read: p0 sees 2 jobs until its next round, p1 all 3 */
	ts_node_sync_get_stats(p1, &st);
	assert_int_equal(st.degraded, 1);
	ts_node_sync_render(p1, &b);
	assert_non_null(strstr(b.data, "trainscope_node_degraded_score{node=\"gpu-4\",cause=\"Compute\"} 3"));
	/* p0 restarts: its first round resumes a and b, stores nothing, and still sees c */
	ts_node_sync_free(p0);
	assert_int_equal(ts_node_sync_new(&again, &o, 0, 2, 1.0), 0);
	round_of(again, kv, T0 + 10 * S);
	assert_int_equal(fakekv_count(kv, "nodehealth.>", &bytes1), keys);
	assert_int_equal(bytes1, bytes0);
	ts_node_sync_get_stats(again, &st);
	assert_int_equal(st.stored, 0);
	assert_int_equal(st.degraded, 1);
	round_of(again, kv, T0 + 12 * S);
	ts_node_sync_get_stats(again, &st);
	assert_int_equal(st.stored, 1);
	assert_int_equal(st.degraded, 1);
	/* without a bucket the round still counts */
	ts_node_sync_end(p1, ts_node_sync_begin(p1, false, T0 + 20 * S), NULL, T0 + 20 * S);
	ts_node_sync_get_stats(p1, &st);
	assert_int_equal(st.degraded, 1);
	free(b.data);
	ts_node_sync_free(again), ts_node_sync_free(p1);
	fakekv_free(kv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_jobs_degrade),
		cmocka_unit_test(test_device_alone_degrades),
		cmocka_unit_test(test_decay_and_hysteresis),
		cmocka_unit_test(test_partitions_add_up),
		cmocka_unit_test(test_bad_blob),
		cmocka_unit_test(test_from_report),
		cmocka_unit_test(test_passing_alarm_withdrawn),
		cmocka_unit_test(test_gpu_time_by_node),
		cmocka_unit_test(test_full_table),
		cmocka_unit_test(test_sync_rounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
