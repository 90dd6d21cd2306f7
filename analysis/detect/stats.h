// SPDX-License-Identifier: Apache-2.0
/* Small robust statistics on double arrays. */
#ifndef TS_STATS_H
#define TS_STATS_H

#include <stddef.h>

/* Median of v[0..n) (n > 0); tmp is scratch space of n doubles. NaNs are skipped;
 * returns NaN when none is left. */
double ts_median(const double *v, size_t n, double *tmp);
/* Median absolute deviation around med, scaled by 1.4826 to estimate sigma. */
double ts_mad_sigma(const double *v, size_t n, double med, double *tmp);
void ts_sort(double *v, size_t n);
/* Median of the last want values of a ring of w floats whose newest is at slot last,
 * NaNs passed over (want is capped at 15); NaN when none. */
double ts_median_recent(const float *ring, size_t w, size_t last, size_t want);
/* The median of the same values (as ts_median_recent's) and their mean with a third of
 * them, less one, cut off each end (7 values: the middle 3: a change that hits every
 * other step moves it as much as a lasting one half its size, and a pause of a step or
 * two does not), from one sort. Both NaN when none. */
void ts_median_trim_recent(const float *ring, size_t w, size_t last, size_t want,
			   double *median, double *trim);
/* The q-quantile (0..1, nearest rank) of the same values; NaN when none. */
double ts_quantile_recent(const float *ring, size_t w, size_t last, size_t want, double q);

#endif
