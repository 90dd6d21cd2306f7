// SPDX-License-Identifier: Apache-2.0
#include "dbscan.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

struct idx_val {
	double v;
	size_t i;
};

static int cmp_iv(const void *a, const void *b)
{
	double x = ((const struct idx_val *)a)->v, y = ((const struct idx_val *)b)->v;

	return (x > y) - (x < y);
}

/* On sorted values the eps-neighbourhood of each point is a contiguous range, so core
 * points are found with two pointers, and clusters are runs of core points whose
 * neighbours chain; border points join the nearest preceding/following core's cluster. */
int ts_dbscan_1d(const double *v, size_t n, double eps, int min_samples, int *labels)
{
	struct idx_val *s = malloc((n ? n : 1) * sizeof(*s));
	bool *core = calloc(n ? n : 1, sizeof(*core));
	int *lab = malloc((n ? n : 1) * sizeof(*lab));
	int nclusters = 0;
	size_t lo = 0, hi = 0;

	if (!s || !core || !lab) {
		free(s), free(core), free(lab);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		s[i] = (struct idx_val){ v[i], i };
	qsort(s, n, sizeof(*s), cmp_iv);
	for (size_t k = 0; k < n; k++) {
		while (s[k].v - s[lo].v > eps)
			lo++;
		if (hi < k)
			hi = k;
		while (hi + 1 < n && s[hi + 1].v - s[k].v <= eps)
			hi++;
		core[k] = (int)(hi - lo + 1) >= min_samples;
		lab[k] = TS_DBSCAN_NOISE;
	}
	/* clusters: consecutive core points within eps belong together */
	long last_core = -1;
	for (size_t k = 0; k < n; k++) {
		if (!core[k])
			continue;
		if (last_core < 0 || s[k].v - s[last_core].v > eps)
			nclusters++;
		lab[k] = nclusters - 1;
		last_core = (long)k;
	}
	/* border points: within eps of a core point, take the nearer one's cluster */
	for (size_t k = 0; k < n; k++) {
		if (core[k])
			continue;
		double best = INFINITY;
		for (size_t j = k; j-- > 0 && s[k].v - s[j].v <= eps;)
			if (core[j]) {
				best = s[k].v - s[j].v;
				lab[k] = lab[j];
				break;
			}
		for (size_t j = k + 1; j < n && s[j].v - s[k].v <= eps; j++)
			if (core[j]) {
				if (s[j].v - s[k].v < best)
					lab[k] = lab[j];
				break;
			}
	}
	for (size_t k = 0; k < n; k++)
		labels[s[k].i] = lab[k];
	free(s), free(core), free(lab);
	return nclusters;
}

int ts_space_detect(const double *v, size_t n, const struct ts_space_opts *o, int *outlier,
		    double *median_out)
{
	size_t cap = n ? n : 1;
	double *tmp = malloc(3 * cap * sizeof(double)); /* 2 scratch for the statistics, 1 for x */
	double *x = tmp ? tmp + 2 * cap : NULL;
	int *labels = malloc((n ? n : 1) * sizeof(int));
	size_t *idx = malloc((n ? n : 1) * sizeof(size_t));
	double med, lo = INFINITY, hi = -INFINITY;
	size_t m = 0, mid = 0;
	int found = 0;

	if (!tmp || !labels || !idx) {
		found = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		outlier[i] = 0;
	med = ts_median(v, n, tmp);
	*median_out = med;
	for (size_t i = 0; i < n; i++) {
		if (isnan(v[i]))
			continue;
		lo = fmin(lo, v[i]);
		hi = fmax(hi, v[i]);
		idx[m] = i;
		x[m++] = o->scaling ? v[i] / med : v[i];
	}
	if (m < 3 || !(med > 0) || (hi - lo) / (2 * med) <= o->cv_threshold)
		goto out;
	double sigma = ts_mad_sigma(v, n, med, tmp), eps = o->eps;
	if ((found = ts_dbscan_1d(x, m, eps, o->min_samples, labels)) < 0)
		goto out;
	/* the main cluster is the one holding the median point */
	double best = INFINITY;
	for (size_t k = 0; k < m; k++)
		if (fabs(v[idx[k]] - med) < best) {
			best = fabs(v[idx[k]] - med);
			mid = k;
		}
	found = 0;
	for (size_t k = 0; k < m; k++) {
		double d = v[idx[k]] - med;
		if (labels[k] == labels[mid] && labels[mid] != TS_DBSCAN_NOISE)
			continue;
		if (labels[mid] == TS_DBSCAN_NOISE && fabs(d) * (o->scaling ? 1 / med : 1) <= eps)
			continue;
		if (fabs(d) < o->min_abs_diff || (sigma > 0 && fabs(d) < o->min_robust_z * sigma))
			continue;
		outlier[idx[k]] = d > 0 ? 1 : -1;
		found++;
	}
out:
	free(tmp), free(labels), free(idx);
	return found;
}
