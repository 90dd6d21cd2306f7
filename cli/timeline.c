// SPDX-License-Identifier: Apache-2.0
/* trainscope timeline: a job's steps and its ranks' host scheduling as one
 * Chrome/Perfetto trace, read back from the TRAINSCOPE stream. */
#include "cli.h"
#include "ident.h"
#include "log.h"
#include "natsw.h"
#include "numparse.h"
#include "proto/trainscope.pb-c.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TID_STEP = 1, TID_PHASE = 2, TID_HOST = 3 };

struct timeline {
	json_t *events;
	uint64_t steps, samples;
	uint64_t *named;       /* a bit per rank named in the trace */
	size_t named_words;
	uint64_t step_lo, step_hi; /* --steps */
	uint64_t *only;        /* --ranks: a bit per rank kept; NULL: all */
	size_t only_words;
	bool compact;
};

static bool bit(const uint64_t *bits, size_t words, int k)
{
	return k >= 0 && (size_t)k / 64 < words && (bits[k / 64] >> (k % 64) & 1);
}

/* Sets bit k, growing the set; -1 when memory runs out. */
static int set_bit(uint64_t **bits, size_t *words, int k)
{
	if ((size_t)k / 64 >= *words) {
		size_t n = (size_t)k / 64 + 1 > 2 * *words ? (size_t)k / 64 + 1 : 2 * *words;
		uint64_t *b = realloc(*bits, n * sizeof(*b));
		if (!b)
			return -1;
		memset(b + *words, 0, (n - *words) * sizeof(*b));
		*bits = b, *words = n;
	}
	(*bits)[k / 64] |= 1ull << (k % 64);
	return 0;
}

static int ranks_named(const struct timeline *t)
{
	int n = 0;

	for (size_t i = 0; i < t->named_words; i++)
		n += __builtin_popcountll(t->named[i]);
	return n;
}

static bool kept(const struct timeline *t, int rank, uint64_t step)
{
	return step >= t->step_lo && step <= t->step_hi &&
	       (!t->only || bit(t->only, t->only_words, rank));
}

/* "0-7,12,100-103" into the set of ranks (0 to 2^24); -1 on a malformed list. */
static int parse_ranks(struct timeline *t, const char *list)
{
	char *copy = strdup(list), *item = copy;
	int rc = copy ? 0 : -1;

	while (item && !rc) {
		char *next = strchr(item, ','), *dash;
		long a, b;

		if (next)
			*next++ = 0;
		if ((dash = strchr(item, '-')))
			*dash = 0;
		if (ts_parse_int(item, 0, 1 << 24, &a) ||
		    ts_parse_int(dash ? dash + 1 : item, a, 1 << 24, &b)) {
			rc = -1;
			break;
		}
		for (long k = a; !rc && k <= b; k++)
			rc = set_bit(&t->only, &t->only_words, (int)k) ? -1 : 0;
		item = next;
	}
	free(copy);
	return !rc && t->only ? 0 : -1;
}

/* "A:B" into the steps kept, A to B; -1 unless both are whole numbers and A <= B. */
static int parse_steps(struct timeline *t, const char *arg)
{
	const char *colon = strchr(arg, ':');
	char first[32];
	long a, b;

	if (!colon || (size_t)(colon - arg) >= sizeof(first))
		return -1;
	memcpy(first, arg, (size_t)(colon - arg));
	first[colon - arg] = 0;
	if (ts_parse_int(first, 0, LONG_MAX, &a) || ts_parse_int(colon + 1, a, LONG_MAX, &b))
		return -1;
	t->step_lo = (uint64_t)a;
	t->step_hi = (uint64_t)b;
	return 0;
}

#define TIMELINE_HEAD                                                                          \
	"Usage: trainscope timeline --job NAME [options]\n"                                      \
	"Writes a Chrome/Perfetto trace (open it in ui.perfetto.dev or chrome://tracing) of a\n" \
	"job as the stream holds it: per rank, its steps and their phases, and over the same\n"  \
	"time the node agent's view of the rank's threads: run-queue delay, on/off-CPU time,\n"  \
	"and the tasks that preempted it (the host-bound view). Where NCCL's profiler plugin\n"  \
	"timed network sends, a counter track per rank gives ns per byte to each peer.\n"        \
	"Phases are laid end to end from the step's start in the order dataloader, launch,\n"   \
	"compute, collective: their durations are measured, their order within the step is\n"  \
	"the usual one, not recorded.\n\n"

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

