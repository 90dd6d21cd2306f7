// SPDX-License-Identifier: Apache-2.0
/* The insides of a job, for the files that make it up (no other file includes this):
 *   job.c          its life: made, sized and grown with its world, ticked, freed
 *   job_rows.c     the step ring: the ranks' steps aligned by step number, evaluated in
 *                  step order
 *   job_ranks.c    its ranks: groups and communicators, host and device views, their end
 *   job_eval.c     a step's evaluation: the windows, SPACE and TIME, the alarm filter
 *   job_peers.c    peer classes: the ranks that do the same work
 *   job_change.c   change points on each rank's excess over its peers
 *   job_verdict.c  the verdict in words: the ranks named and their causes, the reason
 *   job_net.c      the Communication cause: communicators' transfer times
 *   job_net_place.c ... the node or link they meet at, and the ranks named there
 *   job_links.c    ... and the sends between ranks, to place it
 *   job_hang.c     a hang: its report, its culprit, its end
 *   job_lost.c     lost time: where the window's step time went
 *   job_history.c  alarms, fail-slow spells and hangs as they begin and end
 *   job_unranked.c processes the analyzer cannot use
 *   job_snap.c     the whole state in a snapshot, and back */
#ifndef TS_JOB_IMPL_H
#define TS_JOB_IMPL_H

#include "job.h"
#include "peers.h"

struct row {
	uint64_t step;
	bool used;
	int count;
	uint8_t *have;     /* [world] */
	float *m;          /* [world][TS_M_COUNT] */
	float *step_ms;    /* [world] */
	uint64_t end_max;
	uint64_t first_ns;   /* when its first rank came, as of the ticks: lateness counts from it */
};

#define TS_GEMM_LEARN 32 /* rank-steps that set a job's GEMM scale */

