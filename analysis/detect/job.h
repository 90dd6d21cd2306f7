// SPDX-License-Identifier: Apache-2.0
/* Per-job detection state: steps of all ranks aligned by step number, fail-slow on the
 * job's step time, SPACE + TIME localization per metric, alarms and causes. */
#ifndef TS_JOB_H
#define TS_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "change.h"
#include "failslow.h"
#include "ksigma.h"
#include "params.h"

enum ts_metric {
	TS_M_COMPUTE,
	TS_M_COLLECTIVE,
	TS_M_LAUNCH,
	TS_M_DATALOADER,
	TS_M_CHECKPOINT,
	TS_M_RUNQ,   /* run-queue delay per step, from the node agent */
	TS_M_OFFCPU, /* time asleep per step, from the node agent */
	TS_M_GEMM,   /* the sampled GEMMs' device time per flop, in the job's compute ms
		      * (ts_rank_step carries ns per flop: ts_job_add_step scales it) */
	TS_M_COUNT
};

enum ts_state { TS_STATE_UNKNOWN, TS_STATE_HEALTHY, TS_STATE_FAILSLOW, TS_STATE_HANG };

extern const char *const ts_metric_names[TS_M_COUNT];
extern const char *const ts_state_names[4];

#define TS_STEP_COMMS 8
#define TS_STEP_PEERS 16

/* A rank's network sends to one peer within a step (NCCL's profiler plugin). */
struct ts_peer_time {
	uint64_t comm;
	uint32_t peer;      /* the peer's rank in the communicator */
	double ns, bytes;
};

/* A rank's time in one communicator within a step (collectives and p2p ops). */
struct ts_comm_time {
	uint64_t id;      /* 0: collectives timed by the API, with no communicator */
	uint32_t nranks;  /* members, as the rank's library says; 0 when unknown */
	uint32_t count, p2p;
	double ms, mb;    /* time (ms) and payload (MB) */
};

/* One rank's step as the analyzer needs it (ms). */
struct ts_rank_step {
	uint64_t step;
	uint64_t start_ns, end_ns;
	double m[TS_M_COUNT];
	int ncomm;
	struct ts_comm_time comm[TS_STEP_COMMS];
	int npeer;
	struct ts_peer_time peer[TS_STEP_PEERS];
};

/* The node agent's view of a rank over its last interval, as rates. */
struct ts_host_view {
	bool valid;
	uint64_t time_ns;
	double runq_ms_per_s, offcpu_ms_per_s, oncpu_ms_per_s, involuntary_per_s;
	char top_comm[16];      /* the main preemptor, if any */
	int top_pid;
	double top_ms_per_s;
	double tcp_retrans_per_s;
	/* the node's network ports (the agent's sysfs counters): errors, transmit drops and
	 * link losses per second */
	double nic_err_per_s, nic_drop_per_s, link_down_per_s;
};

/* The rank's GPU as NVML saw it last. */
struct ts_device_view {
	bool valid;
	uint32_t sm_clock_mhz;
	uint64_t throttle_reasons;
	uint32_t xid_errors, temperature_c;
	uint32_t other_procs; /* processes on it that are no traced rank: another tenant */
};

#define TS_RANK_MAX_COMMS 16

struct ts_rank_meta {
	char pod[128], node[64], device[64];
	int pid, device_index;
	bool seen, final, lost; /* lost: silent, no exit record, while others exited */
	uint64_t last_step;
	uint64_t watched_step, watched_ns; /* last_step as of the tick that saw it change */
	struct ts_host_view host;
	struct ts_host_view blame; /* the last view that named a preemptor worth naming */
	struct ts_device_view dev;
	int peer_class;            /* ranks of one class do the same work (peers.h) */
	/* NCCL communicators the rank is in (Hello groups "nccl:<hash>:<size>:<rank>") */
	uint64_t comms[TS_RANK_MAX_COMMS];
	uint8_t ncomms;
	/* the op its hang watch reported, while it reports one */
	bool hanging;
	char hang_op[24];
	uint64_t hang_comm, hang_seq, hang_ns, hang_step;
	double gpu_lost_s; /* the job's GPU-seconds lost to this rank (ts_gpu_lost) */
};

/* NVML throttle reasons that mean the hardware slowed the GPU down. */
#define TS_THROTTLE_HW_MASK (0x8ull | 0x20ull | 0x40ull | 0x80ull)
#define TS_THROTTLE_IDLE 0x1ull /* NVML's GpuIdle: a low clock then is no slowdown */

