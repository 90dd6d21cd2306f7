// SPDX-License-Identifier: Apache-2.0
/* The Communication cause placed (job_net_impl.h): the node or node pair the alarmed
 * communicators have in common, else the job's network; the agent's counters per node
 * as evidence; and the ranks a node's or a link's verdict names. */
#include "job_net_impl.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a node's TCP retransmits stand out at this rate and this many times the median's;
 * its ports' errors, drops and link losses at these rates (and as many times) */
#define RETRANS_MIN_PER_S 5.0
#define RETRANS_FACTOR 4.0
#define NIC_ERR_MIN_PER_S 1.0
#define NIC_DROP_MIN_PER_S 5.0
#define LINK_DOWN_MIN_PER_S 0.01

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Node ids by name (node_of[rank], -1 with no node); returns the count. */
static int index_nodes(struct ts_job *j)
{
	struct ts_net *n = j->net;
	int nn = 0;

	for (int k = 0; k < j->world; k++)
		if (j->meta[k].node[0])
			n->names[nn++] = j->meta[k].node;
	qsort(n->names, (size_t)nn, sizeof(*n->names), cmp_name);
	int u = 0;
	for (int i = 0; i < nn; i++)
		if (!u || strcmp(n->names[u - 1], n->names[i]))
			n->names[u++] = n->names[i];
	for (int k = 0; k < j->world; k++) {
		const char *key = j->meta[k].node;
		const char **hit = key[0] ? bsearch(&key, n->names, (size_t)u, sizeof(*n->names),
						    cmp_name) : NULL;
		n->node_of[k] = hit ? (int)(hit - n->names) : -1;
	}
	return u;
}

static int scratch_for_world(struct ts_job *j)
{
	struct ts_net *n = j->net;
	int pairs = j->world * (TS_RANK_MAX_COMMS + 1);

	if (n->world_cap >= j->world)
		return 0;
	free(n->pairs), free(n->node_of), free(n->touch_a), free(n->touch_h), free(n->names);
	n->pairs = malloc((size_t)pairs * sizeof(uint64_t));
	n->node_of = malloc((size_t)j->world * sizeof(int));
	n->touch_a = malloc((size_t)j->world * sizeof(int));
	n->touch_h = malloc((size_t)j->world * sizeof(int));
	n->names = malloc((size_t)j->world * sizeof(char *));
	n->world_cap = n->pairs && n->node_of && n->touch_a && n->touch_h && n->names ? j->world : 0;
	return n->world_cap ? 0 : -ENOMEM;
}

/* Each judged communicator's nodes, once: sorted (communicator index, node) pairs. */
static int comm_nodes(struct ts_job *j)
{
	struct ts_net *n = j->net;
	int np = 0, u = 0;
	int all = ts_job_net_find(n, 0); /* API-timed collectives: every rank */

	for (int k = 0; k < j->world; k++) {
		const struct ts_rank_meta *m = &j->meta[k];
		if (n->node_of[k] < 0)
			continue;
		for (int i = 0; i < m->ncomms; i++) {
			int ci = ts_job_net_find(n, m->comms[i]);
			if (ci >= 0 && n->c[ci].judged)
				n->pairs[np++] = (uint64_t)ci << 32 | (uint32_t)n->node_of[k];
		}
		if (all >= 0 && n->c[all].judged)
			n->pairs[np++] = (uint64_t)all << 32 | (uint32_t)n->node_of[k];
	}
	qsort(n->pairs, (size_t)np, sizeof(uint64_t), cmp_u64);
	for (int i = 0; i < np; i++)
		if (!u || n->pairs[u - 1] != n->pairs[i])
			n->pairs[u++] = n->pairs[i];
	return u;
}

/* What the agent counts on a node that says its network is in trouble: a rate that
 * stands out at least `min` per second and RETRANS_FACTOR times the nodes' median. */
static const struct node_sign {
	const char *what;
	size_t off; /* a double in struct ts_host_view */
	double min;
} node_signs[] = {
	{ "TCP retransmits/s", offsetof(struct ts_host_view, tcp_retrans_per_s), RETRANS_MIN_PER_S },
	{ "NIC errors/s", offsetof(struct ts_host_view, nic_err_per_s), NIC_ERR_MIN_PER_S },
	{ "NIC transmit drops/s", offsetof(struct ts_host_view, nic_drop_per_s), NIC_DROP_MIN_PER_S },
	{ "link losses/s", offsetof(struct ts_host_view, link_down_per_s), LINK_DOWN_MIN_PER_S },
};

/* The node whose ranks' rate of sign stands out, or -1. */
static int sign_node(struct ts_job *j, int nodes, const struct node_sign *sign, double *rate,
		     double *median)
{
	struct ts_net *n = j->net;
	double *v = j->vals;
	int best = -1;

	for (int i = 0; i < nodes; i++)
		v[i] = 0;
	for (int k = 0; k < j->world; k++) {
		const struct ts_host_view *h = &j->meta[k].host;
		if (n->node_of[k] >= 0 && h->valid)
			v[n->node_of[k]] = fmax(v[n->node_of[k]],
						*(const double *)((const char *)h + sign->off));
	}
	for (int i = 0; i < nodes; i++)
		if (best < 0 || v[i] > v[best])
			best = i;
	if (best < 0 || nodes < 2)
		return -1;
	*rate = v[best];
	*median = ts_median(v, (size_t)nodes, j->scratch);
	return *rate >= sign->min && *rate >= RETRANS_FACTOR * fmax(*median, sign->min / 20) ? best
											       : -1;
}

