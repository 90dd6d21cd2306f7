// SPDX-License-Identifier: Apache-2.0
/* Kubernetes' own name rules, written out apart from names.c, for its tests and its
 * fuzz target only. */
#ifndef TS_K8S_RULES_H
#define TS_K8S_RULES_H

#include <stdbool.h>
#include <string.h>

/* Kubernetes' own rules, written out apart from names.c: IsDNS1123Subdomain (labels of
 * [a-z0-9]([-a-z0-9]*[a-z0-9])? joined by '.', at most 253) and IsValidLabelValue (at
 * most 63, [A-Za-z0-9] at both ends, '-', '_', '.' inside). */
static inline bool k8s_subdomain(const char *s)
{
	size_t len = strlen(s), start = 0;

	if (!len || len > 253)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.')
			continue;
		size_t l = i - start;
		const char *p = s + start;
		if (!l || l > 63 || p[0] == '-' || p[l - 1] == '-')
			return false;
		for (size_t k = 0; k < l; k++)
			if (!((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= '0' && p[k] <= '9') ||
			      p[k] == '-'))
				return false;
		start = i + 1;
	}
	return true;
}

static inline bool k8s_label_value(const char *s)
{
	size_t len = strlen(s);

	if (len > 63)
		return false;
	for (size_t k = 0; k < len; k++) {
		bool an = (s[k] >= 'a' && s[k] <= 'z') || (s[k] >= 'A' && s[k] <= 'Z') ||
			  (s[k] >= '0' && s[k] <= '9');
		if (!an && ((k == 0 || k == len - 1) || (s[k] != '-' && s[k] != '_' && s[k] != '.')))
			return false;
	}
	return true;
}

#endif
