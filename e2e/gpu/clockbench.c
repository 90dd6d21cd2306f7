// SPDX-License-Identifier: Apache-2.0
/* The clocks the preload reads on a launch, timed on the machine it runs on (cloud hosts
 * differ: a virtual TSC, a clock source the vDSO cannot read): ns per rdtsc and per
 * clock_gettime(CLOCK_MONOTONIC), each the median of 7 rounds of 10^7 reads; the tick
 * read singly and in pairs summed, as a hook makes them.
 *   cc -O2 -Iinjector/preload -Iinjector/preload/include -Icommon \
 *      -o /tmp/clockbench e2e/gpu/clockbench.c && /tmp/clockbench */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime under -std=c11 */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "lib.h"

#define N 10000000
#define ROUNDS 7

/* the clock the rounds are timed by: the library's own (common/tsclock.h) */
static double now_ns(void)
{
	return (double)ts_mono_ns();
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static volatile uint64_t sink;

/* the library's own clock read (lib.h), as its hooks make it */
static uint64_t ticks(void)
{
	return ts_ticks();
}

static double round_ticks(void)
{
	uint64_t acc = 0;
	double t0 = now_ns();

	for (int i = 0; i < N; i++)
		acc += ticks();
	sink = acc;
	return (now_ns() - t0) / N;
}

/* two reads around nothing, as a hook's enter and leave, summed as the hook does */
static double round_pair(void)
{
	uint64_t acc = 0;
	double t0 = now_ns();

	for (int i = 0; i < N; i++) {
		uint64_t a = ticks();
		acc += ticks() - a;
	}
	sink = acc;
	return (now_ns() - t0) / N;
}

static double round_mono(void)
{
	uint64_t acc = 0;
	double t0 = now_ns();

	for (int i = 0; i < N / 4; i++) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		acc += (uint64_t)t.tv_nsec;
	}
	sink = acc;
	return (now_ns() - t0) / (N / 4);
}

static double median(double (*f)(void))
{
	double v[ROUNDS];

	for (int r = 0; r < ROUNDS; r++)
		v[r] = f();
	qsort(v, ROUNDS, sizeof(v[0]), cmp);
	return v[ROUNDS / 2];
}

int main(void)
{
	printf("clockbench: tick read %.1f ns, a pair summed %.1f ns, clock_gettime %.1f ns\n",
	       median(round_ticks), median(round_pair), median(round_mono));
	return 0;
}
