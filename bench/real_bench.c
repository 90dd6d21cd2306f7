// SPDX-License-Identifier: Apache-2.0
/* make real-bench: every recording of real training programs (bench/data, recorded by
 * e2e/gpu/record.sh, cut by trainscope record) replayed into a fresh analyzer of the
 * defaults, on the time each message reached the stream, and judged against its label:
 * a healthy job must end with no FailSlow, no rank and no network verdict ever named; a
 * faulty one must name its rank alone, with the labelled cause, from its onset on. A
 * fault that cost the job less than verdict.min_slowdown (its step time measured from
 * the recording, before the onset and after) is faint: the analyzer promises not to
 * name it, so only a wrong rank or cause fails it, and it is counted apart. Prints a row per recording and the totals; exits 1 when any recording fails. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/ingest/analyzer.h"
#include "analysis/detect/job.h"
#include "analysis/detect/params.h"
#include "analysis/detect/stats.h"
#include "log.h"
#include "recording.h"

#define TICK_NS 100000000ull   /* the analyzer's main loop ticks so (analysis/main.c) */
#define TAIL_NS 60000000000ull /* ticks after the last message: the job's end is judged */
#define MAX_NAMED 16

/* What a recording holds, and the truth of it (bench/data/labels.json). */
struct label {
	char name[64], file[256], job[64], program[32];
	int world;
	bool healthy;
	int rank;           /* the faulty rank */
	char cause[16];     /* its cause: Compute, Communication, HostCPU, Storage, Device */
	char also[16];      /* a second cause as true as the first ("" none): two faults on
			     * the rank at once (a neighbour on a GPU that throttles for heat) */
	uint64_t fault_ns;  /* when the fault really began; 0: before the job */
	char known[160];    /* a failure known and not fixed yet: why ("" none) */
};

/* One (rank, cause) the analyzer named, and when. */
struct named {
	int rank;
	const char *cause;
	uint64_t at_step;
};

struct outcome {
	enum ts_state final;
	bool seen, net, early;
	int nnamed;
	struct named named[MAX_NAMED];
	long onset;          /* the faulty rank's first step that ended after the fault began */
	long latency;        /* steps from onset to the right rank named; -1: never */
	bool pass, faint;
	double impact;       /* the job's step time after the onset over before, less 1 */
	char why[160];
	/* the last lost-time line's costliest rank and its share of the step (-1: none) */
	int lost_rank;
	double lost_share;
	uint64_t msgs, steps;
	struct { uint64_t step; double ms; } *rs; /* every rank-step's step time */
	size_t nrs, cap;
};

/* A fault's rank named, the report's lost time must not give another rank more than this
 * share of the step. */
#define LOST_MIN 0.05

/* Replay state: the label and outcome the analyzer's step callback writes into. */
struct replay {
	const struct label *l;
	struct outcome *o;
	FILE *dump; /* --dump: every rank step as a CSV row */
};

/* on_step: the faulty rank's first step that ended once its fault had begun. */
static void on_step(void *ctx, struct ts_job *j, const Trainscope__V1__Identity *id,
		    const Trainscope__V1__Step *s)
{
	struct replay *rp = ctx;

	(void)j;
	rp->o->steps++;
	if (rp->o->nrs == rp->o->cap) {
		size_t cap = rp->o->cap ? 2 * rp->o->cap : 4096;
		void *n = realloc(rp->o->rs, cap * sizeof(*rp->o->rs));
		if (!n)
			abort(); /* a bench: no half-measured impact */
		rp->o->rs = n, rp->o->cap = cap;
	}
	rp->o->rs[rp->o->nrs].step = s->step;
	rp->o->rs[rp->o->nrs++].ms = (s->end_ns - s->start_ns) / 1e6;
	if (rp->dump && id) {
		double gt = 0, gf = 0; /* the sampled GEMMs: ms and Tflop/s weighted by time */
		for (size_t g = 0; g < s->n_gemms; g++)
			gt += s->gemms[g]->time_ns / 1e6, gf += s->gemms[g]->tflops * s->gemms[g]->time_ns / 1e6;
		fprintf(rp->dump, "%s,%d,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f\n",
			rp->l->name, id->rank, (unsigned long long)s->step,
			(s->end_ns - s->start_ns) / 1e6, s->compute_ns / 1e6, s->compute_wall_ns / 1e6,
			s->collective_ns / 1e6, s->launch_ns / 1e6, s->dataloader_ns / 1e6,
			s->sync_ns / 1e6, s->gc_ns / 1e6, gt, gt > 0 ? gf / gt : 0);
	}
	if (rp->l->healthy || rp->o->onset >= 0 || !id || id->rank != rp->l->rank)
		return;
	if (s->end_ns >= rp->l->fault_ns)
		rp->o->onset = (long)s->step;
}

