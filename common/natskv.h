// SPDX-License-Identifier: Apache-2.0
/* Blobs of any size in a JetStream key-value bucket. Data of any size is stored in
 * parts, <name>.<i>. A blob is stored as the parts <key>.<slot>, then a head <key>.head
 * that names the slot, the chunk count, the size and a hash: the two slots alternate,
 * so a writer that dies midway leaves the previous blob whole, and a reader only ever
 * sees a blob stored whole. */
#ifndef TS_NATSKV_H
#define TS_NATSKV_H

#include <stddef.h>
#include "natsw.h"

struct tsn_kv;

/* Binds to bucket, made when missing. The handle follows n: after a connection nats.c
 * gave up is made anew, the next call binds again on the new one. Returns 0, or -EAGAIN
 * (JetStream not reachable or refusing: why says the server's words) or -ENOMEM. */
int tsn_kv_open(struct tsn *n, const char *bucket, struct tsn_kv **out, char *why, size_t whylen);
void tsn_kv_close(struct tsn_kv *kv);
/* Stores data as the values <name>.0, <name>.1, ... (each within the bucket's value
 * size), with no head: whoever stores their name keeps their length and hash. Returns 0,
 * or -EAGAIN with why. */
int tsn_kv_put_parts(struct tsn_kv *kv, const char *name, const void *data, size_t len,
		     char *why, size_t whylen);
/* The len bytes tsn_kv_put_parts stored under name, into to. Returns 0, -EBADMSG (a
 * part missing or of another size) or -EAGAIN. */
int tsn_kv_get_parts(struct tsn_kv *kv, const char *name, void *to, size_t len);
/* Removes the keys that match pattern (a key, or with subject wildcards: * one token,
 * > the rest) and their history, leaving no delete marker. Returns 0, or -EAGAIN with
 * why. */
int tsn_kv_purge(struct tsn_kv *kv, const char *pattern, char *why, size_t whylen);
/* Calls fn with each key that matches pattern. Returns 0 or -EAGAIN. */
int tsn_kv_keys(struct tsn_kv *kv, const char *pattern, void (*fn)(void *ctx, const char *key),
		void *ctx);
/* Stores a blob under key ([-_.a-zA-Z0-9]+). Returns 0, or -EAGAIN with why. */
int tsn_kv_put_blob(struct tsn_kv *kv, const char *key, const void *data, size_t len, char *why,
		    size_t whylen);
/* The last blob stored whole under key, malloc'ed. Returns 0, -ENOENT (none), -EBADMSG
 * (chunks missing or not matching the head) or -EAGAIN. */
int tsn_kv_get_blob(struct tsn_kv *kv, const char *key, void **data, size_t *len);

/* A lease on key: held by owner (any text without a newline) for ttl_s after each take,
 * as the holder's clock says. Takes it when free, stale (past ttl_s) or already the
 * owner's, with a compare-and-set on the key's revision so two takers cannot both win.
 * Returns 0 (held by owner now), 1 (another's and fresh: holder gets its owner text and
 * *age_s its age), or -EAGAIN with why. */
int tsn_kv_lease(struct tsn_kv *kv, const char *key, const char *owner, double ttl_s,
		 char *holder, size_t holdlen, double *age_s, char *why, size_t whylen);
/* Gives up a lease owner holds (nothing when another holds it). */
void tsn_kv_release(struct tsn_kv *kv, const char *key, const char *owner);

#endif
