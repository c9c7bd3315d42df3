"""Run as a script by `cudadoctor fleet --nnodes … --nproc-per-node …` in the target interpreter (stdlib +
torch only): torchrun's own launcher (torch.distributed.run), in this process, with the fleet worker as
its program. Never imported by cudadoctor itself.

What torchrun's `main` adds on top of `run` is the part a gate does not want: a worker that exits
non-zero (the gate failing) becomes a ChildFailedError whose traceback and failure table end the output.
Here that error is caught and turned into data; the elastic agent's log lines are kept off stderr. The
workers inherit stdout and stderr: rank 0's report passes through unchanged, and the last stdout line is
MARK + {"failures": {rank: exit code}} or {"error": "…"}.

argv[1]: JSON list, torchrun's arguments (launcher options, then -m cudadoctor fleet and its options).
"""

import json
import logging
import os
import sys

# the helper beside this script (also under PYTHONSAFEPATH); leave_path() takes this directory off again
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _cudadoctor_child import hard_exit, leave_path

leave_path()

MARK = "CUDADOCTOR_FLEET_LAUNCH "
LAUNCHER = "CUDADOCTOR_FLEET_LAUNCHER"  # the workers' parent: they end when it does (backends/fleet.py)


def emit(result):
    sys.stdout.write("\n" + MARK + json.dumps(result) + "\n")
    sys.stdout.flush()


def one_line(exc):
    text = " ".join(str(exc).split())
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:500]


def rendezvous_error(exc, args):
    """What a failed rendezvous means, in the launcher options the user gave."""
    where = args.rdzv_endpoint or f"{args.master_addr}:{args.master_port}"
    if type(exc).__name__ == "RendezvousTimeoutError":
        conf = dict(kv.partition("=")[::2] for kv in (args.rdzv_conf or "").split(",") if "=" in kv)
        seconds = conf.get("join_timeout", "600")
        return f"not all {args.nnodes} nodes joined the rendezvous at {where} within join_timeout ({seconds} s)"
    return f"the rendezvous at {where} failed: {one_line(exc)}"


def quiet_logs():
    """torch.distributed's loggers (the agent's start-up banner, the OMP_NUM_THREADS notice, each failed
    worker) write nowhere: what went wrong comes back as data, and the doctor says it once. Called after
    torch's import, which gives that logger its handler."""
    logger = logging.getLogger("torch.distributed")
    logger.handlers = [logging.NullHandler()]
    logger.propagate = False


def failures(exc):
    out = {}
    for rank, failure in (getattr(exc, "failures", None) or {}).items():
        code = getattr(failure, "exitcode", None)
        out[str(rank)] = code if isinstance(code, int) else None
    return out


def main():
    argv = json.loads(sys.argv[1])
    os.environ[LAUNCHER] = str(os.getpid())
    try:
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
        from torch.distributed.run import parse_args, run
    except Exception as exc:
        emit({"error": one_line(exc)})
        return
    quiet_logs()
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # argparse: its usage line is already on stderr
        emit({"error": f"torchrun's options were refused (exit {exc.code})"})
        return
    try:
        run(args)
    except ChildFailedError as exc:
        emit({"failures": failures(exc)})
    except Exception as exc:
        if "Rendezvous" in type(exc).__name__:  # a timeout, a refused endpoint, a closed run
            emit({"error": rendezvous_error(exc, args)})
        else:
            emit({"error": one_line(exc)})
    else:
        emit({"failures": {}})


if __name__ == "__main__":
    try:
        main()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        hard_exit(0)
