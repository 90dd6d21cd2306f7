// SPDX-License-Identifier: Apache-2.0
/* A user's NCCL profiler plugin chained behind trainscope's (ncclchain.c): the real
 * libtrainscope.so loaded as NCCL loads a profiler plugin (dlopen, dlsym of
 * ncclProfiler_v5 or _v4), TRAINSCOPE_NCCL_PROFILER_CHAIN naming the stand-in plugin
 * (tests/double/profiler2_double.c). Both must see the collectives: the stand-in's
 * counts, and trainscope's own records (collectives, per-peer sends) in its ring.
 *
 * The library loads the chained plugin once per process, so each case runs this program
 * again ("drive" mode) with its own environment and reads what it printed: "key value"
 * lines, and the library's stderr lines, which the child sends to the same pipe. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "double/profiler2_double.h"
#include "ncclprof.h"
#include "ring.h"
#include "common/tests/testutil.h"

#define MIB (1u << 20)
#define FLOOD 20000 /* group events left open: more than the chain's pairs */

/* The stand-in's default mask (profiler2_double.c) and trainscope's own. */
#define THEIR_MASK (TS_PROF_GROUP | TS_PROF_COLL | TS_PROF_P2P | TS_PROF_PROXY_OP | \
		    TS_PROF_PROXY_STEP | TS_PROF_NET_PLUGIN)
#define OUR_MASK (TS_PROF_COLL | TS_PROF_P2P | TS_PROF_PROXY_OP | TS_PROF_PROXY_STEP | \
		  TS_PROF_KERNEL_CH)

/* ==== the driver (a child: one library instance per case) ============================ */

static struct {
	ts_profiler_v5 *p5;
	ts_profiler_v4 *p4; /* set: NCCL 2.26/2.27 drives the library through v4 */
	struct ts_ring *ring;
	int ncoll, npeer;
	struct ts_rec coll[8], peer[8];
} D;

static void die(const char *what)
{
	printf("driver: %s\n", what);
	exit(2);
}

/* One event through the version NCCL drives; a v4 descriptor is v5's fields in v4's
 * layout (a v4 collective's parent is its group). */
static void *start(void *ctx, const ts_prof_descr_v5 *d)
{
	void *h = NULL;

	if (!D.p4) {
		ts_prof_descr_v5 e = *d;
		D.p5->start_event(ctx, &h, &e);
		return h;
	}
	ts_prof_descr_v4 a = { .type = (uint8_t)d->type, .parent = d->parent, .rank = d->rank };
	if (d->type == TS_PROF_COLL) {
		a.coll.seq = d->coll.seq, a.coll.func = d->coll.func, a.coll.count = d->coll.count;
		a.coll.dtype = d->coll.dtype, a.coll.nchannels = d->coll.nchannels;
		a.coll.algo = d->coll.algo;
	} else if (d->type == TS_PROF_P2P) {
		a.p2p.func = d->p2p.func, a.p2p.count = d->p2p.count, a.p2p.dtype = d->p2p.dtype;
		a.p2p.peer = d->p2p.peer, a.p2p.nchannels = d->p2p.nchannels;
	} else if (d->type == TS_PROF_PROXY_OP) {
		a.proxy_op.peer = d->proxy_op.peer, a.proxy_op.is_send = d->proxy_op.is_send;
	} else if (d->type == TS_PROF_KERNEL_CH) {
		a.kernel_ch.ptimer = d->kernel_ch.ptimer;
	} else if (d->type == TS_PROF_NET_PLUGIN) {
		a.net.id = d->net.id;
	}
	D.p4->start_event(ctx, &h, &a);
	return h;
}

static void stop(void *h)
{
	(D.p4 ? D.p4->stop_event : D.p5->stop_event)(h);
}

/* The state change with its one argument (a size or a GPU timer: both first). */
static void record(void *h, int state, uint64_t arg)
{
	if (D.p4) {
		ts_prof_state_args_v4 a = { .proxy_step.size = arg };
		D.p4->record_event_state(h, state, &a);
	} else {
		ts_prof_state_args_v5 a = { .proxy_step.size = arg };
		D.p5->record_event_state(h, state, &a);
	}
}

static void *init(uint64_t id, int nranks, int *mask)
{
	void *ctx = NULL;

	*mask = 0;
	if (D.p4)
		D.p4->init(&ctx, mask, "c", id, 1, nranks, 0, NULL);
	else
		D.p5->init(&ctx, id, mask, "c", 1, nranks, 0, NULL);
	return ctx;
}