/* Whether cause is the label's (or its second, also_cause). */
static bool cause_right(const struct label *l, const char *cause)
{
	return !strcmp(cause, l->cause) || (l->also[0] && !strcmp(cause, l->also));
}

/* A recording's name in the table: its file's, less the folder and .tsrec.gz, and -wWORLD
 * (the job in it may be named otherwise: a relabelled recording keeps its job). */
static void label_name(char *dst, size_t n, const char *file, int world)
{
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	size_t len = strcspn(base, ".");

	snprintf(dst, n, "%.*s-w%d", (int)len, base, world);
}

/* Notes what the job's result names now. */
static void judge(const struct label *l, struct ts_job *j, struct outcome *o)
{
	const struct ts_job_result *r = ts_job_result(j);

	o->seen = true;
	o->final = r->state;
	if (r->lost.valid) {
		o->lost_rank = r->lost.nranks ? r->lost.rank[0].rank : -1;
		o->lost_share = r->lost.nranks ? r->lost.rank[0].share : 0;
	}
	o->net |= r->net.scope != TS_NET_NONE;
	for (int i = 0; i < r->nslow; i++) {
		const struct ts_slow_rank *s = &r->slow[i];
		bool known = false;
		for (int k = 0; k < o->nnamed && !known; k++)
			known = o->named[k].rank == s->rank && !strcmp(o->named[k].cause, s->cause);
		if (known || o->nnamed == MAX_NAMED)
			continue;
		o->named[o->nnamed++] = (struct named){ s->rank, s->cause, r->last_step };
		if (!l->healthy && s->rank == l->rank && (o->onset < 0 || (long)r->last_step < o->onset))
			o->early = true;
	}
}

/* What the fault cost the job: the median step time of every rank from 10 steps after the
 * onset over that of the steps from 10 to 10 before it, less 1; NAN when it began before
 * the job or either side has fewer than 20 rank-steps. */
static double impact(const struct outcome *o)
{
	double *before = malloc((o->nrs + 1) * sizeof(double)), *after = malloc((o->nrs + 1) * sizeof(double)),
	       *tmp = malloc((o->nrs + 1) * sizeof(double)), r = NAN;
	size_t nb = 0, na = 0;

	if (!before || !after || !tmp || o->onset < 20)
		goto out;
	for (size_t i = 0; i < o->nrs; i++) {
		long st = (long)o->rs[i].step;
		if (st >= 10 && st < o->onset - 10)
			before[nb++] = o->rs[i].ms;
		else if (st >= o->onset + 10)
			after[na++] = o->rs[i].ms;
	}
	if (nb >= 20 && na >= 20)
		r = ts_median(after, na, tmp) / ts_median(before, nb, tmp) - 1;
out:
	free(before), free(after), free(tmp);
	return r;
}

/* The verdict on a replayed recording: o->pass, o->why and the latency; a fault that
 * cost the job under min_slowdown is faint. */
static void verdict(const struct label *l, struct outcome *o, double min_slowdown)
{
	o->latency = -1;
	o->pass = false;
	o->impact = l->healthy ? NAN : impact(o);
	o->faint = o->impact < min_slowdown;
	if (!o->seen) {
		snprintf(o->why, sizeof(o->why), "the analyzer never took the job");
		return;
	}
	if (l->healthy) {
		if (o->nnamed)
			snprintf(o->why, sizeof(o->why), "rank %d named (%s) at step %llu",
				 o->named[0].rank, o->named[0].cause,
				 (unsigned long long)o->named[0].at_step);
		else if (o->net)
			snprintf(o->why, sizeof(o->why), "a network verdict");
		else if (o->final == TS_STATE_FAILSLOW)
			snprintf(o->why, sizeof(o->why), "ends FailSlow");
		else
			o->pass = true;
		return;
	}
	for (int k = 0; k < o->nnamed; k++) {
		const struct named *n = &o->named[k];
		if (n->rank != l->rank) {
			snprintf(o->why, sizeof(o->why), "rank %d named (%s), not rank %d", n->rank,
				 n->cause, l->rank);
			return;
		}
		if (!cause_right(l, n->cause)) {
			snprintf(o->why, sizeof(o->why), "rank %d named %s, not %s", n->rank,
				 n->cause, l->cause);
			return;
		}
		if (o->latency < 0)
			o->latency = (long)n->at_step - o->onset;
	}
	if (o->early)
		snprintf(o->why, sizeof(o->why), "rank %d named before its onset (step %ld)",
			 l->rank, o->onset);
	else if (o->latency < 0 && !o->faint)
		snprintf(o->why, sizeof(o->why), "rank %d never named", l->rank);
	else if (o->latency >= 0 && o->lost_rank >= 0 && o->lost_rank != l->rank &&
		 o->lost_share >= LOST_MIN)
		/* the report's lost-time line and the GPU time lost go to that rank */
		snprintf(o->why, sizeof(o->why), "the lost time gives rank %d %.0f%% of the step, "
			 "rank %d named", o->lost_rank, 100 * o->lost_share, l->rank);
	else
		o->pass = true;
}