struct ts_job {
	char ns[64], name[64];
	struct ts_params p;
	int world, cap;           /* cap: rows in the step ring (grows to ts_job_max_rows) */
	int world_cap;            /* ranks the per-rank arrays hold (world grows in them) */
	uint64_t now_ns;          /* the last tick's time */
	bool unstamped;           /* rows were made before the first tick: no first_ns yet */
	struct row *rows;
	uint64_t next_eval;       /* lowest step not evaluated yet */
	uint64_t max_step, late;
	struct ts_lag lag;        /* steps analysed since the analyzer last took them */
	bool any_step;
	uint64_t last_progress_ns;
	char hang_reason[256];   /* from a rank's hang report; empty when none */
	char lost_reason[256];   /* ranks lost (watch_ranks); empty when none */
	int lost_in_reason;      /* res.nlost when lost_reason was written */
	uint64_t hang_step;      /* the hung rank's last step when it reported */
	uint64_t finished_ns;    /* see ts_job_quiet_since_ns */
	uint64_t added, added_seen, last_data_ns; /* steps taken; when the last came */
	struct ts_failslow fs;
	struct ts_rank_meta *meta;          /* [world] */
	float *hist;                        /* [world][M][space_window] per-step values */
	int hist_n;                         /* filled entries of each window */
	int hist_next;
	float step_hist[64];                /* the job's step time in each window slot */
	struct ts_ksigma *ks;               /* [world][M] */
	int8_t *dir;                        /* [world][M] SPACE verdict of the last window */
	int8_t *tdir;                       /* [world][M] TIME verdict of the last step */
	uint16_t *hits, *misses;            /* [world][M] */
	bool *alarm;                        /* [world][M] */
	uint64_t *since;                    /* [world][M] */
	float *win_median;                  /* [world][M] rank's window median */
	float *hit_value, *hit_median;      /* [world][M] the numbers of the last hit */
	uint64_t *judged_sample;            /* [world][M] host sample a verdict was counted on */
	/* an alarm the job ran with, unslowed (job_verdict.c absorb): the rank's ratio to its
	 * peers then, for the alarm confirmed at step felt_of - 1 (0: none); felt_busy
	 * [world]: its busy time's ratio at the same time */
	float *felt, *felt_busy;            /* [world][M] */
	uint64_t *felt_of;                  /* [world][M] */
	double group_median[TS_M_COUNT];
	double job_base[TS_M_COUNT];        /* the median rank's window median at the first
					     * full window (NAN before): what grew job-wide */
	bool job_base_set;
	bool slowed;                        /* slowed at the last step (ts_job_note_slowed) */
	uint64_t slowed_from_ns;            /* ... since this step's end */
	double step_ms;                     /* the job's step time at the last evaluation */
	uint8_t trace_id[16];
	bool has_trace;
	uint64_t verdict_step; /* the step to come when the verdict changed: its window's trace */
	bool finish_told;      /* ts_job_finished_news said so */
	int since_verdict;                  /* steps since the last SPACE verdict */
	struct ts_job_result res;
	/* change points (job_change.c) and peer classes (job_peers.c) */
	struct ts_change *chg;              /* [world][M] */
	float *ehist;                       /* [world][M][space_window] excess over peers */
	float *base;                        /* [world][M] own baseline, for ranks with no peer */
	int *order, *cstart;                /* ranks by peer class: [world], [world + 1] */
	int nclass;
	float *class_wait;                  /* [world] per class: its least collective wait */
	bool has_layout, layout_warned, fs_open, hang_open;
	bool classes_dirty;                 /* communicators changed: classes to relearn */
	uint64_t classes_at;                /* the step they were last learned at */
	bool classes_from_comms;
	bool classes_inferred;              /* from the ranks' own times (job_peers.c) */
	bool infer_tried;
	int infer_stride, infer_positions;  /* class = rank / stride % positions */
	struct ts_layout layout;
	char layout_text[64];
	float sigma[TS_M_COUNT];            /* the job's noise of the excess, share of a step */
	uint64_t sigma_at;                  /* steps_evaluated when sigma was learned */
	uint64_t hang_first_ns;             /* the first hang report still standing */
	struct ts_net *net;                 /* communicators' transfer times (job_net.c) */
	struct ts_links *links;             /* sends between ranks (job_links.c) */
	struct {                            /* the report's conditions, as last written */
		uint8_t status;             /* 0 never written, 1 False, 2 True */
		uint64_t since_ns;
	} cond[TS_JOB_CONDITIONS];
	bool net_open;                      /* a network event is open in the history */
	struct {                            /* job_rows.c's alone: a step's GEMM time as ms */
		double scale;               /* compute ms per (ns per flop): gemm_ms */
		double learn[2 * TS_GEMM_LEARN]; /* its samples, and ts_median's scratch */
		int nlearn;
	} gemm;
	struct {                            /* job_unranked.c's alone */
		struct ts_unranked list[TS_JOB_UNRANKED];
		int n, over;
		bool in_summary;            /* res.summary speaks of them */
		bool news;                  /* the list changed since the last tick */
	} unranked;
	double *scratch;                    /* 2 * world doubles */
	double *vals;                       /* world doubles */
	int *outl;                          /* world ints */
};

/* job.c: (re)allocates everything sized by the world, for world ranks exactly;
 * per-rank history restarts. */
int ts_job_size_world(struct ts_job *j, int world);
/* The world grows to nw ranks: the ranks so far keep their history while the arrays
 * have room. 0 or -ENOMEM. */
int ts_job_grow_world(struct ts_job *j, int nw);
/* Rows the step ring may grow to for a world: limits.reorder_steps within reorder_mb. */
int ts_job_max_rows(const struct ts_params *p, int world);

/* job_rows.c: the step ring. A row's per-rank arrays for world ranks: 0 or -ENOMEM. */
int ts_job_row_alloc(struct row *r, size_t world);
/* The ring's rows and their arrays freed. */
void ts_job_rows_free(struct ts_job *j);
/* Evaluates every row due, in step order (complete, or every rank ended, or overdue),
 * passing over gaps, and counts each one's lag from its end to now_ns. */
