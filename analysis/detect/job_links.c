// SPDX-License-Identifier: Apache-2.0
/* Links: NCCL's profiler plugin times each network send to a peer (Step.peers), so the
 * analyzer knows how long a byte takes from one rank to another. A slow cable, optic
 * or NIC makes the sends over it slower than over every other link of the job, while a
 * communicator's transfer time only says that some link in it is slow.
 *
 * A peer is named by its rank in the communicator; the ranks' Hello groups
 * ("nccl:<hash>:<size>:<rank>") map it to the job's rank. Each (sender, receiver) pair
 * keeps exponentially weighted sums of time and bytes; placing the network verdict
 * folds them into node pairs and compares each with the median node pair. */
#include "hash.h"
#include "job_impl.h"
#include "log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DECAY 0.9        /* per report: about the last ten steps count */
#define SLOW_FACTOR 1.5  /* a node pair this many times the median pair's ns per byte */
#define MIN_PAIRS 3      /* node pairs needed for a median to mean anything */

struct member { uint64_t key; int rank; };           /* (comm, rank in it) -> job rank */
struct pair { uint64_t key; double ns, bytes; };       /* key: sender << 32 | receiver */

struct ts_links {
	struct member *m;
	struct pair *p;
	int nm, mcap, np, pcap; /* capacities: powers of two, kept at most half full */
	bool full_said;
};

static uint64_t member_key(uint64_t comm, uint32_t crank)
{
	return ts_mix64(comm ^ ((uint64_t)crank + 1) * 0x9e3779b97f4a7c15ull) | 1;
}

/* Slot of key in an open-addressed table of `cap` entries of `size` bytes, each
 * starting with its uint64_t key (0 empty). */
static void *slot(void *tab, int cap, size_t size, uint64_t key)
{
	for (uint64_t h = ts_mix64(key) & (uint64_t)(cap - 1);; h = (h + 1) & (uint64_t)(cap - 1)) {
		uint64_t *k = (uint64_t *)((char *)tab + h * size);
		if (*k == key || !*k)
			return k;
	}
}

/* Doubles a table (or makes it); -ENOMEM leaves it as it was. */
static int rehash(void **tab, int *cap, size_t size, int bound)
{
	int ncap = *cap ? 2 * *cap : 64;
	char *n;

	if (*cap >= bound || !(n = calloc((size_t)ncap, size)))
		return -ENOMEM;
	for (int i = 0; i < *cap; i++) {
		const uint64_t *k = (const uint64_t *)((char *)*tab + (size_t)i * size);
		if (*k)
			memcpy(slot(n, ncap, size, *k), k, size);
	}
	free(*tab);
	*tab = n;
	*cap = ncap;
	return 0;
}

static struct ts_links *links(struct ts_job *j)
{
	if (!j->links)
		j->links = calloc(1, sizeof(*j->links));
	return j->links;
}

void ts_job_links_free(struct ts_job *j)
{
	if (!j->links)
		return;
	free(j->links->m);
	free(j->links->p);
	free(j->links);
	j->links = NULL;
}

/* Tables stay within a bound set by the job's size: a job's communicators hold each
 * rank a few times, and a rank sends to a few peers per communicator. */
static int bound(const struct ts_job *j)
{
	return j->world > (1 << 20) ? (1 << 26) : 64 * j->world + 1024;
}

void ts_job_links_member(struct ts_job *j, uint64_t comm, uint32_t crank, int rank)
{
	struct ts_links *l = links(j);
	uint64_t key = member_key(comm, crank);

	if (!l || (2 * (l->nm + 1) > l->mcap &&
		   rehash((void **)&l->m, &l->mcap, sizeof(*l->m), bound(j))))
		return;
	struct member *m = slot(l->m, l->mcap, sizeof(*m), key);
	l->nm += !m->key;
	*m = (struct member){ key, rank };
}

static int job_rank(const struct ts_links *l, uint64_t comm, uint32_t crank)
{
	const struct member *m = l->mcap ? slot(l->m, l->mcap, sizeof(*m), member_key(comm, crank))
					 : NULL;

	return m && m->key ? m->rank : -1;
}

