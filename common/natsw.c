// SPDX-License-Identifier: Apache-2.0
#include "natsw.h"
#include "natsw_stream.h"
#include "hash.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tsn_entry {
	natsMsg *msg;   /* while in flight nats.c owns it: it is the key its ack comes with */
	size_t len;
	uint64_t order; /* of tsn_publish calls: a resend goes back to its place */
	uint64_t key;   /* hash of the subject: one message per subject in flight */
	struct tsn_entry *next;
};

struct tsn {
	struct tsn_opts opts;
	natsConnection *nc;
	jsCtx *js;
	pthread_mutex_t lock;       /* outbox and stats: nats.c callbacks run on its threads */
	struct tsn_entry *head, *tail;
	struct tsn_entry *inflight; /* handed to nats.c, awaiting their acks */
	uint64_t next_order;
	struct tsn_stats st;
	bool stream_ready, closing, closed; /* closed: nats.c's last callback has run */
	pthread_cond_t closed_cond;
	int64_t next_stream_try_ms;
	int refused_code;           /* JetStream's last refusal said (0: none since a success) */
	int stream_code;            /* the last stream error said */
	int64_t hold_until_ms;      /* publish-only: no stream answered; wait before resending */
	char *token;                /* the token file's content, as last read */
	bool token_unread;          /* the last read failed (and was said) */
	char denied[256];           /* the last permission refusal said */
};

struct tsn_sub {
	struct tsn *n;
	natsSubscription *sub;
	char durable[128], filter[256];
	uint64_t last_stream_seq; /* of the messages fetched: where a recreated consumer resumes */
	uint64_t last_dseq;       /* the consumer's delivery sequence of the last one; 0: none yet */
	bool rewind;              /* deliveries never arrived: the consumer is made again */
	natsSubscription *retired; /* the one before sub: messages it gave may still be acked */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

static uint64_t subject_key(const char *subject)
{
	return subject ? ts_fnv1a(subject, strlen(subject)) : ts_fnv1a("", 0);
}

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
static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
	struct tsn *n = closure;
	struct tsn_entry *e;

	(void)js;
	pthread_mutex_lock(&n->lock);
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
		if (n->opts.publish_only && n->hold_until_ms <= now_ms())
			ts_warn("nats: no stream takes %s yet (the analyzer makes %s); resending",
				natsMsg_GetSubject(msg), TSN_STREAM);
		if (n->opts.publish_only)
			n->hold_until_ms = now_ms() + 1000;
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

static void on_disconnected(natsConnection *nc, void *closure)
{
	struct tsn *n = closure;

	(void)nc;
	bool closing;

	pthread_mutex_lock(&n->lock);
	n->st.disconnects++;
	n->st.connected = false;
	closing = n->closing;
	pthread_mutex_unlock(&n->lock);
	if (!closing)
		ts_warn("nats: disconnected from %s; buffering", n->opts.url);
}

/* nats.c's last callback for the connection: after it none holds n. */
static void on_closed(natsConnection *nc, void *closure)
{
	struct tsn *n = closure;

	(void)nc;
	pthread_mutex_lock(&n->lock);
	n->closed = true;
	pthread_cond_signal(&n->closed_cond);
	pthread_mutex_unlock(&n->lock);
}

static void on_reconnected(natsConnection *nc, void *closure)
{
	struct tsn *n = closure;

	(void)nc;
	pthread_mutex_lock(&n->lock);
	n->st.reconnects++;
	n->st.connected = true;
	n->stream_ready = false;
	pthread_mutex_unlock(&n->lock);
	ts_info("nats: reconnected to %s", n->opts.url);
}

static void on_connected(natsConnection *nc, void *closure)
{
	on_reconnected(nc, closure);
}

static bool set(const char *s)
{
	return s && *s;
}

int tsn_read_secret(const char *path, char *out, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t len;

	if (!f)
		return -errno;
	len = fread(out, 1, n - 1, f);
	fclose(f);
	while (len && (out[len - 1] == '\n' || out[len - 1] == ' ' || out[len - 1] == '\r'))
		len--;
	out[len] = 0;
	return 0;
}

/* The token in file: malloc'ed, "" when it cannot be read (said unless quiet). */
static char *token_of(const char *file, bool quiet)
{
	char buf[16384];
	int err = tsn_read_secret(file, buf, sizeof(buf));

	if (err)
		buf[0] = 0;
	if (!buf[0] && !quiet)
		ts_warn("nats: cannot read the token in %s: %s", file, err ? strerror(-err) : "empty");
	return strdup(buf);
}

/* nats.c's connect thread, at each (re)connect: the file's current token (a projected
 * ServiceAccount token is renewed in place by the kubelet). */
static const char *read_token(void *closure)
{
	struct tsn *n = closure;

	/* said once, not at every reconnect, until the file reads again */
	free(n->token);
	n->token = token_of(n->opts.token_file, n->token_unread);
	n->token_unread = !n->token || !*n->token;
	return n->token ? n->token : "";
}

/* nats.c thread: refusals by the server (permissions, authorization) said once each. */
static void on_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *closure)
{
	struct tsn *n = closure;
	const char *text = NULL;
	bool fresh;

	(void)sub;
	natsConnection_GetLastError(nc, &text);
	if (!text || !*text)
		text = natsStatus_GetText(err);
	pthread_mutex_lock(&n->lock);
	fresh = strncmp(n->denied, text, sizeof(n->denied) - 1) != 0;
	if (fresh)
		snprintf(n->denied, sizeof(n->denied), "%s", text);
	n->st.denied += err == NATS_NOT_PERMITTED;
	pthread_mutex_unlock(&n->lock);
	if (fresh)
		ts_warn("nats: %s: %s", n->opts.url, text);
}

