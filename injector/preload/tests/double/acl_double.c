// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of the Ascend ACL runtime (libascendcl.so): see npu_double.h. Types by
 * ABI: handles are pointers, aclError an int (ACL_SUCCESS 0). */
#include "npu_double.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int aclError;
#define OK 0
#define E_PARAM 100000       /* ACL_ERROR_INVALID_PARAM */
#define E_TIMEOUT 107030     /* the stream did not finish in the time given */
#define E_NO_CONTEXT 107002  /* ACL_ERROR_RT_CONTEXT_NULL */

#define NSTREAM 32
#define NOPS 4096
#define NEVENT 8192
#define MAXR 256
#define NCOMM 8
#define RING 64
#define PENDING UINT64_MAX

enum { OP_KERNEL, OP_EVENT, OP_COLL, OP_WAIT };

struct op {
	int kind;
	uint64_t enq_ns, dur_ns; /* kernel; coll: xfer */
	int event; /* OP_EVENT: recorded; OP_WAIT: waited on */
	unsigned slot;
	uint64_t seq;
	uint32_t nranks, rank;
	bool published;
};

struct stream {
	uintptr_t key;
	uint64_t free_ns; /* when the work resolved so far is done */
	struct op q[NOPS];
	uint32_t head, tail;
	int stalled, capturing;
};

struct event {
	bool used;
	uint64_t at_ns; /* PENDING until its stream got there */
};

/* Arrivals of every member at each op of each communicator, shared by the ranks. */
struct shm {
	_Atomic uint64_t seq[NCOMM][RING][MAXR];
	_Atomic uint64_t at[NCOMM][RING][MAXR];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct stream streams[NSTREAM];
static struct event events[NEVENT];
static struct tsd_npu_stats st;
static uint64_t kernel_ns = 1000000;
static struct shm *shared;
static bool shm_tried;
static __thread void *cur_ctx;
static char the_ctx;
static uintptr_t next_ptr = 0x6f0000000000ull;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

size_t tsd_npu_shm_size(void)
{
	return sizeof(struct shm);
}

static struct shm *shm_get(void)
{
	const char *path = getenv("TSD_NPU_SHM");
	int fd;

	if (shm_tried)
		return shared;
	shm_tried = true;
	if (!path || (fd = open(path, O_RDWR)) < 0)
		return NULL;
	void *p = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	shared = p == MAP_FAILED ? NULL : p;
	return shared;
}

static struct stream *stream_of(void *s)
{
	uintptr_t key = s ? (uintptr_t)s : 1; /* NULL: the default stream */

