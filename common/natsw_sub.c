// SPDX-License-Identifier: Apache-2.0
/* Reading: durable pull consumers on the TRAINSCOPE stream (made again when they vanish
 * or lose deliveries), and core NATS subscriptions and request-reply services. */
#include "natsw_impl.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A durable pull consumer as read through one connection. */
struct tsn_sub {
	struct tsn *n;
	natsSubscription *sub;
	char durable[128], filter[256];
	uint64_t last_stream_seq; /* of the messages fetched: where a recreated consumer resumes */
	uint64_t last_dseq;       /* the consumer's delivery sequence of the last one; 0: none yet */
	bool rewind;              /* deliveries never arrived: the consumer is made again */
	natsSubscription *retired; /* the one before sub: messages it gave may still be acked */
};

/* A subscription given up (natsw_impl.h, TSN_BURIED); past TSN_BURIED the oldest goes at
 * once, given up 16 subscriptions ago. */
void tsn_bury(struct tsn *n, natsSubscription *sub)
{
	natsSubscription *oldest = NULL;

	if (!sub)
		return;
	pthread_mutex_lock(&n->lock);
	if (n->nburied == TSN_BURIED) {
		oldest = n->buried[0].sub;
		memmove(n->buried, n->buried + 1, sizeof(n->buried[0]) * (TSN_BURIED - 1));
		n->nburied--;
	}
	n->buried[n->nburied++] = (struct tsn_buried){ sub, tsn_mono_ms() };
	pthread_mutex_unlock(&n->lock);
	natsSubscription_Destroy(oldest);
}

/* The buried subscriptions whose time came, or all (natsw_impl.h). */
void tsn_reap(struct tsn *n, bool all)
{
	natsSubscription *due[TSN_BURIED];
	int64_t now = tsn_mono_ms();
	int k = 0;

	pthread_mutex_lock(&n->lock);
	while (k < n->nburied && (all || now - n->buried[k].at_ms >= TSN_BURY_MS)) {
		due[k] = n->buried[k].sub;
		k++;
	}
	memmove(n->buried, n->buried + k, sizeof(n->buried[0]) * (size_t)(n->nburied - k));
	n->nburied -= k;
	pthread_mutex_unlock(&n->lock);
	for (int i = 0; i < k; i++) /* off the lock: a destroy may wait for nats.c's */
		natsSubscription_Destroy(due[i]);
}

/* The durable pull consumer, made when missing: from the stream's start, or after the
 * last message this subscription fetched when it is made again. */
static int pull_subscribe(struct tsn_sub *s)
{
	jsSubOptions so;
	jsErrCode jerr = 0;
	natsStatus st;

	s->last_dseq = 0; /* a consumer made or bound afresh counts its deliveries anew */
	jsSubOptions_Init(&so);
	so.Stream = TSN_STREAM;
	so.Config.AckPolicy = js_AckAll; /* acking a message acks those before it */
	so.Config.DeliverPolicy = s->last_stream_seq ? js_DeliverByStartSequence : js_DeliverAll;
	so.Config.OptStartSeq = s->last_stream_seq ? s->last_stream_seq + 1 : 0;
	so.Config.AckWait = 120 * 1000000000ll; /* > the analyzer's snapshot interval */
	so.Config.MaxAckPending = 65536;
	st = js_PullSubscribe(&s->sub, s->n->js, s->filter, s->durable, NULL, &so, &jerr);
	if (st != NATS_OK) {
		ts_error("nats: durable consumer %s: %s (%d)", s->durable, natsStatus_GetText(st),
			 (int)jerr);
		s->sub = NULL;
		return -EAGAIN;
	}
	return 0;
}

