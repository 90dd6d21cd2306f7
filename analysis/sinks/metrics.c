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


enum {
	JM_JOB_STATE,
	JM_JOB_SLOW_RANKS,
	JM_JOB_DEGRADATION_RATIO,
	JM_JOB_STEP_SECONDS,
	JM_JOB_LOST_TIME_RATIO,
	JM_JOB_LOST_TIME_CAUSE_RATIO,
	JM_JOB_GPU_SECONDS_LOST,
	JM_RANK_GPU_SECONDS_LOST,
	JM_JOB_RANK_BUSY_SECONDS,
	JM_RANK_BUSY_SECONDS,
	JM_RANK_EXCESS_RATIO,
	JM_SLOW_RANK_INFO,
};

static const struct ts_metric_family job_metrics[] = {
	[JM_JOB_STATE] = { "trainscope_job_state", TS_GAUGE,
		"k8s_namespace,training_job,state",
		"1 for the job's current state." },
	[JM_JOB_SLOW_RANKS] = { "trainscope_job_slow_ranks", TS_GAUGE,
		"k8s_namespace,training_job",
		"Slow ranks named in the job's report." },
	[JM_JOB_DEGRADATION_RATIO] = { "trainscope_job_degradation_ratio", TS_GAUGE,
		"k8s_namespace,training_job",
		"The job's step time against its baseline, minus 1 (0.25: 25 % slower)." },
	[JM_JOB_STEP_SECONDS] = { "trainscope_job_step_seconds", TS_HISTOGRAM,
		"k8s_namespace,training_job",
		"The job's step times." },
	[JM_JOB_LOST_TIME_RATIO] = { "trainscope_job_lost_time_ratio", TS_GAUGE,
		"k8s_namespace,training_job,kind",
		"Share of the job's step time over its last analysis window lost to ranks "
		"slower than their peers (ranks), per-step variation among replicas "
		"(data) and heavier pipeline stages (stages); total is their sum. "
		"communication: the share spent in transfers, where time goes, not a "
		"loss." },
	[JM_JOB_LOST_TIME_CAUSE_RATIO] = { "trainscope_job_lost_time_cause_ratio", TS_GAUGE,
		"k8s_namespace,training_job,cause",
		"The ranks' share of the lost time (kind=\"ranks\"), by the phase that "
		"costs each slow rank the most." },
	[JM_JOB_GPU_SECONDS_LOST] = { "trainscope_job_gpu_seconds_lost_total", TS_COUNTER,
		"k8s_namespace,training_job,cause",
		"GPU time the job lost since it began: each analysis window's lost shares "
		"times its step times the job's GPUs, by cause (the slow ranks' causes; "
		"stages; data); kept across analyzer restarts." },
	[JM_RANK_GPU_SECONDS_LOST] = { "trainscope_rank_gpu_seconds_lost_total", TS_COUNTER,
		"k8s_namespace,training_job,rank,pod,node",
		"The job's GPU time lost to one rank (slower than its peers), for each "
		"rank that cost a GPU-minute or more; sum by node for a node's." },
	[JM_JOB_RANK_BUSY_SECONDS] = { "trainscope_job_rank_busy_seconds", TS_GAUGE,
		"k8s_namespace,training_job,quantile",
		"Quantiles over the job's ranks of their own time per step (compute, "
		"launch, dataloader, checkpoint; not the wait in collectives)." },
	[JM_RANK_BUSY_SECONDS] = { "trainscope_rank_busy_seconds", TS_GAUGE,
		"k8s_namespace,training_job,rank,pod,node",
		"A rank's own time per step, median of the recent steps: the job's "
		"slowest ranks (metrics.top_ranks) and every named one." },
	[JM_RANK_EXCESS_RATIO] = { "trainscope_rank_excess_ratio", TS_GAUGE,
		"k8s_namespace,training_job,rank,pod,node",
		"Those ranks' own time against the job's median rank, minus 1." },
	[JM_SLOW_RANK_INFO] = { "trainscope_slow_rank_info", TS_GAUGE,
		"k8s_namespace,training_job,rank,pod,node,cause,method",
		"1 for each rank the job's report names slow, with its cause and method." },
};

const struct ts_metric_table ts_job_metrics = TS_METRIC_TABLE(job_metrics);

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
	const struct ts_metric_family *f = &job_metrics[JM_JOB_STATE];

	ts_metric_head(b, f);
	for (int i = 0; i < n; i++)
		ts_metric_sample(b, f, "{%s,state=\"%s\"} 1\n", m[i].labels,
				 ts_state_names[m[i].r->state]);
	ts_metric_head(b, f = &job_metrics[JM_JOB_SLOW_RANKS]);
	for (int i = 0; i < n; i++)
		ts_metric_sample(b, f, "{%s} %d\n", m[i].labels, m[i].r->nslow);
	ts_metric_head(b, f = &job_metrics[JM_JOB_DEGRADATION_RATIO]);
	for (int i = 0; i < n; i++)
		ts_metric_sample(b, f, "{%s} %.6g\n", m[i].labels,
				 isfinite(m[i].r->degradation) ? m[i].r->degradation : 0.0);
	ts_metric_head(b, f = &job_metrics[JM_JOB_STEP_SECONDS]);
	for (int i = 0; i < n; i++)
		ts_metric_hist(b, f, m[i].labels, ts_step_bucket_s, TS_STEP_BUCKETS,
			       m[i].r->step_le, m[i].r->step_count, m[i].r->step_sum_s);
}

