// SPDX-License-Identifier: Apache-2.0
/* The analyzer's limits (limits.* of its configuration): jobs, world size, memory and
 * step jumps refused and counted; finished jobs forgotten after their time to live;
 * batches a producer resent after later ones taken once, not counted lost. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "analysis/ingest/analyzer.h"
#include "common/tests/testbatch.h"
#include "ident.h"

#define MS 1000000ull
#define T0 (1700000000ull * 1000 * MS)

static uint64_t next_seq; /* 0: the producer's next */
static const char *subject_job; /* non-NULL: the subject names this job, not the batch's */
static const char *subject_tail = ""; /* after the rank: a partition token ".3" */
static const char *feed_ns = "ml";      /* the namespace batches claim and publish in */

/* Packs a batch of steps [first, first + n) of one rank and feeds it. */
static int feed(struct ts_analyzer *a, const char *job, int rank, int world, uint64_t first,
		int n, bool final)
{
	static struct ts_test_batch x;
	static uint64_t seq[1 << 16];
	char subject[128];
	uint8_t buf[4096];
	size_t len;

	assert_true(n <= 8);
	uint64_t h = 1469598103934665603ull; /* FNV-1a of the job's name: a producer a job */
	for (const char *c = job; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	uint64_t producer = 0x1000 + (uint64_t)(rank & 0xffff) + ((h & 0xffffff) << 32);
	ts_test_batch_init(&x, feed_ns, job, rank, world, producer,
			   next_seq ? next_seq : ++seq[(producer ^ (producer >> 32)) & 0xffff]);
	x.b.final = final;
	for (int i = 0; i < n; i++) {
		uint64_t k = first + (uint64_t)i, start = T0 + k * 100 * MS;
		assert_non_null(ts_test_batch_step(&x, k, start, start + 90 * MS, 60 * MS));
	}
	assert_true((len = ts_test_batch_pack(&x, buf, sizeof(buf))) > 0);
	snprintf(subject, sizeof(subject), "ts.v1.%s.%s.rank.%d%s", feed_ns,
		 subject_job ? subject_job : job, rank, subject_tail);
	return ts_analyzer_ingest(a, subject, buf, len);
}

static struct ts_analyzer *analyzer(void (*set)(struct ts_limits *))
{
	struct ts_analyzer_opts o = { 0 };
	struct ts_analyzer *a;

	ts_params_defaults(&o.params);
	set(&o.params.limits);
	assert_int_equal(ts_analyzer_new(&a, &o), 0);
	return a;
}

static void three_jobs(struct ts_limits *l) { l->max_jobs = 3; l->namespace_share = 1; }

static void test_max_jobs(void **state)
{
	struct ts_analyzer *a = analyzer(three_jobs);
	struct ts_analyzer_stats st;
	char name[8];

	(void)state;
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "j%d", i);
		feed(a, name, 0, 2, 0, 4, false);
	}
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.jobs, 3);
	assert_int_equal(st.over_limit[0], 2);
	assert_non_null(ts_analyzer_job(a, "ml", "j2"));
	assert_null(ts_analyzer_job(a, "ml", "j3"));
	/* a name a report cannot hold is refused before it makes a job */
	assert_int_equal(feed(a, "\xff\xfe", 0, 2, 0, 1, false), -EBADMSG);
	ts_analyzer_free(a);
}

static void short_ttl(struct ts_limits *l)
{
	l->max_jobs = 3, l->namespace_share = 1, l->job_ttl_s = 10;
}

static void as_shipped(struct ts_limits *l) { (void)l; }

/* Room for three jobs of 4,096 ranks in limits.memory_mb, half of it a namespace's: a
 * second such job of team-a is refused there, counted there, and team-b's comes in. */
