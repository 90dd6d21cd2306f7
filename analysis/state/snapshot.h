// SPDX-License-Identifier: Apache-2.0
/* The analyzer's state kept in a JetStream key-value bucket: every interval it is saved
 * as of the last message ingested, and only then are the messages up to it acknowledged,
 * so a restarted analyzer restores it and replays the stream after it: the same verdicts
 * and counts as one that never stopped. */
#ifndef TS_SNAPSHOT_H
#define TS_SNAPSHOT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "analysis/ingest/analyzer.h"
#include "natsw.h"

struct ts_snapshot_stats {
	uint64_t saved, failed, bytes, restored_jobs;
	uint64_t dropped_jobs;     /* jobs the restore left out: their part damaged */
	uint64_t failing_since_ns; /* 0 while the last save succeeded */
	char why[256];             /* the server's words for the last failure */
};

struct ts_snapshots;

/* bucket: the key-value bucket; key: this analyzer's (its durable consumer's name).
 * Returns 0, -EAGAIN (JetStream not reachable or refusing: why says the server's words)
 * or -ENOMEM. */
int ts_snapshots_open(struct ts_snapshots **out, struct tsn *n, const char *bucket,
		      const char *key, int interval_s, char *why, size_t whylen);
void ts_snapshots_close(struct ts_snapshots *s);
/* Restores the last snapshot into an empty analyzer, written under lock (the one its
 * readers take). Returns 0 with *seq (the stream message to replay after), -ENOENT
 * (none: a first start), -EPROTO or -EBADMSG (one this build cannot read: said), or
 * -EAGAIN. */
int ts_snapshots_restore(struct ts_snapshots *s, struct ts_analyzer *a, pthread_mutex_t *lock,
			 uint64_t now_ns, uint64_t *seq);
/* The last of count messages ingested, up to stream sequence seq: acknowledged (with
 * every one before it) once a snapshot holds their effect. Takes m. Called under the
 * lock ts_snapshots_tick is given, in the same hold as the ingest: a save then reads the
 * state and the message it is as of together, from another thread. */
void ts_snapshots_hold(struct ts_snapshots *s, natsMsg *m, uint64_t seq, size_t count);
/* Another write to the state's bucket (the analyzer's lease) failed (why) or went through
 * (NULL). With nothing held to store it alone says whether JetStream takes the analyzer's
 * writes: a job stalled by a full store sends nothing new, so no snapshot would fail. */
void ts_snapshots_note_write(struct ts_snapshots *s, const char *why, uint64_t now_ns);
/* Saves when the interval has passed (or force) and something was ingested since;
 * the analyzer is read under lock, and stored with the lock let go. One thread saves.
 * Returns 0 or -EAGAIN (counted; retried next time). */
int ts_snapshots_tick(struct ts_snapshots *s, struct ts_analyzer *a, pthread_mutex_t *lock,
		      uint64_t now_ns, bool force);
void ts_snapshots_get_stats(struct ts_snapshots *s, struct ts_snapshot_stats *out);

#endif