	for (int i = 0; i < NSTREAM; i++) {
		if (streams[i].key == key)
			return &streams[i];
		if (!streams[i].key) {
			streams[i].key = key;
			return &streams[i];
		}
	}
	abort(); /* a test that uses more streams than the double knows */
}

static void push(struct stream *x, struct op o)
{
	if (x->tail - x->head >= NOPS)
		abort(); /* nothing resolves: the test never synchronizes */
	o.enq_ns = now_ns();
	x->q[x->tail++ % NOPS] = o;
}

/* When a collective finishes, or PENDING while a member has not reached it. */
static uint64_t coll_done(struct op *o, uint64_t arrive)
{
	struct shm *m = shm_get();
	uint64_t last = arrive;
	unsigned r = o->seq % RING;

	if (!m || o->nranks <= 1 || o->nranks > MAXR || o->rank >= MAXR)
		return arrive + o->dur_ns;
	if (!o->published) {
		atomic_store(&m->at[o->slot][r][o->rank], arrive);
		atomic_store(&m->seq[o->slot][r][o->rank], o->seq);
		o->published = true;
	}
	for (uint32_t i = 0; i < o->nranks; i++) {
		if (atomic_load(&m->seq[o->slot][r][i]) != o->seq)
			return PENDING;
		uint64_t a = atomic_load(&m->at[o->slot][r][i]);
		last = a > last ? a : last;
	}
	return last + o->dur_ns;
}

/* Works the stream's queue as far as the device has got. */
static void resolve(struct stream *x)
{
	while (x->head != x->tail) {
		struct op *o = &x->q[x->head % NOPS];
		uint64_t start = o->enq_ns > x->free_ns ? o->enq_ns : x->free_ns, end = start;
		if (o->kind == OP_WAIT) {
			uint64_t at = events[o->event].at_ns;
			if (at == PENDING)
				return; /* the other stream has not got there */
			end = at > start ? at : start;
		} else if (o->kind == OP_KERNEL)
			end = start + o->dur_ns;
		else if (o->kind == OP_COLL && (x->stalled || (end = coll_done(o, start)) == PENDING))
			return;
		else if (o->kind == OP_EVENT)
			events[o->event].at_ns = start;
		x->free_ns = end;
		x->head++;
	}
}

void tsd_npu_set_kernel_ns(uint64_t ns)
{
	pthread_mutex_lock(&mu);
	kernel_ns = ns;
	pthread_mutex_unlock(&mu);
}

void tsd_npu_set_stalled(void *s, int on)
{
	pthread_mutex_lock(&mu);
	stream_of(s)->stalled = on;
	pthread_mutex_unlock(&mu);
}

void tsd_npu_get_stats(struct tsd_npu_stats *out)
{
	pthread_mutex_lock(&mu);
	*out = st;
	pthread_mutex_unlock(&mu);
}

void tsd_npu_enqueue_coll(void *s, unsigned slot, uint64_t seq, uint32_t nranks, uint32_t rank,
			  uint64_t xfer_ns)
{
	pthread_mutex_lock(&mu);
	st.colls++;
	push(stream_of(s), (struct op){ .kind = OP_COLL, .dur_ns = xfer_ns, .slot = slot % NCOMM,
					.seq = seq, .nranks = nranks, .rank = rank });
	pthread_mutex_unlock(&mu);
}

/* ---- devices, contexts, streams ------------------------------------------------------ */

aclError aclrtSetDevice(int32_t dev)
{
	(void)dev;
	cur_ctx = &the_ctx;
	return OK;
}

aclError aclrtResetDevice(int32_t dev)
{
	(void)dev;
	return OK;
}

aclError aclrtGetCurrentContext(void **ctx)
{
	*ctx = cur_ctx;
	return cur_ctx ? OK : E_NO_CONTEXT;
}

aclError aclrtSetCurrentContext(void *ctx)
{
	cur_ctx = ctx;
	return OK;
}

aclError aclrtCreateStream(void **s)
{
	pthread_mutex_lock(&mu);
	*s = (void *)(next_ptr += 0x100);
	stream_of(*s);
	pthread_mutex_unlock(&mu);
	return OK;
}

aclError aclrtDestroyStream(void *s)
{
	(void)s;
	return OK;
}

/* ---- launches -------------------------------------------------------------------------- */

static aclError launch(void *s)
{
	pthread_mutex_lock(&mu);
	struct stream *x = stream_of(s);
	st.launches++;
	if (!x->capturing)
		push(x, (struct op){ .kind = OP_KERNEL, .dur_ns = kernel_ns });
	pthread_mutex_unlock(&mu);
	return OK;
}

aclError aclrtLaunchKernel(void *fn, uint32_t blocks, const void *args, size_t size, void *s)
{
	(void)fn, (void)blocks, (void)args, (void)size;
	return launch(s);
}

aclError aclrtLaunchKernelV2(void *fn, uint32_t blocks, const void *args, size_t size,
			     void *cfg, void *s)
{
	(void)fn, (void)blocks, (void)args, (void)size, (void)cfg;
	return launch(s);
}

aclError aclrtLaunchKernelWithConfig(void *fn, uint32_t blocks, void *s, void *cfg, void *args,
				     void *reserve)
{
	(void)fn, (void)blocks, (void)cfg, (void)args, (void)reserve;
	return launch(s);
}

aclError aclrtLaunchKernelWithHostArgs(void *fn, uint32_t blocks, void *s, void *cfg, void *args,
				       size_t size, void *holders, size_t n)
{
	(void)fn, (void)blocks, (void)cfg, (void)args, (void)size, (void)holders, (void)n;
	return launch(s);
}

/* ---- events ------------------------------------------------------------------------------ */

aclError aclrtCreateEventWithFlag(void **ev, uint32_t flag)
{
	if (!(flag & 0x8)) /* ACL_EVENT_TIME_LINE: needed for elapsed times */
		return E_PARAM;
	pthread_mutex_lock(&mu);
	for (int i = 1; i < NEVENT; i++)
		if (!events[i].used) {
			events[i] = (struct event){ .used = true, .at_ns = PENDING };
			*ev = (void *)(uintptr_t)i;
			st.events_created++;
			pthread_mutex_unlock(&mu);
			return OK;
		}
	pthread_mutex_unlock(&mu);
	return E_PARAM;
}

aclError aclrtDestroyEvent(void *ev)
{
	pthread_mutex_lock(&mu);
	events[(uintptr_t)ev % NEVENT].used = false;
	pthread_mutex_unlock(&mu);
	return OK;
}

aclError aclrtRecordEvent(void *ev, void *s)
{
	pthread_mutex_lock(&mu);
	struct stream *x = stream_of(s);
	if (x->capturing)
		st.records_while_capturing++;
	st.event_records++;
	events[(uintptr_t)ev % NEVENT].at_ns = PENDING;
	push(x, (struct op){ .kind = OP_EVENT, .event = (int)((uintptr_t)ev % NEVENT) });
	pthread_mutex_unlock(&mu);
	return OK;
}

static void resolve_all(void)
{
	for (int round = 0; round < 2; round++) /* a wait may need another stream first */
		for (int k = 0; k < NSTREAM && streams[k].key; k++)
			resolve(&streams[k]);
}

static bool event_done(int i, uint64_t now)
{
	resolve_all();
	return events[i].at_ns != PENDING && events[i].at_ns <= now;
}

/* ACL_EVENT_RECORDED_STATUS_NOT_READY 0, _COMPLETE 1 */
aclError aclrtQueryEventStatus(void *ev, int *status)
{
	pthread_mutex_lock(&mu);
	*status = event_done((int)((uintptr_t)ev % NEVENT), now_ns());
	pthread_mutex_unlock(&mu);
	return OK;
}

aclError aclrtEventElapsedTime(float *ms, void *a, void *b)
{
	pthread_mutex_lock(&mu);
	struct event *x = &events[(uintptr_t)a % NEVENT], *y = &events[(uintptr_t)b % NEVENT];
	aclError r = x->at_ns == PENDING || y->at_ns == PENDING ? E_PARAM : OK;
	if (r == OK)
		*ms = (float)((double)(y->at_ns - x->at_ns) / 1e6);
	pthread_mutex_unlock(&mu);
	return r;
}

/* ---- synchronisation: real waits, bounded by timeout_ms (-1: none) --------------------- */

static bool stream_idle(struct stream *x, uint64_t now)
{
	resolve_all();
	return x->head == x->tail && x->free_ns <= now;
}

static aclError wait_until(void *s, int event, int32_t timeout_ms)
{
	uint64_t t0 = now_ns();

	for (;;) {
		pthread_mutex_lock(&mu);
		uint64_t now = now_ns();
		bool done = event ? event_done(event, now) : stream_idle(stream_of(s), now);
		st.syncs += done;
		pthread_mutex_unlock(&mu);
		if (done)
			return OK;
		if (timeout_ms >= 0 && now - t0 > (uint64_t)timeout_ms * 1000000ull)
			return E_TIMEOUT;
		struct timespec d = { 0, 200000 };
		nanosleep(&d, NULL);
	}
}

/* $TSD_NPU_SYNC_TIMEOUT_MS bounds the plain waits, as HCCL_EXEC_TIMEOUT bounds a real
 * one: a job whose collective never finishes ends instead of waiting for ever. */
static int32_t default_timeout(void)
{
	const char *v = getenv("TSD_NPU_SYNC_TIMEOUT_MS");

	return v ? atoi(v) : -1;
}

aclError aclrtSynchronizeStream(void *s)
{
	return wait_until(s, 0, default_timeout());
}

aclError aclrtSynchronizeStreamWithTimeout(void *s, int32_t timeout)
{
	return wait_until(s, 0, timeout);
}

aclError aclrtSynchronizeDevice(void)
{
	for (int i = 0; i < NSTREAM && streams[i].key; i++) {
		aclError r = wait_until((void *)streams[i].key, 0, default_timeout());
		if (r != OK)
			return r;
	}
	return OK;
}

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout)
{
	(void)timeout;
	return aclrtSynchronizeDevice();
}

