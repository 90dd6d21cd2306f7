// SPDX-License-Identifier: Apache-2.0
/* A save of the state in parts (snapstate.h): every part walked against its shadow under
 * the core lock; then, outside it, an object for each part that changed, the manifest,
 * and the purge of what the manifest no longer names. */
#include "snapstate_impl.h"
#include "hash.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_KEPT (4u << 20)

int ts_snapstate_new(struct ts_snapstate **out, struct tsn_kv *kv, const char *key)
{
	struct ts_snapstate *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	st->kv = kv;
	snprintf(st->key, sizeof(st->key), "%s", key);
	st->next_gen = 1;
	st->legacy = true; /* purging a blob that is not there costs a request, once */
	*out = st;
	return 0;
}

static void part_free(struct ts_snappart *p)
{
	ts_image_free(&p->shadow);
	ts_buf_free(&p->pending);
	free(p);
}

void ts_snapstate_drop_parts(struct ts_snapstate *st)
{
	for (int i = 0; i < st->nparts; i++)
		part_free(st->parts[i]);
	st->nparts = 0;
}

void ts_snapstate_free(struct ts_snapstate *st)
{
	if (!st)
		return;
	ts_snapstate_drop_parts(st);
	free(st->parts);
	free(st->dead);
	ts_buf_free(&st->buf);
	free(st);
}

void ts_snapstate_name(const struct ts_snapstate *st, uint64_t gen, char *out, size_t n)
{
	snprintf(out, n, "%s.o.%" PRIu64, st->key, gen);
}

static bool is_part(const struct ts_snappart *p, bool producers, const char *ns, const char *name)
{
	return p->id.producers == producers && !strcmp(p->id.ns, ns) && !strcmp(p->id.name, name);
}

static struct ts_snappart *new_part(struct ts_snapstate *st, bool producers, const char *ns,
				    const char *name)
{
	struct ts_snappart *p;

	if (st->nparts == st->capparts) {
		int cap = st->capparts ? 2 * st->capparts : 16;
		struct ts_snappart **t = realloc(st->parts, (size_t)cap * sizeof(*t));
		if (!t)
			return NULL;
		st->parts = t;
		st->capparts = cap;
	}
	if (!(p = calloc(1, sizeof(*p))))
		return NULL;
	p->id.producers = producers;
	snprintf(p->id.ns, sizeof(p->id.ns), "%s", ns);
	snprintf(p->id.name, sizeof(p->id.name), "%s", name);
	p->need_base = true;
	st->parts[st->nparts++] = p;
	return p;
}

struct ts_snappart *ts_snapstate_part(struct ts_snapstate *st, bool producers, const char *ns,
				      const char *name, int hint)
{
	if (hint >= 0 && hint < st->nparts && is_part(st->parts[hint], producers, ns, name))
		return st->parts[hint];
	for (int i = 0; i < st->nparts; i++)
		if (is_part(st->parts[i], producers, ns, name))
			return st->parts[i];
	return new_part(st, producers, ns, name);
}

int ts_snapstate_dead(struct ts_snapstate *st, uint64_t gen)
{
	if (st->ndead == st->capdead) {
		size_t cap = st->capdead ? 2 * st->capdead : 64;
		uint64_t *t = realloc(st->dead, cap * sizeof(*t));
		if (!t)
			return -ENOMEM; /* left in the store: the next start's listing finds it */
		st->dead = t;
		st->capdead = cap;
	}
	st->dead[st->ndead++] = gen;
	return 0;
}

void ts_snapstate_bury(struct ts_snapstate *st, const struct ts_snappart *p)
{
	if (p->id.base.gen)
		ts_snapstate_dead(st, p->id.base.gen);
	for (uint32_t i = 0; i < p->id.ndelta; i++)
		ts_snapstate_dead(st, p->delta[i].gen);
}

void ts_snapstate_purge(struct ts_snapstate *st)
{
	char name[192], why[256];
	size_t keep = 0;

	for (size_t i = 0; i < st->ndead; i++) {
		ts_snapstate_name(st, st->dead[i], name, sizeof(name) - 2);
		strcat(name, ".>");
		if (tsn_kv_purge(st->kv, name, why, sizeof(why)))
			st->dead[keep++] = st->dead[i]; /* tried again after the next save */
	}
	st->ndead = keep;
}