static void name_rank(struct timeline *t, const Trainscope__V1__Identity *id, int rank)
{
	char name[256];

	if (rank < 0 || bit(t->named, t->named_words, rank) ||
	    set_bit(&t->named, &t->named_words, rank))
		return;
	snprintf(name, sizeof(name), "rank %d%s%s%s%s", rank, id && id->node && *id->node ? " · " : "",
		 id && id->node ? id->node : "", id && id->pod && *id->pod ? " · " : "",
		 id && id->pod ? id->pod : "");
	json_array_append_new(t->events, json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", "process_name",
						   "ph", "M", "pid", rank, "args", "name", name));
	json_array_append_new(t->events, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name",
						   "process_sort_index", "ph", "M", "pid", rank,
						   "tid", 0, "args", "sort_index", rank));
	const char *threads[] = { NULL, "steps", "phases", "host (node agent)" };
	for (int tid = TID_STEP; tid <= TID_HOST; tid++)
		json_array_append_new(t->events,
				      json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name",
						"ph", "M", "pid", rank, "tid", tid, "args", "name",
						threads[tid]));
}

static void slice(struct timeline *t, int rank, int tid, const char *name, uint64_t start,
		  uint64_t dur, json_t *args)
{
	json_array_append_new(t->events, json_pack("{s:s, s:s, s:i, s:i, s:f, s:f, s:o}", "name", name,
						   "ph", "X", "pid", rank, "tid", tid, "ts", us(start),
						   "dur", us(dur), "args", args ? args : json_object()));
}

/* NCCL's network sends to each peer in the step, as a counter track of ns per byte (a
 * slow link or NIC rises there); returns the bytes sent. */
static uint64_t add_peers(struct timeline *t, int rank, const Trainscope__V1__Step *s)
{
	json_t *args = json_object();
	uint64_t sent = 0;
	char key[64];

	for (size_t i = 0; i < s->n_peers; i++) {
		const Trainscope__V1__PeerStat *p = s->peers[i];
		if (!p->bytes)
			continue;
		snprintf(key, sizeof(key), "to rank %u of %016" PRIx64, p->peer, p->comm_hash);
		json_object_set_new(args, key, json_real((double)p->time_ns / (double)p->bytes));
		sent += p->bytes;
	}
	if (json_object_size(args))
		json_array_append_new(t->events,
				      json_pack("{s:s, s:s, s:i, s:f, s:o}", "name",
						"network sends (ns per byte)", "ph", "C", "pid", rank,
						"ts", us(s->end_ns), "args", args));
	else
		json_decref(args);
	return sent;
}

static void add_step(struct timeline *t, int rank, const Trainscope__V1__Step *s)
{
	const struct { const char *name; uint64_t ns; } phases[] = {
		{ "dataloader", s->dataloader_ns }, { "launch", s->launch_ns },
		{ "compute", s->compute_wall_ns ? s->compute_wall_ns : s->compute_ns },
		{ "collective", s->collective_ns },
	};
	char name[32];
	uint64_t at = s->start_ns;

	uint64_t coll_bytes = 0;

	if (t->compact) { /* one counter sample per rank-step: a track per phase */
		json_array_append_new(t->events, json_pack(
			"{s:s, s:s, s:i, s:f, s:{s:f, s:f, s:f, s:f}}", "name", "ms per step", "ph",
			"C", "pid", rank, "ts", us(s->start_ns), "args", "step",
			(s->end_ns - s->start_ns) / 1e6, "compute", s->compute_ns / 1e6, "collective",
			s->collective_ns / 1e6, "dataloader", s->dataloader_ns / 1e6));
		t->steps++;
		return;
	}
	for (size_t i = 0; i < s->n_colls; i++)
		coll_bytes += s->colls[i]->bytes;
	snprintf(name, sizeof(name), "step %" PRIu64, s->step);
	slice(t, rank, TID_STEP, name, s->start_ns, s->end_ns - s->start_ns,
	      json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "dataloader_ms",
			s->dataloader_ns / 1e6, "compute_ms", s->compute_ns / 1e6, "launch_ms",
			s->launch_ns / 1e6, "collective_ms", s->collective_ns / 1e6,
			"checkpoint_ms", s->checkpoint_ns / 1e6, "coll_mb", coll_bytes / 1e6,
			"net_sent_mb", add_peers(t, rank, s) / 1e6));
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		if (!phases[i].ns)
			continue;
		slice(t, rank, TID_PHASE, phases[i].name, at, phases[i].ns, NULL);
		at += phases[i].ns;
	}
	t->steps++;
}