struct ts_slow_rank {
	int rank;
	const char *cause;   /* Compute | Communication | HostCPU | Storage | Device */
	const char *metric;
	char method[24];     /* CUSUM, SPACE, TIME and their sums */
	double degradation;  /* (value - group median) / group median */
	double value_ms, median_ms;
	uint64_t since_ns;
	uint64_t onset_step;     /* the step where the change began */
	uint64_t confirmed_step; /* the step at which it was confirmed */
	char evidence[320];
};

enum ts_event_kind { TS_EV_SLOW_RANK, TS_EV_FAILSLOW, TS_EV_HANG };

/* What the job went through: every alarm raised and cleared, every hang. */
struct ts_event {
	uint8_t kind, metric;
	bool open;
	int32_t rank;           /* -1: the job */
	uint64_t onset_step, raised_step, cleared_step;
	uint64_t raised_ns, cleared_ns;
	float excess;           /* (value - reference) / reference when raised */
	char text[256];
};
#define TS_HISTORY_MAX 32

enum ts_net_scope { TS_NET_NONE, TS_NET_NODE, TS_NET_LINK, TS_NET_JOB };
extern const char *const ts_net_scope_names[4];

/* Communication: communicators whose transfer time rose against their own baseline,
 * and where they meet: one node, one node pair, or the job's network as a whole. */
struct ts_net_verdict {
	enum ts_net_scope scope;
	char nodes[2][64];
	int slow_comms, comms;        /* alarmed, and judged in all */
	uint64_t worst_comm;
	double value_ms, ref_ms, excess; /* the worst alarmed communicator's transfer time */
	uint64_t onset_step, confirmed_step, onset_ns;
	char evidence[320];
	/* alarmed communicators held back: every one has this slow rank in it (a GPU
	 * shared with another process runs NCCL's kernels slower too: one cause, its
	 * evidence); -1 none. held_why: or why else no verdict was raised ("" none) */
	int explained_rank;
	char held_why[160];
};
#define TS_HANG_MAX_CULPRITS 8
/* The upper bounds (s) of the step-time histogram's buckets (+Inf is the count). */
#define TS_STEP_BUCKETS 14
extern const double ts_step_bucket_s[TS_STEP_BUCKETS];
/* A Prometheus histogram's observation: v counted in every bucket of the nb upper bounds
 * it is under, in count, and in sum. */
void ts_hist_observe(const double *bounds, int nb, uint64_t *le, uint64_t *count, double *sum,
		     double v);
/* From a step's end (its slowest rank's) to its analysis: the analyzer's own lag. */
#define TS_LAG_BUCKETS 18
extern const double ts_lag_bucket_s[TS_LAG_BUCKETS];
struct ts_lag {
	uint64_t le[TS_LAG_BUCKETS], count;
	double sum_s, max_s;
};

/* Where the job's step time went over its last analysis window (space.window_size
 * steps): what-ifs on the job's own dependency structure, a synchronous step being
 * bounded by its slowest rank. Shares are of the window's summed step time. */
enum ts_cause { TS_CAUSE_COMPUTE, TS_CAUSE_COMM, TS_CAUSE_HOST, TS_CAUSE_STORAGE,
		TS_CAUSE_DEVICE, TS_CAUSE_COUNT };
extern const char *const ts_cause_names[TS_CAUSE_COUNT];
#define TS_LOST_RANKS 3
struct ts_lost_rank {
	int rank;
	enum ts_cause cause;  /* the phase that costs it the most time */
	double share;         /* the step time the job would save at its peers' pace */
};
struct ts_lost_time {
	bool valid;
	uint64_t from_step, to_step;
	double step_ms;       /* the window's mean step */
	double share;         /* ranks + stages + data together */
	double ranks;         /* ranks slower than their peers, persistently */
	double stages;        /* peer classes (pipeline stages) heavier than the others */
	double data;          /* per-step variation that moves among replicas */
	double comm;          /* transfers (the last arriving rank's collective time): where
			       * time goes, not a loss */
	double cause[TS_CAUSE_COUNT]; /* `ranks` split by the phase that costs it */
	int nranks;
	struct ts_lost_rank rank[TS_LOST_RANKS]; /* the costliest, most first */
};