/* n NULL: a one-off connection (tsn_nats_options), the token file read now. */
static natsStatus set_auth(natsOptions *o, const struct tsn_opts *opts, struct tsn *n)
{
	natsStatus s = NATS_OK;

	if (set(opts->creds_file))
		s = natsOptions_SetUserCredentialsFromFiles(o, opts->creds_file, NULL);
	if (s == NATS_OK && set(opts->token_file) && n) {
		s = natsOptions_SetTokenHandler(o, read_token, n);
	} else if (s == NATS_OK && set(opts->token_file)) {
		char *t = token_of(opts->token_file, false);
		s = t ? natsOptions_SetToken(o, t) : NATS_NO_MEMORY;
		free(t);
	} else if (s == NATS_OK && set(opts->token))
		s = natsOptions_SetToken(o, opts->token);
	if (s == NATS_OK && set(opts->user))
		s = natsOptions_SetUserInfo(o, opts->user, opts->password);
	if (s == NATS_OK && set(opts->tls_ca))
		s = natsOptions_LoadCATrustedCertificates(o, opts->tls_ca);
	else if (s == NATS_OK && set(opts->tls_ca_pem))
		s = natsOptions_SetCATrustedCertificates(o, opts->tls_ca_pem);
	if (s == NATS_OK && (set(opts->tls_ca) || set(opts->tls_ca_pem)))
		s = natsOptions_SetSecure(o, true);
	if (s == NATS_OK && set(opts->tls_name))
		s = natsOptions_SetExpectedHostname(o, opts->tls_name);
	if (s == NATS_OK && set(opts->inbox_prefix)) {
		s = natsOptions_SetCustomInboxPrefix(o, opts->inbox_prefix);
	} else if (s == NATS_OK && set(opts->pod_uid)) {
		char inbox[128];
		snprintf(inbox, sizeof(inbox), "_INBOX.%s", opts->pod_uid);
		s = natsOptions_SetCustomInboxPrefix(o, inbox);
	}
	if (s == NATS_OK && n)
		s = natsOptions_SetErrorHandler(o, on_error, n);
	return s;
}

/* One URL, or a cluster's as a comma-separated list (nats.c takes a list as servers). */
static natsStatus set_url(natsOptions *o, const char *url)
{
	const char *servers[16];
	char copy[2048], *save = NULL, *tok;
	int n = 0;

	if (!url || !strchr(url, ','))
		return natsOptions_SetURL(o, url);
	if (strlen(url) >= sizeof(copy))
		return NATS_INVALID_ARG;
	snprintf(copy, sizeof(copy), "%s", url);
	for (tok = strtok_r(copy, ", ", &save); tok && n < 16; tok = strtok_r(NULL, ", ", &save))
		servers[n++] = tok;
	return n ? natsOptions_SetServers(o, servers, n) : NATS_INVALID_ARG;
}

natsStatus tsn_nats_options(const struct tsn_opts *opts, natsOptions **out)
{
	natsOptions *o = NULL;
	natsStatus s = natsOptions_Create(&o);

	if (s == NATS_OK)
		s = set_url(o, opts->url);
	if (s == NATS_OK)
		s = natsOptions_SetName(o, opts->name ? opts->name : "trainscope");
	if (s == NATS_OK)
		s = set_auth(o, opts, NULL);
	if (s != NATS_OK)
		natsOptions_Destroy(o);
	else
		*out = o;
	return s;
}

