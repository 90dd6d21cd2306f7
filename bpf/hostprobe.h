// SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only
/* Shared between bpf/hostprobe.bpf.c and the agent: map layouts. */
#ifndef TS_HOSTPROBE_H
#define TS_HOSTPROBE_H

#define TS_MAX_SLOTS 256 /* traced ranks on one node */
#define TS_COMM_LEN 16

/* Cumulative per rank slot (per CPU in the kernel; the agent sums and takes deltas). */
struct ts_slot_acc {
	__u64 oncpu_ns;
	__u64 offcpu_ns;   /* asleep (blocked), not runnable */
	__u64 runq_ns;     /* runnable, waiting for a CPU */
	__u64 io_ns;       /* block request latency, issue to complete */
	__u32 involuntary; /* switched out while still runnable */
	__u32 io_count;
	__u32 tcp_retx;
	__u32 switches;
};

/* Time an untraced task held the CPU while a rank thread waited for it. */
struct ts_preempt_key {
	__u32 slot;
	__u32 tgid;
};

struct ts_preempt_val {
	__u64 ns;
	__u32 pid;
	__u32 pad;
	char comm[TS_COMM_LEN];
};

#define TS_NO_SLOT 0xffffffffu

/* Per task (task-local storage): also caches "not traced" for untraced tasks, valid
 * while gen equals the program's traced_gen, which the agent bumps on every change. */
struct ts_task {
	__u64 oncpu_ts; /* switched in at */
	__u64 wait_ts;  /* runnable since */
	__u64 sleep_ts; /* blocked since */
	__u32 slot;     /* TS_NO_SLOT: not traced */
	__u32 gen;
};

#endif
