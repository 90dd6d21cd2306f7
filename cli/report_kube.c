// SPDX-License-Identifier: Apache-2.0
/* trainscope report --kube: SlowNodeReports read from the cluster through a kubeconfig
 * (or in a pod, its service account), so no one shells into the analyzer's pod. */
#include "cli.h"
#include "kube.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SNR_API "/apis/trainscope.dev/v1alpha1"

/* $KUBECONFIG's first file, else ~/.kube/config, else NULL (in-cluster). */
static const char *default_kubeconfig(char *buf, size_t n)
{
	const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");

	if (env && *env) {
		snprintf(buf, n, "%.*s", (int)strcspn(env, ":"), env);
		return buf;
	}
	if (getenv("KUBERNETES_SERVICE_HOST"))
		return NULL;
	snprintf(buf, n, "%s/.kube/config", home ? home : "");
	return buf;
}

int cli_kube_open(struct ts_kube **out, const char *kubeconfig)
{
	char path[4096], err[512] = "";
	const char *kc = kubeconfig ? kubeconfig : default_kubeconfig(path, sizeof(path));
	int rc = ts_kube_open(out, kc, err, sizeof(err));

	if (rc)
		fprintf(stderr, "trainscope report: cannot reach the cluster through %s: %s\n",
			kc ? kc : "the pod's service account", err);
	return rc;
}

/* GETs one report (job set) or the list (ns NULL: every namespace). Returns the object
 * or list, NULL with the reason printed. */
json_t *cli_kube_reports(struct ts_kube *k, const char *ns, const char *job)
{
	char path[1024];
	json_t *resp = NULL;
	int code;

	if (job)
		snprintf(path, sizeof(path), SNR_API "/namespaces/%s/slownodereports/%s", ns, job);
	else if (ns)
		snprintf(path, sizeof(path), SNR_API "/namespaces/%s/slownodereports", ns);
	else
		snprintf(path, sizeof(path), SNR_API "/slownodereports");
	code = ts_kube_request(k, "GET", path, NULL, NULL, &resp);
	if (code == 200 && resp)
		return resp;
	const char *msg = json_string_value(json_object_get(resp, "message"));
	if (code == 404 && job)
		fprintf(stderr, "trainscope report: no SlowNodeReport %s/%s\n", ns, job);
	else if (code == 404)
		fprintf(stderr, "trainscope report: the cluster has no SlowNodeReport CRD "
			"(is trainscope installed?)\n");
	else if (code < 0)
		fprintf(stderr, "trainscope report: the API server did not answer: %s\n",
			strerror(-code));
	else
		fprintf(stderr, "trainscope report: the API server said %d%s%s\n", code,
			msg ? ": " : "", msg ? msg : "");
	json_decref(resp);
	return NULL;
}
