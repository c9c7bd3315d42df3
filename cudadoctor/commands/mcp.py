"""`cudadoctor mcp`: the doctor as a Model Context Protocol server over stdio, for coding agents.

Tools: check, gpus, pick, triage, ckpt_inspect, explain. Each runs the command line itself in a child
process (`python -m cudadoctor … --json`), so an answer is exactly what a person would get, every call is
bounded in time (the child is killed past it), and nothing a call does (NVML, the environment,
CUDA_VISIBLE_DEVICES) stays in the server. Read-only: nothing is installed or changed; `ckpt fix` and
`ckpt inspect --model` (which imports the user's code) are not offered. Secrets are masked as in every
report. Each tool answers with a one-paragraph summary, then the JSON report.

Needs the official SDK: `pip install mcp` (the `mcp` extra); `cudadoctor check` never does.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from cudadoctor.commands.output import fail
from cudadoctor.locale import _

# seconds a tool call may take: a check runs every probe (each bounded by itself); --full measures
BOUNDS = {
    "check": 180.0,
    "check_full": 600.0,
    "gpus": 30.0,
    "pick": 30.0,
    "triage": 30.0,
    "ckpt": 180.0,
    "explain": 30.0,
}
MAX_OUTPUT = 8 << 20  # a JSON report of a 128-GPU box with thousands of processes stays well below
MAX_PASTE = 2 << 20  # as `cudadoctor triage`
TERM_GRACE = 5.0  # seconds a stopped child has to end what it started, after SIGTERM


class ToolFailed(Exception):
    """The child could not give an answer (it timed out or crashed): the agent gets this as a tool error."""


def _bound(seconds: float) -> float:
    """CUDADOCTOR_MCP_TIMEOUT caps every tool's time (an agent with a short budget of its own)."""
    try:
        cap = float(os.environ.get("CUDADOCTOR_MCP_TIMEOUT", ""))
    except ValueError:
        return seconds
    return min(seconds, cap) if cap > 0 else seconds


def run_cudadoctor(args: list[str], bound: float, stdin: str | None = None) -> tuple[int, str, str]:
    """`python -m cudadoctor ARGS` through the bounded runner (backends/child.run_child), as every child the
    doctor starts: its own process group, its output bounded; past the bound SIGTERM first, so that the
    child's own handler ends the probes it started (each in a session of its own), then SIGKILL."""
    from cudadoctor.backends.child import run_child

    bound = _bound(bound)
    env = {**os.environ, "CUDADOCTOR_LANG": os.environ.get("CUDADOCTOR_LANG", "en"), "NO_COLOR": "1"}
    res = run_child(
        [sys.executable, "-m", "cudadoctor", *args],
        bound,
        env=env,
        stdin=stdin,
        max_stdout=MAX_OUTPUT,
        grace=TERM_GRACE,
    )
    if res.timed_out:
        raise ToolFailed(f"cudadoctor {args[0]} did not finish within {bound:g} s; it was stopped")
    if res.flooded:
        raise ToolFailed(f"cudadoctor {args[0]} printed more than {MAX_OUTPUT >> 20} MiB; it was stopped")
    if res.returncode is None:
        raise ToolFailed(f"cudadoctor {args[0]}: {res.failure()}")
    return res.returncode, res.stdout, res.stderr[-4000:]


def summary(data: dict[str, Any]) -> str:
    """The verdict, the codes raised and the exit code: what an agent reads first."""
    # a finding the config's select/ignore left out is in the JSON (marked), but not what the agent reads first
    findings = [
        f for f in data.get("findings") or [] if f.get("severity") in ("error", "warning") and not f.get("ignored")
    ]
    lines = [str(data.get("verdict") or data.get("status") or "")]
    if findings:
        lines.append(
            "Findings: "
            + "; ".join(f"{f['code']} ({f['severity']}) {f.get('title', '')}" for f in findings[:12])
            + (f"; and {len(findings) - 12} more" if len(findings) > 12 else "")
        )
        lines.append("Each finding's fix commands are in the JSON below; `explain` gives a code's page.")
    lines.append(f"Exit code {data.get('exit_code')}.")
    return "\n".join(lines)


def _answer(args: list[str], bound: float, stdin: str | None = None) -> list[str]:
    code, out, err = run_cudadoctor(args, bound, stdin)
    try:
        data = json.loads(out)
    except ValueError:
        message = err.strip().splitlines()[-1] if err.strip() else f"exit code {code}"
        raise ToolFailed(message.removeprefix("cudadoctor: ")) from None
    if isinstance(data, dict) and "findings" in data:
        return [summary(data), json.dumps(data, indent=1)]
    return [json.dumps(data, indent=1)]


