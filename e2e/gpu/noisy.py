# SPDX-License-Identifier: Apache-2.0
"""A noisy neighbour: another process running bf16 GEMMs on the same GPU, as a second
tenant would. It changes no clock or GPU setting; it only competes for the SMs."""
import torch

a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
while True:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