/* Whether durable's consumer must go before one on filter resuming after stream sequence
 * after is made: 1 when it exists and starts or filters elsewhere or has delivered, 0
 * when it is missing or is what we would make (one an attempt of ours made after the
 * client gave up waiting: with a peer down, a new consumer's group may take longer to
 * elect than the API's timeout, and deleting it again at each retry kept a restarted
 * analyzer from ever finishing one; make scale-san once), -EAGAIN when the server does
 * not say. */
static int stale_consumer(struct tsn *n, const char *durable, const char *filter,
			  uint64_t after)
{
	jsConsumerInfo *ci = NULL;
	jsErrCode jerr = 0;
	natsStatus st = js_GetConsumerInfo(&ci, n->js, TSN_STREAM, durable, NULL, &jerr);
	const jsConsumerConfig *c;
	bool ours;

	if (jerr == JSConsumerNotFoundErr || st == NATS_NOT_FOUND)
		return 0;
	if (st != NATS_OK || !ci)
		return -EAGAIN;
	c = ci->Config;
	ours = c && ci->Delivered.Stream == 0 && c->FilterSubject &&
	       !strcmp(c->FilterSubject, filter) &&
	       (after ? c->DeliverPolicy == js_DeliverByStartSequence && c->OptStartSeq == after + 1
		      : c->DeliverPolicy == js_DeliverAll);
	jsConsumerInfo_Destroy(ci);
	return !ours;
}

/* A subscription on durable with filter (NULL: every subject), resuming after stream
 * sequence after; afresh: the consumer deleted first (unless it is already what we
 * would make). 0, -EAGAIN or -ENOMEM. */
static int subscribe(struct tsn *n, const char *durable, const char *filter, uint64_t after,
		     bool afresh, struct tsn_sub **out)
{
	struct tsn_sub *s;
	jsErrCode jerr = 0;

	if (tsn_ensure_stream(n))
		return -EAGAIN;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->n = n;
	snprintf(s->durable, sizeof(s->durable), "%s", durable);
	snprintf(s->filter, sizeof(s->filter), "%s", filter ? filter : TSN_SUBJECTS);
	s->last_stream_seq = after;
	int stale = afresh ? stale_consumer(n, durable, s->filter, after) : 0;
	if (stale < 0 ||
	    (stale > 0 && js_DeleteConsumer(n->js, TSN_STREAM, durable, NULL, &jerr) != NATS_OK &&
	     jerr != JSConsumerNotFoundErr)) {
		free(s);
		return -EAGAIN;
	}
	if (pull_subscribe(s)) {
		free(s);
		return -EAGAIN;
	}
	*out = s;
	return 0;
}

/* The durable consumer where it stands (natsw.h). */
int tsn_subscribe(struct tsn *n, const char *durable, const char *filter, struct tsn_sub **out)
{
	return subscribe(n, durable, filter, 0, false, out);
}

/* The durable consumer made afresh after seq (natsw.h). */
int tsn_subscribe_after(struct tsn *n, const char *durable, const char *filter, uint64_t seq,
			struct tsn_sub **out)
{
	return subscribe(n, durable, filter, seq, true, out);
}

/* The stream sequence of the last message fetched (natsw.h). */
uint64_t tsn_sub_last_seq(const struct tsn_sub *s)
{
	return s->last_stream_seq;
}

/* The subscription given up. One that delivered messages is buried only when the next
 * one is given up, or at the end: the last may still be acknowledged (natsMsg_Ack reads
 * its subscription; the analyzer holds it until its snapshot is stored). Never
 * unsubscribed: nats.c would delete a consumer it made. Buried, not destroyed: a reply
 * to its last pull request may be on its way (natsw_impl.h, TSN_BURIED). */
static void retire_sub(struct tsn_sub *s)
{
	if (!s->sub)
		return;
	if (s->last_dseq) {
		tsn_bury(s->n, s->retired);
		s->retired = s->sub;
	} else {
		tsn_bury(s->n, s->sub);
	}
	s->sub = NULL;
}

