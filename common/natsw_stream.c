// SPDX-License-Identifier: Apache-2.0
/* The TRAINSCOPE stream as its manager (the analyzer) keeps it, through JetStream's JSON
 * API: nats.c 3.4 has no field for a stream's subject transform, which partitions the
 * stream by job. */
#include "natsw_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define API "$JS.API.STREAM."
#define TRANSFORM_SRC "ts.v1.*.*.*.*"

void tsn_partition_dest(char *out, size_t n, int partitions)
{
	snprintf(out, n,
		 "ts.v1.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{wildcard(4)}}"
		 ".{{partition(%d,1,2)}}", partitions);
}

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
		tsn_partition_dest(dest, sizeof(dest), o->stream_partitions);
		json_object_set_new(c, "subject_transform",
				    json_pack("{s:s, s:s}", "src", TRANSFORM_SRC, "dest", dest));
	}
	return c;
}

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

static bool same_int(json_t *have, json_t *want, const char *key)
{
	return json_integer_value(json_object_get(have, key)) ==
	       json_integer_value(json_object_get(want, key));
}

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

int tsn_stream_apply(natsConnection *nc, const struct tsn_opts *o, char *err, size_t len)
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
