// SPDX-License-Identifier: Apache-2.0
#include "events.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "kube.h"
#include "log.h"
#include "tsclock.h"

#define QUEUE 64
/* A failed look is tried again this soon, however long the period. */
#define RETRY_S 10u

#define MISSED_WHY "the pod asks for it but was admitted without it (the API server could " \
	"not reach the webhook, failurePolicy: Ignore; or its namespace opted in later): it " \
	"runs untraced; delete it (its controller makes it again) to have it injected"

struct pending {
	char ns[64], pod[254], why[512];
	char name[254]; /* the Event's name; empty: made from the pod's */
	char uid[40];   /* the pod's, when known */
};

struct ts_events {
	struct ts_kube *kube;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* on CLOCK_MONOTONIC: the next look waits on it */
	struct pending q[QUEUE];
	unsigned head, count;
	bool stop;
	char host[64];
	struct ts_events_stats st;
	struct ts_missed_opts missed;
	char *exclude, *label;  /* missed.exclude's and missed.namespace_label's copies */
	/* The pods told they were missed, uid: the look that last listed them. Not read or
	 * told again while listed; those a look no longer lists (deleted, done) are left
	 * out after it. Events of the same name answer 409 after a restart or from another
	 * replica, until the API server lets them expire (--event-ttl, 1 h by default). */
	json_t *told;
	json_int_t look;
	bool scan_failing;      /* the last look failed (said once until one works) */
};

/* Returns the API server's answer (201; 409 when the Event of that name was there). */
static int post(struct ts_events *e, const struct pending *p)
{
	char msg[640];
	struct timespec now;
	int code;

	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(msg, sizeof(msg), "trainscope was not injected: %s", p->why);
	struct ts_kube_event ev = { .ns = p->ns, .api_version = "v1", .kind = "Pod", .name = p->pod,
				    .reason = "TrainscopeNotInjected", .message = msg,
				    .component = "trainscope-webhook", .host = e->host,
				    .now_ns = (uint64_t)now.tv_sec * 1000000000ull +
					      (uint64_t)now.tv_nsec,
				    .event_name = *p->name ? p->name : NULL,
				    .uid = *p->uid ? p->uid : NULL };
	code = ts_kube_warn(e->kube, &ev);
	pthread_mutex_lock(&e->lock);
	if (code == 201 || code == 200)
		e->st.posted++;
	else if (code == 409 && *p->name)
		e->st.already++;
	else if (!e->st.failed++)
		ts_warn("webhook: cannot post an Event on pod %s/%s (HTTP %d; the first such "
			"failure; trainscope_webhook_events_failed_total counts them)", p->ns, p->pod,
			code);
	pthread_mutex_unlock(&e->lock);
	return code;
}

/* Whether the pod of uid was told (ts_missed_cb.known): it is then kept as listed. */
static bool told(const char *uid, void *arg)
{
	struct ts_events *e = arg;

	if (!json_object_get(e->told, uid))
		return false;
	json_object_set_new(e->told, uid, json_integer(e->look));
	return true;
}

/* Posts what the queue holds (ts_missed_cb.page_done: between a look's pages, reviews'
 * Events do not wait for the whole look). */
