// SPDX-License-Identifier: Apache-2.0
/* DCMI's ABI as Huawei's public header dcmi_interface_api.h gives it (the copies in
 * Ascend/mind-cluster and ascend-device-plugin): plain C calls that return 0 or a
 * negative code (-8xxx), devices named by (card id, device id). Only what the agent reads
 * is declared here, in our words; enum parameters travel as int, as C passes them. */
#include "dcmi.h"
#include "log.h"
#include "numparse.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* enum dcmi_freq_type */
#define DCMI_FREQ_HBM 6
#define DCMI_FREQ_AICORE_CUR 7
#define DCMI_FREQ_AICORE_MAX 9 /* the rated clock: below it, the NPU is slowed down */
/* input_type of dcmi_get_device_utilization_rate */
#define DCMI_UTIL_AICORE 2
#define DCMI_UTIL_HBM 6
#define DCMI_UTIL_HBM_BW 10
/* enum dcmi_device_type of dcmi_get_device_ecc_info */
#define DCMI_DEV_HBM 2
#define DCMI_HEALTH_ABSENT 0xffffffffu
#define DCMI_MAX_CARDS 64
#define DCMI_MAX_ERRORS 128 /* the list Huawei's own exporter passes */

/* NVML clocks-event reasons that the analyzer takes as the hardware's doing
 * (TS_THROTTLE_HW_MASK in analysis/detect/job.h): an NPU's slowdown is told in the same bits. */
#define NVML_REASON_HW_SLOWDOWN 0x8ull
#define NVML_REASON_HW_THERMAL 0x40ull

/* struct dcmi_ecc_info. Newer drivers may append fields: the tail keeps them off our
 * stack. */
struct dcmi_ecc {
	int enabled;
	unsigned int sbe, dbe;             /* since the driver loaded */
	unsigned int sbe_total, dbe_total; /* over the device's life */
	unsigned int sbe_pages, dbe_pages, sbe_next_pages, dbe_next_pages;
	unsigned char tail[64];
};

struct npu {
	struct ts_npu_id id;
	bool failing, ecc_seen;
	uint64_t last_dbe;
	uint32_t last_health, last_nerrors, last_error;
};

struct ts_dcmi {
	void *lib;
	int count;
	uint32_t hot_c;
	struct npu npu[TS_DCMI_MAX_DEV];
	int (*init)(void);
	int (*card_list)(int *count, int *cards, int len);
	int (*dev_num)(int card, int *count);
	int (*logic_id)(int *logic, int card, int dev);
	int (*phy_id)(unsigned int logic, unsigned int *phy);
	int (*freq)(int card, int dev, int type, unsigned int *mhz);
	int (*util)(int card, int dev, int type, unsigned int *percent);
	int (*temp)(int card, int dev, int *celsius);
	int (*power)(int card, int dev, int *deciwatts); /* 0.1 W */
	int (*health)(int card, int dev, unsigned int *health);
	int (*errcodes)(int card, int dev, int *count, unsigned int *codes, unsigned int len);
	int (*ecc)(int card, int dev, int type, struct dcmi_ecc *ecc);
};

/* The codes a user can act on (Huawei's list); the rest print as numbers. */
static const char *dcmi_strerror(int rc)
{
	switch (rc) {
	case -8002:
		return "permission denied";
	case -8005:
		return "internal error: device nodes hidden, or the NPU taken by a container?";
	case -8007:
		return "invalid device id";
	case -8008:
		return "the device does not exist";
	case -8012:
		return "not ready yet";
	case -8013:
		return "not supported in a container";
	case -8020:
		return "device resources are occupied";
	case -8255:
		return "not supported by this device";
	default:
		return "DCMI error";
	}
}

#define SYM(field, name) (*(void **)&d->field = dlsym(d->lib, name))

