// SPDX-License-Identifier: Apache-2.0
#include "metrics.h"
#include "names.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double quantiles[] = { 0.5, 0.9, 0.99, 1 };
#define NQ (sizeof(quantiles) / sizeof(quantiles[0]))

/* One job, as the families need it. */
struct jm {
	struct ts_job *j;
	const struct ts_job_result *r;
	char labels[400];  /* k8s_namespace="..",training_job=".." */
	double *busy;      /* [world] ms */
	int *ranks, nranks; /* the slowest top_k, then named ones not among them */
	double q[NQ], median;
	bool have_q;
};

struct kv {
	double v;
	int k;
};

static int by_value_desc(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;

	return x->v < y->v ? 1 : x->v > y->v ? -1 : x->k - y->k;
}

static bool listed(const struct jm *m, int k)
{
	for (int i = 0; i < m->nranks; i++)
		if (m->ranks[i] == k)
			return true;
	return false;
}

static int prepare(struct jm *m, struct ts_job *j, int top_k)
{
	int world = ts_job_world(j), n = 0;
	char ns[160], job[160];
	struct kv *s;

	m->j = j;
	m->r = ts_job_result(j);
	snprintf(m->labels, sizeof(m->labels), "k8s_namespace=\"%s\",training_job=\"%s\"",
		 ts_name_label(ns, sizeof(ns), ts_job_ns(j)), ts_name_label(job, sizeof(job), ts_job_name(j)));
	m->busy = calloc((size_t)world + 1, sizeof(*m->busy));
	m->ranks = calloc((size_t)(top_k + m->r->nslow) + 1, sizeof(*m->ranks));
	s = calloc((size_t)world + 1, sizeof(*s));
	if (!m->busy || !m->ranks || !s) {
		free(s);
		return -1;
	}
	ts_job_rank_busy_ms(j, m->busy);
	for (int k = 0; k < world; k++)
		if (!isnan(m->busy[k]))
			s[n++] = (struct kv){ m->busy[k], k };
	qsort(s, (size_t)n, sizeof(*s), by_value_desc);
	for (int i = 0; i < n && i < top_k; i++)
		m->ranks[m->nranks++] = s[i].k;
	for (int i = 0; i < m->r->nslow; i++)
		if (m->r->slow[i].rank >= 0 && m->r->slow[i].rank < world &&
		    !isnan(m->busy[m->r->slow[i].rank]) && !listed(m, m->r->slow[i].rank))
			m->ranks[m->nranks++] = m->r->slow[i].rank;
	if ((m->have_q = n > 0)) {
		for (size_t i = 0; i < NQ; i++) /* s is descending: quantile q at n-1 - q(n-1) */
			m->q[i] = s[(n - 1) - (int)floor(quantiles[i] * (n - 1))].v;
		m->median = m->q[0];
	}
	free(s);
	return 0;
}