static natsStatus make_options(struct tsn *n, natsOptions **out)
{
	natsOptions *o = NULL;
	natsStatus s = natsOptions_Create(&o);

	if (s == NATS_OK)
		s = set_url(o, n->opts.url);
	if (s == NATS_OK)
		s = natsOptions_SetName(o, n->opts.name ? n->opts.name : "trainscope");
	if (s == NATS_OK)
		s = natsOptions_SetMaxReconnect(o, -1);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(o, 200);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectBufSize(o, 32 * 1024 * 1024);
	if (s == NATS_OK)
		s = natsOptions_SetRetryOnFailedConnect(o, true, on_connected, n);
	if (s == NATS_OK)
		s = natsOptions_SetDisconnectedCB(o, on_disconnected, n);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectedCB(o, on_reconnected, n);
	if (s == NATS_OK)
		s = natsOptions_SetClosedCB(o, on_closed, n);
	if (s == NATS_OK)
		s = set_auth(o, &n->opts, n);
	if (s != NATS_OK)
		natsOptions_Destroy(o);
	else
		*out = o;
	return s;
}

static void opts_defaults(struct tsn_opts *o)
{
	if (o->max_inflight <= 0)
		o->max_inflight = 256;
	if (!o->outbox_bytes)
		o->outbox_bytes = 64u << 20;
	if (o->ack_wait_ms <= 0)
		o->ack_wait_ms = 2000;
	if (o->stream_max_age_s <= 0)
		o->stream_max_age_s = 24 * 3600;
	if (o->stream_max_bytes <= 0)
		o->stream_max_bytes = 1ll << 30;
	if (o->stream_replicas <= 0)
		o->stream_replicas = 1;
}

int tsn_open(struct tsn **out, const struct tsn_opts *opts)
{
	natsOptions *o = NULL;
	jsOptions jo;
	struct tsn *n;
	natsStatus s;

	if (!opts || !opts->url || !*opts->url)
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->opts = *opts;
	opts_defaults(&n->opts);
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->closed_cond, NULL);
	s = make_options(n, &o);
	if (s == NATS_OK) {
		s = natsConnection_Connect(&n->nc, o);
		/* with RetryOnFailedConnect, "not yet connected" is success */
		if (s == NATS_NOT_YET_CONNECTED)
			s = NATS_OK;
	}
	natsOptions_Destroy(o);
	if (s == NATS_OK)
		s = jsOptions_Init(&jo);
	if (s == NATS_OK) {
		jo.PublishAsync.MaxPending = n->opts.max_inflight * 2;
		jo.PublishAsync.AckHandler = on_ack;
		jo.PublishAsync.AckHandlerClosure = n;
		s = natsConnection_JetStream(&n->js, n->nc, &jo);
	}
	if (s != NATS_OK) {
		ts_error("nats: cannot open %s: %s", opts->url, natsStatus_GetText(s));
		tsn_close(n);
		return -EINVAL;
	}
	if (natsConnection_Status(n->nc) == NATS_CONN_STATUS_CONNECTED)
		n->st.connected = true;
	*out = n;
	return 0;
}

/* Closes the connection and waits (5 s at most) for nats.c's closed callback: its
 * disconnected callback runs on a thread of its own and may still be about to. */
static bool closed_after(struct tsn *n)
{
	struct timespec until;
	bool closed;

	natsConnection_Close(n->nc);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&n->lock);
	while (!n->closed && pthread_cond_timedwait(&n->closed_cond, &n->lock, &until) == 0)
		;
	closed = n->closed;
	pthread_mutex_unlock(&n->lock);
	if (!closed)
		ts_warn("nats: the connection to %s did not close within 5 s", n->opts.url);
	return closed;
}

void tsn_close(struct tsn *n)
{
	struct tsn_entry *e;

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->closing = true;
	pthread_mutex_unlock(&n->lock);
	if (n->nc && !closed_after(n))
		return; /* a callback may still come: n is left, not freed under it */
	jsCtx_Destroy(n->js);
	natsConnection_Destroy(n->nc);
	while ((e = outbox_pop(n)))
		entry_free(e);
	while ((e = n->inflight)) { /* their messages went with nats.c's context */
		n->inflight = e->next;
		free(e);
	}
	pthread_cond_destroy(&n->closed_cond);
	pthread_mutex_destroy(&n->lock);
	free(n->token);
	free(n);
}