void ts_job_links_add(struct ts_job *j, int rank, const struct ts_rank_step *s)
{
	struct ts_links *l = j->links;

	for (int i = 0; l && i < s->npeer; i++) {
		const struct ts_peer_time *t = &s->peer[i];
		int to = job_rank(l, t->comm, t->peer);
		if (to < 0 || to == rank || !(t->bytes > 0))
			continue;
		uint64_t key = (uint64_t)(uint32_t)rank << 32 | (uint32_t)to;
		if (2 * (l->np + 1) > l->pcap &&
		    rehash((void **)&l->p, &l->pcap, sizeof(*l->p), bound(j))) {
			if (!l->full_said)
				ts_warn("%s/%s: more rank pairs send than the analyzer keeps: links "
					"past %d are not compared", j->ns, j->name, l->np);
			l->full_said = true;
			return;
		}
		struct pair *p = slot(l->p, l->pcap, sizeof(*p), key);
		if (!p->key)
			*p = (struct pair){ .key = key }, l->np++;
		p->ns = p->ns * DECAY + t->ns;
		p->bytes = p->bytes * DECAY + t->bytes;
	}
}

struct npair { int a, b; double ns, bytes; };

static int cmp_npair(const void *x, const void *y)
{
	const struct npair *a = x, *b = y;

	return a->a != b->a ? (a->a > b->a) - (a->a < b->a) : (a->b > b->b) - (a->b < b->b);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* The ranks' pairs folded into node pairs (either direction: a link carries both),
 * sorted and merged; returns how many, or -ENOMEM. */
static int node_pairs(const struct ts_links *l, const int *node_of, struct npair **out)
{
	struct npair *v = malloc(((size_t)l->np + 1) * sizeof(*v));
	int n = 0, u = 0;

	if (!v)
		return -ENOMEM;
	for (int i = 0; i < l->pcap; i++) {
		const struct pair *p = &l->p[i];
		int a, b;
		if (!p->key || (a = node_of[p->key >> 32]) < 0 || (b = node_of[(uint32_t)p->key]) < 0 ||
		    a == b)
			continue;
		v[n++] = (struct npair){ a < b ? a : b, a < b ? b : a, p->ns, p->bytes };
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_npair);
	for (int i = 0; i < n; i++) {
		if (u && v[u - 1].a == v[i].a && v[u - 1].b == v[i].b)
			v[u - 1].ns += v[i].ns, v[u - 1].bytes += v[i].bytes;
		else
			v[u++] = v[i];
	}
	*out = v;
	return u;
}

/* Node pairs whose sends stand out place the verdict where the communicators could
 * not (a link, or the one node all of them touch), and are evidence either way. */
void ts_job_links_place(struct ts_job *j, const int *node_of, const char *const *names,
			struct ts_net_verdict *v)
{
	struct npair *np = NULL;
	int n, nslow = 0, worst = -1, first = -1, node = -1;
	double med, *rate;

	if (!j->links || !j->links->np || (n = node_pairs(j->links, node_of, &np)) < MIN_PAIRS ||
	    !(rate = malloc((size_t)n * sizeof(*rate)))) {
		free(np);
		return;
	}
	for (int i = 0; i < n; i++)
		rate[i] = np[i].ns / np[i].bytes;
	qsort(rate, (size_t)n, sizeof(*rate), cmp_double);
	med = n % 2 ? rate[n / 2] : (rate[n / 2 - 1] + rate[n / 2]) / 2;
#define SLOW(i) (np[i].ns / np[i].bytes >= SLOW_FACTOR * med)
	for (int i = 0; i < n; i++) {
		if (!SLOW(i))
			continue;
		if (first < 0)
			first = i;
		if (worst < 0 || np[i].ns / np[i].bytes > np[worst].ns / np[worst].bytes)
			worst = i;
		nslow++;
	}
	/* several slow pairs: the node all of them go through, if one does */
	for (int c = 0; nslow > 1 && c < 2 && node < 0; c++) {
		int cand = c ? np[first].b : np[first].a;
		bool all = true;
		for (int i = first; i < n && all; i++)
			all = !SLOW(i) || np[i].a == cand || np[i].b == cand;
		node = all ? cand : -1;
	}
#undef SLOW
	if (worst >= 0) {
		const struct npair *w = &np[worst];
		if (v->scope == TS_NET_JOB && nslow == 1) {
			v->scope = TS_NET_LINK;
			snprintf(v->nodes[0], sizeof(v->nodes[0]), "%s", names[w->a]);
			snprintf(v->nodes[1], sizeof(v->nodes[1]), "%s", names[w->b]);
		} else if (v->scope == TS_NET_JOB && node >= 0) {
			v->scope = TS_NET_NODE;
			snprintf(v->nodes[0], sizeof(v->nodes[0]), "%s", names[node]);
		}
		size_t len = strlen(v->evidence);
		snprintf(v->evidence + len, sizeof(v->evidence) - len,
			 "; NCCL sends %s - %s: %.3f ns/B, %.1fx the median link's (%d of %d slow)",
			 names[w->a], names[w->b], w->ns / w->bytes, w->ns / w->bytes / med, nslow, n);
	}
	free(rate);
	free(np);
}
