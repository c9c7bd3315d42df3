"""`cudadoctor ckpt`: every fix a report prints works as printed, and the fixes of one report agree.

Realistic checkpoints are written at run time by a training script run as a script (so its classes are
pickled as `__main__.X`, as in real life); `ckpt inspect` (and `ckpt fix`) run as the user runs them; then
every fix line and snippet of the JSON report is run by tests/fixrunner.py: snippets by this torch against
the checkpoint, `cudadoctor` lines through the CLI, shell lines through `bash -n`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixrunner import run_fixes
from tests.helpers import by_code

torch = pytest.importorskip("torch")

TRAIN = """
import argparse
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


if __name__ == "__main__":
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    args = argparse.Namespace(lr=1e-3, epochs=10, data="/data/train")
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "args": args}, "train.pt")
    torch.save(model, "whole_model.pt")
    torch.save({"state_dict": model.state_dict(), "config": {"hidden": 8, "classes": 3}}, "weights_config.pt")
    torch.save(torch.nn.DataParallel(model).state_dict(), "ddp.pt")
    torch.save({"model": model, "optimizer": opt.state_dict(), "epoch": 3}, "model_in_dict.pt")
"""
OID = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
# the user's own model, which a snippet that ends in model.load_state_dict(...) loads into
MODEL = {"model": "model = __import__('train').Net()"}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's project: train.py, the checkpoints it saved (run as a script), and a Git LFS pointer."""
    root = tmp_path_factory.mktemp("project")
    (root / "train.py").write_text(TRAIN)
    subprocess.run([sys.executable, "train.py"], cwd=root, check=True, timeout=120)
    (root / "lfs.pt").write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 548105171\n")
    return root


def inspect(run_cli, path: Path) -> tuple[str, dict]:
    """What the user sees (text), and the same report as JSON."""
    text = run_cli("ckpt", "inspect", str(path))
    data = run_cli("ckpt", "inspect", str(path), "--format", "json")
    assert text.code == data.code and data.stdout.strip(), text.stderr
    return text.stdout, data.json


def fix_lines(finding: dict) -> list[str]:
    return [c for fx in finding["fix"] for c in fx["commands"]]


def loads(data: dict) -> set[str]:
    """Every way the report's snippets load the file (the lines up to and including torch.load)."""
    out = set()
    for f in data["findings"]:
        for fx in f["fix"]:
            lines = fx["commands"]
            at = next((i for i, ln in enumerate(lines) if "torch.load(" in ln), None)
            if at is not None:
                out.add("\n".join(lines[: at + 1]))
    return out


def test_training_checkpoint_with_namespace_fixes_agree_and_run(run_cli, project):
    path = project / "train.pt"
    text, data = inspect(run_cli, path)
    f = by_code(data)
    assert data["exit_code"] == 1 and {"CD620", "CD625"} <= set(f)
    assert "A training checkpoint" in f["CD625"]["title"]
    # one way to load it in the whole report, the one CD620 gives: weights_only=True refuses a plain load
    assert loads(data) == {
        "import torch\nfrom argparse import Namespace\nwith torch.serialization.safe_globals([Namespace]):\n"
        f"    ckpt = torch.load({str(path)!r}, map_location='cpu')"
    }
    # every `ckpt fix` the report prints passes --trust: without it, fix refuses this file (exit 2)
    fixes = [ln for ln in fix_lines(f["CD620"]) + fix_lines(f["CD625"]) if ln.startswith("cudadoctor ckpt fix")]
    assert fixes and all(ln.endswith("--state-dict-only --trust") for ln in fixes)
    assert "with torch.serialization.safe_globals([Namespace]):" in text and "--state-dict-only --trust" in text
    runs = run_fixes(data, run_cli, cwd=project, given=MODEL)
    assert {r.kind for r in runs} == {"python", "cudadoctor"} and len(runs) == 4


def test_whole_model_snippet_imports_the_class_from_the_training_script(run_cli, project, tmp_path):
    path = project / "whole_model.pt"
    text, data = inspect(run_cli, path)
    f = by_code(data)["CD620"]
    assert f["tables"][0]["rows"][0] == ["__main__.Net", "defined in train.py"]
    assert "__main__.Net                    defined in train.py\n" in text  # the note whole, not cut
    snippet = next(fx["commands"] for fx in f["fix"] if any("safe_globals" in c for c in fx["commands"]))
    assert f"sys.path.insert(0, {str(project)!r})" in snippet and "from train import Net" in snippet
    assert "(Net, '__main__.Net')" in snippet[-2]  # allow-listed under the name the pickle uses
    # the snippets run from anywhere (the script's folder is put on sys.path), not only beside train.py
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_fixes(
        data,
        run_cli,
        cwd=elsewhere,
        given={"model": f"import sys; sys.path.insert(0, {str(project)!r})\n" + MODEL["model"]},
    )
    # the state dict `ckpt fix --state-dict-only --trust` writes loads into the model
    out = tmp_path / "weights.pt"
    r = run_cli("ckpt", "fix", str(path), "--out", str(out), "--state-dict-only", "--trust", "--format", "json")
    assert r.code == 0 and "CD645" in r.codes(), r.stdout + r.stderr
    run_fixes(r.json, run_cli, cwd=project, given=MODEL)


