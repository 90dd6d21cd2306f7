/* trainscope-webhook --bootstrap-certs: the webhook's CA and serving certificate kept in
 * a Secret of the pod's namespace (made when missing, broken or about to expire), and
 * that CA given to every webhook of a MutatingWebhookConfiguration as its caBundle. The
 * kube-webhook-certgen pattern, in a Job of the chart, through common/kube.c. */
#ifndef TS_WEBHOOK_BOOTSTRAP_H
#define TS_WEBHOOK_BOOTSTRAP_H

struct ts_bootstrap_opts {
	const char *secret;         /* the Secret, in the pod's namespace */
	const char *service;        /* the webhook's Service, named by the certificate */
	const char *webhook_config; /* the MutatingWebhookConfiguration */
	const char *kubeconfig;     /* NULL: the pod's service account */
	unsigned validity_days;     /* of a new CA and certificate */
};

/* The namespace: env POD_NAMESPACE, else the service account's namespace file. Returns
 * 0 with what it did said on stdout, or -1 after one line on stderr naming the object
 * and what the API server said. */
int ts_bootstrap_certs(const struct ts_bootstrap_opts *o);

#endif
