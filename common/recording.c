// SPDX-License-Identifier: Apache-2.0
/* Recordings of a job's messages (recording.h): a writer and a reader on zlib's gz API. */
#include "recording.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* A frame's fixed part: t_ns, subject_len, data_len. */
#define FRAME_HEAD 16
/* zlib's buffers for the file, each way (its default of 8 KiB makes a read or write of
 * the file for every few messages). */
#define GZ_BUFFER (128u << 10)

_Static_assert(sizeof(TS_REC_MAGIC) - 1 == TS_REC_MAGIC_LEN, "TS_REC_MAGIC_LEN");

struct ts_rec {
	gzFile gz;
	bool writing;
	int err;                               /* the first failure; every later call returns it */
	char subject[TS_REC_MAX_SUBJECT + 1];  /* reading: the frame's subject, NUL-terminated */
	uint8_t *data;                         /* reading: the frame's payload */
	size_t cap;                            /* of data */
};

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The failure zlib recorded for gz, as a negative errno: -EIO for the file's own (Z_ERRNO),
 * -ENOMEM, and -EBADMSG for the data's (not gzip data, a CRC that does not match, a
 * stream cut short). */
static int gz_errno(gzFile gz)
{
	int zerr = Z_OK;

	gzerror(gz, &zerr);
	return zerr == Z_ERRNO ? -EIO : zerr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
}

/* Opens path with mode for a new ts_rec. Returns 0 with *out set, -errno from the open, or
 * -ENOMEM. */
static int rec_open(struct ts_rec **out, const char *path, const char *mode, bool writing)
{
	struct ts_rec *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	errno = 0;
	r->gz = gzopen(path, mode);
	if (!r->gz) {
		int err = errno ? -errno : -ENOMEM; /* zlib leaves errno 0 when out of memory */
		free(r);
		return err;
	}
	gzbuffer(r->gz, GZ_BUFFER);
	r->writing = writing;
	*out = r;
	return 0;
}

/* Writes len bytes (none: nothing, for gzwrite's 0 means failure). Returns 0 or -EIO. */
static int write_all(gzFile gz, const void *buf, size_t len)
{
	return !len || gzwrite(gz, buf, (unsigned)len) == (int)len ? 0 : -EIO;
}

int ts_rec_open_write(struct ts_rec **out, const char *path)
{
	struct ts_rec *r;
	int rc = rec_open(&r, path, "wbe", true);

	if (rc)
		return rc;
	if (write_all(r->gz, TS_REC_MAGIC, TS_REC_MAGIC_LEN)) {
		gzclose(r->gz);
		free(r);
		return -EIO;
	}
	*out = r;
	return 0;
}

int ts_rec_write(struct ts_rec *r, uint64_t t_ns, const char *subject, const void *data,
		 size_t len)
{
	uint8_t head[FRAME_HEAD + TS_REC_MAX_SUBJECT];
	size_t slen = subject ? strlen(subject) : 0;

	if (!r->writing || !slen || (len && !data))
		return -EINVAL;
	if (r->err)
		return r->err;
	if (slen > TS_REC_MAX_SUBJECT || len > TS_REC_MAX_DATA)
		return -EMSGSIZE;
	put_le(head, t_ns, 8);
	put_le(head + 8, slen, 4);
	put_le(head + 12, len, 4);
	memcpy(head + FRAME_HEAD, subject, slen);
	if (write_all(r->gz, head, FRAME_HEAD + slen) || write_all(r->gz, data, len))
		r->err = -EIO;
	return r->err;
}

/* Reads len bytes. Returns 1 with all of them; 0 with none, at the clean end of the
 * file; -EBADMSG with some only, or at an end that is not clean (the gzip stream cut
 * short); another -errno as gz_errno says. */
static int read_exact(gzFile gz, void *buf, size_t len)
{
	int got = len ? gzread(gz, buf, (unsigned)len) : 0;
	int zerr = Z_OK;

	if (got >= 0 && (size_t)got == len)
		return 1;
	gzerror(gz, &zerr);
	if (got < 0 || zerr != Z_OK)
		return gz_errno(gz);
	return got ? -EBADMSG : 0;
}

int ts_rec_open_read(struct ts_rec **out, const char *path)
{
	char magic[TS_REC_MAGIC_LEN];
	struct ts_rec *r;
	int rc = rec_open(&r, path, "rbe", false);

	if (rc)
		return rc;
	rc = read_exact(r->gz, magic, sizeof(magic));
	if (rc == 1 && memcmp(magic, TS_REC_MAGIC, sizeof(magic)))
		rc = -EPROTO;
	if (rc != 1) {
		gzclose(r->gz);
		free(r);
		return rc == -EIO || rc == -ENOMEM ? rc : -EPROTO;
	}
	*out = r;
	return 0;
}

/* Room for len bytes of payload. Returns 0 or -ENOMEM. */
static int reserve(struct ts_rec *r, size_t len)
{
	size_t cap = r->cap ? r->cap : 4096;
	uint8_t *p;

	if (len <= r->cap)
		return 0;
	while (cap < len)
		cap *= 2;
	p = realloc(r->data, cap);
	if (!p)
		return -ENOMEM;
	r->data = p;
	r->cap = cap;
	return 0;
}

/* One frame into r->subject and r->data (ts_rec_next). Returns 1, 0 at the clean end, or
 * -errno. */
static int read_frame(struct ts_rec *r, uint64_t *t_ns, size_t *len)
{
	uint8_t head[FRAME_HEAD];
	uint64_t slen, dlen;
	int rc = read_exact(r->gz, head, sizeof(head));

	if (rc != 1)
		return rc;
	slen = get_le(head + 8, 4);
	dlen = get_le(head + 12, 4);
	if (!slen || slen > TS_REC_MAX_SUBJECT || dlen > TS_REC_MAX_DATA)
		return -EBADMSG;
	if ((rc = reserve(r, dlen)) < 0)
		return rc;
	if ((rc = read_exact(r->gz, r->subject, slen)) != 1 ||
	    (rc = read_exact(r->gz, r->data, dlen)) != 1)
		return rc ? rc : -EBADMSG; /* a clean end in a frame is a frame cut short */
	r->subject[slen] = 0;
	if (memchr(r->subject, 0, slen))
		return -EBADMSG;
	*t_ns = get_le(head, 8);
	*len = dlen;
	return 1;
}

int ts_rec_next(struct ts_rec *r, uint64_t *t_ns, const char **subject, const void **data,
		size_t *len)
{
	int rc;

	if (r->writing)
		return -EINVAL;
	if (r->err)
		return r->err;
	rc = read_frame(r, t_ns, len);
	if (rc < 0) {
		r->err = rc;
		return rc;
	}
	if (rc == 1) {
		*subject = r->subject;
		*data = r->data ? (const void *)r->data : (const void *)"";
	}
	return rc;
}

int ts_rec_close(struct ts_rec *r)
{
	int rc = 0;

	if (!r)
		return 0;
	if (gzclose(r->gz) != Z_OK && r->writing)
		rc = -EIO;
	if (r->writing && r->err)
		rc = -EIO;
	free(r->data);
	free(r);
	return rc;
}
