// SPDX-License-Identifier: Apache-2.0
#include "b64.h"

#include <stdlib.h>
#include <string.h>

static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *ts_b64_encode(const char *s)
{
	size_t n = strlen(s), k = 0;
	char *out = malloc(4 * ((n + 2) / 3) + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		out[k++] = tab[v >> 18 & 63];
		out[k++] = tab[v >> 12 & 63];
		out[k++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
		out[k++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[k] = 0;
	return out;
}

char *ts_b64_decode(const char *s)
{
	size_t n = strlen(s), k = 0;
	char *out = malloc(n + 1);
	unsigned acc = 0;
	int bits = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *p = strchr(tab, s[i]);
		if (!p)
			continue; /* padding, newlines */
		acc = acc << 6 | (unsigned)(p - tab);
		if ((bits += 6) >= 8) {
			bits -= 8;
			out[k++] = (char)(acc >> bits & 0xff);
		}
	}
	out[k] = 0;
	return out;
}
