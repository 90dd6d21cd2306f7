// SPDX-License-Identifier: Apache-2.0
/* The connection: nats.c's options from ours (servers, credentials, TLS, inbox), its
 * callbacks (connected, disconnected, refusals, closed), opening and closing it with its
 * JetStream context. */
#include "natsw_impl.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Reconnects (and a first connect that failed) back off: the wait before a round of the
 * servers doubles from TSN_BACKOFF_MIN_MS to TSN_BACKOFF_MAX_MS, and each wait is drawn
 * at random between its half and its whole (n->rng, seeded apart in each process), so
 * that clients refused at once (a connect storm: an auth service shedding load, a server
 * restarted under 12,500 relays) come back spread over the wait, not in lockstep. */
#define TSN_BACKOFF_MIN_MS 250
#define TSN_BACKOFF_MAX_MS 8000

/* nats.c thread: the connection lost; said unless tsn_close is closing it. */
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

/* nats.c's last callback for the connection: after it none holds n. Unless tsn_close
 * closed it, nats.c gave it up (the server refused it twice: nats.c does not retry an
 * authorization error that comes again): tsn_pump makes it anew after a backoff. */
static void on_closed(natsConnection *nc, void *closure)
{
	struct tsn *n = closure;
	const char *text = NULL;
	int64_t wait = 0;
	bool lost, said;

	natsConnection_GetLastError(nc, &text);
	pthread_mutex_lock(&n->lock);
	n->closed = true;
	pthread_cond_signal(&n->closed_cond);
	lost = !n->closing;
	said = n->lost_rounds > 0;
	if (lost) {
		wait = tsn_backoff_ms(&n->rng, ++n->lost_rounds);
		n->lost = true;
		n->reopen_at_ms = tsn_mono_ms() + wait;
	}
	pthread_mutex_unlock(&n->lock);
	if (lost && !said)
		ts_warn("nats: nats.c gave the connection to %s up (%s: it does not retry a "
			"server that refused it twice); connecting anew in %lld ms, backing off",
			n->opts.url, text && *text ? text : "closed", (long long)wait);
	else if (lost)
		ts_debug("nats: %s: refused again (%s); connecting anew in %lld ms", n->opts.url,
			 text && *text ? text : "closed", (long long)wait);
}

/* nats.c thread: connected again; the stream is looked at again before publishing. */
static void on_reconnected(natsConnection *nc, void *closure)
{
	struct tsn *n = closure;

	(void)nc;
	pthread_mutex_lock(&n->lock);
	n->st.reconnects++;
	n->st.connected = true;
	n->stream_ready = false;
	n->lost_rounds = 0;
	pthread_mutex_unlock(&n->lock);
	ts_info("nats: reconnected to %s", n->opts.url);
}

/* nats.c thread: the first connection, made in the background, as a reconnection. */
static void on_connected(natsConnection *nc, void *closure)
{
	on_reconnected(nc, closure);
}

/* A small credential file's content, trailing blanks dropped (natsw.h). */
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

/* The wait before reconnect round `attempts` (1, 2, ...; nats.c counts them afresh after
 * each success), as described at TSN_BACKOFF_MIN_MS. */
int64_t tsn_backoff_ms(uint64_t *rng, int attempts)
{
	int64_t wait = TSN_BACKOFF_MIN_MS;
	uint64_t x = *rng ? *rng : 0x9e3779b97f4a7c15ull;

	for (int i = 1; i < attempts && wait < TSN_BACKOFF_MAX_MS; i++)
		wait *= 2;
	if (wait > TSN_BACKOFF_MAX_MS)
		wait = TSN_BACKOFF_MAX_MS;
	x ^= x << 13; /* xorshift64 */
	x ^= x >> 7;
	x ^= x << 17;
	*rng = x;
	return wait / 2 + (int64_t)(x % (uint64_t)(wait / 2 + 1));
}

/* A seed of its own for each connection of each process (the relays of a job start
 * within the same second). */
static uint64_t rng_seed(const struct tsn *n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
	       (uint64_t)(uintptr_t)n;
}

/* nats.c's reconnect thread (one per connection), after each round of the servers failed
 * (and before the first attempt after a disconnect). */
