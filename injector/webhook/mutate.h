// SPDX-License-Identifier: Apache-2.0
/* The webhook's decision and patch: AdmissionReview v1 for pods in, AdmissionReview
 * with a JSONPatch out. Pure: no I/O, fuzzed. */
#ifndef TS_MUTATE_H
#define TS_MUTATE_H

#include <stdbool.h>
#include <stddef.h>

struct ts_inject_opts {
	const char *image;      /* holds the library, the shim and the relay */
	const char *nats_url;   /* what the relay publishes to */
	/* Authenticated NATS: the relay gets a projected ServiceAccount token of this
	 * audience (NULL: none, an open NATS) and trusts this CA (PEM text; NULL: none). */
	const char *nats_audience;
	const char *nats_ca_pem;
	bool namespace_opt_in;  /* the namespace carries the label: inject unless opted out */
	/* The injected containers' requests (= limits), given only when some container of
	 * the pod declares resources; NULL: the defaults below. */
	const char *init_cpu, *init_memory;
	const char *relay_cpu, *relay_memory;
};

#define TS_INIT_CPU_DEFAULT "50m"
#define TS_INIT_MEMORY_DEFAULT "32Mi"
#define TS_RELAY_CPU_DEFAULT "100m"
#define TS_RELAY_MEMORY_DEFAULT "128Mi"

/* Where the relay reads its NATS token, renewed by the kubelet. */
#define TS_NATS_TOKEN_DIR "/var/run/secrets/trainscope.dev/nats"
#define TS_NATS_TOKEN_S 3600

#define TS_ANNOT_INJECT "trainscope.dev/inject"
/* The review's warning for a pod that asked and is left unchanged (counted by the server). */
#define TS_WARN_UNCHANGED "trainscope: no container to instrument, pod left unchanged"
#define TS_ANNOT_INJECTED "trainscope.dev/injected"
#define TS_ANNOT_JOB "trainscope.dev/job"
/* Comma-separated names of the containers to instrument (the OpenTelemetry operator's
 * instrumentation.opentelemetry.io/container-names); without it, the first container. */
#define TS_ANNOT_CONTAINER_NAMES "trainscope.dev/container-names"

/* Writes the response AdmissionReview into *out (malloc'ed JSON, always set unless
 * out of memory). Returns the HTTP status: 200, or 400 for a request that is not an
 * AdmissionReview (the body then explains). */
int ts_mutate(const char *body, size_t len, const struct ts_inject_opts *o, char **out);

/* Whether the pod (a jansson object; its metadata is enough) asks for trainscope, its
 * namespace opting in or not, and has no mark of it yet. */
bool ts_pod_asks(const void *pod, bool namespace_opt_in);

/* Whether ts_mutate would inject the pod (a jansson object) now, its namespace opting in
 * or not: it asks, has no trainscope yet, and has a container to instrument. A pod the
 * API server admitted without asking the webhook shows so. */
bool ts_pod_would_inject(const void *pod, bool namespace_opt_in);

/* The job name of a pod (docs/design.md, Identity), or NULL. pod is a jansson object. */
const char *ts_pod_job(const void *pod);

#endif
