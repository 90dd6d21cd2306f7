// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of libdcmi.so: see dcmi_double.h. Every call checks what the real one
 * would refuse (no dcmi_init yet, an unknown card or device, a NULL pointer) and answers
 * from a small table of NPUs. */
#include "dcmi_double.h"

#include <stddef.h>
#include <string.h>

#define ERR_PARAM -8001
#define ERR_INVALID_DEVICE -8007
#define ERR_NOT_SUPPORTED -8255
#define MAX_FAILS 16

/* struct dcmi_ecc_info, as the header lays it out */
struct ecc_info {
	int enable_flag;
	unsigned int single_bit_error_cnt, double_bit_error_cnt;
	unsigned int total_single_bit_error_cnt, total_double_bit_error_cnt;
	unsigned int single_bit_isolated_pages_cnt, double_bit_isolated_pages_cnt;
	unsigned int single_bit_next_isolated_pages_cnt, double_bit_next_isolated_pages_cnt;
};

static const int cards[] = { 0, 5 };
static struct tsd_npu npus[TSD_NPUS];
static int initialised;
static struct {
	char fn[64];
	int rc;
} fails[MAX_FAILS];

void tsd_dcmi_reset(void)
{
	for (int i = 0; i < TSD_NPUS; i++)
		npus[i] = (struct tsd_npu){
			.aicore_mhz = 1800, .aicore_rated_mhz = 1800, .hbm_mhz = 1600,
			.aicore_util = 10 + i, .hbm_util = 20 + i, .hbm_bw_util = 30 + i,
			.temperature_c = 40 + i, .power_dw = 1000 + i, .ecc_enabled = 1,
		};
	memset(fails, 0, sizeof(fails));
	initialised = 0;
}

struct tsd_npu *tsd_dcmi_npu(int logic)
{
	return logic >= 0 && logic < TSD_NPUS ? &npus[logic] : NULL;
}

void tsd_dcmi_fail(const char *fn, int rc)
{
	int free_slot = -1;

	for (int i = 0; i < MAX_FAILS; i++) {
		if (fails[i].fn[0] && !strcmp(fails[i].fn, fn)) {
			fails[i].rc = rc;
			return;
		}
		if (!fails[i].fn[0] && free_slot < 0)
			free_slot = i;
	}
	if (free_slot >= 0 && rc) {
		strncpy(fails[free_slot].fn, fn, sizeof(fails[free_slot].fn) - 1);
		fails[free_slot].rc = rc;
	}
}

/* The code a call must fail with: an injected one, else not initialised. */
static int refused(const char *fn)
{
	for (int i = 0; i < MAX_FAILS; i++)
		if (fails[i].fn[0] && !strcmp(fails[i].fn, fn) && fails[i].rc)
			return fails[i].rc;
	return initialised ? 0 : ERR_PARAM;
}

static int card_index(int card)
{
	for (int i = 0; i < (int)(sizeof(cards) / sizeof(cards[0])); i++)
		if (cards[i] == card)
			return i;
	return -1;
}

/* The NPU at (card, device), or NULL when DCMI would say invalid device. */
static struct tsd_npu *at(int card, int device)
{
	int c = card_index(card);

	if (c < 0 || device < 0 || device > 1)
		return NULL;
	return &npus[c * 2 + device];
}

/* Shared prologue: the injected or state failure, a bad device, a NULL output. */
#define ENTER(fn, card, device, out)                         \
	struct tsd_npu *n;                                   \
	int rc_ = refused(fn);                               \
	if (rc_)                                             \
		return rc_;                                  \
	if (!(n = at(card, device)))                         \
		return ERR_INVALID_DEVICE;                   \
	if (!(out))                                          \
		return ERR_PARAM

int dcmi_init(void)
{
	for (int i = 0; i < MAX_FAILS; i++)
		if (fails[i].fn[0] && !strcmp(fails[i].fn, "dcmi_init") && fails[i].rc)
			return fails[i].rc;
	initialised = 1;
	return 0;
}

static int card_list(const char *fn, int *card_num, int *card_list, int list_len)
{
	int rc = refused(fn), n = (int)(sizeof(cards) / sizeof(cards[0]));

	if (rc)
		return rc;
	if (!card_num || !card_list || list_len < n)
		return ERR_PARAM;
	memcpy(card_list, cards, sizeof(cards));
	*card_num = n;
	return 0;
}