static void test_namespace_memory_share(void **state)
{
	struct ts_analyzer_opts o = { 0 };
	struct ts_analyzer *a;
	struct ts_buf m = { 0 };

	(void)state;
	ts_params_defaults(&o.params);
	o.params.limits.memory_mb = (int)((3 * ts_job_bytes(&o.params, 4096) >> 20) + 1);
	assert_int_equal(ts_analyzer_new(&a, &o), 0);
	feed_ns = "team-a";
	assert_int_equal(feed(a, "big1", 0, 4096, 0, 4, false), 0);
	assert_int_equal(feed(a, "big2", 0, 4096, 0, 4, false), -ERANGE);
	assert_int_equal(feed(a, "small", 0, 2, 0, 4, false), 0);
	feed_ns = "team-b";
	assert_int_equal(feed(a, "big1", 0, 4096, 0, 4, false), 0);
	ts_analyzer_render_metrics(a, &m);
	assert_non_null(strstr(m.data, "trainscope_analyzer_jobs_refused_total{k8s_namespace="
				       "\"team-a\"} 1\n"));
	assert_non_null(strstr(m.data, "refused_over_limit_total{limit=\"memory\"} 1\n"));
	assert_null(strstr(m.data, "k8s_namespace=\"team-b\"} "));
	free(m.data);
	feed_ns = "ml";
	ts_analyzer_free(a);
}

/* 10,000 one-batch jobs from one namespace that end at once, 2,000 between two ticks,
 * then a real job from another: the table (1,024 jobs, 512 a namespace) gives up ended
 * jobs for new ones, those that ended since the last tick too, so none is refused and
 * the real job is followed and judged. */
static void test_flood_of_finished_jobs(void **state)
{
	struct ts_analyzer *a = analyzer(as_shipped);
	struct ts_analyzer_stats st;
	struct ts_buf m = { 0 };
	char name[16];

	(void)state;
	feed_ns = "flood";
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		feed(a, name, 0, 1, 0, 1, true);
		if (i % 2000 == 1999) /* a tick every 100 ms, the burst faster */
			ts_analyzer_tick(a, T0 + (uint64_t)i * MS);
	}
	feed_ns = "ml";
	for (int step = 0; step < 60; step += 4) {
		assert_int_equal(feed(a, "real", 0, 2, (uint64_t)step, 4, false), 0);
		assert_int_equal(feed(a, "real", 1, 2, (uint64_t)step, 4, false), 0);
		ts_analyzer_tick(a, T0 + 20000 * MS + (uint64_t)step * 100 * MS);
	}
	struct ts_job *j = ts_analyzer_job(a, "ml", "real");
	assert_non_null(j);
	assert_true(ts_job_result(j)->steps_evaluated > 40);
	ts_analyzer_get_stats(a, &st);
	assert_true(st.jobs_given_up >= 10000 - 512);
	assert_int_equal(st.over_limit[0], 0);
	ts_analyzer_render_metrics(a, &m);
	assert_null(strstr(m.data, "jobs_refused_total{k8s_namespace="));
	assert_non_null(strstr(m.data, "trainscope_analyzer_jobs_given_up_total"));
	free(m.data);
	ts_analyzer_free(a);
	feed_ns = "ml";
}

/* A job whose world grows a rank a batch (each rank's first batch names a world one
 * larger): 16,384 ranks are taken, each rank's steps counted, the job's world the last. */
static void test_world_grows_a_rank_a_batch(void **state)
{
	struct ts_analyzer *a = analyzer(as_shipped);
	const int n = 16384;

	(void)state;
	for (int r = 0; r < n; r++)
		assert_int_equal(feed(a, "grow", r, r + 1, 0, 2, false), 0);
	struct ts_job *j = ts_analyzer_job(a, "ml", "grow");
	assert_non_null(j);
	assert_int_equal(ts_job_world(j), n);
	ts_analyzer_tick(a, T0 + 1000 * MS);
	ts_analyzer_free(a);
}

static void four_jobs_half(struct ts_limits *l) { l->max_jobs = 4; l->namespace_share = 0.5; }

/* Running jobs from one namespace take at most its share: a third from team-a is refused
 * there, counted there, and team-b's jobs still come in. */
static void test_namespace_share(void **state)
{
	struct ts_analyzer *a = analyzer(four_jobs_half);
	struct ts_buf m = { 0 };

	(void)state;
	feed_ns = "team-a";
	assert_int_equal(feed(a, "a1", 0, 2, 0, 4, false), 0);
	assert_int_equal(feed(a, "a2", 0, 2, 0, 4, false), 0);
	assert_int_equal(feed(a, "a3", 0, 2, 0, 4, false), -ERANGE);
	feed_ns = "team-b";
	assert_int_equal(feed(a, "b1", 0, 2, 0, 4, false), 0);
	assert_int_equal(feed(a, "b2", 0, 2, 0, 4, false), 0);
	assert_non_null(ts_analyzer_job(a, "team-b", "b2"));
	ts_analyzer_render_metrics(a, &m);
	assert_non_null(strstr(m.data, "trainscope_analyzer_jobs_refused_total{k8s_namespace="
				       "\"team-a\"} 1\n"));
	assert_null(strstr(m.data, "k8s_namespace=\"team-b\"} "));
	free(m.data);
	feed_ns = "ml";
	ts_analyzer_free(a);
}

