// SPDX-License-Identifier: Apache-2.0
#include "ranks.h"
#include "numparse.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A cgroup v2 hierarchy at dir itself, or at dir/unified (a cgroup v1 host). */
static int cgroup2_under(const char *dir, char *out, size_t n)
{
	static const char *const sub[] = { "", "/unified" };
	char probe[300];

	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(probe, sizeof(probe), "%s%s/cgroup.controllers", dir, sub[i]);
		if (access(probe, F_OK) == 0) {
			snprintf(out, n, "%s%s", dir, sub[i]);
			return 0;
		}
	}
	return -ENOENT;
}

void ts_ranks_init(struct ts_ranks *t, const char *host_cgroup)
{
	memset(t, 0, sizeof(*t));
	t->proc_root = "/proc";
	if (host_cgroup && *host_cgroup && cgroup2_under(host_cgroup, t->cgroup_root,
							 sizeof(t->cgroup_root)) == 0)
		return;
	if (ts_cgroup2_mount(t->cgroup_root, sizeof(t->cgroup_root)))
		snprintf(t->cgroup_root, sizeof(t->cgroup_root), "/sys/fs/cgroup");
}

static bool same_rank(const struct ts_ident *a, const struct ts_ident *b)
{
	return a->rank == b->rank && a->pid == b->pid && !strcmp(a->ns, b->ns) &&
	       !strcmp(a->job, b->job);
}

struct ts_rank_entry *ts_ranks_find(struct ts_ranks *t, const struct ts_ident *id)
{
	for (uint32_t i = 0; i < TS_MAX_SLOTS; i++)
		if (t->e[i].used && same_rank(&t->e[i].id, id))
			return &t->e[i];
	return NULL;
}

int ts_ranks_of_pod(const struct ts_ranks *t, const char *uid)
{
	int n = 0;

	for (uint32_t i = 0; i < TS_MAX_SLOTS; i++)
		n += t->e[i].used && !strcmp(t->e[i].pod_uid, uid);
	return n;
}

struct ts_rank_entry *ts_ranks_evictable(struct ts_ranks *t, const char *uid, uint64_t now_ms)
{
	struct ts_rank_entry *oldest = NULL; /* unresolved past its grace */

	for (uint32_t i = 0; i < TS_MAX_SLOTS; i++) {
		struct ts_rank_entry *e = &t->e[i];
		if (!e->used || (uid && strcmp(e->pod_uid, uid)))
			continue;
		if (e->refused) /* forged announcements cannot crowd out real ranks */
			return e;
		if (!e->resolved && now_ms - e->first_hello_ms >= TS_UNRESOLVED_GRACE_MS &&
		    (!oldest || e->first_hello_ms < oldest->first_hello_ms))
			oldest = e;
	}
	return oldest;
}

struct ts_rank_entry *ts_ranks_hello(struct ts_ranks *t, const struct ts_ident *id, uint64_t now_ms)
{
	struct ts_rank_entry *free_e = ts_ranks_find(t, id);

	if (free_e) {
		free_e->last_hello_ms = now_ms;
		if (id->dev_index >= 0) {
			free_e->id.dev_index = id->dev_index;
			free_e->id.local_rank = id->local_rank;
			memcpy(free_e->id.dev_uuid, id->dev_uuid, sizeof(free_e->id.dev_uuid));
		}
		return free_e;
	}
	for (uint32_t i = 0; i < TS_MAX_SLOTS && !free_e; i++)
		if (!t->e[i].used)
			free_e = &t->e[i];
	if (!free_e)
		free_e = ts_ranks_evictable(t, NULL, now_ms);
	if (!free_e)
		return NULL;
	memset(free_e, 0, sizeof(*free_e));
	free_e->used = true;
	free_e->id = *id;
	free_e->slot = (uint32_t)(free_e - t->e);
	free_e->last_hello_ms = free_e->first_hello_ms = free_e->next_try_ms = now_ms;
	return free_e;
}

struct ts_rank_entry *ts_ranks_renamed(struct ts_ranks *t, const struct ts_ident *id)
{
	for (uint32_t i = 0; i < TS_MAX_SLOTS; i++) {
		struct ts_rank_entry *e = &t->e[i];
		if (e->used && e->id.pid == id->pid && e->id.rank != id->rank &&
		    !strcmp(e->id.ns, id->ns) && !strcmp(e->id.job, id->job))
			return e;
	}
	return NULL;
}

bool ts_ranks_due(const struct ts_rank_entry *e, uint64_t now_ms)
{
	return now_ms >= e->next_try_ms;
}

