// SPDX-License-Identifier: Apache-2.0
#include "natskv.h"
#include "hash.h"
#include "tsclock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (256u << 10) /* well under the server's default max_payload of 1 MiB */

struct tsn_kv {
	struct tsn *n;
	kvStore *kv;
	jsCtx *js;           /* purges go to the bucket's stream */
	uint64_t gen;        /* the connection's generation kv and js were made on */
	char bucket[64], stream[80], prefix[80]; /* KV_<bucket>, $KV.<bucket>. */
};

static void say(char *why, size_t n, natsStatus s)
{
	const char *last = nats_GetLastError(NULL);

	if (why && n)
		snprintf(why, n, "%s%s%s", natsStatus_GetText(s), last && *last ? ": " : "",
			 last ? last : "");
}

/* Binds k->kv to its bucket on n's current context, made when missing. 0 or -EAGAIN. */
static int bind(struct tsn_kv *k, char *why, size_t whylen)
{
	kvStore *kv = NULL;
	kvConfig cfg;
	uint64_t gen;
	jsCtx *js = tsn_jsctx(k->n, &gen);
	natsStatus s = js_KeyValue(&kv, js, k->bucket);

	if (s == NATS_NOT_FOUND) {
		kvConfig_Init(&cfg);
		cfg.Bucket = k->bucket;
		cfg.Description = "trainscope: analyzer state snapshots";
		cfg.History = 1;
		cfg.MaxValueSize = (int32_t)CHUNK;
		cfg.StorageType = js_FileStorage;
		cfg.Replicas = tsn_stream_replicas(k->n); /* survives a server as the stream does */
		s = js_CreateKeyValue(&kv, js, &cfg);
	}
	if (s != NATS_OK) {
		say(why, whylen, s);
		return -EAGAIN;
	}
	kvStore_Destroy(k->kv);
	k->kv = kv, k->js = js, k->gen = gen;
	return 0;
}

/* The handle on the connection now: one made on a connection given up and made anew
 * since (tsn_revive) is made again, or every call would fail until a restart. */
static int fresh(struct tsn_kv *k, char *why, size_t whylen)
{
	uint64_t gen;

	tsn_jsctx(k->n, &gen);
	return gen == k->gen ? 0 : bind(k, why, whylen);
}

int tsn_kv_open(struct tsn *n, const char *bucket, struct tsn_kv **out, char *why, size_t whylen)
{
	struct tsn_kv *k = calloc(1, sizeof(*k));
	int err;

	if (!k)
		return -ENOMEM;
	k->n = n;
	snprintf(k->bucket, sizeof(k->bucket), "%s", bucket);
	if ((err = bind(k, why, whylen))) {
		free(k);
		return err;
	}
	snprintf(k->stream, sizeof(k->stream), "KV_%s", bucket);
	snprintf(k->prefix, sizeof(k->prefix), "$KV.%s.", bucket);
	*out = k;
	return 0;
}

void tsn_kv_close(struct tsn_kv *k)
{
	if (!k)
		return;
	kvStore_Destroy(k->kv);
	free(k);
}

struct head {
	int slot;
	size_t chunks, bytes;
	uint64_t hash;
};

static int get_head(struct tsn_kv *k, const char *key, struct head *h)
{
	char name[256], text[160];
	kvEntry *e = NULL;
	natsStatus s;
	int len;

	snprintf(name, sizeof(name), "%s.head", key);
	s = kvStore_Get(&e, k->kv, name);
	if (s == NATS_NOT_FOUND)
		return -ENOENT;
	if (s != NATS_OK)
		return -EAGAIN;
	len = kvEntry_ValueLen(e);
	snprintf(text, sizeof(text), "%.*s", len < 0 ? 0 : len, (const char *)kvEntry_Value(e));
	kvEntry_Destroy(e);
	if (sscanf(text, "v1 slot=%d chunks=%zu bytes=%zu fnv=%" SCNx64, &h->slot, &h->chunks,
		   &h->bytes, &h->hash) != 4 || (h->slot != 0 && h->slot != 1) ||
	    h->chunks != (h->bytes + CHUNK - 1) / CHUNK)
		return -EBADMSG;
	return 0;
}

