// SPDX-License-Identifier: Apache-2.0
/* The jobs refused whole past a limit, each to be told once (refusals.h). A fixed table:
 * a flood of refused jobs keeps the newest, and costs no allocation. */
#include "refusals.h"
#include "hash.h"

#include <stdio.h>
#include <string.h>

/* The job and the reason, hashed (0 is an empty slot: never a key). */
static uint64_t told_key(const char *ns, const char *job, const char *why)
{
	char buf[sizeof(((struct ts_refusal *)0)->ns) + sizeof(((struct ts_refusal *)0)->job) +
		 sizeof(((struct ts_refusal *)0)->why)];
	int n = snprintf(buf, sizeof(buf), "%s\x1f%s\x1f%s", ns, job, why);
	uint64_t h = ts_fnv1a(buf, n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);

	return h ? h : 1;
}

static bool was_told(const struct ts_refusals *t, uint64_t key)
{
	for (int i = 0; i < TS_REFUSALS_TOLD; i++)
		if (t->told[i] == key)
			return true;
	return false;
}

static struct ts_refusal *find(struct ts_refusals *t, const char *ns, const char *job)
{
	for (int i = 0; i < TS_REFUSALS; i++)
		if (t->r[i].ns[0] && !strcmp(t->r[i].ns, ns) && !strcmp(t->r[i].job, job))
			return &t->r[i];
	return NULL;
}

void ts_refusals_note(struct ts_refusals *t, const char *ns, const char *job, int world,
		      const char *why, uint64_t now_ns)
{
	struct ts_refusal *r = find(t, ns, job);

	if (r && !strcmp(r->why, why) && r->world >= world)
		return;
	if (!r && was_told(t, told_key(ns, job, why)))
		return; /* told already, then pushed out of the table by others */
	if (!r) {
		r = &t->r[t->next];
		t->next = (t->next + 1) % TS_REFUSALS;
		snprintf(r->ns, sizeof(r->ns), "%s", ns);
		snprintf(r->job, sizeof(r->job), "%s", job);
	}
	snprintf(r->why, sizeof(r->why), "%s", why);
	r->world = world;
	r->at_ns = now_ns;
	r->told = false;
}

void ts_refusals_forget(struct ts_refusals *t, const char *ns, const char *job)
{
	struct ts_refusal *r = find(t, ns, job);

	if (r)
		memset(r, 0, sizeof(*r));
}

void ts_refusals_told(struct ts_refusals *t, struct ts_refusal *r)
{
	r->told = true;
	t->told[t->next_told] = told_key(r->ns, r->job, r->why);
	t->next_told = (t->next_told + 1) % TS_REFUSALS_TOLD;
}

struct ts_refusal *ts_refusals_untold(struct ts_refusals *t)
{
	for (int i = 0; i < TS_REFUSALS; i++)
		if (t->r[i].ns[0] && !t->r[i].told)
			return &t->r[i];
	return NULL;
}