void ts_ranks_missed(struct ts_rank_entry *e, uint64_t now_ms)
{
	uint64_t wait = 250ull << (e->tries < 8 ? e->tries : 8);

	if (e->tries < TS_RESOLVE_MAX_TRIES)
		e->tries++;
	e->next_try_ms = now_ms + (wait < TS_RESOLVE_BACKOFF_MAX_MS ? wait : TS_RESOLVE_BACKOFF_MAX_MS);
}

void ts_ranks_forget(struct ts_ranks *t, struct ts_rank_entry *e)
{
	(void)t;
	memset(e, 0, sizeof(*e));
}

/* The innermost pid of a host process: the last field of NSpid in its status. */
static int ns_pid_of(const char *proc_root, uint32_t host_pid)
{
	char path[256], line[256];
	int ns = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u/status", proc_root, host_pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		char *tok = strtok(line + 6, " \t\n");
		long v = -1;
		/* the last NSpid is the innermost namespace's; one that is no pid is none */
		for (; tok; tok = strtok(NULL, " \t\n"))
			if (ts_parse_int(tok, 1, INT_MAX, &v))
				v = -1;
		ns = (int)v;
		break;
	}
	fclose(f);
	return ns;
}

/* Depth-first search of the cgroup tree for the directory whose inode is id. */
static int cgroup_path(const char *dir, uint64_t id, char *out, size_t n, int depth)
{
	struct dirent *de;
	struct stat st;
	char sub[4096];
	int rc = -ENOENT;
	DIR *d;

	if (stat(dir, &st) == 0 && (uint64_t)st.st_ino == id) {
		snprintf(out, n, "%s", dir);
		return 0;
	}
	if (depth > 32 || !(d = opendir(dir)))
		return -ENOENT;
	while (rc && (de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
		    (size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) < sizeof(sub))
			rc = cgroup_path(sub, id, out, n, depth + 1);
	closedir(d);
	return rc;
}

static int match_in_cgroup(const struct ts_ranks *t, const char *cg, int ns_pid, uint32_t *out)
{
	char path[4200];
	unsigned pid;
	FILE *f;
	int rc = -ENOENT;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	if (!(f = fopen(path, "r")))
		return -ENOENT;
	while (rc && fscanf(f, "%u", &pid) == 1)
		if (ns_pid_of(t->proc_root, pid) == ns_pid) {
			*out = pid;
			rc = 0;
		}
	fclose(f);
	return rc;
}

/* Whether a process's environment (as it was at exec) is a traced rank's and agrees
 * with the rank's identity: it carries TRAINSCOPE_RING_DIR (the webhook and `trainscope
 * run` set it) or names the rank, and each TRAINSCOPE_{POD,NAMESPACE,JOB} it sets is
 * the rank's. */
static bool environ_agrees(const char *proc_root, uint32_t pid, const struct ts_ident *id)
{
	const struct { const char *key; const char *want; } vars[] = {
		{ "TRAINSCOPE_POD=", id->pod }, { "TRAINSCOPE_NAMESPACE=", id->ns },
		{ "TRAINSCOPE_JOB=", id->job }, { "TRAINSCOPE_RING_DIR=", NULL },
	};
	int named = 0;
	const size_t cap = 65536;
	char path[256], *env;
	size_t len;
	bool ok = true;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u/environ", proc_root, pid);
	if (!(f = fopen(path, "r")))
		return false;
	if (!(env = malloc(cap))) {
		fclose(f);
		return false;
	}
	len = fread(env, 1, cap - 1, f);
	fclose(f);
	env[len] = 0;
	for (size_t off = 0; off < len; off += strlen(env + off) + 1)
		for (size_t v = 0; v < sizeof(vars) / sizeof(vars[0]); v++) {
			size_t k = strlen(vars[v].key);
			if (strncmp(env + off, vars[v].key, k))
				continue;
			named++;
			ok = ok && (!vars[v].want || !strcmp(env + off + k, vars[v].want));
		}
	free(env);
	return ok && named > 0;
}

/* A rank that could not name its cgroup (in a container on a cgroup v1 host it sees no
 * cgroup2 mount), or whose cgroup the agent cannot see (cgroup namespaces): the host
 * process with the rank's pid in its own namespace and an environment that agrees (pid
 * 7 of one pod is not pid 7 of another, nor the host's pid 7). */
static int find_by_environ(const struct ts_ranks *t, const struct ts_ident *id, uint32_t *out)
{
	struct dirent *de;
	int rc = -ENOENT;
	DIR *d = opendir(t->proc_root);

	if (!d)
		return -ENOENT;
	while (rc && (de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);
		if (*end || !pid || ns_pid_of(t->proc_root, (uint32_t)pid) != id->pid)
			continue;
		if (environ_agrees(t->proc_root, (uint32_t)pid, id)) {
			*out = (uint32_t)pid;
			rc = 0;
		}
	}
	closedir(d);
	return rc;
}

/* The cgroup v2 id of a host process: the inode of its cgroup under cgroup_root, or 0
 * where its path is outside what the agent sees. */
static uint64_t cgroup_id_of(const struct ts_ranks *t, uint32_t pid)
{
	char path[4400], line[4096];
	struct stat st;
	uint64_t id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u/cgroup", t->proc_root, pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strncmp(line, "0::/", 4) || strstr(line, "/.."))
			continue;
		snprintf(path, sizeof(path), "%s%s", t->cgroup_root, line + 3);
		if (stat(path, &st) == 0)
			id = (uint64_t)st.st_ino;
	}
	fclose(f);
	return id;
}

