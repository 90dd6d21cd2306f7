// SPDX-License-Identifier: Apache-2.0
#include "probe.h"
#include "log.h"
#include "bpf/hostprobe.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ts_probe {
	struct hostprobe *skel;
	struct ts_probe_feature feat[TS_PROBE_FEATURES];
	struct bpf_link *links[8];
	int nfeat, ncpu, nlinks;
};

struct prog_feature {
	const char *feature;
	const char *prog;
};

/* Programs by feature: a feature is on when all its programs attached. */
static const struct prog_feature progs[] = {
	{ "scheduling", "on_switch" },	   { "scheduling", "on_wakeup" },
	{ "scheduling", "on_wakeup_new" }, { "block_io", "on_rq_issue" },
	{ "block_io", "on_rq_complete" },  { "tcp_retransmit", "on_retransmit" },
};

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = 0;
	ts_debug("libbpf: %s", line);
	return 0;
}

static struct ts_probe_feature *feature(struct ts_probe *p, const char *name)
{
	for (int i = 0; i < p->nfeat; i++)
		if (!strcmp(p->feat[i].name, name))
			return &p->feat[i];
	if (p->nfeat == TS_PROBE_FEATURES) /* a table entry without room: report it as the last */
		return &p->feat[p->nfeat - 1];
	p->feat[p->nfeat] = (struct ts_probe_feature){ .name = name, .ok = true };
	return &p->feat[p->nfeat++];
}

static int preflight(char *err, size_t errlen)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(err, errlen, "kernel BTF is missing (/sys/kernel/btf/vmlinux): the kernel "
				      "needs CONFIG_DEBUG_INFO_BTF=y for trainscope's CO-RE programs");
		return -ENOENT;
	}
	return 0;
}

/* Registers every feature up front, and leaves out the programs whose tracepoint this
 * kernel does not have, so that the others still load. */
static void list_features(struct ts_probe *p)
{
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_program *prog =
			bpf_object__find_program_by_name(p->skel->obj, progs[i].prog);
		struct ts_probe_feature *f = feature(p, progs[i].feature);
		const char *tp = prog ? strchr(bpf_program__section_name(prog), '/') : NULL;
		if (tp && libbpf_find_vmlinux_btf_id(tp + 1, BPF_TRACE_RAW_TP) >= 0)
			continue;
		if (prog)
			bpf_program__set_autoload(prog, false);
		f->ok = false;
		snprintf(f->why, sizeof(f->why), "the kernel has no tracepoint %s", tp ? tp + 1 : "?");
	}
}

static void attach_all(struct ts_probe *p)
{
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_program *prog =
			bpf_object__find_program_by_name(p->skel->obj, progs[i].prog);
		struct ts_probe_feature *f = feature(p, progs[i].feature);
		if (!prog || !bpf_program__autoload(prog))
			continue;
		struct bpf_link *link = bpf_program__attach(prog);
		if (link) {
			p->links[p->nlinks++] = link;
			continue;
		}
		f->ok = false;
		snprintf(f->why, sizeof(f->why), "%s did not attach: %s", progs[i].prog,
			 strerror(errno));
		ts_warn("agent: %s unavailable: %s", f->name, f->why);
	}
}

int ts_probe_open(struct ts_probe **out, char *err, size_t errlen)
{
	struct ts_probe *p;
	int rc;

	if ((rc = preflight(err, errlen)))
		return rc;
	libbpf_set_print(libbpf_log);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->ncpu = libbpf_num_possible_cpus();
	p->skel = hostprobe__open();
	if (!p->skel) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	list_features(p);
	rc = hostprobe__load(p->skel);
	if (rc) {
		if (rc == -EPERM || errno == EPERM)
			snprintf(err, errlen, "no permission to load BPF programs: run as root or "
					      "with CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE");
		else
			snprintf(err, errlen, "cannot load the BPF programs: %s (TRAINSCOPE_LOG=debug "
					      "shows the verifier's log)", strerror(-rc));
		goto fail;
	}
	attach_all(p);
	*out = p;
	return 0;
fail:
	hostprobe__destroy(p->skel);
	free(p);
	return rc ? rc : -EINVAL;
}

