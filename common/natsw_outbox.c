// SPDX-License-Identifier: Apache-2.0
/* The publisher's outbox: messages queued in order under a bound, handed to JetStream's
 * asynchronous publish one per subject, resent in their place on failure until
 * acknowledged; the pump and flush that drive it, and its statistics. */
#include "natsw_impl.h"
#include "hash.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Queues e in publish order: new messages at the tail, a failed one back before every
 * later message, so that batches are resent, and stored, in the order they were made
 * (after a NATS freeze every in-flight publish fails: they must not come back reversed). */
static void outbox_push(struct tsn *n, struct tsn_entry *e)
{
	struct tsn_entry **at = &n->head;

	if (n->tail && n->tail->order < e->order)
		at = &n->tail->next;
	else
		while (*at && (*at)->order < e->order)
			at = &(*at)->next;
	e->next = *at;
	*at = e;
	if (!e->next)
		n->tail = e;
	n->st.outbox_msgs++;
	n->st.outbox_bytes += e->len;
}

/* The key that keeps one message of a subject in flight: the hash of its name. */
static uint64_t subject_key(const char *subject)
{
	return subject ? ts_fnv1a(subject, strlen(subject)) : ts_fnv1a("", 0);
}

/* Whether a message with this subject key awaits its ack. Under n->lock. */
static bool key_in_flight(const struct tsn *n, uint64_t key)
{
	for (const struct tsn_entry *e = n->inflight; e; e = e->next)
		if (e->key == key)
			return true;
	return false;
}

/* The oldest queued message whose subject has none in flight, unlinked. One at a time
 * per subject keeps each producer's batches stored in the order they were made, even
 * when a publish fails while later ones are on the wire (JetStream would store those
 * first); subjects still go in parallel. Looks at the first 256 only. */
static struct tsn_entry *outbox_take_ready(struct tsn *n)
{
	struct tsn_entry **at = &n->head, *prev = NULL;

	for (int i = 0; *at && i < 256; i++, prev = *at, at = &(*at)->next) {
		struct tsn_entry *e = *at;
		if (key_in_flight(n, e->key))
			continue;
		*at = e->next;
		if (n->tail == e)
			n->tail = prev;
		n->st.outbox_msgs--;
		n->st.outbox_bytes -= e->len;
		return e;
	}
	return NULL;
}

/* The in-flight entry of msg, unlinked; NULL when there is none. */
static struct tsn_entry *inflight_take(struct tsn *n, const natsMsg *msg)
{
	for (struct tsn_entry **at = &n->inflight; *at; at = &(*at)->next)
		if ((*at)->msg == msg) {
			struct tsn_entry *e = *at;
			*at = e->next;
			return e;
		}
	return NULL;
}

/* The oldest queued message, unlinked; NULL when the outbox is empty. Under n->lock. */
static struct tsn_entry *outbox_pop(struct tsn *n)
{
	struct tsn_entry *e = n->head;

	if (!e)
		return NULL;
	n->head = e->next;
	if (!n->head)
		n->tail = NULL;
	n->st.outbox_msgs--;
	n->st.outbox_bytes -= e->len;
	return e;
}

/* Frees an entry with its message (one nats.c does not own). */
static void entry_free(struct tsn_entry *e)
{
	natsMsg_Destroy(e->msg);
	free(e);
}

/* Makes room for len bytes by dropping the oldest queued messages. */
static void outbox_trim(struct tsn *n, size_t len)
{
	while (n->head && n->st.outbox_bytes + len > n->opts.outbox_bytes) {
		struct tsn_entry *e = outbox_pop(n);
		n->st.dropped++;
		n->st.dropped_bytes += e->len;
		entry_free(e);
	}
}

static void hand_over(struct tsn *n);

