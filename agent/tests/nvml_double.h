// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE. A stand-in for NVIDIA's libnvidia-ml.so.1, built only for the agent's unit
 * tests (there is no GPU in CI): it exports the NVML calls agent/nvml.c makes, with the
 * prototypes of nvml.h, over TSV_GPUS made-up GPUs. Never install or ship it. A test
 * loads it through TRAINSCOPE_NVML_LIB and steers it with tsv_nvml_gpu, found with dlsym
 * in the same loaded object. */
#ifndef TSV_NVML_DOUBLE_H
#define TSV_NVML_DOUBLE_H

#define TSV_GPUS 2
#define TSV_MAX_PIDS 80 /* more than the agent reads: a list too long to take */

/* What the double reports for one GPU, in NVML's units. */
struct tsv_gpu {
	unsigned sm_mhz, temperature_c;
	unsigned long long reasons;
	int procs_fail;        /* nvmlDeviceGetComputeRunningProcesses_v3 returns it */
	unsigned npids;
	unsigned pids[TSV_MAX_PIDS];
};

/* GPU i (NULL if none); a test changes it between samples. Every call made after a
 * tsv_nvml_reset starts from healthy GPUs with no process. */
struct tsv_gpu *tsv_nvml_gpu(int i);
void tsv_nvml_reset(void);

typedef struct tsv_gpu *(*tsv_gpu_fn)(int i);
typedef void (*tsv_reset_fn)(void);

#endif
