// SPDX-License-Identifier: Apache-2.0
/* The files the relay keeps beside a ring: its .relay file, the ring's producer id and
 * reserved seqs, which let a relay started again go on as the same producer; and the
 * texts the library leaves there (a hang's stacks). */
#include "relay_impl.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* <ring path minus .ring><suffix>: the files beside a ring. */
static void side_name(const char *ring_path, const char *suffix, char *buf, size_t n)
{
	size_t base = strlen(ring_path) - strlen(TS_RING_SUFFIX);

	snprintf(buf, n, "%.*s%s", (int)base, ring_path, suffix);
}

/* The relay's identity for a ring, kept beside it by the relay only: a restarted relay goes
 * on as the same producer, from the seq after the last one the old relay reserved, so the
 * analyzer counts what the old one lost as a gap instead of meeting a new producer.
 *
 * Reserved: the file says at least the seq of every batch sent, and of the batch being
 * filled from the moment a record for it is taken from the ring (the ring's tail, in the
 * shared file, is past it then). A relay killed at any point thus leaves a gap of exactly
 * the batches lost with it: those not yet stored (its outbox) and the one it was filling.
 * That costs one pwrite per batch, of one record within a page, which a killed relay
 * leaves whole, old or new. Seqs reserved in blocks ahead were refused: the unsent ones
 * would count as lost batches. No fsync: the record is as durable as the ring's tail,
 * which lives in the page cache too. */
#define SIDE_RELAY ".relay"
#define SIDE_MAGIC 0x3159414c45525354ull /* "TSRELAY1" */
#define SIDE_VERSION 1

struct side_rec {
	uint64_t magic;
	uint32_t version, size;
	uint64_t ring_start_ns; /* the ring's start_real_ns and pid: a record for this ring */
	int64_t pid;
	uint64_t producer_id;
	uint64_t seq, ctl_seq;  /* the highest reserved of the rank's and the ctl sequence */
	uint64_t check;         /* of the words above */
};
_Static_assert(sizeof(struct side_rec) == 64, "side record layout");

static uint64_t side_check(const struct side_rec *s)
{
	uint64_t w[offsetof(struct side_rec, check) / 8], h = 0;

	memcpy(w, s, sizeof(w));
	for (size_t i = 0; i < sizeof(w) / 8; i++)
		h = ts_splitmix64(h ^ w[i]);
	return h;
}

/* The ring folder is writable by the training processes: never through a link, only a
 * plain file of one name. Made with the rings' mode: a relay of the folder's group may go
 * on with it. */