int tsn_kv_put_parts(struct tsn_kv *k, const char *name, const void *data, size_t len,
		     char *why, size_t whylen)
{
	natsStatus s = NATS_OK;
	char part[256];

	if (fresh(k, why, whylen))
		return -EAGAIN;
	for (size_t i = 0; i * CHUNK < len && s == NATS_OK; i++) {
		size_t n = len - i * CHUNK < CHUNK ? len - i * CHUNK : CHUNK;
		snprintf(part, sizeof(part), "%s.%zu", name, i);
		s = kvStore_Put(NULL, k->kv, part, (const char *)data + i * CHUNK, (int)n);
	}
	if (s != NATS_OK) {
		say(why, whylen, s);
		return -EAGAIN;
	}
	return 0;
}

int tsn_kv_put_blob(struct tsn_kv *k, const char *key, const void *data, size_t len, char *why,
		    size_t whylen)
{
	struct head h = { 0 };
	char name[256], text[160];
	natsStatus s;

	if (fresh(k, why, whylen))
		return -EAGAIN;
	/* the slot the head does not name now: the blob it names stays whole meanwhile */
	int slot = get_head(k, key, &h) == 0 ? !h.slot : 0;

	snprintf(name, sizeof(name), "%s.%d", key, slot);
	if (tsn_kv_put_parts(k, name, data, len, why, whylen))
		return -EAGAIN;
	snprintf(name, sizeof(name), "%s.head", key);
	snprintf(text, sizeof(text), "v1 slot=%d chunks=%zu bytes=%zu fnv=%016" PRIx64, slot,
		 (len + CHUNK - 1) / CHUNK, len, ts_fnv1a(data, len));
	s = kvStore_PutString(NULL, k->kv, name, text);
	if (s != NATS_OK) {
		say(why, whylen, s);
		return -EAGAIN;
	}
	return 0;
}

static int get_chunk(struct tsn_kv *k, const char *name, size_t i, char *to, size_t n)
{
	char part[256];
	kvEntry *e = NULL;
	natsStatus s;
	int rc = 0;

	snprintf(part, sizeof(part), "%s.%zu", name, i);
	s = kvStore_Get(&e, k->kv, part);
	if (s == NATS_NOT_FOUND)
		return -EBADMSG;
	if (s != NATS_OK)
		return -EAGAIN;
	if ((size_t)kvEntry_ValueLen(e) == n)
		memcpy(to, kvEntry_Value(e), n);
	else
		rc = -EBADMSG;
	kvEntry_Destroy(e);
	return rc;
}

int tsn_kv_get_parts(struct tsn_kv *k, const char *name, void *to, size_t len)
{
	int err = 0;

	if (fresh(k, NULL, 0))
		return -EAGAIN;
	for (size_t i = 0; i * CHUNK < len && !err; i++) {
		size_t n = len - i * CHUNK < CHUNK ? len - i * CHUNK : CHUNK;
		err = get_chunk(k, name, i, (char *)to + i * CHUNK, n);
	}
	return err;
}

int tsn_kv_get_blob(struct tsn_kv *k, const char *key, void **data, size_t *len)
{
	char name[256];
	struct head h;
	char *buf;
	int err = fresh(k, NULL, 0) ? -EAGAIN : get_head(k, key, &h);

	if (err)
		return err;
	if (!(buf = malloc(h.bytes ? h.bytes : 1)))
		return -ENOMEM;
	snprintf(name, sizeof(name), "%s.%d", key, h.slot);
	err = tsn_kv_get_parts(k, name, buf, h.bytes);
	if (!err && ts_fnv1a(buf, h.bytes) != h.hash)
		err = -EBADMSG;
	if (err) {
		free(buf);
		return err;
	}
	*data = buf;
	*len = h.bytes;
	return 0;
}

int tsn_kv_purge(struct tsn_kv *k, const char *pattern, char *why, size_t whylen)
{
	char subject[384];
	jsErrCode jerr = 0;
	jsOptions o;
	natsStatus s;

	if (fresh(k, why, whylen))
		return -EAGAIN;
	/* a purge of the stream's subjects: a key's purge (kvStore_Purge) would leave its
	 * marker behind, one for every part of every snapshot ever dropped */
	snprintf(subject, sizeof(subject), "%s%s", k->prefix, pattern);
	jsOptions_Init(&o);
	o.Stream.Purge.Subject = subject;
	s = js_PurgeStream(k->js, k->stream, &o, &jerr);
	if (s != NATS_OK) {
		say(why, whylen, s);
		return -EAGAIN;
	}
	return 0;
}

