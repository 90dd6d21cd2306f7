// SPDX-License-Identifier: Apache-2.0
/* CUDA graphs: a replay runs every kernel its graph holds, so the kernels are counted
 * once, when the graph is instantiated, and added at each launch of the executable
 * graph. Work launched into a stream that is being captured does not run then, so it is
 * counted as captured, not as launches; a collective called into a capture is counted
 * with its graph's replays. */
#ifndef TS_GRAPH_H
#define TS_GRAPH_H

#include <stdbool.h>
#include "cudefs.h"
#include "lib.h"

/* Streams being captured in the process now: ts_lib.captures (lib.h). */

/* A capture began or ended (cuStreamBeginCapture*, cuStreamEndCapture). */
TS_HIDDEN void ts_graph_capture(bool begin);
/* The executable graph exec was made from graph: counts graph's kernel nodes, child
 * graphs included. */
TS_HIDDEN void ts_graph_instantiated(uint64_t exec, uint64_t graph);
/* Kernels one replay of exec runs (0 when unknown; counted); *slot: its table entry or
 * -1. */
TS_HIDDEN uint32_t ts_graph_kernels(uint64_t exec, int *slot);
/* A collective m called on stream s while the stream is captured: kept for the graph
 * being captured, or counted as not kept. */
struct ts_op_meta;
TS_HIDDEN void ts_graph_capture_coll(CUstream s, unsigned sk, const struct ts_op_meta *m);
/* A replay of the executable graph in table entry slot ran its captured collectives:
 * counted, and one record per kind (untimed: the replay is timed as a whole). */
TS_HIDDEN void ts_graph_colls_replayed(int slot);
/* Collectives replays ran, and captured ones not kept (no capture info from the
 * driver, or the pool full). */
TS_HIDDEN void ts_graph_coll_counts(uint64_t *replayed, uint64_t *uncounted);

#endif