/* nats.c thread: success retires the message, failure puts it back in its place. */
void tsn_outbox_on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
	struct tsn *n = closure;
	struct tsn_entry *e;

	pthread_mutex_lock(&n->lock);
	if (js != n->js) { /* a given-up connection's: its entries went (tsn_revive) */
		pthread_mutex_unlock(&n->lock);
		natsMsg_Destroy(msg);
		return;
	}
	n->st.inflight--;
	e = inflight_take(n, msg);
	if (pa || !pae || !e) {
		if (pa || !pae)
			n->st.acked++;
		else
			n->st.dropped++; /* not ours to resend: cannot happen */
		if ((pa || !pae) && n->refused_code) {
			n->refused_code = 0;
			ts_info("nats: JetStream stores publishes again");
		}
		pthread_mutex_unlock(&n->lock);
		free(e);
		natsMsg_Destroy(msg);
		if (pa || !pae)
			hand_over(n); /* the subject's next message */
		return;
	}
	n->st.retried++;
	if (pae->ErrCode == JSStreamNotFoundErr || pae->Err == NATS_NO_RESPONDERS) {
		/* a publisher that may not make the stream waits for whoever may */
		if (n->opts.publish_only && n->hold_until_ms <= tsn_mono_ms())
			ts_warn("nats: no stream takes %s yet (the analyzer makes %s); resending",
				natsMsg_GetSubject(msg), TSN_STREAM);
		if (n->opts.publish_only)
			n->hold_until_ms = tsn_mono_ms() + 1000;
		else
			n->stream_ready = false;
	}
	/* a refusal by JetStream (a full store, limits): said once until publishes go through,
	 * not left to the debug log while the outbox fills */
	if (pae->ErrCode && (int)pae->ErrCode != n->refused_code) {
		n->refused_code = (int)pae->ErrCode;
		ts_warn("nats: JetStream refused a publish to %s: %s (error %d); resending",
			natsMsg_GetSubject(msg), pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err),
			(int)pae->ErrCode);
	}
	outbox_trim(n, e->len);
	outbox_push(n, e);
	pthread_mutex_unlock(&n->lock);
}

/* Queues a copy of data for subject, trimming the oldest over the bound (natsw.h). */
int tsn_publish(struct tsn *n, const char *subject, const void *data, size_t len,
		const char *msg_id)
{
	struct tsn_entry *e;
	natsStatus s;

	if (len > n->opts.outbox_bytes)
		return -EMSGSIZE;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	s = natsMsg_Create(&e->msg, subject, NULL, data, (int)len);
	if (s == NATS_OK && msg_id)
		s = natsMsgHeader_Set(e->msg, "Nats-Msg-Id", msg_id);
	if (s != NATS_OK) {
		if (e->msg)
			natsMsg_Destroy(e->msg);
		free(e);
		return -ENOMEM;
	}
	e->len = len;
	e->key = subject_key(subject);
	pthread_mutex_lock(&n->lock);
	e->order = n->next_order++;
	outbox_trim(n, len);
	outbox_push(n, e);
	n->st.queued++;
	pthread_mutex_unlock(&n->lock);
	return 0;
}

/* tsn_publish with the producer's Nats-Msg-Id "<producer>-<seq>" (natsw.h). */
int tsn_publish_seq(struct tsn *n, const char *subject, const void *data, size_t len,
		    uint64_t producer_id, uint64_t seq)
{
	char msg_id[48];

	snprintf(msg_id, sizeof(msg_id), "%016" PRIx64 "-%" PRIu64, producer_id, seq);
	return tsn_publish(n, subject, data, len, msg_id);
}

/* Room for the headers tsn_publish adds ("NATS/1.0", Nats-Msg-Id), which the server's
 * max_payload counts with the data. */
#define HEADERS_MAX 256

size_t tsn_max_payload(struct tsn *n)
{
	int64_t max = n->nc ? natsConnection_GetMaxPayload(n->nc) : 0;

	if (max <= 0) /* no server has said yet */
		max = 1 << 20;
	return max > HEADERS_MAX ? (size_t)(max - HEADERS_MAX) : 0;
}

/* Whether publishes must wait for the stream: a publish-only client while its hold
 * lasts; any other until tsn_ensure_stream succeeds, tried every 500 ms at most. */
static bool stream_wanted(struct tsn *n)
{
	bool ready;
	int64_t t = tsn_mono_ms();

	pthread_mutex_lock(&n->lock);
	ready = n->stream_ready;
	if (n->opts.publish_only) /* publishes wait only while no stream answered them */
		ready = n->stream_ready = t >= n->hold_until_ms;
	pthread_mutex_unlock(&n->lock);
	if (ready || n->opts.publish_only || t < n->next_stream_try_ms)
		return !ready;
	n->next_stream_try_ms = t + 500;
	return tsn_ensure_stream(n) != 0;
}

