// SPDX-License-Identifier: Apache-2.0
/* The node's port counters read from a sysfs tree made here: interfaces with a device
 * count, virtual ones do not; InfiniBand ports add their error, discard, link-down and
 * transmit-wait counters; deltas never spike when a counter goes back. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/nic.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[512], *slash;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = 0;
		mkdir(path, 0755);
		*slash = '/';
	}
	if (text) {
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(text, f);
		fclose(f);
	} else {
		mkdir(path, 0755);
	}
}

static void eth(const char *ifname, bool device, int rxe, int txe, int txd, int downs)
{
	char rel[256], v[32];

	if (device) {
		snprintf(rel, sizeof(rel), "class/net/%s/device", ifname);
		put(rel, NULL);
	}
	const struct { const char *name; int v; } f[] = {
		{ "statistics/rx_errors", rxe }, { "statistics/tx_errors", txe },
		{ "statistics/tx_dropped", txd }, { "statistics/rx_dropped", 1000 },
		{ "carrier_down_count", downs },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		snprintf(rel, sizeof(rel), "class/net/%s/%s", ifname, f[i].name);
		snprintf(v, sizeof(v), "%d\n", f[i].v);
		put(rel, v);
	}
}

static void ib(const char *port, int sym, int rcv, int discards, int downed, int wait)
{
	char rel[256], v[32];
	const struct { const char *name; int v; } f[] = {
		{ "symbol_error", sym }, { "port_rcv_errors", rcv }, { "port_xmit_discards", discards },
		{ "link_downed", downed }, { "port_xmit_wait", wait },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		snprintf(rel, sizeof(rel), "class/infiniband/%s/counters/%s", port, f[i].name);
		snprintf(v, sizeof(v), "%d\n", f[i].v);
		put(rel, v);
	}
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/ts-nic-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static void test_no_ports(void **state)
{
	struct ts_nic_counts c;

	(void)state;
	assert_int_equal(ts_nic_read(root, &c), -ENOENT);
	eth("veth0", false, 5, 5, 5, 5); /* virtual: not a port */
	assert_int_equal(ts_nic_read(root, &c), -ENOENT);
}

static void test_sums_and_deltas(void **state)
{
	struct ts_nic_counts a, b, d;

	(void)state;
	eth("eth0", true, 3, 1, 2, 1);
	eth("veth9", false, 100, 100, 100, 100);
	ib("mlx5_0/ports/1", 4, 5, 6, 1, 1000);
	ib("mlx5_1/ports/1", 0, 0, 0, 0, 24);
	assert_int_equal(ts_nic_read(root, &a), 0);
	assert_int_equal(a.ports, 3);
	assert_int_equal(a.errors, 3 + 1 + 4 + 5);
	assert_int_equal(a.drops, 2 + 6); /* rx_dropped is not a loss */
	assert_int_equal(a.link_downs, 1 + 1);
	assert_int_equal(a.xmit_wait, 1024);

	ib("mlx5_0/ports/1", 4, 25, 6, 2, 5000); /* 20 more receive errors, a flap */
	eth("eth0", true, 1, 0, 0, 1);            /* a driver reload: counters back to low */
	assert_int_equal(ts_nic_read(root, &b), 0);
	ts_nic_delta(&b, &a, &d);
	assert_int_equal(d.errors, 20 - 3);       /* the sum went up by 20 - (3 + 1 - 1) */
	assert_int_equal(d.link_downs, 1);
	assert_int_equal(d.xmit_wait, 4000);
	assert_int_equal(d.drops, 0);             /* went back: 0, not a spike */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_ports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sums_and_deltas, setup, teardown),
	};
	return cmocka_run_group_tests_name("agent: network port counters", tests, NULL, NULL);
}
