// SPDX-License-Identifier: Apache-2.0
/* NATS JetStream wrapper over nats.c: a publisher with a bounded outbox and
 * asynchronous, acknowledged, de-duplicated publishes, and a durable pull consumer.
 * natsw_env.c reads the settings, natsw_conn.c connects, natsw_outbox.c publishes,
 * natsw_stream.c makes and keeps the stream, natsw_sub.c reads; natsw_impl.h is what
 * they share. */
#ifndef TS_NATSW_H
#define TS_NATSW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <nats/nats.h>
#include "opts.h"

#define TSN_STREAM "TRAINSCOPE"
#define TSN_SUBJECTS "ts.v1.>"

struct tsn_opts {
	const char *url;            /* nats://127.0.0.1:4222 */
	const char *name;           /* connection name shown by the server */
	const char *creds_file;     /* optional NATS credentials (JWT + nkey) */
	const char *token;          /* optional auth token */
	const char *token_file;     /* optional auth token read at each connect (a projected
				     * ServiceAccount token the kubelet renews) */
	const char *user, *password; /* optional user and password */
	const char *tls_ca;         /* optional CA bundle file: enables TLS */
	const char *tls_ca_pem;     /* optional CA bundle as PEM text: enables TLS */
	const char *tls_name;       /* the name the server's certificate must carry, when the
				     * URL's host is not it (a sidecar on 127.0.0.1) */
	const char *inbox_prefix;   /* replies come on <prefix>.>; default _INBOX */
	const char *pod_uid;        /* a pod's client: replies on _INBOX.<pod uid> unless
				     * inbox_prefix says otherwise */
	bool publish_only;          /* never makes or inspects the stream: a publisher whose
				     * credential grants only its subjects */
	int max_inflight;           /* unacknowledged async publishes, one per subject (default 256) */
	size_t outbox_bytes;        /* bound of queued, unpublished data (default 64 MiB) */
	int64_t ack_wait_ms;        /* publish ack timeout before a resend (default 2000) */
	int64_t stream_max_age_s;   /* TRAINSCOPE stream retention (default 24 h) */
	int64_t stream_max_bytes;   /* (default 1 GiB) */
	/* The stream's manager (the analyzer) creates it and keeps it to these settings;
	 * any other client only creates it, with them, where it is missing. */
	bool manage_stream;
	int stream_replicas;        /* servers holding it (default 1; 3 on a cluster) */
	bool stream_discard_new;    /* when full refuse new messages (default: drop the oldest) */
	int stream_partitions;      /* > 1: a subject transform appends each job's partition;
				     * 1: none; < 0: as the stream has it */
};

struct tsn_stats {
	uint64_t queued;        /* messages accepted into the outbox */
	uint64_t published;     /* publish attempts handed to nats.c (resends included) */
	uint64_t acked;         /* stored by JetStream */
	uint64_t retried;       /* resent after an error or ack timeout */
	uint64_t dropped;       /* pushed out of a full outbox */
	uint64_t dropped_bytes;
	uint64_t outbox_msgs;
	uint64_t outbox_bytes;
	uint64_t inflight;
	uint64_t disconnects;
	uint64_t reconnects;
	uint64_t denied;        /* operations the server refused as not permitted */
	bool connected;
};

/* The command-line options every component takes for NATS (--nats or -s, --nats-creds,
 * --nats-token, --nats-token-file, --nats-user, --nats-ca) as a table (opts.h): a
 * program's group is TS_OPTS_GROUP(tsn_opt_table, &its struct tsn_opts). --nats comes
 * first: a program that takes it its own way groups the other five (tsn_opt_table + 1). */
extern const struct ts_opt tsn_opt_table[6];

/* Defaults from TRAINSCOPE_NATS_URL, _TOKEN, _TOKEN_FILE, _USER, _PASSWORD, _CA and
 * _CA_PEM, _TLS_NAME; a pod's clients (TRAINSCOPE_POD_UID set) take replies on _INBOX.<pod uid>,
 * the inbox their NATS rights allow. */
void tsn_opts_from_env(struct tsn_opts *o, const char *client_name);
/* The options o holds (tsn_opt_table's) into the variables tsn_opts_from_env reads, for
 * a child process (trainscope run's relay): 0 or -errno. */
int tsn_opts_export(const struct tsn_opts *o);
/* Whether opts carry credentials: a publisher that has them publishes only, for such a
 * server grants it its subjects and no stream management (the analyzer makes it). */
bool tsn_opts_authenticated(const struct tsn_opts *o);
/* The URL to use: the option, the environment, or nats://127.0.0.1:4222. */
void tsn_opts_finish(struct tsn_opts *o);

struct tsn;

/* A small credential file's content (a token, a seed, a password), trailing blanks and
 * newlines dropped, into out. Returns 0 or -errno. */
int tsn_read_secret(const char *path, char *out, size_t n);

/* Options of a plain nats.c connection with opts' URL, credentials and TLS (the token
 * file read once, now): for tools that talk core NATS. Caller destroys them. */
natsStatus tsn_nats_options(const struct tsn_opts *opts, natsOptions **out);