static void finalize(void *ctx)
{
	(D.p4 ? D.p4->finalize : D.p5->finalize)(ctx);
}

/* A collective with one kernel channel (GPU timers t0 to t1) under parent. */
static void *coll(void *ctx, void *parent, uint64_t seq, uint64_t t0, uint64_t t1)
{
	ts_prof_descr_v5 d = { .type = TS_PROF_COLL, .parent = parent };
	void *op, *ch;

	d.coll.seq = seq, d.coll.func = "AllReduce", d.coll.count = 256;
	d.coll.dtype = "ncclFloat32", d.coll.nchannels = 1, d.coll.algo = "Ring";
	d.coll.parent_group = parent;
	op = start(ctx, &d);
	ch = start(ctx, &(ts_prof_descr_v5){ .type = TS_PROF_KERNEL_CH, .parent = op,
					     .kernel_ch.ptimer = t0 });
	record(ch, TS_PROF_KERNEL_CH_STOP, t1);
	stop(ch);
	return op;
}

/* A network send of steps transfers of size bytes to peer, each with a net-plugin event
 * under it (a type only the stand-in asks for). */
static void proxy_send(void *ctx, void *parent, int peer, int steps, uint64_t size)
{
	ts_prof_descr_v5 d = { .type = TS_PROF_PROXY_OP, .parent = parent };
	void *op;

	d.proxy_op.peer = peer, d.proxy_op.is_send = 1;
	op = start(ctx, &d);
	for (int i = 0; i < steps; i++) {
		void *st = start(ctx, &(ts_prof_descr_v5){ .type = TS_PROF_PROXY_STEP, .parent = op });
		record(st, TS_PROF_STEP_SEND_WAIT, size);
		void *net = start(ctx, &(ts_prof_descr_v5){ .type = TS_PROF_NET_PLUGIN,
							    .parent = st, .net.id = 1 });
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL); /* the transfer's time */
		stop(net);
		stop(st);
	}
	stop(op);
}

static void drain(void)
{
	struct ts_rec r;

	while (ts_ring_pop(D.ring, &r)) {
		if (r.type == TS_REC_COLL && D.ncoll < 8)
			D.coll[D.ncoll++] = r;
		else if (r.type == TS_REC_PEER && D.npeer < 8)
			D.peer[D.npeer++] = r;
	}
}