/* Whether the consumer still exists, made again when it vanished (natsw.h). */
int tsn_sub_check(struct tsn_sub *s)
{
	jsConsumerInfo *ci = NULL;
	jsErrCode jerr = 0;
	natsStatus st = js_GetConsumerInfo(&ci, s->n->js, TSN_STREAM, s->durable, NULL, &jerr);

	jsConsumerInfo_Destroy(ci);
	if (st == NATS_OK)
		return 0;
	if (st != NATS_NOT_FOUND && jerr != JSConsumerNotFoundErr)
		return -EAGAIN; /* the server away: nothing to say of the consumer */
	ts_warn("nats: durable consumer %s vanished (deleted by another client?): making it "
		"again from stream sequence %" PRIu64, s->durable, s->last_stream_seq + 1);
	retire_sub(s);
	s->rewind = false; /* made again after the last message fetched, as a rewind would */
	return pull_subscribe(s) ? -EAGAIN : 1;
}

/* The consumer deleted and made again after the last message fetched: what it delivered
 * that never arrived comes again, not only after its ack wait (and, acknowledged "all",
 * never). Returns 0 or -EAGAIN (tried again at the next fetch). */
static int rewind_consumer(struct tsn_sub *s)
{
	jsErrCode jerr = 0;

	retire_sub(s);
	if (js_DeleteConsumer(s->n->js, TSN_STREAM, s->durable, NULL, &jerr) != NATS_OK &&
	    jerr != JSConsumerNotFoundErr)
		return -EAGAIN;
	s->rewind = false;
	return pull_subscribe(s);
}

/* Messages i and on of the list dropped: never handed to the caller (none left: the list
 * freed, as one that timed out). */
static void truncate_list(natsMsgList *list, int i)
{
	if (!i) {
		natsMsgList_Destroy(list);
		return;
	}
	for (int k = i; k < list->Count; k++) {
		natsMsg_Destroy(list->Msgs[k]);
		list->Msgs[k] = NULL;
	}
	list->Count = i;
}

/* Up to batch messages in delivery order, none missing (natsw.h). */
int tsn_fetch(struct tsn_sub *s, natsMsgList *list, int batch, int64_t timeout_ms)
{
	jsErrCode jerr = 0;
	natsStatus st;

	memset(list, 0, sizeof(*list));
	tsn_reap(s->n, false);
	if (s->rewind && rewind_consumer(s))
		return -EAGAIN;
	if (!s->sub && pull_subscribe(s))
		return -EAGAIN;
	st = natsSubscription_Fetch(list, s->sub, batch, timeout_ms, &jerr);
	if (st != NATS_OK && st != NATS_TIMEOUT)
		return -EAGAIN;
	for (int i = 0; i < list->Count; i++) {
		jsMsgMetaData *md = NULL;
		if (natsMsg_GetMetaData(&md, list->Msgs[i]) != NATS_OK)
			continue;
		/* The consumer numbers its deliveries 1, 2, 3...: a jump is deliveries lost on
		 * the way (the server this connection used died with them in its buffers). The
		 * consumer holds them as delivered until its ack wait, and acknowledging a later
		 * one acknowledges them: the rest is dropped and the stream read again after
		 * the last one taken. */
		if (s->last_dseq && md->Sequence.Consumer > s->last_dseq + 1) {
			ts_warn("nats: durable consumer %s: %" PRIu64 " deliveries never arrived "
				"(a server lost with them?): reading the stream again from sequence "
				"%" PRIu64, s->durable, md->Sequence.Consumer - s->last_dseq - 1,
				s->last_stream_seq + 1);
			jsMsgMetaData_Destroy(md);
			truncate_list(list, i);
			s->rewind = true;
			break;
		}
		s->last_dseq = md->Sequence.Consumer;
		if (md->Sequence.Stream > s->last_stream_seq)
			s->last_stream_seq = md->Sequence.Stream;
		jsMsgMetaData_Destroy(md);
	}
	if (s->rewind)
		rewind_consumer(s); /* failing, tried again at the next fetch */
	return list->Count;
}

