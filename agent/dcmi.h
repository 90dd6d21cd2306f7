// SPDX-License-Identifier: Apache-2.0
/* NPU (Huawei Ascend) health through DCMI, libdcmi.so loaded at run time (no build
 * dependency): the Ascend counterpart of nvml.h. A node has one or the other. */
#ifndef TS_DCMI_H
#define TS_DCMI_H

#include "nvml.h" /* struct ts_gpu_sample: what a DeviceSample is filled from */

#include <stdint.h>

#define TS_DCMI_MAX_DEV 64
#define TS_NPU_ERRORS 8        /* error codes kept in a sample; nerrors counts them all */
#define TS_NPU_HOT_C_DEFAULT 90 /* $TRAINSCOPE_NPU_HOT_C: our choice, not Ascend's limit */

/* Where an NPU sits: DCMI addresses it by (card, device); the rank knows it by index. */
struct ts_npu_id {
	int index;    /* physical id: the N of /dev/davinciN, as in ASCEND_VISIBLE_DEVICES */
	int card, device, logic_id;
};

struct ts_npu_sample {
	struct ts_npu_id id;
	uint32_t aicore_mhz, aicore_rated_mhz, hbm_mhz;
	uint32_t aicore_util, hbm_util, hbm_bw_util; /* percent */
	int32_t temperature_c;
	uint32_t power_mw;
	uint32_t health;        /* 0 OK, 1 minor, 2 major, 3 critical alarm */
	uint32_t nerrors;       /* error codes the device reports now */
	uint32_t errors[TS_NPU_ERRORS];
	uint64_t ecc_dbe;       /* HBM double-bit (uncorrected) errors since the driver loaded */
	uint64_t ecc_dbe_total; /* the same over the device's life */
	uint64_t ecc_dbe_new;   /* ecc_dbe's increase since this NPU's previous sample */
};

struct ts_dcmi;

/* Opens libdcmi.so ($TRAINSCOPE_DCMI_LIB, else "libdcmi.so", else the driver's
 * /usr/local/Ascend/driver/lib64/driver/libdcmi.so), initialises DCMI and lists the NPUs.
 * Returns 0; -ENOENT when there is no DCMI or no NPU (the agent runs without device
 * samples); -EIO when DCMI is there but refuses to work (the log says why). */
int ts_dcmi_open(struct ts_dcmi **out);
void ts_dcmi_close(struct ts_dcmi *d);
int ts_dcmi_count(const struct ts_dcmi *d);
/* The i-th NPU found, 0 <= i < ts_dcmi_count(). Returns 0 or -ERANGE. */
int ts_dcmi_npu(const struct ts_dcmi *d, int i, struct ts_npu_id *out);
/* Reads the NPU whose index (physical id) is index. Values DCMI cannot give stay 0.
 * Returns 0, -ENODEV for an index not on this node, or -EIO when the NPU does not answer. */
int ts_dcmi_sample(struct ts_dcmi *d, int index, struct ts_npu_sample *out);
/* The NPU sample in the GPU's terms, the fields the analyzer reads for cause Device. */
void ts_dcmi_to_gpu(const struct ts_dcmi *d, const struct ts_npu_sample *n,
		    struct ts_gpu_sample *out);
/* ts_dcmi_sample, then ts_dcmi_to_gpu. */
int ts_dcmi_sample_gpu(struct ts_dcmi *d, int index, struct ts_gpu_sample *out);

#endif