/* GPU time the job lost since it began: each analysis window's lost shares of the step,
 * times its mean step, times the job's GPUs (one a rank), for the steps that window
 * added to the last one's (ts_job_lost_time). Kept in snapshots with the job. */
struct ts_gpu_lost {
	double total_s;                 /* ranks + stages + data, GPU-seconds */
	double cause_s[TS_CAUSE_COUNT]; /* the ranks' part, by the phase that costs each */
	double stages_s, data_s;
	uint64_t through_step;          /* the last step counted */
	bool counted;                   /* any step counted yet */
};

struct ts_job_result {
	enum ts_state state;
	int world;
	double baseline_ms, current_ms, degradation;
	int nslow;
	struct ts_slow_rank *slow;
	uint64_t last_step, steps_evaluated, updated_ns;
	uint64_t alarms_raised;   /* (rank, metric) alarms ever raised, cleared ones too */
	int nlost;                /* ranks lost (ts_rank_meta.lost) */
	/* completeness: rank-steps the evaluated steps should have had and lacked; rank-steps
	 * that came after their step was evaluated; what the producers said they lost */
	uint64_t rank_steps_expected, rank_steps_missing, rank_steps_late;
	uint64_t ring_dropped, batches_lost;
	uint8_t *ever_alarmed;    /* [world]: 1 for a rank that was ever alarmed */
	char summary[512];
	char reason[640]; /* the hang's and the lost ranks' accounts fit together */
	int hang_rank;            /* the culprit, else the rank whose hang watch fired; -1 */
	int hang_stacks_rank;     /* whose stacks hang_stacks holds */
	char hang_stacks[16384];  /* its Python stacks at that moment */
	/* the ranks that did not enter the op the others wait in, and that op */
	int nculprits, hang_waiting, hang_members;
	int culprits[TS_HANG_MAX_CULPRITS];
	char hang_op[24];
	uint64_t hang_comm, hang_seq;
	struct ts_net_verdict net;
	struct ts_event history[TS_HISTORY_MAX];
	int nhistory;
	uint64_t history_dropped;
	/* the job's step times, as a Prometheus histogram (cumulative buckets) */
	uint64_t step_le[TS_STEP_BUCKETS], step_count;
	double step_sum_s;
	struct ts_lost_time lost;
	struct ts_gpu_lost gpu_lost;
};

struct ts_job;

/* world may grow later when a higher rank shows up. */
int ts_job_new(struct ts_job **out, const char *ns, const char *name, int world,
	       const struct ts_params *p);
void ts_job_free(struct ts_job *j);
const char *ts_job_ns(const struct ts_job *j);
const char *ts_job_name(const struct ts_job *j);
struct ts_rank_meta *ts_job_rank(struct ts_job *j, int rank);

/* What a job of world ranks holds in memory, near enough to budget by. */
size_t ts_job_bytes(const struct ts_params *p, int world);
int ts_job_world(const struct ts_job *j);
/* The lowest step not evaluated yet: steps below it come late. */
uint64_t ts_job_next_step(const struct ts_job *j);
/* Every rank of the job ended, as of the last tick. */
bool ts_job_finished(const struct ts_job *j);
/* Every rank that stepped has sent its exit record (or was lost) since the last tick:
 * the next tick finishes the job. */
bool ts_job_exited(const struct ts_job *j);
/* When the job's ranks had all ended, else when its last step came, as of the ticks. */
uint64_t ts_job_quiet_since_ns(const struct ts_job *j);

/* Adds a rank's step. Steps older than the evaluated horizon are counted late and
 * dropped. Returns 0, -ERANGE for a rank or world at or past limits.max_world, -EDOM for
 * a step more than limits.max_step_jump past the job's highest, or -ENOMEM. */
int ts_job_add_step(struct ts_job *j, int rank, int world, const struct ts_rank_step *s);
/* Host and device views join the rank's next steps. */
void ts_job_host_view(struct ts_job *j, int rank, const struct ts_host_view *v);
void ts_job_device_view(struct ts_job *j, const char *node, int device_index,
			const struct ts_device_view *v);
/* A rank's in-process hang watch saw an op pending past its timeout. */
void ts_job_rank_hang(struct ts_job *j, int rank, const char *op, uint64_t comm, uint64_t seq,
		      uint64_t pending_ns, const char *stacks);