static void add_host(struct timeline *t, const Trainscope__V1__HostSample *h)
{
	double per_s = h->interval_ns ? 1e9 / (double)h->interval_ns : 0;
	char name[96];

	name_rank(t, NULL, h->rank);
	json_array_append_new(t->events,
			      json_pack("{s:s, s:s, s:i, s:f, s:{s:f, s:f, s:f}}", "name",
					"cpu ms per s", "ph", "C", "pid", h->rank, "ts", us(h->start_ns),
					"args", "runq", h->runq_delay_ns / 1e6 * per_s, "offcpu",
					h->offcpu_ns / 1e6 * per_s, "oncpu", h->oncpu_ns / 1e6 * per_s));
	if (h->n_preemptors) {
		json_t *who = json_array();
		for (size_t i = 0; i < h->n_preemptors; i++)
			json_array_append_new(who, json_pack("{s:s, s:i, s:f}", "comm",
							     h->preemptors[i]->comm, "pid",
							     h->preemptors[i]->pid, "ms",
							     h->preemptors[i]->time_ns / 1e6));
		snprintf(name, sizeof(name), "preempted by %s (pid %d)", h->preemptors[0]->comm,
			 h->preemptors[0]->pid);
		slice(t, h->rank, TID_HOST, name, h->start_ns, h->interval_ns,
		      json_pack("{s:o, s:f, s:I}", "preemptors", who, "runq_ms",
				h->runq_delay_ns / 1e6, "involuntary_switches",
				(json_int_t)h->involuntary_switches));
	}
	t->samples++;
}

static void add_batch(struct timeline *t, const Trainscope__V1__Batch *b)
{
	for (size_t i = 0; i < b->n_records; i++) {
		const Trainscope__V1__Record *r = b->records[i];
		if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_STEP && b->id && b->id->rank >= 0 &&
		    kept(t, b->id->rank, r->step->step)) {
			name_rank(t, b->id, b->id->rank);
			add_step(t, b->id->rank, r->step);
		} else if (r->kind_case == TRAINSCOPE__V1__RECORD__KIND_HOST_SAMPLE &&
			   (!t->only || bit(t->only, t->only_words, r->host_sample->rank))) {
			add_host(t, r->host_sample);
		}
	}
}

static void on_batch(void *arg, const Trainscope__V1__Batch *b)
{
	add_batch(arg, b);
}

/* Reads the job from the stream into t and writes the trace to out (t->events go into
 * it). Returns 0, -EIO (the stream unread: the caller says where), or, said on stderr,
 * -ENODATA (no step) or -ENOSPC (the file unwritten). */
static int write_trace(struct tsn *n, struct timeline *t, const char *ns, const char *job,
		       const char *out)
{
	json_t *root;
	int rc = 0;

	if (cli_read_job(n, ns, job, on_batch, t))
		return -EIO;
	if (!t->steps) {
		fprintf(stderr, "trainscope timeline: the stream holds no step of %s/%s\n", ns, job);
		return -ENODATA;
	}
	root = json_pack("{s:o, s:s, s:{s:s, s:s}}", "traceEvents", t->events, "displayTimeUnit",
			 "ms", "metadata", "job", job, "namespace", ns);
	t->events = NULL;
	if (json_dump_file(root, out, JSON_COMPACT) == 0) {
		printf("wrote %s: %" PRIu64 " rank-steps of %d ranks, %" PRIu64
		       " host samples; open it in ui.perfetto.dev\n",
		       out, t->steps, ranks_named(t), t->samples);
	} else {
		fprintf(stderr, "trainscope timeline: cannot write %s\n", out);
		rc = -ENOSPC;
	}
	json_decref(root);
	return rc;
}