int ts_ranks_resolve(const struct ts_ranks *t, const struct ts_ident *id, uint32_t *host_tgid,
		     uint64_t *cgroup_id)
{
	char cg[4096];

	*cgroup_id = id->cgroup_id;
	if (id->cgroup_id && cgroup_path(t->cgroup_root, id->cgroup_id, cg, sizeof(cg), 0) == 0 &&
	    match_in_cgroup(t, cg, id->pid, host_tgid) == 0)
		return 0;
	if (find_by_environ(t, id, host_tgid))
		return -ENOENT;
	if (!*cgroup_id)
		*cgroup_id = cgroup_id_of(t, *host_tgid);
	return 0;
}

/* A pod UID as the downward API gives it: 36 characters of hex digits and dashes. */
static bool uid_ok(const char *uid)
{
	size_t n = strlen(uid);

	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((uid[i] >= '0' && uid[i] <= '9') || (uid[i] >= 'a' && uid[i] <= 'f') ||
		      uid[i] == '-'))
			return false;
	return true;
}

/* Whether a line of /proc/<pid>/cgroup names the pod: kubelet's cgroupfs driver writes
 * .../pod<uid>/..., the systemd driver ...-pod<uid with '_' for '-'>.slice/... */
static bool names_pod(const char *line, const char *uid)
{
	char dashes[48], unders[48];

	snprintf(dashes, sizeof(dashes), "pod%s", uid);
	snprintf(unders, sizeof(unders), "pod%s", uid);
	for (char *c = unders; *c; c++)
		if (*c == '-')
			*c = '_';
	return strstr(line, dashes) || strstr(line, unders);
}

int ts_ranks_verify(const struct ts_ranks *t, const char *pod_uid, uint32_t host_tgid,
		    bool pods_only, char *why, size_t n)
{
	char path[256], line[1024];
	bool in_pod = false;
	FILE *f;

	if (host_tgid <= 1 || host_tgid == (uint32_t)getpid()) {
		snprintf(why, n, "host pid %u is %s", host_tgid, host_tgid <= 1 ? "init" : "the agent");
		return -EPERM;
	}
	if (!pods_only)
		return 0;
	if (!pod_uid || !uid_ok(pod_uid)) {
		snprintf(why, n, "the announcement names no pod (its relay has no TRAINSCOPE_POD_UID)");
		return -EPERM;
	}
	snprintf(path, sizeof(path), "%s/%u/cgroup", t->proc_root, host_tgid);
	if (!(f = fopen(path, "r"))) {
		snprintf(why, n, "cannot read %s", path);
		return -EPERM;
	}
	while (!in_pod && fgets(line, sizeof(line), f))
		in_pod = names_pod(line, pod_uid);
	fclose(f);
	if (!in_pod) {
		snprintf(why, n, "host pid %u is not in pod %s", host_tgid, pod_uid);
		return -EPERM;
	}
	return 0;
}

uint32_t ts_ranks_strangers(const struct ts_ranks *t, uint32_t self, const uint32_t *pids, int n)
{
	uint32_t strangers = 0;
	bool seen = false;

	for (int p = 0; p < n; p++) {
		bool rank = false;
		seen |= pids[p] == self;
		for (uint32_t i = 0; i < TS_MAX_SLOTS && !rank; i++)
			rank = t->e[i].used && t->e[i].resolved && t->e[i].host_tgid == pids[p];
		strangers += !rank;
	}
	return seen ? strangers : 0;
}
