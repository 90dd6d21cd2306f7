// SPDX-License-Identifier: Apache-2.0
/* NVML's ABI as documented in nvml.h: opaque device handles, int return codes,
 * versioned entry points. Only what the agent reads is declared. */
#include "nvml.h"
#include "log.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef void *nvml_dev;
typedef int nvml_ret; /* NVML_SUCCESS = 0 */

struct nvml_event {
	nvml_dev device;
	unsigned long long type, data;
	unsigned int gpu_instance, compute_instance;
};

#define NVML_CLOCK_SM 1
#define NVML_TEMPERATURE_GPU 0
#define NVML_ECC_UNCORRECTED 1
#define NVML_ECC_VOLATILE 0
#define NVML_EVENT_XID 0x8ull

/* nvmlProcessInfo_t as the _v2 and _v3 process lists fill it */
struct nvml_proc {
	unsigned pid;
	unsigned long long used_memory;
	unsigned gpu_instance, compute_instance;
};

struct ts_nvml {
	void *lib;
	int count;
	nvml_dev dev[TS_NVML_MAX_DEV];
	void *events; /* nvmlEventSet_t */
	uint32_t xids[TS_NVML_MAX_DEV];
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	nvml_ret (*count_fn)(unsigned *);
	nvml_ret (*handle)(unsigned, nvml_dev *);
	nvml_ret (*uuid)(nvml_dev, char *, unsigned);
	nvml_ret (*clock)(nvml_dev, int, unsigned *);
	nvml_ret (*throttle)(nvml_dev, unsigned long long *);
	nvml_ret (*temp)(nvml_dev, int, unsigned *);
	nvml_ret (*power)(nvml_dev, unsigned *);
	nvml_ret (*ecc)(nvml_dev, int, int, unsigned long long *);
	nvml_ret (*replay)(nvml_dev, unsigned *);
	nvml_ret (*procs)(nvml_dev, unsigned *, struct nvml_proc *);
	nvml_ret (*ev_create)(void **);
	nvml_ret (*ev_register)(nvml_dev, unsigned long long, void *);
	nvml_ret (*ev_wait)(void *, struct nvml_event *, unsigned);
};

#define SYM(field, name) (*(void **)&n->field = dlsym(n->lib, name))

static void resolve(struct ts_nvml *n)
{
	SYM(init, "nvmlInit_v2");
	SYM(shutdown, "nvmlShutdown");
	SYM(count_fn, "nvmlDeviceGetCount_v2");
	SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
	SYM(uuid, "nvmlDeviceGetUUID");
	SYM(clock, "nvmlDeviceGetClockInfo");
	/* renamed "clocks event reasons" in newer drivers; the old name still exists */
	if (!SYM(throttle, "nvmlDeviceGetCurrentClocksEventReasons"))
		SYM(throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
	SYM(temp, "nvmlDeviceGetTemperature");
	SYM(power, "nvmlDeviceGetPowerUsage");
	SYM(ecc, "nvmlDeviceGetTotalEccErrors");
	SYM(replay, "nvmlDeviceGetPcieReplayCounter");
	if (!SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v3"))
		SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v2");
	SYM(ev_create, "nvmlEventSetCreate");
	SYM(ev_register, "nvmlDeviceRegisterEvents");
	SYM(ev_wait, "nvmlEventSetWait_v2");
}

static void watch_xids(struct ts_nvml *n)
{
	if (!n->ev_create || !n->ev_register || !n->ev_wait || n->ev_create(&n->events)) {
		n->events = NULL;
		ts_warn("agent: NVML events unavailable: XID errors are not counted");
		return;
	}
	for (int i = 0; i < n->count; i++)
		n->ev_register(n->dev[i], NVML_EVENT_XID, n->events);
}

int ts_nvml_open(struct ts_nvml **out)
{
	const char *path = getenv("TRAINSCOPE_NVML_LIB");
	struct ts_nvml *n = calloc(1, sizeof(*n));
	unsigned count = 0;

	if (!n)
		return -ENOMEM;
	n->lib = dlopen(path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		free(n);
		return -ENOENT;
	}
	resolve(n);
	if (!n->init || !n->count_fn || !n->handle || n->init() || n->count_fn(&count)) {
		ts_warn("agent: NVML found but not usable: no device samples");
		dlclose(n->lib);
		free(n);
		return -EIO;
	}
	n->count = count > TS_NVML_MAX_DEV ? TS_NVML_MAX_DEV : (int)count;
	for (int i = 0; i < n->count; i++)
		if (n->handle((unsigned)i, &n->dev[i]))
			n->dev[i] = NULL;
	watch_xids(n);
	*out = n;
	return 0;
}

void ts_nvml_close(struct ts_nvml *n)
{
	if (!n)
		return;
	if (n->shutdown)
		n->shutdown();
	dlclose(n->lib);
	free(n);
}

int ts_nvml_count(const struct ts_nvml *n)
{
	return n ? n->count : 0;
}

/* XID events of all devices since the last call, counted per device. */
static void drain_xids(struct ts_nvml *n)
{
	struct nvml_event ev;

	while (n->events && n->ev_wait(n->events, &ev, 0) == 0)
		for (int i = 0; i < n->count; i++)
			if (n->dev[i] == ev.device)
				n->xids[i]++;
}

/* The device's compute processes into s->pids; npids -1 when NVML cannot say (no entry
 * point, an error, more than TS_GPU_MAX_PIDS: NVML_ERROR_INSUFFICIENT_SIZE). */
static void read_pids(struct ts_nvml *n, nvml_dev d, struct ts_gpu_sample *s)
{
	struct nvml_proc p[TS_GPU_MAX_PIDS];
	unsigned cnt = TS_GPU_MAX_PIDS;

	s->npids = -1;
	if (!n->procs || n->procs(d, &cnt, p) || cnt > TS_GPU_MAX_PIDS)
		return;
	s->npids = (int)cnt;
	for (unsigned k = 0; k < cnt; k++)
		s->pids[k] = p[k].pid;
}

int ts_nvml_sample(struct ts_nvml *n, int i, struct ts_gpu_sample *s)
{
	unsigned v = 0;
	unsigned long long u = 0;
	nvml_dev d;

	if (i < 0 || i >= n->count || !(d = n->dev[i]))
		return -EIO;
	drain_xids(n);
	memset(s, 0, sizeof(*s));
	s->index = i;
	if (n->uuid)
		n->uuid(d, s->uuid, sizeof(s->uuid));
	if (n->clock && !n->clock(d, NVML_CLOCK_SM, &v))
		s->sm_clock_mhz = v;
	if (n->throttle && !n->throttle(d, &u))
		s->throttle_reasons = u;
	if (n->temp && !n->temp(d, NVML_TEMPERATURE_GPU, &v))
		s->temperature_c = v;
	if (n->power && !n->power(d, &v))
		s->power_mw = v;
	if (n->ecc && !n->ecc(d, NVML_ECC_UNCORRECTED, NVML_ECC_VOLATILE, &u))
		s->ecc_errors = u;
	if (n->replay && !n->replay(d, &v))
		s->pcie_replays = v;
	s->xid_errors = n->xids[i];
	n->xids[i] = 0;
	read_pids(n, d, s);
	return 0;
}
