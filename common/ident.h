// SPDX-License-Identifier: Apache-2.0
/* Who produced a record (docs/design.md, Identity), and the NATS subjects built from it. */
#ifndef TS_IDENT_H
#define TS_IDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ts_ident {
	char ns[64];
	char job[64];
	char pod[128];
	char node[64];
	char container[64];
	int32_t rank, local_rank, world_size, pid;
	uint64_t cgroup_id;
	int32_t dev_index;
	char dev_uuid[48];
	char groups[64];  /* the job's parallel layout (TRAINSCOPE_GROUPS: "tp2-pp4-dp8") */
	bool world_known; /* world_size came from a launcher or the program, not guessed */
	int8_t rank_source; /* 1 + the entry of ts_rank_sources that gave the rank; 0: none */
};

/* A launcher's names for a process's rank, world size and local rank. */
struct ts_rank_source {
	const char *rank, *world, *local;
};
/* Believed in this order; the list ends with an entry of NULLs. */
extern const struct ts_rank_source ts_rank_sources[];
/* Their rank variables' names, ", "-separated, into buf (cut to n). Returns buf. */
const char *ts_rank_source_names(char *buf, size_t n);

/* Fills id from TRAINSCOPE_NAMESPACE/JOB/POD/NODE/CONTAINER/GROUPS, the first launcher
 * of ts_rank_sources whose rank variable is set, and the process itself. Missing values
 * get defaults ("default", "local", host name, rank -1). The device:
 * TRAINSCOPE_DEVICE_INDEX and TRAINSCOPE_DEVICE_UUID when set, else ts_visible_device,
 * else the local rank. */
void ts_ident_from_env(struct ts_ident *id);

/* The rank and world size the program itself established (its process group, its
 * job-wide communicator), and its local rank when known (-1: keep id's; a new one moves
 * the device as ts_ident_from_env finds it). Returns 1 when id changed, 0 when it
 * already said so, -EINVAL for a rank outside [0, world). */
int ts_ident_set_rank(struct ts_ident *id, int32_t rank, int32_t world, int32_t local_rank);


/* The inode of the process's own cgroup v2 directory: bpf_get_current_cgroup_id(). */
uint64_t ts_cgroup_id(void);
/* Where cgroup v2 is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid
 * hosts). Returns 0 or -ENOENT. */
int ts_cgroup2_mount(char *out, size_t n);

/* Copies src into a subject token: characters outside [A-Za-z0-9_-] become '_'. */
void ts_subject_token(char *dst, size_t n, const char *src);

/* ts.v1.<ns>.<job>.<kind>.<leaf>; returns the length or -ENAMETOOLONG. */
int ts_subject(char *dst, size_t n, const char *ns, const char *job, const char *kind,
	       const char *leaf);

/* The partition of a job's subjects, as NATS's {{partition(n,1,2)}} mapping computes it
 * (FNV-1a 32 of the namespace and job tokens, joined without a separator, modulo n):
 * the analyzer that owns it. ns_tok and job_tok are subject tokens (ts_subject_token).
 * n <= 1: 0. */
unsigned ts_partition(const char *ns_tok, size_t ns_len, const char *job_tok, size_t job_len,
		      unsigned n);

#endif
