// SPDX-License-Identifier: Apache-2.0
/* The rank's device as its node numbers it, from the visible-device lists the device
 * plugins and container runtimes set (Ascend's and NVIDIA's). */
#ifndef TS_VISIBLE_H
#define TS_VISIBLE_H

#include <stddef.h>
#include <stdint.h>

/* The device of a process with this local rank, numbered as on its node (what the agent's
 * NVML and DCMI see), from the lists of what it sees: ASCEND_RT_VISIBLE_DEVICES (indices)
 * over ASCEND_VISIBLE_DEVICES (the container's davinci numbers: "0,1", "0-3",
 * "Ascend910-2"), else CUDA_VISIBLE_DEVICES over NVIDIA_VISIBLE_DEVICES. Entry local_rank
 * of the process's list (entry 0 when it has one) is the device. Returns 1 with *index
 * set, 2 with the device's UUID ("GPU-...", "MIG-...") in uuid, 0 when the lists are
 * unset, bad, or do not reach that entry. */
int ts_visible_device(int32_t local_rank, int32_t *index, char *uuid, size_t n);

#endif
