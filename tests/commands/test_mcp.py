"""`cudadoctor mcp` as a coding agent uses it: the official SDK's client starts the server over stdio,
lists the tools and calls every one, against a fake machine."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import LIBRARY_DIRS, ROOT, fake_machine_env

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

pytestmark = pytest.mark.fakenvml

TWO_GPUS = """\
driver 550.54.14
cuda 12040
device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=80000000000 util=90 temp=60 gen=4/4 width=16/16
device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=1073741824 util=0 temp=35 gen=4/4 width=16/16
"""


def session_env(fake_libs, tmp_path: Path, extra: dict | None = None) -> dict[str, str]:
    machine = tmp_path / "machine.txt"
    machine.write_text(TWO_GPUS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML", LIBRARY_DIRS))}
    env.update(fake_machine_env(machine, [str(d) for d in fake_libs], env.get("LD_LIBRARY_PATH", "")))
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra or {})
    return env


def call_tools(env: dict[str, str], calls: list[tuple[str, dict]]) -> tuple[list, list]:
    """List the tools, then make each call; (tools, results) with each result as (is_error, [texts])."""

    async def main() -> tuple[list, list]:
        with anyio.fail_after(240):
            return await session(calls)

    async def session(calls: list[tuple[str, dict]]) -> tuple[list, list]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "cudadoctor", "mcp"], env=env)
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                results = []
                for name, arguments in calls:
                    r = await session.call_tool(name, arguments)
                    results.append((r.is_error, [c.text for c in r.content]))
                return tools, results

    return anyio.run(main)


def test_every_tool_answers_as_the_command_line_does(fake_libs, tmp_path: Path, run_cli):
    torch = pytest.importorskip("torch")
    ckpt = tmp_path / "model.pt"
    torch.save({"module.fc.weight": torch.zeros(2, 2)}, ckpt)
    tools, results = call_tools(
        session_env(fake_libs, tmp_path),
        [
            ("check", {"skip": ["torch"], "min_free_memory": "70GiB"}),
            ("gpus", {}),
            ("pick", {"n": 1, "min_free": "40GiB"}),
            ("pick", {"n": 2, "min_free": "40GiB"}),
            ("triage", {"text": "RuntimeError: Found no NVIDIA driver on your system."}),
            ("ckpt_inspect", {"path": str(ckpt)}),
            ("explain", {"code": "CD202"}),
            ("explain", {"code": "XX"}),
        ],
    )
    assert sorted(t.name for t in tools) == ["check", "ckpt_inspect", "explain", "gpus", "pick", "triage"]
    assert all(t.annotations.read_only_hint and not t.annotations.destructive_hint for t in tools)
    (check_err, check), (_, gpus), (_, pick1), (_, pick2), (_, triage), (_, ckpt_out), (_, explain), bad = results

    # check: a summary first, then the same JSON report the command line prints
    cli = run_cli("check", "--skip", "torch", "--min-free-memory", "70GiB", "--json", machine=TWO_GPUS)
    report = json.loads(check[1])
    assert not check_err and [f["code"] for f in report["findings"]] == cli.codes()
    assert check[0].startswith(cli.json["verdict"]) and f"Exit code {cli.code}." in check[0]
    assert "CD502" in check[0]  # the unmet requirement is named in the summary

    assert gpus[0].startswith("2 GPU(s): GPU 0 NVIDIA A100-SXM4-80GB")
    uuid1 = json.loads(gpus[1])["gpus"][1]["uuid"]
    assert f"export CUDA_VISIBLE_DEVICES={uuid1}" in pick1[0]
    assert "only 1 of 2 GPUs qualify" in pick2[0] and "Exit code 4." in pick2[0]
    assert "CD911" in triage[0]
    assert json.loads(ckpt_out[1])["command"] == "ckpt"
    assert explain[0].startswith("CD202")
    assert bad[0] is True and "unknown finding code" in bad[1][0]
    assert "None" not in "".join(check + gpus + pick1 + triage)


def test_a_tool_that_outlasts_its_bound_is_stopped_and_says_so(fake_libs, tmp_path: Path):
    _, results = call_tools(
        session_env(fake_libs, tmp_path, {"CUDADOCTOR_MCP_TIMEOUT": "0.05"}),
        [("check", {}), ("explain", {"code": "CD100"})],
    )
    (err, texts), _ = results
    assert err is True and "did not finish within 0.05 s" in texts[0]


def test_without_the_sdk_the_command_says_what_to_install(run_cli, tmp_path: Path):
    blocker = tmp_path / "nomcp"
    (blocker / "mcp").mkdir(parents=True)
    (blocker / "mcp" / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    r = run_cli("mcp", env={"PYTHONPATH": f"{blocker}{os.pathsep}{ROOT}"})
    # the install names the interpreter cudadoctor runs in: a bare pip may be another Python's
    assert r.code == 2
    assert r.stderr.strip() == f"cudadoctor: cudadoctor mcp needs the MCP SDK: {sys.executable} -m pip install mcp"
