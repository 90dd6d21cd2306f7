// SPDX-License-Identifier: Apache-2.0
/* Snapshot deltas (snapdiff.h): the compare that brings a shadow up to date and writes
 * the runs of words that changed, the base of a whole image, and their application.
 * A segment: its image's length and its ops' length (two u64), then ops, each the gap
 * since the last one's end and its length times two, plus one when its words became
 * zeros (LEB128), followed by its bytes otherwise. */
#include "snapdiff.h"

#include <stdlib.h>

#define WORD 4
#define SPAN 4096 /* compared whole first: most of an image did not change */
#define BLOCK 64  /* then these, then words */
#define HEAD 16

static const uint8_t zeros[SPAN];

int ts_image_resize(struct ts_image *img, size_t len)
{
	if (len > img->cap) {
		/* a quarter of headroom: images of large jobs are hundreds of MB */
		size_t cap = img->cap + img->cap / 4 > len ? img->cap + img->cap / 4 : len;
		uint8_t *p = realloc(img->data, cap);
		if (!p)
			return -ENOMEM;
		memset(p + img->cap, 0, cap - img->cap);
		img->data = p;
		img->cap = cap;
	}
	if (len < img->len)
		memset(img->data + len, 0, img->len - len);
	img->len = len;
	return 0;
}

void ts_image_free(struct ts_image *img)
{
	free(img->data);
	*img = (struct ts_image){ 0 };
}