static void wait_for(int *have, int want)
{
	for (int i = 0; i < 5000 && *have < want; i++) {
		drain();
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
}

/* What the stand-in was given, if the library loaded it. */
static void print_stand_in(void)
{
	const char *name = getenv("TRAINSCOPE_NCCL_PROFILER_CHAIN");
	char alt[512];
	void *h = name ? dlopen(name, RTLD_NOW | RTLD_NOLOAD) : NULL;
	void (*get)(struct tsd_prof2_counts *);
	struct tsd_prof2_counts c;
	uint64_t in_flight = 0;

	if (!h && name) {
		snprintf(alt, sizeof(alt), "libnccl-profiler-%s.so", name);
		h = dlopen(alt, RTLD_NOW | RTLD_NOLOAD);
	}
	*(void **)&get = h ? dlsym(h, "tsd_prof2_counts") : NULL;
	printf("prof2.loaded %d\n", get != NULL);
	if (!get)
		return;
	get(&c);
	printf("prof2.inits %llu\nprof2.finalizes %llu\n", (unsigned long long)c.inits,
	       (unsigned long long)c.finalizes);
	for (int i = 0; i < TSD_PROF2_TYPES; i++) {
		printf("prof2.start.%d %llu\n", i, (unsigned long long)c.start[i]);
		in_flight += c.start[i] - c.stop[i];
	}
	printf("prof2.in_flight %llu\nprof2.records %llu\nprof2.parented %llu\n",
	       (unsigned long long)in_flight, (unsigned long long)c.records,
	       (unsigned long long)c.parented);
	printf("prof2.bad %llu\nprof2.unasked %llu\n",
	       (unsigned long long)(c.bad_ctx + c.bad_handle + c.bad_parent + c.full),
	       (unsigned long long)c.unasked);
	printf("prof2.coll_seq_sum %llu\nprof2.p2p_peer_sum %llu\nprof2.send_bytes %llu\n",
	       (unsigned long long)c.coll_seq_sum, (unsigned long long)c.p2p_peer_sum,
	       (unsigned long long)c.send_bytes);
}

/* Two communicators: on the first a group holding a collective (one channel, a network
 * send of 2 x 1 MiB to peer 1) and a group holding a send of 4 KiB to peer 3; on the
 * second one collective. */
static void drive_traffic(void (*step_begin)(uint64_t))
{
	int m1, m2;
	void *c1, *c2, *g, *op;

	step_begin(0);
	c1 = init(0xabc, 4, &m1);
	c2 = init(0xdef, 2, &m2);
	printf("mask %d\nmask2 %d\n", m1, m2);
	g = start(c1, &(ts_prof_descr_v5){ .type = TS_PROF_GROUP });
	op = coll(c1, g, 7, 1000, 5000);
	proxy_send(c1, op, 1, 2, MIB);
	stop(op);
	stop(g);
	g = start(c1, &(ts_prof_descr_v5){ .type = TS_PROF_GROUP });
	ts_prof_descr_v5 d = { .type = TS_PROF_P2P, .parent = g };
	d.p2p.func = "Send", d.p2p.count = 4096, d.p2p.dtype = "ncclInt8", d.p2p.peer = 3;
	d.p2p.parent_group = g;
	op = start(c1, &d);
	proxy_send(c1, op, 3, 1, 4096);
	stop(op);
	stop(g);
	stop(coll(c2, NULL, 3, 2000, 4500));
	wait_for(&D.ncoll, 3);
	step_begin(1); /* the poller says each peer's sends once a step */
	wait_for(&D.npeer, 2);
	printf("ring.colls %d\n", D.ncoll);
	for (int i = 0; i < D.ncoll; i++)
		printf("coll.%d.seq %llu\ncoll.%d.dur_ns %llu\n", i,
		       (unsigned long long)D.coll[i].coll.seq, i, (unsigned long long)D.coll[i].dur_ns);
	printf("ring.peers %d\n", D.npeer);
	for (int i = 0; i < D.npeer; i++)
		printf("peer.%d.peer %u\npeer.%d.bytes %llu\npeer.%d.sends %llu\n", i,
		       D.peer[i].peer_rank, i, (unsigned long long)D.peer[i].peer.bytes, i,
		       (unsigned long long)D.peer[i].peer.sends);
	finalize(c1);
	finalize(c2);
}

/* Group events only the stand-in takes, left open: more than the chain has pairs. */
static void drive_flood(void)
{
	int m;
	void *c = init(0xabc, 2, &m);

	for (int i = 0; i < FLOOD; i++)
		start(c, &(ts_prof_descr_v5){ .type = TS_PROF_GROUP });
	finalize(c);
}

/* drive v5|v4 traffic|flood */
static int drive(const char *abi, const char *what)
{
	void *h;
	void (*step_begin)(uint64_t);
	int (*side_path)(const char *, char *, size_t);
	char path[4096];

	dup2(1, 2); /* the library's lines, in order with ours */
	setvbuf(stdout, NULL, _IONBF, 0);
	h = dlopen(getenv("TRAINSCOPE_LIB"), RTLD_NOW | RTLD_LOCAL);
	if (!h)
		die(dlerror());
	D.p5 = dlsym(h, "ncclProfiler_v5");
	if (!strcmp(abi, "v4"))
		D.p4 = dlsym(h, "ncclProfiler_v4");
	*(void **)&step_begin = dlsym(h, "trainscope_step_begin");
	*(void **)&side_path = dlsym(h, "trainscope_side_path");
	if (!D.p5 || (!strcmp(abi, "v4") && !D.p4) || !step_begin || !side_path)
		die("symbols");
	if (!strcmp(what, "flood")) {
		drive_flood();
	} else {
		step_begin(0); /* makes the ring */
		if (side_path(TS_RING_SUFFIX, path, sizeof(path)) || ts_ring_open(path, &D.ring))
			die("no ring");
		drive_traffic(step_begin);
	}
	print_stand_in();
	return 0;
}

/* ==== the tests ======================================================================= */

struct out {
	char text[65536];
};

static struct out o;

/* This program in drive mode with the library and a ring folder of its own, and each
 * "NAME=value" of extra; fails the test unless it exits 0. */
static void run(const char *abi, const char *what, char *const *extra)
{
	char self[4096], dir[] = "/tmp/ts-chain-XXXXXX", lib[4200], ring[64];
	char *env[16] = { lib, ring, "TRAINSCOPE_POLL_MS=1", "TRAINSCOPE_NCCL_PROFILER_CHAIN=",
			  "TSD_PROF2_MASK=", "TSD_PROF2_INIT_FAIL=" };
	int n = 6, status;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	assert_true(len > 0);
	self[len] = 0;
	assert_non_null(ts_test_lib());
	assert_non_null(mkdtemp(dir));
	snprintf(lib, sizeof(lib), "TRAINSCOPE_LIB=%s", ts_test_lib());
	snprintf(ring, sizeof(ring), "TRAINSCOPE_RING_DIR=%s", dir);
	for (; extra && *extra && n < 15; extra++)
		env[n++] = *extra;
	status = ts_test_spawn((char *[]){ self, "drive", (char *)abi, (char *)what, NULL }, env,
			       o.text, sizeof(o.text));
	assert_int_equal(ts_test_rmdir(dir), 0);
	if (status != 0)
		fail_msg("drive %s %s failed (status %d); it printed:\n%s", abi, what, status,
			 o.text);
}

static bool has_val(const char *key, uint64_t *v)
{
	size_t k = strlen(key);

	for (const char *p = o.text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, k) && p[k] == ' ') {
			*v = strtoull(p + k + 1, NULL, 10);
			return true;
		}
	return false;
}