aclError aclrtSynchronizeEvent(void *ev)
{
	return wait_until(NULL, (int)((uintptr_t)ev % NEVENT), default_timeout());
}

/* Later work on s starts once ev's stream got there. */
aclError aclrtStreamWaitEvent(void *s, void *ev)
{
	pthread_mutex_lock(&mu);
	push(stream_of(s), (struct op){ .kind = OP_WAIT, .event = (int)((uintptr_t)ev % NEVENT) });
	pthread_mutex_unlock(&mu);
	return OK;
}

/* ---- memory ------------------------------------------------------------------------------ */

static aclError dev_alloc(void **p, size_t n)
{
	const char *limit = getenv("TSD_NPU_MEM_LIMIT");

	if (limit && n > strtoull(limit, NULL, 0))
		return 207001; /* ACL_ERROR_RT_MEMORY_ALLOCATION */
	pthread_mutex_lock(&mu);
	*p = (void *)(next_ptr += (n + 0xfff) & ~(uintptr_t)0xfff);
	st.allocs++;
	pthread_mutex_unlock(&mu);
	return OK;
}

aclError aclrtMalloc(void **p, size_t n, int policy)
{
	(void)policy;
	return dev_alloc(p, n);
}

aclError aclrtMallocAlign32(void **p, size_t n, int policy)
{
	(void)policy;
	return dev_alloc(p, n);
}

aclError aclrtMallocCached(void **p, size_t n, int policy)
{
	(void)policy;
	return dev_alloc(p, n);
}

aclError aclrtFree(void *p)
{
	(void)p;
	pthread_mutex_lock(&mu);
	st.frees++;
	pthread_mutex_unlock(&mu);
	return OK;
}

/* ---- captures: work launched into a capturing stream is kept for the model ----------- */

aclError aclmdlRICaptureBegin(void *s, int mode)
{
	(void)mode;
	pthread_mutex_lock(&mu);
	stream_of(s)->capturing = 1;
	pthread_mutex_unlock(&mu);
	return OK;
}

aclError aclmdlRICaptureGetInfo(void *s, int *status, void **ri)
{
	pthread_mutex_lock(&mu);
	*status = stream_of(s)->capturing; /* ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE = 1 */
	pthread_mutex_unlock(&mu);
	if (ri)
		*ri = NULL;
	return OK;
}

aclError aclmdlRICaptureEnd(void *s, void **ri)
{
	pthread_mutex_lock(&mu);
	stream_of(s)->capturing = 0;
	pthread_mutex_unlock(&mu);
	if (ri)
		*ri = (void *)0x1;
	return OK;
}