void ts_job_evaluate_due(struct ts_job *j, uint64_t now_ns);
/* A host view older than this no longer describes the step. */
#define TS_HOST_VIEW_MAX_AGE_NS (5ull * 1000000000ull)

/* job_ranks.c: every rank that stepped has ended: its exit record came, or it was lost. */
bool ts_job_all_final(const struct ts_job *j);
/* Ranks silent for rank_lost_s with no exit record while others exited are lost, and
 * lost_reason names them (the job ended abnormally). */
void ts_job_watch_ranks(struct ts_job *j, uint64_t now_ns);
/* The rank is in the communicator (announced by Hello or seen in its steps). */
bool ts_rank_in_comm(const struct ts_rank_meta *m, uint64_t comm);
/* True when the communicator is new to the rank. */
bool ts_rank_add_comm(struct ts_rank_meta *m, uint64_t comm);

/* job_eval.c: evaluates step r, its row given back to the ring: the job's step time,
 * the windows, change points, alarms and the verdict (job_rows.c calls it in step
 * order). */
void ts_job_evaluate_row(struct ts_job *j, struct row *r);
/* A rank's own phases: their sum is its busy time (the wait in collectives is not). */
#define TS_OWN_PHASES 4
extern const int ts_own_phases[TS_OWN_PHASES];
/* Rank k's busy time in window slot t: NAN where its step is missing. */
float ts_job_busy_at(const struct ts_job *j, int k, size_t t);
/* The window slot the last step evaluated went to. */
static inline size_t ts_job_last_slot(const struct ts_job *j)
{
	return (size_t)((j->hist_next + j->p.space_window - 1) % j->p.space_window);
}

/* job_peers.c: ranks grouped by peer class (after the world or the layout changed). */
/* The ranks that share rank k's peer class, k not counted. */
int ts_job_peers(const struct ts_job *j, int k);
/* True when a rank changed class. */
bool ts_job_group_ranks(struct ts_job *j);
/* The classes as of step r, before its change points: regrouped when communicators
 * changed (at most once a window), or inferred once from the ranks' own times. */
void ts_job_classes_row(struct ts_job *j, const struct row *r);

/* job_change.c: which metrics the change points judge; a step's excess over peers. */
bool ts_job_by_change(int m);
/* Ranks changed class: their change points and the noise are learned again (alarms
 * closed at step, t_ns). */
void ts_job_relearn(struct ts_job *j, uint64_t step, uint64_t t_ns);
void ts_job_change_row(struct ts_job *j, const struct row *r);

/* job_verdict.c: after an evaluation at t_ns, the ranks the verdict names, each with
 * its cause and evidence (res.slow), and res.summary. */
void ts_job_compose(struct ts_job *j, uint64_t t_ns);
/* The tick's state and reason from the steps evaluated: fail-slow and the network. */
void ts_job_verdict(struct ts_job *j);
/* Then a job that stopped (ranks lost, a hang reported, no step for hang_timeout_s)
 * is in state Hang, and the reason says why in place of the fail-slow one. */
void ts_job_stopped(struct ts_job *j, uint64_t now_ns);

/* job_waits.c: whether the job measurably waits for a rank. Over the window: the
 * median share of the step the peers wait in their collectives beyond rank k's wait
 * (*share), and the share of steps it came last to them (*last), or of pairs of steps
 * where that says more (a rank waited for every other step); false with too few steps
 * to say. */
bool ts_job_waited_for(struct ts_job *j, int k, double *share, double *last);
/* Rank k's median of metric m (m < 0: its busy time) over the median of its peers',
 * over the window's last recent steps (0: all of it); NAN with none. */
double ts_job_peer_ratio(struct ts_job *j, int k, int m, int recent);
/* The same over the last `pairs` pairs of steps, each pair's sum (0: the window's):
 * steps that alternate (one of two loader workers slow) hold their ratio so. */