/* Replays the recording of l (under dir) into a fresh analyzer. 0, or -errno said. */
static int replay(const struct label *l, const char *dir, const struct ts_params *p,
		  struct outcome *o, FILE *dump)
{
	struct ts_analyzer_opts ao = { .params = *p };
	struct replay rp = { l, o, dump };
	struct ts_analyzer *a = NULL;
	struct ts_rec *rec = NULL;
	char path[600];
	uint64_t t, next = 0, last = 0;
	const char *subject;
	const void *data;
	size_t len;
	int err;

	memset(o, 0, sizeof(*o));
	o->lost_rank = -1;
	o->onset = l->healthy ? -1 : l->fault_ns ? -1 : 0;
	ao.on_step = on_step;
	ao.on_report_ctx = &rp;
	snprintf(path, sizeof(path), "%s/%s", dir, l->file);
	if ((err = ts_rec_open_read(&rec, path))) {
		fprintf(stderr, "real_bench: %s: %s\n", path, strerror(-err));
		return err;
	}
	if ((err = ts_analyzer_new(&a, &ao)))
		goto out;
	while ((err = ts_rec_next(rec, &t, &subject, &data, &len)) == 1) {
		for (; next && next <= t; next += TICK_NS) {
			ts_analyzer_tick(a, next);
			struct ts_job *j = ts_analyzer_job(a, "default", l->job);
			if (j)
				judge(l, j, o);
		}
		if (!next)
			next = t + TICK_NS;
		ts_analyzer_ingest(a, subject, data, len);
		o->msgs++;
		last = t;
	}
	if (err < 0) {
		fprintf(stderr, "real_bench: %s: %s\n", path, strerror(-err));
		goto out;
	}
	for (; next && next <= last + TAIL_NS; next += TICK_NS) {
		ts_analyzer_tick(a, next);
		struct ts_job *j = ts_analyzer_job(a, "default", l->job);
		if (!j)
			break;
		judge(l, j, o);
		if (ts_job_finished(j))
			break;
	}
	verdict(l, o, p->verdict.min_slowdown);
	err = 0;
out:
	ts_analyzer_free(a);
	ts_rec_close(rec);
	return err;
}

/* Reads the labels: 0 with *out and *n, or -1 said. */
static int load_labels(const char *path, struct label **out, int *n)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je), *e;
	size_t i;

	if (!root || !json_is_array(root)) {
		fprintf(stderr, "real_bench: %s: %s (line %d)\n", path,
			root ? "not a JSON array" : je.text, je.line);
		json_decref(root);
		return -1;
	}
	*out = calloc(json_array_size(root) + 1, sizeof(**out));
	*n = 0;
	json_array_foreach(root, i, e) {
		struct label *l = &(*out)[(*n)++];
		const char *file = NULL, *job = NULL, *prog = "", *cause = "", *known = "", *also = "";
		json_int_t world = 0, rank = -1, fault_ns = 0;
		int healthy = 0;
		if (json_unpack_ex(e, &je, 0, "{s:s, s:s, s?s, s:I, s:b, s?I, s?s, s?I, s?s, s?s}",
				   "file", &file, "job", &job, "program", &prog, "world", &world,
				   "healthy", &healthy, "rank", &rank, "cause", &cause,
				   "fault_ns", &fault_ns, "known", &known, "also_cause", &also) ||
		    (!healthy && (rank < 0 || !*cause))) {
			fprintf(stderr, "real_bench: %s: entry %zu: %s\n", path, i,
				healthy ? je.text : "a fault needs rank and cause");
			json_decref(root);
			return -1;
		}
		snprintf(l->file, sizeof(l->file), "%s", file);
		snprintf(l->job, sizeof(l->job), "%s", job);
		snprintf(l->program, sizeof(l->program), "%s", prog);
		snprintf(l->cause, sizeof(l->cause), "%s", cause);
		snprintf(l->also, sizeof(l->also), "%s", also);
		snprintf(l->known, sizeof(l->known), "%s", known);
		label_name(l->name, sizeof(l->name), file, (int)world);
		l->world = (int)world, l->healthy = healthy, l->rank = (int)rank;
		l->fault_ns = (uint64_t)fault_ns;
	}
	json_decref(root);
	return 0;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* A row of the table: the recording, its truth, the verdict, what was named and when. */
