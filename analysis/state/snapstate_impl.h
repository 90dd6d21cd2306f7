// SPDX-License-Identifier: Apache-2.0
/* The insides of the state stored in parts (snapstate.h), for the files that make it up
 * (no other file includes this):
 *   snapstate.c       a save: the walk, the objects, the manifest, the purge after
 *   snapstate_load.c  the manifest read back, each part rebuilt, what no save names */
#ifndef TS_SNAPSTATE_IMPL_H
#define TS_SNAPSTATE_IMPL_H

#include <stdbool.h>
#include "analysis/detect/snapdiff.h"
#include "snapstate.h"

#define TS_SNAP_MAX_DELTAS 128 /* a part's deltas before a new base, whatever their size */
/* What a delta weighs against half its base: its bytes, and at least this, since each
 * one costs the manifest a ref at every save and a restore a read until the next base
 * (a small job's few bytes a save would otherwise pile up). */
#define TS_SNAP_DELTA_MIN 4096
#define TS_SNAP_MANIFEST_MAGIC 0x3254534e414d5354ull /* "TSMANST2" */

/* An object stored: its generation (its key), length and hash. */
struct ts_snapref {
	uint64_t gen, len, fnv;
};

/* A part as the manifest names it; then ndelta refs. */
struct ts_snapman_part {
	char ns[64], name[64]; /* a job's; empty for the producers */
	uint8_t producers;
	uint8_t pad[3];
	uint32_t ndelta;
	struct ts_snapref base;
};

struct ts_snapman_head {
	uint64_t magic, layout, stream_seq, next_gen;
	uint32_t nparts, pad;
};

struct ts_snappart {
	struct ts_snapman_part id;  /* its name and base, as the last manifest stored */
	struct ts_snapref delta[TS_SNAP_MAX_DELTAS];
	uint64_t delta_len;         /* the deltas' weight (ts_snapstate_weigh) */
	struct ts_image shadow;     /* its image as last walked */
	struct ts_buf pending;      /* segments walked since the last manifest */
	bool need_base;             /* the shadow moved on with no segment to tell how */
	bool seen;                  /* walked by this save: its job is still followed */
	bool wrote_base;
	struct ts_snapref wrote;    /* stored by this save (gen 0: nothing) */
};

struct ts_snapstate {
	struct tsn_kv *kv;
	char key[128];
	struct ts_snappart **parts;
	int nparts, capparts;
	uint64_t next_gen;          /* the next object's */
	uint64_t *dead;             /* objects to purge, no manifest naming them */
	size_t ndead, capdead;
	bool legacy;                /* a single-blob snapshot is stored: purged after a save */
	int dropped;                /* jobs the last restore could not bring back */
	struct ts_buf buf;          /* an object or manifest on its way: its room kept */
};

/* snapstate.c: the part named so, made (needing a base) when missing; NULL on -ENOMEM.
 * hint: where it was last time. */
struct ts_snappart *ts_snapstate_part(struct ts_snapstate *st, bool producers, const char *ns,
				      const char *name, int hint);
void ts_snapstate_drop_parts(struct ts_snapstate *st);
/* Object gen for the purge after the next manifest: 0 or -ENOMEM. */
int ts_snapstate_dead(struct ts_snapstate *st, uint64_t gen);
/* Part p's deltas weighed again (delta_len). */
void ts_snapstate_weigh(struct ts_snappart *p);
/* Part p's objects, for the purge: its job went, or a save stored a new base. */
void ts_snapstate_bury(struct ts_snapstate *st, const struct ts_snappart *p);
/* Purges what no manifest names, as far as the store lets. */
void ts_snapstate_purge(struct ts_snapstate *st);
/* Object gen's name: <key>.o.<gen>. */
void ts_snapstate_name(const struct ts_snapstate *st, uint64_t gen, char *out, size_t n);

#endif
