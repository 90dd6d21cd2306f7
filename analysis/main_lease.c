// SPDX-License-Identifier: Apache-2.0
/* The lease's holder in Kubernetes: an analyzer names its pod in the lease (POD_NAMESPACE,
 * POD_NAME, POD_UID from the downward API), so that the one that replaces it need not
 * wait out the lease when the API server shows that pod gone. */
#include "main_impl.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void analyzer_owner(struct cli *c, const char *host, int pid, unsigned long long started_ms)
{
	const char *ns = getenv("POD_NAMESPACE"), *name = getenv("POD_NAME");
	const char *uid = getenv("POD_UID");
	int n = snprintf(c->owner, sizeof(c->owner), "%s pid %d, started %llu", host, pid,
			 started_ms);

	if (ns && *ns && name && *name && uid && *uid && n > 0 && (size_t)n < sizeof(c->owner))
		snprintf(c->owner + n, sizeof(c->owner) - (size_t)n, ", pod %s/%s uid %s", ns, name,
			 uid);
}

/* The pod a lease holder's text names: 0, or -1 when it names none. */
static int holder_pod(const char *holder, char *ns, char *name, char *uid)
{
	const char *p = strstr(holder, ", pod ");

	return p && sscanf(p, ", pod %63[^/]/%253s uid %63s", ns, name, uid) == 3 ? 0 : -1;
}

bool analyzer_holder_gone(struct cli *c, const char *holder)
{
	char ns[64], name[254], uid[64], my_ns[64], my_name[254], my_uid[64], path[512];
	char err[256] = "";
	json_t *pod = NULL;
	const char *now_uid;
	int code;

	if ((!c->kubeconfig && !c->in_cluster) || holder_pod(holder, ns, name, uid))
		return false;
	/* an earlier container of this very pod (restarted in place) is gone */
	if (!holder_pod(c->owner, my_ns, my_name, my_uid) && !strcmp(my_uid, uid))
		return true;
	/* the writer's thread has the other handle: a request of ours needs its own */
	if (!c->kube_lease &&
	    ts_kube_open(&c->kube_lease, c->in_cluster ? NULL : c->kubeconfig, err, sizeof(err))) {
		ts_warn("analyzer: lease: cannot ask the API server about pod %s/%s: %s", ns, name,
			err);
		return false;
	}
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
	code = ts_kube_request(c->kube_lease, "GET", path, NULL, NULL, &pod);
	now_uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
	/* gone, or a pod of that name made anew (a StatefulSet's replacement) */
	bool gone = code == 404 || (code == 200 && now_uid && strcmp(now_uid, uid));
	json_decref(pod);
	return gone;
}