/* The agent's counters as evidence; a node they single out is named when the
 * communicators could not place the slowdown. */
static void node_evidence(struct ts_job *j, int nodes, struct ts_net_verdict *v)
{
	struct ts_net *n = j->net;

	for (size_t s = 0; s < sizeof(node_signs) / sizeof(node_signs[0]); s++) {
		double rate = 0, med = 0;
		int node = sign_node(j, nodes, &node_signs[s], &rate, &med);
		if (node < 0)
			continue;
		if (v->scope == TS_NET_JOB && n->touch_a[node]) {
			v->scope = TS_NET_NODE;
			snprintf(v->nodes[0], sizeof(v->nodes[0]), "%s", n->names[node]);
		}
		size_t len = strlen(v->evidence);
		snprintf(v->evidence + len, sizeof(v->evidence) - len, "; node %s: %.*f %s vs median %.1f",
			 n->names[node], rate < 10 ? 1 : 0, rate, node_signs[s].what, med);
	}
}

void ts_job_net_place(struct ts_job *j, struct ts_net_verdict *v)
{
	struct ts_net *n = j->net;
	int nodes, np, strong = -1, nstrong = 0, cand[2], ncand = 0;

	if (scratch_for_world(j) || (nodes = index_nodes(j)) == 0) {
		v->scope = TS_NET_JOB;
		return;
	}
	np = comm_nodes(j);
	memset(n->touch_a, 0, (size_t)nodes * sizeof(int));
	memset(n->touch_h, 0, (size_t)nodes * sizeof(int));
	for (int s = 0, e; s < np; s = e) { /* one communicator's pairs: [s, e) */
		int ci = (int)(n->pairs[s] >> 32);
		for (e = s; e < np && (int)(n->pairs[e] >> 32) == ci; e++)
			;
		for (int i = s; i < e; i++) {
			int nd = (int)(uint32_t)n->pairs[i];
			if (n->c[ci].chg.alarm)
				n->touch_a[nd]++;
			else if (e - s > 1) /* healthy across nodes: that node's network is fine */
				n->touch_h[nd]++;
		}
	}
	for (int i = 0; i < nodes; i++) {
		if (n->touch_a[i] != v->slow_comms)
			continue;
		if (ncand < 2)
			cand[ncand] = i;
		ncand++;
		if (!n->touch_h[i])
			strong = i, nstrong++;
	}
	v->scope = TS_NET_JOB;
	if (v->slow_comms < v->comms && nstrong == 1) {
		v->scope = TS_NET_NODE;
		snprintf(v->nodes[0], sizeof(v->nodes[0]), "%s", n->names[strong]);
	} else if (v->slow_comms < v->comms && ncand == 2) {
		v->scope = TS_NET_LINK;
		snprintf(v->nodes[0], sizeof(v->nodes[0]), "%s", n->names[cand[0]]);
		snprintf(v->nodes[1], sizeof(v->nodes[1]), "%s", n->names[cand[1]]);
	}
	node_evidence(j, nodes, v);
	ts_job_links_place(j, n->node_of, n->names, v);
}

/* A node's or a link's verdict names the ranks there that are in a slow communicator. */
void ts_job_net_name(struct ts_job *j)
{
	const struct ts_net_verdict *v = &j->res.net;
	struct ts_job_result *res = &j->res;
	int all;

	if (!j->net || (v->scope != TS_NET_NODE && v->scope != TS_NET_LINK))
		return;
	all = ts_job_net_find(j->net, 0);
	for (int k = 0; k < j->world; k++) {
		const struct ts_rank_meta *m = &j->meta[k];
		bool here = !strcmp(m->node, v->nodes[0]) || (v->nodes[1][0] && !strcmp(m->node, v->nodes[1]));
		bool slow = all >= 0 && j->net->c[all].chg.alarm;
		for (int i = 0; here && !slow && i < m->ncomms; i++) {
			int ci = ts_job_net_find(j->net, m->comms[i]);
			slow = ci >= 0 && j->net->c[ci].chg.alarm;
		}
		if (!here || !slow)
			continue;
		bool named = false;
		for (int s = 0; s < res->nslow; s++)
			named |= res->slow[s].rank == k;
		if (named)
			continue;
		struct ts_slow_rank *s = &res->slow[res->nslow++];
		memset(s, 0, sizeof(*s));
		s->rank = k;
		s->cause = "Communication";
		s->metric = ts_metric_names[TS_M_COLLECTIVE];
		snprintf(s->method, sizeof(s->method), "CUSUM+NODES");
		s->value_ms = v->value_ms, s->median_ms = v->ref_ms, s->degradation = v->excess;
		s->onset_step = v->onset_step, s->confirmed_step = v->confirmed_step;
		s->since_ns = v->onset_ns;
		res->ever_alarmed[k] = 1;
		snprintf(s->evidence, sizeof(s->evidence), "%s %s%s%s: %.150s",
			 v->scope == TS_NET_NODE ? "the network of node" : "the link between",
			 v->nodes[0], v->nodes[1][0] ? " and " : "", v->nodes[1], v->evidence);
	}
}
