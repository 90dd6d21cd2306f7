// SPDX-License-Identifier: GPL-2.0-only
/* Host-bound signals of traced ranks: scheduling (on/off-CPU, run-queue delay,
 * involuntary switches, preemptors), block I/O latency, TCP retransmits.
 * Only tp_btf programs: no kprobes, no tracefs needed. A process is traced when its
 * tgid is in traced_tgids (the agent fills it from the ranks' Hello records); each
 * task caches the answer in its local storage, so the common path on a busy node is
 * one storage read per task and no hash lookup. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "hostprobe.h"

char LICENSE[] SEC("license") = "GPL";

/* Bumped by the agent after every change of traced_tgids: cached verdicts expire. */
volatile __u32 traced_gen = 1;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* slot */
} traced_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);   /* cgroup id */
	__type(value, __u32); /* slot */
} traced_cgroups SEC(".maps");

/* The cgroup each slot's rank lives in (0: unknown): a task whose tgid matches but
 * whose cgroup does not is some later process that reused the pid. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} slot_cgroup SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ts_task);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct ts_slot_acc);
} acc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct ts_preempt_key);
	__type(value, struct ts_preempt_val);
} preempt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64); /* when the current task got this CPU */
} cpu_start SEC(".maps");

struct io_start {
	__u64 ts;
	__u32 slot;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct request * */
	__type(value, struct io_start);
} io_inflight SEC(".maps");

struct task_struct___pre_5_14 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre_5_14 *)t, state);
}

/* The task's state, with its traced verdict brought up to date; NULL when storage
 * cannot be had (the caller then skips the event). */
static __always_inline struct ts_task *task_of(struct task_struct *t)
{
	struct ts_task *s = bpf_task_storage_get(&tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u32 gen = traced_gen;

	if (!s || s->gen == gen)
		return s;
	__u32 tgid = t->tgid, *slot = bpf_map_lookup_elem(&traced_tgids, &tgid);
	__u32 now_slot = slot ? *slot : TS_NO_SLOT;
	__u64 *want = slot ? bpf_map_lookup_elem(&slot_cgroup, slot) : NULL;
	if (want && *want && BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id) != *want)
		now_slot = TS_NO_SLOT;
	if (now_slot != s->slot) {
		s->oncpu_ts = s->wait_ts = s->sleep_ts = 0;
		s->slot = now_slot;
	}
	s->gen = gen;
	return s;
}

static __always_inline struct ts_slot_acc *acc_of(__u32 slot)
{
	return bpf_map_lookup_elem(&acc, &slot);
}

static __always_inline void blame(__u32 slot, struct task_struct *who, __u64 ns)
{
	struct ts_preempt_key k = { .slot = slot, .tgid = who->tgid };
	struct ts_preempt_val *v = bpf_map_lookup_elem(&preempt, &k);

	if (v) {
		__sync_fetch_and_add(&v->ns, ns);
		return;
	}
	struct ts_preempt_val fresh = { .ns = ns, .pid = who->pid };
	BPF_CORE_READ_STR_INTO(&fresh.comm, who, comm);
	bpf_map_update_elem(&preempt, &k, &fresh, BPF_NOEXIST);
}

static __always_inline void switch_out(struct task_struct *prev, struct ts_task *t, __u64 now,
				       bool preempted)
{
	struct ts_slot_acc *a = acc_of(t->slot);

	if (!a)
		return;
	if (t->oncpu_ts)
		a->oncpu_ns += now - t->oncpu_ts;
	t->oncpu_ts = 0;
	a->switches++;
	if (task_state(prev) == 0) { /* still runnable: it waits on the run queue */
		t->wait_ts = now;
		if (preempted)
			a->involuntary++;
	} else {
		t->sleep_ts = now;
	}
}

static __always_inline void switch_in(struct ts_task *t, __u64 now, struct task_struct *prev,
				      bool prev_traced, __u64 prev_ran)
{
	struct ts_slot_acc *a = acc_of(t->slot);

	if (!a)
		return;
	if (t->wait_ts) {
		__u64 waited = now - t->wait_ts;
		a->runq_ns += waited;
		/* whoever held this CPU while the rank waited, unless it is a rank itself */
		if (!prev_traced && prev->pid != 0)
			blame(t->slot, prev, waited < prev_ran ? waited : prev_ran);
	}
	t->wait_ts = 0;
	t->oncpu_ts = now;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct ts_task *pt = task_of(prev), *nt = task_of(next);
	bool pin = pt && pt->slot != TS_NO_SLOT, nin = nt && nt->slot != TS_NO_SLOT;
	__u64 now, prev_ran = 0;
	__u32 zero = 0;
	__u64 *start;

	if (!pin && !nin) {
		/* only the CPU's hand-over time is needed: it attributes preemption */
		start = bpf_map_lookup_elem(&cpu_start, &zero);
		if (start)
			*start = bpf_ktime_get_ns();
		return 0;
	}
	now = bpf_ktime_get_ns();
	start = bpf_map_lookup_elem(&cpu_start, &zero);
	if (start) {
		prev_ran = *start ? now - *start : 0;
		*start = now;
	}
	if (pin)
		switch_out(prev, pt, now, preempt);
	if (nin)
		switch_in(nt, now, prev, pin, prev_ran);
	return 0;
}

static __always_inline int wakeup(struct task_struct *p)
{
	struct ts_task *t = task_of(p);
	struct ts_slot_acc *a;
	__u64 now;

	if (!t || t->slot == TS_NO_SLOT || !(a = acc_of(t->slot)))
		return 0;
	now = bpf_ktime_get_ns();
	if (t->sleep_ts)
		a->offcpu_ns += now - t->sleep_ts;
	t->sleep_ts = 0;
	t->wait_ts = now;
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	return wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	return wakeup(p);
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(on_rq_issue, struct request *rq)
{
	struct ts_task *t = task_of(bpf_get_current_task_btf());
	__u64 key = (__u64)rq;

	if (!t || t->slot == TS_NO_SLOT)
		return 0;
	struct io_start s = { .ts = bpf_ktime_get_ns(), .slot = t->slot };
	bpf_map_update_elem(&io_inflight, &key, &s, BPF_ANY);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct io_start *s = bpf_map_lookup_elem(&io_inflight, &key);
	struct ts_slot_acc *a;

	if (!s)
		return 0;
	a = acc_of(s->slot);
	if (a) {
		a->io_ns += bpf_ktime_get_ns() - s->ts;
		a->io_count++;
	}
	bpf_map_delete_elem(&io_inflight, &key);
	return 0;
}

/* Retransmits run in softirq context: find the owner through the socket's cgroup. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(on_retransmit, const struct sock *sk, const struct sk_buff *skb)
{
	__u64 cgid = BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
	__u32 *slot = bpf_map_lookup_elem(&traced_cgroups, &cgid);
	struct ts_slot_acc *a;

	if (!slot || !(a = acc_of(*slot)))
		return 0;
	a->tcp_retx++;
	return 0;
}