static uint64_t val(const char *key)
{
	uint64_t v = 0;

	if (!has_val(key, &v))
		fail_msg("the driver printed no %s:\n%s", key, o.text);
	return v;
}

static uint64_t vali(const char *what, int i, const char *field)
{
	char key[128];

	snprintf(key, sizeof(key), "%s.%d.%s", what, i, field);
	return val(key);
}

static int count_lines(const char *needle)
{
	int n = 0;

	for (const char *p = o.text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* trainscope's own view, whatever happened to the chained plugin: three collectives
 * timed by their channels, and the sends per peer. */
static void assert_ours(void)
{
	assert_int_equal(val("ring.colls"), 3);
	assert_int_equal(vali("coll", 0, "seq"), 7);
	assert_int_equal(vali("coll", 0, "dur_ns"), 4000);
	assert_int_equal(vali("coll", 2, "seq"), 3);
	assert_int_equal(vali("coll", 2, "dur_ns"), 2500);
	assert_int_equal(val("ring.peers"), 2);
	for (int i = 0; i < 2; i++) {
		bool one = vali("peer", i, "peer") == 1;
		assert_int_equal(vali("peer", i, "peer"), one ? 1 : 3);
		assert_int_equal(vali("peer", i, "bytes"), one ? 2 * MIB : 4096);
		assert_int_equal(vali("peer", i, "sends"), one ? 2 : 1);
	}
}

/* Ours alone: our mask, our records, the stand-in not running. */
static void assert_alone(void)
{
	assert_int_equal(val("mask"), OUR_MASK);
	assert_int_equal(val("mask2"), OUR_MASK);
	assert_ours();
	if (val("prof2.loaded"))
		assert_int_equal(val("prof2.start.1") + val("prof2.start.0"), 0);
}

/* The stand-in saw every event of the types it asked for, with its own parents, and
 * none of the others (no kernel channel); trainscope saw its own. */
static void assert_both(void)
{
	assert_int_equal(val("mask"), OUR_MASK | THEIR_MASK);
	assert_int_equal(val("mask2"), OUR_MASK | THEIR_MASK);
	assert_ours();
	assert_int_equal(val("prof2.loaded"), 1);
	assert_int_equal(val("prof2.inits"), 2);
	assert_int_equal(val("prof2.finalizes"), 2);
	assert_int_equal(val("prof2.start.0"), 2); /* groups */
	assert_int_equal(val("prof2.start.1"), 2); /* collectives */
	assert_int_equal(val("prof2.start.2"), 1); /* p2p */
	assert_int_equal(val("prof2.start.3"), 2); /* proxy ops */
	assert_int_equal(val("prof2.start.4"), 3); /* proxy steps */
	assert_int_equal(val("prof2.start.6"), 0); /* kernel channels: not asked for */
	assert_int_equal(val("prof2.start.7"), 3); /* net-plugin events */
	assert_int_equal(val("prof2.in_flight"), 0);
	assert_int_equal(val("prof2.records"), 3); /* the sends posted */
	/* a collective and p2p under a group, proxy ops under them, steps, net events */
	assert_int_equal(val("prof2.parented"), 2 + 2 + 3 + 3);
	assert_int_equal(val("prof2.bad"), 0);
	assert_int_equal(val("prof2.unasked"), 0);
	assert_int_equal(val("prof2.coll_seq_sum"), 7 + 3);
	assert_int_equal(val("prof2.p2p_peer_sum"), 3);
	assert_int_equal(val("prof2.send_bytes"), 2 * MIB + 4096);
	assert_int_equal(count_lines("not chained"), 0);
}

static void chain_env(char *buf, size_t n, const char *double_name)
{
	char path[4096];

	assert_int_equal(ts_test_double_path(double_name, path, sizeof(path)), 0);
	snprintf(buf, n, "TRAINSCOPE_NCCL_PROFILER_CHAIN=%s", path);
}

/* NCCL 2.28+ (v5) with a v5 plugin named by path. */
static void test_chain_v5(void **state)
{
	char chain[4200];

	(void)state;
	chain_env(chain, sizeof(chain), "libnccl-profiler-tsd2.so");
	run("v5", "traffic", (char *[]){ chain, NULL });
	assert_both();
}

/* A short name resolves as NCCL resolves NCCL_PROFILER_PLUGIN: libnccl-profiler-NAME.so
 * on the library path. */
static void test_chain_short_name(void **state)
{
	char dir[4096], ld[4200];

	(void)state;
	assert_int_equal(ts_test_double_path("", dir, sizeof(dir)), 0);
	snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", dir);
	run("v5", "traffic", (char *[]){ ld, "TRAINSCOPE_NCCL_PROFILER_CHAIN=tsd2", NULL });
	assert_both();
}

/* A plugin that has only ncclProfiler_v4 gets v4's descriptors (a collective's parent
 * its group). */
static void test_chain_v4_plugin(void **state)
{
	char chain[4200];

	(void)state;
	chain_env(chain, sizeof(chain), "libnccl-profiler-tsd2v4.so");
	run("v5", "traffic", (char *[]){ chain, NULL });
	assert_both();
}

/* NCCL 2.26/2.27 drives the library through ncclProfiler_v4; the v5 plugin still gets
 * every event. */
static void test_chain_from_v4_nccl(void **state)
{
	char chain[4200];

	(void)state;
	chain_env(chain, sizeof(chain), "libnccl-profiler-tsd2.so");
	run("v4", "traffic", (char *[]){ chain, NULL });
	assert_both();
}

/* Each plugin its own types: a stand-in asking for groups, collectives and proxy steps
 * gets only those, a step's parent (a proxy op only trainscope took) as none, and NCCL's
 * mask is still ours plus its. */
static void test_chain_masks(void **state)
{
	char chain[4200], mask[64];
	int theirs = TS_PROF_GROUP | TS_PROF_COLL | TS_PROF_PROXY_STEP;

	(void)state;
	chain_env(chain, sizeof(chain), "libnccl-profiler-tsd2.so");
	snprintf(mask, sizeof(mask), "TSD_PROF2_MASK=%d", theirs);
	run("v5", "traffic", (char *[]){ chain, mask, NULL });
	assert_int_equal(val("mask"), OUR_MASK | theirs);
	assert_ours();
	assert_int_equal(val("prof2.start.0"), 2);
	assert_int_equal(val("prof2.start.1"), 2);
	assert_int_equal(val("prof2.start.4"), 3);
	assert_int_equal(val("prof2.start.2") + val("prof2.start.3") + val("prof2.start.6") +
				 val("prof2.start.7"),
			 0);
	assert_int_equal(val("prof2.parented"), 1); /* c1's collective under its group */
	assert_int_equal(val("prof2.records"), 3);
	assert_int_equal(val("prof2.send_bytes"), 2 * MIB + 4096);
	assert_int_equal(val("prof2.bad") + val("prof2.unasked"), 0);
}

/* The chain naming trainscope itself, by its own name or a link of another name to it:
 * no chaining, one line, trainscope alone. */
static void test_chain_self(void **state)
{
	char chain[4200], dir[] = "/tmp/ts-chain-self-XXXXXX", link_path[64];

	(void)state;
	snprintf(chain, sizeof(chain), "TRAINSCOPE_NCCL_PROFILER_CHAIN=%s", ts_test_lib());
	run("v5", "traffic", (char *[]){ chain, NULL });
	assert_alone();
	assert_int_equal(count_lines("not chained: it is trainscope's own library"), 1);

	assert_non_null(mkdtemp(dir));
	snprintf(link_path, sizeof(link_path), "%s/libnccl-profiler-x.so", dir);
	assert_int_equal(symlink(ts_test_lib(), link_path), 0);
	snprintf(chain, sizeof(chain), "TRAINSCOPE_NCCL_PROFILER_CHAIN=%s", link_path);
	run("v5", "traffic", (char *[]){ chain, NULL });
	assert_int_equal(ts_test_rmdir(dir), 0);
	assert_alone();
	assert_int_equal(count_lines("not chained: it is trainscope's own library"), 1);
}

/* A plugin that is not there: one line for two communicators, trainscope alone. */
static void test_chain_missing(void **state)
{
	(void)state;
	run("v5", "traffic",
	    (char *[]){ "TRAINSCOPE_NCCL_PROFILER_CHAIN=/nonexistent/libnccl-profiler-x.so", NULL });
	assert_alone();
	assert_int_equal(count_lines("trainscope: NCCL profiler plugin "
				     "/nonexistent/libnccl-profiler-x.so not chained: "),
			 1);
	assert_int_equal(count_lines("No such file"), 1);
}

/* A plugin with only ncclProfiler_v3: refused by name, trainscope alone. */
static void test_chain_v3_refused(void **state)
{
	char chain[4200];

	(void)state;
	chain_env(chain, sizeof(chain), "libnccl-profiler-tsd2v3.so");
	run("v5", "traffic", (char *[]){ chain, NULL });
	assert_alone();
	assert_int_equal(count_lines("not chained: its profiler API is ncclProfiler_v3"), 1);
	assert_int_equal(count_lines("unsupported version"), 1);
}

/* A plugin whose init fails: one line, trainscope alone on both communicators. */
static void test_chain_init_fails(void **state)
{
	char chain[4200];

	(void)state;
	chain_env(chain, sizeof(chain), "libnccl-profiler-tsd2.so");
	run("v5", "traffic", (char *[]){ chain, "TSD_PROF2_INIT_FAIL=1", NULL });
	assert_alone();
	assert_int_equal(val("prof2.inits"), 2);
	assert_int_equal(val("prof2.finalizes"), 0);
	assert_int_equal(count_lines("not chained: its init returned 3"), 1);
}

/* More of the stand-in's events in flight than the chain holds: the rest are counted
 * and said, nothing breaks. */
static void test_chain_pool_full(void **state)
{
	char chain[4200], line[160];
	uint64_t got, missed;
	const char *p;

	(void)state;
	chain_env(chain, sizeof(chain), "libnccl-profiler-tsd2.so");
	run("v5", "flood", (char *[]){ chain, NULL });
	got = val("prof2.start.0");
	assert_true(got > 0 && got < FLOOD);
	assert_int_equal(val("prof2.bad"), 0);
	for (p = o.text; (p = strstr(p, "trainscope: ")) && !isdigit((unsigned char)p[12]); p++)
		;
	assert_non_null(p);
	missed = strtoull(p + 12, NULL, 10);
	assert_int_equal(got + missed, FLOOD);
	snprintf(line, sizeof(line), "%llu NCCL profiler events not passed to the chained plugin",
		 (unsigned long long)missed);
	assert_int_equal(count_lines(line), 1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_v5),
		cmocka_unit_test(test_chain_short_name),
		cmocka_unit_test(test_chain_v4_plugin),
		cmocka_unit_test(test_chain_from_v4_nccl),
		cmocka_unit_test(test_chain_masks),
		cmocka_unit_test(test_chain_self),
		cmocka_unit_test(test_chain_missing),
		cmocka_unit_test(test_chain_v3_refused),
		cmocka_unit_test(test_chain_init_fails),
		cmocka_unit_test(test_chain_pool_full),
	};

	if (argc == 4 && !strcmp(argv[1], "drive"))
		return drive(argv[2], argv[3]);
	return cmocka_run_group_tests_name("NCCL profiler plugin chain", tests, NULL, NULL);
}
