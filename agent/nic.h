// SPDX-License-Identifier: Apache-2.0
/* The node's network ports as sysfs counts them: Ethernet interfaces backed by a device
 * (/sys/class/net/<if>/statistics) and InfiniBand or RoCE ports
 * (/sys/class/infiniband/<dev>/ports/<n>/counters). A failing cable, optic or switch
 * port shows here as errors, discards and link flaps while the job only sees slower
 * collectives. */
#ifndef TS_NIC_H
#define TS_NIC_H

#include <stdint.h>

struct ts_nic_counts {
	uint64_t errors;     /* rx/tx errors; IB symbol, link-recovery, receive and integrity
			      * errors */
	uint64_t drops;      /* tx dropped (rx_dropped also counts frames no one wanted); IB
			      * transmit discards */
	uint64_t link_downs; /* carrier losses; IB link downed */
	uint64_t xmit_wait;  /* IB port_xmit_wait: ticks a port had data and no credit */
	int ports;           /* Ethernet interfaces and IB ports read */
};

/* Sums the counters of every port under sysfs (normally "/sys"). Returns 0, or -ENOENT
 * when there is no port to read. */
int ts_nic_read(const char *sysfs, struct ts_nic_counts *out);
/* cur - prev per counter; one that went back (a driver reload, a port gone) gives 0 for
 * this period rather than a spike. */
void ts_nic_delta(const struct ts_nic_counts *cur, const struct ts_nic_counts *prev,
		  struct ts_nic_counts *d);

#endif
