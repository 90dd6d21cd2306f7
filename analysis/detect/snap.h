// SPDX-License-Identifier: Apache-2.0
/* A snapshot codec: one function per state describes its fields once, and the same
 * walk writes them (out set), reads them back (in set) or compares them with what the
 * last save wrote (diff set: snapdiff.h). The bytes are this build's memory layout: a
 * snapshot is only read by the analyzer build that wrote it (TS_SNAP_LAYOUT tells
 * builds apart). */
#ifndef TS_SNAP_H
#define TS_SNAP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "buf.h"

struct ts_snapdiff;

struct ts_snap {
	struct ts_buf *out; /* saving: appended here */
	const uint8_t *in;  /* loading: read from here */
	struct ts_snapdiff *diff; /* saving what changed since the last save */
	size_t len, off;
	int err;            /* -EBADMSG once a read ran past the end, -ENOMEM on a failed append */
};

static inline bool ts_snap_loading(const struct ts_snap *s) { return s->in != NULL; }

/* snapdiff.c: n bytes at p (NULL: zeros) against the last save's at the walk's offset. */
void ts_snapdiff_io(struct ts_snap *s, const void *p, size_t n);

static inline void ts_snap_io(struct ts_snap *s, void *p, size_t n)
{
	if (s->err || !n)
		return;
	if (s->diff) {
		ts_snapdiff_io(s, p, n);
		return;
	}
	if (!s->in) {
		ts_buf_append(s->out, p, n);
		if (s->out->oom)
			s->err = -ENOMEM;
		return;
	}
	if (n > s->len - s->off) {
		s->err = -EBADMSG;
		memset(p, 0, n);
		return;
	}
	memcpy(p, s->in + s->off, n);
	s->off += n;
}

/* n bytes at p that nothing reads back (a step row that holds no step): saved as zeros,
 * so they cost a delta nothing; read into p when loading, as any field. */
void ts_snap_dead(struct ts_snap *s, void *p, size_t n);

#define TS_SNAP_VAR(s, v) ts_snap_io((s), &(v), sizeof(v))
#define TS_SNAP_ARR(s, p, count) ts_snap_io((s), (p), (size_t)(count) * sizeof(*(p)))

#endif
