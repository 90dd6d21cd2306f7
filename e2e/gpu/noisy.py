# SPDX-License-Identifier: Apache-2.0
"""A noisy neighbour: another process running bf16 GEMMs on the same GPU, as a second
tenant would. It changes no clock or GPU setting; it only competes for the SMs."""
import json
import os
import time

import torch

a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
c = a @ b
torch.cuda.synchronize()
if os.environ.get("TS_TRUTH_FILE"):  # when it really began (e2e/gpu/record.sh)
    with open(os.environ["TS_TRUTH_FILE"], "a") as f:
        f.write(json.dumps({"fault": "gemm", "rank": int(os.environ.get("TS_TRUTH_RANK", -1)),
                            "t_ns": time.time_ns()}) + "\n")
while True:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