int dcmi_get_card_num_list(int *card_num, int *card_list_, int list_len)
{
	return card_list("dcmi_get_card_num_list", card_num, card_list_, list_len);
}

int dcmi_get_card_list(int *card_num, int *card_list_, int list_len)
{
	return card_list("dcmi_get_card_list", card_num, card_list_, list_len);
}

int dcmi_get_device_num_in_card(int card_id, int *device_num)
{
	int rc = refused("dcmi_get_device_num_in_card");

	if (rc)
		return rc;
	if (card_index(card_id) < 0)
		return ERR_INVALID_DEVICE;
	if (!device_num)
		return ERR_PARAM;
	*device_num = 2;
	return 0;
}

int dcmi_get_device_logic_id(int *device_logic_id, int card_id, int device_id)
{
	ENTER("dcmi_get_device_logic_id", card_id, device_id, device_logic_id);
	*device_logic_id = (int)(n - npus);
	return 0;
}

int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int *phyid)
{
	int rc = refused("dcmi_get_device_phyid_from_logicid");

	if (rc)
		return rc;
	if (logicid >= TSD_NPUS || !phyid)
		return ERR_PARAM;
	*phyid = TSD_PHY(logicid);
	return 0;
}

/* enum dcmi_freq_type: 6 HBM, 7 AI core current, 9 AI core rated */
int dcmi_get_device_frequency(int card_id, int device_id, int input_type,
			      unsigned int *frequency)
{
	ENTER("dcmi_get_device_frequency", card_id, device_id, frequency);
	switch (input_type) {
	case 6: *frequency = n->hbm_mhz; return 0;
	case 7: *frequency = n->aicore_mhz; return 0;
	case 9: *frequency = n->aicore_rated_mhz; return 0;
	default: return ERR_NOT_SUPPORTED;
	}
}

/* input_type: 2 AI core, 6 HBM, 10 HBM bandwidth */
int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type,
				     unsigned int *utilization_rate)
{
	ENTER("dcmi_get_device_utilization_rate", card_id, device_id, utilization_rate);
	switch (input_type) {
	case 2: *utilization_rate = n->aicore_util; return 0;
	case 6: *utilization_rate = n->hbm_util; return 0;
	case 10: *utilization_rate = n->hbm_bw_util; return 0;
	default: return ERR_NOT_SUPPORTED;
	}
}

int dcmi_get_device_temperature(int card_id, int device_id, int *temperature)
{
	ENTER("dcmi_get_device_temperature", card_id, device_id, temperature);
	*temperature = n->temperature_c;
	return 0;
}

int dcmi_get_device_power_info(int card_id, int device_id, int *power)
{
	ENTER("dcmi_get_device_power_info", card_id, device_id, power);
	*power = n->power_dw;
	return 0;
}

int dcmi_get_device_health(int card_id, int device_id, unsigned int *health)
{
	ENTER("dcmi_get_device_health", card_id, device_id, health);
	*health = n->health;
	return 0;
}

int dcmi_get_device_errorcode_v2(int card_id, int device_id, int *error_count,
				 unsigned int *error_code_list, unsigned int list_len)
{
	ENTER("dcmi_get_device_errorcode_v2", card_id, device_id, error_count);
	if (!error_code_list)
		return ERR_PARAM;
	*error_count = n->nerrors;
	for (int i = 0; i < n->nerrors && i < TSD_MAX_ERRORS && (unsigned int)i < list_len; i++)
		error_code_list[i] = n->errors[i];
	return 0;
}

/* enum dcmi_device_type: 2 is HBM, the only memory these NPUs count errors in */
int dcmi_get_device_ecc_info(int card_id, int device_id, int input_type,
			     struct ecc_info *device_ecc_info)
{
	ENTER("dcmi_get_device_ecc_info", card_id, device_id, device_ecc_info);
	if (input_type != 2)
		return ERR_NOT_SUPPORTED;
	memset(device_ecc_info, 0, sizeof(*device_ecc_info));
	device_ecc_info->enable_flag = n->ecc_enabled;
	device_ecc_info->single_bit_error_cnt = n->ecc_sbe;
	device_ecc_info->double_bit_error_cnt = n->ecc_dbe;
	device_ecc_info->total_double_bit_error_cnt = n->ecc_dbe_total;
	return 0;
}

/* Loaded: the default table, as if the driver had just started. */
__attribute__((constructor)) static void tsd_dcmi_load(void)
{
	tsd_dcmi_reset();
}
