// SPDX-License-Identifier: Apache-2.0
#include "peers.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool replica(const char *dim)
{
	return !strcmp(dim, "dp") || !strcmp(dim, "cp");
}

/* Megatron's form, "megatron:tp=2,pp=4,dp=8" with an optional order=tp-cp-ep-dp-pp (its
 * default, fastest-varying first: the pipeline outermost), into ours ("tp2-dp8-pp4"):
 * dimensions in that order, those not given left out. */
static int megatron_text(const char *spec, char *out, size_t n, char *err, size_t errlen)
{
	char order[64] = "tp-cp-ep-dp-pp", sizes[8][8] = { { 0 } }, names[8][8] = { { 0 } };
	const char *p = spec;
	int ns = 0;
	size_t len = 0;

	while (*p) {
		char key[16] = "", val[64] = "";
		if (sscanf(p, "%15[^=,]=%63[^,]", key, val) != 2) {
			snprintf(err, errlen, "layout 'megatron:%s': expected tp=2,pp=4,dp=8 (and "
				 "order=tp-cp-ep-dp-pp, Megatron's default)", spec);
			return -EINVAL;
		}
		if (!strcmp(key, "order"))
			snprintf(order, sizeof(order), "%s", val);
		else if (ns < 8)
			snprintf(names[ns], sizeof(names[ns]), "%s", key),
			snprintf(sizes[ns++], sizeof(sizes[0]), "%s", val);
		p += strcspn(p, ",");
		p += *p == ',';
	}
	out[0] = 0;
	char *save = NULL;

	for (char *d = strtok_r(order, "-", &save); d; d = strtok_r(NULL, "-", &save))
		for (int i = 0; i < ns; i++)
			if (!strcmp(names[i], d) && len < n)
				len += (size_t)snprintf(out + len, n - len, "%s%s%s", len ? "-" : "",
							d, sizes[i]);
	for (int i = 0; i < ns; i++)
		if (!strstr(out, names[i])) {
			snprintf(err, errlen, "layout 'megatron:%s': '%s' is not in the order %s",
				 spec, names[i], order);
			return -EINVAL;
		}
	return 0;
}

int ts_layout_parse(struct ts_layout *l, const char *text, char *err, size_t errlen)
{
	const char *p = text;
	char mtext[128];

	if (text && !strncmp(text, "megatron:", 9)) {
		int rc = megatron_text(text + 9, mtext, sizeof(mtext), err, errlen);
		if (rc)
			return rc;
		p = text = mtext;
	}

	memset(l, 0, sizeof(*l));
	while (p && *p) {
		size_t n = 0;
		char *end;
		if (l->ndims == TS_LAYOUT_MAX_DIMS) {
			snprintf(err, errlen, "layout '%s': more than %d dimensions", text,
				 TS_LAYOUT_MAX_DIMS);
			return -EINVAL;
		}
		while (isalpha((unsigned char)p[n]) && n < sizeof(l->name[0]) - 1)
			n++;
		long v = n ? strtol(p + n, &end, 10) : 0;
		if (!n || end == p + n || v < 1 || v > 1 << 20 || (*end && *end != '-' && *end != ',')) {
			snprintf(err, errlen, "layout '%s': expected dimensions like tp2-pp4-dp8 "
				 "(a name, its size >= 1, '-' between them)", text);
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i++)
			l->name[l->ndims][i] = (char)tolower((unsigned char)p[i]);
		for (int d = 0; d < l->ndims; d++)
			if (!strcmp(l->name[d], l->name[l->ndims])) {
				snprintf(err, errlen, "layout '%s': dimension '%s' twice", text,
					 l->name[d]);
				return -EINVAL;
			}
		l->size[l->ndims++] = (int)v;
		p = *end ? end + 1 : end;
	}
	if (!l->ndims || ts_layout_world(l) > 1 << 22) {
		snprintf(err, errlen, "layout '%s': %s", text ? text : "",
			 l->ndims ? "more than 4194304 ranks" : "empty");
		return -EINVAL;
	}
	return 0;
}

long ts_layout_world(const struct ts_layout *l)
{
	long w = 1;

	for (int d = 0; d < l->ndims; d++)
		w *= l->size[d];
	return l->ndims ? w : 0;
}

int ts_layout_class(const struct ts_layout *l, int rank)
{
	long r = rank, cls = 0, scale = 1;

	if (rank < 0 || rank >= ts_layout_world(l))
		return -1;
	for (int d = 0; d < l->ndims; d++) {
		long c = r % l->size[d];
		r /= l->size[d];
		if (replica(l->name[d]))
			continue;
		cls += c * scale;
		scale *= l->size[d];
	}
	return (int)cls;
}

int ts_layout_classes(const struct ts_layout *l)
{
	int n = 1;

	for (int d = 0; d < l->ndims; d++)
		if (!replica(l->name[d]))
			n *= l->size[d];
	return n;
}

int ts_layout_coord(const struct ts_layout *l, int rank, const char *dim)
{
	long r = rank;

	if (rank < 0 || rank >= ts_layout_world(l))
		return -1;
	for (int d = 0; d < l->ndims; r /= l->size[d], d++)
		if (!strcmp(l->name[d], dim))
			return (int)(r % l->size[d]);
	return -1;
}

void ts_layout_coords(const struct ts_layout *l, int rank, char *out, size_t n)
{
	size_t len = 0;
	long r = rank;

	out[0] = 0;
	for (int d = 0; d < l->ndims && len < n; d++) {
		len += (size_t)snprintf(out + len, n - len, "%s%s%ld", d ? "-" : "", l->name[d],
					r % l->size[d]);
		r /= l->size[d];
	}
}