static int resolve(struct ts_dcmi *d)
{
	SYM(init, "dcmi_init");
	/* renamed dcmi_get_card_list in newer drivers; older ones have only this name */
	if (!SYM(card_list, "dcmi_get_card_num_list"))
		SYM(card_list, "dcmi_get_card_list");
	SYM(dev_num, "dcmi_get_device_num_in_card");
	SYM(logic_id, "dcmi_get_device_logic_id");
	SYM(phy_id, "dcmi_get_device_phyid_from_logicid");
	SYM(freq, "dcmi_get_device_frequency");
	SYM(util, "dcmi_get_device_utilization_rate");
	SYM(temp, "dcmi_get_device_temperature");
	SYM(power, "dcmi_get_device_power_info");
	SYM(health, "dcmi_get_device_health");
	SYM(errcodes, "dcmi_get_device_errorcode_v2");
	SYM(ecc, "dcmi_get_device_ecc_info");
	if (d->init && d->card_list && d->dev_num && d->logic_id && d->health)
		return 0;
	ts_warn("agent: this libdcmi.so lacks dcmi_init, the card list, logic ids or health: "
		"no NPU samples");
	return -EIO;
}

static const char *const dcmi_paths[] = {
	"libdcmi.so",
	"/usr/local/Ascend/driver/lib64/driver/libdcmi.so",
};

/* A library that is there but does not load usually misses its own dependencies (the
 * driver's lib64/driver and lib64/common): that is worth saying, an absent one is not. */
static void *load(const char *path, bool say_why)
{
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!lib && say_why)
		ts_warn("agent: cannot load DCMI from %s: %s", path, dlerror());
	return lib;
}

static int load_lib(struct ts_dcmi *d)
{
	const char *env = getenv("TRAINSCOPE_DCMI_LIB");

	if (env && *env) { /* asked for by name: only that one */
		d->lib = load(env, true);
		return d->lib ? 0 : -ENOENT;
	}
	for (size_t i = 0; !d->lib && i < ARRAY_SIZE(dcmi_paths); i++) {
		const char *path = dcmi_paths[i];

		d->lib = load(path, path[0] == '/' && !access(path, F_OK));
	}
	return d->lib ? 0 : -ENOENT;
}

static void add_npu(struct ts_dcmi *d, int card, int dev)
{
	struct npu *n = &d->npu[d->count];
	unsigned int phy;
	int logic = -1, rc;

	if (d->count == TS_DCMI_MAX_DEV) {
		ts_warn("agent: more than %d NPUs: card %d device %d not sampled", TS_DCMI_MAX_DEV,
			card, dev);
		return;
	}
	if ((rc = d->logic_id(&logic, card, dev)) || logic < 0) {
		ts_warn("agent: DCMI gives no logic id for card %d device %d (%d: %s): not sampled",
			card, dev, rc, dcmi_strerror(rc));
		return;
	}
	/* the rank names its NPU by physical id; where DCMI cannot map, logic = physical, as on
	 * a host that sees all its NPUs */
	phy = (unsigned int)logic;
	if (d->phy_id && d->phy_id((unsigned int)logic, &phy))
		phy = (unsigned int)logic;
	n->id = (struct ts_npu_id){ .index = (int)phy, .card = card, .device = dev,
				    .logic_id = logic };
	ts_debug("agent: NPU %d is card %d device %d, logic id %d", n->id.index, card, dev,
		 logic);
	d->count++;
}

static int list_npus(struct ts_dcmi *d)
{
	int cards[DCMI_MAX_CARDS], ncards = 0, rc;

	if ((rc = d->card_list(&ncards, cards, DCMI_MAX_CARDS)) || ncards < 0 ||
	    ncards > DCMI_MAX_CARDS) {
		ts_warn("agent: DCMI lists no cards (%d: %s): no NPU samples", rc,
			dcmi_strerror(rc));
		return -EIO;
	}
	for (int c = 0; c < ncards; c++) {
		int ndev = 0;

		if ((rc = d->dev_num(cards[c], &ndev))) {
			ts_warn("agent: DCMI card %d: no device count (%d: %s): not sampled",
				cards[c], rc, dcmi_strerror(rc));
			continue;
		}
		for (int k = 0; k < ndev; k++)
			add_npu(d, cards[c], k);
	}
	return d->count ? 0 : -ENOENT;
}

static uint32_t hot_threshold(void)
{
	const char *s = getenv("TRAINSCOPE_NPU_HOT_C");
	long v;

	if (!s || !*s)
		return TS_NPU_HOT_C_DEFAULT;
	if (ts_parse_int(s, 1, 200, &v)) {
		ts_warn("agent: TRAINSCOPE_NPU_HOT_C=%s is not a temperature in C: using %d", s,
			TS_NPU_HOT_C_DEFAULT);
		return TS_NPU_HOT_C_DEFAULT;
	}
	return (uint32_t)v;
}

