# SPDX-License-Identifier: Apache-2.0
"""A rank whose loop the shim cannot find steps in: it runs collectives through the C
API (trainscope.h, as a program of its own would) and never ends a step. Its report
must say StepsFound False with what to set."""
import ctypes
import sys

lib = ctypes.CDLL(None)
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 200):
    lib.trainscope_collective_begin(1, ctypes.c_uint64(1 << 20))  # an all-reduce of 1 MB
    lib.trainscope_collective_end(1)
print("done", flush=True)
