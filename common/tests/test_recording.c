// SPDX-License-Identifier: Apache-2.0
/* Recordings (common/recording.h): what is written reads back byte for byte, in order, with
 * its time; a damaged file (cut short, a wrong header, a length over its bound) is refused
 * with the error the header promises, never read as a shorter clean one; a write that
 * cannot reach the disk is said at the close. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "recording.h"

static char dir[64];

/* dir/name into path. */
static void path_of(char *path, size_t n, const char *name)
{
	snprintf(path, n, "%s/%s", dir, name);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_recording.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Bytes that do not compress (an LCG's high bytes), so that a cut in the gzip file falls
 * within the frames. */
static void noise(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (uint8_t)(seed >> 24);
	}
}

/* Writes len bytes as the uncompressed content of the gzip file path. */
static void write_gz(const char *path, const void *data, size_t len)
{
	gzFile gz = gzopen(path, "wb");

	assert_non_null(gz);
	if (len)
		assert_int_equal(gzwrite(gz, data, (unsigned)len), (int)len);
	assert_int_equal(gzclose(gz), Z_OK);
}

/* Reads path to its end; returns what the last ts_rec_next said (0 clean, -errno) and the
 * frames before it in *frames. */
static int read_all(const char *path, int *frames)
{
	struct ts_rec *r;
	const char *subject;
	const void *data;
	uint64_t t;
	size_t len;
	int rc;

	*frames = 0;
	assert_int_equal(ts_rec_open_read(&r, path), 0);
	while ((rc = ts_rec_next(r, &t, &subject, &data, &len)) == 1)
		(*frames)++;
	assert_int_equal(ts_rec_next(r, &t, &subject, &data, &len), rc); /* it stays said */
	assert_int_equal(ts_rec_close(r), 0);
	return rc;
}

/* Frames of several kinds, an empty payload, the largest subject, a payload larger than
 * zlib's buffers and the extreme times: each comes back as written, then a clean end. */
static void test_round_trip(void **state)
{
	enum { BIG = 300 << 10 };
	char path[128], long_subject[TS_REC_MAX_SUBJECT + 1];
	static uint8_t big[BIG];
	const struct { uint64_t t; const char *subject; const void *data; size_t len; } f[] = {
		{ 1700000000123456789ull, "ts.v1.default.demo1.pod.p0", "\x0a\x03" "abc", 5 },
		{ 1700000000123456790ull, "ts.v1.default.demo1.rank.r1", NULL, 0 },
		{ 0, "ts.v1.default.demo1.hang.r0", "\0\0\0", 3 },
		{ UINT64_MAX, long_subject, big, BIG },
		{ 1700000001000000000ull, "ts.v1.default.demo1.ctl.end", "x", 1 },
	};
	enum { N = sizeof(f) / sizeof(f[0]) };
	struct ts_rec *r;
	const char *subject;
	const void *data;
	uint64_t t;
	size_t len;

	(void)state;
	memset(long_subject, 's', TS_REC_MAX_SUBJECT);
	long_subject[TS_REC_MAX_SUBJECT] = 0;
	noise(big, BIG, 7);
	path_of(path, sizeof(path), "round.tsrec.gz");
	assert_int_equal(ts_rec_open_write(&r, path), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(ts_rec_write(r, f[i].t, f[i].subject, f[i].data, f[i].len), 0);
	assert_int_equal(ts_rec_close(r), 0);

	assert_int_equal(ts_rec_open_read(&r, path), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(ts_rec_next(r, &t, &subject, &data, &len), 1);
		assert_true(t == f[i].t);
		assert_string_equal(subject, f[i].subject);
		assert_int_equal(len, f[i].len);
		assert_non_null(data);
		if (len)
			assert_memory_equal(data, f[i].data, len);
	}
	assert_int_equal(ts_rec_next(r, &t, &subject, &data, &len), 0);
	assert_int_equal(ts_rec_next(r, &t, &subject, &data, &len), 0);
	assert_int_equal(ts_rec_close(r), 0);
}

/* A header and no frame: a recording of nothing, read as one. */
static void test_empty_recording(void **state)
{
	char path[128];
	struct ts_rec *r;
	int frames;

	(void)state;
	path_of(path, sizeof(path), "empty.tsrec.gz");
	assert_int_equal(ts_rec_open_write(&r, path), 0);
	assert_int_equal(ts_rec_close(r), 0);
	assert_int_equal(read_all(path, &frames), 0);
	assert_int_equal(frames, 0);
}

/* A gzip file cut short, anywhere (within a frame's compressed data, or only its trailer
 * lost, as when the writer died before its close), and a complete gzip file whose last
 * frame is cut short: each -EBADMSG after the frames before, never a clean end. */
static void test_truncated(void **state)
{
	enum { FRAMES = 8, LEN = 16 << 10 };
	static uint8_t buf[TS_REC_MAGIC_LEN + 16 + 10];
	static uint8_t payload[LEN];
	char path[128];
	struct ts_rec *r;
	struct stat st;
	int frames;

	(void)state;
	path_of(path, sizeof(path), "cut.tsrec.gz");
	assert_int_equal(ts_rec_open_write(&r, path), 0);
	for (int i = 0; i < FRAMES; i++) {
		noise(payload, LEN, (uint32_t)i);
		assert_int_equal(ts_rec_write(r, (uint64_t)i, "ts.v1.ns.job.rank.r0", payload,
					      LEN), 0);
	}
	assert_int_equal(ts_rec_close(r), 0);
	assert_int_equal(read_all(path, &frames), 0);
	assert_int_equal(frames, FRAMES);
	assert_int_equal(stat(path, &st), 0);

	assert_int_equal(truncate(path, st.st_size - 4), 0); /* the trailer's length lost */
	assert_int_equal(read_all(path, &frames), -EBADMSG);
	assert_int_equal(frames, FRAMES);
	assert_int_equal(truncate(path, st.st_size / 2), 0); /* within the frames */
	assert_int_equal(read_all(path, &frames), -EBADMSG);
	assert_in_range(frames, 1, FRAMES - 1);

	/* the gzip whole, its last frame not: a header cut, then a subject cut */
	memcpy(buf, TS_REC_MAGIC, TS_REC_MAGIC_LEN);
	memset(buf + TS_REC_MAGIC_LEN, 0, sizeof(buf) - TS_REC_MAGIC_LEN);
	buf[TS_REC_MAGIC_LEN + 8] = 20; /* subject_len 20, data_len 0 */
	memset(buf + TS_REC_MAGIC_LEN + 16, 'x', 10);
	write_gz(path, buf, TS_REC_MAGIC_LEN + 7);
	assert_int_equal(read_all(path, &frames), -EBADMSG);
	write_gz(path, buf, sizeof(buf));
	assert_int_equal(read_all(path, &frames), -EBADMSG);
	assert_int_equal(frames, 0);
}

/* Lengths over their bounds, an empty subject and one with a NUL: refused on reading, and
 * the writer refuses to write what the reader would refuse. */
static void test_bounds(void **state)
{
	static const struct { uint32_t slen, dlen; } bad[] = {
		{ TS_REC_MAX_SUBJECT + 1, 0 }, { 5, TS_REC_MAX_DATA + 1 }, { 0, 0 },
		{ UINT32_MAX, UINT32_MAX },
	};
	static char subject[TS_REC_MAX_SUBJECT + 2];
	uint8_t buf[TS_REC_MAGIC_LEN + 16 + 5];
	char path[128];
	struct ts_rec *r;
	int frames;

	(void)state;
	path_of(path, sizeof(path), "bounds.tsrec.gz");
	memcpy(buf, TS_REC_MAGIC, TS_REC_MAGIC_LEN);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t *h = buf + TS_REC_MAGIC_LEN;
		memset(h, 0, 16);
		for (int b = 0; b < 4; b++) {
			h[8 + b] = (uint8_t)(bad[i].slen >> (8 * b));
			h[12 + b] = (uint8_t)(bad[i].dlen >> (8 * b));
		}
		memcpy(h + 16, "ts.v1", 5);
		write_gz(path, buf, sizeof(buf));
		assert_int_equal(read_all(path, &frames), -EBADMSG);
	}
	buf[TS_REC_MAGIC_LEN + 8] = 5, buf[TS_REC_MAGIC_LEN + 9] = 0;
	buf[TS_REC_MAGIC_LEN + 12] = 0, buf[TS_REC_MAGIC_LEN + 13] = 0;
	buf[TS_REC_MAGIC_LEN + 14] = 0, buf[TS_REC_MAGIC_LEN + 15] = 0;
	buf[TS_REC_MAGIC_LEN + 16 + 2] = 0; /* "ts\0v1" */
	write_gz(path, buf, sizeof(buf));
	assert_int_equal(read_all(path, &frames), -EBADMSG);

	assert_int_equal(ts_rec_open_write(&r, path), 0);
	memset(subject, 's', TS_REC_MAX_SUBJECT + 1);
	assert_int_equal(ts_rec_write(r, 1, subject, "x", 1), -EMSGSIZE);
	assert_int_equal(ts_rec_write(r, 1, "ts.v1.a", "x", (size_t)TS_REC_MAX_DATA + 1),
			 -EMSGSIZE);
	assert_int_equal(ts_rec_write(r, 1, "", "x", 1), -EINVAL);
	assert_int_equal(ts_rec_write(r, 1, "ts.v1.a", NULL, 1), -EINVAL);
	assert_int_equal(ts_rec_write(r, 1, "ts.v1.a", "x", 1), 0); /* still usable */
	assert_int_equal(ts_rec_close(r), 0);
	assert_int_equal(read_all(path, &frames), 0);
	assert_int_equal(frames, 1);
}

/* Files that are no recording: refused at the open, with nothing left open. */
static void test_wrong_header(void **state)
{
	static const char *const heads[] = {
		"trainscope-recording 2\n", "trainscope-recording 1\r", "TRAINSCOPE-RECORDING 1\n",
		"trainscope-recording", "",
	};
	char path[128];
	struct ts_rec *r = NULL;
	FILE *f;

	(void)state;
	path_of(path, sizeof(path), "head.tsrec.gz");
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		write_gz(path, heads[i], strlen(heads[i]));
		assert_int_equal(ts_rec_open_read(&r, path), -EPROTO);
	}
	f = fopen(path, "w"); /* not gzip, not a recording: read as it is, and refused */
	assert_non_null(f);
	fputs("{\"not\": \"a recording\"}\n", f);
	fclose(f);
	assert_int_equal(ts_rec_open_read(&r, path), -EPROTO);
	path_of(path, sizeof(path), "missing.tsrec.gz");
	assert_int_equal(ts_rec_open_read(&r, path), -ENOENT);
	assert_null(r);
}

