// SPDX-License-Identifier: Apache-2.0
#include "names.h"
#include "hash.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint32_t hash32(const char *s)
{
	return (uint32_t)ts_fnv1a(s, strlen(s));
}

static bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* Copies name into out (at most max characters) through keep(): a character it refuses
 * becomes sub; upper case letters are lowered when lower. When anything changed (or
 * the name is empty or too long), "-<hash of the original>" is appended. */
static void map_name(char *out, size_t n, const char *name, size_t max, bool lower,
		     bool (*keep)(char c, size_t at), char sub)
{
	size_t len = strlen(name), k = 0;
	bool changed = len == 0 || len > max;
	size_t room = max > 9 ? max - 9 : 0; /* the suffix's room, should one be needed */

	if (n == 0)
		return;
	for (size_t i = 0; i < len && k + 1 < n && k < max; i++) {
		char c = name[i];
		if (lower && c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a'), changed = true;
		if (!keep(c, k))
			c = keep(sub, k) ? sub : 'x', changed = true;
		out[k++] = c;
	}
	if (changed) {
		if (k > room)
			k = room;
		if (k == 0 && n > 1)
			out[k++] = 'x'; /* a name starts with an alphanumeric */
		if (k + 10 <= n)
			k += (size_t)snprintf(out + k, n - k, "-%08x", hash32(name));
	}
	out[k] = 0;
}

static bool dns_char(char c, size_t at)
{
	return lower_alnum(c) || (at > 0 && (c == '-' || c == '.'));
}

static bool dns_label_char(char c, size_t at)
{
	return lower_alnum(c) || (at > 0 && c == '-');
}

/* A DNS-1123 label: 1 to 63 of [a-z0-9-], alphanumeric at both ends. */
static bool valid_label(const char *s, size_t len)
{
	if (!len || len > 63 || !lower_alnum(s[0]) || !lower_alnum(s[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* A DNS-1123 subdomain: labels joined by '.', at most max in all. */
static bool valid_subdomain(const char *s, size_t max)
{
	size_t len = strlen(s);

	if (!len || len > max)
		return false;
	for (const char *p = s, *dot;; p = dot + 1) {
		dot = strchr(p, '.');
		if (!valid_label(p, dot ? (size_t)(dot - p) : strlen(p)))
			return false;
		if (!dot)
			return true;
	}
}

/* At most 63 characters: the name is also the report's label value
 * (trainscope.dev/job), which Kubernetes bounds so. A name whose mapping is no
 * subdomain (a dot beside a dash, as "../x" gives) is mapped again without dots. */
void ts_name_object(char *out, size_t n, const char *name)
{
	char again[300];

	map_name(out, n, name, 63, true, dns_char, '-');
	if (valid_subdomain(out, 63))
		return;
	snprintf(again, sizeof(again), "%s~", name); /* a changed name: hashed */
	map_name(out, n, again, 63, true, dns_label_char, '-');
}

bool ts_name_is_namespace(const char *ns) { return ns && valid_label(ns, strlen(ns)); }
bool ts_name_is_object(const char *name) { return name && valid_subdomain(name, 253); }

bool ts_name_is_system_namespace(const char *ns)
{
	return ns && (!strcmp(ns, "kube-system") || !strcmp(ns, "kube-public") ||
		      !strcmp(ns, "kube-node-lease"));
}

static bool job_file_char(char c, size_t at)
{
	return (c >= 'A' && c <= 'Z') || lower_alnum(c) || c == '_' || c == '-' ||
	       (at > 0 && c == '.');
}

int ts_name_report_path(char *out, size_t n, const char *dir, const char *ns, const char *job)
{
	char a[128], b[128];
	int len;

	map_name(a, sizeof(a), ns, 100, false, dns_char, '-'); /* as a namespace: no '_' */
	map_name(b, sizeof(b), job, 100, false, job_file_char, '_');
	len = snprintf(out, n, "%s/%s_%s.json", dir, a, b);
	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

const char *ts_name_label(char *out, size_t n, const char *value)
{
	size_t k = 0;

	for (; value && *value && k + 3 < n; value++) {
		char c = *value;
		if (c == '\\' || c == '"' || c == '\n') {
			out[k++] = '\\';
			c = c == '\n' ? 'n' : c;
		}
		out[k++] = c;
	}
	if (n)
		out[k] = 0;
	return out;
}
