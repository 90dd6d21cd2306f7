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

#endif