int cli_timeline(struct tsn *n, const char *ns, const char *job, const char *out)
{
	struct timeline t = { .events = json_array(), .step_hi = UINT64_MAX };
	int rc = t.events ? write_trace(n, &t, ns, job, out) : -ENOMEM;

	if (rc == -EIO || rc == -ENOMEM)
		fprintf(stderr, "trainscope timeline: %s\n", rc == -EIO ? "cannot read the stream" :
			"out of memory");
	json_decref(t.events);
	free(t.named);
	return rc;
}

/* What the command line says; the steps and ranks kept go to the timeline itself. */
struct timeline_cli {
	const char *job, *ns, *out;
	struct timeline *t;
	struct tsn_opts nats;
};

static int steps_opt(void *s, const char *arg, char *err, size_t n)
{
	if (!parse_steps(((struct timeline_cli *)s)->t, arg))
		return 0;
	snprintf(err, n, "wants A:B (A <= B), not %s", arg);
	return -EINVAL;
}

static int ranks_opt(void *s, const char *arg, char *err, size_t n)
{
	if (!parse_ranks(((struct timeline_cli *)s)->t, arg))
		return 0;
	snprintf(err, n, "wants a list like 0-7,12, not %s", arg);
	return -EINVAL;
}

static int compact_opt(void *s, const char *arg, char *err, size_t n)
{
	(void)arg, (void)err, (void)n;
	((struct timeline_cli *)s)->t->compact = true;
	return 0;
}

#define F(f) offsetof(struct timeline_cli, f)
static const struct ts_opt timeline_options[] = {
	{ "job", 'j', TS_OPT_STR, F(job), 0, 0, "NAME", NULL, "the job (required)", NULL },
	{ "namespace", 'n', TS_OPT_STR, F(ns), 0, 0, "NS", NULL, "its namespace (default default)",
	  NULL },
	{ "out", 'o', TS_OPT_STR, F(out), 0, 0, "FILE", NULL, "output (default <job>.trace.json)",
	  NULL },
	{ "steps", 0, TS_OPT_CALL, 0, 0, 0, "A:B", NULL, "only steps A to B", steps_opt },
	{ "ranks", 0, TS_OPT_CALL, 0, 0, 0, "LIST", NULL, "only these ranks, e.g. 0-7,12",
	  ranks_opt },
	{ "compact", 0, TS_OPT_CALL, 0, 0, 0, NULL, NULL, "no slices: per rank, one counter "
	  "sample per step (step, compute, collective, dataloader ms), about a fifth of the "
	  "size, so a job of a thousand ranks opens in Perfetto", compact_opt },
};

int cmd_timeline(int argc, char **argv)
{
	struct timeline t = { .events = json_array(), .step_hi = UINT64_MAX };
	struct timeline_cli c = { .ns = "default", .t = &t };
	const struct ts_opt_group groups[] = { TS_OPTS_GROUP(timeline_options, &c),
					       TS_OPTS_GROUP(tsn_opt_table, &c.nats) };
	char outbuf[256];
	struct tsn *n;
	int rc;

	tsn_opts_from_env(&c.nats, "trainscope-timeline");
	if ((rc = ts_opts_parse(groups, 2, "trainscope timeline", TIMELINE_HEAD, 0, argc,
				argv)) <= 0) {
		rc = rc ? 2 : 0;
		goto done;
	}
	rc = 1;
	if (!c.job) {
		fprintf(stderr, "trainscope timeline: --job is required\n");
		rc = 2;
		goto done;
	}
	tsn_opts_finish(&c.nats);
	if (!c.out) {
		snprintf(outbuf, sizeof(outbuf), "%s.trace.json", c.job);
		c.out = outbuf;
	}
	if (tsn_open(&n, &c.nats) == 0) {
		int err = write_trace(n, &t, c.ns, c.job, c.out);
		if (err == -EIO)
			fprintf(stderr, "trainscope timeline: cannot read the stream at %s\n",
				c.nats.url);
		rc = err ? 1 : 0;
		tsn_close(n);
	}
done:
	json_decref(t.events);
	free(t.named);
	free(t.only);
	return rc;
}
