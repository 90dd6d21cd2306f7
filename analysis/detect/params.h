// SPDX-License-Identifier: Apache-2.0
/* Detection parameters (analysis/analyzer.yaml); defaults are the seeds' values. */
#ifndef TS_PARAMS_H
#define TS_PARAMS_H

#include <stddef.h>
#include "config.h"
#include "change.h"
#include "dbscan.h"
#include "failslow.h"
#include "ksigma.h"

/* What one analyzer takes on: past these, data is refused, counted and logged once. */
struct ts_limits {
	int max_jobs;              /* jobs followed at once */
	double namespace_share;    /* of max_jobs, the most one namespace may hold */
	int max_world;             /* ranks in one job (rank numbers below it) */
	int memory_mb;             /* the state of all jobs together (ts_job_bytes) */
	int max_step_jump;         /* steps a rank may land past its job's highest step */
	double job_ttl_s;          /* a job that ended, or sent nothing, this long is forgotten */
	int reorder_steps;         /* steps a job holds unjudged while ranks catch up */
	int reorder_mb;            /* ... and the bytes those steps may take, per job */
};

/* How the job's timeline goes out as traces (OTLP). */
struct ts_trace_opts {
	int window_steps;          /* steps in one trace; a window's root links its predecessor */
	int sample_ranks;          /* healthy ranks whose step spans a window keeps (0: all) */
	int max_trace_kb;          /* a window's spans past this are dropped and counted */
};

struct ts_params {
	struct ts_failslow_opts fs;
	struct ts_space_opts space;
	int space_window;            /* steps whose per-rank median SPACE compares */
	int space_window_step;       /* steps between two verdicts (windows overlap) */
	struct ts_ksigma_opts time;
	char time_detect_type[16];   /* upper_bound | lower_bound | bi_bound */
	double expert[4];            /* min/max upper, min/max lower; < 0 = not set */
	int alarm_filter_window_size;
	int clear_after_steps;       /* consecutive normal evaluations that clear an alarm */
	struct ts_change_opts change;
	double net_drift;            /* a communicator's transfer excess (share of its baseline) */
	double net_min_sigma;        /* ... and the floor of its learned noise */
	double net_min_step_share;   /* ... and at least this share of the step */
	double hang_timeout_s;
	double hang_culprit_wait_s;  /* name culprits without a majority of reports after this */
	double rank_lost_s;          /* a rank silent this long while others exited is lost */
	int lag_steps;               /* evaluate a step with missing ranks once this far behind */
	double lateness_s;           /* ... and once this long after its first rank came */
	double min_abs_diff_ms;
	double min_step_share;       /* an outlier's excess is at least this share of a step */
	struct ts_limits limits;
	struct ts_trace_opts traces;
	int metrics_top_ranks;       /* per-rank series: this many slowest ranks per job */
	struct {                     /* when a rank is worth naming (job_waits.c) */
		double wait_floor;    /* the others' wait for it, a share of the step */
		double min_slowdown;  /* the job's step over its baseline */
		double min_slow_s;    /* ... held this long (s) */
		double compute_ratio; /* its busy time over its peers' */
		double level_ratio;   /* ... with no slowdown: slow from the start */
	} verdict;
	struct {                     /* node health (nodehealth.h's options) */
		double window_s, half_life_s, degraded_score, clear_score, device_weight;
		double min_held_s;
	} nodes;
};

void ts_params_defaults(struct ts_params *p);
/* Loads path (may be NULL) and TRAINSCOPE_ANALYZER_* overrides over the defaults.
 * Returns 0 or a negative errno with err explaining (file, line, key). */
int ts_params_load(struct ts_params *p, const char *path, const char *yaml_text, char *err,
		   size_t errlen);
void ts_params_print(const struct ts_params *p, void *file);
/* Writes the JSON Schema of the configuration (ts_cfg_schema). 0 or -ENOMEM. */
int ts_params_schema(void *file);

#endif
