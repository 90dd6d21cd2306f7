// SPDX-License-Identifier: Apache-2.0
/* Node health in the analyzer: findings noted, stored and read per partition, nodes
 * handed to the Kubernetes writer (node_sync.h). */
#include "node_sync.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"

#define MAX_NODES 1024 /* the highest scores; each view is about 2.5 KB */
#define MAX_SERIES 128 /* degraded nodes with a series of their own (its HELP says 128) */

struct ts_node_sync {
	struct ts_nodehealth *nh;
	int partition, partitions;
	uint64_t period_ns, next_ns;
	bool resumed;
	struct ts_nh_node *views; /* MAX_NODES */
	struct ts_node_sync_stats st;
	struct bad { char node[TS_NH_NODE], cause[32]; double score; } degraded[MAX_SERIES];
	int ndegraded;         /* highest scores first, as ts_nh_nodes gives them */
	char why[256];            /* the bucket's last refusal, said once */
};

int ts_node_sync_new(struct ts_node_sync **out, const struct ts_nh_opts *o, int partition,
		     int partitions, double period_s)
{
	struct ts_node_sync *s;
	int rc;

	*out = NULL;
	if (partitions < 1 || partition < 0 || partition >= partitions || !(period_s > 0))
		return -EINVAL;
	if (!(s = calloc(1, sizeof(*s))) || !(s->views = calloc(MAX_NODES, sizeof(*s->views)))) {
		free(s);
		return -ENOMEM;
	}
	if ((rc = ts_nh_new(&s->nh, o, partition))) {
		ts_node_sync_free(s);
		return rc;
	}
	s->partition = partition, s->partitions = partitions;
	s->period_ns = (uint64_t)(period_s * 1e9);
	*out = s;
	return 0;
}

void ts_node_sync_free(struct ts_node_sync *s)
{
	if (!s)
		return;
	ts_nh_free(s->nh);
	free(s->views);
	free(s);
}

void ts_node_sync_report(struct ts_node_sync *s, json_t *report, uint64_t now_real_ns)
{
	s->st.findings += (uint64_t)ts_nh_note_report(s->nh, report, now_real_ns);
}

static void key_of(int partition, char *key, size_t n)
{
	snprintf(key, n, "nodehealth.p%d", partition);
}

static void keep_degraded(struct bad *b, const struct ts_nh_node *v)
{
	snprintf(b->node, sizeof(b->node), "%s", v->node);
	snprintf(b->cause, sizeof(b->cause), "%s", v->cause);
	b->score = v->score;
}

/* One round's key-value work, done without the caller's lock: what it stores, and what
 * it read of each partition. */
struct ts_node_round {
	int partitions, self;
	bool resume;          /* our own blob is read too: the first round after a start */
	char *mine;           /* our findings, exported under the lock */
	size_t mine_len;
	bool stored;
	char why[256];        /* the store's refusal, if any */
	struct got { void *blob; size_t len; int rc; } *got; /* per partition */
};

static void round_free(struct ts_node_round *r)
{
	if (!r)
		return;
	for (int p = 0; r->got && p < r->partitions; p++)
		free(r->got[p].blob);
	free(r->got);
	free(r->mine);
	free(r);
}

bool ts_node_sync_due(struct ts_node_sync *s, uint64_t now_real_ns)
{
	return now_real_ns >= s->next_ns;
}

struct ts_node_round *ts_node_sync_begin(struct ts_node_sync *s, bool kv, uint64_t now_real_ns)
{
	struct ts_node_round *r;

	if (now_real_ns < s->next_ns)
		return NULL;
	s->next_ns = now_real_ns + s->period_ns;
	ts_nh_expire(s->nh, now_real_ns);
	if (!(r = calloc(1, sizeof(*r))))
		return NULL;
	r->partitions = s->partitions, r->self = s->partition;
	if (kv) { /* a restart resumes this partition's findings */
		r->resume = !s->resumed;
		/* a resuming round stores nothing: its blob would lack what it resumes */
		r->mine = r->resume ? NULL : ts_nh_export(s->nh, &r->mine_len);
		r->got = calloc((size_t)s->partitions, sizeof(*r->got));
	}
	return r;
}