static void family(struct ts_buf *b, const char *name, const char *type, const char *help)
{
	ts_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void ts_render_hist(struct ts_buf *b, const char *name, const char *labels, const double *bounds,
		    int nb, const uint64_t *le, uint64_t count, double sum)
{
	const char *sep = *labels ? "," : "";

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

static void rank_labels(struct ts_job *j, int k, char *out, size_t n)
{
	struct ts_rank_meta *meta = ts_job_rank(j, k);
	char pod[160], node[100];

	snprintf(out, n, "rank=\"%d\",pod=\"%s\",node=\"%s\"", k,
		 ts_name_label(pod, sizeof(pod), meta ? meta->pod : ""),
		 ts_name_label(node, sizeof(node), meta ? meta->node : ""));
}

static void job_families(struct jm *m, int n, struct ts_buf *b)
{
	family(b, "trainscope_job_state", "gauge", "1 for the job's current state.");
	for (int i = 0; i < n; i++)
		ts_buf_printf(b, "trainscope_job_state{%s,state=\"%s\"} 1\n", m[i].labels,
			      ts_state_names[m[i].r->state]);
	family(b, "trainscope_job_slow_ranks", "gauge", "Slow ranks named in the job's report.");
	for (int i = 0; i < n; i++)
		ts_buf_printf(b, "trainscope_job_slow_ranks{%s} %d\n", m[i].labels, m[i].r->nslow);
	family(b, "trainscope_job_degradation_ratio", "gauge",
	       "The job's step time against its baseline, minus 1 (0.25: 25 % slower).");
	for (int i = 0; i < n; i++)
		ts_buf_printf(b, "trainscope_job_degradation_ratio{%s} %.6g\n", m[i].labels,
			      isfinite(m[i].r->degradation) ? m[i].r->degradation : 0.0);
	family(b, "trainscope_job_step_seconds", "histogram", "The job's step times.");
	for (int i = 0; i < n; i++)
		ts_render_hist(b, "trainscope_job_step_seconds", m[i].labels, ts_step_bucket_s,
			       TS_STEP_BUCKETS, m[i].r->step_le, m[i].r->step_count, m[i].r->step_sum_s);
}

/* Where the jobs' step time went over their last analysis window (ts_lost_time), for
 * jobs that had a full one: the kinds, and the ranks' share by cause. */
static void lost_families(struct jm *m, int n, struct ts_buf *b)
{
	static const char *const kind[] = { "total", "ranks", "stages", "data", "communication" };

	family(b, "trainscope_job_lost_time_ratio", "gauge",
	       "Share of the job's step time over its last analysis window lost to ranks slower "
	       "than their peers (ranks), per-step variation among replicas (data) and heavier "
	       "pipeline stages (stages); total is their sum. communication: the share spent in "
	       "transfers, where time goes, not a loss.");
	for (int i = 0; i < n; i++) {
		const struct ts_lost_time *l = &m[i].r->lost;
		const double v[] = { l->share, l->ranks, l->stages, l->data, l->comm };
		for (size_t k = 0; l->valid && k < sizeof(v) / sizeof(v[0]); k++)
			ts_buf_printf(b, "trainscope_job_lost_time_ratio{%s,kind=\"%s\"} %.6g\n",
				      m[i].labels, kind[k], isfinite(v[k]) ? v[k] : 0.0);
	}
	family(b, "trainscope_job_lost_time_cause_ratio", "gauge",
	       "The ranks' share of the lost time (kind=\"ranks\"), by the phase that costs each "
	       "slow rank the most.");
	for (int i = 0; i < n; i++)
		for (int c = 0; m[i].r->lost.valid && c < TS_CAUSE_COUNT; c++)
			ts_buf_printf(b, "trainscope_job_lost_time_cause_ratio{%s,cause=\"%s\"} %.6g\n",
				      m[i].labels, ts_cause_names[c],
				      isfinite(m[i].r->lost.cause[c]) ? m[i].r->lost.cause[c] : 0.0);
}

/* GPU time lost since each job began (ts_gpu_lost), as counters: the job's by cause
 * (its slow ranks' causes, stages, data), and each rank's that reached a GPU-minute (a
 * counter only grows, so a rank's series, once there, stays; summed by node in PromQL). */
static void gpu_lost_families(struct jm *m, int n, struct ts_buf *b)
{
	char rl[400];

	family(b, "trainscope_job_gpu_seconds_lost_total", "counter",
	       "GPU time the job lost since it began: each analysis window's lost shares times "
	       "its step times the job's GPUs, by cause (the slow ranks' causes; stages; data); "
	       "kept across analyzer restarts.");
	for (int i = 0; i < n; i++) {
		const struct ts_gpu_lost *g = &m[i].r->gpu_lost;
		for (int c = 0; g->counted && c < TS_CAUSE_COUNT; c++)
			ts_buf_printf(b, "trainscope_job_gpu_seconds_lost_total{%s,cause=\"%s\"} %.3f\n",
				      m[i].labels, ts_cause_names[c], g->cause_s[c]);
		if (g->counted)
			ts_buf_printf(b, "trainscope_job_gpu_seconds_lost_total{%s,cause=\"stages\"} %.3f\n"
				      "trainscope_job_gpu_seconds_lost_total{%s,cause=\"data\"} %.3f\n",
				      m[i].labels, g->stages_s, m[i].labels, g->data_s);
	}
	family(b, "trainscope_rank_gpu_seconds_lost_total", "counter",
	       "The job's GPU time lost to one rank (slower than its peers), for each rank that "
	       "cost a GPU-minute or more; sum by node for a node's.");
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m[i].r->world; k++) {
			struct ts_rank_meta *meta = ts_job_rank(m[i].j, k);
			if (!meta || !(meta->gpu_lost_s >= 60))
				continue;
			rank_labels(m[i].j, k, rl, sizeof(rl));
			ts_buf_printf(b, "trainscope_rank_gpu_seconds_lost_total{%s,%s} %.3f\n",
				      m[i].labels, rl, meta->gpu_lost_s);
		}
}

static void rank_families(struct jm *m, int n, struct ts_buf *b)
{
	char rl[400];

	family(b, "trainscope_job_rank_busy_seconds", "gauge",
	       "Quantiles over the job's ranks of their own time per step (compute, launch, "
	       "dataloader, checkpoint; not the wait in collectives).");
	for (int i = 0; i < n; i++)
		for (size_t q = 0; m[i].have_q && q < NQ; q++)
			ts_buf_printf(b, "trainscope_job_rank_busy_seconds{%s,quantile=\"%g\"} %.6f\n",
				      m[i].labels, quantiles[q], m[i].q[q] / 1e3);
	family(b, "trainscope_rank_busy_seconds", "gauge",
	       "A rank's own time per step, median of the recent steps: the job's slowest ranks "
	       "(metrics.top_ranks) and every named one.");
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m[i].nranks; k++) {
			rank_labels(m[i].j, m[i].ranks[k], rl, sizeof(rl));
			ts_buf_printf(b, "trainscope_rank_busy_seconds{%s,%s} %.6f\n", m[i].labels, rl,
				      m[i].busy[m[i].ranks[k]] / 1e3);
		}
	family(b, "trainscope_rank_excess_ratio", "gauge",
	       "Those ranks' own time against the job's median rank, minus 1.");
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m[i].nranks && m[i].median > 0; k++) {
			rank_labels(m[i].j, m[i].ranks[k], rl, sizeof(rl));
			ts_buf_printf(b, "trainscope_rank_excess_ratio{%s,%s} %.6f\n", m[i].labels, rl,
				      m[i].busy[m[i].ranks[k]] / m[i].median - 1);
		}
	family(b, "trainscope_slow_rank_info", "gauge",
	       "1 for each rank the job's report names slow, with its cause and method.");
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m[i].r->nslow; k++) {
			const struct ts_slow_rank *s = &m[i].r->slow[k];
			rank_labels(m[i].j, s->rank, rl, sizeof(rl));
			ts_buf_printf(b, "trainscope_slow_rank_info{%s,%s,cause=\"%s\",method=\"%s\"} 1\n",
				      m[i].labels, rl, s->cause ? s->cause : "", s->method);
		}
}

void ts_jobs_render_metrics(struct ts_job *const *jobs, int njobs, int top_k, struct ts_buf *b)
{
	struct jm *m = calloc((size_t)njobs + 1, sizeof(*m));
	int n = 0;

	for (int i = 0; m && i < njobs; i++)
		if (!prepare(&m[n], jobs[i], top_k))
			n++;
		else
			free(m[n].busy), free(m[n].ranks), memset(&m[n], 0, sizeof(m[n]));
	if (m) {
		job_families(m, n, b);
		lost_families(m, n, b);
		gpu_lost_families(m, n, b);
		rank_families(m, n, b);
	}
	for (int i = 0; i < n; i++)
		free(m[i].busy), free(m[i].ranks);
	free(m);
}