/* Deletes durable: 0, or -ENOENT when it cannot (natsw.h). */
int tsn_delete_consumer(struct tsn *n, const char *durable)
{
	jsErrCode jerr = 0;

	return js_DeleteConsumer(n->js, TSN_STREAM, durable, NULL, &jerr) == NATS_OK ? 0 : -ENOENT;
}

/* Frees s, leaving the consumer on the server; its nats.c subscriptions are buried
 * (natsw_impl.h): a reply to the last fetch may still be on its way. */
void tsn_unsubscribe(struct tsn_sub *s)
{
	if (!s)
		return;
	tsn_bury(s->n, s->sub);
	tsn_bury(s->n, s->retired);
	free(s);
}

/* A core subscription: cb for plain messages, serve for requests. */
struct tsn_core_sub {
	natsSubscription *sub;
	natsSubscription *old;     /* on a connection given up (tsn_revive): freed later */
	tsn_msg_cb cb;
	tsn_serve_cb serve;
	void *closure;
	struct tsn *n;
	char *subject, *queue;     /* to subscribe again on a connection made anew */
	natsMsgHandler handler;
	struct tsn_core_sub *next; /* n->core_subs */
	/* the owner's reference, and one for each nats.c subscription whose handler may
	 * still run: a subscription closed from another thread may call it once more
	 * (natsSubscription_SetOnCompleteCB), with s and the owner's closure */
	pthread_mutex_t lock;
	pthread_cond_t done;       /* a reference dropped */
	int refs;
};

/* A reference to s dropped; the last frees it. */
static void core_sub_put(struct tsn_core_sub *s)
{
	bool last;

	pthread_mutex_lock(&s->lock);
	last = --s->refs == 0;
	pthread_cond_broadcast(&s->done);
	pthread_mutex_unlock(&s->lock);
	if (!last)
		return;
	pthread_cond_destroy(&s->done);
	pthread_mutex_destroy(&s->lock);
	free(s->subject);
	free(s->queue);
	free(s);
}

/* nats.c thread: a subscription of s closed, its handler returned for good. */
static void on_core_complete(void *closure)
{
	core_sub_put(closure);
}

static natsStatus core_sub_make(struct tsn_core_sub *s, natsConnection *nc)
{
	natsStatus st = s->queue ? natsConnection_QueueSubscribe(&s->sub, nc, s->subject, s->queue,
								 s->handler, s)
				 : natsConnection_Subscribe(&s->sub, nc, s->subject, s->handler, s);

	if (st != NATS_OK)
		return st;
	/* taken first: a subscription closed meanwhile completes at once */
	pthread_mutex_lock(&s->lock);
	s->refs++;
	pthread_mutex_unlock(&s->lock);
	if (natsSubscription_SetOnCompleteCB(s->sub, on_core_complete, s) != NATS_OK)
		core_sub_put(s); /* closed already: its handler will not run again */
	return NATS_OK;
}

/* n's core subscriptions made again on its connection made anew (natsw_impl.h). */
void tsn_core_subs_remake(struct tsn *n)
{
	pthread_mutex_lock(&n->lock);
	for (struct tsn_core_sub *s = n->core_subs; s; s = s->next) {
		natsStatus st;

		natsSubscription_Destroy(s->old);
		s->old = s->sub;
		s->sub = NULL;
		if ((st = core_sub_make(s, n->nc)) != NATS_OK)
			ts_error("nats: cannot subscribe again to %s: %s", s->subject,
				 natsStatus_GetText(st));
	}
	pthread_mutex_unlock(&n->lock);
}

/* nats.c thread: a plain message to cb. */
static void on_core_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	struct tsn_core_sub *s = closure;

	(void)nc, (void)sub;
	s->cb(natsMsg_GetSubject(m), natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
	      s->closure);
	natsMsg_Destroy(m);
}

