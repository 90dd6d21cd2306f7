// SPDX-License-Identifier: Apache-2.0
/* A round's encoded batches, gathered per subject and sent as one Bundle each (bundle.h):
 * the message count of a pod's relay goes from one per rank to one per job. The batches
 * stay as encoded: the Bundle wraps their bytes (proto/wire.h). */
#include "bundle.h"
#include "log.h"
#include "natsw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A Bundle's size at most: producer_id and seq (a tag and a varint each), and per batch
 * its tag, its length's varint and its bytes. An upper bound, so that a Bundle split by
 * it never passes the message bound. */
#define HEAD_MAX 22
#define ENTRY_MAX(len) ((len) + 11)

struct ts_bundle {
	char subject[256];
	ProtobufCBinaryData *batch;
	size_t n, cap;
	size_t bytes; /* the packed Bundle at most */
	long steps;   /* its batches' step records, for the line that says they were lost */
};

int ts_wire_parse(const char *s, enum ts_wire *out)
{
	if (!s || !*s || !strcmp(s, "pod"))
		*out = TS_WIRE_POD;
	else if (!strcmp(s, "rank"))
		*out = TS_WIRE_RANK;
	else
		return -EINVAL;
	return 0;
}

int ts_bundle_send_nats(void *ctx, const char *subject, const uint8_t *data, size_t len,
			uint64_t producer_id, uint64_t seq)
{
	return tsn_publish_seq(ctx, subject, data, len, producer_id, seq);
}

void ts_bundler_init(struct ts_bundler *b, const struct ts_bundler_opts *opts)
{
	memset(b, 0, sizeof(*b));
	b->opts = *opts;
}

/* Batches that will not go out: counted and said. */
static void lost(struct ts_bundler *b, const char *subject, size_t n, long steps, int err)
{
	b->st.lost += n;
	ts_warn("relay: %zu batches (%ld steps) for %s lost: %s", n, steps, subject,
		err == -EMSGSIZE ? "larger than the server's message bound" : strerror(-err));
}

static void empty(struct ts_bundle *u)
{
	for (size_t i = 0; i < u->n; i++)
		free(u->batch[i].data);
	u->n = 0;
	u->bytes = HEAD_MAX;
	u->steps = 0;
}

/* Packs and sends u, then empties it. */
static int send(struct ts_bundler *b, struct ts_bundle *u)
{
	uint8_t *buf = NULL;
	size_t len;
	int err = ts_bundle_pack(u->batch, u->n, b->opts.producer_id, b->seq + 1, &buf, &len);

	if (!err)
		err = b->opts.send(b->opts.ctx, u->subject, buf, len, b->opts.producer_id, b->seq + 1);
	free(buf);
	if (err) {
		lost(b, u->subject, u->n, u->steps, err);
	} else {
		b->seq++;
		b->st.bundles++;
		b->st.batches += u->n;
	}
	empty(u);
	return err;
}

/* subject's Bundle of the round, begun when it has none; NULL without memory. */
static struct ts_bundle *bundle_of(struct ts_bundler *b, const char *subject)
{
	struct ts_bundle *u;

	for (int i = 0; i < b->n; i++)
		if (!strcmp(b->open[i].subject, subject))
			return &b->open[i];
	if (b->n == b->cap) {
		int cap = b->cap ? b->cap * 2 : 4;
		if (!(u = realloc(b->open, (size_t)cap * sizeof(*u))))
			return NULL;
		memset(u + b->cap, 0, (size_t)(cap - b->cap) * sizeof(*u));
		b->open = u;
		b->cap = cap;
	}
	u = &b->open[b->n++];
	snprintf(u->subject, sizeof(u->subject), "%s", subject);
	empty(u);
	return u;
}

static int make_room(struct ts_bundle *u)
{
	ProtobufCBinaryData *nb;
	size_t cap = u->cap ? u->cap * 2 : 16;

	if (u->n < u->cap)
		return 0;
	if (!(nb = realloc(u->batch, cap * sizeof(*nb))))
		return -ENOMEM;
	u->batch = nb;
	u->cap = cap;
	return 0;
}

int ts_bundler_add(struct ts_bundler *b, const char *subject, uint8_t *batch, size_t len,
		   int steps)
{
	struct ts_bundle *u = NULL;
	int err = HEAD_MAX + ENTRY_MAX(len) > b->opts.max_bytes ? -EMSGSIZE : 0;

	if (!err && !(u = bundle_of(b, subject)))
		err = -ENOMEM;
	if (!err && u->n && u->bytes + ENTRY_MAX(len) > b->opts.max_bytes) {
		b->st.splits++;
		send(b, u); /* a failure is counted and said there */
	}
	if (!err)
		err = make_room(u);
	if (err) {
		lost(b, subject, 1, steps, err);
		free(batch);
		return err;
	}
	u->batch[u->n++] = (ProtobufCBinaryData){ .len = len, .data = batch };
	u->bytes += ENTRY_MAX(len);
	u->steps += steps;
	return 0;
}

int ts_bundler_flush(struct ts_bundler *b)
{
	int first = 0, err;

	for (int i = 0; i < b->n; i++)
		if (b->open[i].n && (err = send(b, &b->open[i])) && !first)
			first = err;
	b->n = 0; /* the slots are kept, for the next round's subjects */
	return first;
}

void ts_bundler_free(struct ts_bundler *b)
{
	for (int i = 0; i < b->cap; i++) {
		empty(&b->open[i]);
		free(b->open[i].batch);
	}
	free(b->open);
	memset(b, 0, sizeof(*b));
}
