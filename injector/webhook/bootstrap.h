// SPDX-License-Identifier: Apache-2.0
/* trainscope-webhook --bootstrap-certs: the webhook's CA and serving certificate kept in
 * a Secret of the pod's namespace (made when missing, broken or about to expire), and
 * that CA given to every webhook of a MutatingWebhookConfiguration as its caBundle. The
 * kube-webhook-certgen pattern, run by the chart as the webhook pod's init container
 * (which also writes the pair into a volume the webhook reads), through common/kube.c. */
#ifndef TS_WEBHOOK_BOOTSTRAP_H
#define TS_WEBHOOK_BOOTSTRAP_H

#define TS_BOOTSTRAP_MAX_PEER_NAMES 4

struct ts_bootstrap_opts {
	const char *secret;         /* the Secret, in the pod's namespace */
	const char *service;        /* the webhook's Service, named by the certificate */
	const char *peer_names;     /* "a,b": more names, and clientAuth (a cluster's routes) */
	const char *webhook_config; /* the MutatingWebhookConfiguration */
	const char *kubeconfig;     /* NULL: the pod's service account */
	unsigned validity_days;     /* of a new CA and certificate */
	const char *out_dir;        /* non-NULL: tls.crt and tls.key written there too */
	unsigned wait_s;            /* for the configuration to exist */
};

/* The namespace: env POD_NAMESPACE, else the service account's namespace file. Returns
 * 0 with what it did said on stdout, or -1 after one line on stderr naming the object
 * and what the API server said. */
int ts_bootstrap_certs(const struct ts_bootstrap_opts *o);

#endif
