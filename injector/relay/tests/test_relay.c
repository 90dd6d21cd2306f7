// SPDX-License-Identifier: Apache-2.0
/* The relay over a real ring folder: a ring it may not open (another uid's, mode 0600)
 * is said once, in one line naming the file, its owner and mode and the fix, and counted
 * once however many scans meet it; once readable it is followed. The relay runs in a
 * child, as uid 65534 when the test is root. No NATS server is needed for those.
 *
 * With a real nats-server, read back as the analyzer reads the stream: a relay killed and
 * started again goes on as the same producer (seqs after the last one reserved, the batch
 * it was filling a gap); a .relay file it cannot write falls back to a new producer, said
 * and counted once; two rings' backlogs go out interleaved, a few steps a rank at a time,
 * without the relay waiting in poll while records are left. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/tests/natsd.h"
#include "injector/relay/relay.h"
#include "log.h"
#include "natsw.h"
#include "proto/trainscope.pb-c.h"
#include "proto/wire.h"
#include "ring.h"
#include "trainscope.h"
#include "common/tests/testutil.h"

#define NOBODY 65534
#define OTHER_UID 12345

/* A new file in the folder: the relay rescans at its next poll. */
static void nudge(const char *dir, int i)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/nudge-%d", dir, i);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
}

static void scan_and_report(struct relay *r, const char *dir, int i, int out)
{
	struct relay_stats st;

	nudge(dir, i);
	relay_poll(r, 500);
	relay_get_stats(r, &st);
	if (write(out, &st, sizeof(st)) != (ssize_t)sizeof(st))
		_exit(3);
}

/* A test run as root checks the relay as a uid without privileges. */
static void become_nobody(void)
{
	if (geteuid() == 0 && (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)))
		_exit(2);
}

/* The relay's side: three scans, then (after the parent's go) a fourth. */
static void relay_child(const char *dir, int log_fd, int out, int go)
{
	struct relay_opts o = { .ring_dir = dir, .nats = { .url = "nats://127.0.0.1:1" } };
	struct relay *r;
	char c;

	become_nobody();
	dup2(log_fd, 2);
	if (relay_new(&r, &o))
		_exit(4);
	for (int i = 0; i < 3; i++) {
		nudge(dir, i);
		relay_poll(r, 500);
	}
	scan_and_report(r, dir, 3, out);
	if (read(go, &c, 1) != 1)
		_exit(5);
	scan_and_report(r, dir, 4, out);
	relay_free(r);
	_exit(0);
}

static int count_lines(const char *path, const char *needle, char *line, size_t n)
{
	char buf[4096];
	int count = 0;
	FILE *f = fopen(path, "r");

	while (f && fgets(buf, sizeof(buf), f))
		if (strstr(buf, needle) && ++count == 1)
			snprintf(line, n, "%s", buf);
	if (f)
		fclose(f);
	return count;
}

/* A ring as another uid's program leaves it in a plain folder: 0600, not the relay's. */
static void foreign_ring(const char *dir, char *path, size_t n)
{
	struct ts_ident id = { .rank = 3, .world_size = 4 };
	struct ts_ring *ring;
	int lock_fd;

	assert_int_equal(ts_ring_create(dir, 64, &id, &ring, &lock_fd, path, n), 0);
	ts_ring_unmap(ring);
	close(lock_fd);
	if (geteuid() == 0)
		assert_int_equal(chown(path, OTHER_UID, OTHER_UID), 0);
	else
		assert_int_equal(chmod(path, 0), 0); /* its owner's own relay is refused too */
}

