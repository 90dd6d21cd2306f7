// SPDX-License-Identifier: Apache-2.0
/* Base64 (RFC 4648), as Kubernetes writes Secret data, caBundles, kubeconfig data and
 * JSON patches. */
#ifndef TS_B64_H
#define TS_B64_H

/* A malloc'ed, NUL-terminated encoding of the string s, or NULL out of memory. */
char *ts_b64_encode(const char *s);
/* A malloc'ed, NUL-terminated decoding of s (padding and line breaks skipped), or NULL
 * out of memory. */
char *ts_b64_decode(const char *s);

#endif
