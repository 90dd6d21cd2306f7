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

#include "kube.h"
#include "log.h"

#define QUEUE 64

struct pending {
	char ns[64], pod[254], why[512];
};

struct ts_events {
	struct ts_kube *kube;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct pending q[QUEUE];
	unsigned head, count;
	bool stop;
	char host[64];
	struct ts_events_stats st;
};

static void post(struct ts_events *e, const struct pending *p)
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
					      (uint64_t)now.tv_nsec };
	code = ts_kube_warn(e->kube, &ev);
	pthread_mutex_lock(&e->lock);
	if (code == 201 || code == 200)
		e->st.posted++;
	else if (!e->st.failed++)
		ts_warn("webhook: cannot post an Event on pod %s/%s (HTTP %d; the first such "
			"failure; trainscope_webhook_events_failed_total counts them)", p->ns, p->pod,
			code);
	pthread_mutex_unlock(&e->lock);
}

static void *run(void *arg)
{
	struct ts_events *e = arg;
	struct pending p;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		while (!e->count && !e->stop)
			pthread_cond_wait(&e->wake, &e->lock);
		if (!e->count)
			break;
		p = e->q[e->head];
		e->head = (e->head + 1) % QUEUE;
		e->count--;
		pthread_mutex_unlock(&e->lock);
		post(e, &p);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int ts_events_start(struct ts_events **out, const char *kubeconfig, char *err, size_t errlen)
{
	struct ts_events *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return -ENOMEM;
	if ((rc = ts_kube_open(&e->kube, kubeconfig, err, errlen))) {
		free(e);
		return rc;
	}
	gethostname(e->host, sizeof(e->host) - 1);
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->wake, NULL);
	if ((rc = pthread_create(&e->thread, NULL, run, e))) {
		snprintf(err, errlen, "cannot start a thread: %s", strerror(rc));
		ts_kube_close(e->kube);
		pthread_cond_destroy(&e->wake);
		pthread_mutex_destroy(&e->lock);
		free(e);
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

/* Posts what is queued, then returns. */
void ts_events_stop(struct ts_events *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->thread, NULL);
	ts_kube_close(e->kube);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
