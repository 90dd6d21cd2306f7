// SPDX-License-Identifier: Apache-2.0
/* The state in parts read back (snapstate.h): the manifest, each part's base and deltas
 * applied into its image (its shadow for the saves that follow), the image into the
 * analyzer; the single blob of earlier builds when there is no manifest; and what no
 * manifest names (a save cut short), found and purged. */
#include "snapstate_impl.h"
#include "hash.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The manifest's parts, with their chains (the producers' and the jobs'). */
static int parse(struct ts_snapstate *st, const void *data, size_t len, uint64_t *seq)
{
	struct ts_snap s = { .in = data, .len = len };
	struct ts_snapman_head h;

	TS_SNAP_VAR(&s, h);
	if (s.err || h.magic != TS_SNAP_MANIFEST_MAGIC)
		return -EBADMSG;
	if (h.layout != ts_analyzer_snap_layout())
		return -EPROTO;
	for (uint32_t i = 0; i < h.nparts && !s.err; i++) {
		struct ts_snapman_part id;
		struct ts_snappart *p;
		int had = st->nparts;
		TS_SNAP_VAR(&s, id);
		if (s.err || id.ndelta > TS_SNAP_MAX_DELTAS)
			return -EBADMSG;
		id.ns[sizeof(id.ns) - 1] = id.name[sizeof(id.name) - 1] = 0;
		if (!(p = ts_snapstate_part(st, id.producers, id.ns, id.name, -1)))
			return -ENOMEM;
		if (st->nparts == had) /* named twice */
			return -EBADMSG;
		p->id = id;
		p->need_base = false;
		TS_SNAP_ARR(&s, p->delta, id.ndelta);
		ts_snapstate_weigh(p);
	}
	if (s.err || s.off != s.len)
		return -EBADMSG;
	st->next_gen = h.next_gen;
	*seq = h.stream_seq;
	return 0;
}

/* Object r applied to img. */
static int read_object(struct ts_snapstate *st, const struct ts_snapref *r, struct ts_image *img,
		       size_t *read)
{
	char name[160];
	void *data = malloc(r->len ? r->len : 1);
	int err;

	if (!data)
		return -ENOMEM;
	ts_snapstate_name(st, r->gen, name, sizeof(name));
	err = tsn_kv_get_parts(st->kv, name, data, r->len);
	if (!err && ts_fnv1a(data, r->len) != r->fnv)
		err = -EBADMSG;
	if (!err)
		err = ts_snapdiff_apply(img, data, r->len);
	free(data);
	*read += r->len;
	return err;
}

/* Part p's base and deltas read and applied into its image (its shadow): store I/O, no
 * analyzer. 0 or the first error. */
static int read_part(struct ts_snapstate *st, struct ts_snappart *p, size_t *read)
{
	int err = read_object(st, &p->id.base, &p->shadow, read);

	for (uint32_t i = 0; i < p->id.ndelta && !err; i++)
		err = read_object(st, &p->delta[i], &p->shadow, read);
	return !err && !p->shadow.len ? -EBADMSG : err;
}

/* Part p's image into the analyzer: 0, 1 (a job refused by a limit) or an error. */
static int apply_part(struct ts_snappart *p, struct ts_analyzer *a, uint64_t now_ns)
{
	if (p->id.producers) {
		struct ts_snap s = { .in = p->shadow.data, .len = p->shadow.len };
		ts_analyzer_producers_io(a, &s);
		return s.err ? s.err : s.off != s.len ? -EBADMSG : 0;
	}
	return ts_analyzer_restore_job(a, p->shadow.data, p->shadow.len, now_ns);
}

/* Every part read, before the analyzer is touched. The store unreachable or the
 * producers' part unreadable fails the restore; a job's part that cannot be read is
 * left for apply_parts to drop (err kept in loaded). */
static int read_parts(struct ts_snapstate *st, int *loaded, size_t *read)
{
	for (int i = 0; i < st->nparts; i++) {
		int rc = read_part(st, st->parts[i], read);
		if (rc == -EAGAIN || (rc && st->parts[i]->id.producers))
			return rc;
		loaded[i] = rc;
	}
	return 0;
}

/* The parts read into the analyzer. A job refused by a limit, or whose part was damaged
 * or would not restore (out of memory), costs that job alone: its objects go after the
 * next manifest, it starts afresh from the stream, and it is said and counted. */
static int apply_parts(struct ts_snapstate *st, const int *loaded, struct ts_analyzer *a,
		       uint64_t now_ns)
{
	int kept = 0, err = 0, i;

	for (i = 0; i < st->nparts; i++) {
		struct ts_snappart *p = st->parts[i];
		int rc = loaded[i] ? loaded[i] : apply_part(p, a, now_ns);
		if (rc < 0 && p->id.producers) {
			err = rc;
			break;
		}
		if (rc < 0) {
			st->dropped++;
			ts_warn("snapshots: job %s/%s not restored (%s): it starts again from the "
				"stream after the snapshot", p->id.ns, p->id.name,
				rc == -EBADMSG ? "its part is damaged" : strerror(-rc));
		}
		if (rc) { /* its objects go */
			ts_snapstate_bury(st, p);
			ts_image_free(&p->shadow);
			free(p);
			continue;
		}
		st->parts[kept++] = p;
	}
	while (i < st->nparts) /* on an error, what was not reached stays for the caller */
		st->parts[kept++] = st->parts[i++];
	st->nparts = kept;
	return err;
}

