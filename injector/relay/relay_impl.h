// SPDX-License-Identifier: Apache-2.0
/* The relay's state, shared by the files that make it up:
 *   relay.c     rounds: rings drained into steps, batches published, /metrics
 *   scan.c      the folder's rings found and followed, or refused
 *   side.c      the files beside a ring: its .relay file (the producer's id and seqs)
 *   identity.c  a producer's identity learned late, and the notices for processes it
 *               cannot use
 * (bundle.c, with its own header, gathers the pod wire's Bundles.) */
#ifndef TS_RELAY_IMPL_H
#define TS_RELAY_IMPL_H

#include "relay.h"
#include "agg.h"
#include "batch.h"
#include "hash.h"
#include "ring.h"
#include "tsclock.h"

#include <stdbool.h>
#include <stdint.h>

#define TS_RELAY_MAX_COMMS 32

struct producer {
	char path[4096];
	struct ts_ring *ring;
	struct ts_ident id;       /* the ring's, as its TS_REC_IDENT records update it */
	bool said_unranked;       /* its steps with no rank were logged and counted */
	uint64_t unranked_ms;     /* when its first step with no rank was made */
	uint64_t device_ops;      /* collectives and GEMMs it recorded */
	uint64_t stepless_ms;     /* when the first of them came, while it made no step */
	uint64_t next_stepless_ms;
	bool said_stepless;       /* its device work with no step was logged and counted */
	struct ts_agg agg;
	uint64_t producer_id, seq;
	uint64_t steps;           /* step sums made from its ring */
	bool hello_sent;
	int npending, cap;
	struct ts_step_sum *pending;
	char subject[256];
	char pod_subject[256];  /* the pod wire's, for its ranks' batches (bundle.h) */
	char ctl_subject[256];  /* announcements for the node's agent */
	uint64_t ctl_seq, next_hello_ms;
	int side_fd;                  /* the relay's side file; -1: the identity is not kept */
	uint64_t saved_seq, saved_ctl; /* what it says */
	/* its Hello groups: the layout, then the communicators it announced */
	char groups[1 + TS_RELAY_MAX_COMMS][64];
	int ngroups;
};

#define HELLO_EVERY_MS 5000

/* A process that steps with no rank is said to after this many steps or this long (a
 * launcher that gives none, or a rank learned too late); its steps are held, at most
 * HELD_MAX (the oldest go first, counted), to go out under the rank it may learn. */
#define UNRANKED_STEPS 10
#define UNRANKED_MS 30000
#define HELD_MAX 1024
/* A rank that runs collectives or GEMMs and makes no step for this long (or to its end)
 * has a loop whose steps were not found: said once, and to the analyzer. */
#define STEPLESS_MS 120000

/* A ring file the relay could not follow: said once, retried quietly at each scan. */
struct refused {
	char *path;
	bool seen; /* still in the folder at the last scan */
};

struct relay {
	struct relay_opts opts;
	struct tsn *nats;
	int inotify_fd;
	bool rescan;
	uint64_t last_scan_ms, relay_nonce;
	bool backlog; /* the last round left records in a ring */
	uint64_t last_flush_ms; /* every producer's pending steps go out together, into one
				 * Bundle (the pod wire) */
	struct ts_bundler bundler;
	char pod_uid[64]; /* the relay's pod (TRAINSCOPE_POD_UID): the rings' pod, as a sidecar */
	struct producer **prod;
	int nprod, capprod;
	struct relay_stats st;
	uint64_t dropped_done; /* ring drops of producers already removed */
	uint64_t undeviced_done; /* their steps sent without device time */
	struct refused *refused;
	int nrefused, caprefused;
};

static inline uint64_t mono_ms(void)
{
	return ts_mono_ns() / 1000000;
}

/* scan.c: the folder's rings not followed yet made producers; a ring that cannot be is
 * said and counted once however many scans meet it, and retried at each. */
void relay_scan(struct relay *r);
/* Frees the list of refused rings. */
void relay_forget_refused(struct relay *r);

/* side.c: the producer's id and seqs from the .relay file the last relay left beside its
 * ring, or new ones, and the file made or rewritten for this relay (SIDE_RELAY). */
void relay_take_identity(struct relay *r, struct producer *p);
/* The producer's side file says at least seq and ctl_seq (side.c, SIDE_RELAY). */
void relay_reserve(struct relay *r, struct producer *p, uint64_t seq, uint64_t ctl_seq);
/* The side file says the producer's last seq sent again, when it says more: records taken
 * from the ring went into no batch (a record the relay keeps none of), and the seq
 * reserved for them would be a lost batch to the analyzer after a relay restart. Called
 * only with nothing taken and unsent. */
void relay_unreserve(struct relay *r, struct producer *p);
/* The text of the file beside the producer's ring with this suffix (its last max bytes),
 * malloc'ed; NULL when there is none. */
char *relay_read_side(const char *ring_path, const char *suffix, size_t max);
/* The producer's .relay file removed and closed, once its ring is. */
void relay_side_remove(struct producer *p);
/* Encodes and queues one batch on subject (a hang, an announcement); returns 0 or a
 * negative errno (counted). */
int relay_send_batch(struct relay *r, struct producer *p, const char *subject,
		     struct ts_batch_hdr *h, const struct ts_step_sum *steps, int n);
/* Encodes one batch of the rank's own sequence (steps, a notice, its end) and queues it
 * on its subject, or (the pod wire) adds it to its pod's Bundle of the round; returns 0
 * or a negative errno (counted). */
int relay_send_rank(struct relay *r, struct producer *p, struct ts_batch_hdr *h,
		    const struct ts_step_sum *steps, int n);

/* identity.c: the ring's identity copied with every string ended (the ring is the
 * process's memory); the rank's subjects from it. */
void relay_copy_ident(struct ts_ident *dst, const struct ts_ident *src);
void relay_set_subjects(struct producer *p);
/* A TS_REC_IDENT record: the rank (and device) the process learned after its ring was
 * made. */
void relay_learn(struct relay *r, struct producer *p, const struct ts_rec *rec);
/* Each round, for a producer with no rank: its steps held, and the analyzer told. */
void relay_unranked_round(struct relay *r, struct producer *p, bool done, uint64_t now);
/* Each round, for a rank: device work with no step said once, and the analyzer told. */
void relay_stepless_round(struct relay *r, struct producer *p, bool done, uint64_t now);

#endif
