// SPDX-License-Identifier: Apache-2.0
/* trainscope-analyzer: consumes the job's batches from JetStream and names slow ranks.
 * Here: its start, the consume loop under the lease on the durable and a clean stop;
 * main_impl.h names the files that hold the rest (the keeper thread: main_keeper.c). */
#include "main_impl.h"
#include "httpd.h"
#include "log.h"
#include "signals.h"
#include "tsclock.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Acknowledging the last message acknowledges the batch: at once without snapshots,
 * else once a snapshot holds what it did. */
static void consume(struct cli *c, struct ts_analyzer *a, struct tsn_sub *sub)
{
	natsMsgList list;
	int n = tsn_fetch(sub, &list, 512, 200);

	if (n < 0) {
		nats_Sleep(200);
		return;
	}
	pthread_mutex_lock(&c->core_lock);
	for (int i = 0; i < list.Count; i++) {
		natsMsg *m = list.Msgs[i];
		ts_analyzer_ingest(a, natsMsg_GetSubject(m), natsMsg_GetData(m),
				   (size_t)natsMsg_GetDataLength(m));
	}
	if (list.Count && c->snap) { /* with the state it made: a save reads both at once */
		ts_snapshots_hold(c->snap, list.Msgs[list.Count - 1], tsn_sub_last_seq(sub),
				  (size_t)list.Count);
		list.Msgs[list.Count - 1] = NULL;
	}
	pthread_mutex_unlock(&c->core_lock);
	if (list.Count && !c->snap)
		natsMsg_Ack(list.Msgs[list.Count - 1], NULL);
	natsMsgList_Destroy(&list);
}

/* With snapshots: the last one restored and the stream replayed after it; a first
 * start (none stored) resumes the durable consumer; one unreadable replays it all. The
 * lease comes first: a standby restores nothing until it takes over. */
static int start(struct cli *c, struct ts_analyzer *a, struct tsn *n, struct tsn_sub **sub)
{
	struct ts_snapshots *snap = NULL;
	char why[256] = "";

	if (analyzer_lease(c, n))
		return -EAGAIN;

	if (c->snapshot_s > 0 && !c->snap) {
		if (ts_snapshots_open(&snap, n, c->snapshot_bucket, c->durable, c->snapshot_s, why,
				      sizeof(why))) {
			if (strcmp(why, c->kv_why)) /* a refusal is said, not only at debug */
				ts_warn("analyzer: snapshot bucket %s: %s", c->snapshot_bucket, why);
			snprintf(c->kv_why, sizeof(c->kv_why), "%s", why);
			return -EAGAIN;
		}
		atomic_store(&c->snap, snap);
	}
	/* restored once: a subscription that fails after it is tried again from the same
	 * sequence, never from a state restored twice */
	if (c->restored == -EAGAIN && c->snap)
		atomic_store(&c->phase, PHASE_RESTORING);
	if (c->restored == -EAGAIN)
		c->restored = c->snap ? ts_snapshots_restore(c->snap, a, &c->core_lock, ts_real_ns(),
							     &c->replay_after)
				      : -ENOENT;
	if (c->restored == -EAGAIN)
		return -EAGAIN;
	if (c->restored == -ENOENT)
		return tsn_subscribe(n, c->durable, c->filter, sub);
	return tsn_subscribe_after(n, c->durable, c->filter, c->restored ? 0 : c->replay_after, sub);
}

/* Whether the lease on the durable is young enough to consume under (LEASE_HELD_S); said
 * once a spell when it is not. Without snapshots there is no lease: true. */
static bool lease_fresh(struct cli *c)
{
	uint64_t age = ts_real_ns() - atomic_load(&c->lease_at_ns);
	bool fresh = !c->lease_kv || age < (uint64_t)(LEASE_HELD_S * 1e9);

	if (!fresh && !c->lease_stale)
		ts_warn("analyzer: the lease on durable %s was renewed %.1f s ago (the server is "
			"slow to answer): not consuming until it is renewed", c->durable,
			(double)age / 1e9);
	else if (fresh && c->lease_stale)
		ts_info("analyzer: the lease on durable %s renewed: consuming again", c->durable);
	c->lease_stale = !fresh;
	return fresh;
}