int ts_dcmi_open(struct ts_dcmi **out)
{
	struct ts_dcmi *d = calloc(1, sizeof(*d));
	int err, rc;

	if (!d)
		return -ENOMEM;
	if ((err = load_lib(d)) || (err = resolve(d)))
		goto cleanup;
	if ((rc = d->init())) {
		ts_warn("agent: dcmi_init failed (%d: %s): no NPU samples; DCMI needs root and "
			"/dev/davinci_manager, /dev/hisi_hdc, /dev/devmm_svm", rc,
			dcmi_strerror(rc));
		err = -EIO;
		goto cleanup;
	}
	if ((err = list_npus(d)))
		goto cleanup;
	d->hot_c = hot_threshold();
	*out = d;
	return 0;
cleanup:
	ts_dcmi_close(d);
	return err;
}

void ts_dcmi_close(struct ts_dcmi *d)
{
	if (!d)
		return;
	if (d->lib)
		dlclose(d->lib); /* DCMI has no shutdown call */
	free(d);
}

int ts_dcmi_count(const struct ts_dcmi *d)
{
	return d ? d->count : 0;
}

int ts_dcmi_npu(const struct ts_dcmi *d, int i, struct ts_npu_id *out)
{
	if (!d || i < 0 || i >= d->count)
		return -ERANGE;
	*out = d->npu[i].id;
	return 0;
}

static struct npu *find(struct ts_dcmi *d, int index)
{
	for (int i = 0; i < d->count; i++)
		if (d->npu[i].id.index == index)
			return &d->npu[i];
	return NULL;
}

/* The one read that must work: an NPU that gives no health is not there for us. */
static int read_health(struct ts_dcmi *d, struct npu *n, struct ts_npu_sample *s)
{
	unsigned int codes[DCMI_MAX_ERRORS];
	int rc, count = 0;

	if ((rc = d->health(n->id.card, n->id.device, &s->health)) ||
	    s->health == DCMI_HEALTH_ABSENT) {
		if (!n->failing)
			ts_warn("agent: NPU %d (card %d device %d) gives no health (%d: %s): no "
				"samples from it until it does", n->id.index, n->id.card,
				n->id.device, rc, rc ? dcmi_strerror(rc) : "DCMI calls it absent");
		n->failing = true;
		return -EIO;
	}
	if (n->failing)
		ts_info("agent: NPU %d answers again", n->id.index);
	n->failing = false;
	if (!d->errcodes || d->errcodes(n->id.card, n->id.device, &count, codes, DCMI_MAX_ERRORS))
		return 0;
	if (count > DCMI_MAX_ERRORS)
		count = DCMI_MAX_ERRORS;
	s->nerrors = count > 0 ? (uint32_t)count : 0;
	for (uint32_t i = 0; i < s->nerrors && i < TS_NPU_ERRORS; i++)
		s->errors[i] = codes[i];
	return 0;
}

static uint32_t read_freq(struct ts_dcmi *d, const struct npu *n, int type)
{
	unsigned int v = 0;

	return d->freq && !d->freq(n->id.card, n->id.device, type, &v) ? v : 0;
}

static uint32_t read_util(struct ts_dcmi *d, const struct npu *n, int type)
{
	unsigned int v = 0;

	return d->util && !d->util(n->id.card, n->id.device, type, &v) && v <= 100 ? v : 0;
}

static void read_power_temp(struct ts_dcmi *d, const struct npu *n, struct ts_npu_sample *s)
{
	int v = 0;

	if (d->temp && !d->temp(n->id.card, n->id.device, &v))
		s->temperature_c = v;
	v = 0;
	if (d->power && !d->power(n->id.card, n->id.device, &v) && v > 0)
		s->power_mw = (uint32_t)v * 100u;
}

/* New uncorrected errors count from the first sample on, as NVML's XIDs count from
 * the agent's start: an old count is not news. */
static void read_ecc(struct ts_dcmi *d, struct npu *n, struct ts_npu_sample *s)
{
	struct dcmi_ecc e;

	memset(&e, 0, sizeof(e));
	if (!d->ecc || d->ecc(n->id.card, n->id.device, DCMI_DEV_HBM, &e) || !e.enabled)
		return;
	s->ecc_dbe = e.dbe;
	s->ecc_dbe_total = e.dbe_total;
	if (n->ecc_seen && s->ecc_dbe > n->last_dbe)
		s->ecc_dbe_new = s->ecc_dbe - n->last_dbe;
	n->last_dbe = s->ecc_dbe;
	n->ecc_seen = true;
}