def _csv(value: list[str] | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    return ",".join(value) or None


def tool_check(
    only: list[str] | None = None,
    skip: list[str] | None = None,
    full: bool = False,
    python: str | None = None,
    require_gpus: int | None = None,
    min_free_memory: str | None = None,
) -> list[str]:
    args = ["check", "--json"]
    for option, value in (("--only", _csv(only)), ("--skip", _csv(skip)), ("--python", python)):
        if value:
            args += [option, value]
    if full:
        args.append("--full")
    if require_gpus is not None:
        args += ["--require-gpus", str(require_gpus)]
    if min_free_memory:
        args += ["--min-free-memory", min_free_memory]
    return _answer(args, BOUNDS["check_full" if full else "check"])


def tool_gpus() -> list[str]:
    code, out, err = run_cudadoctor(["gpus", "--json"], BOUNDS["gpus"])
    try:
        data = json.loads(out)
    except ValueError:
        raise ToolFailed(err.strip().splitlines()[-1] if err.strip() else f"exit code {code}") from None
    devices = data.get("gpus") or []
    head = f"{len(devices)} GPU(s)" + (
        ": " + "; ".join(f"GPU {d.get('index')} {d.get('name')}" for d in devices[:16]) if devices else ""
    )
    if err.strip():
        head += "\n" + err.strip().splitlines()[-1].removeprefix("cudadoctor: ")
    return [head + f"\nExit code {code}.", json.dumps(data, indent=1)]


def tool_pick(n: int = 1, min_free: str | None = None, min_cc: str | None = None) -> list[str]:
    args = ["gpus", "--pick", str(n), "--json"]
    if min_free:
        args += ["--min-free", min_free]
    if min_cc:
        args += ["--min-cc", min_cc]
    code, out, err = run_cudadoctor(args, BOUNDS["pick"])
    try:
        data = json.loads(out)
    except ValueError:
        raise ToolFailed(err.strip().splitlines()[-1] if err.strip() else f"exit code {code}") from None
    pick = data.get("pick") or {}
    if pick.get("lines"):
        head = "Run this before starting the program (it selects the GPUs by UUID):\n" + "\n".join(pick["lines"])
    else:
        head = err.strip().splitlines()[-1].removeprefix("cudadoctor: ") if err.strip() else "too few GPUs qualify"
    return [head + f"\nExit code {code}.", json.dumps(data, indent=1)]


def tool_triage(text: str) -> list[str]:
    if len(text) > MAX_PASTE:
        raise ToolFailed(f"the text is over {MAX_PASTE >> 20} MiB")
    return _answer(["triage", "-", "--json"], BOUNDS["triage"], stdin=text)


def tool_ckpt_inspect(path: str) -> list[str]:
    return _answer(["ckpt", "inspect", path, "--json"], BOUNDS["ckpt"])


def tool_explain(code: str) -> list[str]:
    rc, out, err = run_cudadoctor(["explain", code], BOUNDS["explain"])
    if rc != 0:
        raise ToolFailed(err.strip().splitlines()[-1].removeprefix("cudadoctor: ") if err.strip() else f"exit {rc}")
    return [out]


DESCRIPTIONS = {
    "check": "Diagnose this machine: NVIDIA driver, CUDA driver library, toolkit, PCI, and the torch of an "
    "interpreter (python: a path; default the server's). Returns the verdict, every finding with its fix "
    "commands, and the JSON report. only/skip: probe names (torch, system, pci, driver, cuda_driver, toolkit, "
    "platform, bandwidth, smoke, compile). full: also measure copy bandwidth and a training smoke test (slow). "
    "require_gpus/min_free_memory (e.g. '20GiB') make it a gate.",
    "gpus": "The GPUs NVML sees now: name, memory total/free/used, utilisation, health, temperature, and the "
    "processes holding memory (secrets in command lines masked).",
    "pick": "Choose the n GPUs with the most free memory that qualify (min_free like '20GiB', min_cc like '8.0') "
    "among those CUDA_VISIBLE_DEVICES shows; returns the export line to run. Changes nothing itself.",
    "triage": "A verdict from text someone pasted (collect_env, nvidia-smi, pip list, a torch/CUDA error): "
    "the cause, the fix, and what to ask for when the text shows too little.",
    "ckpt_inspect": "Why torch.load fails on a checkpoint file (path), read without running its pickle: "
    "format, dtypes, devices it was saved on, prefixes, weights_only, with the exact fix.",
    "explain": "The documentation page of a cudadoctor finding code (e.g. CD202), with its usual fixes.",
}


def _as_tool_errors(fn: Any, tool_error: type[Exception]) -> Any:
    """An expected failure (a bound ran out, a bad argument) is the SDK's ToolError: the agent reads one line,
    and the server logs no traceback."""
    import functools

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolFailed as exc:
            raise tool_error(str(exc)) from None

    return call


def build_server() -> Any:
    """The MCP server with the six tools (the SDK's MCPServer; FastMCP in SDK 1.x)."""
    try:
        from mcp.server.mcpserver import MCPServer as Server
    except ImportError:  # SDK 1.x
        from mcp.server.fastmcp import FastMCP as Server
    try:
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # SDK 1.x
        from mcp.server.fastmcp.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from cudadoctor.version import __version__

    server = Server(
        "cudadoctor",
        log_level="WARNING",
        instructions="Tells why PyTorch cannot use the NVIDIA GPU, or how well it can, with the commands that fix "
        "it. Start with `check`; use `triage` for text a user pasted. Read-only: nothing is installed or changed.",
        **({"version": __version__} if "version" in Server.__init__.__code__.co_varnames else {}),
    )
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    for name, fn in (
        ("check", tool_check),
        ("gpus", tool_gpus),
        ("pick", tool_pick),
        ("triage", tool_triage),
        ("ckpt_inspect", tool_ckpt_inspect),
        ("explain", tool_explain),
    ):
        server.add_tool(
            _as_tool_errors(fn, ToolError),
            name=name,
            description=DESCRIPTIONS[name],
            annotations=read_only,
            structured_output=False,
        )
    return server


@click.command()
def mcp() -> None:
    """Serve the Model Context Protocol over stdio (for coding agents); needs `pip install mcp`."""
    try:
        server = build_server()
    except ImportError:
        from cudadoctor.advice import shell

        fail(
            _("cudadoctor mcp needs the MCP SDK: {install}").format(
                install=f"{shell.word(sys.executable, lead=True)} -m pip install mcp"
            )
        )
    server.run("stdio")
