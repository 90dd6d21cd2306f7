// SPDX-License-Identifier: Apache-2.0
/* Deltas of snapshot images. An image is what a save's walk writes (snap.h). The last
 * image saved of a part of the state is kept (its shadow), and the next walk, in diff
 * mode, is compared with it word by word while it brings it up to date: a segment holds
 * the image's new length and the runs of 4-byte words that changed (their bytes, or
 * their length alone when they became zeros). A base is the segment of a whole image
 * against an empty one (its zeros cost nothing). Segments applied in order to an empty
 * image give the image back. */
#ifndef TS_SNAPDIFF_H
#define TS_SNAPDIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "snap.h"

struct ts_image {
	uint8_t *data; /* zeros past len, up to cap */
	size_t len, cap;
};

struct ts_snapdiff {
	struct ts_image *shadow;
	struct ts_buf *ops;
	size_t head;         /* the segment's header in ops */
	size_t run, run_end; /* the changed words gathered, as image offsets (equal: none) */
	size_t last;         /* the end of the last run written */
	size_t was;          /* the shadow's length before the walk */
};

/* The walk on s that follows compares with shadow, brings it up to date and appends
 * the segment of what changed to ops. */
void ts_snapdiff_begin(struct ts_snap *s, struct ts_snapdiff *d, struct ts_image *shadow,
		       struct ts_buf *ops);
/* After the walk: true when the image changed (its segment appended), false when it did
 * not (nothing appended) or on s->err (-ENOMEM; the shadow is then unreliable). */
bool ts_snapdiff_end(struct ts_snap *s);
/* The whole image as one segment appended to out: 0 or -ENOMEM. */
int ts_snapdiff_base(const struct ts_image *img, struct ts_buf *out);
/* The segments of data applied to img in order: 0, -EBADMSG (not segments, or runs past
 * the image) or -ENOMEM. */
int ts_snapdiff_apply(struct ts_image *img, const void *data, size_t len);
/* len bytes long, zeros where it grew: 0 or -ENOMEM. */
int ts_image_resize(struct ts_image *img, size_t len);
void ts_image_free(struct ts_image *img);

#endif
