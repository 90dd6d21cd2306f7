// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of libnvidia-ml.so.1 (nvml_double.h): the calls agent/nvml.c makes, over
 * made-up GPUs. Error codes are NVML's: 0 success, 2 invalid argument, 7 insufficient
 * size. */
#include "nvml_double.h"

#include <stdio.h>
#include <string.h>

struct proc_info { /* nvmlProcessInfo_t (v2) */
	unsigned pid;
	unsigned long long used_memory;
	unsigned gpu_instance, compute_instance;
};

static struct tsv_gpu gpus[TSV_GPUS];

void tsv_nvml_reset(void)
{
	memset(gpus, 0, sizeof(gpus));
	for (int i = 0; i < TSV_GPUS; i++)
		gpus[i].sm_mhz = 1980, gpus[i].temperature_c = 40;
}

struct tsv_gpu *tsv_nvml_gpu(int i)
{
	return i >= 0 && i < TSV_GPUS ? &gpus[i] : NULL;
}

static struct tsv_gpu *gpu(void *dev)
{
	return (struct tsv_gpu *)dev;
}

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }

int nvmlDeviceGetCount_v2(unsigned *n)
{
	*n = TSV_GPUS;
	return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev)
{
	if (i >= TSV_GPUS)
		return 2;
	*dev = &gpus[i];
	return 0;
}

int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len)
{
	snprintf(buf, len, "GPU-double-%d", (int)(gpu(dev) - gpus));
	return 0;
}

int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz)
{
	(void)type;
	*mhz = gpu(dev)->sm_mhz;
	return 0;
}

int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r)
{
	*r = gpu(dev)->reasons;
	return 0;
}

int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *c)
{
	(void)sensor;
	*c = gpu(dev)->temperature_c;
	return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned *count, struct proc_info *out)
{
	struct tsv_gpu *g = gpu(dev);

	if (g->procs_fail)
		return g->procs_fail;
	if (g->npids > *count) {
		*count = g->npids;
		return 7;
	}
	for (unsigned k = 0; k < g->npids; k++)
		out[k] = (struct proc_info){ .pid = g->pids[k], .used_memory = 1u << 30 };
	*count = g->npids;
	return 0;
}
