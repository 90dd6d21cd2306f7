// SPDX-License-Identifier: Apache-2.0
/* The node's eBPF probe: loads bpf/hostprobe.bpf.c, traces processes by slot, and
 * reads the cumulative counters and preemptors back. */
#ifndef TS_PROBE_H
#define TS_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/hostprobe.h"

#define TS_PROBE_FEATURES 4

struct ts_probe_feature {
	const char *name;  /* scheduling, block_io, tcp_retransmit */
	bool ok;
	char why[128];     /* why not, when !ok */
};

struct ts_probe;

/* Checks BTF and BPF permission first and says plainly what is missing. A program
 * that fails to attach disables its feature only. Returns 0 or a negative errno with
 * err filled. */
int ts_probe_open(struct ts_probe **out, char *err, size_t errlen);
void ts_probe_close(struct ts_probe *p);
int ts_probe_features(const struct ts_probe *p, const struct ts_probe_feature **out);

int ts_probe_trace(struct ts_probe *p, uint32_t tgid, uint64_t cgroup_id, uint32_t slot);
void ts_probe_untrace(struct ts_probe *p, uint32_t tgid, uint64_t cgroup_id);
/* Sum over CPUs of the slot's cumulative counters. */
int ts_probe_read(struct ts_probe *p, uint32_t slot, struct ts_slot_acc *out);

struct ts_preemptor {
	uint32_t slot, tgid, pid;
	uint64_t ns;
	char comm[TS_COMM_LEN];
};
/* Moves every preemptor entry out of the kernel map (read and delete): up to max
 * entries into out; returns the count. */
int ts_probe_take_preemptors(struct ts_probe *p, struct ts_preemptor *out, int max);

#endif
