#include "ranks.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void ts_ranks_init(struct ts_ranks *t)
{
	memset(t, 0, sizeof(*t));
	t->proc_root = "/proc";
	if (ts_cgroup2_mount(t->cgroup_root, sizeof(t->cgroup_root)))
		snprintf(t->cgroup_root, sizeof(t->cgroup_root), "/sys/fs/cgroup");
}

static bool same_rank(const struct ts_ident *a, const struct ts_ident *b)
{
	return a->rank == b->rank && a->pid == b->pid && !strcmp(a->ns, b->ns) &&
	       !strcmp(a->job, b->job);
}

struct ts_rank_entry *ts_ranks_hello(struct ts_ranks *t, const struct ts_ident *id, uint64_t now_ms)
{
	struct ts_rank_entry *free_e = NULL;

	for (uint32_t i = 0; i < TS_MAX_SLOTS; i++) {
		struct ts_rank_entry *e = &t->e[i];
		if (e->used && same_rank(&e->id, id)) {
			e->last_hello_ms = now_ms;
			return e;
		}
		if (!e->used && !free_e)
			free_e = e;
	}
	if (!free_e)
		return NULL;
	memset(free_e, 0, sizeof(*free_e));
	free_e->used = true;
	free_e->id = *id;
	free_e->slot = (uint32_t)(free_e - t->e);
	free_e->last_hello_ms = now_ms;
	return free_e;
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
		for (; tok; tok = strtok(NULL, " \t\n"))
			ns = atoi(tok);
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

int ts_ranks_resolve(const struct ts_ranks *t, const struct ts_ident *id, uint32_t *host_tgid)
{
	char cg[4096];

	if (id->cgroup_id && cgroup_path(t->cgroup_root, id->cgroup_id, cg, sizeof(cg), 0) == 0 &&
	    match_in_cgroup(t, cg, id->pid, host_tgid) == 0)
		return 0;
	/* no cgroup v2 id: only a process in the agent's own pid namespace can match */
	if (ns_pid_of(t->proc_root, (uint32_t)id->pid) == id->pid) {
		*host_tgid = (uint32_t)id->pid;
		return 0;
	}
	return -ENOENT;
}