/* Where the jobs' step time went over their last analysis window (ts_lost_time), for
 * jobs that had a full one: the kinds, and the ranks' share by cause. */
static void lost_families(struct jm *m, int n, struct ts_buf *b)
{
	static const char *const kind[] = { "total", "ranks", "stages", "data", "communication" };
	const struct ts_metric_family *f = &job_metrics[JM_JOB_LOST_TIME_RATIO];

	ts_metric_head(b, f);
	for (int i = 0; i < n; i++) {
		const struct ts_lost_time *l = &m[i].r->lost;
		const double v[] = { l->share, l->ranks, l->stages, l->data, l->comm };
		for (size_t k = 0; l->valid && k < sizeof(v) / sizeof(v[0]); k++)
			ts_metric_sample(b, f, "{%s,kind=\"%s\"} %.6g\n", m[i].labels, kind[k],
					 isfinite(v[k]) ? v[k] : 0.0);
	}
	ts_metric_head(b, f = &job_metrics[JM_JOB_LOST_TIME_CAUSE_RATIO]);
	for (int i = 0; i < n; i++)
		for (int c = 0; m[i].r->lost.valid && c < TS_CAUSE_COUNT; c++)
			ts_metric_sample(b, f, "{%s,cause=\"%s\"} %.6g\n", m[i].labels,
					 ts_cause_names[c],
					 isfinite(m[i].r->lost.cause[c]) ? m[i].r->lost.cause[c] : 0.0);
}

/* GPU time lost since each job began (ts_gpu_lost), as counters: the job's by cause
 * (its slow ranks' causes, stages, data), and each rank's that reached a GPU-minute (a
 * counter only grows, so a rank's series, once there, stays; summed by node in PromQL). */
static void gpu_lost_families(struct jm *m, int n, struct ts_buf *b)
{
	const struct ts_metric_family *f = &job_metrics[JM_JOB_GPU_SECONDS_LOST];
	char rl[400];

	ts_metric_head(b, f);
	for (int i = 0; i < n; i++) {
		const struct ts_gpu_lost *g = &m[i].r->gpu_lost;
		if (!g->counted)
			continue;
		for (int c = 0; c < TS_CAUSE_COUNT; c++)
			ts_metric_sample(b, f, "{%s,cause=\"%s\"} %.3f\n", m[i].labels,
					 ts_cause_names[c], g->cause_s[c]);
		ts_metric_sample(b, f, "{%s,cause=\"stages\"} %.3f\n", m[i].labels, g->stages_s);
		ts_metric_sample(b, f, "{%s,cause=\"data\"} %.3f\n", m[i].labels, g->data_s);
	}
	ts_metric_head(b, f = &job_metrics[JM_RANK_GPU_SECONDS_LOST]);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m[i].r->world; k++) {
			struct ts_rank_meta *meta = ts_job_rank(m[i].j, k);
			if (!meta || !(meta->gpu_lost_s >= 60))
				continue;
			rank_labels(m[i].j, k, rl, sizeof(rl));
			ts_metric_sample(b, f, "{%s,%s} %.3f\n", m[i].labels, rl, meta->gpu_lost_s);
		}
}

static void rank_families(struct jm *m, int n, struct ts_buf *b)
{
	const struct ts_metric_family *f = &job_metrics[JM_JOB_RANK_BUSY_SECONDS];
	char rl[400];

	ts_metric_head(b, f);
	for (int i = 0; i < n; i++)
		for (size_t q = 0; m[i].have_q && q < NQ; q++)
			ts_metric_sample(b, f, "{%s,quantile=\"%g\"} %.6f\n", m[i].labels,
					 quantiles[q], m[i].q[q] / 1e3);
	ts_metric_head(b, f = &job_metrics[JM_RANK_BUSY_SECONDS]);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m[i].nranks; k++) {
			rank_labels(m[i].j, m[i].ranks[k], rl, sizeof(rl));
			ts_metric_sample(b, f, "{%s,%s} %.6f\n", m[i].labels, rl,
					 m[i].busy[m[i].ranks[k]] / 1e3);
		}
	ts_metric_head(b, f = &job_metrics[JM_RANK_EXCESS_RATIO]);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m[i].nranks && m[i].median > 0; k++) {
			rank_labels(m[i].j, m[i].ranks[k], rl, sizeof(rl));
			ts_metric_sample(b, f, "{%s,%s} %.6f\n", m[i].labels, rl,
					 m[i].busy[m[i].ranks[k]] / m[i].median - 1);
		}
	ts_metric_head(b, f = &job_metrics[JM_SLOW_RANK_INFO]);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m[i].r->nslow; k++) {
			const struct ts_slow_rank *s = &m[i].r->slow[k];
			rank_labels(m[i].j, s->rank, rl, sizeof(rl));
			ts_metric_sample(b, f, "{%s,%s,cause=\"%s\",method=\"%s\"} 1\n", m[i].labels,
					 rl, s->cause ? s->cause : "", s->method);
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