double ts_job_peer_ratio_pairs(struct ts_job *j, int k, int m, int pairs);
/* ts_job_peer_ratio over the steps rank k's device was timed in only (all of them but
 * with TRAINSCOPE_DEVICE_EVERY): set beside its compute ratio, the same steps. */
double ts_job_peer_ratio_timed(struct ts_job *j, int k, int m, int recent);
/* The same two medians (ms): rank k's in *mine, its peers' in *theirs; false with none. */
bool ts_job_peer_medians(struct ts_job *j, int k, int m, int recent, double *mine,
			 double *theirs);
/* ... over the steps rank k's device was timed in only. */
bool ts_job_peer_medians_timed(struct ts_job *j, int k, int m, int recent, double *mine,
			       double *theirs);
/* The job's last 2 * change.smooth_steps + 1 steps over its fail-slow baseline, less 1
 * (their median, or their pairs' where steps alternate). */
double ts_job_slowdown(const struct ts_job *j);
/* The real-job floors are on (verdict.wait_floor > 0; 0: the statistics alone name a
 * rank, as the synthetic suites judge them). */
bool ts_job_floors(const struct ts_job *j);
/* The job is fail-slow and its last steps verdict.min_slowdown over its baseline, and
 * has been for verdict.min_slow_s: a healthy rank can hold a job of short steps back for
 * a few of them (bench/data lb-ok-q1: 17 steps of 6 ms, 30 % slower). */
bool ts_job_slowed(const struct ts_job *j);
/* Once a step, with the step's end time: when the job's slowdown began. */
void ts_job_note_slowed(struct ts_job *j, uint64_t t_ns);

/* job_history.c */
struct ts_event *ts_job_history_open(struct ts_job *j, enum ts_event_kind kind, int rank, int m);
struct ts_event *ts_job_history_find(struct ts_job *j, enum ts_event_kind kind, int rank, int m);
void ts_job_history_close(struct ts_job *j, enum ts_event_kind kind, int rank, int m,
			  uint64_t step, uint64_t t_ns);
/* Fail-slow spells and hangs into the history as they begin and end (after the tick's
 * state and reason). */
void ts_job_history_spells(struct ts_job *j, uint64_t now_ns);
/* job_unranked.c: the summary while unranked processes are the only news; true when
 * their list changed since the last call. */
bool ts_job_unranked_summary(struct ts_job *j);
/* job_lost.c: res.lost from the window (after the verdicts: a slow rank's cause is
 * its verdict's). */
void ts_job_lost_time(struct ts_job *j);
/* job_hang.c: names the ranks that did not enter the op the others wait in. */
void ts_job_hang_culprits(struct ts_job *j, uint64_t now_ns);
/* The hang reported is over once a later step was evaluated with every rank in it. */
void ts_job_hang_cleared(struct ts_job *j);

/* job_net.c: a rank's time per communicator in a step; the step's verdict once it is
 * evaluated (after compose). job_net_place.c: the ranks its verdict names, added to
 * res.slow. */
int ts_job_net_add(struct ts_job *j, int rank, const struct ts_rank_step *s);
void ts_job_net_row(struct ts_job *j, uint64_t step, uint64_t t_ns);
void ts_job_net_name(struct ts_job *j);
void ts_job_net_free(struct ts_job *j);

/* job_links.c: ranks' network sends to their peers, and where they are slow. */
void ts_job_links_member(struct ts_job *j, uint64_t comm, uint32_t crank, int rank);
void ts_job_links_add(struct ts_job *j, int rank, const struct ts_rank_step *s);
void ts_job_links_place(struct ts_job *j, const int *node_of, const char *const *names,
			struct ts_net_verdict *v);
void ts_job_links_free(struct ts_job *j);
/* The communicator carried sends and receives in a step. */
bool ts_job_net_p2p(const struct ts_job *j, uint64_t id);
struct ts_snap;
void ts_job_net_io(struct ts_snap *s, struct ts_job *j);
/* Bytes it may hold for a world, for ts_job_bytes. */
size_t ts_job_net_bytes(const struct ts_params *p, int world);

#endif