static int side_open(const char *path, const char *dir)
{
	int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC, mode = ts_ring_file_mode(dir), fd;
	struct stat st;

	fd = open(path, flags);
	if (fd < 0 && errno == ENOENT && (fd = open(path, flags | O_CREAT | O_EXCL, 0600)) >= 0 &&
	    mode != 0600)
		(void)fchmod(fd, (mode_t)mode); /* as ring.c: fchmod ignores the umask */
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* The record the last relay left for this ring, when there is a valid one. */
static bool side_load(const struct producer *p, struct side_rec *s)
{
	if (pread(p->side_fd, s, sizeof(*s), 0) != (ssize_t)sizeof(*s))
		return false;
	return s->magic == SIDE_MAGIC && s->version == SIDE_VERSION && s->size == sizeof(*s) &&
	       s->check == side_check(s) && s->ring_start_ns == p->ring->start_real_ns &&
	       s->pid == p->id.pid && s->producer_id;
}

static int side_write(struct producer *p, uint64_t seq, uint64_t ctl_seq)
{
	struct side_rec s = { .magic = SIDE_MAGIC, .version = SIDE_VERSION, .size = sizeof(s),
			      .ring_start_ns = p->ring->start_real_ns, .pid = p->id.pid,
			      .producer_id = p->producer_id, .seq = seq, .ctl_seq = ctl_seq };
	ssize_t n;

	s.check = side_check(&s);
	n = pwrite(p->side_fd, &s, sizeof(s), 0);
	if (n != (ssize_t)sizeof(s))
		return n < 0 ? -errno : -EIO;
	p->saved_seq = seq;
	p->saved_ctl = ctl_seq;
	return 0;
}

/* Once per ring: its identity is not kept, as before side files (a restarted relay will
 * be a new producer to the analyzer, its losses uncounted). */
static void unsaved(struct relay *r, struct producer *p, const char *side, int err)
{
	r->st.identity_unsaved++;
	ts_warn("relay: cannot keep the producer id of %s in %s: %s; a restarted relay will "
		"start it anew, without counting what this one loses",
		p->path, side, err == -EINVAL ? "not a plain file" : strerror(-err));
}

static uint64_t new_producer_id(const struct relay *r, const struct producer *p)
{
	return ts_splitmix64(r->relay_nonce ^ (uint64_t)p->id.pid ^ p->ring->start_real_ns);
}

/* The last relay's producer id and seqs from the side file, or new ones (relay_impl.h);
 * kept only once written, so a file that can be read but not written is not followed
 * twice. */
void relay_take_identity(struct relay *r, struct producer *p)
{
	char side[4200];
	struct side_rec s;
	bool resumed;
	int err;

	side_name(p->path, SIDE_RELAY, side, sizeof(side));
	p->producer_id = new_producer_id(r, p);
	if ((p->side_fd = side_open(side, r->opts.ring_dir)) < 0) {
		unsaved(r, p, side, p->side_fd);
		return;
	}
	if ((resumed = side_load(p, &s))) {
		p->producer_id = s.producer_id;
		p->seq = s.seq;
		p->ctl_seq = s.ctl_seq;
	}
	if ((err = side_write(p, p->seq, p->ctl_seq))) {
		p->producer_id = new_producer_id(r, p);
		p->seq = p->ctl_seq = 0;
		close(p->side_fd);
		p->side_fd = -1;
		unsaved(r, p, side, err);
	} else if (resumed) {
		ts_info("relay: %s: producer %016" PRIx64 " resumed after seq %" PRIu64, p->path,
			p->producer_id, p->seq);
	}
}

/* A write of the side file failed: a record left behind would hand seqs already sent to a
 * relay after this one, so it goes, and the identity is not kept. */
static void side_failed(struct relay *r, struct producer *p, int err)
{
	char side[4200];

	side_name(p->path, SIDE_RELAY, side, sizeof(side));
	if (unlink(side) < 0 && ftruncate(p->side_fd, 0) < 0)
		ts_warn("relay: %s is stale and stays: %s", side, strerror(errno));
	close(p->side_fd);
	p->side_fd = -1;
	unsaved(r, p, side, err);
}

/* The side file says at least seq and ctl_seq, or is gone (relay_impl.h). */
void relay_reserve(struct relay *r, struct producer *p, uint64_t seq, uint64_t ctl_seq)
{
	int err;

	if (p->side_fd < 0 || (seq <= p->saved_seq && ctl_seq <= p->saved_ctl))
		return;
	err = side_write(p, seq > p->saved_seq ? seq : p->saved_seq,
			 ctl_seq > p->saved_ctl ? ctl_seq : p->saved_ctl);
	if (err)
		side_failed(r, p, err);
}

void relay_unreserve(struct relay *r, struct producer *p)
{
	int err;

	if (p->side_fd < 0 || p->saved_seq <= p->seq)
		return;
	if ((err = side_write(p, p->seq, p->saved_ctl)))
		side_failed(r, p, err);
}

/* The side file's text (relay_impl.h). */
char *relay_read_side(const char *ring_path, const char *suffix, size_t max)
{
	char path[4200];
	FILE *f;
	char *buf;
	long size;
	size_t n;

	side_name(ring_path, suffix, path, sizeof(path));
	if (!(f = fopen(path, "r")))
		return NULL;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	if (size > (long)max)
		fseek(f, size - (long)max, SEEK_SET);
	else
		rewind(f);
	buf = malloc(max + 1);
	n = buf ? fread(buf, 1, max, f) : 0;
	if (buf)
		buf[n] = 0;
	fclose(f);
	return buf;
}

/* The producer's side file removed (relay_impl.h): after its ring, so that a relay killed
 * in between finds no ring to follow. */
void relay_side_remove(struct producer *p)
{
	char side[4200];

	side_name(p->path, SIDE_RELAY, side, sizeof(side));
	unlink(side);
	if (p->side_fd >= 0)
		close(p->side_fd);
	p->side_fd = -1;
}
