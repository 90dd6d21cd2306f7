// SPDX-License-Identifier: Apache-2.0
/* The stream's settings kept by its manager (natsw.c calls it for the analyzer). */
#ifndef TS_NATSW_STREAM_H
#define TS_NATSW_STREAM_H

#include "natsw.h"

/* Creates the TRAINSCOPE stream, or updates it where its limits, replicas, discard policy
 * or partitions differ from o's. Returns 0; -EAGAIN when JetStream does not answer;
 * -EINVAL when it refuses (err says why); -ENOTSUP when it keeps other settings (a server
 * older than 2.10 has no subject transform: err says so); -ENOMEM. */
int tsn_stream_apply(natsConnection *nc, const struct tsn_opts *o, char *err, size_t len);

/* The subject transform's destination for n partitions: a job's subjects get the
 * partition of its namespace and job as a seventh token. */
void tsn_partition_dest(char *out, size_t n, int partitions);

#endif