def test_a_class_of_an_unknown_script_is_named_not_guessed(run_cli, project, tmp_path):
    """The checkpoint alone, far from the script that saved it: the snippet names the script to import
    from as YOUR_SCRIPT, and offers no `ckpt fix`, which could not find the class either."""
    alone = tmp_path / "downloads"
    alone.mkdir()
    path = alone / "whole_model.pt"
    shutil.copy(project / "whole_model.pt", path)
    r = run_cli("ckpt", "inspect", str(path), "--format", "json")  # cwd: the test's tmp_path, no .py
    f = by_code(r.json)["CD620"]
    assert f["tables"][0]["rows"][0] == ["__main__.Net", "defined in no .py file here"]
    assert not any(ln.startswith("cudadoctor ckpt fix") for ln in fix_lines(f))
    assert "from YOUR_SCRIPT import Net" in fix_lines(f)
    run_fixes(r.json, run_cli, cwd=project, given=MODEL, placeholders={"YOUR_SCRIPT": "train"})
    # asked anyway, `ckpt fix --trust` says why it cannot, in one line, rather than a pickle traceback
    r = run_cli("ckpt", "fix", str(path), "--out", str(alone / "w.pt"), "--state-dict-only", "--trust")
    assert r.code == 2 and not (alone / "w.pt").exists()
    assert r.stderr.startswith("cudadoctor: whole_model.pt holds Net, a class of the script that saved it")
    assert len(r.stderr.strip().splitlines()) == 1


def test_weights_beside_a_config_are_not_a_training_checkpoint(run_cli, project):
    text, data = inspect(run_cli, project / "weights_config.pt")
    f = by_code(data)
    assert data["exit_code"] == 0 and "CD622" in f
    title = f["CD625"]["title"]
    assert title == "The model's weights are in ['state_dict'], beside config (dict)"
    assert "training checkpoint" not in text
    assert "--trust" not in json.dumps(data["findings"])  # nothing to trust: weights_only=True reads it
    runs = run_fixes(data, run_cli, cwd=project, given=MODEL)
    assert [r.kind for r in runs] == ["python", "cudadoctor"]


def test_a_pickled_module_in_a_dict_is_loaded_as_a_module_not_a_state_dict(run_cli, project):
    _, data = inspect(run_cli, project / "model_in_dict.pt")
    f = by_code(data)["CD625"]
    assert "model.load_state_dict(ckpt['model'].state_dict())" in fix_lines(f)
    run_fixes(data, run_cli, cwd=project, given=MODEL)


def test_module_prefix_fixes_run(run_cli, project):
    _, data = inspect(run_cli, project / "ddp.pt")
    assert data["exit_code"] == 0 and "CD630" in by_code(data)
    runs = run_fixes(data, run_cli, cwd=project, given=MODEL)
    assert [r.kind for r in runs] == ["python", "cudadoctor"]


def test_lfs_pointer_shows_the_whole_oid(run_cli, project):
    text, data = inspect(run_cli, project / "lfs.pt")
    assert data["exit_code"] == 1 and [f["code"] for f in data["findings"]] == ["CD600"]
    assert OID in text  # the whole oid: what identifies the real file (sha256sum), never cut
    assert all(len(line) <= 80 for line in text.splitlines() if "cudadoctor ckpt" not in line)
    runs = run_fixes(data, run_cli, cwd=project)
    assert {r.kind for r in runs} == {"shell"}


def test_a_file_never_to_load_gets_no_load_advice(run_cli, project, tmp_path):
    """CD621 says never load it: no other finding of the report may say how to load it or fix it."""
    path = tmp_path / "evil.pt"
    evil = (
        "import os, torch\nclass Evil:\n    def __reduce__(self):\n        return (os.system, ('true',))\n"
        "net = __import__('train').Net()\n"
        f"torch.save({{'model': torch.nn.DataParallel(net).state_dict(), 'epoch': 1, 'x': Evil()}}, {str(path)!r})\n"
    )
    subprocess.run([sys.executable, "-c", evil], cwd=project, check=True, timeout=120)
    _, data = inspect(run_cli, path)
    f = by_code(data)
    assert {"CD621", "CD625", "CD630"} <= set(f)
    others = [ln for code, x in f.items() if code != "CD621" for ln in fix_lines(x)]
    assert not [ln for ln in others if "torch.load(" in ln or "ckpt fix" in ln], others


