"""The Python API (`import cudadoctor`) as a notebook user calls it: in a fresh interpreter against a fake
machine, and the documented notebook docs/examples/notebook.ipynb executed in a real Jupyter kernel."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import H100_HEALTHY, LIBRARY_DIRS, ROOT, fake_machine_env

pytestmark = pytest.mark.fakenvml

TWO_GPUS = """\
driver 550.54.14
cuda 12040
device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=80000000000 util=90 temp=60 gen=4/4 width=16/16
device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85899345920 used=1073741824 util=0 temp=35 gen=4/4 width=16/16
"""


@pytest.fixture
def api(fake_libs, tmp_path: Path):
    """Run a Python snippet that uses cudadoctor in a fresh interpreter on a fake machine; its stdout as JSON."""

    def run(code: str, machine: str | None = H100_HEALTHY, env: dict | None = None) -> dict:
        e = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_VISIBLE", "FAKE_NVML", LIBRARY_DIRS))}
        e["PYTHONPATH"] = str(ROOT)
        if machine is not None:
            path = tmp_path / "machine.txt"
            path.write_text(machine)
            e.update(fake_machine_env(path, [str(d) for d in fake_libs], e.get("LD_LIBRARY_PATH", "")))
        e.update(env or {})
        script = (
            "import json, sys\nimport cudadoctor\nout = {}\n" + textwrap.dedent(code) + "\nprint(json.dumps(out))\n"
        )
        p = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=e, cwd=tmp_path, timeout=120
        )
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.splitlines()[-1])

    return run


def test_check_returns_the_report_the_command_line_gives(api, run_cli):
    out = api(
        """
        r = cudadoctor.check(skip="torch", min_free_memory="70GiB")
        out.update(status=r.status, code=r.exit_code, codes=r.codes(), ok=r.ok, data=json.loads(r.to_json()))
        out["torch_imported"] = "torch" in sys.modules
        """
    )
    cli = run_cli("check", "--skip", "torch", "--min-free-memory", "70GiB", "--json", machine=H100_HEALTHY)
    assert out["codes"] == cli.codes()
    assert out["status"] == cli.json["status"] and out["code"] == cli.code
    assert out["ok"] is (cli.code == 0)
    assert out["data"]["findings"] == cli.json["findings"]
    assert out["torch_imported"] is False


def test_check_select_and_ignore_as_the_command_line_does(api, run_cli):
    """`ignore` sets the failing gate's findings aside as `--ignore` does: the status no longer counts it,
    and the JSON keeps it with "ignored": true; an unknown code is a usage error, as on the command line."""
    out = api(
        """
        r = cudadoctor.check(skip="torch", min_free_memory="100GiB", ignore="CD50")
        out.update(status=r.status, code=r.exit_code, codes=r.codes(), data=json.loads(r.to_json()))
        try:
            cudadoctor.check(skip="torch", select=["CD9999"])
        except cudadoctor.UsageError as e:
            out["unknown"] = str(e)
        """
    )
    cli = run_cli(
        "check", "--skip", "torch", "--min-free-memory", "100GiB", "--ignore", "CD50", "--json", machine=H100_HEALTHY
    )
    assert not {"CD501", "CD502"} & set(out["codes"]) and out["code"] == cli.code == 0
    assert out["data"]["findings"] == cli.json["findings"]
    assert "CD502" in [f["code"] for f in out["data"]["findings"] if f.get("ignored")]
    assert "CD9999" in out["unknown"]


def test_check_with_torch_never_imports_torch_in_the_caller(api):
    out = api('r = cudadoctor.check(only="torch")\nout.update(torch="torch" in sys.modules, ran=r.status)')
    assert out["torch"] is False
    assert out["ran"] in ("healthy", "warnings", "problems")


def test_usage_errors_are_exceptions_not_exits(api):
    out = api(
        """
        for kw in ({"only": "bogus"}, {"min_free_memory": "lots"}, {"frobnicate": 1}, {"python": "/no/such/python"}):
            try:
                cudadoctor.check(**kw)
                out[str(kw)] = "returned"
            except cudadoctor.UsageError as exc:
                out[str(kw)] = str(exc)
        """
    )
    assert all(v != "returned" for v in out.values()), out
    assert "bogus" in out["{'only': 'bogus'}"]
    assert "lots" in out["{'min_free_memory': 'lots'}"]
    assert "frobnicate" in out["{'frobnicate': 1}"]
    assert "no such file" in out["{'python': '/no/such/python'}"]


def test_gpus_lists_devices_and_raises_when_nvml_cannot_tell(api):
    out = api("out['gpus'] = [(g.index, g.name, g.memory_free) for g in cudadoctor.gpus()]", machine=TWO_GPUS)
    assert [g[:2] for g in out["gpus"]] == [[0, "NVIDIA A100-SXM4-80GB"], [1, "NVIDIA A100-SXM4-80GB"]]
    assert out["gpus"][1][2] > out["gpus"][0][2]
    out = api(
        """
        try:
            out['gpus'] = cudadoctor.gpus()
        except cudadoctor.GpuQueryError as exc:
            out.update(error=str(exc), code=exc.code)
        """,
        machine=None,
        env={LIBRARY_DIRS: "/nonexistent"},
    )
    assert "gpus" not in out and out["code"] and out["error"]  # never an empty list that claims "no GPU"


def test_pick_sets_cuda_visible_devices_to_the_freest_gpu(api):
    out = api(
        """
        import os
        try:
            cudadoctor.pick(2, min_free="40GiB")
        except cudadoctor.NotEnoughGPUs as exc:
            out.update(short=str(exc), rejected=sorted(exc.rejected))
        out["unset"] = "CUDA_VISIBLE_DEVICES" not in os.environ  # a refusal changes nothing
        out["picked"] = cudadoctor.pick(1, min_free="40GiB")
        out["env"] = os.environ["CUDA_VISIBLE_DEVICES"]
        out["uuids"] = [g.uuid for g in cudadoctor.gpus()]
        """,
        machine=TWO_GPUS,
    )
    assert "only 1 of 2 GPUs qualify, 2 requested" in out["short"] and out["rejected"] == [0]
    assert out["unset"] is True
    assert out["picked"] == [out["uuids"][1]] and out["env"] == out["uuids"][1]


def test_pick_refuses_once_cuda_is_initialised_in_the_process(api):
    out = api(
        """
        import types
        torch = types.ModuleType("torch")  # a stand-in: the CPU torch here cannot initialise CUDA
        torch.cuda = types.SimpleNamespace(is_initialized=lambda: True)
        sys.modules["torch"] = torch
        try:
            cudadoctor.pick(1)
            out["result"] = "picked"
        except RuntimeError as exc:
            out["result"] = str(exc)
        """,
        machine=TWO_GPUS,
    )
    assert "already initialised" in out["result"]


def test_triage_and_a_report_in_markdown_and_html(api):
    out = api(
        """
        r = cudadoctor.triage("RuntimeError: Found no NVIDIA driver on your system.")
        out.update(codes=r.codes(), md=r._repr_markdown_(), html=r._repr_html_(), text=str(r))
        try:
            cudadoctor.triage("hello")
        except cudadoctor.UsageError as exc:
            out["nothing"] = str(exc)
        """,
        machine=None,
    )
    assert out["codes"] and out["md"].startswith("## cudadoctor")
    assert out["html"].startswith('<div class="cudadoctor-report"') and "<script" not in out["html"]
    assert out["codes"][0] in out["html"] and out["codes"][0] in out["text"]
    assert "nothing to diagnose" in out["nothing"]


def test_html_escapes_everything_from_outside():
    from cudadoctor.render.html import render

    data = {
        "status": "problems",
        "verdict": "<img src=x onerror=alert(1)>",
        "findings": [
            {"code": "CD1", "severity": "error", "title": "<b>t</b>", "fix": [{"when": "w", "commands": ["a && b"]}]}
        ],
    }
    out = render(data)
    assert "<img" not in out and "&lt;img" in out and "&lt;b&gt;t" in out and "a &amp;&amp; b" in out
    assert "http" not in out  # no external assets


def test_inspect_checkpoint(api, tmp_path: Path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "sd.pt"
    torch.save({"module.fc.weight": torch.zeros(2, 2)}, path)
    out = api(
        f"r = cudadoctor.inspect_checkpoint({str(path)!r})\nout.update(codes=r.codes(), torch='torch' in sys.modules)"
    )
    assert out["codes"] and out["torch"] is False


def test_the_documented_notebook_runs_and_shows_the_verdict(fake_libs, tmp_path: Path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    machine = tmp_path / "machine.txt"
    machine.write_text(TWO_GPUS)
    for k in [k for k in os.environ if k.startswith(("CUDA_VISIBLE", "FAKE_NVML"))]:
        monkeypatch.delenv(k)
    for k, v in fake_machine_env(machine, [str(d) for d in fake_libs], os.environ.get("LD_LIBRARY_PATH", "")).items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.read(ROOT / "docs" / "examples" / "notebook.ipynb", as_version=4)
    nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    htmls = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert len(htmls) == 2  # check() and triage() as the last line of a cell show themselves
    check = next(c for c in nb.cells if c.source.startswith("import cudadoctor"))
    assert "HEALTHY" in check.outputs[0]["data"]["text/html"] or "CD" in check.outputs[0]["data"]["text/html"]
    # an unknown is never shown as None (a Python value in a sentence, "torch.version.cuda is None", is fine)
    assert not [h for h in htmls if re.search(r"(?<!\bis )\bNone\b", h)]
    last = outputs[-1]["data"]["text/plain"]
    assert last == "False"  # torch was never imported into the kernel
    picked = next(o["text"] for o in outputs if o.output_type == "stream" and "GPU-" in o.get("text", ""))
    assert picked  # pick() chose the free A100 and set CUDA_VISIBLE_DEVICES
    html_file = tmp_path / "notebook_output.html"
    html_file.write_text("<!doctype html><meta charset=utf-8><body>" + "".join(htmls) + "</body>")
    _screenshot(html_file, tmp_path)


def _screenshot(html_file: Path, tmp_path: Path) -> None:
    """Look at the HTML in a headless browser, light and dark, where one is installed (CI installs Debian's
    chromium); the PNGs land beside the test's files (and in $CUDADOCTOR_SCREENSHOTS when set)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        return
    keep = os.environ.get("CUDADOCTOR_SCREENSHOTS")
    for theme in ("light", "dark"):
        page = html_file
        if theme == "dark":
            page = tmp_path / "dark.html"
            page.write_text(html_file.read_text().replace("<body>", '<body style="background:#1e1e1e;color:#d4d4d4">'))
        png = tmp_path / f"notebook_{theme}.png"
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={tmp_path / 'chromium'}",
                "--window-size=900,1400",
                f"--screenshot={png}",
                page.as_uri(),
            ],
            capture_output=True,
            timeout=120,
        )
        assert png.exists() and png.stat().st_size > 10_000, f"no {theme} screenshot"
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(png, Path(keep) / png.name)
