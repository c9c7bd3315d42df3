"""Provoke a real CUDA out-of-memory error and print its traceback, as a user would paste it."""

import torch

keep = torch.empty(int(torch.cuda.mem_get_info(0)[0] * 0.6), dtype=torch.uint8, device="cuda")
x = torch.empty(int(torch.cuda.mem_get_info(0)[0] * 0.9), dtype=torch.uint8, device="cuda")  # a block in the pool
del x  # reserved but unallocated now: the allocator keeps it
y = torch.empty(int(torch.cuda.get_device_properties(0).total_memory * 0.5), dtype=torch.uint8, device="cuda")