static void drain(void *arg)
{
	struct ts_events *e = arg;
	struct pending p;

	pthread_mutex_lock(&e->lock);
	while (e->count) {
		p = e->q[e->head];
		e->head = (e->head + 1) % QUEUE;
		e->count--;
		pthread_mutex_unlock(&e->lock);
		post(e, &p);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
}

/* A pod the look found (ts_missed_fn), told at once unless it was already: on this
 * thread, the lock not held. */
static void missed_found(const char *ns, const char *pod, const char *uid, void *arg)
{
	struct ts_events *e = arg;
	struct pending p = { 0 };

	if (!*uid || json_object_get(e->told, uid))
		return;
	snprintf(p.ns, sizeof(p.ns), "%s", ns);
	snprintf(p.pod, sizeof(p.pod), "%s", pod);
	snprintf(p.why, sizeof(p.why), "%s", MISSED_WHY);
	/* a name of its own, the same from any replica: 409 when already said */
	snprintf(p.name, sizeof(p.name), "%.200s.trainscope-%.36s", pod, uid);
	snprintf(p.uid, sizeof(p.uid), "%s", uid);
	int code = post(e, &p);
	if (code == 200 || code == 201)
		ts_warn("webhook: pod %s/%s asks for trainscope and was admitted without it (the "
			"webhook not reached); a TrainscopeNotInjected Event tells it", ns, pod);
	if (code == 200 || code == 201 || code == 409) /* else asked again next look */
		json_object_set_new(e->told, uid, json_integer(e->look));
}

/* Leaves out the pods the look just made did not list. */
static void forget_unlisted(struct ts_events *e)
{
	const char *uid;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(e->told, tmp, uid, v)
		if (json_integer_value(v) != e->look)
			json_object_del(e->told, uid);
}

/* One look for missed pods; a failure said when it starts and when it ends. */
static void missed_look(struct ts_events *e)
{
	char err[512] = "";
	uint64_t t0 = ts_mono_ns();
	struct ts_missed_cb cb = { missed_found, told, drain, e };
	int n;

	e->look++;
	if ((n = ts_missed_scan(e->kube, &e->missed, &cb, err, sizeof(err))) >= 0)
		forget_unlisted(e);

	pthread_mutex_lock(&e->lock);
	e->st.scan_ns = ts_mono_ns() - t0;
	e->st.scans++;
	e->st.scan_failed += n < 0;
	if (n >= 0)
		e->st.missed = (uint64_t)n;
	pthread_mutex_unlock(&e->lock);
	if (n < 0 && !e->scan_failing)
		ts_warn("webhook: cannot look for pods admitted without trainscope: %s (tried "
			"again every %u s; trainscope_webhook_missed_scan_failures_total counts "
			"the failures)", err,
			e->missed.check_s < RETRY_S ? e->missed.check_s : RETRY_S);
	else if (n >= 0 && e->scan_failing)
		ts_info("webhook: looking for pods admitted without trainscope works again");
	e->scan_failing = n < 0;
}

/* When the look after one that ended at now is due. */
static uint64_t next_look(const struct ts_events *e, uint64_t now)
{
	unsigned s = e->missed.check_s;

	if (e->scan_failing && s > RETRY_S)
		s = RETRY_S;
	return now + s * 1000000000ull;
}

static void *run(void *arg)
{
	struct ts_events *e = arg;
	uint64_t next = e->missed.check_s ? ts_mono_ns() : UINT64_MAX;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		while (!e->count && !e->stop && ts_mono_ns() < next) {
			struct timespec at = { (time_t)(next / 1000000000u),
					       (long)(next % 1000000000u) };
			if (next == UINT64_MAX)
				pthread_cond_wait(&e->wake, &e->lock);
			else
				pthread_cond_timedwait(&e->wake, &e->lock, &at);
		}
		if (!e->count && e->stop)
			break;
		bool queued = e->count != 0;
		pthread_mutex_unlock(&e->lock);
		if (queued) {
			drain(e);
		} else { /* time to look */
			missed_look(e);
			next = next_look(e, ts_mono_ns());
		}
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

static void events_free(struct ts_events *e)
{
	ts_kube_close(e->kube);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->lock);
	json_decref(e->told);
	free(e->exclude);
	free(e->label);
	free(e);
}

/* The caller's look settings, copied (strings too: the caller's may go). */
static int copy_missed(struct ts_events *e, const struct ts_missed_opts *m)
{
	memcpy(&e->missed, m, m->sz < sizeof(e->missed) ? m->sz : sizeof(e->missed));
	e->missed.sz = sizeof(e->missed);
	if ((e->missed.exclude && !(e->exclude = strdup(e->missed.exclude))) ||
	    (e->missed.namespace_label && !(e->label = strdup(e->missed.namespace_label))))
		return -ENOMEM;
	e->missed.exclude = e->exclude;
	e->missed.namespace_label = e->label;
	return 0;
}

int ts_events_start(struct ts_events **out, const char *kubeconfig,
		    const struct ts_missed_opts *missed, char *err, size_t errlen)
{
	struct ts_events *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;
	int rc;

	if (!e)
		return -ENOMEM;
	if ((rc = ts_kube_open(&e->kube, kubeconfig, err, errlen))) {
		free(e);
		return rc;
	}
	gethostname(e->host, sizeof(e->host) - 1);
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, &ca);
	pthread_condattr_destroy(&ca);
	/* the fields this build knows of a caller's (maybe smaller) struct */
	if (!(e->told = json_object()) || (missed && copy_missed(e, missed))) {
		snprintf(err, errlen, "out of memory");
		events_free(e);
		return -ENOMEM;
	}
	if ((rc = pthread_create(&e->thread, NULL, run, e))) {
		snprintf(err, errlen, "cannot start a thread: %s", strerror(rc));
		events_free(e);
		return -rc;
	}
	*out = e;
	return 0;
}

void ts_events_skipped(struct ts_events *e, const char *ns, const char *pod, const char *why)
{
	struct pending *p;

	if (!e || !ns || !*ns || !pod || !*pod)
		return;
	pthread_mutex_lock(&e->lock);
	if (e->count == QUEUE) {
		e->st.dropped++;
	} else {
		p = &e->q[(e->head + e->count++) % QUEUE];
		snprintf(p->ns, sizeof(p->ns), "%s", ns);
		snprintf(p->pod, sizeof(p->pod), "%s", pod);
		snprintf(p->why, sizeof(p->why), "%s", why);
		pthread_cond_signal(&e->wake);
	}
	pthread_mutex_unlock(&e->lock);
}

void ts_events_stats(struct ts_events *e, struct ts_events_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	*out = e->st;
	pthread_mutex_unlock(&e->lock);
}

/* Posts what is queued, then returns; a look under way, and posts past 3 s, give up. */
void ts_events_stop(struct ts_events *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->lock);
	/* a look under way (pages of pods) gives up; the queue gets a few seconds */
	ts_kube_stop_by(e->kube, ts_real_ns() + 3000000000ull);
	pthread_join(e->thread, NULL);
	events_free(e);
}