def test_fix_format_means_the_report_format(run_cli, project, tmp_path):
    """--format is the report's format in every command; the copy's is --out-format."""
    src = project / "ddp.pt"
    out = tmp_path / "a.safetensors"
    r = run_cli("ckpt", "fix", str(src), "--out", str(out), "--out-format", "safetensors", "--format", "json")
    assert r.code == 0 and r.json["facts"]["fix"]["format"] == "safetensors" and not r.stderr, r.stderr
    # the copy's report loads it as safetensors (load_file), not with torch.load
    runs = run_fixes(r.json, run_cli, cwd=project, given=MODEL)
    assert all("torch.load(" not in "\n".join(x.commands) for x in runs)
    r = run_cli("ckpt", "fix", str(src), "--out", str(tmp_path / "b.pt"), "--format", "markdown")
    assert r.code == 0 and r.stdout.lstrip().startswith("#")
    # the old spellings still work for a while, each with a one-line note naming the new option
    r = run_cli("ckpt", "fix", str(src), "--out", str(tmp_path / "c.safetensors"), "--format", "safetensors")
    assert r.code == 0 and "CD645" in r.stdout
    assert r.stderr.strip() == (
        "cudadoctor: --format safetensors is deprecated for the copy's format: use --out-format safetensors"
    )
    r = run_cli("ckpt", "fix", str(src), "--out", str(tmp_path / "d.pt"), "--report", "json")
    assert r.code == 0 and r.json["facts"]["fix"]["ok"] is True
    assert r.stderr.strip() == "cudadoctor: --report json is deprecated: use --format json"
    helptext = run_cli("ckpt", "fix", "--help").stdout
    assert "--out-format [torch|safetensors]" in helptext and "--format [text|json|markdown]" in helptext


def test_saved_on_a_gpu_with_a_namespace_loads_one_way(run_cli, project, tmp_path):
    """CD610's map_location advice and CD620's safe_globals are one snippet, not two that each fail."""
    from tests.commands.test_ckpt import cuda_tagged

    path = tmp_path / "gpu_train.pt"
    with torch.serialization.safe_globals([__import__("argparse").Namespace]):
        obj = torch.load(project / "train.pt", weights_only=True)
    cuda_tagged(path, obj, ["cuda:0"])
    _, data = inspect(run_cli, path)
    f = by_code(data)
    assert {"CD610", "CD620", "CD625"} <= set(f)
    snippet = f["CD610"]["fix"][0]["commands"]
    assert snippet[-2:] == [
        "with torch.serialization.safe_globals([Namespace]):",
        f"    state = torch.load({str(path)!r}, map_location=device)",
    ]
    assert f["CD610"]["fix"][1]["commands"][0].endswith("--to cpu --state-dict-only --trust")
    run_fixes(data, run_cli, cwd=project, given=MODEL)


OTHER_NET = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
"""


def test_of_two_scripts_defining_the_class_the_one_with_the_models_attributes_is_named(run_cli, project, tmp_path):
    """Two .py files define Net: the one whose Net assigns the saved model's own attributes (fc1, fc2) is
    named, not the one that comes first by name; with nothing to tell them apart, both are named and the
    snippet says YOUR_SCRIPT."""
    here = tmp_path / "two"
    here.mkdir()
    shutil.copy(project / "whole_model.pt", here)
    (here / "train.py").write_text(TRAIN)
    (here / "eval_old.py").write_text(OTHER_NET)  # sorts first, and its Net has other layers
    _, data = inspect(run_cli, here / "whole_model.pt")
    f = by_code(data)["CD620"]
    assert f["tables"][0]["rows"][0] == ["__main__.Net", "defined in train.py"]
    assert "from train import Net" in fix_lines(f)
    # two files with the same Net: which one saved the file is not known, and is not guessed
    (here / "eval_old.py").write_text(TRAIN)
    _, data = inspect(run_cli, here / "whole_model.pt")
    f = by_code(data)["CD620"]
    assert f["tables"][0]["rows"][0] == ["__main__.Net", "defined in eval_old.py and train.py"]
    assert "from YOUR_SCRIPT import Net" in fix_lines(f)
    assert not any(ln.startswith("cudadoctor ckpt fix") for ln in fix_lines(f))
