// SPDX-License-Identifier: Apache-2.0
/* The TRAINSCOPE stream: made where it is missing by any client, and kept to its settings
 * by its manager (the analyzer) through JetStream's JSON API: nats.c 3.4 has no field
 * for a stream's subject transform, which partitions the stream by job. */
#include "natsw_impl.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define API "$JS.API.STREAM."
#define TRANSFORM_SRC "ts.v1.*.*.*.*"

/* The subject transform's destination for n partitions: a job's subjects get the
 * partition of its namespace and job as a seventh token. */
static void partition_dest(char *out, size_t n, int partitions)
{
	snprintf(out, n,
		 "ts.v1.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{wildcard(4)}}"
		 ".{{partition(%d,1,2)}}", partitions);
}

/* The stream's configuration as o asks it, in JetStream's JSON; NULL without memory. */
static json_t *wanted(const struct tsn_opts *o)
{
	char dest[160];
	json_t *c = json_pack("{s:s, s:[s], s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:i, s:I}",
			      "name", TSN_STREAM, "subjects", TSN_SUBJECTS, "retention", "limits",
			      "storage", "file", "max_consumers", (json_int_t)-1,
			      "max_msgs", (json_int_t)-1, "max_msgs_per_subject", (json_int_t)-1,
			      "max_msg_size", (json_int_t)-1, "max_bytes", (json_int_t)o->stream_max_bytes,
			      "max_age", (json_int_t)(o->stream_max_age_s * 1000000000ll), "discard",
			      o->stream_discard_new ? "new" : "old", "num_replicas",
			      o->stream_replicas, "duplicate_window",
			      (json_int_t)120000000000ll);

	if (c && o->stream_partitions > 1) {
		partition_dest(dest, sizeof(dest), o->stream_partitions);
		json_object_set_new(c, "subject_transform",
				    json_pack("{s:s, s:s}", "src", TRANSFORM_SRC, "dest", dest));
	}
	return c;
}

/* v's text, or dflt where v is not a string. */
static const char *str_or(json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

/* A JetStream API call: 0 with the answer, -EAGAIN (no answer), -ENOENT (no such stream),
 * or -EINVAL with the server's description in err. */
static int call(natsConnection *nc, const char *op, json_t *body, json_t **answer, char *err,
		size_t len)
{
	char subject[96], *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	natsMsg *reply = NULL;
	json_t *a, *e;
	natsStatus s;

	snprintf(subject, sizeof(subject), API "%s." TSN_STREAM, op);
	s = natsConnection_RequestString(&reply, nc, subject, text ? text : "", 5000);
	free(text);
	if (s != NATS_OK) {
		snprintf(err, len, "%s: %s", subject, natsStatus_GetText(s));
		return -EAGAIN;
	}
	a = json_loadb(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply), 0, NULL);
	natsMsg_Destroy(reply);
	if (!a) {
		snprintf(err, len, "%s: an answer that is not JSON", subject);
		return -EINVAL;
	}
	if ((e = json_object_get(a, "error"))) {
		int code = (int)json_integer_value(json_object_get(e, "err_code"));
		snprintf(err, len, "%s (error %d)",
			 str_or(json_object_get(e, "description"), "refused"), code);
		json_decref(a);
		return code == 10059 ? -ENOENT : -EINVAL; /* JSStreamNotFoundErr */
	}
	*answer = a;
	return 0;
}

/* Whether both configurations give key the same whole number. */
static bool same_int(json_t *have, json_t *want, const char *key)
{
	return json_integer_value(json_object_get(have, key)) ==
	       json_integer_value(json_object_get(want, key));
}

/* The destination of cfg's subject transform; NULL without one. */
static const char *dest_of(json_t *cfg)
{
	return json_string_value(json_object_get(json_object_get(cfg, "subject_transform"), "dest"));
}

/* Whether the stream's settings are those wanted (what the manager sets, nothing more). */
static bool settled(json_t *have, json_t *want)
{
	const char *hd = dest_of(have), *wd = dest_of(want);

	return same_int(have, want, "max_bytes") && same_int(have, want, "max_age") &&
	       same_int(have, want, "num_replicas") &&
	       !strcmp(str_or(json_object_get(have, "discard"), "old"),
		       str_or(json_object_get(want, "discard"), "old")) &&
	       (hd && wd ? !strcmp(hd, wd) : !hd && !wd);
}

/* Creates the TRAINSCOPE stream, or updates it where its limits, replicas, discard policy
 * or partitions differ from o's. Returns 0; -EAGAIN when JetStream does not answer;
 * -EINVAL when it refuses (err says why); -ENOTSUP when it keeps other settings (a server
 * older than 2.10 has no subject transform: err says so); -ENOMEM. */
static int stream_apply(natsConnection *nc, const struct tsn_opts *o, char *err, size_t len)
{
	json_t *want = wanted(o), *info = NULL;
	int rc;

	if (!want)
		return -ENOMEM;
	rc = call(nc, "INFO", NULL, &info, err, len);
	if (!rc && o->stream_partitions < 0) { /* partitions left as they are */
		json_t *t = json_object_get(json_object_get(info, "config"), "subject_transform");
		if (t)
			json_object_set(want, "subject_transform", t);
	}
	if (rc == -ENOENT)
		rc = call(nc, "CREATE", want, &info, err, len);
	else if (!rc && !settled(json_object_get(info, "config"), want)) {
		json_decref(info);
		info = NULL;
		rc = call(nc, "UPDATE", want, &info, err, len);
	}
	if (!rc && !settled(json_object_get(info, "config"), want)) {
		if (o->stream_partitions > 1 && !dest_of(json_object_get(info, "config")))
			snprintf(err, len, "the server keeps no subject transform on streams, which "
				 "%d partitions need: nats-server 2.10 or later", o->stream_partitions);
		else
			snprintf(err, len, "the server kept other settings than those asked");
		rc = -ENOTSUP;
	}
	json_decref(info);
	json_decref(want);
	return rc;
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
	int rc = stream_apply(n->nc, &n->opts, why, sizeof(why));
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

/* Makes the stream where it is missing, or (its manager) keeps it to opts; the outbox
 * publishes once it answered (natsw.h). */
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
