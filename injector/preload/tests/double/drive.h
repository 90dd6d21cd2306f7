// SPDX-License-Identifier: Apache-2.0
/* TEST DRIVERS' shared parts (hookdrive, npudrive): what the process's own ring said,
 * and the "key value" lines test_hooks.c reads. */
#ifndef TSD_DRIVE_H
#define TSD_DRIVE_H

#include <stdint.h>
#include "ring.h"

#define TSD_MAXREC 64

struct tsd_seen {
	struct ts_ring *ring;
	int gpu_steps, ncoll, ngemm, nhang, ncomm, ngcoll, npeer, nident;
	struct ts_rec gpu_step[TSD_MAXREC], coll[TSD_MAXREC], gemm[TSD_MAXREC], hang[4], comm[8],
		gcoll[TSD_MAXREC], peer[8];
	uint64_t ctr_launches, ctr_api;
	int ctr_steps, ctr_unclocked; /* step counters; those with launches and no host time */
};

/* Opens the process's ring (TRAINSCOPE_RING_DIR); 0, or -1 when there is none. */
int tsd_open_ring(struct tsd_seen *s);
/* Takes every record the ring holds now. */
void tsd_drain(struct tsd_seen *s);
uint64_t tsd_now_ms(void);
/* "key value", or "key.i.field value" when i >= 0. */
void tsd_kv(const char *key, int i, const char *field, uint64_t v);

#endif
