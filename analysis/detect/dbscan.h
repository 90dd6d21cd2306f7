// SPDX-License-Identifier: Apache-2.0
/* DBSCAN over one dimension, and the SPACE detector built on it: which ranks of a
 * group stand apart from the main cluster of a metric. */
#ifndef TS_DBSCAN_H
#define TS_DBSCAN_H

#include <stdbool.h>
#include <stddef.h>

#define TS_DBSCAN_NOISE (-1)

/* Labels each value with its cluster (0, 1, ... in increasing value order) or
 * TS_DBSCAN_NOISE. A point is a core point when at least min_samples values (itself
 * included) lie within eps. O(n log n). Returns the number of clusters or -ENOMEM. */
int ts_dbscan_1d(const double *v, size_t n, double eps, int min_samples, int *labels);

struct ts_space_opts {
	double eps;          /* on scaled values when scaling is on */
	int min_samples;
	double cv_threshold; /* spread test: (max - min) / (2 * median) must exceed it */
	bool scaling;        /* divide by the group median, so eps is relative */
	double min_abs_diff; /* an outlier differs from the median at least this much */
	double min_robust_z; /* ... and lies this many robust sigmas (1.4826 MAD) from it */
};

/* Marks outlier[i] = +1 (above the main cluster), -1 (below) or 0. NaN values are
 * ignored (0). The main cluster is the one holding the median. On a noisy metric a
 * rank just past the cluster's edge is not enough: an outlier must also be
 * min_robust_z robust sigmas away from the median. Returns the number of outliers, 0
 * when the spread test fails, or -ENOMEM. median_out gets the median. */
int ts_space_detect(const double *v, size_t n, const struct ts_space_opts *o, int *outlier,
		    double *median_out);

#endif
