// SPDX-License-Identifier: Apache-2.0
/* Recordings: the messages of a job as the TRAINSCOPE stream held them, each with the time
 * it reached the server, in one file that can be replayed offline (trainscope record
 * writes them).
 *
 * The file is gzip-compressed. Uncompressed, it starts with the 23-byte line
 * TS_REC_MAGIC, then one frame per message, in the stream's order:
 *
 *   u64 t_ns         the JetStream stored timestamp, UNIX ns, little-endian
 *   u32 subject_len  little-endian, 1 to TS_REC_MAX_SUBJECT
 *   u32 data_len     little-endian, 0 to TS_REC_MAX_DATA
 *   subject_len bytes of the subject (no NUL), data_len bytes of the payload
 *
 * The subject and payload are the bytes the server held, neither decoded nor re-encoded;
 * the message's headers are not kept. */
#ifndef TS_RECORDING_H
#define TS_RECORDING_H

#include <stddef.h>
#include <stdint.h>

#define TS_REC_MAGIC "trainscope-recording 1\n"
#define TS_REC_MAGIC_LEN 23
/* Subjects are ts.v1.<ns>.<job>.<kind>.<leaf>[.<partition>], tokens of at most 63 bytes
 * (ts_subject): about 270 bytes; the bound leaves room and refuses nonsense lengths. */
#define TS_REC_MAX_SUBJECT 1024
/* nats-server refuses a max_payload over 64 MB: no message of the stream is larger. */
#define TS_REC_MAX_DATA (64u << 20)

struct ts_rec;

/* Creates (or truncates) the recording path and writes its header. Returns 0 with *out set,
 * -errno when the file cannot be opened (-ENOENT, -EACCES...), -ENOMEM, or -EIO when the
 * header cannot be written (nothing is left open). */
int ts_rec_open_write(struct ts_rec **out, const char *path);

/* Appends one frame: t_ns, the NUL-terminated subject and len bytes of data (data may be
 * NULL when len is 0). Returns 0; -EINVAL (r opened for reading, an empty subject);
 * -EMSGSIZE when the subject or data exceeds TS_REC_MAX_SUBJECT or TS_REC_MAX_DATA, which a
 * reader would refuse (nothing written, r stays usable); -EIO when the file cannot be
 * written, after which every write and the close return -EIO. */
int ts_rec_write(struct ts_rec *r, uint64_t t_ns, const char *subject, const void *data,
		 size_t len);

/* Opens the recording path and checks its header. A file that is not gzip-compressed (a
 * recording zcat has unpacked) reads as well. Returns 0 with *out set, -errno when the file
 * cannot be opened, -ENOMEM, -EPROTO when it does not start with TS_REC_MAGIC (an empty
 * file included), or -EIO on a read error (nothing is left open). */
int ts_rec_open_read(struct ts_rec **out, const char *path);

/* The next frame: 1 with *t_ns, *subject (NUL-terminated), *data (never NULL) and *len set,
 * valid until the next call or the close; 0 at a clean end of the file. -EBADMSG on damage:
 * a frame cut short, a length over its bound, an empty subject or one holding a NUL, data
 * that does not decompress, or a gzip stream that ends without its trailer (a writer that
 * never closed: the frames before were given whole, but none is checked by the trailer's
 * CRC). -EIO on a read error, -ENOMEM, -EINVAL (r opened for writing). After an error
 * every later call returns it again. */
int ts_rec_next(struct ts_rec *r, uint64_t *t_ns, const char **subject, const void **data,
		size_t *len);

/* Closes r and frees it (NULL: nothing). Writing, the data is flushed and the gzip trailer
 * written: returns -EIO when that or any earlier write failed (the file is then incomplete),
 * else 0. Reading returns 0: damage is ts_rec_next's to say. */
int ts_rec_close(struct ts_rec *r);

#endif