/* Hands queued messages over while fewer than max_inflight await their acks, at most one
 * a subject. Called by tsn_pump, and by the ack handler (nats.c allows publishing there):
 * a subject's next message goes as soon as its previous one is acknowledged, not at the
 * component's next pump (an agent pumps once an interval). */
static void hand_over(struct tsn *n)
{
	jsPubOptions po;

	jsPubOptions_Init(&po);
	po.MaxWait = n->opts.ack_wait_ms;
	for (;;) {
		struct tsn_entry *e;
		natsStatus s;
		jsCtx *js;

		pthread_mutex_lock(&n->lock);
		js = n->js; /* tsn_revive may replace it */
		if (n->closing || !n->stream_ready ||
		    n->st.inflight >= (uint64_t)n->opts.max_inflight || !(e = outbox_take_ready(n))) {
			pthread_mutex_unlock(&n->lock);
			return;
		}
		n->st.inflight++;
		n->st.published++;
		/* listed before the hand-over: its ack may come before the call returns */
		e->next = n->inflight;
		n->inflight = e;
		pthread_mutex_unlock(&n->lock);
		natsMsg *m = e->msg, *sent = e->msg;
		s = js_PublishMsgAsync(js, &m, &po);
		if (s == NATS_OK)
			continue; /* nats.c owns the message until the ack handler */
		/* not handed over: put it back and try again on the next pump (unless
		 * tsn_revive dropped it meanwhile: e is gone then, not to be read). One the
		 * server will never take (past its max_payload) is dropped and counted: put
		 * back, it would go first again and hold every message behind it for good */
		bool never = s == NATS_MAX_PAYLOAD;
		char subject[256] = "";
		pthread_mutex_lock(&n->lock);
		if ((e = inflight_take(n, sent))) {
			n->st.inflight--;
			if (never) { /* named before it is freed */
				snprintf(subject, sizeof(subject), "%s", natsMsg_GetSubject(e->msg));
				n->st.dropped++;
				n->st.dropped_bytes += e->len;
				entry_free(e);
			} else {
				outbox_push(n, e);
			}
		}
		pthread_mutex_unlock(&n->lock);
		if (never) {
			if (subject[0])
				ts_warn("nats: a message of %s is larger than the server's max_payload "
					"(%" PRId64 " bytes): dropped and counted", subject,
					natsConnection_GetMaxPayload(n->nc));
			continue;
		}
		ts_debug("nats: publish deferred: %s", natsStatus_GetText(s));
		return;
	}
}

/* Hands queued messages over when connected and the stream is there (natsw.h). */
void tsn_pump(struct tsn *n)
{
	tsn_reap(n, false); /* a relay or agent fetches nothing: given-up subscriptions go here */
	tsn_revive(n);
	if (natsConnection_Status(n->nc) != NATS_CONN_STATUS_CONNECTED || stream_wanted(n))
		return;
	hand_over(n);
}

/* Pumps until nothing is queued or in flight, or timeout_ms passed (natsw.h). */
int tsn_flush(struct tsn *n, int64_t timeout_ms)
{
	int64_t deadline = tsn_mono_ms() + timeout_ms;

	for (;;) {
		struct tsn_stats st;

		tsn_pump(n);
		tsn_get_stats(n, &st);
		if (!st.outbox_msgs && !st.inflight)
			return 0;
		if (tsn_mono_ms() >= deadline)
			return -ETIMEDOUT;
		nats_Sleep(5);
	}
}

/* A copy of the counters, with the connection's state now (natsw.h). */
void tsn_get_stats(struct tsn *n, struct tsn_stats *out)
{
	pthread_mutex_lock(&n->lock);
	*out = n->st;
	out->connected = natsConnection_Status(n->nc) == NATS_CONN_STATUS_CONNECTED;
	pthread_mutex_unlock(&n->lock);
}

void tsn_outbox_free(struct tsn *n)
{
	struct tsn_entry *e;

	while ((e = outbox_pop(n)))
		entry_free(e);
	while ((e = n->inflight)) { /* their messages went with nats.c's context */
		n->inflight = e->next;
		free(e);
	}
}
