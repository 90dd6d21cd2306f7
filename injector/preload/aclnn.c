// SPDX-License-Identifier: Apache-2.0
#include "aclnn.h"
#include "gpu.h"

#include <stdio.h>
#include <string.h>

typedef int (*aclnn_run_fn)(void *workspace, uint64_t size, void *executor, void *stream);

/* One wrapper per operator looked up: a function cannot learn which real operator it
 * stands for, so there is a fixed set of them, each bound to a slot. */
#define SLOTS 500
static _Atomic(aclnn_run_fn) slot[SLOTS];
static _Atomic unsigned used;
static _Atomic int said_full;

static int run(unsigned i, void *ws, uint64_t n, void *ex, void *st)
{
	aclnn_run_fn f = atomic_load_explicit(&slot[i], memory_order_relaxed);
	uint64_t t0;

	if (ts_tls.depth)
		return f(ws, n, ex, st);
	int smp = ts_launch_enter((CUstream)st, TS_SK_ACL, &t0);
	int r = f(ws, n, ex, st);
	ts_launch_leave(smp, (CUstream)st, TS_SK_ACL, t0);
	return r;
}

/* Wrappers 1000..1499 (the leading 1 keeps the decimal names apart), wrapper N using
 * slot N - 1000. */
#define W(n) \
	static int w##n(void *a, uint64_t b, void *c, void *d) { return run(n - 1000, a, b, c, d); }
#define W10(p) W(p##0) W(p##1) W(p##2) W(p##3) W(p##4) W(p##5) W(p##6) W(p##7) W(p##8) W(p##9)
#define W100(p) W10(p##0) W10(p##1) W10(p##2) W10(p##3) W10(p##4) W10(p##5) W10(p##6) \
	W10(p##7) W10(p##8) W10(p##9)
W100(10) W100(11) W100(12) W100(13) W100(14)
#define P(n) w##n,
#define P10(p) P(p##0) P(p##1) P(p##2) P(p##3) P(p##4) P(p##5) P(p##6) P(p##7) P(p##8) P(p##9)
#define P100(p) P10(p##0) P10(p##1) P10(p##2) P10(p##3) P10(p##4) P10(p##5) P10(p##6) \
	P10(p##7) P10(p##8) P10(p##9)
static const aclnn_run_fn wrapper[SLOTS] = { P100(10) P100(11) P100(12) P100(13) P100(14) };

bool ts_aclnn_wants(const char *name)
{
	static const char tail[] = "GetWorkspaceSize";
	size_t n;

	if (strncmp(name, "aclnn", 5) != 0 || (n = strlen(name)) <= 5)
		return false;
	return n < sizeof(tail) - 1 || strcmp(name + n - (sizeof(tail) - 1), tail) != 0;
}

/* Cold: at dlsym time. An operator looked up again gets its first wrapper. */
void *ts_aclnn_wrap(void *real)
{
	unsigned n = atomic_load(&used);

	for (unsigned i = 0; i < n && i < SLOTS; i++)
		if (atomic_load(&slot[i]) == (aclnn_run_fn)real)
			return (void *)wrapper[i];
	unsigned i = atomic_fetch_add(&used, 1);
	if (i >= SLOTS) {
		if (!atomic_exchange(&said_full, 1))
			fprintf(stderr, "trainscope: more than %d aclnn operators looked up; "
					"the others run untimed\n", SLOTS);
		return real;
	}
	atomic_store(&slot[i], (aclnn_run_fn)real);
	return (void *)wrapper[i];
}
