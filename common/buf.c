// SPDX-License-Identifier: Apache-2.0
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int buf_reserve(struct ts_buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 256;
	char *p;

	if (b->len + need + 1 <= b->cap)
		return 0;
	while (cap < b->len + need + 1)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

void ts_buf_vprintf(struct ts_buf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n >= 0 && !buf_reserve(b, (size_t)n)) {
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
}

void ts_buf_printf(struct ts_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ts_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void ts_buf_append(struct ts_buf *b, const void *data, size_t n)
{
	if (buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = 0;
}

void ts_buf_free(struct ts_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