int tsn_kv_keys(struct tsn_kv *k, const char *pattern, void (*fn)(void *ctx, const char *key),
		void *ctx)
{
	kvWatcher *w = NULL;
	kvWatchOptions o;
	kvEntry *e = NULL;
	natsStatus s;

	if (fresh(k, NULL, 0))
		return -EAGAIN;
	kvWatchOptions_Init(&o);
	o.MetaOnly = true;
	o.IgnoreDeletes = true;
	s = kvStore_Watch(&w, k->kv, pattern, &o);
	/* a NULL entry ends the keys stored now */
	while (s == NATS_OK && (s = kvWatcher_Next(&e, w, 10000)) == NATS_OK && e) {
		fn(ctx, kvEntry_Key(e));
		kvEntry_Destroy(e);
	}
	if (w)
		kvWatcher_Destroy(w);
	return s == NATS_OK ? 0 : -EAGAIN;
}

/* The lease under name, read: its owner text, when it was taken (unix ms, from its
 * value "<owner>\n<ms>") and its revision. Returns kvStore_Get's status (NATS_OK: read;
 * NATS_NOT_FOUND: none). */
static natsStatus lease_read(struct tsn_kv *k, const char *name, char *owner, size_t n,
			     uint64_t *taken, uint64_t *rev)
{
	kvEntry *e = NULL;
	natsStatus s = kvStore_Get(&e, k->kv, name);

	if (s != NATS_OK)
		return s;
	const char *v = kvEntry_ValueString(e), *nl = strchr(v, '\n');
	snprintf(owner, n, "%.*s", (int)(nl ? (size_t)(nl - v) : strlen(v)), v);
	*taken = nl ? strtoull(nl + 1, NULL, 10) : 0;
	*rev = kvEntry_Revision(e);
	kvEntry_Destroy(e);
	return NATS_OK;
}

int tsn_kv_lease(struct tsn_kv *k, const char *key, const char *owner, double ttl_s,
		 char *holder, size_t holdlen, double *age_s, char *why, size_t whylen)
{
	char name[256], value[320], other[256] = "";
	uint64_t now = ts_real_ns() / 1000000, taken = 0, rev = 0, newrev;
	natsStatus s;

	if (fresh(k, why, whylen))
		return -EAGAIN;
	snprintf(name, sizeof(name), "%s.lease", key);
	snprintf(value, sizeof(value), "%s\n%" PRIu64, owner, now);
	s = lease_read(k, name, other, sizeof(other), &taken, &rev);
	if (s != NATS_OK && s != NATS_NOT_FOUND) {
		say(why, whylen, s);
		return -EAGAIN;
	}
	double age = taken && now > taken ? (double)(now - taken) / 1e3 : 0;
	if (rev && strcmp(other, owner) && age < ttl_s) {
		snprintf(holder, holdlen, "%s", other);
		*age_s = age;
		return 1;
	}
	s = rev ? kvStore_Update(&newrev, k->kv, name, value, (int)strlen(value), rev)
		: kvStore_Create(&newrev, k->kv, name, value, (int)strlen(value));
	if (s == NATS_OK)
		return 0;
	const char *last = nats_GetLastError(NULL);
	say(why, whylen, s);
	if (!last || !strstr(last, "wrong last sequence"))
		return -EAGAIN;
	/* another taker won the race between the read and the write */
	snprintf(holder, holdlen, "another analyzer (it took the lease just now)");
	*age_s = 0;
	return 1;
}

void tsn_kv_release(struct tsn_kv *k, const char *key, const char *owner)
{
	char name[256], other[256];
	uint64_t taken, rev;

	if (fresh(k, NULL, 0))
		return;
	snprintf(name, sizeof(name), "%s.lease", key);
	if (lease_read(k, name, other, sizeof(other), &taken, &rev) == NATS_OK &&
	    !strcmp(other, owner))
		kvStore_Delete(k->kv, name);
}
