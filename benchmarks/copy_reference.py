"""A reference host<->device copy loop, to set beside `cudadoctor bench` on a real GPU (issue 30).

    python benchmarks/copy_reference.py [--mib 1024] [--repeats 10]

Pinned and pageable copies of one buffer, timed with CUDA events after a warm-up, and the PCIe link NVML
reports (generation and width, now and at most) with what that link can carry per direction: the
figure the doctor's own measurement should come near. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json

# payload GB/s per lane per direction after line coding: gen1/2 8b/10b, gen3+ 128b/130b
PER_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def link() -> dict[str, object]:
    import pynvml

    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        out = {
            "gen": pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h),
            "width": pynvml.nvmlDeviceGetCurrPcieLinkWidth(h),
            "max_gen": pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h),
            "max_width": pynvml.nvmlDeviceGetMaxPcieLinkWidth(h),
        }
    finally:
        pynvml.nvmlShutdown()
    out["link_gbps"] = PER_LANE_GBPS.get(out["gen"], 0) * out["width"]
    return out


def rate(src, dst, repeats: int) -> float:
    import torch

    for _ in range(2):
        dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        dst.copy_(src, non_blocking=True)
    end.record()
    end.synchronize()
    return src.numel() * repeats / (start.elapsed_time(end) / 1000) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    import torch

    n = args.mib << 20
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    pinned = torch.empty(n, dtype=torch.uint8).pin_memory()
    pageable = torch.empty(n, dtype=torch.uint8)
    result = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "mib": args.mib,
        "h2d_pinned_gbps": rate(pinned, dev, args.repeats),
        "d2h_pinned_gbps": rate(dev, pinned, args.repeats),
        "h2d_pageable_gbps": rate(pageable, dev, args.repeats),
        "d2h_pageable_gbps": rate(dev, pageable, args.repeats),
    }
    try:
        result["link"] = link()
    except Exception as e:  # the copy figures stand without the link
        result["link"] = repr(e)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
