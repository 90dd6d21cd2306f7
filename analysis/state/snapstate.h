// SPDX-License-Identifier: Apache-2.0
/* The analyzer's state stored in parts, each saved as what changed since its last save.
 * The parts: the producers' table, and each job. Every part has a base (its whole image)
 * and the deltas since (snapdiff.h), each an object of its own in the key-value bucket,
 * <key>.o.<gen>, gen never used twice. A save walks every part under the core lock and
 * stores, outside it, one object for each part that changed: a delta, or a new base once
 * its deltas would add up to more than half of it (each counted as 4 KB at least), or
 * number 128; a part that did not change stores nothing. The manifest, <key>.m (a blob: written whole or not at
 * all), names the stream message the state is as of and every part's base and deltas;
 * it is written last, so a save that fails midway leaves the one before whole. Objects
 * no manifest names any more are purged after it. A single-blob snapshot of earlier
 * builds (<key>) is restored when there is no manifest, and purged once one is stored. */
#ifndef TS_SNAPSTATE_H
#define TS_SNAPSTATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "analysis/ingest/analyzer.h"
#include "natskv.h"

struct ts_snapstate;

/* Over kv (not owned), under key (a key's token: the analyzer's). 0 or -ENOMEM. */
int ts_snapstate_new(struct ts_snapstate **out, struct tsn_kv *kv, const char *key);
void ts_snapstate_free(struct ts_snapstate *st);
/* Stores what changed since the last save, the analyzer read under lock, as of stream
 * message seq. Returns 0 with *written (the bytes stored), -ENOMEM, or -EAGAIN (why: the
 * server's words); a save that failed is made good by the next. */
int ts_snapstate_save(struct ts_snapstate *st, struct ts_analyzer *a, pthread_mutex_t *lock,
		      uint64_t seq, size_t *written, char *why, size_t whylen);
/* The save in its two halves, for a caller that reads something else with the analyzer
 * under the same lock (the stream message the state is as of): the analyzer's parts
 * copied (the caller holds the lock readers take; 0 or -ENOMEM), then stored (no lock;
 * as ts_snapstate_save returns). */
int ts_snapstate_walk(struct ts_snapstate *st, struct ts_analyzer *a);
int ts_snapstate_write(struct ts_snapstate *st, uint64_t seq, size_t *written, char *why,
		       size_t whylen);
/* Restores the last save into an empty analyzer, and purges what no save names (a save
 * cut short by a crash). The store is read first; the analyzer is filled under lock (which
 * /metrics takes), so a slow store keeps no reader of the analyzer waiting. A job whose
 * part is damaged, or that will not restore, is left out alone (ts_snapstate_dropped),
 * to start again from the stream. Returns 0 with *seq (the stream message to replay
 * after) and *read (the bytes read), -ENOENT (none), -EPROTO (of another build's
 * layout), -EBADMSG (the manifest, the producers' part or a single-blob snapshot
 * damaged), -ENOMEM or -EAGAIN; the analyzer is left empty on an error. */
int ts_snapstate_restore(struct ts_snapstate *st, struct ts_analyzer *a, pthread_mutex_t *lock,
			 uint64_t now_ns, uint64_t *seq, size_t *read);
/* Jobs the last restore left out. */
int ts_snapstate_dropped(const struct ts_snapstate *st);

#endif
