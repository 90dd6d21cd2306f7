// SPDX-License-Identifier: Apache-2.0
#include "ident.h"
#include "numparse.h"
#include "visible.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void env_copy(char *dst, size_t n, const char *name, const char *dflt)
{
	const char *v = getenv(name);

	snprintf(dst, n, "%s", v && *v ? v : dflt);
}

static int32_t env_int(const char *name, int32_t dflt)
{
	long l;

	/* a whole number that fits, else the default: not one cut to 32 bits */
	return ts_parse_int(getenv(name), INT32_MIN, INT32_MAX, &l) ? dflt : (int32_t)l;
}

int ts_cgroup2_mount(char *out, size_t n)
{
	char line[4096], mnt[4096];
	int rc = -ENOENT;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return -ENOENT;
	/* "36 25 0:31 / /sys/fs/cgroup/unified rw,... - cgroup2 cgroup2 rw" */
	while (rc && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - cgroup2 ");
		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1) {
			snprintf(out, n, "%s", mnt);
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

uint64_t ts_cgroup_id(void)
{
	char line[4096], path[8300], root[4096];
	struct stat st;
	uint64_t id = 0;
	FILE *f;

	if (ts_cgroup2_mount(root, sizeof(root)))
		return 0;
	if (!(f = fopen("/proc/self/cgroup", "r")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* cgroup v2: "0::/path" */
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(path, sizeof(path), "%s%s", root, strcmp(line + 3, "/") ? line + 3 : "");
		if (stat(path, &st) == 0)
			id = (uint64_t)st.st_ino;
	}
	fclose(f);
	return id;
}

/* TRAINSCOPE_DEVICE_INDEX and TRAINSCOPE_DEVICE_UUID win; else the visible lists say;
 * else the index is LOCAL_RANK, right when the process sees all of its node's devices. */
static void ident_device(struct ts_ident *id)
{
	char uuid[sizeof(id->dev_uuid)] = "";
	int32_t index = id->local_rank;

	env_copy(id->dev_uuid, sizeof(id->dev_uuid), "TRAINSCOPE_DEVICE_UUID", "");
	id->dev_index = env_int("TRAINSCOPE_DEVICE_INDEX", -1);
	if (id->dev_index >= 0)
		return;
	if (ts_visible_device(id->local_rank, &index, uuid, sizeof(uuid)) == 2 && !id->dev_uuid[0])
		snprintf(id->dev_uuid, sizeof(id->dev_uuid), "%s", uuid);
	id->dev_index = index;
}

/* Each launcher's variables, in the order they are believed: trainscope's own override,
 * the torch.distributed env:// contract (torchrun, accelerate, DeepSpeed's launcher),
 * then MPI's (Open MPI and Horovod under mpirun, PMIx, MPICH and Intel MPI, MVAPICH)
 * and Slurm's srun. A rank comes with the world size and local rank of the same
 * launcher; missing ones fall back to WORLD_SIZE and LOCAL_RANK. */
const struct ts_rank_source ts_rank_sources[] = {
	{ "TRAINSCOPE_RANK", "TRAINSCOPE_WORLD_SIZE", "TRAINSCOPE_LOCAL_RANK" },
	{ "RANK", "WORLD_SIZE", "LOCAL_RANK" },
	{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK" },
	{ "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK" },
	{ "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID" },
	{ "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK" },
	{ "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },
	{ NULL, NULL, NULL },
};

const char *ts_rank_source_names(char *buf, size_t n)
{
	size_t len = 0;

	if (n)
		buf[0] = 0;
	for (const struct ts_rank_source *s = ts_rank_sources; s->rank && len < n; s++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", s->rank);
	return buf;
}

/* The first source whose rank variable is a number >= 0, or NULL. */
static const struct ts_rank_source *rank_source(int32_t *rank)
{
	for (const struct ts_rank_source *s = ts_rank_sources; s->rank; s++)
		if ((*rank = env_int(s->rank, -1)) >= 0)
			return s;
	*rank = -1;
	return NULL;
}

static void ident_rank(struct ts_ident *id)
{
	const struct ts_rank_source *s = rank_source(&id->rank);
	int32_t world = s ? env_int(s->world, -1) : -1, local = s ? env_int(s->local, -1) : -1;

	if (world <= 0)
		world = env_int("WORLD_SIZE", -1);
	if (local < 0)
		local = env_int("LOCAL_RANK", id->rank);
	/* a world that does not hold the rank is no world: the rank's own bound stands */
	id->world_known = world > 0 && world > id->rank;
	id->world_size = id->world_known ? world : id->rank >= 0 ? id->rank + 1 : 1;
	id->local_rank = local;
	id->rank_source = s ? (int8_t)(s - ts_rank_sources + 1) : 0;
}

void ts_ident_from_env(struct ts_ident *id)
{
	char host[64] = "localhost";

	memset(id, 0, sizeof(*id));
	gethostname(host, sizeof(host) - 1);
	env_copy(id->ns, sizeof(id->ns), "TRAINSCOPE_NAMESPACE", "default");
	env_copy(id->job, sizeof(id->job), "TRAINSCOPE_JOB", "local");
	env_copy(id->pod, sizeof(id->pod), "TRAINSCOPE_POD", "");
	env_copy(id->node, sizeof(id->node), "TRAINSCOPE_NODE", host);
	env_copy(id->container, sizeof(id->container), "TRAINSCOPE_CONTAINER", "");
	ident_rank(id);
	id->pid = (int32_t)getpid();
	id->cgroup_id = ts_cgroup_id();
	ident_device(id);
	env_copy(id->groups, sizeof(id->groups), "TRAINSCOPE_GROUPS", "");
}

int ts_ident_set_rank(struct ts_ident *id, int32_t rank, int32_t world, int32_t local_rank)
{
	if (rank < 0 || world <= rank)
		return -EINVAL;
	if (id->rank == rank && id->world_size == world && id->world_known &&
	    (local_rank < 0 || local_rank == id->local_rank))
		return 0;
	id->rank = rank;
	id->world_size = world;
	id->world_known = true;
	if (local_rank >= 0 && local_rank != id->local_rank) {
		id->local_rank = local_rank;
		ident_device(id);
	}
	return 1;
}

void ts_subject_token(char *dst, size_t n, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < n; i++) {
		char c = src[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '_' || c == '-';
		dst[i] = ok ? c : '_';
	}
	if (i == 0 && n > 1)
		dst[i++] = '_';
	dst[i] = 0;
}

int ts_subject(char *dst, size_t n, const char *ns, const char *job, const char *kind,
	       const char *leaf)
{
	char a[64], b[64], c[64];
	int len;

	ts_subject_token(a, sizeof(a), ns);
	ts_subject_token(b, sizeof(b), job);
	ts_subject_token(c, sizeof(c), leaf);
	len = snprintf(dst, n, "ts.v1.%s.%s.%s.%s", a, b, kind, c);
	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : len;
}

unsigned ts_partition(const char *ns_tok, size_t ns_len, const char *job_tok, size_t job_len,
		      unsigned n)
{
	uint32_t h = 2166136261u;

	if (n <= 1)
		return 0;
	for (size_t i = 0; i < ns_len; i++)
		h = (h ^ (unsigned char)ns_tok[i]) * 16777619u;
	for (size_t i = 0; i < job_len; i++)
		h = (h ^ (unsigned char)job_tok[i]) * 16777619u;
	return h % n;
}