/* Jobs that went silent give their places back after job_ttl_s. */
static void test_silent_jobs_forgotten(void **state)
{
	struct ts_analyzer *a = analyzer(short_ttl);
	char name[8];

	(void)state;
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		feed(a, name, 0, 2, 0, 4, false);
	}
	ts_analyzer_tick(a, T0);
	assert_int_equal(feed(a, "late", 0, 2, 0, 4, false), -ERANGE);
	struct ts_analyzer_stats st;
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.producers, 4); /* feed: one per job and rank; the refused one was
					    * sequence-checked first */
	ts_analyzer_tick(a, T0 + 11000 * MS);
	assert_null(ts_analyzer_job(a, "ml", "s0"));
	/* their producers are forgotten too: a long life of processes leaves no entries */
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.producers, 0);
	assert_int_equal(feed(a, "late", 0, 2, 0, 4, false), 0);
	assert_non_null(ts_analyzer_job(a, "ml", "late"));
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.producers, 1);
	ts_analyzer_free(a);
}

static void small_world(struct ts_limits *l) { l->max_world = 1024; l->memory_mb = 2; }

static void test_world_and_memory(void **state)
{
	struct ts_analyzer *a = analyzer(small_world);
	struct ts_analyzer_stats st;
	struct ts_buf m = { 0 };

	(void)state;
	feed(a, "huge", 0, 1000000, 0, 4, false);  /* a world of a million: refused */
	feed(a, "ok", 0, 4, 0, 4, false);
	feed(a, "ok", 65535, 4, 0, 4, false);      /* a rank far past the limit */
	feed(a, "ok", INT_MAX, 4, 0, 4, false);    /* the largest rank: no overflow */
	feed(a, "wide", 0, 1000, 0, 4, false);     /* 1,000 ranks: about 4 MB, past 2 MB */
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.over_limit[1], 1 + 4 + 4);
	assert_true(st.over_limit[2] >= 1);
	assert_null(ts_analyzer_job(a, "ml", "huge"));
	assert_null(ts_analyzer_job(a, "ml", "wide"));
	assert_int_equal(ts_job_world(ts_analyzer_job(a, "ml", "ok")), 4);
	ts_analyzer_render_metrics(a, &m);
	assert_non_null(strstr(m.data, "trainscope_analyzer_refused_over_limit_total{limit=\"world\"} 9"));
	assert_non_null(strstr(m.data, "trainscope_analyzer_job_state_bytes "));
	ts_buf_free(&m);
	ts_analyzer_free(a);
}

struct told { int n; char name[64], state[16], reason[32], message[512]; };

static void on_report(void *ctx, json_t *rep, uint64_t now_ns)
{
	struct told *t = ctx;
	json_t *st = json_object_get(rep, "status");
	json_t *c = json_array_get(json_object_get(st, "conditions"), 0);

	(void)now_ns;
	if (strcmp(json_string_value(json_object_get(st, "state")), "Unknown"))
		return;
	t->n++;
	snprintf(t->name, sizeof(t->name), "%s",
		 json_string_value(json_object_get(json_object_get(rep, "metadata"), "name")));
	snprintf(t->state, sizeof(t->state), "%s", json_string_value(json_object_get(st, "state")));
	snprintf(t->reason, sizeof(t->reason), "%s", json_string_value(json_object_get(c, "reason")));
	snprintf(t->message, sizeof(t->message), "%s",
		 json_string_value(json_object_get(c, "message")));
}

