// SPDX-License-Identifier: Apache-2.0
/* The rings of the relay's folder: new ones found and followed as producers; those it
 * may not follow (another uid's, a bad header) said once each, with the fix, and tried
 * again quietly at each scan. */
#include "relay_impl.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool known(struct relay *r, const char *path)
{
	for (int i = 0; i < r->nprod; i++)
		if (strcmp(r->prod[i]->path, path) == 0)
			return true;
	return false;
}

static int add_producer(struct relay *r, const char *path)
{
	struct producer *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	snprintf(p->path, sizeof(p->path), "%s", path);
	err = ts_ring_open(path, &p->ring);
	if (err) {
		free(p);
		return err;
	}
	if (r->nprod == r->capprod) {
		int cap = r->capprod ? r->capprod * 2 : 16;
		struct producer **np = realloc(r->prod, (size_t)cap * sizeof(*np));
		if (!np) {
			ts_ring_unmap(p->ring);
			free(p);
			return -ENOMEM;
		}
		r->prod = np;
		r->capprod = cap;
	}
	ts_agg_init(&p->agg, p->ring->mono_to_real_ns);
	relay_copy_ident(&p->id, &p->ring->id);
	relay_take_identity(r, p);
	relay_set_subjects(p);
	if (p->id.groups[0]) /* cut to what a Hello group holds */
		snprintf(p->groups[p->ngroups++], sizeof(p->groups[0]), "layout:%.*s",
			 (int)(sizeof(p->groups[0]) - 8), p->id.groups);
	r->prod[r->nprod++] = p;
	r->st.producers_seen++;
	ts_info("relay: following %s (job %s/%s rank %d/%d pid %d) -> %s", path, p->id.ns,
		p->id.job, p->id.rank, p->id.world_size, p->id.pid,
		r->opts.wire == TS_WIRE_POD ? p->pod_subject : p->subject);
	return 0;
}

static struct refused *find_refused(struct relay *r, const char *path)
{
	for (int i = 0; i < r->nrefused; i++)
		if (strcmp(r->refused[i].path, path) == 0)
			return &r->refused[i];
	return NULL;
}

/* Remembers path; false when out of memory (then it is said again at the next scan). */
static bool add_refused(struct relay *r, const char *path)
{
	char *copy;

	if (r->nrefused == r->caprefused) {
		int cap = r->caprefused ? r->caprefused * 2 : 8;
		struct refused *nf = realloc(r->refused, (size_t)cap * sizeof(*nf));
		if (!nf)
			return false;
		r->refused = nf;
		r->caprefused = cap;
	}
	if (!(copy = strdup(path)))
		return false;
	r->refused[r->nrefused++] = (struct refused){ .path = copy, .seen = true };
	return true;
}

/* Forgets refused files that left the folder or are followed now: not seen by this scan. */
static void prune_refused(struct relay *r)
{
	for (int i = 0; i < r->nrefused; i++) {
		if (r->refused[i].seen)
			continue;
		free(r->refused[i].path);
		r->refused[i--] = r->refused[--r->nrefused];
	}
}

static bool in_group(gid_t gid)
{
	gid_t groups[256];
	int n = getgroups(256, groups);

	if (gid == getegid())
		return true;
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* What makes a ring readable by this relay, for the line that says it is not. */
static const char *unreadable_fix(const char *dir, const struct stat *ring, char *buf, size_t n)
{
	struct stat d;

	if (stat(dir, &d) == 0 && !(d.st_mode & S_ISGID))
		snprintf(buf, n, "give the ring folder the relay's group and the setgid bit "
			 "(chgrp %u %s; chmod 3777 %s): the library then makes its rings 0660",
			 (unsigned)getegid(), dir, dir);
	else if (!in_group(ring->st_gid))
		snprintf(buf, n, "the ring's group %u is not the relay's (gid %u): chgrp %u %s",
			 (unsigned)ring->st_gid, (unsigned)getegid(), (unsigned)getegid(), dir);
	else
		snprintf(buf, n, "the ring is not group-readable: the program's libtrainscope.so "
			 "predates group-readable rings in a setgid folder, use this version's");
	return buf;
}

static void say_unreadable(struct relay *r, const char *path)
{
	char fix[1024];
	struct stat st;

	r->st.unreadable_rings++;
	if (stat(path, &st) < 0) {
		ts_warn("relay: cannot open ring %s: permission denied", path);
		return;
	}
	ts_warn("relay: cannot open ring %s: permission denied (owner uid %u gid %u, mode %04o; "
		"relay uid %u gid %u); fix: %s",
		path, (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777),
		(unsigned)geteuid(), (unsigned)getegid(),
		unreadable_fix(r->opts.ring_dir, &st, fix, sizeof(fix)));
}

/* One line and one count per file, however many scans meet it. */
static void refuse(struct relay *r, const char *path, int err)
{
	struct refused *f = find_refused(r, path);

	if (f) {
		f->seen = true;
		return;
	}
	add_refused(r, path);
	if (err == -EACCES || err == -EPERM) {
		say_unreadable(r, path);
	} else {
		r->st.bad_rings++;
		ts_warn("relay: ignoring %s: %s", path, strerror(-err));
	}
}

static bool is_ring_name(const char *name)
{
	size_t n = strlen(name), k = strlen(TS_RING_SUFFIX);

	return n > k && strcmp(name + n - k, TS_RING_SUFFIX) == 0;
}

/* New rings of the folder followed, the others refused (relay_impl.h). */
void relay_scan(struct relay *r)
{
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(r->opts.ring_dir);

	r->last_scan_ms = mono_ms();
	r->rescan = false;
	if (!d) {
		ts_warn("relay: cannot read %s: %s", r->opts.ring_dir, strerror(errno));
		return;
	}
	for (int i = 0; i < r->nrefused; i++)
		r->refused[i].seen = false;
	while ((de = readdir(d))) {
		if (!is_ring_name(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", r->opts.ring_dir, de->d_name);
		if (known(r, path))
			continue;
		int err = add_producer(r, path);
		if (err)
			refuse(r, path, err);
	}
	closedir(d);
	prune_refused(r);
}

/* The refused files' list freed (relay_impl.h). */
void relay_forget_refused(struct relay *r)
{
	for (int i = 0; i < r->nrefused; i++)
		free(r->refused[i].path);
	free(r->refused);
	r->refused = NULL;
	r->nrefused = r->caprefused = 0;
}