void ts_node_sync_io(struct ts_node_round *r, struct tsn_kv *kv)
{
	char key[64];

	if (!r || !kv || !r->got)
		return;
	if (r->resume) { /* read before our store overwrites it */
		key_of(r->self, key, sizeof(key));
		r->got[r->self].rc = tsn_kv_get_blob(kv, key, &r->got[r->self].blob,
						     &r->got[r->self].len);
	}
	key_of(r->self, key, sizeof(key));
	r->stored = !r->resume && r->mine && !tsn_kv_put_blob(kv, key, r->mine, r->mine_len, r->why,
						sizeof(r->why));
	for (int p = 0; p < r->partitions; p++) {
		if (p == r->self)
			continue;
		key_of(p, key, sizeof(key));
		r->got[p].rc = tsn_kv_get_blob(kv, key, &r->got[p].blob, &r->got[p].len);
	}
}

/* Partition p's blob into the node view; a read that failed counts. */
static void take(struct ts_node_sync *s, int p, struct got *g)
{
	if (g->rc == 0 && ts_nh_import(s->nh, p, g->blob, g->len)) {
		s->st.read_failures++;
		ts_warn("analyzer: node health: the blob of partition %d is not one (%zu bytes): "
			"left out", p, g->len);
	} else if (g->rc && g->rc != -ENOENT) {
		s->st.read_failures++;
	}
}

static void count_store(struct ts_node_sync *s, struct ts_node_round *r)
{
	if (r->stored) {
		s->st.stored++;
		s->why[0] = 0;
		return;
	}
	s->st.store_failures++;
	if (strcmp(r->why, s->why)) /* said once per cause */
		ts_warn("analyzer: node health not stored: %s", *r->why ? r->why : "out of memory");
	snprintf(s->why, sizeof(s->why), "%s", r->why);
}

void ts_node_sync_end(struct ts_node_sync *s, struct ts_node_round *r, struct ts_k8sw *w,
		      uint64_t now_real_ns)
{
	int n, mine = 0;

	if (!r)
		return;
	if (r->got) { /* the key-value store was there */
		if (r->resume) {
			take(s, s->partition, &r->got[s->partition]);
			s->resumed = true;
		}
		else
			count_store(s, r);
		for (int p = 0; p < s->partitions; p++)
			if (p != s->partition)
				take(s, p, &r->got[p]);
	}
	round_free(r);
	n = ts_nh_nodes(s->nh, now_real_ns, s->views, MAX_NODES);
	s->st.nodes = (uint64_t)n, s->st.degraded = 0;
	s->ndegraded = 0;
	for (int i = 0; i < n && i < MAX_NODES; i++) {
		s->st.degraded += s->views[i].degraded;
		if (s->views[i].degraded && s->ndegraded < MAX_SERIES)
			keep_degraded(&s->degraded[s->ndegraded++], &s->views[i]);
		if (ts_node_is_mine(s->views[i].node, s->partition, s->partitions))
			s->views[mine++] = s->views[i];
	}
	if (w)
		ts_k8sw_nodes(w, s->views, mine, now_real_ns);
}

static const struct ts_metric_family node_sync_metrics[] = {
	{ "trainscope_node_degraded_score", TS_GAUGE, "node,cause",
	  "A degraded node's score (its findings' decayed weights; nodes.degraded_score makes "
	  "it degraded), by its heaviest cause; the 128 highest." },
};

const struct ts_metric_table ts_node_sync_metrics = TS_METRIC_TABLE(node_sync_metrics);

void ts_node_sync_render(struct ts_node_sync *s, struct ts_buf *out)
{
	char node[2 * TS_NH_NODE], cause[64];

	const struct ts_metric_family *m = &node_sync_metrics[0];

	ts_metric_head(out, m);
	for (int i = 0; i < s->ndegraded; i++)
		ts_metric_sample(out, m, "{node=\"%s\",cause=\"%s\"} %.3f\n",
				 ts_name_label(node, sizeof(node), s->degraded[i].node),
				 ts_name_label(cause, sizeof(cause), s->degraded[i].cause),
				 s->degraded[i].score);
}

void ts_node_sync_get_stats(struct ts_node_sync *s, struct ts_node_sync_stats *out)
{
	*out = s->st;
}
