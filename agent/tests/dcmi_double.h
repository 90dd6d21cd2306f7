// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE. A stand-in for Huawei's libdcmi.so, built only for the agent's unit tests
 * (there is no Ascend NPU in CI): it exports the DCMI calls agent/dcmi.c makes, with the
 * prototypes of dcmi_interface_api.h, over TSD_NPUS made-up NPUs. Never install or ship
 * it. A test loads it through TRAINSCOPE_DCMI_LIB and steers it with these tsd_ calls,
 * found with dlsym in the same loaded object. */
#ifndef TSD_DCMI_DOUBLE_H
#define TSD_DCMI_DOUBLE_H

/* Two cards of two NPUs each, an Atlas A3 layout: card 0 holds logic ids 0 and 1,
 * card 5 holds 2 and 3. Physical ids (davinci numbers) differ from logic ids, as in a
 * container: logic i is physical TSD_PHY(i). */
#define TSD_NPUS 4
#define TSD_PHY(logic) (((logic) + 2) % TSD_NPUS)
#define TSD_MAX_ERRORS 16

/* What the double reports for one NPU, in DCMI's units. */
struct tsd_npu {
	unsigned int aicore_mhz, aicore_rated_mhz, hbm_mhz;
	unsigned int aicore_util, hbm_util, hbm_bw_util;
	int temperature_c;
	int power_dw; /* 0.1 W */
	unsigned int health;
	int nerrors;
	unsigned int errors[TSD_MAX_ERRORS];
	int ecc_enabled;
	unsigned int ecc_sbe, ecc_dbe, ecc_dbe_total;
};

/* The NPU with that logic id (NULL if none); a test changes it between samples. */
struct tsd_npu *tsd_dcmi_npu(int logic);
/* From now on the DCMI call named fn (e.g. "dcmi_get_device_health") returns rc; 0 makes
 * it work again. */
void tsd_dcmi_fail(const char *fn, int rc);
/* Back to the defaults: healthy NPUs, no failures, DCMI not initialised. */
void tsd_dcmi_reset(void);

/* Their types, for a test that finds them with dlsym. */
typedef struct tsd_npu *(*tsd_npu_fn)(int logic);
typedef void (*tsd_fail_fn)(const char *fn, int rc);
typedef void (*tsd_reset_fn)(void);

#endif
