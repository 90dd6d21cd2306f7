// SPDX-License-Identifier: Apache-2.0
/* Rank table: Hello bookkeeping, and finding a rank's host process through its cgroup
 * and NSpid, on a fake /proc and cgroup tree. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "agent/ranks.h"

static char root[64];

static void put_n(const char *rel, const char *text, size_t n)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, n, f), n);
	fclose(f);
}

static void put(const char *rel, const char *text)
{
	put_n(rel, text, strlen(text));
}

/* /proc/PID/environ holds NUL-separated entries: sizeof keeps the embedded NULs. */
#define PUT_ENV(rel, lit) put_n(rel, lit, sizeof(lit) - 1)

static void mk(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static uint64_t ino(const char *rel)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

/* Host pid 4100 is pid 7 in the pod's namespace, in cgroup pod-a; host 4200 is
 * also pid 7, but in another pod; host pid 7 is some host process; 4400 is pid 7 of a
 * pod that was not injected. Host 4100 and 4200 run in cgroup v2 paths that the
 * "host" cgroup tree has, under unified/ as on a cgroup v1 host. */
static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/ts-ranks-XXXXXX");
	assert_non_null(mkdtemp(root));
	mk("proc"), mk("proc/4100"), mk("proc/4200"), mk("proc/4300"), mk("proc/7");
	mk("proc/4400");
	put("proc/4100/status", "Name:\tpython\nNSpid:\t4100\t7\n");
	put("proc/4200/status", "Name:\tpython\nNSpid:\t4200\t7\n");
	put("proc/4300/status", "Name:\tlocal\nNSpid:\t4300\n");
	put("proc/7/status", "Name:\tkthreadd\nNSpid:\t7\n");
	put("proc/4400/status", "Name:\tsidecar\nNSpid:\t4400\t7\n");
	PUT_ENV("proc/4100/environ", "PATH=/bin\0TRAINSCOPE_POD=pod-a\0TRAINSCOPE_NAMESPACE=team\0"
				    "TRAINSCOPE_JOB=llm\0TRAINSCOPE_RING_DIR=/r\0");
	PUT_ENV("proc/4200/environ", "TRAINSCOPE_POD=pod-b\0TRAINSCOPE_NAMESPACE=team\0"
				    "TRAINSCOPE_JOB=llm\0");
	PUT_ENV("proc/4300/environ", "HOME=/root\0TRAINSCOPE_RING_DIR=/tmp/r\0");
	PUT_ENV("proc/7/environ", "");
	PUT_ENV("proc/4400/environ", "PATH=/bin\0");
	put("proc/4100/cgroup", "4:memory:/kubepods/pod-a\n0::/kubepods/pod-a\n");
	put("proc/4200/cgroup", "0::/../../kubepods/pod-b\n");
	mk("cg"), mk("cg/kubepods"), mk("cg/kubepods/pod-a"), mk("cg/kubepods/pod-b");
	put("cg/kubepods/pod-a/cgroup.procs", "4000\n4100\n");
	put("cg/kubepods/pod-b/cgroup.procs", "4200\n");
	mk("host"), mk("host/unified"), mk("host/unified/kubepods"), mk("host/unified/kubepods/pod-a");
	put("host/unified/cgroup.controllers", "cpu memory\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static void init(struct ts_ranks *t, char *proc, char *cg)
{
	ts_ranks_init(t, NULL);
	sprintf(proc, "%s/proc", root);
	sprintf(cg, "%s/cg", root);
	t->proc_root = proc;
	snprintf(t->cgroup_root, sizeof(t->cgroup_root), "%s", cg);
}

static void test_resolve_through_cgroup_and_nspid(void **state)
{
	static struct ts_ranks t;
	char proc[128], cg[128];
	struct ts_ident a = { .pid = 7, .cgroup_id = ino("cg/kubepods/pod-a") };
	struct ts_ident b = { .pid = 7, .cgroup_id = ino("cg/kubepods/pod-b") };
	struct ts_ident local = { .pid = 4300 };
	struct ts_ident missing = { .pid = 9, .cgroup_id = ino("cg/kubepods/pod-a") };
	uint64_t cgid;
	uint32_t host;

	(void)state;
	init(&t, proc, cg);
	assert_int_equal(ts_ranks_resolve(&t, &a, &host, &cgid), 0);
	assert_int_equal(host, 4100);
	assert_int_equal(cgid, a.cgroup_id);
	assert_int_equal(ts_ranks_resolve(&t, &b, &host, &cgid), 0);
	assert_int_equal(host, 4200);
	assert_int_equal(ts_ranks_resolve(&t, &local, &host, &cgid), 0);
	assert_int_equal(host, 4300);
	assert_int_equal(ts_ranks_resolve(&t, &missing, &host, &cgid), -ENOENT);
}

/* A rank in a container on a cgroup v1 host reports cgroup 0: the agent finds it by
 * its pid in its namespace and its environment, and its cgroup in the host's tree. */
static void test_resolve_without_cgroup(void **state)
{
	static struct ts_ranks t;
	char proc[128], cg[128], host_cg[160];
	struct ts_ident a = { .ns = "team", .job = "llm", .pod = "pod-a", .pid = 7 };
	struct ts_ident b = { .ns = "team", .job = "llm", .pod = "pod-b", .pid = 7 };
	struct ts_ident other = { .ns = "team", .job = "llm", .pod = "pod-c", .pid = 7 };
	struct ts_ident local = { .ns = "default", .job = "local", .pid = 4300 };
	uint64_t cgid;
	uint32_t host;

	(void)state;
	init(&t, proc, cg);
	snprintf(host_cg, sizeof(host_cg), "%s/host", root);
	ts_ranks_init(&t, host_cg);
	t.proc_root = proc;
	assert_int_equal(ts_ranks_resolve(&t, &a, &host, &cgid), 0);
	assert_int_equal(host, 4100);
	assert_int_equal(cgid, ino("host/unified/kubepods/pod-a"));
	assert_int_equal(ts_ranks_resolve(&t, &b, &host, &cgid), 0);
	assert_int_equal(host, 4200);
	assert_int_equal(cgid, 0); /* its path lies outside what the agent sees */
	assert_int_equal(ts_ranks_resolve(&t, &local, &host, &cgid), 0);
	assert_int_equal(host, 4300);
	/* neither the host's pid 7 nor the uninjected pod's pid 7 is pod-c's rank */
	assert_int_equal(ts_ranks_resolve(&t, &other, &host, &cgid), -ENOENT);
}

static void test_hello_bookkeeping(void **state)
{
	static struct ts_ranks t;
	char proc[128], cg[128];
	struct ts_ident id = { .ns = "ns", .job = "j", .rank = 3, .pid = 7, .local_rank = -1,
			       .dev_index = -1 };
	struct ts_rank_entry *e1, *e2;

	(void)state;
	init(&t, proc, cg);
	e1 = ts_ranks_hello(&t, &id, 100);
	assert_int_equal(e1->id.dev_index, -1);
	/* mp.spawn: the device comes with a later Hello, and a Hello without one keeps it */
	id.local_rank = id.dev_index = 2;
	e2 = ts_ranks_hello(&t, &id, 200);
	assert_ptr_equal(e1, e2);
	assert_int_equal(e2->last_hello_ms, 200);
	assert_int_equal(e2->id.dev_index, 2);
	assert_int_equal(e2->id.local_rank, 2);
	id.local_rank = id.dev_index = -1;
	assert_int_equal(ts_ranks_hello(&t, &id, 250)->id.dev_index, 2);
	id.rank = 4;
	assert_ptr_not_equal(ts_ranks_hello(&t, &id, 300), e1);
	/* ranks 3 and 4 hold two slots: 5 .. TS_MAX_SLOTS + 2 fill the rest */
	for (int r = 5; r <= TS_MAX_SLOTS + 3; r++) {
		id.rank = r;
		struct ts_rank_entry *e = ts_ranks_hello(&t, &id, 400);
		if (r <= TS_MAX_SLOTS + 2)
			assert_non_null(e);
		else
			assert_null(e); /* full: refused, not overwritten */
	}
	ts_ranks_forget(&t, e1);
	id.rank = 1000;
	assert_ptr_equal(ts_ranks_hello(&t, &id, 500), e1);
}

/* A GPU's processes that are no traced rank: another tenant. An unresolved entry's
 * process is not known yet, so it cannot vouch for one; a list without the rank itself
 * (NVML in another PID namespace) tells nothing. */
static void test_strangers(void **state)
{
	static struct ts_ranks t;
	char proc[128], cg[128];
	struct ts_ident id = { .ns = "ns", .job = "j", .rank = 0, .pid = 7 };
	const uint32_t pids[] = { 4242, 777, 4243 };

	(void)state;
	init(&t, proc, cg);
	struct ts_rank_entry *a = ts_ranks_hello(&t, &id, 1);
	id.rank = 1, id.pid = 8;
	struct ts_rank_entry *b = ts_ranks_hello(&t, &id, 1);
	a->resolved = true, a->host_tgid = 4242;
	b->host_tgid = 4243; /* not resolved */
	assert_int_equal(ts_ranks_strangers(&t, 4242, pids, 3), 2);
	b->resolved = true;
	assert_int_equal(ts_ranks_strangers(&t, 4242, pids, 3), 1);
	assert_int_equal(ts_ranks_strangers(&t, 4242, pids, 1), 0);
	assert_int_equal(ts_ranks_strangers(&t, 4242, pids, -1), 0);
	assert_int_equal(ts_ranks_strangers(&t, 5555, pids, 3), 0);
}

/* Entries are counted by the pod that announced them; one is found by its rank; a pod's
 * unresolved entries past their grace may give way. */
static void test_per_pod(void **state)
{
	static struct ts_ranks t;
	char proc[128], cg[128];
	struct ts_ident id = { .ns = "ns", .job = "j", .pid = 7 };
	struct ts_rank_entry *e;

	(void)state;
	init(&t, proc, cg);
	for (int r = 0; r < 5; r++) {
		id.rank = r;
		e = ts_ranks_hello(&t, &id, 100);
		snprintf(e->pod_uid, sizeof(e->pod_uid), "%s", r < 3 ? "pod-a" : "pod-b");
	}
	assert_int_equal(ts_ranks_of_pod(&t, "pod-a"), 3);
	assert_int_equal(ts_ranks_of_pod(&t, "pod-b"), 2);
	assert_int_equal(ts_ranks_of_pod(&t, "pod-c"), 0);
	id.rank = 4;
	assert_ptr_equal(ts_ranks_find(&t, &id), e);
	id.rank = 5;
	assert_null(ts_ranks_find(&t, &id));
	/* a pod at its most gives up its own stale entries only */
	assert_null(ts_ranks_evictable(&t, "pod-a", 100 + TS_UNRESOLVED_GRACE_MS - 1));
	e = ts_ranks_evictable(&t, "pod-a", 100 + TS_UNRESOLVED_GRACE_MS);
	assert_non_null(e);
	assert_string_equal(e->pod_uid, "pod-a");
	assert_null(ts_ranks_evictable(&t, "pod-c", 100 + TS_UNRESOLVED_GRACE_MS));
}

/* A process announced under a provisional rank, then its own: found under the old one. */
static void test_renamed(void **state)
{
	static struct ts_ranks t;
	char proc[128], cg[128];
	struct ts_ident id = { .ns = "ns", .job = "lit", .rank = 0, .pid = 1109 };
	struct ts_rank_entry *e;

	(void)state;
	init(&t, proc, cg);
	e = ts_ranks_hello(&t, &id, 100);
	id.rank = 1;
	assert_ptr_equal(ts_ranks_renamed(&t, &id), e);
	id.pid = 952; /* another process of the job */
	assert_null(ts_ranks_renamed(&t, &id));
	id.pid = 1109;
	snprintf(id.job, sizeof(id.job), "other");
	assert_null(ts_ranks_renamed(&t, &id));
	snprintf(id.job, sizeof(id.job), "lit");
	id.rank = 0; /* its own rank is no renaming */
	assert_null(ts_ranks_renamed(&t, &id));
}

/* Announcements anyone could forge: init, the agent and processes outside the announcing
 * pod are refused; refused entries make room for real ranks. */
static void test_verify(void **state)
{
	static struct ts_ranks t;
	const char *uid = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
	char proc[128], cg[128], why[256];

	(void)state;
	init(&t, proc, cg);
	mk("proc/5100"), mk("proc/5200"), mk("proc/1");
	put("proc/5100/cgroup", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-"
				"pod0b1c2d3e_4f50_6172_8394_a5b6c7d8e9f0.slice/cri-containerd-ab.scope\n");
	put("proc/5200/cgroup", "7:cpu:/kubepods/burstable/pod0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0/c\n");
	put("proc/1/cgroup", "0::/init.scope\n");
	assert_int_equal(ts_ranks_verify(&t, uid, 5100, true, why, sizeof(why)), 0); /* systemd */
	assert_int_equal(ts_ranks_verify(&t, uid, 5200, true, why, sizeof(why)), 0); /* cgroupfs */
	assert_int_equal(ts_ranks_verify(&t, uid, 1, true, why, sizeof(why)), -EPERM);
	assert_int_equal(ts_ranks_verify(&t, uid, 1, false, why, sizeof(why)), -EPERM);
	assert_int_equal(ts_ranks_verify(&t, uid, (uint32_t)getpid(), false, why, sizeof(why)), -EPERM);
	assert_int_equal(ts_ranks_verify(&t, uid, 4100, true, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "not in pod"));
	assert_int_equal(ts_ranks_verify(&t, "", 5100, true, why, sizeof(why)), -EPERM);
	assert_int_equal(ts_ranks_verify(&t, "../../x", 5100, true, why, sizeof(why)), -EPERM);
	assert_int_equal(ts_ranks_verify(&t, "", 4100, false, why, sizeof(why)), 0);

	/* a table full of refused entries still takes a real rank */
	struct ts_ident id = { .ns = "ns", .job = "forged", .pid = 1 };
	for (int r = 0; r < TS_MAX_SLOTS; r++) {
		id.rank = r;
		ts_ranks_hello(&t, &id, 100)->refused = true;
	}
	struct ts_ident real = { .ns = "ns", .job = "real", .rank = 0, .pid = 7 };
	struct ts_rank_entry *e = ts_ranks_hello(&t, &real, 200);
	assert_non_null(e);
	assert_false(e->refused);
	assert_string_equal(e->id.job, "real");
}

/* 300 announcements whose processes never appear: once past their grace the oldest
 * gives its slot to a new announcement, a real rank's included; each is looked for
 * less and less often. */
static void test_unresolved_flood(void **state)
{
	static struct ts_ranks t;
	char proc[128], cg[128];
	struct ts_ident id = { .ns = "ns", .job = "flood", .pid = 99999 };

	(void)state;
	init(&t, proc, cg);
	for (int r = 0; r < 300; r++) {
		id.rank = r;
		struct ts_rank_entry *e = ts_ranks_hello(&t, &id, 1000 + (uint64_t)r);
		if (r < TS_MAX_SLOTS)
			assert_non_null(e);
		else
			assert_null(e); /* all within their grace */
	}
	struct ts_ident real = { .ns = "ns", .job = "real", .rank = 0, .pid = 7 };
	assert_null(ts_ranks_hello(&t, &real, 2000));
	struct ts_rank_entry *e = ts_ranks_hello(&t, &real, 1000 + TS_UNRESOLVED_GRACE_MS);
	assert_non_null(e);
	assert_string_equal(e->id.job, "real");
	assert_true(ts_ranks_due(e, 1000 + TS_UNRESOLVED_GRACE_MS));
	/* the flood's first entry gave way (the oldest) */
	id.rank = 0;
	for (int i = 0; i < TS_MAX_SLOTS; i++)
		assert_false(t.e[i].used && !strcmp(t.e[i].id.job, "flood") && t.e[i].id.rank == 0);
	/* looks back off: 250 ms, 500 ms, ... at most TS_RESOLVE_BACKOFF_MAX_MS */
	uint64_t now = 10000;
	for (int i = 0; i < 20; i++) {
		ts_ranks_missed(e, now);
		assert_false(ts_ranks_due(e, now + 1));
		assert_true(e->next_try_ms - now <= TS_RESOLVE_BACKOFF_MAX_MS);
	}
	assert_int_equal(e->next_try_ms - now, TS_RESOLVE_BACKOFF_MAX_MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_through_cgroup_and_nspid),
		cmocka_unit_test(test_resolve_without_cgroup),
		cmocka_unit_test(test_hello_bookkeeping),
		cmocka_unit_test(test_strangers),
		cmocka_unit_test(test_renamed),
		cmocka_unit_test(test_per_pod),
		cmocka_unit_test(test_verify),
		cmocka_unit_test(test_unresolved_flood),
	};
	return cmocka_run_group_tests_name("agent ranks", tests, setup, teardown);
}
