// SPDX-License-Identifier: Apache-2.0
/* Names from the wire (namespaces, jobs, pods: anything a producer may send) mapped, in
 * one place, to what each sink accepts. A name the mapping had to change gets a hash of
 * the original appended, so two different names never map to one (Upper-Case and
 * upper-case, a/b and a_b). */
#ifndef TS_NAMES_H
#define TS_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* A DNS-1123 subdomain of at most 63 characters (labels of lowercase alphanumerics and
 * '-', alphanumeric at both ends, joined by '.'), so also a label value: the name of a
 * Kubernetes object made for it. */
void ts_name_object(char *out, size_t n, const char *name);
/* Whether the name, as it is, could be a Kubernetes namespace (a DNS-1123 label) or an
 * object such as a pod (a DNS-1123 subdomain). */
bool ts_name_is_namespace(const char *ns);
bool ts_name_is_object(const char *name);
/* The cluster's own namespaces: no report and no Event is ever written there. */
bool ts_name_is_system_namespace(const char *ns);
/* <dir>/<namespace>_<job>.json with both parts safe in a file name (no '/', no leading
 * '.', the namespace part without '_' so the first '_' splits them). Returns 0 or
 * -ENAMETOOLONG. */
int ts_name_report_path(char *out, size_t n, const char *dir, const char *ns, const char *job);
/* A Prometheus label value: \, " and newline escaped. Returns out. */
const char *ts_name_label(char *out, size_t n, const char *value);

#endif