/* A job refused whole is told so in a report of its own, once: never left with none. */
static void test_refused_job_told(void **state)
{
	struct ts_analyzer_opts o = { .on_report = on_report };
	struct told t = { 0 };
	struct ts_analyzer *a;

	(void)state;
	o.on_report_ctx = &t;
	ts_params_defaults(&o.params);
	small_world(&o.params.limits);
	assert_int_equal(ts_analyzer_new(&a, &o), 0);
	feed(a, "huge", 0, 100000, 0, 4, false);
	feed(a, "huge", 1, 100000, 0, 4, false);
	ts_analyzer_tick(a, T0 + 1000 * MS);
	ts_analyzer_tick(a, T0 + 2000 * MS);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.name, "huge");
	assert_string_equal(t.reason, "Refused");
	assert_non_null(strstr(t.message, "100000 ranks"));
	assert_non_null(strstr(t.message, "limits.max_world"));
	feed(a, "huge", 2, 100000, 0, 4, false); /* refused again: already told */
	ts_analyzer_tick(a, T0 + 3000 * MS);
	assert_int_equal(t.n, 1);
	/* more refused jobs than the table holds, each sending again: each told once */
	char name[16];
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 40; i++) {
			snprintf(name, sizeof(name), "huge-%d", i);
			feed(a, name, 0, 100000, 0, 4, false);
		}
		ts_analyzer_tick(a, T0 + (4000 + 1000 * (uint64_t)round) * MS);
	}
	assert_int_equal(t.n, 1 + 40);
	ts_analyzer_free(a);
}

static void defaults(struct ts_limits *l) { l->job_ttl_s = 60; }

static void test_step_jump_and_forget(void **state)
{
	struct ts_analyzer *a = analyzer(defaults);
	struct ts_analyzer_stats st;

	(void)state;
	for (uint64_t k = 0; k < 40; k += 8)
		for (int r = 0; r < 2; r++)
			feed(a, "run", r, 2, k, 8, false);
	assert_int_equal(feed(a, "run", 0, 2, 1ull << 62, 1, false), 0);
	ts_analyzer_tick(a, T0 + 5000 * MS);
	for (int r = 0; r < 2; r++)
		feed(a, "run", r, 2, 40, 1, true);
	ts_analyzer_tick(a, T0 + 6000 * MS);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.over_limit[3], 1);
	assert_non_null(ts_analyzer_job(a, "ml", "run"));
	ts_analyzer_tick(a, T0 + 6000 * MS + 59000 * MS);
	assert_non_null(ts_analyzer_job(a, "ml", "run"));
	ts_analyzer_tick(a, T0 + 6000 * MS + 61000 * MS);
	ts_analyzer_get_stats(a, &st);
	assert_null(ts_analyzer_job(a, "ml", "run"));
	assert_int_equal(st.jobs_forgotten, 1);
	ts_analyzer_free(a);
}

static void test_resend_out_of_order(void **state)
{
	struct ts_analyzer *a = analyzer(defaults);
	struct ts_analyzer_stats st;
	/* stored order after a freeze: 1, 2, 5, 6, 3, 4, then 4 again and 1 again */
	uint64_t order[] = { 1, 2, 5, 6, 3, 4, 4, 1 };

	(void)state;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		next_seq = order[i];
		feed(a, "rs", 0, 1, order[i] - 1, 1, false);
	}
	next_seq = 0;
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.batches, 6);
	assert_int_equal(st.reordered, 2);
	assert_int_equal(st.duplicates, 2);
	assert_int_equal(st.lost_batches, 0);
	ts_analyzer_free(a);
}

/* A gap filled after the job's last step was judged (a batch stored out of order, the
 * relay's resend): the report says so too, not only the metric. It kept "1 batch lost:
 * the verdict stands on incomplete data" for good (a GPU run with nothing missing). */
static void test_gap_filled_late_reported(void **state)
{
	char dir[] = "/tmp/ts-report-XXXXXX", file[160], text[8192];
	struct ts_analyzer_opts o = { 0 };
	struct ts_analyzer *a;
	FILE *f;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	ts_params_defaults(&o.params);
	o.report_dir = dir;
	assert_int_equal(ts_analyzer_new(&a, &o), 0);
	snprintf(file, sizeof(file), "%s/ml_gap.json", dir);
	for (uint64_t seq = 1; seq <= 4; seq++)
		if (seq != 3) {
			next_seq = seq;
			feed(a, "gap", 0, 1, (seq - 1) * 8, 8, false);
		}
	ts_analyzer_tick(a, T0 + 4000 * MS);
	for (int pass = 0; pass < 2; pass++) {
		assert_non_null(f = fopen(file, "r"));
		n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = 0;
		fclose(f);
		assert_non_null(strstr(text, pass ? "\"batchesLost\": 0" : "\"batchesLost\": 1"));
		next_seq = 3; /* the missing batch, what it holds long judged: late */
		feed(a, "gap", 0, 1, 0, 8, false);
		ts_analyzer_tick(a, T0 + 5000 * MS);
	}
	next_seq = 0;
	ts_analyzer_free(a);
	unlink(file);
	rmdir(dir);
}