static void print_row(const struct label *l, const struct outcome *o)
{
	char named[160] = "-", truth[48], lat[24] = "-", cost[16] = "";
	int off = 0;

	for (int k = 0; k < o->nnamed && off < (int)sizeof(named) - 24; k++)
		off += snprintf(named + off, sizeof(named) - (size_t)off, "%s%d %s @%llu",
				k ? ", " : "", o->named[k].rank, o->named[k].cause,
				(unsigned long long)o->named[k].at_step);
	if (l->healthy)
		snprintf(truth, sizeof(truth), "healthy");
	else
	{
		if (!isnan(o->impact))
			snprintf(cost, sizeof(cost), " %+.0f%%%s", 100 * o->impact, o->faint ? "!" : "");
		snprintf(truth, sizeof(truth), "%d %s @%ld%s", l->rank, l->cause, o->onset, cost);
	}
	if (o->latency >= 0)
		snprintf(lat, sizeof(lat), "%ld", o->latency);
	const char *word = o->pass ? (l->known[0] ? "FIXED" : o->faint && o->latency < 0 ? "faint" : "ok")
			   : l->known[0] ? "known" : "FAIL";
	printf("| %-22s | %-22s | %-8s | %-40s | %4s | %-5s |%s%s\n", l->name, truth,
	       ts_state_names[o->final], named, lat, word, o->pass && !l->known[0] ? "" : " ",
	       o->pass ? (l->known[0] ? "passes now: take its \"known\" out of labels.json" : "")
		       : o->why);
	fflush(stdout);
}

/* The corpus's totals. */
struct totals {
	int fails, known, fixed, nfault, found, right_cause, healthy_ok, nhealthy, named_all, named_right;
	int nfaint, faint_found;
	int nlat;
	long *lat;
};

static void count(struct totals *t, const struct label *l, const struct outcome *o)
{
	bool right = false, cause_ok = true;

	/* a known failure is counted apart; one that passes now fails the gate until its
	 * label says so (the list only shrinks) */
	t->known += !o->pass && l->known[0];
	t->fixed += o->pass && l->known[0];
	t->fails += !o->pass && !l->known[0];
	t->named_all += o->nnamed;
	if (l->healthy) {
		t->nhealthy++, t->healthy_ok += o->pass;
		return;
	}
	for (int k = 0; k < o->nnamed; k++) {
		if (o->named[k].rank != l->rank)
			continue;
		right = true, t->named_right++;
		cause_ok &= cause_right(l, o->named[k].cause);
	}
	if (o->faint) { /* counted apart: the analyzer does not promise them */
		t->nfaint++, t->faint_found += right;
		return;
	}
	t->nfault++;
	t->found += right;
	t->right_cause += right && cause_ok;
	if (o->latency >= 0)
		t->lat[t->nlat++] = o->latency;
}

