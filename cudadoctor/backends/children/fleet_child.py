"""Run as a script by `cudadoctor fleet` in the worker's own interpreter (stdlib + torch only), with the
environment torchrun gave the worker (RANK, WORLD_SIZE, LOCAL_RANK, GROUP_RANK, MASTER_ADDR/PORT,
TORCHELASTIC_*). Never imported by cudadoctor itself.

The control plane is the rendezvous TCPStore torchrun already runs (the agent's store, or rank 0's
when there is no agent): every rank writes what it is and where it is there, so rank 0 can name the
ranks that never arrived or never finished even when gloo and NCCL are broken, and no peer's data is
ever unpickled (JSON text only). gloo then forms the default process group (phase 0 checks that the
ranks reach each other); NCCL, or gloo standing in for it, carries the measured all-reduces.

Every wait has a deadline: the store waits, the process-group timeouts, and each collective, which is
polled with `Work.is_completed()` against its own deadline. Rank 0 prints JSON events after MARK as it
goes, so a run its parent has to kill still leaves what was learnt; the last line is the "end" event.

argv[1]: JSON config (see backends/fleet.py); stdin: this node's check report (JSON) on local rank 0.
CUDADOCTOR_FLEET_TEST (JSON, tests only): {"delay": {"RANK": seconds}, "exit": {"RANK": "step"},
"hang": {"RANK": "step"}, "block": {"RANK": "step"}, "gpus": N, "host": NAME}: a straggler, a rank that dies,
a rank that never arrives, a rank stuck inside a step (as in a blocking NCCL call), N GPUs visible to every
rank, the host name this rank reports.
"""

import contextlib
import datetime
import json
import os
import socket
import sys
import threading
import time

# the helper beside this script (also under PYTHONSAFEPATH); leave_path() takes this directory off again
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _cudadoctor_child import hard_exit, leave_path

leave_path()

MARK = "CUDADOCTOR_FLEET "
MiB = 1 << 20


def emit(event, **data):
    sys.stdout.write(MARK + json.dumps(dict(event=event, t=round(time.time(), 3), **data)) + "\n")
    sys.stdout.flush()


class Hang(Exception):
    def __init__(self, step, seconds):
        super().__init__(f"{step} did not finish within {seconds:g} s")
        self.step, self.seconds = step, seconds


class Unreachable(Exception):
    """The rendezvous store (rank 0, or torchrun's agent) did not answer within the bound."""

    def __init__(self, addr, port, seconds, detail=None):
        super().__init__(f"could not reach the rendezvous store at {addr}:{port} within {seconds:g} s")
        self.info = {"endpoint": f"{addr}:{port}", "seconds": seconds, "detail": detail}


def reachable(addr, port, deadline):
    """Whether something accepts connections at addr:port before the deadline (tried every 0.2 s: rank 0
    may open its store later than this rank starts)."""
    while True:
        left = deadline - time.monotonic()
        try:
            socket.create_connection((addr, port), timeout=max(0.1, min(2.0, left))).close()
            return True
        except (OSError, ValueError, OverflowError):
            pass
        if time.monotonic() + 0.2 >= deadline:
            return False
        time.sleep(0.2)