/* nats.c thread: a request to serve, its answer to the reply subject. */
static void on_request(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	struct tsn_core_sub *s = closure;
	const char *reply = natsMsg_GetReply(m);
	size_t len = 0;
	void *answer;

	(void)sub;
	answer = s->serve(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), &len, s->closure);
	if (answer && reply && *reply && natsConnection_Publish(nc, reply, answer, (int)len) != NATS_OK)
		ts_warn("nats: cannot answer on %s: %s", reply, nats_GetLastError(NULL));
	free(answer);
	natsMsg_Destroy(m);
}

/* Takes s: subscribed (in queue, when given) with handler, or freed. */
static int core_subscribe(struct tsn *n, const char *subject, const char *queue,
			  natsMsgHandler handler, struct tsn_core_sub *s, struct tsn_core_sub **out)
{
	natsStatus st = NATS_NO_MEMORY;

	s->n = n;
	s->handler = handler;
	s->refs = 1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->done, NULL);
	s->subject = strdup(subject);
	s->queue = queue ? strdup(queue) : NULL;
	pthread_mutex_lock(&n->lock);
	if (s->subject && (!queue || s->queue))
		st = core_sub_make(s, n->nc);
	if (st == NATS_OK) {
		s->next = n->core_subs;
		n->core_subs = s;
	}
	pthread_mutex_unlock(&n->lock);
	if (st != NATS_OK) {
		ts_error("nats: cannot subscribe to %s: %s", subject, natsStatus_GetText(st));
		core_sub_put(s);
		return -EINVAL;
	}
	*out = s;
	return 0;
}

/* A request-reply service in a queue group (natsw.h). */
int tsn_serve(struct tsn *n, const char *subject, const char *queue, tsn_serve_cb cb,
	      void *closure, struct tsn_core_sub **out)
{
	struct tsn_core_sub *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->serve = cb;
	s->closure = closure;
	return core_subscribe(n, subject, queue, on_request, s, out);
}

/* A plain subscription (natsw.h). */
int tsn_subscribe_core(struct tsn *n, const char *subject, tsn_msg_cb cb, void *closure,
		       struct tsn_core_sub **out)
{
	struct tsn_core_sub *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->cb = cb;
	s->closure = closure;
	return core_subscribe(n, subject, NULL, on_core_msg, s, out);
}

/* Messages delivered to s and not yet handed to its callback (natsw.h). */
int tsn_core_sub_pending(struct tsn_core_sub *s)
{
	int msgs = 0, bytes = 0;

	if (!s || natsSubscription_GetPending(s->sub, &msgs, &bytes) != NATS_OK)
		return 0;
	return msgs;
}

/* Unsubscribes s (NULL: nothing) and waits, 5 s at most, until none of its handlers
 * runs (natsw.h); s is freed by whichever lets it go last. */
void tsn_unsubscribe_core(struct tsn_core_sub *s)
{
	struct tsn_core_sub **at;
	struct timespec until;
	bool done = true;

	if (!s)
		return;
	pthread_mutex_lock(&s->n->lock);
	for (at = &s->n->core_subs; *at && *at != s; at = &(*at)->next)
		;
	if (*at)
		*at = s->next;
	pthread_mutex_unlock(&s->n->lock);
	natsSubscription_Unsubscribe(s->sub);
	/* unsubscribed, the read loop may still be filling them (natsw_impl.h, TSN_BURIED) */
	tsn_bury(s->n, s->sub);
	tsn_bury(s->n, s->old);
	s->sub = s->old = NULL;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&s->lock);
	while (s->refs > 1 && (done = pthread_cond_timedwait(&s->done, &s->lock, &until) == 0))
		;
	pthread_mutex_unlock(&s->lock);
	if (!done)
		ts_warn("nats: a handler of %s still runs 5 s after its unsubscribe", s->subject);
	core_sub_put(s);
}