static int save_producers(void *a, struct ts_snap *s) { return ts_analyzer_producers_io(a, s); }
static int save_job(void *j, struct ts_snap *s) { return ts_job_save(j, s); }

/* The part walked against its shadow: what changed joins its pending segments. */
static int walk(struct ts_snappart *p, int (*save)(void *, struct ts_snap *), void *obj)
{
	struct ts_snapdiff d;
	struct ts_snap s;

	ts_snapdiff_begin(&s, &d, &p->shadow, &p->pending);
	save(obj, &s);
	ts_snapdiff_end(&s);
	p->seen = true;
	/* a base is made of the shadow: segments would only take room, as would those of
	 * saves failing for long */
	if (s.err || p->need_base || p->pending.len > p->shadow.len) {
		p->pending.len = 0;
		p->pending.oom = 0;
		p->need_base = true;
	}
	return s.err;
}

static int walk_all(struct ts_snapstate *st, struct ts_analyzer *a)
{
	struct ts_snappart *p;
	int err;

	for (int i = 0; i < st->nparts; i++)
		st->parts[i]->seen = false;
	if (!(p = ts_snapstate_part(st, true, "", "", 0)))
		return -ENOMEM;
	if ((err = walk(p, save_producers, a)))
		return err;
	for (int i = 0; i < ts_analyzer_njobs(a); i++) {
		struct ts_job *j = ts_analyzer_job_at(a, i);
		if (!(p = ts_snapstate_part(st, false, ts_job_ns(j), ts_job_name(j), i + 1)))
			return -ENOMEM;
		if ((err = walk(p, save_job, j)))
			return err;
	}
	return 0;
}

static uint64_t weight(uint64_t len)
{
	return len > TS_SNAP_DELTA_MIN ? len : TS_SNAP_DELTA_MIN;
}

void ts_snapstate_weigh(struct ts_snappart *p)
{
	p->delta_len = 0;
	for (uint32_t k = 0; k < p->id.ndelta; k++)
		p->delta_len += weight(p->delta[k].len);
}

/* A base once the deltas would weigh more than half of one: a restore reads at most
 * about one and a half times the state. */
static bool wants_base(const struct ts_snappart *p)
{
	return p->need_base || !p->id.base.gen || p->id.ndelta == TS_SNAP_MAX_DELTAS ||
	       p->delta_len + weight(p->pending.len) > p->id.base.len / 2;
}

/* The part's object, when it changed: its delta or a new base. */
static int store(struct ts_snapstate *st, struct ts_snappart *p, size_t *written, char *why,
		 size_t whylen)
{
	const struct ts_buf *data = &p->pending;
	char name[160];

	if (!p->need_base && !p->pending.len)
		return 0;
	p->wrote_base = wants_base(p);
	if (p->wrote_base) {
		st->buf.len = 0;
		if (ts_snapdiff_base(&p->shadow, &st->buf)) {
			st->buf.oom = 0;
			return -ENOMEM;
		}
		data = &st->buf;
	}
	p->wrote = (struct ts_snapref){ st->next_gen++, data->len, ts_fnv1a(data->data, data->len) };
	ts_snapstate_name(st, p->wrote.gen, name, sizeof(name));
	if (tsn_kv_put_parts(st->kv, name, data->data, data->len, why, whylen))
		return -EAGAIN;
	*written += data->len;
	return 0;
}

/* The part's base and deltas once this save's object is stored: into id and delta. */
static void chain(const struct ts_snappart *p, struct ts_snapman_part *id, struct ts_snapref *delta)
{
	*id = p->id;
	memmove(delta, p->delta, sizeof(p->delta));
	if (p->wrote.gen && p->wrote_base) {
		id->base = p->wrote;
		id->ndelta = 0;
	} else if (p->wrote.gen) {
		delta[id->ndelta++] = p->wrote;
	}
}

