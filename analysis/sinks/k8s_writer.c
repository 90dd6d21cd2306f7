// SPDX-License-Identifier: Apache-2.0
#include "k8s_writer.h"
#include "log.h"
#include "tsclock.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cmd {
	json_t *report;           /* a publish; NULL: a forget of ns/job */
	char ns[64], job[256];
	uint64_t now_ns;
	struct cmd *next;
};

struct ts_k8sw {
	struct ts_k8s *k;
	struct ts_k8s_nodes *nodes; /* node health's objects; NULL: none */
	struct ts_nh_node *views;   /* the latest node views, not yet synced */
	int nviews;
	bool views_due;
	uint64_t views_ns;
	struct ts_node_stats nst;
	pthread_t thread;
	pthread_mutex_t lock;     /* the queue, the stats copy, stopping */
	pthread_cond_t wake;
	struct cmd *head, *tail;
	uint64_t queued;
	struct ts_k8s_stats st;
	bool stopping;
	uint64_t stop_by_ns;      /* stopping: what is still queued then is given up */
};

static void run_cmd(struct ts_k8sw *w, struct cmd *c)
{
	if (c->report)
		ts_k8s_publish(w->k, c->report, c->now_ns);
	else
		ts_k8s_forget(w->k, c->ns, c->job, c->now_ns);
	json_decref(c->report);
	free(c);
}

static void *writer(void *arg)
{
	struct ts_k8sw *w = arg;
	struct timespec until;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct cmd *c = w->head;
		if (c && w->stopping && ts_real_ns() > w->stop_by_ns) {
			ts_error("k8s: stopping: %llu statuses not written (the API server did not "
				 "answer in time)", (unsigned long long)w->queued);
			for (; c; c = w->head) {
				w->head = c->next;
				json_decref(c->report);
				free(c);
			}
			w->tail = NULL;
			w->queued = 0;
			break;
		}
		if (c) {
			if (!(w->head = c->next))
				w->tail = NULL;
			w->queued--;
			pthread_mutex_unlock(&w->lock);
			run_cmd(w, c); /* the API server's time, off the lock */
			pthread_mutex_lock(&w->lock);
			ts_k8s_get_stats(w->k, &w->st);
			continue;
		}
		if (w->views_due && w->nodes) {
			struct ts_nh_node *v = w->views;
			int n = w->nviews;
			uint64_t at = w->views_ns;
			w->views = NULL, w->nviews = 0, w->views_due = false;
			pthread_mutex_unlock(&w->lock);
			ts_k8s_nodes_sync(w->nodes, v, n, at); /* the API server's time, off the lock */
			free(v);
			pthread_mutex_lock(&w->lock);
			ts_k8s_nodes_stats(w->nodes, &w->nst);
			continue;
		}
		if (w->stopping)
			break;
		/* held-back statuses are due after the interval: look every second */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		if (pthread_cond_timedwait(&w->wake, &w->lock, &until) == ETIMEDOUT) {
			pthread_mutex_unlock(&w->lock);
			ts_k8s_flush(w->k, ts_real_ns(), false);
			pthread_mutex_lock(&w->lock);
			ts_k8s_get_stats(w->k, &w->st);
		}
	}
	pthread_mutex_unlock(&w->lock);
	if (ts_real_ns() <= w->stop_by_ns)
		ts_k8s_flush(w->k, ts_real_ns(), true);
	return NULL;
}

int ts_k8sw_start(struct ts_k8sw **out, struct ts_k8s *k)
{
	struct ts_k8sw *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->k = k;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	if (pthread_create(&w->thread, NULL, writer, w)) {
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -EAGAIN;
	}
	*out = w;
	return 0;
}

/* Appends c, or puts its report in place of the queued one of the same job. */
static void enqueue(struct ts_k8sw *w, struct cmd *c)
{
	pthread_mutex_lock(&w->lock);
	for (struct cmd *q = w->head; c->report && q; q = q->next)
		if (q->report && !strcmp(q->ns, c->ns) && !strcmp(q->job, c->job)) {
			json_decref(q->report);
			q->report = c->report;
			q->now_ns = c->now_ns;
			pthread_mutex_unlock(&w->lock);
			free(c);
			return;
		}
	if (w->tail)
		w->tail->next = c;
	else
		w->head = c;
	w->tail = c;
	w->queued++;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

static struct cmd *new_cmd(const char *ns, const char *job, uint64_t now_ns)
{
	struct cmd *c = calloc(1, sizeof(*c));

	if (!c) {
		ts_error("k8s: out of memory: the status of %s/%s is not written", ns, job);
		return NULL;
	}
	snprintf(c->ns, sizeof(c->ns), "%s", ns);
	snprintf(c->job, sizeof(c->job), "%s", job);
	c->now_ns = now_ns;
	return c;
}

void ts_k8sw_publish(struct ts_k8sw *w, json_t *report, uint64_t now_ns)
{
	json_t *md = json_object_get(report, "metadata");
	struct cmd *c = new_cmd(ts_k8s_jstr(md, "namespace"), ts_k8s_jstr(md, "name"), now_ns);

	if (!c)
		return;
	if (!(c->report = json_deep_copy(report))) {
		free(c);
		return;
	}
	enqueue(w, c);
}

void ts_k8sw_forget(struct ts_k8sw *w, const char *ns, const char *job, uint64_t now_ns)
{
	struct cmd *c = new_cmd(ns, job, now_ns);

	if (c)
		enqueue(w, c);
}

void ts_k8sw_stats(struct ts_k8sw *w, struct ts_k8s_stats *out, uint64_t *queued)
{
	pthread_mutex_lock(&w->lock);
	*out = w->st;
	*queued = w->queued;
	pthread_mutex_unlock(&w->lock);
}

void ts_k8sw_stop(struct ts_k8sw *w, int timeout_s)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	w->stop_by_ns = ts_real_ns() + (uint64_t)timeout_s * 1000000000ull;
	ts_k8s_stop_by(w->k, w->stop_by_ns); /* the request under way is cut off at it too */
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	ts_k8s_free(w->k);
	ts_k8s_nodes_free(w->nodes);
	free(w->views);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void ts_k8sw_set_nodes(struct ts_k8sw *w, struct ts_k8s_nodes *nodes)
{
	pthread_mutex_lock(&w->lock);
	ts_k8s_nodes_free(w->nodes);
	w->nodes = nodes;
	pthread_mutex_unlock(&w->lock);
}

void ts_k8sw_nodes(struct ts_k8sw *w, const struct ts_nh_node *v, int n, uint64_t now_ns)
{
	struct ts_nh_node *copy = malloc((size_t)(n > 0 ? n : 1) * sizeof(*copy));

	if (!copy) {
		ts_error("k8s: out of memory: the node health of this round is not written");
		return;
	}
	if (n > 0)
		memcpy(copy, v, (size_t)n * sizeof(*copy));
	pthread_mutex_lock(&w->lock);
	free(w->views); /* a newer view replaces one not yet written */
	w->views = copy, w->nviews = n, w->views_ns = now_ns, w->views_due = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

void ts_k8sw_node_stats(struct ts_k8sw *w, struct ts_node_stats *out)
{
	pthread_mutex_lock(&w->lock);
	*out = w->nst;
	pthread_mutex_unlock(&w->lock);
}