static int cmp_gen(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

struct listing {
	struct ts_snapstate *st;
	uint64_t *named; /* every object the parts name, sorted */
	size_t nnamed, prefix;
};

/* Key <key>.o.<gen>.<i> stored: dead when no part names gen; no later save reuses it. */
static void listed(void *ctx, const char *key)
{
	struct listing *l = ctx;
	struct ts_snapstate *st = l->st;
	char *end;
	errno = 0;
	uint64_t gen = strtoull(key + l->prefix, &end, 10);

	/* <gen>.<i>: another writer's key under the prefix is not ours to purge */
	if (errno || end == key + l->prefix || *end != '.') {
		ts_warn("snapshots: %s is no object of ours (<key>.o.<gen>.<i>): left alone", key);
		return;
	}

	if (gen >= st->next_gen)
		st->next_gen = gen + 1;
	if (!bsearch(&gen, l->named, l->nnamed, sizeof(gen), cmp_gen) &&
	    (!st->ndead || st->dead[st->ndead - 1] != gen)) /* a gen's parts come together */
		ts_snapstate_dead(st, gen);
}

/* Objects stored that no part names, from a save cut short: dead. 0, -ENOMEM or
 * -EAGAIN. */
static int find_dead(struct ts_snapstate *st)
{
	struct listing l = { .st = st };
	char pattern[160];
	size_t n = 0;
	int err;

	for (int i = 0; i < st->nparts; i++)
		n += 1 + st->parts[i]->id.ndelta;
	if (!(l.named = malloc((n ? n : 1) * sizeof(*l.named))))
		return -ENOMEM;
	for (int i = 0; i < st->nparts; i++) {
		l.named[l.nnamed++] = st->parts[i]->id.base.gen;
		for (uint32_t k = 0; k < st->parts[i]->id.ndelta; k++)
			l.named[l.nnamed++] = st->parts[i]->delta[k].gen;
	}
	qsort(l.named, l.nnamed, sizeof(*l.named), cmp_gen);
	l.prefix = (size_t)snprintf(pattern, sizeof(pattern), "%s.o.", st->key);
	strcat(pattern, ">");
	err = tsn_kv_keys(st->kv, pattern, listed, &l);
	free(l.named);
	return err;
}

static int read_manifest(struct ts_snapstate *st, uint64_t *seq, size_t *read)
{
	char name[160];
	void *data = NULL;
	size_t len = 0;
	int err;

	snprintf(name, sizeof(name), "%s.m", st->key);
	if ((err = tsn_kv_get_blob(st->kv, name, &data, &len)))
		return err;
	*read += len;
	err = parse(st, data, len, seq);
	free(data);
	return err;
}

int ts_snapstate_restore(struct ts_snapstate *st, struct ts_analyzer *a, pthread_mutex_t *lock,
			 uint64_t now_ns, uint64_t *seq, size_t *read)
{
	int err, lerr, *loaded = NULL;
	void *legacy = NULL;
	size_t legacy_len = 0;

	*read = 0;
	st->dropped = 0;
	ts_snapstate_drop_parts(st);
	st->ndead = 0;
	if ((err = read_manifest(st, seq, read)) == -EAGAIN)
		return err;
	if (err && err != -ENOENT)
		ts_snapstate_drop_parts(st); /* unread: all it names is dead */
	if ((lerr = find_dead(st))) {
		ts_snapstate_drop_parts(st);
		st->ndead = 0;
		return lerr == -ENOMEM ? lerr : -EAGAIN;
	}
	/* only what a crashed save left goes now: the parts of a job refused (or of a
	 * restore that fails) are still named by the stored manifest, and go once the next
	 * save's manifest no longer names them; purged now, a restart before that save
	 * would find the manifest's objects missing and lose the whole state */
	if (err != -EAGAIN)
		ts_snapstate_purge(st);
	/* the store's I/O first, the analyzer (which /metrics reads) under the lock after */
	if (err == -ENOENT) {
		if (!(err = tsn_kv_get_blob(st->kv, st->key, &legacy, &legacy_len)))
			*read += legacy_len;
	} else if (!err && !(loaded = calloc((size_t)st->nparts + 1, sizeof(*loaded)))) {
		err = -ENOMEM;
	} else if (!err) {
		err = read_parts(st, loaded, read);
	}
	pthread_mutex_lock(lock);
	if (!err)
		err = legacy ? ts_analyzer_restore(a, legacy, legacy_len, now_ns, seq)
			     : apply_parts(st, loaded, a, now_ns);
	if (err)
		ts_analyzer_clear(a);
	pthread_mutex_unlock(lock);
	free(legacy);
	free(loaded);
	if (err) {
		for (int i = 0; err != -EAGAIN && i < st->nparts; i++)
			ts_snapstate_bury(st, st->parts[i]);
		ts_snapstate_drop_parts(st);
	}
	return err;
}

int ts_snapstate_dropped(const struct ts_snapstate *st)
{
	return st->dropped;
}
