// SPDX-License-Identifier: Apache-2.0
/* The secrets every server of a NATS cluster must share: the auth callout's issuer seed
 * (a server accepts only answers signed by the issuer its configuration names, and any
 * server's callout may answer), its service's password and the routes' password. Kept in
 * one Secret of the pod's namespace, made there by whichever pod comes first; each pod's
 * init container copies them into its own volume. */
#ifndef TS_NATSAUTH_KEEP_H
#define TS_NATSAUTH_KEEP_H

#include <stddef.h>

#define TS_KEEP_LEN 40 /* characters of a made secret: [A-Za-z0-9], ~238 bits */

/* len random characters of [A-Za-z0-9] and a NUL into out (len + 1 bytes). 0 or -EIO. */
int ts_random_text(char *out, size_t len);

struct ts_keep_opts {
	const char *secret;          /* its name, in the pod's namespace */
	const char *kubeconfig;      /* NULL: the pod's service account */
	const char *dir;             /* DIR/<key> written (0600) for each key */
	const char *const *keys;
	size_t n_keys;
};

/* Each key's value from the Secret, the missing ones made and written into it (a 409
 * from a pod writing at the same time: read again, take its values). Returns 0, or -1
 * after one line on stderr naming the Secret and what the API server said. */
int ts_keep_secrets(const struct ts_keep_opts *o);

#endif
