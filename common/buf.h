// SPDX-License-Identifier: Apache-2.0
/* A growable text buffer for rendering /metrics, JSON and reports. */
#ifndef TS_BUF_H
#define TS_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct ts_buf {
	char *data;
	size_t len, cap;
	int oom; /* set once an allocation failed; the text is then truncated */
};

void ts_buf_printf(struct ts_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ts_buf_vprintf(struct ts_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Binary data too (the text stays NUL-terminated after it). */
void ts_buf_append(struct ts_buf *b, const void *data, size_t n);
void ts_buf_free(struct ts_buf *b);

#endif
