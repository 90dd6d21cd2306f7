// SPDX-License-Identifier: Apache-2.0
/* make fuzz, target recording: any bytes as a recording file (gzip or, as zlib reads a file
 * that is not, the frames themselves). The reader stays within its bounds and ends with 1s
 * then 0 or a negative errno; the frames it gave, written again, read back the same. */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "recording.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A file in memory holding size bytes of data, named in path. Returns its descriptor. */
static int mem_file(char *path, size_t n, const uint8_t *data, size_t size)
{
	int fd = memfd_create("recording", MFD_CLOEXEC);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, n, "/proc/self/fd/%d", fd);
	return fd;
}

/* Reads the recording at in, copying each frame into the recording at out (NULL: none).
 * Returns the frames read; *end gets ts_rec_next's last answer. */
static int copy(const char *in, struct ts_rec *out, int *end)
{
	struct ts_rec *r;
	const char *subject;
	const void *data;
	uint64_t t;
	size_t len;
	int n = 0, rc;

	if (ts_rec_open_read(&r, in)) {
		*end = -EPROTO;
		return 0;
	}
	while ((rc = ts_rec_next(r, &t, &subject, &data, &len)) == 1) {
		size_t slen = strlen(subject);
		if (!slen || slen > TS_REC_MAX_SUBJECT || len > TS_REC_MAX_DATA || !data)
			abort();
		if (out && ts_rec_write(out, t, subject, data, len))
			abort();
		n++;
	}
	if (rc != 0 && rc != -EBADMSG && rc != -ENOMEM && rc != -EIO)
		abort();
	if (ts_rec_next(r, &t, &subject, &data, &len) != rc || ts_rec_close(r))
		abort();
	*end = rc;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[64], again[64];
	int fd_in = mem_file(in, sizeof(in), data, size);
	int fd_again = mem_file(again, sizeof(again), NULL, 0);
	struct ts_rec *w;
	int end, end2, n;

	if (ts_rec_open_write(&w, again))
		abort();
	n = copy(in, w, &end);
	if (ts_rec_close(w) || copy(again, NULL, &end2) != n || end2 != 0)
		abort();
	close(fd_in);
	close(fd_again);
	return 0;
}
