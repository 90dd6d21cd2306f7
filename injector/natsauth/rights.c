// SPDX-License-Identifier: Apache-2.0
#include "rights.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ident.h"
#include "names.h"
#include "natsw.h"

int ts_authz_parse_username(struct ts_authz_who *who, const char *username)
{
	static const char pre[] = "system:serviceaccount:";
	const char *ns, *colon;

	if (!username || strncmp(username, pre, sizeof(pre) - 1))
		return -EINVAL;
	ns = username + sizeof(pre) - 1;
	colon = strchr(ns, ':');
	if (!colon || colon == ns || (size_t)(colon - ns) >= sizeof(who->ns) || !colon[1] ||
	    strlen(colon + 1) >= sizeof(who->sa))
		return -EINVAL;
	memcpy(who->ns, ns, (size_t)(colon - ns));
	who->ns[colon - ns] = 0;
	snprintf(who->sa, sizeof(who->sa), "%s", colon + 1);
	return ts_name_is_namespace(who->ns) ? 0 : -EINVAL;
}

static bool is_sa(const char *want, const struct ts_authz_who *who)
{
	size_t n = strlen(who->ns);

	return want && !strncmp(want, who->ns, n) && want[n] == ':' && !strcmp(want + n + 1, who->sa);
}

/* A pod UID as Kubernetes makes them (hex and '-'): safe as one subject token. */
static bool uid_ok(const char *uid)
{
	if (!*uid)
		return false;
	for (; *uid; uid++)
		if (!((*uid >= '0' && *uid <= '9') || (*uid >= 'a' && *uid <= 'z') ||
		      (*uid >= 'A' && *uid <= 'Z') || *uid == '-'))
			return false;
	return true;
}

__attribute__((format(printf, 2, 3))) static void add(json_t *list, const char *fmt, ...)
{
	char s[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s, sizeof(s), fmt, ap);
	va_end(ap);
	json_array_append_new(list, json_string(s));
}

static json_t *perms(json_t *pub, json_t *sub, json_t *pub_deny)
{
	json_t *p = json_pack("{s:{s:o}, s:{s:o}}", "pub", "allow", pub, "sub", "allow", sub);

	if (p && pub_deny)
		json_object_set_new(json_object_get(p, "pub"), "deny", pub_deny);
	return p;
}

/* The consumer-management subjects that name one consumer. */
static void consumer_deny(json_t *d, const char *name)
{
	add(d, "$JS.API.CONSUMER.*.%s.%s", TSN_STREAM, name);
	add(d, "$JS.API.CONSUMER.*.%s.%s.>", TSN_STREAM, name);
	add(d, "$JS.API.CONSUMER.*.*.%s.%s", TSN_STREAM, name);
	add(d, "$JS.ACK.%s.%s.>", TSN_STREAM, name);
}

/* The analyzer's durable consumers: its own and, partitioned, each partition's (a
 * subject wildcard matches whole tokens only, so each is named). */
static json_t *analyzer_consumer_deny(const struct ts_authz_policy *p)
{
	json_t *d = json_array();
	char name[256];

	consumer_deny(d, p->analyzer_durable);
	for (int k = 0; k < p->analyzer_partitions; k++) {
		snprintf(name, sizeof(name), "%s-p%d", p->analyzer_durable, k);
		consumer_deny(d, name);
	}
	return d;
}

static enum ts_authz_role refuse(char *why, size_t n, const char *fmt, const struct ts_authz_who *w)
{
	snprintf(why, n, fmt, w->ns, w->sa);
	return TS_ROLE_NONE;
}

enum ts_authz_role ts_authz_rights(const struct ts_authz_policy *p, const struct ts_authz_who *w,
				   json_t **out, char *why, size_t whylen)
{
	json_t *pub = json_array(), *sub = json_array();
	char ns[64], node[64];
	enum ts_authz_role role;
	bool pod = uid_ok(w->pod_uid) && *w->node;

	ts_subject_token(ns, sizeof(ns), w->ns);
	ts_subject_token(node, sizeof(node), w->node);
	if (is_sa(p->analyzer, w))
		role = TS_ROLE_ANALYZER;
	else if (is_sa(p->agent, w))
		role = TS_ROLE_AGENT;
	else
		role = TS_ROLE_RELAY;
	for (int i = 0; i < p->n_cli && role == TS_ROLE_RELAY; i++)
		if (is_sa(p->cli[i], w))
			role = TS_ROLE_CLI;
	*out = NULL;
	if (role != TS_ROLE_CLI && !pod)
		role = refuse(why, whylen, "%s/%s: the token is not bound to a pod on a node (mount "
			      "a projected serviceAccountToken with the trainscope audience)", w);
	else if (role == TS_ROLE_RELAY && ts_name_is_system_namespace(w->ns))
		role = refuse(why, whylen, "%s/%s: no relay runs in a system namespace", w);
	if (role != TS_ROLE_NONE && role != TS_ROLE_CLI)
		add(sub, "%s.%s.>", TS_AUTHZ_INBOX, w->pod_uid);
	switch (role) {
	case TS_ROLE_RELAY: /* its namespace's ranks (alone or in its pod's Bundles) and
			     * hangs; announcements to its own node */
		add(pub, "ts.v1.%s.*.rank.*", ns);
		add(pub, "ts.v1.%s.*.pod.*", ns);
		add(pub, "ts.v1.%s.*.hang.*", ns);
		add(pub, "ts.v1.%s.*.ctl.%s", ns, node);
		*out = perms(pub, sub, NULL);
		break;
	case TS_ROLE_AGENT: /* its node's samples, for any job; its node's announcements */
		add(pub, "ts.v1.*.*.host.%s", node);
		add(pub, "ts.v1.*.*.dev.%s", node);
		add(sub, "ts.v1.*.*.ctl.%s", node);
		*out = perms(pub, sub, NULL);
		break;
	case TS_ROLE_ANALYZER: /* the stream, its consumers and its snapshot bucket */
		add(pub, "$JS.API.>");
		add(pub, "$JS.ACK.>");
		add(pub, "$KV.%s.>", p->analyzer_bucket);
		*out = perms(pub, sub, NULL);
		break;
	case TS_ROLE_CLI: /* reads the stream through consumers of its own */
		add(pub, "$JS.API.STREAM.INFO.%s", TSN_STREAM);
		add(pub, "$JS.API.CONSUMER.>");
		add(pub, "$JS.ACK.%s.>", TSN_STREAM);
		add(sub, "%s.>", TS_AUTHZ_INBOX);
		*out = perms(pub, sub, analyzer_consumer_deny(p));
		break;
	case TS_ROLE_NONE:
		json_decref(pub);
		json_decref(sub);
		break;
	}
	return *out || role == TS_ROLE_NONE ? role : TS_ROLE_NONE;
}

const char *ts_authz_role_name(enum ts_authz_role r)
{
	static const char *const names[] = { "none", "relay", "agent", "analyzer", "cli" };

	return names[r];
}