class Watchdog:
    """Bounds each step from a second thread: a collective that blocks inside C++ (NCCL communicator
    set-up, a group creation) never returns to the polling wait, so this thread reports the step as hung,
    with the ranks that never reached it, and ends the process."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.step, self.deadline, self.seconds = None, None, 0.0
        self.lock = threading.Lock()
        threading.Thread(target=self.run, name="fleet-watchdog", daemon=True).start()

    def arm(self, step, seconds):
        with self.lock:
            self.step, self.seconds, self.deadline = step, seconds, time.monotonic() + seconds

    def run(self):
        while True:
            time.sleep(0.2)
            with self.lock:
                fired = self.deadline is not None and time.monotonic() > self.deadline
                step, seconds = self.step, self.seconds
            if fired:
                break
        fleet = self.fleet
        try:
            fleet.store = fleet.client()  # the main thread may be stuck inside the old connection
            fleet.result["hang"] = step
            fleet.result["error"] = f"{step} did not finish within {seconds:g} s"
            finish(fleet)
        except Exception as exc:
            emit("end", rank=fleet.rank, result=fleet.result, ranks={}, missing=[], last={}, error=one_line(exc))
        finally:
            sys.stdout.flush()
            hard_exit(0)


def env_int(name, default):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return default


class Fleet:
    def __init__(self, cfg):
        self.cfg = cfg
        self.rank = env_int("RANK", 0)
        self.world = env_int("WORLD_SIZE", 1)
        self.local_rank = env_int("LOCAL_RANK", 0)
        self.local_world = env_int("LOCAL_WORLD_SIZE", 1)
        self.node = env_int("GROUP_RANK", 0)
        self.timeout = float(cfg.get("timeout", 60))
        self.test = json.loads(os.environ.get("CUDADOCTOR_FLEET_TEST") or "{}")
        self.result = {"rank": self.rank, "steps": {}, "error": None, "at": "start"}
        self.short = []  # ranks whose node shows GPUs, but none for their LOCAL_RANK (rank 0's decision)
        self.store = None
        self.watchdog = None
        self.prefix = "cudadoctor/fleet/{}/{}/".format(
            os.environ.get("TORCHELASTIC_RUN_ID", "none"), os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        )

    # -- the store: arrivals, progress, results -------------------------------------------------

    def connect(self):
        """The rendezvous store: rank 0's own (it opens it), or torchrun's agent store. A rank that cannot
        reach it within `connect_timeout` (--join-timeout) raises Unreachable: torch's own client would
        retry for about twice its timeout and then say nothing the parent can tell from a crash."""
        import torch.distributed as dist

        bound = datetime.timedelta(seconds=float(self.cfg.get("wait_rank0", 120)))
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        if not addr or not port or (self.world == 1 and "RANK" not in os.environ):
            self.store = dist.HashStore()
            return
        if self.rank == 0 and not agent:
            self.store = dist.TCPStore(addr, int(port), None, True, bound, multi_tenant=True)
            return
        seconds = float(self.cfg.get("connect_timeout", self.cfg.get("join_timeout", 60)))
        deadline = time.monotonic() + seconds
        if not reachable(addr, int(port), deadline):
            raise Unreachable(addr, port, seconds)
        left = datetime.timedelta(seconds=max(1.0, deadline - time.monotonic()))
        try:
            if agent:
                store = dist.TCPStore(addr, int(port), None, False, left)
            else:
                store = dist.TCPStore(addr, int(port), None, False, left, multi_tenant=True)
        except Exception as exc:  # something listens there, but not the store
            raise Unreachable(addr, port, seconds, one_line(exc)) from None
        store.set_timeout(bound)
        self.store = store

    def client(self):
        """A second connection to the same store."""
        import torch.distributed as dist

        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if isinstance(self.store, dist.HashStore) or not addr or not port:
            return self.store
        return dist.TCPStore(addr, int(port), None, False, datetime.timedelta(seconds=10))

    def key(self, *parts):
        return self.prefix + "/".join(str(p) for p in parts)

    def put(self, *parts, value):
        self.store.set(self.key(*parts), json.dumps(value))

    def get(self, *parts):
        return json.loads(self.store.get(self.key(*parts)))

    def has(self, *parts):
        return self.store.check([self.key(*parts)])

    def mark(self, step, ops=1):
        """Where this rank is: rank 0 reads it to name who never arrived when a step hangs. The watchdog
        gives the step `ops` collective bounds (each is also polled against its own)."""
        if self.watchdog is not None:
            self.watchdog.arm(step, self.timeout * ops + 5)
        if self.test.get("exit", {}).get(str(self.rank)) == step:
            hard_exit(17)  # tests: a rank that dies before this step
        if self.test.get("hang", {}).get(str(self.rank)) == step:
            # tests: a rank that never arrives at this step. Its own watchdog ends it later than rank 0's
            # bound on the step, however late a loaded machine lets rank 0 reach it: otherwise this rank's
            # exit, not the bound, ends the collective, and the test would see a failed rank, not a hang
            if self.watchdog is not None:
                self.watchdog.arm(step, self.timeout * ops * 4 + 30)
            time.sleep(3600)
        self.result["at"] = step
        self.put("at", self.rank, value=step)
        if self.test.get("block", {}).get(str(self.rank)) == step:
            time.sleep(3600)  # tests: stuck inside a collective that never returns
        if self.rank == 0:
            emit("step", step=step)

    def collect(self, name, value, wait):
        """Every rank's `value` under `name`; rank 0 waits up to `wait` s and returns (values, missing)."""
        self.put(name, self.rank, value=value)
        self.store.add(self.key(name, "count"), 1)
        if self.rank != 0:
            return None, []
        deadline = time.monotonic() + wait
        while self.store.add(self.key(name, "count"), 0) < self.world and time.monotonic() < deadline:
            time.sleep(0.05)
        got, missing = {}, []
        for r in range(self.world):
            if self.has(name, r):
                got[r] = self.get(name, r)
            else:
                missing.append(r)
        return got, missing

    def decide(self, name, value=None):
        """Rank 0 says how to go on; the others wait for it (bounded)."""
        if self.rank == 0:
            self.put("decide", name, value=value)
            return value
        self.store.wait([self.key("decide", name)], datetime.timedelta(seconds=self.cfg.get("wait_rank0", 120)))
        return self.get("decide", name)

    def last_steps(self):
        steps = {}
        for r in range(self.world):
            try:
                steps[r] = self.get("at", r) if self.has("at", r) else None
            except Exception:
                steps[r] = None
        return steps

    # -- phase 0 ------------------------------------------------------------------------------

    def arrive(self, payload):
        import torch

        self.mark("arrive", 0)
        if self.watchdog is not None:
            self.watchdog.arm(
                "arrive", float(self.cfg.get("wait_rank0", 120)) + float(self.cfg.get("join_timeout", 60)) + 30
            )
        # after arming: torch.cuda.is_available() runs cuInit, which hangs on a broken driver
        me = {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "local_world_size": self.local_world,
            "node_rank": self.node,
            "host": self.test.get("host") or socket.gethostname(),
            "torch": torch.__version__,
            "torch_cuda": getattr(torch.version, "cuda", None),
            "nccl": nccl_version(torch),
            "gpus": self.test["gpus"] if "gpus" in self.test else visible_gpus(torch),
            "report": payload or None,
            "packages": nvidia_packages() if self.local_rank == 0 else None,
        }
        ranks, missing = self.collect("arrive", me, float(self.cfg.get("join_timeout", 60)))
        if self.rank == 0:
            emit("arrived", ranks=ranks, missing=missing)
            return self.decide("arrive", {"missing": missing, "nodes": node_map(ranks), "short": short_ranks(ranks)})
        return self.decide("arrive")

    def join_gloo(self):
        import torch
        import torch.distributed as dist

        self.mark("gloo", 3)
        start = time.monotonic()
        error = None
        try:
            dist.init_process_group(
                "gloo",
                store=dist.PrefixStore(self.key("pg"), self.store),
                rank=self.rank,
                world_size=self.world,
                timeout=datetime.timedelta(seconds=self.timeout),
            )
            t = torch.ones(1)
            self.wait(dist.all_reduce(t, async_op=True), "gloo", self.timeout)
            if int(t.item()) != self.world:
                error = f"gloo all-reduce summed to {t.item():g}, not {self.world}"
        except Hang as exc:
            error = str(exc)
        except Exception as exc:
            error = one_line(exc)
        self.result["gloo"] = {"ok": error is None, "error": error, "seconds": round(time.monotonic() - start, 3)}
        got, missing = self.collect("gloo", self.result["gloo"], self.timeout + 5)
        if self.rank == 0:
            failed = sorted(r for r, v in got.items() if not v["ok"])
            emit("gloo", ranks=got, missing=missing)
            return self.decide("gloo", {"ok": not failed and not missing})["ok"]
        return self.decide("gloo")["ok"]

    @contextlib.contextmanager
    def h2d_turn(self):
        """One host-to-device copy at a time on a node: local rank k waits for k-1 (bounded)."""
        try:
            if self.local_rank > 0:
                self.store.wait(
                    [self.key("h2d", self.node, self.local_rank - 1)], datetime.timedelta(seconds=self.timeout)
                )
            yield
        finally:
            self.put("h2d", self.node, self.local_rank, value=True)

    # -- collectives with deadlines ----------------------------------------------------------------

    def wait(self, work, step, seconds):
        deadline = time.monotonic() + seconds
        while not work.is_completed():
            if time.monotonic() > deadline:
                raise Hang(step, seconds)
            time.sleep(0.0005)
        work.wait()
        if self.watchdog is not None:
            self.watchdog.arm(step, self.timeout + 5)  # progress: the next collective gets a full bound

    def allreduce(self, step, group, size, backend, device, warmup, iters):
        import torch
        import torch.distributed as dist

        self.mark(step)
        n = dist.get_world_size(group)
        t = torch.ones(max(1, size // 4), dtype=torch.float32, device=device)
        for _ in range(warmup):
            self.wait(dist.all_reduce(t, group=group, async_op=True), step, self.timeout)
        sync(device)
        start = time.perf_counter()
        if backend == "nccl":
            works = [dist.all_reduce(t, group=group, async_op=True) for _ in range(iters)]
            self.wait(works[-1], step, self.timeout)
            sync(device)
        else:
            for _ in range(iters):
                self.wait(dist.all_reduce(t, group=group, async_op=True), step, self.timeout)
        seconds = (time.perf_counter() - start) / iters
        algbw = size / seconds / 1e9
        # nccl-tests doc/PERFORMANCE.md: all-reduce bus bandwidth = algbw * 2(n-1)/n
        return {"size": size, "ranks": n, "seconds": seconds, "algbw": algbw, "busbw": algbw * 2 * (n - 1) / n}

    def lags(self, step, group, backend, device, iters):
        """Per-iteration time each rank waited inside a small all-reduce: the last to arrive waits the
        least, so max(wait) - wait is how late each rank came, with no clock shared between hosts."""
        import torch
        import torch.distributed as dist

        self.mark(step)
        t = torch.ones(MiB // 4, dtype=torch.float32, device=device)
        delay = float(self.test.get("delay", {}).get(str(self.rank), 0))
        waits = []
        for _ in range(iters):
            if delay:
                time.sleep(delay)  # tests: a straggler
            sync(device)
            start = time.perf_counter()
            self.wait(dist.all_reduce(t, group=group, async_op=True), step, self.timeout)
            sync(device)
            waits.append(time.perf_counter() - start)
        return waits

    # -- the phases ---------------------------------------------------------------------------------

    def run(self, payload):
        self.connect()
        self.watchdog = Watchdog(self)
        if self.rank == 0:
            emit("self", rank=self.rank, world_size=self.world, local_world_size=self.local_world)
        arrived = self.arrive(payload)
        if arrived["missing"]:
            return
        nodes = {int(k): v for k, v in arrived["nodes"].items()}
        self.short = list(arrived.get("short") or [])
        if not self.join_gloo():
            return
        if self.cfg.get("gpu"):
            self.mark("gpu", 4)
            if self.rank in self.short:  # no GPU of its own: rank 0 reports the node (not "invalid device ordinal")
                self.put("h2d", self.node, self.local_rank, value=True)
            else:
                self.result["gpu"] = measure_gpu(self.local_rank, self.cfg, self.h2d_turn)
        if self.cfg.get("sizes"):
            self.nccl(nodes)

    def nccl(self, nodes):
        import torch
        import torch.distributed as dist

        backend = self.cfg.get("backend") or ("nccl" if torch.cuda.is_available() else "gloo")
        if backend == "nccl" and self.short:
            return  # NCCL needs one GPU per rank: every rank skips it alike, the report names the node
        device = "cpu"
        if backend == "nccl":
            device = f"cuda:{self.local_rank}"
            torch.cuda.set_device(self.local_rank)
        self.result["backend"] = backend
        bound = datetime.timedelta(seconds=self.timeout)
        self.mark("groups", 4)
        world = dist.new_group(backend=backend, timeout=bound)
        node_lists = [nodes[k] for k in sorted(nodes)]
        mine = None
        if len(node_lists) > 1 and "node" in self.cfg.get("groups", []) and max(len(x) for x in node_lists) > 1:
            mine, _ = dist.new_subgroups_by_enumeration(node_lists, timeout=bound, backend=backend)
        warmup, iters = int(self.cfg.get("warmup", 3)), int(self.cfg.get("iters", 10))
        runs = []
        if len(node_lists) == 1 or mine is not None:
            group = world if len(node_lists) == 1 else mine
            if group is not None and dist.get_world_size(group) > 1:
                for size in self.cfg["sizes"]:
                    runs.append(("node", size, group))
        if len(node_lists) > 1 and "world" in self.cfg.get("groups", []):
            for size in self.cfg["sizes"]:
                runs.append(("world", size, world))
        for kind, size, group in runs:
            step = f"all-reduce {kind} {size}"
            self.result["steps"][step] = self.allreduce(step, group, size, backend, device, warmup, iters)
        if self.cfg.get("lag_iters") and self.world > 1:
            self.result["waits"] = self.lags("straggler", world, backend, device, int(self.cfg["lag_iters"]))
        if self.cfg.get("pairs") and len(node_lists) > 2:
            self.pairs(node_lists, backend, device, bound)

    def pairs(self, node_lists, backend, device, bound):
        """Node pairs in rounds of disjoint pairs (the circle method): a bad host is low in all its pairs."""
        import torch.distributed as dist

        go = self.decide("pairs", (self.rank == 0 and self.cfg.get("pairs") == "always") or self.low_world())
        if not go:
            return
        size = int(self.cfg.get("pair_size", self.cfg["sizes"][-1]))
        for rnd in rounds(len(node_lists)):
            lists = [node_lists[a] + node_lists[b] for a, b in rnd]
            group, _ = dist.new_subgroups_by_enumeration(lists, timeout=bound, backend=backend)
            for (a, b), ranks in zip(rnd, lists):
                if self.rank in ranks:
                    step = f"all-reduce pair {a}-{b} {size}"
                    self.result["steps"][step] = self.allreduce(step, group, size, backend, device, 1, 5)

    def low_world(self):
        if self.rank != 0:
            return False
        floor = self.cfg.get("busbw_floor")
        worlds = [v["busbw"] for k, v in self.result["steps"].items() if k.startswith("all-reduce world")]
        return bool(floor and worlds and max(worlds) < floor)


def visible_gpus(torch):
    """The GPUs this rank's torch sees (0 without usable CUDA); None when torch cannot tell."""
    try:
        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except Exception:
        return None


def cuda_ordinal(local_rank, gpus):
    """torchrun's one GPU per rank: cuda:LOCAL_RANK, or None when the node shows fewer GPUs than that
    (torch would fail with "invalid device ordinal") or none it can tell of."""
    if not isinstance(gpus, int) or not 0 <= local_rank < gpus:
        return None
    return local_rank


def short_ranks(ranks):
    """The ranks (from their arrival records) whose node shows GPUs, but none for their LOCAL_RANK."""
    short = []
    for r, v in ranks.items():
        gpus = v.get("gpus")
        if isinstance(gpus, int) and gpus > 0 and cuda_ordinal(int(v.get("local_rank", 0)), gpus) is None:
            short.append(r)
    return sorted(short)


def nccl_version(torch):
    try:
        v = torch.cuda.nccl.version()
        return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:
        return None


def nvidia_packages():
    """The nvidia-* wheels (nccl, cudnn, cublas, …) beside torch: versions that must match across nodes."""
    try:
        from importlib import metadata

        found = {}
        for d in metadata.distributions():
            name = (d.metadata["Name"] or "").lower()
            if name.startswith("nvidia-"):
                found[name] = d.version
        return dict(sorted(found.items()))
    except Exception:
        return None


def node_map(ranks):
    nodes = {}
    for r, info in sorted(ranks.items()):
        nodes.setdefault(info["node_rank"], []).append(int(r))
    return nodes


def rounds(n):
    """Round-robin pairings of n nodes: n-1 rounds (n even) in which every pair meets once."""
    items = list(range(n)) + ([None] if n % 2 else [])
    m = len(items)
    out = []
    for _ in range(m - 1):
        pairs = [(items[i], items[m - 1 - i]) for i in range(m // 2)]
        out.append([tuple(sorted(p)) for p in pairs if None not in p])
        items = [items[0], items[-1], *items[1:-1]]
    return out


def sync(device):
    if device != "cpu":
        import torch

        torch.cuda.synchronize(device)


def one_line(exc):
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def measure_gpu(index, cfg, turn=None):
    """bf16 GEMM TFLOP/s, device-memory copy GB/s and pinned host-to-device GB/s on GPU `index`; the
    host copies of one node take turns (`turn`), as per-GPU health checks measure them, instead of
    sharing the host's memory and PCIe switches."""
    import torch

    out = {"device": index}
    try:
        if not torch.cuda.is_available():
            out["skipped"] = "torch.cuda.is_available() is False"
            return out
        torch.cuda.set_device(index)
        out["name"] = torch.cuda.get_device_name(index)
        free, _ = torch.cuda.mem_get_info(index)

        def timed(fn, iters):
            fn()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3 / iters

        def gemm(n):
            a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
            for _ in range(3):
                torch.mm(a, b, out=c)
            return 2 * n**3 / timed(lambda: torch.mm(a, b, out=c), 20) / 1e12

        def memory(size):
            x = torch.empty(size // 4, dtype=torch.float32, device="cuda")
            y = torch.empty_like(x)
            return 2 * size / timed(lambda: y.copy_(x), 10) / 1e9  # read + write

        def h2d(size):
            h = torch.empty(size, dtype=torch.uint8, pin_memory=True)
            d = torch.empty(size, dtype=torch.uint8, device="cuda")
            return size / timed(lambda: d.copy_(h, non_blocking=True), 5) / 1e9

        out["gemm_tflops"] = gemm(int(cfg.get("gemm_n", 8192)))
        out["memory_gbps"] = memory(min(int(cfg.get("copy_size", 1 << 30)), free // 4) // 4 * 4)
        size = min(int(cfg.get("h2d_size", 256 * MiB)), free // 4)
        if turn is None:
            out["h2d_gbps"] = h2d(size)
        else:
            with turn():
                out["h2d_gbps"] = h2d(size)
        torch.cuda.empty_cache()
    except Exception as exc:
        out["error"] = one_line(exc)
    return out


def verdict(code):
    """Rank 0's exit code, for the other ranks to exit with: a node whose workers all exit 0 waits in
    torchrun's exit barrier for rank 0's node, which never comes when rank 0 failed."""
    fleet = Fleet({"wait_rank0": 20, "connect_timeout": 20})
    fleet.connect()
    fleet.put("verdict", value=int(code))
    emit("verdict", code=int(code))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--verdict":
        try:
            verdict(sys.argv[2])
        finally:
            sys.stdout.flush()
            hard_exit(0)
    cfg = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    payload = sys.stdin.read() if cfg.get("payload") else ""
    fleet = Fleet(cfg)
    try:
        fleet.run(payload)
    except Unreachable as exc:
        fleet.result["error"] = str(exc)
        fleet.result["unreachable"] = exc.info
    except Hang as exc:
        fleet.result["error"] = str(exc)
        fleet.result["hang"] = exc.step
    except Exception as exc:
        fleet.result["error"] = one_line(exc)
    try:
        finish(fleet)
    except Exception as exc:
        emit("end", rank=fleet.rank, result=fleet.result, ranks={}, missing=[], last={}, error=one_line(exc))
    sys.stdout.flush()
    hard_exit(0)  # never wait on a communicator that may be stuck


def finish(fleet):
    if fleet.watchdog is not None and threading.current_thread() is threading.main_thread():
        fleet.watchdog.arm("report", fleet.timeout + 30)  # finishing has its own waits; bound them too
    if fleet.store is None:
        emit("end", rank=fleet.rank, result=fleet.result, ranks={}, missing=[], last={})
        return
    fleet.put("end", fleet.rank, value=fleet.result)
    fleet.store.add(fleet.key("end", "count"), 1)
    if fleet.rank != 0:
        emit("end", rank=fleet.rank, result=fleet.result)
        code = None
        if not fleet.cfg.get("verdict_wait"):
            return
        try:
            fleet.store.wait(
                [fleet.key("verdict")], datetime.timedelta(seconds=float(fleet.cfg.get("verdict_wait", 60)))
            )
            code = fleet.get("verdict")
        except Exception:
            pass
        emit("verdict", code=code)
        return
    # ranks still working after rank 0 failed get a short grace to report; a hang already took its time
    wait = fleet.timeout if fleet.result["error"] is None else min(fleet.timeout, 5.0)
    deadline = time.monotonic() + wait
    while fleet.store.add(fleet.key("end", "count"), 0) < fleet.world and time.monotonic() < deadline:
        time.sleep(0.05)
    ranks, missing = {}, []
    for r in range(fleet.world):
        if fleet.has("end", r):
            ranks[r] = fleet.get("end", r)
        else:
            missing.append(r)
    emit("end", rank=0, result=fleet.result, ranks=ranks, missing=missing, last=fleet.last_steps())


if __name__ == "__main__":
    main()