/* Says so when an NPU's health or error codes change: the wire carries only a count. */
static void note_faults(struct npu *n, const struct ts_npu_sample *s)
{
	char list[TS_NPU_ERRORS * 12] = "";
	size_t len = 0;

	if (s->health == n->last_health && s->nerrors == n->last_nerrors &&
	    (!s->nerrors || s->errors[0] == n->last_error))
		return;
	n->last_health = s->health;
	n->last_nerrors = s->nerrors;
	n->last_error = s->nerrors ? s->errors[0] : 0;
	if (!s->health && !s->nerrors) {
		ts_info("agent: NPU %d is healthy again", n->id.index);
		return;
	}
	for (uint32_t i = 0; i < s->nerrors && i < TS_NPU_ERRORS && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, " 0x%08x", s->errors[i]);
	ts_warn("agent: NPU %d (card %d device %d): health %u, %u error codes:%s", n->id.index,
		n->id.card, n->id.device, s->health, s->nerrors, s->nerrors ? list : " none");
}

int ts_dcmi_sample(struct ts_dcmi *d, int index, struct ts_npu_sample *s)
{
	struct npu *n = d ? find(d, index) : NULL;
	int err;

	if (!n)
		return -ENODEV;
	memset(s, 0, sizeof(*s));
	s->id = n->id;
	if ((err = read_health(d, n, s)))
		return err;
	s->aicore_mhz = read_freq(d, n, DCMI_FREQ_AICORE_CUR);
	s->aicore_rated_mhz = read_freq(d, n, DCMI_FREQ_AICORE_MAX);
	s->hbm_mhz = read_freq(d, n, DCMI_FREQ_HBM);
	s->aicore_util = read_util(d, n, DCMI_UTIL_AICORE);
	s->hbm_util = read_util(d, n, DCMI_UTIL_HBM);
	s->hbm_bw_util = read_util(d, n, DCMI_UTIL_HBM_BW);
	read_power_temp(d, n, s);
	read_ecc(d, n, s);
	note_faults(n, s);
	return 0;
}

/* The analyzer's Device cause reads the clock, the hardware throttle bits and the XID
 * count. An NPU says the same things: an AI core clock below 90% of its rated clock is a
 * hardware slowdown; a die at or above the hot threshold, a thermal one; a health alarm,
 * error codes and new uncorrected HBM errors are faults, as XIDs are (XID 48 is NVIDIA's
 * double-bit ECC error). */
void ts_dcmi_to_gpu(const struct ts_dcmi *d, const struct ts_npu_sample *n,
		    struct ts_gpu_sample *g)
{
	uint64_t faults = n->nerrors ? n->nerrors : (n->health ? 1 : 0);

	memset(g, 0, sizeof(*g));
	g->npids = -1; /* DCMI lists no processes */
	g->index = n->id.index;
	g->sm_clock_mhz = n->aicore_mhz;
	g->temperature_c = n->temperature_c > 0 ? (uint32_t)n->temperature_c : 0;
	g->power_mw = n->power_mw;
	g->ecc_errors = n->ecc_dbe;
	if (n->aicore_mhz && n->aicore_rated_mhz &&
	    (uint64_t)n->aicore_mhz * 10 < (uint64_t)n->aicore_rated_mhz * 9)
		g->throttle_reasons |= NVML_REASON_HW_SLOWDOWN;
	if (n->temperature_c > 0 && (uint32_t)n->temperature_c >= d->hot_c)
		g->throttle_reasons |= NVML_REASON_HW_THERMAL;
	faults += n->ecc_dbe_new;
	g->xid_errors = faults > UINT32_MAX ? UINT32_MAX : (uint32_t)faults;
}

int ts_dcmi_sample_gpu(struct ts_dcmi *d, int index, struct ts_gpu_sample *out)
{
	struct ts_npu_sample n;
	int err;

	if ((err = ts_dcmi_sample(d, index, &n)))
		return err;
	ts_dcmi_to_gpu(d, &n, out);
	return 0;
}