static void test_unreadable_ring_said_once(void **state)
{
	char dir[] = "/tmp/ts-relay-XXXXXX", logp[64], ring[4096], line[4096], want[64];
	int res[2], go[2], log_fd, status;
	struct relay_stats st;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0777), 0);
	foreign_ring(dir, ring, sizeof(ring));
	snprintf(logp, sizeof(logp), "%s.log", dir);
	log_fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(log_fd >= 0);
	assert_int_equal(pipe(res), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	if (pid == 0)
		relay_child(dir, log_fd, res[1], go[0]);
	close(log_fd);
	close(res[1]);
	close(go[0]);

	assert_int_equal(read(res[0], &st, sizeof(st)), sizeof(st));
	assert_int_equal(st.unreadable_rings, 1); /* four scans, one count */
	assert_int_equal(st.bad_rings, 0);
	assert_int_equal(st.producers_seen, 0);
	/* made readable (here by its owner; in a pod by the setgid folder): followed */
	assert_int_equal(chmod(ring, 0666), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read(res[0], &st, sizeof(st)), sizeof(st));
	assert_int_equal(st.producers_seen, 1);
	assert_int_equal(st.unreadable_rings, 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);

	assert_int_equal(count_lines(logp, "cannot open ring", line, sizeof(line)), 1);
	print_message("%s", line);
	assert_non_null(strstr(line, ring));
	snprintf(want, sizeof(want), "owner uid %u", geteuid() == 0 ? OTHER_UID : geteuid());
	assert_non_null(strstr(line, want));
	assert_non_null(strstr(line, geteuid() == 0 ? "mode 0600" : "mode 0000"));
	assert_non_null(strstr(line, "fix: give the ring folder the relay's group and the setgid"));
	close(res[0]);
	close(go[1]);
	unlink(logp);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A training process's ring, its lock held (the producer lives) until lock_fd closes. */
static struct ts_ring *new_ring(const char *dir, int rank, int world, int *lock_fd,
				char *path, size_t n)
{
	struct ts_ident id = { .ns = "ns", .job = "job", .node = "node", .rank = rank,
			       .world_size = world, .pid = 4000 + rank, .groups = "pp2-dp2" };
	struct ts_ring *ring;

	assert_int_equal(ts_ring_create(dir, 4096, &id, &ring, lock_fd, path, n), 0);
	return ring;
}

/* A record whose first word is first: the step (STEP_BEGIN, STEP_END), the bytes (COLL). */
static void push(struct ts_ring *ring, uint16_t type, uint16_t kind, uint64_t first)
{
	static uint64_t t = 1000000000;
	struct ts_rec rec = { .type = type, .kind = kind, .t_ns = t += 1000, .dur_ns = 400,
			      .raw = { first } };

	assert_int_equal(ts_ring_push(ring, &rec), 0);
}

#define RECS_PER_STEP 5

/* Steps [from, to) as a process without device hooks writes them. */
static void push_steps(struct ts_ring *ring, uint64_t from, uint64_t to)
{
	for (uint64_t k = from; k < to; k++) {
		push(ring, TS_REC_STEP_BEGIN, 0, k);
		push(ring, TS_REC_REGION, TRAINSCOPE_REGION_DATALOADER, 0);
		push(ring, TS_REC_REGION, TRAINSCOPE_REGION_COMPUTE, 0);
		push(ring, TS_REC_COLL, TRAINSCOPE_COLL_ALL_REDUCE, 1 << 20);
		push(ring, TS_REC_STEP_END, 0, k);
	}
}

static bool drained(struct ts_ring *ring)
{
	return atomic_load(&ring->tail) == atomic_load(&ring->head);
}

/* One batch of the stream, as the analyzer reads it: a message, or one of a Bundle's. */
struct msg {
	char kind[8]; /* rank (alone or in a Bundle), ctl, hang */
	int rank;
	uint64_t producer_id, seq;
	int nsteps;
	int64_t first, last; /* steps; -1 when none */
	char groups[256];    /* its Hello's groups, each followed by a space */
};

struct stream {
	struct natsd d;
	struct tsn *n;
	struct tsn_sub *sub;
	struct msg m[1024];
	int count;
	int bundles; /* messages that were Bundles */
};

static void stream_open(struct stream *s)
{
	struct tsn_opts o = { 0 };
	double deadline = now_s() + 20;

	assert_int_equal(natsd_start(&s->d, 0), 0);
	o.url = s->d.url;
	assert_int_equal(tsn_open(&s->n, &o), 0);
	while (tsn_subscribe(s->n, "relaytest", "ts.v1.>", &s->sub) && now_s() < deadline)
		nats_Sleep(50);
	assert_non_null(s->sub);
}

static void stream_close(struct stream *s)
{
	if (s->sub)
		tsn_unsubscribe(s->sub);
	if (s->n)
		tsn_close(s->n);
	natsd_cleanup(&s->d);
}

/* A nats-server and a ring folder, stopped and removed by the teardown even when the test
 * failed. */
struct fixture {
	struct stream s;
	char dir[32];
};

static int fixture_up(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	snprintf(f->dir, sizeof(f->dir), "/tmp/ts-relay-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	stream_open(&f->s);
	return 0;
}

static int fixture_down(void **state)
{
	struct fixture *f = *state;

	stream_close(&f->s);
	ts_test_rmdir(f->dir);
	free(f);
	return 0;
}

/* Where a message's batches go, and its kind. */
struct arrival {
	struct stream *s;
	char kind[8];
};

/* One batch (ts_batch_fn). */
static void add_batch(void *ctx, const uint8_t *data, size_t len)
{
	struct arrival *a = ctx;
	struct stream *s = a->s;
	Trainscope__V1__Batch *b = trainscope__v1__batch__unpack(NULL, len, data);
	struct msg *m = &s->m[s->count++];

	assert_true(s->count <= (int)(sizeof(s->m) / sizeof(s->m[0])));
	assert_non_null(b);
	snprintf(m->kind, sizeof(m->kind), "%s", a->kind);
	m->rank = b->id->rank;
	m->producer_id = b->producer_id;
	m->seq = b->seq;
	m->nsteps = 0;
	m->first = m->last = -1;
	m->groups[0] = 0;
	for (size_t i = 0; i < b->n_records; i++) {
		const Trainscope__V1__Hello *h = b->records[i]->hello;
		for (size_t g = 0; b->records[i]->kind_case == TRAINSCOPE__V1__RECORD__KIND_HELLO &&
				   g < h->n_groups; g++) {
			size_t used = strlen(m->groups);
			snprintf(m->groups + used, sizeof(m->groups) - used, "%s ", h->groups[g]);
		}
		if (b->records[i]->kind_case != TRAINSCOPE__V1__RECORD__KIND_STEP)
			continue;
		int64_t step = (int64_t)b->records[i]->step->step;
		assert_true(step > m->last); /* in order within a batch */
		if (m->first < 0)
			m->first = step;
		m->last = step;
		m->nsteps++;
	}
	trainscope__v1__batch__free_unpacked(b, NULL);
}

/* ts.v1.<ns>.<job>.<kind>.<leaf>: a Bundle's batches are the ranks'. */
static void add_msg(struct stream *s, const char *subject, const void *data, size_t len)
{
	struct arrival a = { .s = s };

	assert_int_equal(sscanf(subject, "ts.v1.ns.job.%7[a-z].", a.kind), 1);
	if (!strcmp(a.kind, "pod")) {
		s->bundles++;
		strcpy(a.kind, "rank");
	}
	assert_true(ts_wire_each(subject, data, len, add_batch, &a) > 0);
}

static void stream_fetch(struct stream *s, int timeout_ms)
{
	natsMsgList l;

	if (tsn_fetch(s->sub, &l, 256, timeout_ms) <= 0)
		return;
	for (int i = 0; i < l.Count; i++) {
		add_msg(s, natsMsg_GetSubject(l.Msgs[i]), natsMsg_GetData(l.Msgs[i]),
			(size_t)natsMsg_GetDataLength(l.Msgs[i]));
		natsMsg_Ack(l.Msgs[i], NULL);
	}
	natsMsgList_Destroy(&l);
}

/* The highest step of rank among messages [from, count), -1 when none. */
static int64_t last_step(const struct stream *s, int from, int rank)
{
	int64_t last = -1;

	for (int i = from; i < s->count; i++)
		if (!strcmp(s->m[i].kind, "rank") && s->m[i].rank == rank && s->m[i].last > last)
			last = s->m[i].last;
	return last;
}

static int count_kind(const struct stream *s, int from, const char *kind)
{
	int n = 0;

	for (int i = from; i < s->count; i++)
		n += !strcmp(s->m[i].kind, kind);
	return n;
}

/* Runs the relay until the stream holds rank's step and, since message from, a ctl
 * announcement (so nothing of this relay is left in flight), or fails after 20 s. */
static void run_until(struct relay *r, struct stream *s, int from, int rank, int64_t step)
{
	double deadline = now_s() + 20;

	while ((last_step(s, from, rank) < step || !count_kind(s, from, "ctl")) &&
	       now_s() < deadline) {
		relay_poll(r, 10);
		stream_fetch(s, 20);
	}
	assert_true(last_step(s, from, rank) >= step);
	assert_true(count_kind(s, from, "ctl") > 0);
}

/* Runs the relay until it has taken every record of the ring. */
static void run_until_drained(struct relay *r, struct ts_ring *ring)
{
	double deadline = now_s() + 20;

	while (!drained(ring) && now_s() < deadline)
		relay_poll(r, 10);
	assert_true(drained(ring));
}

/* The seqs of kind's messages in [from, to): contiguous, from the first to the last. */
static void seq_span(const struct stream *s, int from, int to, const char *kind,
		     uint64_t producer_id, uint64_t *first, uint64_t *last)
{
	*first = *last = 0;
	for (int i = from; i < to; i++) {
		const struct msg *m = &s->m[i];
		if (strcmp(m->kind, kind))
			continue;
		assert_int_equal(m->producer_id, producer_id);
		if (*first)
			assert_int_equal(m->seq, *last + 1);
		else
			*first = m->seq;
		*last = m->seq;
	}
	assert_true(*first > 0);
}

static int count_files(const char *dir, const char *suffix)
{
	char path[4096];

	return ts_test_find(dir, suffix, path, sizeof(path));
}

static void test_restart_keeps_producer(void **state)
{
	struct fixture *fx = *state;
	struct stream *s = &fx->s;
	const char *dir = fx->dir;
	struct relay_opts o = { .ring_dir = dir, .nats = { .url = s->d.url }, .flush_ms = 1 };
	uint64_t pid = 0, f[3], l[3], cf[3], cl[3];
	struct relay_stats st;
	struct ts_ring *ring;
	struct relay *r;
	char path[4096];
	int lock_fd, end[3];

	ring = new_ring(dir, 0, 1, &lock_fd, path, sizeof(path));

	/* A: steps 0-9 stored; then the first records of step 10 taken; then killed */
	push_steps(ring, 0, 10);
	assert_int_equal(relay_new(&r, &o), 0);
	run_until(r, s, 0, 0, 9);
	assert_int_equal(count_files(dir, ".relay"), 1);
	push(ring, TS_REC_STEP_BEGIN, 0, 10);
	push(ring, TS_REC_REGION, TRAINSCOPE_REGION_COMPUTE, 0);
	run_until_drained(r, ring);
	relay_free(r); /* no relay_finish: as killed */
	end[0] = s->count;
	/* B: the rest of step 10, steps 11-14, then a record that goes into no batch (the
	 * shim's note that a process group was made); then killed with nothing half-taken */
	push(ring, TS_REC_STEP_END, 0, 10);
	push_steps(ring, 11, 15);
	assert_int_equal(relay_new(&r, &o), 0);
	run_until(r, s, end[0], 0, 14);
	push(ring, TS_REC_GROUPS, 0, 0);
	run_until_drained(r, ring);
	relay_poll(r, 10); /* a round with the ring empty: the seq it reserved goes back */
	relay_free(r);
	end[1] = s->count;
	/* C: steps 15-16, then the process exits: the ring and its .relay go */
	push_steps(ring, 15, 17);
	assert_int_equal(relay_new(&r, &o), 0);
	run_until(r, s, end[1], 0, 16);
	atomic_store(&ring->closed, 1);
	close(lock_fd);
	for (double deadline = now_s() + 20; now_s() < deadline;) {
		relay_get_stats(r, &st);
		if (st.producers_done)
			break;
		relay_poll(r, 10);
	}
	assert_int_equal(st.producers_done, 1);
	relay_free(r);
	end[2] = s->count;
	ts_ring_unmap(ring);

	for (int i = s->count - 1; i >= 0; i--)
		if (!strcmp(s->m[i].kind, "rank"))
			pid = s->m[i].producer_id; /* the first rank message's */
	for (int k = 0; k < 3; k++) {
		seq_span(s, k ? end[k - 1] : 0, end[k], "rank", pid, &f[k], &l[k]);
		seq_span(s, k ? end[k - 1] : 0, end[k], "ctl", pid ^ 1, &cf[k], &cl[k]);
		print_message("relay %c: producer %016llx rank seq %llu-%llu, ctl seq %llu-%llu\n",
			      'A' + k, (unsigned long long)pid, (unsigned long long)f[k],
			      (unsigned long long)l[k], (unsigned long long)cf[k],
			      (unsigned long long)cl[k]);
	}
	assert_int_equal(f[0], 1);
	assert_int_equal(f[1], l[0] + 2); /* the batch A was filling: one lost, counted */
	assert_int_equal(f[2], l[1] + 1); /* B had nothing half-taken: no gap (a relay killed
					  * idle, the last record in no batch, once left one) */
	assert_int_equal(cf[0], 1);
	assert_int_equal(cf[1], cl[0] + 1);
	assert_int_equal(cf[2], cl[1] + 1);
	for (int64_t k = 0; k <= 16; k++) { /* every step once, 10 from what B took */
		int n = 0;
		for (int i = 0; i < s->count; i++)
			n += !strcmp(s->m[i].kind, "rank") && s->m[i].first <= k && k <= s->m[i].last;
		assert_int_equal(n, 1);
	}
	assert_int_equal(count_files(dir, ".ring"), 0);
	assert_int_equal(count_files(dir, ".relay"), 0);
}

/* The relay's side of a folder where it cannot keep identities: a few rounds (rescans
 * nudged where the test may write), then its stats and whether /metrics says it. */
static void unsaved_child(const char *dir, int log_fd, int out)
{
	struct relay_opts o = { .ring_dir = dir, .nats = { .url = "nats://127.0.0.1:1" } };
	struct ts_buf b = { 0 };
	struct relay_stats st;
	struct relay *r;
	char said;

	become_nobody();
	dup2(log_fd, 2);
	if (relay_new(&r, &o))
		_exit(4);
	for (int i = 0; i < 4; i++) {
		nudge(dir, i);
		relay_poll(r, 10);
	}
	relay_get_stats(r, &st);
	relay_render_metrics(r, &b);
	said = b.data && strstr(b.data, "trainscope_relay_identity_unsaved_total 1\n") ? 1 : 0;
	if (write(out, &st, sizeof(st)) != (ssize_t)sizeof(st) || write(out, &said, 1) != 1)
		_exit(3);
	/* no relay_free: nats.c's library threads, which deliver its closed callback, were
	 * started by earlier tests in the parent and are not in this forked child, so the
	 * close would wait its whole 5 s for it (_exit frees the rest) */
	ts_buf_free(&b);
	_exit(0);
}

/* The child of check_unsaved starts nats.c's threads after a fork of this process, which
 * earlier tests left with threads: ThreadSanitizer cannot follow that ("dup thread with
 * used id") and kills the child. The relay's threads are checked where it runs as a
 * program (e2e/test-faults.sh under scripts/tsan-run.sh). */
static void skip_under_tsan(void)
{
#ifdef __SANITIZE_THREAD__
	print_message("under ThreadSanitizer: skipped (threads started after a fork)\n");
	skip();
#endif
}

/* Runs unsaved_child on dir, whose ring (8 steps) it may read and write; checks that the
 * ring is followed as before and the fallback is said and counted once. */
static void check_unsaved(const char *dir, const char *ring)
{
	char logp[64], line[4096];
	struct relay_stats st;
	int res[2], log_fd, status;
	char said;
	pid_t pid;

	snprintf(logp, sizeof(logp), "%s.log", dir);
	log_fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(log_fd >= 0);
	assert_int_equal(pipe(res), 0);
	pid = fork();
	if (pid == 0)
		unsaved_child(dir, log_fd, res[1]);
	close(log_fd);
	close(res[1]);
	assert_int_equal(read(res[0], &st, sizeof(st)), sizeof(st));
	assert_int_equal(read(res[0], &said, 1), 1);
	close(res[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);

	assert_int_equal(st.producers_seen, 1);
	assert_int_equal(st.identity_unsaved, 1);
	assert_int_equal(st.records, 8 * RECS_PER_STEP); /* drained as before */
	assert_int_equal(st.steps, 8);
	assert_true(said);
	assert_int_equal(count_lines(logp, "cannot keep the producer id", line, sizeof(line)), 1);
	print_message("%s", line);
	assert_non_null(strstr(line, ring));
	assert_non_null(strstr(line, "Permission denied"));
	unlink(logp);
}

static void test_unsaved_read_only_folder(void **state)
{
	char dir[] = "/tmp/ts-relay-XXXXXX", path[4096];
	struct ts_ring *ring;
	int lock_fd;

	(void)state;
	skip_under_tsan();
	assert_non_null(mkdtemp(dir));
	ring = new_ring(dir, 0, 1, &lock_fd, path, sizeof(path));
	push_steps(ring, 0, 8);
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(chmod(dir, 0555), 0);
	check_unsaved(dir, path);
	assert_int_equal(count_files(dir, ".relay"), 0);
	assert_true(drained(ring));
	ts_ring_unmap(ring);
	close(lock_fd);
	assert_int_equal(chmod(dir, 0700), 0);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

/* A .relay file not the relay's to write (here read-only, its owner root or the test's
 * uid): the relay neither follows nor changes it. */
static void test_unsaved_read_only_side_file(void **state)
{
	char dir[] = "/tmp/ts-relay-XXXXXX", path[4096], side[4200];
	struct ts_ring *ring;
	struct stat sb;
	int lock_fd, fd;

	(void)state;
	skip_under_tsan();
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0777), 0);
	ring = new_ring(dir, 0, 1, &lock_fd, path, sizeof(path));
	push_steps(ring, 0, 8);
	assert_int_equal(chmod(path, 0666), 0);
	snprintf(side, sizeof(side), "%.*s.relay", (int)(strlen(path) - strlen(".ring")), path);
	fd = open(side, O_WRONLY | O_CREAT | O_EXCL, 0444);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not the relay's", 15), 15);
	close(fd);
	check_unsaved(dir, path);
	assert_int_equal(stat(side, &sb), 0);
	assert_int_equal(sb.st_size, 15);
	assert_true(drained(ring));
	ts_ring_unmap(ring);
	close(lock_fd);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

#define BACKLOG_STEPS 300
#define MAX_SKEW 16 /* the analyzer's lag_steps: a rank further ahead makes the other late */

/* Two ranks' backlogs, waiting in their rings when the relay starts. */
/* The rank's layout goes with its first Hello; a communicator it makes later brings a
 * new Hello with it, for the analyzer's hang culprits. */
static void test_hello_groups(void **state)
{
	struct fixture *fx = *state;
	struct stream *s = &fx->s;
	struct relay_opts o = { .ring_dir = fx->dir, .nats = { .url = s->d.url } };
	struct ts_ring *ring;
	struct ts_rec comm = { .type = TS_REC_COMM,
			       .comm = { .hash = 0xabc, .members = 2, .rank = 1 } };
	int lock_fd, hello = 0, with_comm = 0;
	struct relay *r;
	char path[4096];

	(void)state;
	ring = new_ring(fx->dir, 1, 2, &lock_fd, path, sizeof(path));
	push_steps(ring, 0, 4);
	assert_int_equal(relay_new(&r, &o), 0);
	run_until(r, s, 0, 1, 3);
	assert_int_equal(ts_ring_push(ring, &comm), 0);
	push_steps(ring, 4, 8);
	run_until(r, s, 0, 1, 7);
	relay_free(r);
	for (int i = 0; i < s->count; i++) {
		if (strcmp(s->m[i].kind, "rank") || !s->m[i].groups[0])
			continue;
		hello++;
		assert_non_null(strstr(s->m[i].groups, "layout:pp2-dp2 "));
		with_comm += strstr(s->m[i].groups, "nccl:0000000000000abc:2:1 ") != NULL;
	}
	assert_int_equal(hello, 2);
	assert_int_equal(with_comm, 1);
	close(lock_fd);
	ts_ring_unmap(ring);
}

/* ... on either wire: a round's batches of both ranks in one Bundle, or each alone. */
static void backlog_interleaves_ranks(void **state, enum ts_wire wire)
{
	struct fixture *fx = *state;
	struct stream *s = &fx->s;
	/* flush_ms 100, max_batch_steps 256: the relay's defaults */
	struct relay_opts o = { .ring_dir = fx->dir, .nats = { .url = s->d.url }, .wire = wire };
	struct ts_ring *ring[2];
	int lock_fd[2], polls = 0, skew = 0;
	int64_t max[2] = { -1, -1 };
	uint64_t seq[2] = { 0, 0 };
	struct relay *r;
	char path[4096];
	double t0, took;

	for (int i = 0; i < 2; i++) {
		ring[i] = new_ring(fx->dir, i, 2, &lock_fd[i], path, sizeof(path));
		push_steps(ring[i], 0, BACKLOG_STEPS);
	}
	assert_int_equal(relay_new(&r, &o), 0);
	/* each round takes a few steps a ring and must not wait while any are left: one wait
	 * of 2 s would show */
	t0 = now_s();
	while (!(drained(ring[0]) && drained(ring[1])) && polls < 10000) {
		relay_poll(r, 2000);
		polls++;
	}
	took = now_s() - t0;
	print_message("backlogs of %d steps drained in %d rounds, %.3f s\n", BACKLOG_STEPS, polls,
		      took);
	assert_true(drained(ring[0]) && drained(ring[1]));
	assert_true(polls > 2 * BACKLOG_STEPS / 256); /* not one ring's backlog a round */
	assert_true(took < 1.5);
	for (double deadline = now_s() + 20; now_s() < deadline &&
	     (last_step(s, 0, 0) < BACKLOG_STEPS - 1 || last_step(s, 0, 1) < BACKLOG_STEPS - 1);) {
		relay_poll(r, 10);
		stream_fetch(s, 20);
	}
	relay_free(r);
	/* in stream order: each rank's steps and seqs in order, the ranks abreast */
	for (int i = 0; i < s->count; i++) {
		const struct msg *m = &s->m[i];
		if (strcmp(m->kind, "rank") || m->first < 0)
			continue;
		assert_true(m->rank == 0 || m->rank == 1);
		assert_int_equal(m->first, max[m->rank] + 1);
		assert_true(m->seq > seq[m->rank]);
		seq[m->rank] = m->seq;
		max[m->rank] = m->last;
		int d = (int)(max[0] > max[1] ? max[0] - max[1] : max[1] - max[0]);
		skew = d > skew ? d : skew;
	}
	print_message("%d batches in %d bundles, the ranks at most %d steps apart\n", s->count,
		      s->bundles, skew);
	if (wire == TS_WIRE_POD) /* most rounds carry both ranks' batches */
		assert_true(s->bundles > 0 && s->bundles < count_kind(s, 0, "rank") * 3 / 4);
	else
		assert_int_equal(s->bundles, 0);
	assert_int_equal(max[0], BACKLOG_STEPS - 1);
	assert_int_equal(max[1], BACKLOG_STEPS - 1);
	assert_true(skew <= MAX_SKEW);
	for (int i = 0; i < 2; i++) {
		ts_ring_unmap(ring[i]);
		close(lock_fd[i]);
	}
}

static void test_backlog_pod_wire(void **state)
{
	backlog_interleaves_ranks(state, TS_WIRE_POD);
}

static void test_backlog_rank_wire(void **state)
{
	backlog_interleaves_ranks(state, TS_WIRE_RANK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unreadable_ring_said_once),
		cmocka_unit_test_setup_teardown(test_restart_keeps_producer, fixture_up, fixture_down),
		cmocka_unit_test(test_unsaved_read_only_folder),
		cmocka_unit_test(test_unsaved_read_only_side_file),
		cmocka_unit_test_setup_teardown(test_hello_groups, fixture_up, fixture_down),
		cmocka_unit_test_setup_teardown(test_backlog_pod_wire, fixture_up, fixture_down),
		cmocka_unit_test_setup_teardown(test_backlog_rank_wire, fixture_up, fixture_down),
	};
	return cmocka_run_group_tests_name("relay", tests, NULL, NULL);
}