void ts_probe_close(struct ts_probe *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nlinks; i++)
		bpf_link__destroy(p->links[i]);
	hostprobe__destroy(p->skel);
	free(p);
}

int ts_probe_features(const struct ts_probe *p, const struct ts_probe_feature **out)
{
	*out = p->feat;
	return p->nfeat;
}

int ts_probe_trace(struct ts_probe *p, uint32_t tgid, uint64_t cgroup_id, uint32_t slot)
{
	struct ts_slot_acc *zero = calloc((size_t)p->ncpu, sizeof(*zero));
	int rc;

	if (!zero)
		return -ENOMEM;
	/* a reused slot starts from zero */
	rc = bpf_map__update_elem(p->skel->maps.acc, &slot, sizeof(slot), zero,
				  sizeof(*zero) * (size_t)p->ncpu, BPF_ANY);
	free(zero);
	if (!rc)
		rc = bpf_map__update_elem(p->skel->maps.traced_tgids, &tgid, sizeof(tgid), &slot,
					  sizeof(slot), BPF_ANY);
	if (!rc)
		rc = bpf_map__update_elem(p->skel->maps.slot_cgroup, &slot, sizeof(slot), &cgroup_id,
					  sizeof(cgroup_id), BPF_ANY);
	if (!rc && cgroup_id)
		rc = bpf_map__update_elem(p->skel->maps.traced_cgroups, &cgroup_id,
					  sizeof(cgroup_id), &slot, sizeof(slot), BPF_NOEXIST);
	__atomic_add_fetch(&p->skel->data->traced_gen, 1, __ATOMIC_SEQ_CST);
	return rc == -EEXIST ? 0 : rc;
}

void ts_probe_untrace(struct ts_probe *p, uint32_t tgid, uint64_t cgroup_id)
{
	bpf_map__delete_elem(p->skel->maps.traced_tgids, &tgid, sizeof(tgid), 0);
	if (cgroup_id)
		bpf_map__delete_elem(p->skel->maps.traced_cgroups, &cgroup_id, sizeof(cgroup_id), 0);
	__atomic_add_fetch(&p->skel->data->traced_gen, 1, __ATOMIC_SEQ_CST);
}

int ts_probe_read(struct ts_probe *p, uint32_t slot, struct ts_slot_acc *out)
{
	struct ts_slot_acc *v = calloc((size_t)p->ncpu, sizeof(*v));
	int rc;

	if (!v)
		return -ENOMEM;
	rc = bpf_map__lookup_elem(p->skel->maps.acc, &slot, sizeof(slot), v,
				  sizeof(*v) * (size_t)p->ncpu, 0);
	memset(out, 0, sizeof(*out));
	for (int c = 0; !rc && c < p->ncpu; c++) {
		out->oncpu_ns += v[c].oncpu_ns;
		out->offcpu_ns += v[c].offcpu_ns;
		out->runq_ns += v[c].runq_ns;
		out->io_ns += v[c].io_ns;
		out->involuntary += v[c].involuntary;
		out->io_count += v[c].io_count;
		out->tcp_retx += v[c].tcp_retx;
		out->switches += v[c].switches;
	}
	free(v);
	return rc;
}

int ts_probe_take_preemptors(struct ts_probe *p, struct ts_preemptor *out, int max)
{
	struct ts_preempt_key key, next;
	struct ts_preempt_val val;
	struct bpf_map *m = p->skel->maps.preempt;
	int n = 0, more;

	more = bpf_map__get_next_key(m, NULL, &next, sizeof(next)) == 0;
	while (more) {
		key = next;
		more = bpf_map__get_next_key(m, &key, &next, sizeof(next)) == 0;
		/* what the kernel adds between the two calls goes with the entry: a few us */
		if (bpf_map__lookup_elem(m, &key, sizeof(key), &val, sizeof(val), 0))
			continue;
		bpf_map__delete_elem(m, &key, sizeof(key), 0);
		if (n < max) {
			out[n] = (struct ts_preemptor){ key.slot, key.tgid, val.pid, val.ns, "" };
			memcpy(out[n].comm, val.comm, TS_COMM_LEN);
			out[n].comm[TS_COMM_LEN - 1] = 0;
			n++;
		}
	}
	return n;
}
