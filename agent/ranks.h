// SPDX-License-Identifier: Apache-2.0
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
	uint64_t first_hello_ms; /* when it took its slot */
	uint64_t next_try_ms;    /* unresolved: when to look for its process again */
	uint32_t tries;          /* ... and how many looks failed (the wait doubles) */
	struct ts_slot_acc prev; /* counters at the last sample */
};
/* An unresolved entry this old may give its slot to a new announcement when the table
 * is full: a real rank resolves within it, announcements whose process never appears do
 * not hold slots for good. */
#define TS_UNRESOLVED_GRACE_MS 5000
/* The longest wait between two looks for an unresolved entry's process. */
#define TS_RESOLVE_BACKOFF_MAX_MS 30000
/* Failed looks counted at most (the order in which entries are looked at). */
#define TS_RESOLVE_MAX_TRIES 16

struct ts_ranks {
	struct ts_rank_entry e[TS_MAX_SLOTS];
	const char *proc_root;   /* "/proc" (tests point it elsewhere) */
	char cgroup_root[256];   /* the cgroup v2 mount */
};

/* host_cgroup: where the host's cgroup tree is mounted (its cgroup2 hierarchy there or
 * in its unified/ folder); NULL or "": the first cgroup2 mount this process sees. */
void ts_ranks_init(struct ts_ranks *t, const char *host_cgroup);
/* How many of the n host PIDs (a GPU's processes) are no traced rank's process: another
 * tenant on the device. 0 when n < 0 (the list is unknown) or when the list lacks self,
 * the rank whose GPU it is: then NVML's PIDs are not the agent's (another PID
 * namespace), or the rank has no context there yet, and none can be told apart. */
uint32_t ts_ranks_strangers(const struct ts_ranks *t, uint32_t self, const uint32_t *pids, int n);
/* Adds or refreshes a rank from its Hello. A known rank takes the Hello's local rank and
 * device when it names one: a process may learn its device after its rank (mp.spawn's
 * set_device after init_process_group), and the first Hello had none. When the table is
 * full a refused entry, else the oldest entry unresolved for TS_UNRESOLVED_GRACE_MS,
 * gives up its slot. Returns the entry, or NULL when full. */
struct ts_rank_entry *ts_ranks_hello(struct ts_ranks *t, const struct ts_ident *id, uint64_t now_ms);
/* Finds the host tgid of the process whose innermost pid is id->pid: among the
 * processes of its cgroup, or, when that is unknown or not visible here, the one whose
 * environment names the rank's pod and job. *cgroup_id gets the rank's cgroup v2 id
 * (from the host's view when the rank could not tell), 0 when unknown. Returns 0 or
 * -ENOENT. */
int ts_ranks_resolve(const struct ts_ranks *t, const struct ts_ident *id, uint32_t *host_tgid,
		     uint64_t *cgroup_id);
void ts_ranks_forget(struct ts_ranks *t, struct ts_rank_entry *e);
/* The entry of rank id (its namespace, job, rank and pid), or NULL. */
struct ts_rank_entry *ts_ranks_find(struct ts_ranks *t, const struct ts_ident *id);
/* The entry that may give its slot to a new announcement (of pod uid's entries; NULL:
 * any): a refused one, else the oldest unresolved for TS_UNRESOLVED_GRACE_MS; or NULL. */
struct ts_rank_entry *ts_ranks_evictable(struct ts_ranks *t, const char *uid, uint64_t now_ms);
/* Entries announced by pod uid. */
int ts_ranks_of_pod(const struct ts_ranks *t, const char *uid);
/* Ranks one pod may have traced on a node: 8 to 16 accelerators make 8 to 16 ranks; a
 * pod that announces more (a forger inside it, a relay gone wrong) must not take every
 * other pod's slots. */
#define TS_MAX_PER_POD 32
/* The entry of the process id names (its namespace, job and pid) under another rank, or
 * NULL: a process that learned its rank late (Lightning's launcher, mp.spawn) may have
 * been announced under a provisional one first. */
struct ts_rank_entry *ts_ranks_renamed(struct ts_ranks *t, const struct ts_ident *id);
/* Whether an unresolved entry's process is due another look at now_ms. */
bool ts_ranks_due(const struct ts_rank_entry *e, uint64_t now_ms);
/* A look found nothing: the next waits twice as long (up to TS_RESOLVE_BACKOFF_MAX_MS), so
 * a flood of announcements whose processes do not exist costs little CPU. */
void ts_ranks_missed(struct ts_rank_entry *e, uint64_t now_ms);
/* Whether host process host_tgid may be traced as the rank announced: never pid 1 or the
 * agent itself; with pods_only, only a process whose cgroup is the announcing pod's
 * (pod_uid in its path: kubelet's cgroupfs and systemd layouts). Returns 0, or -EPERM
 * with why. */
int ts_ranks_verify(const struct ts_ranks *t, const char *pod_uid, uint32_t host_tgid,
		    bool pods_only, char *why, size_t n);

#endif
