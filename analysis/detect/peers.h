// SPDX-License-Identifier: Apache-2.0
/* Which ranks do the same work. A parallel layout such as "tp2-pp4-dp8" lists its
 * dimensions fastest-varying first (Megatron's order): rank = tp + 2 * (pp + 4 * dp).
 * Ranks that differ only in a replica dimension (dp, cp) are peers; every other
 * dimension (tp, pp, ep, ...) splits them into classes, since a pipeline stage or an
 * expert does different work by design. */
#ifndef TS_PEERS_H
#define TS_PEERS_H

#include <stddef.h>

#define TS_LAYOUT_MAX_DIMS 6

struct ts_layout {
	int ndims;
	char name[TS_LAYOUT_MAX_DIMS][8];
	int size[TS_LAYOUT_MAX_DIMS];
};

/* Parses "tp2-pp4-dp8" (names of letters, sizes >= 1, '-' or ',' between them).
 * Returns 0, or -EINVAL with err saying what is wrong. */
int ts_layout_parse(struct ts_layout *l, const char *text, char *err, size_t errlen);
/* The ranks the layout covers (the product of its sizes). */
long ts_layout_world(const struct ts_layout *l);
/* The rank's peer class, numbered from 0 over the non-replica coordinates, or -1 for a
 * rank outside the layout. */
int ts_layout_class(const struct ts_layout *l, int rank);
/* Peer classes the layout has. */
int ts_layout_classes(const struct ts_layout *l);
/* The rank's coordinate in dimension dim ("pp"), or -1 when the layout has no such
 * dimension or the rank lies outside it. */
int ts_layout_coord(const struct ts_layout *l, int rank, const char *dim);
/* The rank's coordinates as text ("tp1-pp3-dp0"). */
void ts_layout_coords(const struct ts_layout *l, int rank, char *out, size_t n);

#endif