/* A job name run again after its ranks exited is a new run: its state starts afresh
 * instead of the new steps being dropped as late behind the old run. */
static void test_new_attempt(void **state)
{
	struct ts_analyzer *a = analyzer(defaults);
	struct ts_analyzer_stats st;

	(void)state;
	for (uint64_t k = 0; k < 32; k += 8)
		for (int r = 0; r < 2; r++)
			feed(a, "again", r, 2, k, 8, false);
	/* a helper process of rank 0 exits; rank 0 steps on: the same run */
	feed(a, "again", 0, 2, 0, 0, true);
	for (int r = 0; r < 2; r++)
		feed(a, "again", r, 2, 32, 8, false);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.attempts, 0);
	for (int r = 0; r < 2; r++)
		feed(a, "again", r, 2, 40, 1, true);
	ts_analyzer_tick(a, T0 + 5000 * MS);
	assert_true(ts_job_result(ts_analyzer_job(a, "ml", "again"))->steps_evaluated >= 40);
	for (int r = 0; r < 2; r++)
		feed(a, "again", r, 2, 0, 8, false);
	ts_analyzer_tick(a, T0 + 6000 * MS);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.attempts, 1);
	assert_int_equal(ts_job_late_steps(ts_analyzer_job(a, "ml", "again")), 0);
	assert_true(ts_job_result(ts_analyzer_job(a, "ml", "again"))->steps_evaluated <= 8);
	ts_analyzer_free(a);
}

/* A report folder that cannot be written (a full disk, here a file in its place): the
 * failure is counted and shown, nothing half-written stays, and the report is written
 * once the folder works again. */
static void test_report_dir_recovers(void **state)
{
	char dir[] = "/tmp/ts-report-XXXXXX", path[128], file[160];
	struct ts_analyzer_opts o = { 0 };
	struct ts_analyzer_stats st;
	struct ts_analyzer *a;
	struct ts_buf m = { 0 };
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/reports", dir);
	assert_non_null(f = fopen(path, "w")); /* a file where the folder should be */
	fclose(f);
	ts_params_defaults(&o.params);
	o.report_dir = path;
	assert_int_equal(ts_analyzer_new(&a, &o), 0);
	feed(a, "disk", 0, 1, 0, 8, false);
	ts_analyzer_tick(a, T0);
	ts_analyzer_tick(a, T0 + 1000 * MS);
	ts_analyzer_get_stats(a, &st);
	assert_true(st.report_errors >= 2);
	ts_analyzer_render_metrics(a, &m);
	assert_non_null(strstr(m.data, "trainscope_analyzer_report_dir_failing 1"));
	ts_buf_free(&m);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	ts_analyzer_tick(a, T0 + 2000 * MS);
	snprintf(file, sizeof(file), "%s/ml_disk.json", path);
	assert_int_equal(access(file, R_OK), 0);
	ts_buf_free(&m);
	ts_analyzer_render_metrics(a, &m);
	assert_non_null(strstr(m.data, "trainscope_analyzer_report_dir_failing 0"));
	ts_buf_free(&m);
	ts_analyzer_free(a);
	unlink(file);
	rmdir(path);
	rmdir(dir);
}

/* --report-dir on another filesystem than the working directory (a volume, a tmpfs):
 * the temporary file is made beside the report, so the rename never crosses devices
 * (it was made in the working directory: EXDEV, every time). */
static void test_report_dir_other_filesystem(void **state)
{
	char dir[] = "/dev/shm/ts-report-XXXXXX", file[160];
	struct ts_analyzer_opts o = { 0 };
	struct ts_analyzer_stats st;
	struct ts_analyzer *a;
	struct stat here, there;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(stat(".", &here), 0);
	assert_int_equal(stat(dir, &there), 0);
	if (here.st_dev == there.st_dev)
		print_message("note: %s is on the working directory's filesystem here\n", dir);
	ts_params_defaults(&o.params);
	o.report_dir = dir;
	assert_int_equal(ts_analyzer_new(&a, &o), 0);
	feed(a, "vol", 0, 1, 0, 8, false);
	ts_analyzer_tick(a, T0);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.report_errors, 0);
	snprintf(file, sizeof(file), "%s/ml_vol.json", dir);
	assert_int_equal(access(file, R_OK), 0);
	assert_int_equal(access(".tmp", F_OK), -1); /* nothing left where it runs */
	ts_analyzer_free(a);
	unlink(file);
	rmdir(dir);
}