/* Connects in the background: returns 0 even when the server is not up yet, and
 * keeps reconnecting. Returns -EINVAL on bad options, -ENOMEM. */
int tsn_open(struct tsn **out, const struct tsn_opts *opts);
void tsn_close(struct tsn *n);

/* Queues a copy of data for subject; msg_id de-duplicates resends on the server.
 * Never blocks. When the outbox is over its bound the oldest messages are dropped
 * (counted). Returns 0, -ENOMEM, or -EMSGSIZE when len alone exceeds the bound. */
int tsn_publish(struct tsn *n, const char *subject, const void *data, size_t len,
		const char *msg_id);
/* A producer's batch: its Nats-Msg-Id "<producer>-<seq>" lets the server drop resends. */
int tsn_publish_seq(struct tsn *n, const char *subject, const void *data, size_t len,
		    uint64_t producer_id, uint64_t seq);
/* The most data one tsn_publish may carry for the server to take it: its max_payload
 * (before the first connection, the server's default of 1 MiB) less room for the
 * headers tsn_publish adds. */
size_t tsn_max_payload(struct tsn *n);
/* Hands queued messages to nats.c while fewer than max_inflight await an ack. */
void tsn_pump(struct tsn *n);
/* Pumps until the outbox is empty and every publish is acknowledged, or timeout.
 * Returns 0 or -ETIMEDOUT. */
int tsn_flush(struct tsn *n, int64_t timeout_ms);
void tsn_get_stats(struct tsn *n, struct tsn_stats *out);
/* Creates or updates the TRAINSCOPE stream. Returns 0 or -EAGAIN when not reachable. */
int tsn_ensure_stream(struct tsn *n);

/* The replicas asked of the stream (1 or more), for the key-value buckets beside it. */
int tsn_stream_replicas(const struct tsn *n);

/* The JetStream context, for key-value use (natskv.h), and into *gen the connection's
 * generation: it grows each time a connection nats.c gave up is made anew, whose new
 * context replaces the old (a handle made on the old one must be made again). */
jsCtx *tsn_jsctx(struct tsn *n, uint64_t *gen);

/* Durable pull consumer on the TRAINSCOPE stream, resuming where it stands (made from the
 * stream's start when missing). Acknowledging a message acknowledges those before it. */
struct tsn_sub;
int tsn_subscribe(struct tsn *n, const char *durable, const char *filter, struct tsn_sub **out);
/* The durable consumer made afresh to deliver the messages after stream sequence seq
 * (0: the whole stream): a replay from a snapshot. */
int tsn_subscribe_after(struct tsn *n, const char *durable, const char *filter, uint64_t seq,
			struct tsn_sub **out);
/* The stream sequence of the last message fetched (or the replay's start). */
uint64_t tsn_sub_last_seq(const struct tsn_sub *s);
/* Fetches up to batch messages, in the order the consumer delivered them and with none
 * missing: deliveries that never arrived (the server the connection used died) are
 * followed by none of their successors; the consumer is made again after the last one
 * returned, so they come next. Returns the count (0 on timeout) or -EAGAIN while the
 * server is away. Messages are acknowledged with natsMsg_Ack by the caller. */
int tsn_fetch(struct tsn_sub *s, natsMsgList *list, int batch, int64_t timeout_ms);
void tsn_unsubscribe(struct tsn_sub *s);
/* Whether the durable consumer still exists: 0 yes, 1 it had vanished and was made again
 * (resuming after the last message fetched), -EAGAIN when that cannot be told or done. */
int tsn_sub_check(struct tsn_sub *s);
/* Removes a durable consumer (one made for a single read). */
int tsn_delete_consumer(struct tsn *n, const char *durable);

/* A request-reply service on subject in a queue group: cb's answer (malloc'ed; NULL for
 * none) goes to each request's reply subject. cb runs on a nats.c thread. */
typedef void *(*tsn_serve_cb)(const void *data, size_t len, size_t *answer_len, void *closure);
struct tsn_core_sub;
int tsn_serve(struct tsn *n, const char *subject, const char *queue, tsn_serve_cb cb,
	      void *closure, struct tsn_core_sub **out);

/* Plain (non-JetStream) subscription: cb runs on a nats.c thread. */
typedef void (*tsn_msg_cb)(const char *subject, const void *data, size_t len, void *closure);
struct tsn_core_sub;
int tsn_subscribe_core(struct tsn *n, const char *subject, tsn_msg_cb cb, void *closure,
		       struct tsn_core_sub **out);
/* Unsubscribes s and returns once none of its callbacks runs any more (5 s at most, said
 * otherwise), so that their closure may be freed; never from one of them. */
void tsn_unsubscribe_core(struct tsn_core_sub *s);
/* Messages that arrived for s and wait for its callback (0 when it cannot be told): a
 * service's backlog. */
int tsn_core_sub_pending(struct tsn_core_sub *s);

/* The wait before reconnect round attempts (1, 2, ...): doubling from 250 ms to 8 s,
 * drawn between its half and its whole from *rng (advanced). Public so that a client that
 * is not a tsn (bench/connstorm.c's thousands of raw sockets) backs off as every one
 * does. */
int64_t tsn_backoff_ms(uint64_t *rng, int attempts);

#endif
