// SPDX-License-Identifier: Apache-2.0
/* What the wire's readers and writers share beyond the generated code: a Bundle made of
 * encoded batches, and the batches of any message, a Bundle's one by one. Linked with the
 * generated code ($(PROTO_OBJ)). */
#ifndef TS_WIRE_H
#define TS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/trainscope.pb-c.h"

/* Called with one encoded trainscope.v1.Batch (not decoded yet: it may be no Batch). */
typedef void (*ts_batch_fn)(void *ctx, const uint8_t *batch, size_t len);

/* Gives fn each batch of the encoded trainscope.v1.Bundle in data, in order. Returns how
 * many, or -EBADMSG when data is no Bundle. */
int ts_bundle_each(const void *data, size_t len, ts_batch_fn fn, void *ctx);

/* Gives fn the batches of a message on subject: a Bundle's (kind pod) one by one, any
 * other message as it is. Returns how many, or -EBADMSG (a Bundle that is none). */
int ts_wire_each(const char *subject, const void *data, size_t len, ts_batch_fn fn, void *ctx);

/* Packs the n encoded batches into a Bundle of producer_id and seq. Returns 0 with *out
 * malloc'ed (the caller frees it) and *len, or -ENOMEM. */
int ts_bundle_pack(const ProtobufCBinaryData *batches, size_t n, uint64_t producer_id,
		   uint64_t seq, uint8_t **out, size_t *len);

#endif
