/* CUDA graphs: a replay runs every kernel its graph holds, so the kernels are counted
 * once, when the graph is instantiated, and added at each launch of the executable
 * graph. Work launched into a stream that is being captured does not run then, so it is
 * counted as captured, not as launches. */
#ifndef TS_GRAPH_H
#define TS_GRAPH_H

#include <stdbool.h>
#include "cudefs.h"
#include "lib.h"

/* Streams being captured in the process now (begin minus end); launches check the
 * stream only while it is not zero. */
extern _Atomic int ts_captures TS_HIDDEN;

/* A capture began or ended (cuStreamBeginCapture*, cuStreamEndCapture). */
TS_HIDDEN void ts_graph_capture(bool begin);
/* The executable graph exec was made from graph: counts graph's kernel nodes, child
 * graphs included. */
TS_HIDDEN void ts_graph_instantiated(uint64_t exec, uint64_t graph);
/* Kernels one replay of exec runs (0 when unknown; counted). */
TS_HIDDEN uint32_t ts_graph_kernels(uint64_t exec);

#endif
