// SPDX-License-Identifier: Apache-2.0
#include "stats.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void ts_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

/* Moves the k-th smallest of v[0..n) to v[k], none larger before it and none smaller
 * after (Wirth's selection: linear on average, where a sort is n log n). */
static void select_kth(double *v, size_t n, size_t k)
{
	ptrdiff_t l = 0, m = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;

	while (l < m) {
		double x = v[kk];
		ptrdiff_t i = l, j = m;
		do {
			while (v[i] < x)
				i++;
			while (x < v[j])
				j--;
			if (i <= j) {
				double t = v[i];
				v[i++] = v[j], v[j--] = t;
			}
		} while (i <= j);
		if (j < kk)
			l = i;
		if (kk < i)
			m = j;
	}
}

double ts_median(const double *v, size_t n, double *tmp)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			tmp[k++] = v[i];
	if (!k)
		return NAN;
	select_kth(tmp, k, k / 2);
	if (k % 2)
		return tmp[k / 2];
	double below = tmp[0]; /* the largest of those before the middle */
	for (size_t i = 1; i < k / 2; i++)
		below = tmp[i] > below ? tmp[i] : below;
	return (below + tmp[k / 2]) / 2.0;
}

double ts_mad_sigma(const double *v, size_t n, double med, double *tmp)
{
	double *dev = tmp + n;
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			dev[k++] = fabs(v[i] - med);
	return k ? 1.4826 * ts_median(dev, k, tmp) : NAN;
}

/* The last want (at most 15) non-NaN values of the ring into v, sorted (insertion: a
 * handful of values); returns how many. */
static size_t recent_sorted(const float *ring, size_t w, size_t last, size_t want, double *v)
{
	size_t n = 0;

	for (size_t i = 0; i < want && i < w && i < 15; i++) {
		double x = ring[(last + w - i) % w];
		if (isnan(x))
			continue;
		size_t at = n++;
		for (; at > 0 && v[at - 1] > x; at--)
			v[at] = v[at - 1];
		v[at] = x;
	}
	return n;
}

void ts_median_trim_recent(const float *ring, size_t w, size_t last, size_t want,
			   double *median, double *trim)
{
	double v[15], sum = 0;
	size_t n = recent_sorted(ring, w, last, want, v), cut = n ? (n - 1) / 3 : 0;

	*median = *trim = NAN;
	if (!n)
		return;
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	for (size_t i = cut; i < n - cut; i++)
		sum += v[i];
	*trim = sum / (double)(n - 2 * cut);
}

double ts_median_recent(const float *ring, size_t w, size_t last, size_t want)
{
	double median, trim;

	ts_median_trim_recent(ring, w, last, want, &median, &trim);
	return median;
}

double ts_quantile_recent(const float *ring, size_t w, size_t last, size_t want, double q)
{
	double v[15];
	size_t n = recent_sorted(ring, w, last, want, v);

	return n ? v[(size_t)(q * (double)(n - 1) + 0.5)] : NAN;
}