/* A recording zcat unpacked reads as the gzip one. */
static void test_uncompressed(void **state)
{
	uint8_t buf[TS_REC_MAGIC_LEN + 16 + 7 + 2] = { 0 };
	char path[128];
	struct ts_rec *r;
	const char *subject;
	const void *data;
	uint64_t t;
	size_t len;
	FILE *f;

	(void)state;
	memcpy(buf, TS_REC_MAGIC, TS_REC_MAGIC_LEN);
	buf[TS_REC_MAGIC_LEN] = 42;
	buf[TS_REC_MAGIC_LEN + 8] = 7;
	buf[TS_REC_MAGIC_LEN + 12] = 2;
	memcpy(buf + TS_REC_MAGIC_LEN + 16, "ts.v1.x" "hi", 9);
	path_of(path, sizeof(path), "plain.tsrec");
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, sizeof(buf), f), sizeof(buf));
	fclose(f);
	assert_int_equal(ts_rec_open_read(&r, path), 0);
	assert_int_equal(ts_rec_next(r, &t, &subject, &data, &len), 1);
	assert_true(t == 42);
	assert_string_equal(subject, "ts.v1.x");
	assert_int_equal(len, 2);
	assert_memory_equal(data, "hi", 2);
	assert_int_equal(ts_rec_next(r, &t, &subject, &data, &len), 0);
	assert_int_equal(ts_rec_close(r), 0);
}

