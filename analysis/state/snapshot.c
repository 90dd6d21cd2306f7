// SPDX-License-Identifier: Apache-2.0
/* The analyzer's state snapshots over time: when a save is due (the interval, the
 * messages held, the pace), the messages acknowledged once a save holds their effect,
 * and the counts /metrics and /healthz read. What a save stores and a restore reads:
 * snapstate.c. */
#include "snapshot.h"
#include "ident.h"
#include "log.h"
#include "natskv.h"
#include "snapstate.h"
#include "tsclock.h"

#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unacknowledged messages that force a save before the interval: the consumer stops
 * delivering at MaxAckPending (65536), a fetch at most 512 past this. Not fewer: a save
 * reads the whole state (a 100,000-rank job's in about 0.2 s), and such a job sends
 * 100,000 messages a second. */
#define MAX_HELD 49152
/* The pace never holds messages past half the consumer's AckWait (120 s): they would
 * be delivered again. */
#define MAX_PACE_NS (60ull * 1000000000ull)

struct ts_snapshots {
	struct tsn_kv *kv;
	char key[128];
	uint64_t interval_ns, next_ns; /* next_ns: the next save is due */
	/* the last message ingested, not acknowledged yet, and its stream sequence: under
	 * the analyzer's lock (the consume loop holds it as it ingests, a save as it copies
	 * the state, so the two agree); nheld: the messages held, read without it */
	natsMsg *held;
	uint64_t held_seq;
	_Atomic uint64_t nheld;
	struct ts_snapstate *state;
	pthread_mutex_t lock;   /* stats, read by the HTTP thread */
	struct ts_snapshot_stats st;
};

int ts_snapshots_open(struct ts_snapshots **out, struct tsn *n, const char *bucket,
		      const char *key, int interval_s, char *why, size_t whylen)
{
	struct ts_snapshots *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	if ((err = tsn_kv_open(n, bucket, &s->kv, why, whylen))) {
		free(s);
		return err;
	}
	/* a key takes [-_.a-zA-Z0-9]; a durable name may hold more: mapped as subject tokens are */
	ts_subject_token(s->key, sizeof(s->key), key);
	if (ts_snapstate_new(&s->state, s->kv, s->key)) {
		tsn_kv_close(s->kv);
		free(s);
		return -ENOMEM;
	}
	s->interval_ns = (uint64_t)interval_s * 1000000000ull;
	pthread_mutex_init(&s->lock, NULL);
	ts_info("analyzer: state snapshots every %d s in key-value bucket %s, key %s", interval_s,
		bucket, s->key);
	*out = s;
	return 0;
}

void ts_snapshots_close(struct ts_snapshots *s)
{
	if (!s)
		return;
	natsMsg_Destroy(s->held);
	ts_snapstate_free(s->state);
	tsn_kv_close(s->kv);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int ts_snapshots_restore(struct ts_snapshots *s, struct ts_analyzer *a, pthread_mutex_t *lock,
			 uint64_t now_ns, uint64_t *seq)
{
	uint64_t t0 = ts_mono_ns();
	size_t read = 0;
	int njobs, err;

	/* /metrics walks the job table meanwhile: the restore grows it under lock (and
	 * frees what it made when the snapshot turns out unreadable) */
	err = ts_snapstate_restore(s->state, a, lock, now_ns, seq, &read);
	pthread_mutex_lock(lock);
	njobs = ts_analyzer_njobs(a);
	pthread_mutex_unlock(lock);

	if (err == -EBADMSG)
		ts_warn("analyzer: the state snapshot %s is damaged (parts missing or not "
			"matching): starting afresh", s->key);
	else if (err == -EPROTO)
		ts_warn("analyzer: the state snapshot %s was written by a build of another "
			"layout: starting afresh", s->key);
	else if (err && err != -ENOENT && err != -EAGAIN)
		ts_warn("analyzer: the state snapshot %s cannot be read (%s): starting afresh",
			s->key, strerror(-err));
	if (err)
		return err;
	s->next_ns = now_ns + s->interval_ns;
	pthread_mutex_lock(&s->lock); /* /metrics reads the stats from the start */
	s->st.restored_jobs = (uint64_t)njobs;
	s->st.dropped_jobs = (uint64_t)ts_snapstate_dropped(s->state);
	pthread_mutex_unlock(&s->lock);
	ts_info("analyzer: restored %d jobs from the state snapshot (%zu bytes read in %.1f s, "
		"%d left out) as of stream message %" PRIu64 "; replaying the stream after it",
		njobs, read, (double)(ts_mono_ns() - t0) / 1e9, ts_snapstate_dropped(s->state), *seq);
	return 0;
}

void ts_snapshots_hold(struct ts_snapshots *s, natsMsg *m, uint64_t seq, size_t count)
{
	natsMsg_Destroy(s->held);
	s->held = m;
	s->held_seq = seq;
	atomic_fetch_add(&s->nheld, count);
}

/* A save that failed gives back what it took (count messages up to m, at seq), unless
 * a later message is held, whose acknowledgement covers m's. */
static void give_back(struct ts_snapshots *s, pthread_mutex_t *lock, natsMsg *m, uint64_t seq,
		      uint64_t count)
{
	pthread_mutex_lock(lock);
	if (!s->held)
		s->held = m, s->held_seq = seq, m = NULL;
	atomic_fetch_add(&s->nheld, count);
	pthread_mutex_unlock(lock);
	natsMsg_Destroy(m);
}

static void failed(struct ts_snapshots *s, const char *why, uint64_t now_ns)
{
	bool first;

	pthread_mutex_lock(&s->lock);
	first = !s->st.failing_since_ns;
	s->st.failed++;
	if (first)
		s->st.failing_since_ns = now_ns;
	snprintf(s->st.why, sizeof(s->st.why), "%s", why);
	pthread_mutex_unlock(&s->lock);
	if (first) /* said once a spell; /healthz and the metrics tell the rest */
		ts_warn("analyzer: cannot store the state snapshot: %s (messages stay "
			"unacknowledged until it is stored)", why);
}

/* A spell of failures, if any, is over (what went through says so); under s->lock. */
static void spell_over(struct ts_snapshots *s, uint64_t now_ns, const char *what)
{
	if (s->st.failing_since_ns)
		ts_info("analyzer: %s again after %.0f s of failures", what,
			(double)(now_ns - s->st.failing_since_ns) / 1e9);
	s->st.failing_since_ns = 0;
}

static void stored(struct ts_snapshots *s, size_t bytes, uint64_t now_ns)
{
	pthread_mutex_lock(&s->lock);
	spell_over(s, now_ns, "state snapshot stored");
	s->st.saved++;
	s->st.bytes = bytes;
	pthread_mutex_unlock(&s->lock);
}

void ts_snapshots_note_write(struct ts_snapshots *s, const char *why, uint64_t now_ns)
{
	if (why) {
		failed(s, why, now_ns);
		return;
	}
	if (atomic_load(&s->nheld)) /* a snapshot waits: only its own store clears the failure */
		return;
	pthread_mutex_lock(&s->lock);
	spell_over(s, now_ns, "JetStream takes the analyzer's writes");
	pthread_mutex_unlock(&s->lock);
}

int ts_snapshots_tick(struct ts_snapshots *s, struct ts_analyzer *a, pthread_mutex_t *lock,
		      uint64_t now_ns, bool force)
{
	char why[256] = "";
	size_t written = 0;
	uint64_t held = atomic_load(&s->nheld), seq;
	natsMsg *m;
	int err;

	if (!held || (!force && held < MAX_HELD && now_ns < s->next_ns))
		return 0;
	s->next_ns = now_ns + s->interval_ns;
	/* the state and the message it is as of, taken together */
	pthread_mutex_lock(lock);
	m = s->held, seq = s->held_seq, s->held = NULL;
	held = atomic_exchange(&s->nheld, 0);
	err = ts_snapstate_walk(s->state, a);
	pthread_mutex_unlock(lock);
	if (!err)
		err = ts_snapstate_write(s->state, seq, &written, why, sizeof(why));
	if (err) {
		give_back(s, lock, m, seq, held);
		failed(s, err == -ENOMEM ? "out of memory" : why, now_ns);
		return -EAGAIN;
	}
	stored(s, written, now_ns);
	/* what changed is stored at most about 1 MB/s on average (the time a save took is
	 * no guide: a slow server makes it long too) */
	uint64_t pace = written * 1000ull < MAX_PACE_NS ? written * 1000ull : MAX_PACE_NS;
	if (now_ns + pace > s->next_ns)
		s->next_ns = now_ns + pace;
	natsMsg_Ack(m, NULL); /* and every message before it */
	natsMsg_Destroy(m);
	return 0;
}

void ts_snapshots_get_stats(struct ts_snapshots *s, struct ts_snapshot_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->st;
	pthread_mutex_unlock(&s->lock);
}
