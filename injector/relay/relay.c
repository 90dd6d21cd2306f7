// SPDX-License-Identifier: Apache-2.0
/* trainscope-relay: finds the rings of a folder, folds their records into per-step
 * summaries, and publishes them in batches with a per-producer sequence (relay.h). */
#include "relay_impl.h"
#include "httpd.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* A round takes at most this many steps from a ring, then goes to the next ring: a backlog
 * (a relay restarted or stalled) goes out rank by rank a few steps at a time, as the
 * analyzer wants it (it aligns ranks by step, a rank more than lag_steps, 16, ahead makes
 * the others' steps late); relay_poll does not wait while a ring has records left. */
#define DRAIN_STEPS 4
#define DRAIN_RECORDS 4096 /* ... and records, for a ring whose records close no step */

static bool ring_empty(const struct ts_ring *ring)
{
	return atomic_load(&ring->tail) == atomic_load(&ring->head);
}

static int push_pending(struct producer *p, const struct ts_step_sum *s)
{
	if (p->npending == p->cap) {
		int cap = p->cap ? p->cap * 2 : 64;
		struct ts_step_sum *np = realloc(p->pending, (size_t)cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		p->pending = np;
		p->cap = cap;
	}
	p->pending[p->npending++] = *s;
	return 0;
}

/* The batch encoded with the producer's identity and ring counts: 0 with *buf
 * malloc'ed, or -ENOMEM (counted). */
static int encode(struct relay *r, struct producer *p, struct ts_batch_hdr *h,
		  const struct ts_step_sum *steps, int n, uint8_t **buf, size_t *len)
{
	h->id = &p->id;
	h->pod_uid = r->pod_uid;
	h->dropped_records = atomic_load(&p->ring->dropped);
	h->start_real_ns = p->ring->start_real_ns;
	if (!ts_batch_encode(h, steps, n, buf, len))
		return 0;
	r->st.encode_errors++;
	return -ENOMEM;
}

/* Queues an encoded batch on subject, then frees it; a refusal is counted. */
static int queue(struct relay *r, const char *subject, uint8_t *buf, size_t len,
		 const struct ts_batch_hdr *h)
{
	int err = tsn_publish_seq(r->nats, subject, buf, len, h->producer_id, h->seq);

	free(buf);
	if (err)
		r->st.publish_errors++;
	return err;
}

/* A hang, an announcement: a message of its own (relay_impl.h). */
int relay_send_batch(struct relay *r, struct producer *p, const char *subject,
		     struct ts_batch_hdr *h, const struct ts_step_sum *steps, int n)
{
	uint8_t *buf;
	size_t len;
	int err;

	if ((err = encode(r, p, h, steps, n, &buf, &len)))
		return err;
	return queue(r, subject, buf, len, h);
}

/* A batch of the rank's sequence: alone, or in its pod's Bundle (relay_impl.h), whose
 * batches the bundler counts once sent and says when lost. */
int relay_send_rank(struct relay *r, struct producer *p, struct ts_batch_hdr *h,
		    const struct ts_step_sum *steps, int n)
{
	uint8_t *buf;
	size_t len;
	int err;

	if (!(err = encode(r, p, h, steps, n, &buf, &len))) {
		if (r->opts.wire == TS_WIRE_POD)
			return ts_bundler_add(&r->bundler, p->pod_subject, buf, len, n);
		if (!(err = queue(r, p->subject, buf, len, h))) {
			r->st.batches++;
			return 0;
		}
	}
	ts_warn("relay: %d steps of %s lost: %s", n, p->subject, strerror(-err));
	return err;
}

/* Records taken from the ring and in no batch sent yet belong to the next batch: its seq
 * is reserved before the ring's tail moves past them (see SIDE_RELAY). With none, a seq
 * reserved for records that went into no batch is given back: a relay killed idle then
 * leaves no gap. */
static void reserve_open(struct relay *r, struct producer *p)
{
	if (p->npending || !ts_agg_idle(&p->agg) || !ring_empty(p->ring))
		relay_reserve(r, p, p->seq + 1, 0);
	else
		relay_unreserve(r, p);
}

/* The node's agent learns its ranks from these; the final one says the rank is gone. */
static void announce(struct relay *r, struct producer *p, bool final)
{
	struct ts_batch_hdr h = { .producer_id = p->producer_id ^ 1, .seq = ++p->ctl_seq,
				  .hello = true, .final = final };

	p->next_hello_ms = mono_ms() + HELLO_EVERY_MS;
	relay_reserve(r, p, 0, h.seq);
	relay_send_batch(r, p, p->ctl_subject, &h, NULL, 0);
}

static void publish(struct relay *r, struct producer *p, bool final)
{
	/* the library marks the ring closed as its process exits; a process that made steps
	 * and is gone without that was killed or crashed (one that never stepped, a
	 * dataloader worker ending with _exit, is not a rank lost) */
	bool died = final && !atomic_load(&p->ring->closed) && p->steps;
	struct ts_batch_hdr h = { .producer_id = p->producer_id, .seq = p->seq + 1,
				  .hello = !p->hello_sent, .final = final, .died = died };
	const char *groups[1 + TS_RELAY_MAX_COMMS];

	for (int i = 0; i < p->ngroups; i++)
		groups[i] = p->groups[i];
	h.groups = groups, h.ngroups = (size_t)p->ngroups;

	if (!p->npending && p->hello_sent && !final)
		return;
	relay_reserve(r, p, h.seq, 0);
	relay_send_rank(r, p, &h, p->pending, p->npending);
	p->seq++;
	p->hello_sent = true;
	p->npending = 0;
	reserve_open(r, p);
}


/* A hang goes out at once, on its own subject, after the steps before it. */
static void send_hang(struct relay *r, struct producer *p, const struct ts_rec *rec)
{
	char leaf[16];
	char subject[256];
	struct ts_hang_info hang = {
		.time_ns = rec->t_ns + (uint64_t)p->ring->mono_to_real_ns, .op = rec->kind,
		.comm_hash = rec->hang.comm, .seq = rec->hang.seq, .pending_ns = rec->dur_ns,
		.stacks = relay_read_side(p->path, TS_SIDE_STACKS, 64 * 1024),
	};

	if (p->id.rank < 0) { /* no rank to blame: its report says it has none */
		ts_warn("relay: %s (pid %d, no rank) reports a hang (op %u, %.0f s pending): not "
			"published", p->path, p->id.pid, hang.op, (double)hang.pending_ns / 1e9);
		free(hang.stacks);
		return;
	}
	publish(r, p, false);
	ts_bundler_flush(&r->bundler); /* the steps before the hang go first */
	snprintf(leaf, sizeof(leaf), "%d", p->id.rank);
	if (ts_subject(subject, sizeof(subject), p->id.ns, p->id.job, "hang", leaf) > 0) {
		struct ts_batch_hdr h = { .producer_id = p->producer_id, .seq = ++p->seq,
					  .hang = &hang };
		relay_reserve(r, p, h.seq, 0);
		if (!relay_send_batch(r, p, subject, &h, NULL, 0))
			ts_warn("relay: rank %d reports a hang (op %u, seq %" PRIu64 ", %.0f s pending)",
				p->id.rank, hang.op, hang.seq, (double)hang.pending_ns / 1e9);
	}
	free(hang.stacks);
	reserve_open(r, p);
}

/* A communicator the rank made goes to the analyzer with the next batch's Hello: it
 * tells the ranks that wait in a hung collective from the one that never entered. */
static void add_comm(struct producer *p, const struct ts_rec *rec)
{
	char g[64];

	snprintf(g, sizeof(g), "nccl:%016llx:%llu:%llu", (unsigned long long)rec->comm.hash,
		 (unsigned long long)rec->comm.members, (unsigned long long)rec->comm.rank);
	for (int i = 0; i < p->ngroups; i++)
		if (!strcmp(p->groups[i], g))
			return;
	if (p->ngroups == 1 + TS_RELAY_MAX_COMMS) { /* the oldest communicator goes */
		int first = p->groups[0][0] == 'l' ? 1 : 0;
		memmove(p->groups[first], p->groups[first + 1],
			(size_t)(p->ngroups - first - 1) * sizeof(p->groups[0]));
		p->ngroups--;
	}
	snprintf(p->groups[p->ngroups++], sizeof(p->groups[0]), "%s", g);
	p->hello_sent = false;
}

/* A step summed up: pending for the next batch (which goes once full, for a rank). */
static void take_step(struct relay *r, struct producer *p, const struct ts_step_sum *sum)
{
	r->st.steps++;
	p->steps++;
	if (push_pending(p, sum)) {
		r->st.encode_errors++;
		return;
	}
	if (p->npending >= r->opts.max_batch_steps && p->id.rank >= 0)
		publish(r, p, false);
}

/* Takes a round's budget from the ring; true when it stopped with records left. */
static bool drain(struct relay *r, struct producer *p)
{
	struct ts_step_sum sum;
	struct ts_rec rec;
	int steps = 0;

	for (int n = 0; n < DRAIN_RECORDS && steps < DRAIN_STEPS; n++) {
		reserve_open(r, p);
		if (!ts_ring_pop(p->ring, &rec))
			return false; /* empty, or a slot not written yet: no reason to hurry */
		r->st.records++;
		if (rec.type == TS_REC_HANG) {
			send_hang(r, p, &rec);
			continue;
		}
		if (rec.type == TS_REC_COMM) {
			add_comm(p, &rec);
			continue;
		}
		if (rec.type == TS_REC_IDENT) {
			relay_learn(r, p, &rec);
			continue;
		}
		p->device_ops += rec.type == TS_REC_COLL || rec.type == TS_REC_GEMM ||
				 rec.type == TS_REC_GRAPH_COLL;
		if (!ts_agg_add(&p->agg, &rec, &sum))
			continue;
		do
			take_step(r, p, &sum);
		while (++steps && ts_agg_pop(&p->agg, &sum));
	}
	return !ring_empty(p->ring);
}

static void remove_producer(struct relay *r, int i)
{
	struct producer *p = r->prod[i];

	ts_info("relay: %s finished (rank %d, %" PRIu64 " batches, %" PRIu64 " ring drops)",
		p->path, p->id.rank, p->seq, (uint64_t)atomic_load(&p->ring->dropped));
	r->dropped_done += atomic_load(&p->ring->dropped);
	r->undeviced_done += p->agg.undeviced;
	unlink(p->path);
	relay_side_remove(p);
	ts_ring_unmap(p->ring);
	free(p->pending);
	free(p);
	r->prod[i] = r->prod[--r->nprod];
	r->st.producers_done++;
}

/* A producer is done when its process has exited and the ring is drained. Liveness is
 * asked only of a drained ring: records still arriving say the producer lives. */
static void round_all(struct relay *r, bool final)
{
	uint64_t now = mono_ms();
	/* the producers' flushes fall in one round, so that a pod's ranks share a Bundle */
	bool due = now - r->last_flush_ms >= (uint64_t)r->opts.flush_ms;

	if (due)
		r->last_flush_ms = now;
	r->bundler.opts.max_bytes = ts_bundle_bound(tsn_max_payload(r->nats));
	r->backlog = false;
	for (int i = 0; i < r->nprod; i++) {
		struct producer *p = r->prod[i];
		bool done = false, more = drain(r, p);

		r->backlog |= more;
		if (ring_empty(p->ring) &&
		    (atomic_load(&p->ring->closed) || !ts_ring_producer_alive(p->path)))
			done = ring_empty(p->ring); /* nothing slipped in before it exited */
		struct ts_step_sum last;
		while (done && ts_agg_flush(&p->agg, &last))
			take_step(r, p, &last);
		/* a backlog goes out in batches of a round's steps, so that ranks stay abreast
		 * in the stream too (the analyzer reads it in order) */
		if (p->id.rank < 0) {
			relay_unranked_round(r, p, done, now);
		} else {
			relay_stepless_round(r, p, done, now);
			if (final || done || (more && p->npending) || due)
				publish(r, p, done);
			if (done || now >= p->next_hello_ms)
				announce(r, p, done);
		}
		if (done) {
			remove_producer(r, i);
			i--;
		}
	}
	ts_bundler_flush(&r->bundler);
	tsn_pump(r->nats);
}

int relay_new(struct relay **out, const struct relay_opts *opts)
{
	struct relay *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->opts = *opts;
	if (r->opts.flush_ms <= 0)
		r->opts.flush_ms = 100;
	if (r->opts.max_batch_steps <= 0)
		r->opts.max_batch_steps = 256;
	r->relay_nonce = ts_splitmix64(ts_real_ns() ^ ((uint64_t)getpid() << 32));
	snprintf(r->pod_uid, sizeof(r->pod_uid), "%s",
		 getenv("TRAINSCOPE_POD_UID") ? getenv("TRAINSCOPE_POD_UID") : "");
	r->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (r->inotify_fd < 0 ||
	    inotify_add_watch(r->inotify_fd, opts->ring_dir, IN_MOVED_TO | IN_CREATE) < 0) {
		err = -errno;
		ts_error("relay: cannot watch %s: %s", opts->ring_dir, strerror(errno));
		goto fail;
	}
	err = tsn_open(&r->nats, &opts->nats);
	if (err)
		goto fail;
	ts_bundler_init(&r->bundler, &(struct ts_bundler_opts){
		.producer_id = ts_splitmix64(r->relay_nonce ^ 0x62756e646c65ull), /* "bundle" */
		.send = ts_bundle_send_nats, .ctx = r->nats });
	r->rescan = true;
	*out = r;
	return 0;
fail:
	if (r->inotify_fd >= 0)
		close(r->inotify_fd);
	free(r);
	return err;
}

int relay_poll(struct relay *r, int timeout_ms)
{
	struct pollfd pfd = { .fd = r->inotify_fd, .events = POLLIN };
	char evbuf[4096];

	/* records left by the last round's budget, or a scan due (the first one): no waiting */
	if (poll(&pfd, 1, r->backlog || r->rescan ? 0 : timeout_ms) > 0) {
		while (read(r->inotify_fd, evbuf, sizeof(evbuf)) > 0)
			;
		r->rescan = true;
	}
	if (r->rescan || mono_ms() - r->last_scan_ms > 1000)
		relay_scan(r);
	round_all(r, false);
	return 0;
}

int relay_finish(struct relay *r, int timeout_ms)
{
	uint64_t deadline = mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0), now;
	struct tsn_stats ns;
	int err;

	relay_scan(r);
	do /* bounded: a producer may still be writing; what is left waits in its ring */
		round_all(r, false);
	while (r->backlog && mono_ms() < deadline);
	round_all(r, true);
	now = mono_ms();
	err = tsn_flush(r->nats, now < deadline ? (int64_t)(deadline - now) : 0);
	tsn_get_stats(r->nats, &ns);
	if (err)
		ts_error("relay: %" PRIu64 " batches not acknowledged within %d ms (queued %" PRIu64
			 ", in flight %" PRIu64 ")",
			 ns.outbox_msgs + ns.inflight, timeout_ms, ns.outbox_msgs, ns.inflight);
	return err;
}

void relay_get_stats(struct relay *r, struct relay_stats *out)
{
	*out = r->st;
	out->batches += r->bundler.st.batches;
	out->publish_errors += r->bundler.st.lost;
	out->bundles = r->bundler.st.bundles;
	out->bundle_splits = r->bundler.st.splits;
	out->producers_active = (uint64_t)r->nprod;
	out->ring_dropped = r->dropped_done;
	out->steps_undeviced = r->undeviced_done;
	for (int i = 0; i < r->nprod; i++) {
		out->ring_dropped += atomic_load(&r->prod[i]->ring->dropped);
		out->steps_undeviced += r->prod[i]->agg.undeviced;
	}
}

enum {
	RM_RECORDS,
	RM_RING_DROPPED,
	RM_STEPS,
	RM_BATCHES,
	RM_BUNDLES,
	RM_BUNDLE_SPLITS,
	RM_PRODUCERS,
	RM_PRODUCERS_DONE,
	RM_BAD_RINGS,
	RM_UNREADABLE_RINGS,
	RM_IDENTITY_UNSAVED,
	RM_UNRANKED_PRODUCERS,
	RM_UNRANKED_STEPS_DROPPED,
	RM_RANKS_LEARNED,
	RM_BAD_RECORDS,
	RM_STEPLESS_PRODUCERS,
	RM_STEPS_WITHOUT_DEVICE,
	RM_ENCODE_ERRORS,
	RM_PUBLISH_ERRORS,
	RM_NATS_PUBLISHED,
	RM_NATS_ACKED,
	RM_NATS_RETRIED,
	RM_NATS_DROPPED,
	RM_NATS_DROPPED_BYTES,
	RM_NATS_DENIED,
	RM_NATS_OUTBOX_BYTES,
	RM_NATS_INFLIGHT,
	RM_NATS_CONNECTED,
};

static const struct ts_metric_family relay_metrics[] = {
	[RM_RECORDS] = { "trainscope_relay_records_total", TS_COUNTER, NULL,
		"Ring records drained." },
	[RM_RING_DROPPED] = { "trainscope_relay_ring_dropped_total", TS_COUNTER, NULL,
		"Records the training processes dropped: ring full." },
	[RM_STEPS] = { "trainscope_relay_steps_total", TS_COUNTER, NULL,
		"Step summaries built." },
	[RM_BATCHES] = { "trainscope_relay_batches_total", TS_COUNTER, NULL,
		"Batches of the ranks' sequences queued for NATS, alone or in Bundles." },
	[RM_BUNDLES] = { "trainscope_relay_bundles_total", TS_COUNTER, NULL,
		"Bundles queued for NATS (--wire pod): one a round per pod and job, "
		"each holding its ranks' batches (batches_total / bundles_total: "
		"batches per Bundle)." },
	[RM_BUNDLE_SPLITS] = { "trainscope_relay_bundle_splits_total", TS_COUNTER, NULL,
		"Bundles sent before their round ended: the next batch would have taken "
		"them past the server's max_payload." },
	[RM_PRODUCERS] = { "trainscope_relay_producers", TS_GAUGE, NULL,
		"Rings followed now." },
	[RM_PRODUCERS_DONE] = { "trainscope_relay_producers_done_total", TS_COUNTER, NULL,
		"Rings finished and removed." },
	[RM_BAD_RINGS] = { "trainscope_relay_bad_rings_total", TS_COUNTER, NULL,
		"Ring files refused (bad header)." },
	[RM_UNREADABLE_RINGS] = { "trainscope_relay_unreadable_rings_total", TS_COUNTER, NULL,
		"Ring files the relay may not open (their owner, mode and the fix are "
		"logged)." },
	[RM_IDENTITY_UNSAVED] = { "trainscope_relay_identity_unsaved_total", TS_COUNTER, NULL,
		"Rings whose producer id and seq could not be kept in their .relay file "
		"(the reason is logged): a restarted relay starts them anew, what it "
		"lost uncounted." },
	[RM_UNRANKED_PRODUCERS] = { "trainscope_relay_unranked_producers_total", TS_COUNTER, NULL,
		"Processes that made steps with no rank (once each; the cure is logged "
		"and in the job's report): their steps are held until they learn one." },
	[RM_UNRANKED_STEPS_DROPPED] = { "trainscope_relay_unranked_steps_dropped_total",
		TS_COUNTER, NULL,
		"Steps of processes with no rank not published: past the held bound, or "
		"the process ended with no rank." },
	[RM_RANKS_LEARNED] = { "trainscope_relay_ranks_learned_total", TS_COUNTER, NULL,
		"Processes whose rank came from the program (process group, "
		"communicator) after their ring was made." },
	[RM_BAD_RECORDS] = { "trainscope_relay_bad_records_total", TS_COUNTER, NULL,
		"Ring records refused as malformed." },
	[RM_STEPLESS_PRODUCERS] = { "trainscope_relay_stepless_producers_total", TS_COUNTER, NULL,
		"Ranks that ran collectives or GEMMs and made no step (once each; the "
		"cure is logged and in the job's report)." },
	[RM_STEPS_WITHOUT_DEVICE] = { "trainscope_relay_steps_without_device_total",
		TS_COUNTER, NULL,
		"Steps sent without their device time: the host ran more than 8 steps "
		"ahead of its GPU, or the library's device record never came." },
	[RM_ENCODE_ERRORS] = { "trainscope_relay_encode_errors_total", TS_COUNTER, NULL,
		"Batches lost to encoding or memory errors." },
	[RM_PUBLISH_ERRORS] = { "trainscope_relay_publish_errors_total", TS_COUNTER, NULL,
		"Batches refused by the outbox, or in a Bundle that was, or larger "
		"alone than the server's max_payload (the reason is logged)." },
	[RM_NATS_PUBLISHED] = { "trainscope_relay_nats_published_total", TS_COUNTER, NULL,
		"Publishes handed to NATS, resends included." },
	[RM_NATS_ACKED] = { "trainscope_relay_nats_acked_total", TS_COUNTER, NULL,
		"Messages (batches, Bundles) stored by JetStream." },
	[RM_NATS_RETRIED] = { "trainscope_relay_nats_retried_total", TS_COUNTER, NULL,
		"Messages resent after an error or ack timeout." },
	[RM_NATS_DROPPED] = { "trainscope_relay_nats_dropped_total", TS_COUNTER, NULL,
		"Messages dropped from a full outbox (a Bundle with all its batches: "
		"the analyzer counts each rank's gap)." },
	[RM_NATS_DROPPED_BYTES] = { "trainscope_relay_nats_dropped_bytes_total", TS_COUNTER, NULL,
		"Bytes dropped from a full outbox." },
	[RM_NATS_DENIED] = { "trainscope_relay_nats_denied_total", TS_COUNTER, NULL,
		"Operations NATS refused as not permitted (a subject outside the "
		"relay's namespace or node: the server's words are logged)." },
	[RM_NATS_OUTBOX_BYTES] = { "trainscope_relay_nats_outbox_bytes", TS_GAUGE, NULL,
		"Bytes waiting for NATS." },
	[RM_NATS_INFLIGHT] = { "trainscope_relay_nats_inflight", TS_GAUGE, NULL,
		"Publishes awaiting an ack." },
	[RM_NATS_CONNECTED] = { "trainscope_relay_nats_connected", TS_GAUGE, NULL,
		"1 while connected to NATS." },
};

const struct ts_metric_table relay_metric_table = TS_METRIC_TABLE(relay_metrics);

#define PUT(b, id, v) ts_metric_u64((b), &relay_metrics[(id)], (uint64_t)(v))

void relay_render_metrics(struct relay *r, struct ts_buf *b)
{
	struct relay_stats s;
	struct tsn_stats n;

	relay_get_stats(r, &s);
	tsn_get_stats(r->nats, &n);
	PUT(b, RM_RECORDS, s.records);
	PUT(b, RM_RING_DROPPED, s.ring_dropped);
	PUT(b, RM_STEPS, s.steps);
	PUT(b, RM_BATCHES, s.batches);
	PUT(b, RM_BUNDLES, s.bundles);
	PUT(b, RM_BUNDLE_SPLITS, s.bundle_splits);
	PUT(b, RM_PRODUCERS, s.producers_active);
	PUT(b, RM_PRODUCERS_DONE, s.producers_done);
	PUT(b, RM_BAD_RINGS, s.bad_rings);
	PUT(b, RM_UNREADABLE_RINGS, s.unreadable_rings);
	PUT(b, RM_IDENTITY_UNSAVED, s.identity_unsaved);
	PUT(b, RM_UNRANKED_PRODUCERS, s.unranked_producers);
	PUT(b, RM_UNRANKED_STEPS_DROPPED, s.unranked_steps_dropped);
	PUT(b, RM_RANKS_LEARNED, s.ranks_learned);
	PUT(b, RM_BAD_RECORDS, s.bad_records);
	PUT(b, RM_STEPLESS_PRODUCERS, s.stepless_producers);
	PUT(b, RM_STEPS_WITHOUT_DEVICE, s.steps_undeviced);
	PUT(b, RM_ENCODE_ERRORS, s.encode_errors);
	PUT(b, RM_PUBLISH_ERRORS, s.publish_errors);
	PUT(b, RM_NATS_PUBLISHED, n.published);
	PUT(b, RM_NATS_ACKED, n.acked);
	PUT(b, RM_NATS_RETRIED, n.retried);
	PUT(b, RM_NATS_DROPPED, n.dropped);
	PUT(b, RM_NATS_DROPPED_BYTES, n.dropped_bytes);
	PUT(b, RM_NATS_DENIED, n.denied);
	PUT(b, RM_NATS_OUTBOX_BYTES, n.outbox_bytes);
	PUT(b, RM_NATS_INFLIGHT, n.inflight);
	PUT(b, RM_NATS_CONNECTED, n.connected ? 1 : 0);
}

void relay_free(struct relay *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->nprod; i++) {
		if (r->prod[i]->side_fd >= 0)
			close(r->prod[i]->side_fd);
		ts_ring_unmap(r->prod[i]->ring);
		free(r->prod[i]->pending);
		free(r->prod[i]);
	}
	free(r->prod);
	relay_forget_refused(r);
	ts_bundler_free(&r->bundler);
	tsn_close(r->nats);
	close(r->inotify_fd);
	free(r);
}
