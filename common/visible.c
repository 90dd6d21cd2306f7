// SPDX-License-Identifier: Apache-2.0
#include "visible.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIS_MAX 256     /* entries in a list; the Ascend runtime's devices go up to 128 */
#define VIS_ID_MAX 4096 /* a device number above this is no device number */

/* Entries of a comma-separated list ("" has none). */
static int list_count(const char *s)
{
	int n = *s != 0;

	for (; *s; s++)
		n += *s == ',';
	return n;
}

/* Entry k of a list into out, blanks around it dropped when trim; -1 when too long. */
static int list_entry(const char *s, int k, bool trim, char *out, size_t n)
{
	size_t len;

	for (; k > 0 && s; k--)
		if ((s = strchr(s, ',')))
			s++;
	if (!s)
		return -1;
	len = strcspn(s, ",");
	for (; trim && len && (*s == ' ' || *s == '\t'); len--)
		s++;
	for (; trim && len && (s[len - 1] == ' ' || s[len - 1] == '\t'); len--)
		;
	if (len >= n)
		return -1;
	memcpy(out, s, len);
	out[len] = 0;
	return 0;
}

/* A plain decimal device number: no sign, no blanks, no "0x". *v is set on success only. */
static bool parse_id(const char *s, int32_t *v)
{
	long l = 0;

	if (!*s)
		return false;
	for (; *s >= '0' && *s <= '9' && l < VIS_ID_MAX; s++)
		l = l * 10 + (*s - '0');
	if (*s || l >= VIS_ID_MAX)
		return false;
	*v = (int32_t)l;
	return true;
}

static bool is_uuid(const char *s)
{
	return !strncmp(s, "GPU-", 4) || !strncmp(s, "MIG-", 4);
}

static int cmp_id(const void *a, const void *b)
{
	return *(const int32_t *)a - *(const int32_t *)b;
}

/* One entry of ASCEND_VISIBLE_DEVICES as the Ascend docker runtime reads it: "3",
 * a range "0-3", or a name "Ascend910-3". Appends to ids; false on bad input. */
static bool ascend_entry(const char *tok, int32_t *ids, int *n)
{
	const char *dash = strchr(tok, '-');
	char first[16];
	int32_t lo, hi;

	if (!strncmp(tok, "Ascend", 6) && dash) { /* a name: the number after its dash */
		tok = dash + 1;
		dash = NULL;
	}
	if (!dash) {
		if (!parse_id(tok, &lo))
			return false;
		hi = lo;
	} else if ((size_t)(dash - tok) >= sizeof(first)) {
		return false;
	} else {
		memcpy(first, tok, (size_t)(dash - tok));
		first[dash - tok] = 0;
		if (!parse_id(first, &lo) || !parse_id(dash + 1, &hi) || lo > hi)
			return false;
	}
	for (; lo <= hi; lo++) {
		if (*n == VIS_MAX)
			return false;
		ids[(*n)++] = lo;
	}
	return true;
}

/* The davinci numbers a container got (ASCEND_VISIBLE_DEVICES), as a list in ascending
 * order without duplicates into out: the container's device i is the i-th of them (the
 * device plugin may list them in any order; the runtime means to sort them). Returns
 * false for bad input, "void", and vNPU ids (ASCEND_RUNTIME_OPTIONS=VIRTUAL): no chips. */
static bool ascend_base(const char *s, char *out, size_t n)
{
	const char *opts = getenv("ASCEND_RUNTIME_OPTIONS");
	int32_t ids[VIS_MAX];
	int count = 0, k, u = 0;
	size_t len = 0;
	char tok[64];

	if (opts && strstr(opts, "VIRTUAL"))
		return false;
	for (k = 0; k < list_count(s); k++)
		if (list_entry(s, k, true, tok, sizeof(tok)) || !ascend_entry(tok, ids, &count))
			return false;
	qsort(ids, (size_t)count, sizeof(ids[0]), cmp_id);
	for (k = 0, out[0] = 0; k < count && len < n; k++) {
		if (k && ids[k] == ids[u - 1])
			continue;
		ids[u++] = ids[k];
		len += (size_t)snprintf(out + len, n - len, "%s%d", u > 1 ? "," : "", ids[k]);
	}
	return count > 0 && len < n;
}

/* NVIDIA_VISIBLE_DEVICES: device numbers or UUIDs the container got. "all" (or unset)
 * is no subset: NULL. Returns false for "none", "void" and bad input. */
static bool nvidia_base(const char *s, const char **base)
{
	char tok[64];
	int32_t v;

	*base = NULL;
	if (!s || !*s || !strcmp(s, "all"))
		return true;
	for (int k = 0; k < list_count(s); k++)
		if (list_entry(s, k, true, tok, sizeof(tok)) || (!parse_id(tok, &v) && !is_uuid(tok)))
			return false;
	*base = s;
	return true;
}

/* How many of sel's entries the runtimes take (CANN's ASCEND_RT_VISIBLE_DEVICES and
 * CUDA_VISIBLE_DEVICES alike): up to the first that is no index into base (NULL: the
 * node's own numbering), or no UUID where uuids. Entries are taken as they are, blanks
 * included ("1, 2" is "1" to CANN). */
static int sel_count(const char *base, const char *sel, bool uuids)
{
	int nbase = base ? list_count(base) : 0, len = 0;
	char tok[64];
	int32_t v;

	while (len < list_count(sel) && !list_entry(sel, len, false, tok, sizeof(tok)) &&
	       (parse_id(tok, &v) ? !base || v < nbase : uuids && is_uuid(tok)))
		len++;
	return len;
}

/* Entry pos of the process's visible list into out: sel's entries index base; without
 * sel, base itself is the list. pos is 0 when the list has one entry. */
static bool pick(const char *base, const char *sel, bool uuids, int32_t pos, char *out,
		 size_t n)
{
	bool has_sel = sel && *sel;
	int len = has_sel ? sel_count(base, sel, uuids) : base ? list_count(base) : 0;
	int k = len == 1 ? 0 : pos;
	char tok[64];
	int32_t v;

	if (k < 0 || k >= len)
		return false;
	if (!has_sel)
		return !list_entry(base, k, true, out, n);
	if (list_entry(sel, k, false, tok, sizeof(tok)))
		return false;
	if (base && parse_id(tok, &v))
		return !list_entry(base, v, true, out, n);
	return snprintf(out, n, "%s", tok) < (int)n;
}

int ts_visible_device(int32_t local_rank, int32_t *index, char *uuid, size_t n)
{
	const char *asc = getenv("ASCEND_VISIBLE_DEVICES"), *rt = getenv("ASCEND_RT_VISIBLE_DEVICES");
	const char *nv = getenv("NVIDIA_VISIBLE_DEVICES"), *cuda = getenv("CUDA_VISIBLE_DEVICES");
	char base[VIS_MAX * 5], dev[64] = "";
	const char *nvbase;
	bool found = false;

	if (asc && *asc) /* a container's chips */
		found = ascend_base(asc, base, sizeof(base)) &&
			pick(base, rt, false, local_rank, dev, sizeof(dev));
	else if (rt && *rt) /* bare metal: CANN's own numbering */
		found = pick(NULL, rt, false, local_rank, dev, sizeof(dev));
	if (!found && ((nv && *nv) || (cuda && *cuda)) && nvidia_base(nv, &nvbase))
		found = pick(nvbase, cuda, true, local_rank, dev, sizeof(dev));
	if (!found)
		return 0;
	if (parse_id(dev, index))
		return 1;
	return is_uuid(dev) && (size_t)snprintf(uuid, n, "%s", dev) < n ? 2 : 0;
}