static void print_totals(struct totals *t, int n)
{
	qsort(t->lat, (size_t)t->nlat, sizeof(*t->lat), cmp_long);
	printf("\nhealthy: %d of %d with nothing named; faults: %d of %d found", t->healthy_ok,
	       t->nhealthy, t->found, t->nfault);
	if (t->nfaint)
		printf("; faint (the job slowed under verdict.min_slowdown, marked !): %d of %d "
		       "found", t->faint_found, t->nfaint);
	printf("\n");
	printf("precision %.2f (right-rank namings of all), recall %.2f, cause accuracy %.2f, ",
	       t->named_all ? (double)t->named_right / t->named_all : 1.0,
	       t->nfault ? (double)t->found / t->nfault : 1.0,
	       t->found ? (double)t->right_cause / t->found : 1.0);
	if (t->nlat)
		printf("median latency %ld steps from onset\n", t->lat[t->nlat / 2]);
	else
		printf("no latency\n");
	if (t->known)
		printf("%d known failures (labels.json says why), not counted\n", t->known);
	if (t->fixed)
		printf("%d known failures pass now: take their \"known\" out of labels.json\n",
		       t->fixed);
	printf("%d passed, %d failed\n", n - t->fails - t->known - t->fixed, t->fails + t->fixed);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: real_bench [--data DIR] [--only JOB] [--min-healthy N] [--config FILE]\n"
		"                  [--verbose]\n"
		"Replays every recording of DIR/labels.json (default bench/data) into a fresh\n"
		"analyzer with the default configuration and judges it against its label.\n\n"
		"  -d, --data DIR       the corpus folder (labels.json and the recordings)\n"
		"  -o, --only JOB       only the recordings whose name (JOB-wWORLD) contains JOB\n"
		"  -m, --min-healthy N  fail unless at least N healthy recordings pass (default 0)\n"
		"  -c, --config FILE    the analyzer's configuration (as trainscope-analyzer\n"
		"                       --config takes it, TRAINSCOPE_ANALYZER_* applying) in\n"
		"                       place of the defaults: to see what a setting costs on the\n"
		"                       corpus; the gate (make real-bench) runs without it\n"
		"  -v, --verbose        the analyzer's log too: every alarm raised and cleared\n"
		"  -D, --dump FILE      every rank's steps as they came, one CSV row each\n"
		"  -h, --help           this text\n"
		"A label's \"known\" (why) marks a failure known and not fixed: reported, not\n"
		"counted; once it passes the gate fails until the label drops it.\n"
		"Exit: 0 every recording passed, 1 one failed, 2 bad usage or an unreadable corpus.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "data", required_argument, NULL, 'd' },
					     { "only", required_argument, NULL, 'o' },
					     { "min-healthy", required_argument, NULL, 'm' },
					     { "config", required_argument, NULL, 'c' },
					     { "verbose", no_argument, NULL, 'v' },
					     { "dump", required_argument, NULL, 'D' },
					     { "help", no_argument, NULL, 'h' },
					     { NULL, 0, NULL, 0 } };
	const char *dir = "bench/data", *only = NULL, *config = NULL;
	bool verbose = false;
	FILE *dump = NULL;
	int c, n = 0, min_healthy = 0, ran = 0;
	struct totals t = { 0 };
	struct label *labels = NULL;
	struct ts_params p;
	char path[600], err[256];

	while ((c = getopt_long(argc, argv, "d:o:m:c:vD:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'o': only = optarg; break;
		case 'c': config = optarg; break;
		case 'm': min_healthy = atoi(optarg); break;
		case 'v': verbose = true; break;
		case 'D':
			if (!(dump = fopen(optarg, "w"))) {
				fprintf(stderr, "real_bench: %s: %s\n", optarg, strerror(errno));
				return 2;
			}
			fprintf(dump, "rec,rank,step,step_ms,compute,compute_wall,collective,launch,"
				"dataloader,sync,gc,gemm_ms,gemm_tflops\n");
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	ts_log_set_level(verbose ? TS_LOG_INFO : TS_LOG_ERROR);
	snprintf(path, sizeof(path), "%s/labels.json", dir);
	if (load_labels(path, &labels, &n))
		return 2;
	/* the defaults a user gets: no file, no TRAINSCOPE_ANALYZER_* of the caller's */
	ts_params_defaults(&p);
	for (char **e = environ; *e && !config; e++)
		if (!strncmp(*e, "TRAINSCOPE_ANALYZER_", 20)) {
			fprintf(stderr, "real_bench: %.*s is set: the corpus is judged on the "
				"defaults\n", (int)strcspn(*e, "="), *e);
			return 2;
		}
	if (ts_params_load(&p, config, config ? NULL : "", err, sizeof(err))) {
		fprintf(stderr, "real_bench: %s\n", err);
		return 2;
	}
	t.lat = calloc((size_t)n + 1, sizeof(*t.lat));
	printf("| recording              | truth                  | verdict  | ranks named (cause @step)"
	       "                | lat  | ok    |\n|---|---|---|---|---|---|\n");
	for (int i = 0; i < n; i++) {
		struct outcome o;
		if (only && !strstr(labels[i].name, only))
			continue;
		if (replay(&labels[i], dir, &p, &o, dump))
			return 2;
		print_row(&labels[i], &o);
		count(&t, &labels[i], &o);
		free(o.rs);
		ran++;
	}
	print_totals(&t, ran);
	if (dump)
		fclose(dump);
	free(t.lat);
	free(labels);
	if (t.healthy_ok < min_healthy) {
		printf("FAIL  only %d healthy recordings pass, %d wanted\n", t.healthy_ok, min_healthy);
		return 1;
	}
	return t.fails || t.fixed ? 1 : 0;
}
