"""Run as a script in the TARGET interpreter (stdlib + torch only): pinned/pageable copy bandwidth
and a small CPU-vs-GPU training smoke test. Prints one JSON line; progress goes to stderr.

argv[1] is a JSON object: {"tasks": ["bandwidth", "smoke"], "size": bytes, "repeats": n, "steps": n}
"""

import io
import json
import math
import os
import statistics
import sys
import time

# the helper beside this script (also under PYTHONSAFEPATH); leave_path() takes this directory off again
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _cudadoctor_child import hard_exit, leave_path

leave_path()

MARK = "CUDADOCTOR_MEASURE_FACTS "


def progress(text):
    sys.stderr.write("progress: " + text + "\n")
    sys.stderr.flush()


def err(exc):
    return f"{type(exc).__name__}: {exc}"


def bandwidth(torch, size, repeats):
    out = {"transfers": [], "device_names": {}}
    if not torch.cuda.is_available():
        out["skipped"] = "no usable CUDA device (torch.cuda.is_available() is False)"
        return out
    for dev in range(torch.cuda.device_count()):
        out["device_names"][str(dev)] = torch.cuda.get_device_name(dev)
        progress(f"bandwidth cuda:{dev}")
        try:
            with torch.cuda.device(dev):
                free, _ = torch.cuda.mem_get_info(dev)
                n = max(1 << 20, min(size, free // 4))  # never more than a quarter of what is free
                gpu = torch.empty(n, dtype=torch.uint8, device=f"cuda:{dev}")
                hosts = {
                    "pinned": torch.empty(n, dtype=torch.uint8).pin_memory(),
                    "pageable": torch.empty(n, dtype=torch.uint8),
                }
                for memory, host in hosts.items():
                    host.fill_(1)
                    for direction in ("h2d", "d2h"):
                        src, dst = (host, gpu) if direction == "h2d" else (gpu, host)
                        samples = []
                        for i in range(repeats + 2):  # two warm-up copies
                            start = torch.cuda.Event(enable_timing=True)
                            end = torch.cuda.Event(enable_timing=True)
                            start.record()
                            dst.copy_(src, non_blocking=True)
                            end.record()
                            end.synchronize()
                            if i >= 2:
                                samples.append(n / (start.elapsed_time(end) / 1000.0) / 1e9)
                        out["transfers"].append(
                            {
                                "device": dev,
                                "direction": direction,
                                "memory": memory,
                                "gbps": statistics.median(samples),
                                "samples": samples,
                                "size": n,
                            }
                        )
                del gpu, hosts
                torch.cuda.empty_cache()
        except Exception as exc:
            out["transfers"].append(
                {"device": dev, "direction": "h2d", "memory": "pinned", "size": size, "error": err(exc)}
            )
    if torch.cuda.device_count() >= 2:
        peer_to_peer(torch, out, min(size, 64 << 20), max(2, repeats // 2))
    return out


P2P_MAX_GPUS = 8  # 56 ordered pairs at most: a few seconds


def peer_to_peer(torch, out, size, repeats):
    """The P2P access matrix and a GPU-to-GPU copy rate per ordered pair (only with two or more GPUs)."""
    n = min(torch.cuda.device_count(), P2P_MAX_GPUS)
    out["p2p_access"] = [[i == j or bool(torch.cuda.can_device_access_peer(i, j)) for j in range(n)] for i in range(n)]
    out["p2p"] = []
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            progress(f"p2p cuda:{i} -> cuda:{j}")
            try:
                src = torch.empty(size, dtype=torch.uint8, device=f"cuda:{i}").fill_(1)
                dst = torch.empty(size, dtype=torch.uint8, device=f"cuda:{j}")
                samples = []
                with torch.cuda.device(i):
                    for k in range(repeats + 1):  # one warm-up copy
                        start = torch.cuda.Event(enable_timing=True)
                        end = torch.cuda.Event(enable_timing=True)
                        start.record()
                        dst.copy_(src, non_blocking=True)
                        end.record()
                        end.synchronize()
                        torch.cuda.synchronize(j)
                        if k >= 1:
                            samples.append(size / (start.elapsed_time(end) / 1000.0) / 1e9)
                out["p2p"].append({"src": i, "dst": j, "gbps": statistics.median(samples), "size": size})
                del src, dst
            except Exception as exc:
                out["p2p"].append({"src": i, "dst": j, "size": size, "error": err(exc)})
        torch.cuda.empty_cache()


def models(torch):
    nn = torch.nn
    cnn = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(16 * 16, 10),
    )
    mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    return {"cnn": cnn, "mlp": mlp}


def data(torch):
    g = torch.Generator().manual_seed(0)
    # small on purpose: the CPU half must take about a second on 2 cores; the loss still falls
    y = torch.randint(0, 10, (64,), generator=g)
    return {"cnn": (torch.randn(64, 3, 16, 16, generator=g), y), "mlp": (torch.randn(64, 64, generator=g), y)}


def train(torch, model, x, y, device, steps):
    model = model.to(device)
    x, y = x.to(device), y.to(device)
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    start = time.perf_counter()
    for k in range(steps):
        if k == 1:
            # the rate counts from the second step: the first loads kernels lazily, creates the cuBLAS and
            # cuDNN handles and picks algorithms (on a real H100 it made the GPU look 3x slower than the CPU)
            start = time.perf_counter()
        model.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        # plain SGD by hand: torch.optim's first use imports torch._dynamo, ~3 s on 2 cores, which
        # proves nothing about training here (the AMP step still goes through an optimizer)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-0.05)
        losses.append(float(loss.item()))  # .item() synchronises, so the timing is honest
    elapsed = time.perf_counter() - start
    timed = steps - 1 if steps > 1 else steps
    return model, losses, timed / elapsed if elapsed > 0 else None


def smoke(torch, steps):
    import copy

    out = {"steps": []}
    torch.backends.cuda.matmul.allow_tf32 = False  # compare fp32 with fp32
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    nets, batches = models(torch), data(torch)
    cuda = torch.cuda.is_available()
    if not cuda:
        out["gpu_skipped"] = "no usable CUDA device (torch.cuda.is_available() is False)"
    trained = {}
    for name, net in nets.items():
        x, y = batches[name]
        for device in ["cpu"] + (["cuda:0"] if cuda else []):
            progress(f"smoke {name} on {device}")
            step = {"device": device, "model": name}
            try:
                model, step["losses"], step["steps_per_s"] = train(torch, copy.deepcopy(net), x, y, device, steps)
                trained[(name, device)] = model
            except Exception as exc:
                step["error"] = err(exc)
            out["steps"].append(step)
    if cuda:
        diffs = []
        for name in nets:
            a = next((s for s in out["steps"] if s["model"] == name and s["device"] == "cpu"), {}).get("losses")
            b = next((s for s in out["steps"] if s["model"] == name and s["device"] == "cuda:0"), {}).get("losses")
            if a and b:
                diffs += [abs(p - q) / max(abs(p), 1e-6) for p, q in zip(a, b)]
        out["max_loss_difference"] = max(diffs) if diffs else None
        out.update(amp(torch))
    out.update(loader(torch, cuda))
    out.update(checkpoint(torch, trained.get(("cnn", "cuda:0")) or trained.get(("cnn", "cpu"))))
    return out


def amp(torch):
    progress("smoke AMP step")
    try:
        bf16 = torch.cuda.is_bf16_supported()
        dtype = torch.bfloat16 if bf16 else torch.float16
        model = models(torch)["mlp"].cuda()
        x, y = data(torch)["mlp"]
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = None if bf16 else torch.amp.GradScaler("cuda")
        with torch.autocast("cuda", dtype=dtype):
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        value = float(loss.item())
        finite = math.isfinite(value) and all(torch.isfinite(p).all().item() for p in model.parameters())
        return {"amp_dtype": str(dtype).replace("torch.", ""), "amp_finite": finite}
    except Exception as exc:
        return {"amp_error": err(exc), "amp_finite": False}


def loader(torch, cuda):
    progress("smoke DataLoader with workers")
    try:
        from torch.utils.data import DataLoader, TensorDataset

        x, y = data(torch)["cnn"]
        dl = DataLoader(TensorDataset(x, y), batch_size=32, num_workers=2, pin_memory=cuda, persistent_workers=True)
        seen = 0
        for _ in range(2):  # a second epoch reuses the persistent workers
            for xb, _yb in dl:
                seen += xb.shape[0]
        return {"dataloader_ok": seen == 2 * x.shape[0]}
    except Exception as exc:
        return {"dataloader_ok": False, "dataloader_error": err(exc)}


def checkpoint(torch, model):
    progress("smoke checkpoint")
    if model is None:
        return {"checkpoint_ok": False, "checkpoint_error": "no trained model to save"}
    try:
        buf = io.BytesIO()
        torch.save(model.state_dict(), buf)
        buf.seek(0)
        state = torch.load(buf, map_location="cpu", weights_only=True)
        ok = all(t.device.type == "cpu" for t in state.values()) and state.keys() == model.state_dict().keys()
        return {"checkpoint_ok": ok}
    except Exception as exc:
        return {"checkpoint_ok": False, "checkpoint_error": err(exc)}


def run_task(torch, task, cfg):
    try:
        if task == "bandwidth":
            return bandwidth(torch, int(cfg["size"]), int(cfg["repeats"]))
        return smoke(torch, int(cfg["steps"]))
    except Exception as exc:
        return {"error": err(exc)}


def emit(out):
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


def stage(task, cfg):
    """One task, as a stage of torch_session_child.py (torch is already imported there)."""
    try:
        import torch
    except Exception as exc:
        emit({"error": f"import torch failed: {err(exc)}"})
        return
    emit({task: run_task(torch, task, cfg)})


def main():
    cfg = json.loads(sys.argv[1])
    out = {}
    try:
        import torch
    except Exception as exc:
        out["error"] = f"import torch failed: {err(exc)}"
        emit(out)
        return
    for task in ("bandwidth", "smoke"):
        if task in cfg["tasks"]:
            out[task] = run_task(torch, task, cfg)
    emit(out)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # Exit at once, as the torch child does: tearing torch down at interpreter exit costs ~1 s here, and
    # this process has nothing left to clean up (DataLoader workers are gone with the loader).
    hard_exit(0)