/* What a refusal for lack of store means, said after it. */
static const char store_hint[] = "; the stream reserves its max bytes (TRAINSCOPE_STREAM_MAX_BYTES, "
				 "default 1G) on every replica: give JetStream more store, or set it lower";

/* A client that does not manage the stream makes it where it is missing, and leaves
 * one that exists as it is: its settings are the manager's. */
static int create_if_missing(struct tsn *n, jsErrCode *jerr)
{
	jsStreamConfig cfg;
	jsStreamInfo *si = NULL;
	const char *subjects[] = { TSN_SUBJECTS };
	natsStatus s;

	s = js_GetStreamInfo(&si, n->js, TSN_STREAM, NULL, jerr);
	if (s != NATS_OK && (s == NATS_NOT_FOUND || *jerr == JSStreamNotFoundErr)) {
		jsStreamConfig_Init(&cfg);
		cfg.Name = TSN_STREAM;
		cfg.Subjects = subjects;
		cfg.SubjectsLen = 1;
		cfg.Storage = js_FileStorage;
		cfg.MaxAge = n->opts.stream_max_age_s * 1000000000ll;
		cfg.MaxBytes = n->opts.stream_max_bytes;
		cfg.Duplicates = 120 * 1000000000ll;
		cfg.Replicas = n->opts.stream_replicas;
		cfg.Discard = n->opts.stream_discard_new ? js_DiscardNew : js_DiscardOld;
		*jerr = 0;
		jsStreamInfo_Destroy(si);
		si = NULL;
		s = js_AddStream(&si, n->js, &cfg, NULL, jerr);
		if (s != NATS_OK && *jerr == JSStreamNameExistErr) /* made meanwhile by another */
			s = NATS_OK;
	}
	jsStreamInfo_Destroy(si);
	return s == NATS_OK ? 0 : -EAGAIN;
}

/* The manager's: a refusal or settings the server will not keep are said once each. */
static int managed(struct tsn *n)
{
	char why[320] = "";
	int rc = tsn_stream_apply(n->nc, &n->opts, why, sizeof(why));
	int code = rc == -EAGAIN ? 0 : rc;

	if (rc && rc != -EAGAIN && code != n->stream_code)
		ts_warn("nats: stream %s cannot be made or kept as asked: %s%s", TSN_STREAM, why,
			strstr(why, "insufficient") || strstr(why, "resources") ? store_hint : "");
	else if (rc == -EAGAIN)
		ts_debug("nats: stream %s not ready: %s", TSN_STREAM, why);
	n->stream_code = code;
	/* settings kept otherwise (an older server) leave a stream that takes publishes, but
	 * the manager must not consume it as if partitioned */
	return rc;
}

int tsn_ensure_stream(struct tsn *n)
{
	jsErrCode jerr = 0;
	int rc;

	if (n->opts.manage_stream) {
		if ((rc = managed(n)))
			return rc;
	} else if (create_if_missing(n, &jerr)) {
		/* a server that is away says nothing new; an answer that refuses is the cause */
		const char *why = nats_GetLastError(NULL), *at = why ? strstr(why, "): ") : NULL;
		if (jerr && (int)jerr != n->stream_code)
			ts_warn("nats: stream %s cannot be made: %s (error %d)%s", TSN_STREAM,
				at ? at + 3 : why ? why : "no answer", (int)jerr,
				jerr == JSInsufficientResourcesErr || jerr == JSStorageResourcesExceededErr
					? store_hint
					: "");
		else
			ts_debug("nats: stream %s not ready (%d)", TSN_STREAM, (int)jerr);
		n->stream_code = (int)jerr;
		return -EAGAIN;
	}
	n->stream_code = 0;
	pthread_mutex_lock(&n->lock);
	n->stream_ready = true;
	pthread_mutex_unlock(&n->lock);
	return 0;
}

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

int tsn_publish_seq(struct tsn *n, const char *subject, const void *data, size_t len,
		    uint64_t producer_id, uint64_t seq)
{
	char msg_id[48];

	snprintf(msg_id, sizeof(msg_id), "%016" PRIx64 "-%" PRIu64, producer_id, seq);
	return tsn_publish(n, subject, data, len, msg_id);
}