static int write_manifest(struct ts_snapstate *st, uint64_t seq, size_t *written, char *why,
			  size_t whylen)
{
	struct ts_snapman_head h = { TS_SNAP_MANIFEST_MAGIC, ts_analyzer_snap_layout(), seq,
				     st->next_gen, 0, 0 };
	struct ts_snap s = { .out = &st->buf };
	struct ts_snapref delta[TS_SNAP_MAX_DELTAS];
	struct ts_snapman_part id;
	char name[160];

	for (int i = 0; i < st->nparts; i++)
		h.nparts += st->parts[i]->seen;
	st->buf.len = 0;
	TS_SNAP_VAR(&s, h);
	for (int i = 0; i < st->nparts; i++) {
		if (!st->parts[i]->seen)
			continue;
		chain(st->parts[i], &id, delta);
		TS_SNAP_VAR(&s, id);
		TS_SNAP_ARR(&s, delta, id.ndelta);
	}
	if (s.err) {
		st->buf.oom = 0;
		return -ENOMEM;
	}
	snprintf(name, sizeof(name), "%s.m", st->key);
	if (tsn_kv_put_blob(st->kv, name, st->buf.data, st->buf.len, why, whylen))
		return -EAGAIN;
	*written += st->buf.len;
	return 0;
}

/* The manifest stored: each part's chain is what it names; objects it no longer names,
 * and parts whose job went, are buried. */
static void commit(struct ts_snapstate *st)
{
	for (int i = 0; i < st->nparts;) {
		struct ts_snappart *p = st->parts[i];
		if (!p->seen) {
			ts_snapstate_bury(st, p);
			part_free(p);
			st->parts[i] = st->parts[--st->nparts];
			continue;
		}
		if (p->wrote.gen && p->wrote_base)
			ts_snapstate_bury(st, p);
		chain(p, &p->id, p->delta);
		ts_snapstate_weigh(p);
		p->pending.len = 0;
		p->need_base = false;
		p->wrote.gen = 0;
		i++;
	}
}

/* No manifest names this save's objects: buried. */
static void forget(struct ts_snapstate *st)
{
	for (int i = 0; i < st->nparts; i++) {
		struct ts_snappart *p = st->parts[i];
		if (p->wrote.gen)
			ts_snapstate_dead(st, p->wrote.gen);
		p->wrote.gen = 0;
	}
}

/* The single blob of earlier builds: <key>.head and its two slots' parts. */
static void purge_legacy(struct ts_snapstate *st)
{
	const char *const tails[] = { "head", "0.>", "1.>" };
	char name[192], why[256];
	int failed = 0;

	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		snprintf(name, sizeof(name), "%s.%s", st->key, tails[i]);
		failed |= tsn_kv_purge(st->kv, name, why, sizeof(why));
	}
	st->legacy = failed != 0;
}

int ts_snapstate_walk(struct ts_snapstate *st, struct ts_analyzer *a)
{
	int err = walk_all(st, a);

	if (err)
		forget(st);
	return err;
}

int ts_snapstate_save(struct ts_snapstate *st, struct ts_analyzer *a, pthread_mutex_t *lock,
		      uint64_t seq, size_t *written, char *why, size_t whylen)
{
	int err;

	*written = 0;
	pthread_mutex_lock(lock);
	err = ts_snapstate_walk(st, a);
	pthread_mutex_unlock(lock);
	return err ? err : ts_snapstate_write(st, seq, written, why, whylen);
}

int ts_snapstate_write(struct ts_snapstate *st, uint64_t seq, size_t *written, char *why,
		       size_t whylen)
{
	int err = 0;

	*written = 0;
	for (int i = 0; i < st->nparts && !err; i++)
		if (st->parts[i]->seen)
			err = store(st, st->parts[i], written, why, whylen);
	if (!err)
		err = write_manifest(st, seq, written, why, whylen);
	if (err) {
		forget(st);
		return err;
	}
	commit(st);
	if (st->legacy)
		purge_legacy(st);
	ts_snapstate_purge(st);
	if (st->buf.cap > BUF_KEPT) /* a large job's base: rare, not worth its room */
		ts_buf_free(&st->buf);
	return 0;
}