static void put_varint(struct ts_buf *b, uint64_t v)
{
	uint8_t x[10];
	size_t n = 0;

	do {
		x[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		x[n++] |= v ? 0x80 : 0;
	} while (v);
	ts_buf_append(b, x, n);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (; n >= SPAN; p += SPAN, n -= SPAN)
		if (memcmp(p, zeros, SPAN))
			return false;
	return !n || !memcmp(p, zeros, n);
}

/* The run gathered, up to end, written from src (the image it describes). */
static void flush(struct ts_snapdiff *d, const uint8_t *src, size_t end)
{
	size_t n = end - d->run;
	bool z;

	if (d->run == d->run_end)
		return;
	z = all_zero(src + d->run, n);
	put_varint(d->ops, d->run - d->last);
	put_varint(d->ops, (uint64_t)n << 1 | z);
	if (!z)
		ts_buf_append(d->ops, src + d->run, n);
	d->last = end;
	d->run = d->run_end;
}

/* Image bytes [from, to) changed (whole words): they join the run, or the run so far is
 * written out first. A word split between two fields comes twice. */
static void changed(struct ts_snapdiff *d, const uint8_t *src, size_t from, size_t to)
{
	if (d->run == d->run_end) {
		d->run = from;
	} else if (from > d->run_end) {
		flush(d, src, d->run_end);
		d->run = from;
	}
	if (to > d->run_end)
		d->run_end = to;
}

static bool differ(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint32_t x, y;

	if (n != WORD)
		return memcmp(a, b, n) != 0;
	memcpy(&x, a, WORD);
	memcpy(&y, b, WORD);
	return x != y;
}

/* new (n bytes) against the shadow at image offset o, word by word: the words that
 * differ are copied in and gathered. */
static void words(struct ts_snapdiff *d, const uint8_t *new, size_t o, size_t n)
{
	uint8_t *old = d->shadow->data;

	for (size_t i = 0; i < n;) {
		size_t w = (o + i) & ~(size_t)(WORD - 1), k = w + WORD - (o + i);
		k = k < n - i ? k : n - i;
		if (differ(new + i, old + o + i, k)) {
			memcpy(old + o + i, new + i, k);
			changed(d, old, w, w + WORD);
		}
		i += k;
	}
}

/* new (n bytes, at most a span) against the shadow at o, a block at a time. */
static void blocks(struct ts_snapdiff *d, const uint8_t *new, size_t o, size_t n)
{
	for (size_t i = 0; i < n; i += BLOCK) {
		size_t k = n - i < BLOCK ? n - i : BLOCK;
		if (memcmp(new + i, d->shadow->data + o + i, k))
			words(d, new + i, o + i, k);
	}
}

void ts_snapdiff_io(struct ts_snap *s, const void *p, size_t n)
{
	struct ts_snapdiff *d = s->diff;
	size_t o = s->off;

	if (s->err || !n)
		return;
	if (o + n > d->shadow->len && ts_image_resize(d->shadow, o + n)) {
		s->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n; i += SPAN) {
		size_t k = n - i < SPAN ? n - i : SPAN;
		const uint8_t *new = p ? (const uint8_t *)p + i : zeros;
		if (memcmp(new, d->shadow->data + o + i, k))
			blocks(d, new, o + i, k);
	}
	s->off = o + n;
}

void ts_snap_dead(struct ts_snap *s, void *p, size_t n)
{
	if (s->in || s->diff) {
		if (s->in)
			ts_snap_io(s, p, n);
		else
			ts_snapdiff_io(s, NULL, n);
		return;
	}
	for (size_t i = 0; i < n && !s->err; i += SPAN)
		ts_snap_io(s, (void *)zeros, n - i < SPAN ? n - i : SPAN);
}

static void begin_segment(struct ts_snapdiff *d, struct ts_buf *ops)
{
	d->ops = ops;
	d->head = ops->len;
	d->run = d->run_end = d->last = 0;
	ts_buf_append(ops, zeros, HEAD);
}

static void end_segment(struct ts_snapdiff *d, uint64_t len)
{
	uint64_t n = d->ops->len - d->head - HEAD;

	if (d->ops->oom)
		return;
	memcpy(d->ops->data + d->head, &len, 8);
	memcpy(d->ops->data + d->head + 8, &n, 8);
}

void ts_snapdiff_begin(struct ts_snap *s, struct ts_snapdiff *d, struct ts_image *shadow,
		       struct ts_buf *ops)
{
	*s = (struct ts_snap){ .diff = d };
	d->shadow = shadow;
	d->was = shadow->len;
	begin_segment(d, ops);
	if (ops->oom)
		s->err = -ENOMEM;
}

bool ts_snapdiff_end(struct ts_snap *s)
{
	struct ts_snapdiff *d = s->diff;

	if (!s->err && ts_image_resize(d->shadow, s->off))
		s->err = -ENOMEM;
	if (!s->err)
		flush(d, d->shadow->data, d->run_end < s->off ? d->run_end : s->off);
	if (!s->err && d->ops->oom)
		s->err = -ENOMEM;
	if (s->err || (d->ops->len == d->head + HEAD && d->was == s->off)) {
		d->ops->len = d->head; /* nothing changed: no segment */
		return false;
	}
	end_segment(d, s->off);
	return true;
}

/* The words of img in [o, o + n) that are not zeros, gathered (a span, skipped whole
 * when it is all zeros, then a block at a time). */
static void nonzero(struct ts_snapdiff *d, const struct ts_image *img, size_t o, size_t n)
{
	if (all_zero(img->data + o, n))
		return;
	for (size_t b = o; b < o + n; b += BLOCK) {
		size_t k = o + n - b < BLOCK ? o + n - b : BLOCK;
		if (all_zero(img->data + b, k))
			continue;
		for (size_t w = b; w < b + k; w += WORD)
			if (differ(img->data + w, zeros, b + k - w < WORD ? b + k - w : WORD))
				changed(d, img->data, w, w + WORD);
	}
}

int ts_snapdiff_base(const struct ts_image *img, struct ts_buf *out)
{
	struct ts_snapdiff d;

	begin_segment(&d, out);
	for (size_t o = 0; o < img->len; o += SPAN)
		nonzero(&d, img, o, img->len - o < SPAN ? img->len - o : SPAN);
	flush(&d, img->data, d.run_end < img->len ? d.run_end : img->len);
	end_segment(&d, img->len);
	return out->oom ? -ENOMEM : 0;
}

static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t c = *(*p)++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -EBADMSG;
}

static int apply_ops(struct ts_image *img, const uint8_t *p, const uint8_t *end)
{
	size_t pos = 0;

	while (p < end) {
		uint64_t gap, lz, n;
		if (get_varint(&p, end, &gap) || get_varint(&p, end, &lz))
			return -EBADMSG;
		n = lz >> 1;
		if (gap > img->len - pos || n > img->len - pos - gap)
			return -EBADMSG;
		pos += gap;
		if (lz & 1) {
			memset(img->data + pos, 0, n);
		} else {
			if (n > (size_t)(end - p))
				return -EBADMSG;
			memcpy(img->data + pos, p, n);
			p += n;
		}
		pos += n;
	}
	return 0;
}

int ts_snapdiff_apply(struct ts_image *img, const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + len;
	uint64_t n, ops;
	int err;

	while (p < end) {
		if ((size_t)(end - p) < HEAD)
			return -EBADMSG;
		memcpy(&n, p, 8);
		memcpy(&ops, p + 8, 8);
		p += HEAD;
		if (ops > (size_t)(end - p))
			return -EBADMSG;
		if (ts_image_resize(img, n))
			return -ENOMEM;
		if ((err = apply_ops(img, p, p + ops)))
			return err;
		p += ops;
	}
	return 0;
}