static int run(struct cli *c, struct ts_analyzer *a, struct tsn *n)
{
	struct tsn_sub *sub = NULL;
	uint64_t last_tick = 0;

	for (int tries = 0; !ts_stop_requested() && start(c, a, n, &sub); tries++) {
		atomic_store(&c->heartbeat_ns, ts_real_ns());
		if (tries % 30 == 0 && !atomic_load(&c->standby)) /* the cause is said above */
			ts_warn("analyzer: waiting for JetStream at %s", c->nats.url);
		nats_Sleep(1000);
	}
	if (!sub)
		return 0;
	atomic_store(&c->phase, PHASE_CONSUMING);
	if (c->partitions > 1)
		ts_info("analyzer: consuming %s as durable %s: partition %d of %d", c->filter,
			c->durable, c->partition, c->partitions);
	else
		ts_info("analyzer: consuming %s as durable %s", c->filter ? c->filter : TSN_SUBJECTS,
			c->durable);
	uint64_t last_check = ts_real_ns();
	if (analyzer_keeper_start(c)) {
		tsn_unsubscribe(sub);
		return 1;
	}
	while (!ts_stop_requested()) {
		if (lease_fresh(c))
			consume(c, a, sub);
		else
			nats_Sleep(50); /* the keeper renews it, or finds it lost */
		uint64_t now = ts_real_ns();
		atomic_store(&c->heartbeat_ns, now);
		if (atomic_load(&c->lease_lost)) {
			ts_error("analyzer: lost the lease on durable %s: stopping, so that two "
				 "analyzers do not split its messages", c->durable);
			analyzer_keeper_stop(c);
			tsn_unsubscribe(sub); /* no last snapshot: the state is the new holder's */
			return 1;
		}
		/* another client may delete the consumer: nothing would arrive again */
		if (now - last_check > 5000000000ull) {
			if (tsn_sub_check(sub) == 1)
				atomic_fetch_add(&c->consumer_recreated, 1);
			last_check = now;
		}
		if (now - last_tick > 100000000ull) {
			pthread_mutex_lock(&c->core_lock);
			ts_analyzer_tick(a, now);
			pthread_mutex_unlock(&c->core_lock);
			last_tick = now;
		}
	}
	analyzer_keeper_stop(c);
	pthread_mutex_lock(&c->core_lock);
	ts_analyzer_tick(a, ts_real_ns());
	ts_analyzer_flush_reports(a);
	pthread_mutex_unlock(&c->core_lock);
	if (c->snap) /* a clean stop resumes exactly here */
		ts_snapshots_tick(c->snap, a, &c->core_lock, ts_real_ns(), true);
	tsn_unsubscribe(sub);
	if (c->lease_kv) /* a successor need not wait for it to age */
		tsn_kv_release(c->lease_kv, c->durable, c->owner);
	return 0;
}

int main(int argc, char **argv)
{
	struct ts_httpd *http = NULL;
	struct ts_analyzer *a = NULL;
	struct tsn *n = NULL;
	struct cli c = { .core_lock = PTHREAD_MUTEX_INITIALIZER,
			 .standby_lock = PTHREAD_MUTEX_INITIALIZER };
	int rc = 1;

	ts_log_init("analyzer");
	if (analyzer_parse_args(argc, argv, &c))
		return 2;
	if (c.print_config) {
		ts_params_print(&c.ao.params, stdout);
		return 0;
	}
	if (c.config_schema)
		return ts_params_schema(stdout) ? 1 : (putchar('\n'), 0);
	if (mkdir(c.ao.report_dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "trainscope-analyzer: cannot create %s: %s\n", c.ao.report_dir,
			strerror(errno));
		return 1;
	}
	ts_signals_init();
	if (analyzer_open_k8s(&c) || analyzer_open_otlp(&c) || analyzer_open_nodes(&c) || ts_analyzer_new(&a, &c.ao) ||
	    tsn_open(&n, &c.nats))
		goto out;
	c.analyzer = a;
	atomic_store(&c.nats_conn, n);
	if (c.metrics_port >= 0) {
		struct ts_httpd_daemon d = { .sz = sizeof(d), .render = analyzer_render,
					     .health = analyzer_health, .ready = analyzer_ready,
					     .ctx = &c };
		if (ts_httpd_start_daemon(&http, c.metrics_addr, (uint16_t)c.metrics_port, &d))
			goto out;
		ts_info("analyzer: metrics on http://%s:%u/metrics",
			c.metrics_addr ? c.metrics_addr : "127.0.0.1", ts_httpd_port(http));
	}
	ts_info("analyzer: reports in %s", c.ao.report_dir);
	char host[64] = "";
	gethostname(host, sizeof(host) - 1);
	analyzer_owner(&c, host, (int)getpid(), (unsigned long long)(ts_real_ns() / 1000000));
	rc = run(&c, a, n);
out:
	ts_httpd_stop(http);
	ts_snapshots_close(c.snap);
	tsn_kv_close(c.lease_kv);
	ts_node_sync_free(c.nodes);
	tsn_close(n);
	ts_analyzer_free(a);
	ts_otlp_free(c.otlp);
	ts_k8sw_stop(c.k8s, c.k8s_stop_s); /* the last statuses, unless the API server keeps silent */
	ts_kube_close(c.kube);
	ts_kube_close(c.kube_lease);
	return rc;
}
