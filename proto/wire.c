// SPDX-License-Identifier: Apache-2.0
/* Bundles packed from encoded batches and taken apart again (wire.h): protobuf-c does
 * both, the batches staying bytes so that neither side decodes them twice. */
#include "proto/wire.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int ts_bundle_each(const void *data, size_t len, ts_batch_fn fn, void *ctx)
{
	Trainscope__V1__Bundle *u = trainscope__v1__bundle__unpack(NULL, len, data);
	int n;

	if (!u)
		return -EBADMSG;
	for (size_t i = 0; i < u->n_batches; i++)
		fn(ctx, u->batches[i].data, u->batches[i].len);
	n = u->n_batches > INT_MAX ? INT_MAX : (int)u->n_batches;
	trainscope__v1__bundle__free_unpacked(u, NULL);
	return n;
}

/* ts.v1.<ns>.<job>.pod.<pod>[.<partition>]: the kind is the fifth token. */
static bool bundled(const char *subject)
{
	const char *s = subject;

	for (int dots = 0; s && *s && dots < 4; s++)
		dots += *s == '.';
	return s && !strncmp(s, "pod.", 4);
}

int ts_wire_each(const char *subject, const void *data, size_t len, ts_batch_fn fn, void *ctx)
{
	if (bundled(subject))
		return ts_bundle_each(data, len, fn, ctx);
	fn(ctx, data, len);
	return 1;
}

int ts_bundle_pack(const ProtobufCBinaryData *batches, size_t n, uint64_t producer_id,
		   uint64_t seq, uint8_t **out, size_t *len)
{
	Trainscope__V1__Bundle u = TRAINSCOPE__V1__BUNDLE__INIT;

	u.batches = (ProtobufCBinaryData *)batches;
	u.n_batches = n;
	u.producer_id = producer_id;
	u.seq = seq;
	*len = trainscope__v1__bundle__get_packed_size(&u);
	if (!(*out = malloc(*len ? *len : 1)))
		return -ENOMEM;
	trainscope__v1__bundle__pack(&u, *out);
	return 0;
}