/* A disk that takes nothing (/dev/full): the writes or at the latest the close say -EIO;
 * a folder that is missing fails the open; a reader takes no write, a writer no read. */
static void test_write_errors(void **state)
{
	static uint8_t payload[256 << 10];
	struct ts_rec *r;
	const char *subject;
	const void *data;
	uint64_t t;
	size_t len;
	char path[128];
	int rc = 0;

	(void)state;
	if (access("/dev/full", W_OK) == 0) {
		assert_int_equal(ts_rec_open_write(&r, "/dev/full"), 0);
		for (int i = 0; i < 4 && !rc; i++) { /* past zlib's buffer: a write fails */
			noise(payload, sizeof(payload), (uint32_t)i);
			rc = ts_rec_write(r, 1, "ts.v1.a", payload, sizeof(payload));
		}
		assert_int_equal(rc, -EIO);
		assert_int_equal(ts_rec_write(r, 1, "ts.v1.a", "x", 1), -EIO);
		assert_int_equal(ts_rec_close(r), -EIO);
		assert_int_equal(ts_rec_open_write(&r, "/dev/full"), 0);
		assert_int_equal(ts_rec_write(r, 1, "ts.v1.a", "x", 1), 0); /* buffered */
		assert_int_equal(ts_rec_close(r), -EIO);                    /* lost at the close */
	}
	path_of(path, sizeof(path), "no/such/folder.tsrec.gz");
	assert_int_equal(ts_rec_open_write(&r, path), -ENOENT);

	path_of(path, sizeof(path), "modes.tsrec.gz");
	assert_int_equal(ts_rec_open_write(&r, path), 0);
	assert_int_equal(ts_rec_next(r, &t, &subject, &data, &len), -EINVAL);
	assert_int_equal(ts_rec_close(r), 0);
	assert_int_equal(ts_rec_open_read(&r, path), 0);
	assert_int_equal(ts_rec_write(r, 1, "ts.v1.a", "x", 1), -EINVAL);
	assert_int_equal(ts_rec_close(r), 0);
	assert_int_equal(ts_rec_close(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_empty_recording),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_wrong_header),
		cmocka_unit_test(test_uncompressed),
		cmocka_unit_test(test_write_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
