// SPDX-License-Identifier: Apache-2.0
/* GPU health through NVML, loaded at run time (no build dependency). */
#ifndef TS_NVML_H
#define TS_NVML_H

#include <stdint.h>

#define TS_NVML_MAX_DEV 64
#define TS_GPU_MAX_PIDS 64

struct ts_gpu_sample {
	int index;
	char uuid[96];
	uint32_t sm_clock_mhz, temperature_c, power_mw;
	uint64_t throttle_reasons;
	uint32_t xid_errors;     /* critical XID events since the last sample */
	uint64_t ecc_errors;     /* volatile uncorrected */
	uint64_t pcie_replays;
	/* processes with a compute context on it (host PIDs), TS_GPU_MAX_PIDS at most;
	 * npids -1: NVML cannot list them */
	int npids;
	uint32_t pids[TS_GPU_MAX_PIDS];
};

struct ts_nvml;

/* Opens libnvidia-ml.so.1 (or $TRAINSCOPE_NVML_LIB). Returns 0, or -ENOENT when there
 * is no NVML on this node (a GPU-less node: the agent runs without device samples). */
int ts_nvml_open(struct ts_nvml **out);
void ts_nvml_close(struct ts_nvml *n);
int ts_nvml_count(const struct ts_nvml *n);
/* Reads device index now; fields NVML cannot give stay 0. Returns 0 or -EIO. */
int ts_nvml_sample(struct ts_nvml *n, int index, struct ts_gpu_sample *out);

#endif