static void no_limits(struct ts_limits *l) { (void)l; }

/* A batch claiming a job other than its subject's is refused and counted: a producer
 * allowed on ts.v1.ml.attacker.> cannot turn job victim to Hang or grow its world. */
static void test_identity_matches_subject(void **state)
{
	struct ts_analyzer *a = analyzer(no_limits);
	struct ts_analyzer_stats st;

	(void)state;
	assert_int_equal(feed(a, "victim", 0, 2, 0, 4, false), 0);
	subject_job = "attacker";
	assert_int_equal(feed(a, "victim", 9, 10, 0, 4, false), -EBADMSG);
	assert_int_equal(feed(a, "victim", 9, 10, 4, 4, false), -EBADMSG);
	subject_job = NULL;
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.mismatched, 2);
	assert_int_equal(ts_job_world(ts_analyzer_job(a, "ml", "victim")), 2);
	assert_null(ts_analyzer_job(a, "ml", "attacker"));
	/* batches that match their subject are still taken */
	assert_int_equal(feed(a, "victim", 1, 2, 4, 1, false), 0);
	ts_analyzer_free(a);
}

/* Subjects of a partitioned stream carry the job's partition as a seventh token: taken;
 * one NATS mapped under another partition count is analysed and counted; anything else
 * after the rank is a bad subject. */
static void test_partition_token(void **state)
{
	struct ts_analyzer_opts o = { .partitions = 2 };
	struct ts_analyzer_stats st;
	struct ts_analyzer *a;
	char right[8], wrong[8];
	unsigned p = ts_partition("ml", 2, "llm", 3, 2);

	(void)state;
	ts_params_defaults(&o.params);
	assert_int_equal(ts_analyzer_new(&a, &o), 0);
	snprintf(right, sizeof(right), ".%u", p);
	snprintf(wrong, sizeof(wrong), ".%u", 1 - p);
	subject_tail = right;
	assert_int_equal(feed(a, "llm", 0, 2, 0, 4, false), 0);
	subject_tail = wrong;
	assert_int_equal(feed(a, "llm", 1, 2, 0, 4, false), 0);
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.other_partition, 1);
	assert_int_equal(st.steps, 8);
	static const char *const bad[] = { ".x", ".1.2", ".", ".-1", ".99999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		subject_tail = bad[i];
		assert_int_equal(feed(a, "llm", 0, 2, 4, 1, false), -EINVAL);
	}
	/* a batch claiming another job is refused with a partition token too */
	subject_tail = right;
	subject_job = "other";
	assert_int_equal(feed(a, "llm", 0, 2, 4, 1, false), -EBADMSG);
	subject_job = NULL;
	subject_tail = "";
	ts_analyzer_get_stats(a, &st);
	assert_int_equal(st.bad_subject, 5);
	assert_int_equal(st.mismatched, 1);
	ts_analyzer_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_max_jobs),
		cmocka_unit_test(test_flood_of_finished_jobs),
		cmocka_unit_test(test_namespace_share),
		cmocka_unit_test(test_namespace_memory_share),
		cmocka_unit_test(test_world_grows_a_rank_a_batch),
		cmocka_unit_test(test_silent_jobs_forgotten),
		cmocka_unit_test(test_world_and_memory),
		cmocka_unit_test(test_refused_job_told),
		cmocka_unit_test(test_step_jump_and_forget),
		cmocka_unit_test(test_resend_out_of_order),
		cmocka_unit_test(test_gap_filled_late_reported),
		cmocka_unit_test(test_report_dir_recovers),
		cmocka_unit_test(test_report_dir_other_filesystem),
		cmocka_unit_test(test_new_attempt),
		cmocka_unit_test(test_identity_matches_subject),
		cmocka_unit_test(test_partition_token),
	};
	return cmocka_run_group_tests_name("limits", tests, NULL, NULL);
}