static bool stream_wanted(struct tsn *n)
{
	bool ready;
	int64_t t = now_ms();

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

		pthread_mutex_lock(&n->lock);
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
		natsMsg *m = e->msg;
		s = js_PublishMsgAsync(n->js, &m, &po);
		if (s == NATS_OK)
			continue; /* nats.c owns the message until the ack handler */
		/* not handed over: put it back and try again on the next pump */
		pthread_mutex_lock(&n->lock);
		n->st.inflight--;
		if (inflight_take(n, e->msg))
			outbox_push(n, e);
		pthread_mutex_unlock(&n->lock);
		ts_debug("nats: publish deferred: %s", natsStatus_GetText(s));
		return;
	}
}

void tsn_pump(struct tsn *n)
{
	if (natsConnection_Status(n->nc) != NATS_CONN_STATUS_CONNECTED || stream_wanted(n))
		return;
	hand_over(n);
}

int tsn_stream_replicas(const struct tsn *n)
{
	return n->opts.stream_replicas;
}

jsCtx *tsn_jsctx(struct tsn *n)
{
	return n->js;
}

int tsn_flush(struct tsn *n, int64_t timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		struct tsn_stats st;

		tsn_pump(n);
		tsn_get_stats(n, &st);
		if (!st.outbox_msgs && !st.inflight)
			return 0;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		nats_Sleep(5);
	}
}

void tsn_get_stats(struct tsn *n, struct tsn_stats *out)
{
	pthread_mutex_lock(&n->lock);
	*out = n->st;
	out->connected = natsConnection_Status(n->nc) == NATS_CONN_STATUS_CONNECTED;
	pthread_mutex_unlock(&n->lock);
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
	if (afresh && js_DeleteConsumer(n->js, TSN_STREAM, durable, NULL, &jerr) != NATS_OK &&
	    jerr != JSConsumerNotFoundErr) {
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

int tsn_subscribe(struct tsn *n, const char *durable, const char *filter, struct tsn_sub **out)
{
	return subscribe(n, durable, filter, 0, false, out);
}

int tsn_subscribe_after(struct tsn *n, const char *durable, const char *filter, uint64_t seq,
			struct tsn_sub **out)
{
	return subscribe(n, durable, filter, seq, true, out);
}

uint64_t tsn_sub_last_seq(const struct tsn_sub *s)
{
	return s->last_stream_seq;
}

/* The subscription given up. One that delivered messages is freed only when the next
 * one is given up, or at the end: the last may still be acknowledged (natsMsg_Ack reads
 * its subscription; the analyzer holds it until its snapshot is stored). Never
 * unsubscribed: nats.c would delete a consumer it made. */
static void retire_sub(struct tsn_sub *s)
{
	if (!s->sub)
		return;
	if (s->last_dseq) {
		natsSubscription_Destroy(s->retired);
		s->retired = s->sub;
	} else {
		natsSubscription_Destroy(s->sub);
	}
	s->sub = NULL;
}

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

int tsn_fetch(struct tsn_sub *s, natsMsgList *list, int batch, int64_t timeout_ms)
{
	jsErrCode jerr = 0;
	natsStatus st;

	memset(list, 0, sizeof(*list));
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

int tsn_delete_consumer(struct tsn *n, const char *durable)
{
	jsErrCode jerr = 0;

	return js_DeleteConsumer(n->js, TSN_STREAM, durable, NULL, &jerr) == NATS_OK ? 0 : -ENOENT;
}

void tsn_unsubscribe(struct tsn_sub *s)
{
	if (!s)
		return;
	natsSubscription_Destroy(s->sub);
	natsSubscription_Destroy(s->retired);
	free(s);
}

struct tsn_core_sub {
	natsSubscription *sub;
	tsn_msg_cb cb;
	tsn_serve_cb serve;
	void *closure;
};

static void on_core_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	struct tsn_core_sub *s = closure;

	(void)nc, (void)sub;
	s->cb(natsMsg_GetSubject(m), natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
	      s->closure);
	natsMsg_Destroy(m);
}

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
	natsStatus st = queue ? natsConnection_QueueSubscribe(&s->sub, n->nc, subject, queue, handler, s)
			      : natsConnection_Subscribe(&s->sub, n->nc, subject, handler, s);

	if (st != NATS_OK) {
		ts_error("nats: cannot subscribe to %s: %s", subject, natsStatus_GetText(st));
		free(s);
		return -EINVAL;
	}
	*out = s;
	return 0;
}

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

void tsn_unsubscribe_core(struct tsn_core_sub *s)
{
	if (!s)
		return;
	natsSubscription_Unsubscribe(s->sub);
	natsSubscription_Destroy(s->sub);
	free(s);
}

struct unit {
	char c;
	int64_t mul;
};
static const struct unit size_units[] = { { 'K', 1 << 10 }, { 'k', 1 << 10 }, { 'M', 1 << 20 },
					  { 'm', 1 << 20 }, { 'G', 1 << 30 }, { 'g', 1 << 30 },
					  { 0, 0 } };
static const struct unit time_units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
					  { 0, 0 } };

