/* The ranks this node traces: learnt from Hello records, mapped to host processes,
 * each given a slot of the BPF maps. */
#ifndef TS_RANKS_H
#define TS_RANKS_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/hostprobe.h"
#include "ident.h"

struct ts_rank_entry {
	bool used, resolved, final;
	bool refused;           /* its announcement did not check out: never traced, evictable */
	char pod_uid[64];       /* the announcing relay's pod, "" outside Kubernetes */
	struct ts_ident id;     /* as the rank reported it (its own pid namespace) */
	uint32_t host_tgid;     /* the same process seen from the agent */
	uint32_t slot;
	uint64_t last_hello_ms;
	struct ts_slot_acc prev; /* counters at the last sample */
};

struct ts_ranks {
	struct ts_rank_entry e[TS_MAX_SLOTS];
	const char *proc_root;   /* "/proc" (tests point it elsewhere) */
	char cgroup_root[256];   /* the cgroup v2 mount */
};

/* host_cgroup: where the host's cgroup tree is mounted (its cgroup2 hierarchy there or
 * in its unified/ folder); NULL or "": the first cgroup2 mount this process sees. */
void ts_ranks_init(struct ts_ranks *t, const char *host_cgroup);
/* Adds or refreshes a rank from its Hello. Returns its entry, or NULL when full. */
struct ts_rank_entry *ts_ranks_hello(struct ts_ranks *t, const struct ts_ident *id, uint64_t now_ms);
/* Finds the host tgid of the process whose innermost pid is id->pid: among the
 * processes of its cgroup, or, when that is unknown or not visible here, the one whose
 * environment names the rank's pod and job. *cgroup_id gets the rank's cgroup v2 id
 * (from the host's view when the rank could not tell), 0 when unknown. Returns 0 or
 * -ENOENT. */
int ts_ranks_resolve(const struct ts_ranks *t, const struct ts_ident *id, uint32_t *host_tgid,
		     uint64_t *cgroup_id);
void ts_ranks_forget(struct ts_ranks *t, struct ts_rank_entry *e);
/* Whether host process host_tgid may be traced as the rank announced: never pid 1 or the
 * agent itself; with pods_only, only a process whose cgroup is the announcing pod's
 * (pod_uid in its path: kubelet's cgroupfs and systemd layouts). Returns 0, or -EPERM
 * with why. */
int ts_ranks_verify(const struct ts_ranks *t, const char *pod_uid, uint32_t host_tgid,
		    bool pods_only, char *why, size_t n);

#endif
