// SPDX-License-Identifier: Apache-2.0
/* The key-value bucket in memory (fakekv.h): natskv.h's functions over a list of keys.
 * Parts are small here, so that a test's objects span several. */
#include "fakekv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PART 4096

struct entry {
	char key[256];
	void *data;
	size_t len;
};

struct tsn_kv {
	struct entry *e;
	int n, cap;
	int fail_after;
};

struct tsn_kv *fakekv_new(void)
{
	struct tsn_kv *kv = calloc(1, sizeof(*kv));

	if (kv)
		kv->fail_after = -1;
	return kv;
}

void fakekv_free(struct tsn_kv *kv)
{
	for (int i = 0; kv && i < kv->n; i++)
		free(kv->e[i].data);
	if (kv)
		free(kv->e);
	free(kv);
}

void fakekv_fail_after(struct tsn_kv *kv, int n) { kv->fail_after = n; }

/* No server here: a test makes its bucket with fakekv_new. */
int tsn_kv_open(struct tsn *n, const char *bucket, struct tsn_kv **out, char *why, size_t whylen)
{
	(void)n, (void)bucket, (void)out;
	snprintf(why, whylen, "fakekv: no server");
	return -EAGAIN;
}

void tsn_kv_close(struct tsn_kv *kv) { (void)kv; }

static struct entry *find(struct tsn_kv *kv, const char *key)
{
	for (int i = 0; i < kv->n; i++)
		if (!strcmp(kv->e[i].key, key))
			return &kv->e[i];
	return NULL;
}

static int put(struct tsn_kv *kv, const char *key, const void *data, size_t len, char *why,
	       size_t whylen)
{
	struct entry *e = find(kv, key);
	void *copy = malloc(len ? len : 1);

	if (!kv->fail_after || !copy) {
		snprintf(why, whylen, "fakekv: put refused");
		free(copy);
		return -EAGAIN;
	}
	kv->fail_after -= kv->fail_after > 0;
	if (!e) {
		if (kv->n == kv->cap) {
			kv->cap = kv->cap ? 2 * kv->cap : 64;
			kv->e = realloc(kv->e, (size_t)kv->cap * sizeof(*kv->e));
		}
		e = &kv->e[kv->n++];
		snprintf(e->key, sizeof(e->key), "%s", key);
	} else {
		free(e->data);
	}
	memcpy(copy, data, len);
	e->data = copy;
	e->len = len;
	return 0;
}

/* Subject wildcards: * one token, > the rest. */
static bool match(const char *pat, const char *key)
{
	while (*pat && *key) {
		if (pat[0] == '>')
			return true;
		if (pat[0] == '*') {
			pat++;
			key += strcspn(key, ".");
		} else if (*pat++ != *key++) {
			return false;
		}
	}
	return !*pat && !*key;
}

int tsn_kv_put_parts(struct tsn_kv *kv, const char *name, const void *data, size_t len,
		     char *why, size_t whylen)
{
	char key[300];

	for (size_t i = 0; i * PART < len; i++) {
		snprintf(key, sizeof(key), "%s.%zu", name, i);
		if (put(kv, key, (const char *)data + i * PART, len - i * PART < PART ? len - i * PART : PART,
			why, whylen))
			return -EAGAIN;
	}
	return 0;
}

int tsn_kv_get_parts(struct tsn_kv *kv, const char *name, void *to, size_t len)
{
	char key[300];

	for (size_t i = 0; i * PART < len; i++) {
		size_t n = len - i * PART < PART ? len - i * PART : PART;
		snprintf(key, sizeof(key), "%s.%zu", name, i);
		struct entry *e = find(kv, key);
		if (!e || e->len != n)
			return -EBADMSG;
		memcpy((char *)to + i * PART, e->data, n);
	}
	return 0;
}

/* A blob: its parts under <key>.0, then its length under <key>.head. */
int tsn_kv_put_blob(struct tsn_kv *kv, const char *key, const void *data, size_t len, char *why,
		    size_t whylen)
{
	char name[300];

	snprintf(name, sizeof(name), "%s.0", key);
	if (tsn_kv_put_parts(kv, name, data, len, why, whylen))
		return -EAGAIN;
	snprintf(name, sizeof(name), "%s.head", key);
	return put(kv, name, &len, sizeof(len), why, whylen);
}

int tsn_kv_get_blob(struct tsn_kv *kv, const char *key, void **data, size_t *len)
{
	char name[300];
	struct entry *h;
	int err;

	snprintf(name, sizeof(name), "%s.head", key);
	if (!(h = find(kv, name)))
		return -ENOENT;
	memcpy(len, h->data, sizeof(*len));
	*data = malloc(*len ? *len : 1);
	snprintf(name, sizeof(name), "%s.0", key);
	if ((err = tsn_kv_get_parts(kv, name, *data, *len)))
		free(*data);
	return err;
}

int tsn_kv_purge(struct tsn_kv *kv, const char *pattern, char *why, size_t whylen)
{
	(void)why, (void)whylen;
	for (int i = 0; i < kv->n;) {
		if (!match(pattern, kv->e[i].key)) {
			i++;
			continue;
		}
		free(kv->e[i].data);
		kv->e[i] = kv->e[--kv->n];
	}
	return 0;
}

int tsn_kv_keys(struct tsn_kv *kv, const char *pattern, void (*fn)(void *ctx, const char *key),
		void *ctx)
{
	for (int i = 0; i < kv->n; i++)
		if (match(pattern, kv->e[i].key))
			fn(ctx, kv->e[i].key);
	return 0;
}

int fakekv_count(struct tsn_kv *kv, const char *pattern, size_t *bytes)
{
	int n = 0;

	*bytes = 0;
	for (int i = 0; i < kv->n; i++)
		if (match(pattern, kv->e[i].key)) {
			n++;
			*bytes += kv->e[i].len;
		}
	return n;
}

int fakekv_damage(struct tsn_kv *kv, const char *key, size_t at)
{
	struct entry *e = find(kv, key);

	if (!e || at >= e->len)
		return -ENOENT;
	((unsigned char *)e->data)[at] ^= 1;
	return 0;
}