/* A positive number with an optional unit ("512M", "24h"); 0 when not set or not one
 * (said, with what the variable wants). */
static int64_t env_number(const char *name, const struct unit *units, const char *what)
{
	const char *v = getenv(name);
	char *end;
	int64_t n;

	if (!v || !*v)
		return 0;
	n = strtoll(v, &end, 10);
	for (const struct unit *u = units; *end && u->c; u++)
		if (*end == u->c) {
			n *= u->mul;
			end++;
			break;
		}
	if (*end || n <= 0) {
		ts_warn("nats: %s=%s is not %s: ignored", name, v, what);
		return 0;
	}
	return n;
}

static void stream_from_env(struct tsn_opts *o)
{
	const char *r = getenv("TRAINSCOPE_STREAM_REPLICAS"), *d = getenv("TRAINSCOPE_STREAM_DISCARD");

	o->stream_max_bytes = env_number("TRAINSCOPE_STREAM_MAX_BYTES", size_units,
					 "a size (bytes, or a number with K, M or G)");
	o->stream_max_age_s = env_number("TRAINSCOPE_STREAM_MAX_AGE", time_units,
					 "a duration (seconds, or a number with s, m, h or d)");
	if (r && *r) {
		o->stream_replicas = atoi(r);
		if (o->stream_replicas < 1 || o->stream_replicas > 5) {
			ts_warn("nats: TRAINSCOPE_STREAM_REPLICAS=%s is not 1 to 5: 1", r);
			o->stream_replicas = 1;
		}
	}
	if (d && *d && strcmp(d, "old") && strcmp(d, "new"))
		ts_warn("nats: TRAINSCOPE_STREAM_DISCARD=%s is neither old nor new: old", d);
	o->stream_discard_new = d && !strcmp(d, "new");
}

void tsn_opts_from_env(struct tsn_opts *o, const char *client_name)
{
	o->url = getenv("TRAINSCOPE_NATS_URL");
	o->token = getenv("TRAINSCOPE_NATS_TOKEN");
	o->token_file = getenv("TRAINSCOPE_NATS_TOKEN_FILE");
	o->user = getenv("TRAINSCOPE_NATS_USER");
	o->password = getenv("TRAINSCOPE_NATS_PASSWORD");
	o->tls_ca = getenv("TRAINSCOPE_NATS_CA");
	o->creds_file = getenv("TRAINSCOPE_NATS_CREDS");
	o->tls_ca_pem = getenv("TRAINSCOPE_NATS_CA_PEM");
	o->tls_name = getenv("TRAINSCOPE_NATS_TLS_NAME");
	o->pod_uid = getenv("TRAINSCOPE_POD_UID");
	o->name = client_name;
	stream_from_env(o);
}

bool tsn_export_option(int ch, const char *arg)
{
	static const struct { int ch; const char *env; } map[] = {
		{ 's', "TRAINSCOPE_NATS_URL" },	       { 'C', "TRAINSCOPE_NATS_CREDS" },
		{ 'T', "TRAINSCOPE_NATS_TOKEN" },      { 'A', "TRAINSCOPE_NATS_CA" },
		{ 0x100, "TRAINSCOPE_NATS_TOKEN_FILE" }, { 0x101, "TRAINSCOPE_NATS_USER" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].ch == ch)
			return setenv(map[i].env, arg, 1) == 0;
	return false;
}

bool tsn_parse_option(struct tsn_opts *o, int ch, const char *arg)
{
	switch (ch) {
	case 's': o->url = arg; return true;
	case 'C': o->creds_file = arg; return true;
	case 'T': o->token = arg; return true;
	case 'A': o->tls_ca = arg; return true;
	case 0x100: o->token_file = arg; return true;
	case 0x101: o->user = arg; return true;
	default: return false;
	}
}

bool tsn_opts_authenticated(const struct tsn_opts *o)
{
	return set(o->creds_file) || set(o->token) || set(o->token_file) || set(o->user);
}

void tsn_opts_finish(struct tsn_opts *o)
{
	if (!o->url || !*o->url)
		o->url = "nats://127.0.0.1:4222";
}
