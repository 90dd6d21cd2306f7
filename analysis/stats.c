#include "stats.h"

#include <math.h>
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

double ts_median(const double *v, size_t n, double *tmp)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			tmp[k++] = v[i];
	if (!k)
		return NAN;
	ts_sort(tmp, k);
	return k % 2 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2.0;
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

double ts_median_recent(const float *ring, size_t w, size_t last, size_t want)
{
	double v[15], tmp[15];
	size_t n = 0;

	for (size_t i = 0; i < want && i < w && i < 15; i++) {
		float x = ring[(last + w - i) % w];
		if (!isnan(x))
			v[n++] = x;
	}
	return n ? ts_median(v, n, tmp) : NAN;
}

double ts_trimmed_mean_recent(const float *ring, size_t w, size_t last, size_t want)
{
	double v[15], sum = 0;
	size_t n = 0, cut;

	for (size_t i = 0; i < want && i < w && i < 15; i++) {
		float x = ring[(last + w - i) % w];
		if (!isnan(x))
			v[n++] = x;
	}
	if (!n)
		return NAN;
	ts_sort(v, n);
	cut = (n - 1) / 3;
	for (size_t i = cut; i < n - cut; i++)
		sum += v[i];
	return sum / (double)(n - 2 * cut);
}

double ts_quantile_recent(const float *ring, size_t w, size_t last, size_t want, double q)
{
	double v[15];
	size_t n = 0;

	for (size_t i = 0; i < want && i < w && i < 15; i++) {
		float x = ring[(last + w - i) % w];
		if (!isnan(x))
			v[n++] = x;
	}
	if (!n)
		return NAN;
	ts_sort(v, n);
	return v[(size_t)(q * (double)(n - 1) + 0.5)];
}
