"""Hold most of GPU 0's memory for a few seconds, then free it and linger: the other process that
`gpus --pick 1 --wait` must wait out. python hold_memory.py SECONDS_HELD LEAVE_FREE_GIB"""

import sys
import time

import torch

held, leave = float(sys.argv[1]), float(sys.argv[2])
free, total = torch.cuda.mem_get_info(0)
block = torch.empty(int(free - leave * 2**30), dtype=torch.uint8, device="cuda")
print(f"holding {block.numel() / 2**30:.1f} GiB of {total / 2**30:.1f} GiB at {time.time():.2f}", flush=True)
time.sleep(held)
del block
torch.cuda.empty_cache()
print(f"freed at {time.time():.2f}", flush=True)
time.sleep(3)
