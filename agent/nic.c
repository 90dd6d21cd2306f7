// SPDX-License-Identifier: Apache-2.0
#include "nic.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PATH_LEN 512

/* dir/name into out; false when it does not fit. */
static bool join(char *out, const char *dir, const char *name)
{
	int k = snprintf(out, PATH_LEN, "%s/%s", dir, name);

	return k >= 0 && k < PATH_LEN;
}

/* One counter file; a missing or unreadable one is 0 (drivers differ in what they have). */
static uint64_t counter(const char *dir, const char *name)
{
	char path[PATH_LEN];
	uint64_t v = 0;
	FILE *f;

	if (!join(path, dir, name) || !(f = fopen(path, "re")))
		return 0;
	if (fscanf(f, "%" SCNu64, &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* Interfaces with a device behind them: veth pairs, bridges and lo have none. */
static void read_eth(const char *sysfs, struct ts_nic_counts *c)
{
	char dir[PATH_LEN], ifdir[PATH_LEN], path[PATH_LEN];
	struct dirent *de;
	DIR *d;

	if (!join(dir, sysfs, "class/net") || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !join(ifdir, dir, de->d_name) ||
		    !join(path, ifdir, "device") || access(path, F_OK) ||
		    !join(path, ifdir, "statistics"))
			continue;
		c->errors += counter(path, "rx_errors") + counter(path, "tx_errors");
		c->drops += counter(path, "tx_dropped");
		c->link_downs += counter(ifdir, "carrier_down_count");
		c->ports++;
	}
	closedir(d);
}

static void read_ib_port(const char *port, struct ts_nic_counts *c)
{
	char dir[PATH_LEN];

	if (!join(dir, port, "counters"))
		return;
	c->errors += counter(dir, "symbol_error") + counter(dir, "link_error_recovery") +
		     counter(dir, "port_rcv_errors") + counter(dir, "local_link_integrity_errors");
	c->drops += counter(dir, "port_xmit_discards");
	c->link_downs += counter(dir, "link_downed");
	c->xmit_wait += counter(dir, "port_xmit_wait");
	c->ports++;
}

static void read_ib(const char *sysfs, struct ts_nic_counts *c)
{
	char dir[PATH_LEN], devdir[PATH_LEN], ports[PATH_LEN], port[PATH_LEN];
	struct dirent *de, *pe;
	DIR *d, *p;

	if (!join(dir, sysfs, "class/infiniband") || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !join(devdir, dir, de->d_name) ||
		    !join(ports, devdir, "ports") || !(p = opendir(ports)))
			continue;
		while ((pe = readdir(p)))
			if (pe->d_name[0] != '.' && join(port, ports, pe->d_name))
				read_ib_port(port, c);
		closedir(p);
	}
	closedir(d);
}

int ts_nic_read(const char *sysfs, struct ts_nic_counts *out)
{
	memset(out, 0, sizeof(*out));
	read_eth(sysfs, out);
	read_ib(sysfs, out);
	return out->ports ? 0 : -ENOENT;
}

static uint64_t since(uint64_t cur, uint64_t prev)
{
	return cur >= prev ? cur - prev : 0;
}

void ts_nic_delta(const struct ts_nic_counts *cur, const struct ts_nic_counts *prev,
		  struct ts_nic_counts *d)
{
	d->errors = since(cur->errors, prev->errors);
	d->drops = since(cur->drops, prev->drops);
	d->link_downs = since(cur->link_downs, prev->link_downs);
	d->xmit_wait = since(cur->xmit_wait, prev->xmit_wait);
	d->ports = cur->ports;
}