/* The rank's Hello groups: "layout:tp2-pp4-dp8" (its job's parallel layout, from
 * TRAINSCOPE_GROUPS) and "nccl:<hex hash>:<size>:<rank>" (a communicator it is in).
 * Unknown entries are passed over. */
void ts_job_rank_groups(struct ts_job *j, int rank, const char *const *groups, size_t n);
/* Sets the job's parallel layout (peers.h). 0, or -EINVAL with err saying why (a layout
 * that does not parse, or that covers another number of ranks than the job's). */
int ts_job_set_layout(struct ts_job *j, const char *layout, char *err, size_t errlen);
/* Records a producer's rings dropped, and batches missing from its sequence (a negative
 * count: a missing one came after all). */
void ts_job_data_loss(struct ts_job *j, uint64_t ring_dropped, int64_t batches_lost);
/* A process the analyzer cannot use, as its relay says: one that made steps with no
 * rank (its relay holds them until it learns one), or a rank that ran collectives or
 * GEMMs and made no step (its loop's steps were not found). */
struct ts_unranked {
	uint64_t producer;
	char pod[128];
	int pid;
	int rank;       /* -1: no rank, count is its steps; else no step, count is its
			 * collectives and GEMMs */
	uint64_t count;
};
#define TS_JOB_UNRANKED 16
/* A producer's notice (rank -1: steps with no rank; else device work with no step).
 * True when the process is new to the list (past TS_JOB_UNRANKED it is counted only). */
bool ts_job_unranked(struct ts_job *j, uint64_t producer, const char *pod, int pid, int rank,
		     uint64_t count);
/* The producer's process has a rank and steps now: it leaves the list. True when it was
 * there. */
bool ts_job_ranked(struct ts_job *j, uint64_t producer);
/* The processes listed now, both kinds: *n listed, *over more counted only. */
const struct ts_unranked *ts_job_unranked_list(const struct ts_job *j, int *n, int *over);
/* A producer announced exit (no more data from that rank). */
void ts_job_rank_final(struct ts_job *j, int rank);
/* Its process ended without the exit record (killed, crashed): the rank is lost. */
void ts_job_rank_died(struct ts_job *j, int rank);
/* Evaluates every step that is complete (or lag_steps behind) and checks for a hang.
 * Returns true when the result changed in a way a reader should see. */
bool ts_job_tick(struct ts_job *j, uint64_t now_ns);
/* Adds the lags of the steps analysed since the last call into into, and clears them. */
void ts_job_take_lag(struct ts_job *j, struct ts_lag *into);
const struct ts_job_result *ts_job_result(const struct ts_job *j);
/* The report's conditions (SlowRanks, FailSlow, Hang, DataComplete, Stored, RanksKnown,
 * StepsFound): when
 * condition c last changed its status, now being status at now_ns (Kubernetes API
 * conventions: lastTransitionTime moves only with the status). */
#define TS_JOB_CONDITIONS 7
uint64_t ts_job_condition_since(struct ts_job *j, int c, bool status, uint64_t now_ns);
uint64_t ts_job_late_steps(const struct ts_job *j);
/* The job attempt's trace id (16 bytes), set by its first step; NULL before. */
const uint8_t *ts_job_trace_id(const struct ts_job *j);
/* The trace the report points to: the window (traces.window_steps) in which the verdict
 * last changed, where its slow_rank spans are. False before the first step. */
bool ts_job_report_trace(const struct ts_job *j, uint8_t out[16]);
/* True once when every rank has ended (again after a rank that sent more ends too). */
bool ts_job_finished_news(struct ts_job *j);
/* Each rank's own time per step, ms: compute, launch, dataloader and checkpoint (not
 * the wait in collectives), the median of the last space_window steps; NAN for a rank
 * with none yet. out holds ts_job_world(j) values. */
void ts_job_rank_busy_ms(const struct ts_job *j, double *out);

/* Snapshots (snap.h): the job's whole state appended (or compared with its last save:
 * snapdiff.h), or read back as a new job whose last tick, hang and lost-rank clocks
 * start at now_ns. Return 0 or a negative errno (-EBADMSG: a snapshot this build cannot
 * read; -ENOMEM). */
struct ts_snap;
int ts_job_save(struct ts_job *j, struct ts_snap *s);
int ts_job_load(struct ts_job **out, struct ts_snap *s, int max_world, uint64_t now_ns);
/* Tells apart builds whose snapshots differ in layout. */
uint64_t ts_job_snap_layout(void);

#endif