static int64_t reconnect_delay(natsConnection *nc, int attempts, void *closure)
{
	struct tsn *n = closure;
	int64_t ms;

	(void)nc;
	pthread_mutex_lock(&n->lock);
	ms = tsn_backoff_ms(&n->rng, attempts);
	pthread_mutex_unlock(&n->lock);
	return ms;
}

/* n NULL: a one-off connection (tsn_nats_options), the token file read now. */
static natsStatus set_auth(natsOptions *o, const struct tsn_opts *opts, struct tsn *n)
{
	natsStatus s = NATS_OK;

	if (tsn_set(opts->creds_file))
		s = natsOptions_SetUserCredentialsFromFiles(o, opts->creds_file, NULL);
	if (s == NATS_OK && tsn_set(opts->token_file) && n) {
		s = natsOptions_SetTokenHandler(o, read_token, n);
	} else if (s == NATS_OK && tsn_set(opts->token_file)) {
		char *t = token_of(opts->token_file, false);
		s = t ? natsOptions_SetToken(o, t) : NATS_NO_MEMORY;
		free(t);
	} else if (s == NATS_OK && tsn_set(opts->token))
		s = natsOptions_SetToken(o, opts->token);
	if (s == NATS_OK && tsn_set(opts->user))
		s = natsOptions_SetUserInfo(o, opts->user, opts->password);
	if (s == NATS_OK && tsn_set(opts->tls_ca))
		s = natsOptions_LoadCATrustedCertificates(o, opts->tls_ca);
	else if (s == NATS_OK && tsn_set(opts->tls_ca_pem))
		s = natsOptions_SetCATrustedCertificates(o, opts->tls_ca_pem);
	if (s == NATS_OK && (tsn_set(opts->tls_ca) || tsn_set(opts->tls_ca_pem)))
		s = natsOptions_SetSecure(o, true);
	if (s == NATS_OK && tsn_set(opts->tls_name))
		s = natsOptions_SetExpectedHostname(o, opts->tls_name);
	if (s == NATS_OK && tsn_set(opts->inbox_prefix)) {
		s = natsOptions_SetCustomInboxPrefix(o, opts->inbox_prefix);
	} else if (s == NATS_OK && tsn_set(opts->pod_uid)) {
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

/* A plain nats.c connection's options from opts (natsw.h). */
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

/* The options of n's connection: opts' URL and credentials, reconnecting for ever in
 * the background, and n's callbacks. The caller destroys them. */
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
		s = natsOptions_SetCustomReconnectDelay(o, reconnect_delay, n);
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

/* n's JetStream context on nc: asynchronous publishes acknowledged to the outbox. */
static natsStatus open_js(struct tsn *n, natsConnection *nc, jsCtx **js)
{
	jsOptions jo;
	natsStatus s = jsOptions_Init(&jo);

	if (s != NATS_OK)
		return s;
	jo.PublishAsync.MaxPending = n->opts.max_inflight * 2;
	jo.PublishAsync.AckHandler = tsn_outbox_on_ack;
	jo.PublishAsync.AckHandlerClosure = n;
	return natsConnection_JetStream(js, nc, &jo);
}

/* A given-up connection kept for tsn_close; past TSN_RETIRED the oldest is freed. */
static void retire(struct tsn *n, natsConnection *nc, jsCtx *js)
{
	if (n->n_retired == TSN_RETIRED) {
		jsCtx_Destroy(n->retired_js[0]);
		natsConnection_Destroy(n->retired_nc[0]);
		memmove(n->retired_nc, n->retired_nc + 1, sizeof(n->retired_nc[0]) * (TSN_RETIRED - 1));
		memmove(n->retired_js, n->retired_js + 1, sizeof(n->retired_js[0]) * (TSN_RETIRED - 1));
		n->n_retired--;
	}
	n->retired_nc[n->n_retired] = nc;
	n->retired_js[n->n_retired++] = js;
}

/* The connection nats.c gave up, made anew (natsw_impl.h). */
void tsn_revive(struct tsn *n)
{
	natsConnection *nc = NULL;
	natsOptions *o = NULL;
	jsCtx *js = NULL;
	natsStatus s;
	bool due;

	pthread_mutex_lock(&n->lock);
	due = n->lost && !n->closing && tsn_mono_ms() >= n->reopen_at_ms;
	if (due)
		n->lost = false; /* on_closed sets it again if the new one is given up too */
	pthread_mutex_unlock(&n->lock);
	if (!due)
		return;
	s = make_options(n, &o);
	if (s == NATS_OK) {
		s = natsConnection_Connect(&nc, o);
		if (s == NATS_NOT_YET_CONNECTED)
			s = NATS_OK;
	}
	natsOptions_Destroy(o);
	if (s == NATS_OK)
		s = open_js(n, nc, &js);
	if (s != NATS_OK) {
		ts_warn("nats: cannot connect anew to %s: %s", n->opts.url, natsStatus_GetText(s));
		jsCtx_Destroy(js);
		natsConnection_Destroy(nc);
		pthread_mutex_lock(&n->lock);
		n->lost = true;
		n->reopen_at_ms = tsn_mono_ms() + tsn_backoff_ms(&n->rng, ++n->lost_rounds);
		pthread_mutex_unlock(&n->lock);
		return;
	}
	pthread_mutex_lock(&n->lock);
	retire(n, n->nc, n->js);
	n->nc = nc;
	n->js = js;
	n->generation++;
	n->closed = natsConnection_IsClosed(nc);
	n->stream_ready = false;
	/* the old context's acks are not ours any more (tsn_outbox_on_ack): its
	 * publishes are dropped, their entries freed, as a full outbox would */
	while (n->inflight) {
		struct tsn_entry *e = n->inflight;

		n->inflight = e->next;
		n->st.inflight--;
		n->st.dropped++;
		n->st.dropped_bytes += e->len;
		free(e);
	}
	pthread_mutex_unlock(&n->lock);
	tsn_core_subs_remake(n);
}

/* Zero settings given their defaults (natsw.h, struct tsn_opts). */
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

/* Connects in the background with a JetStream context for asynchronous publishes
 * (natsw.h). */
int tsn_open(struct tsn **out, const struct tsn_opts *opts)
{
	natsOptions *o = NULL;
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
	n->rng = rng_seed(n);
	s = make_options(n, &o);
	if (s == NATS_OK) {
		s = natsConnection_Connect(&n->nc, o);
		/* with RetryOnFailedConnect, "not yet connected" is success */
		if (s == NATS_NOT_YET_CONNECTED)
			s = NATS_OK;
	}
	natsOptions_Destroy(o);
	if (s == NATS_OK)
		s = open_js(n, n->nc, &n->js);
	if (s != NATS_OK) {
		ts_error("nats: cannot open %s: %s", opts->url, natsStatus_GetText(s));
		tsn_close(n);
		return -EINVAL;
	}
	bool up = natsConnection_Status(n->nc) == NATS_CONN_STATUS_CONNECTED;
	/* nats.c's threads run the callbacks that write it from now on */
	pthread_mutex_lock(&n->lock);
	n->st.connected |= up;
	pthread_mutex_unlock(&n->lock);
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

/* Closes the connection and frees n, unless nats.c may still call back (natsw.h). */
void tsn_close(struct tsn *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->closing = true;
	pthread_mutex_unlock(&n->lock);
	if (n->nc && !closed_after(n))
		return; /* a callback may still come: n is left, not freed under it */
	tsn_reap(n, true); /* closed: nothing can reach them any more */
	jsCtx_Destroy(n->js);
	natsConnection_Destroy(n->nc);
	for (int i = 0; i < n->n_retired; i++) {
		jsCtx_Destroy(n->retired_js[i]);
		natsConnection_Destroy(n->retired_nc[i]);
	}
	tsn_outbox_free(n);
	pthread_cond_destroy(&n->closed_cond);
	pthread_mutex_destroy(&n->lock);
	free(n->token);
	free(n);
}

/* The replicas asked of the stream (natsw.h). */
int tsn_stream_replicas(const struct tsn *n)
{
	return n->opts.stream_replicas;
}

/* The JetStream context and its generation (natsw.h). */
jsCtx *tsn_jsctx(struct tsn *n, uint64_t *gen)
{
	jsCtx *js;

	pthread_mutex_lock(&n->lock);
	js = n->js;
	if (gen)
		*gen = n->generation;
	pthread_mutex_unlock(&n->lock);
	return js;
}
