// SPDX-License-Identifier: Apache-2.0
/* The analyzer's keeper: the writes that wait on the NATS server (state snapshots, the
 * lease on the durable, node health's rounds) on a thread of their own, so that the
 * consume loop ingests and ticks while the server is slow to answer them. Each reads the
 * analyzer under core_lock and does its I/O with the lock let go; the lease is the
 * keeper's alone once the consume loop runs (start() takes it before). */
#include "main_impl.h"
#include "log.h"
#include "tsclock.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Node health's round when due, in the bucket that holds the lease (start() took it
 * before the keeper runs this). */
static void node_health(struct cli *c, uint64_t now)
{
	if (!c->nodes || !ts_node_sync_due(c->nodes, now))
		return;
	/* reports note findings and /metrics reads them; the bucket's I/O waits on JetStream */
	pthread_mutex_lock(&c->core_lock);
	struct ts_node_round *r = ts_node_sync_begin(c->nodes, c->lease_kv != NULL, now);
	pthread_mutex_unlock(&c->core_lock);
	ts_node_sync_io(r, c->lease_kv);
	pthread_mutex_lock(&c->core_lock);
	ts_node_sync_end(c->nodes, r, c->k8s, now);
	pthread_mutex_unlock(&c->core_lock);
}

/* Saves when due; while the store refuses, every report says so. */
static void snapshot(struct cli *c, struct ts_analyzer *a, uint64_t now)
{
	struct ts_snapshot_stats ss;
	char why[360] = "";

	ts_snapshots_tick(c->snap, a, &c->core_lock, now, false);
	ts_snapshots_get_stats(c->snap, &ss);
	if (ss.failing_since_ns)
		snprintf(why, sizeof(why), "JetStream refuses the analyzer's writes (state snapshots, lease): %s",
			 ss.why);
	pthread_mutex_lock(&c->core_lock);
	ts_analyzer_set_trouble(a, why[0] ? why : NULL);
	pthread_mutex_unlock(&c->core_lock);
}

/* Takes or renews the lease on the durable. 0 (held), 1 (another analyzer holds it:
 * standby, said once a spell) or -EAGAIN. Without the bucket (no snapshots) there is
 * no lease: 0. */
int analyzer_lease(struct cli *c, struct tsn *n)
{
	char holder[256] = "", why[256] = "";
	double age = 0;
	int rc;

	if (c->snapshot_s <= 0)
		return 0;
	if (!c->lease_kv && tsn_kv_open(n, c->snapshot_bucket, &c->lease_kv, why, sizeof(why)))
		return -EAGAIN;
	rc = tsn_kv_lease(c->lease_kv, c->durable, c->owner, LEASE_S, holder, sizeof(holder),
			  &age, why, sizeof(why));
	if (rc == 1 && analyzer_holder_gone(c, holder)) { /* no need to wait out its lease */
		ts_info("analyzer: the holder of durable %s's lease is gone (%s): taking over at "
			"once", c->durable, holder);
		rc = tsn_kv_lease(c->lease_kv, c->durable, c->owner, 0, holder, sizeof(holder),
				  &age, why, sizeof(why));
	}
	if (c->snap && rc <= 0)
		ts_snapshots_note_write(c->snap, rc ? why : NULL, ts_real_ns());
	if (rc == 1 && !atomic_load(&c->standby)) {
		pthread_mutex_lock(&c->standby_lock);
		snprintf(c->standby_why, sizeof(c->standby_why), "standby: durable consumer %s is "
			 "held by analyzer %s (its lease renewed %.0f s ago): two analyzers on one "
			 "durable would each get part of its messages and judge no job whole; this "
			 "one waits, and takes over when that one stops (give each analyzer its own "
			 "--partition of --partitions, or its own --durable)", c->durable, holder, age);
		pthread_mutex_unlock(&c->standby_lock);
		ts_warn("analyzer: %s", c->standby_why);
		atomic_store(&c->standby, true);
	}
	if (rc == 0) {
		if (atomic_load(&c->standby))
			ts_info("analyzer: the lease on durable %s is ours: taking over", c->durable);
		atomic_store(&c->standby, false);
		atomic_store(&c->lease_at_ns, ts_real_ns());
	}
	return rc;
}

/* A turn every KEEPER_TURN_MS: the lease first (a standby waits on its age), then a
 * save when due, then node health. */
#define KEEPER_TURN_MS 100

static void *keeper(void *arg)
{
	struct cli *c = arg;
	struct tsn *n = atomic_load(&c->nats_conn);
	const struct timespec turn = { 0, KEEPER_TURN_MS * 1000000L };

	while (!atomic_load(&c->keeper_stop)) {
		uint64_t now = ts_real_ns();
		if (c->lease_kv && now - atomic_load(&c->lease_at_ns) > (uint64_t)(LEASE_S / 3 * 1e9) &&
		    analyzer_lease(c, n) == 1) {
			atomic_store(&c->lease_lost, true); /* the consume loop stops */
			break;
		}
		if (c->snap)
			snapshot(c, c->analyzer, now);
		node_health(c, now);
		nanosleep(&turn, NULL);
	}
	return NULL;
}

int analyzer_keeper_start(struct cli *c)
{
	int err;

	atomic_store(&c->keeper_stop, false);
	if ((err = pthread_create(&c->keeper, NULL, keeper, c))) {
		ts_error("analyzer: cannot start the keeper thread: %s", strerror(err));
		return -err;
	}
	c->keeper_running = true;
	return 0;
}

void analyzer_keeper_stop(struct cli *c)
{
	if (!c->keeper_running)
		return;
	atomic_store(&c->keeper_stop, true);
	pthread_join(c->keeper, NULL);
	c->keeper_running = false;
}
