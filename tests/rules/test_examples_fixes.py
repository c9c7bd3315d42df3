"""Every fix of every example is run or checked, not only printed (issue 25 item 4).

For each example (rules/examples/) and each fix its findings print: a `cudadoctor` line runs through the
real CLI against a fake machine described from the example's facts and must behave as the fix says (a
report exits 0 or 1, anything else 0; `gpus --pick N` selects N GPUs that exist there); a Python snippet
compiles; a shell fix passes `bash -n`; a PowerShell line's quotes close; YAML's brackets close; a torch
install names a release and an index the wheel table knows for the machine's platform. A line that cannot
be run as it is (a torchrun job, a checkpoint that is only facts) is in rules/examples/table.py's UNCHECKED
with the reason. tests/fixrunner.py holds the checks."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import tomllib

from cudadoctor.facts import Facts
from cudadoctor.model import Fix
from cudadoctor.rules.examples import Example, examples
from cudadoctor.rules.examples.base import example_driver, ubuntu_system
from cudadoctor.rules.examples.table import KNOWN_WRONG, KNOWN_WRONG_SNIPPETS, UNCHECKED
from tests import fixrunner
from tests.fixrunner import Checked

# An A100 box on Ubuntu: where a `watch` or `fit` example's `cudadoctor` line runs (its story has no machine)
DEFAULT_MACHINE = Facts(system=ubuntu_system(), driver=example_driver())


def machine_of(ex: Example) -> Facts:
    if ex.facts is not None:
        return ex.facts
    nodes = getattr(ex.subject, "nodes", None)  # a fleet: its first node's machine
    if nodes and nodes[0].facts is not None:
        return nodes[0].facts
    return DEFAULT_MACHINE


def unchecked(line: str) -> str | None:
    return next((why for pattern, why in UNCHECKED.items() if re.search(pattern, line)), None)


def check_fix(ex: Example, code: str, fx: Fix, run: Any, ran: dict) -> list[Checked]:
    """Every line of one fix, checked by what it is."""
    out: list[Checked] = []

    def add(kind: str, line: str, error: str | None) -> None:
        out.append(Checked(ex.name, code, fx.when, kind, line, error))

    text = "\n".join(fx.commands)
    if fx.lang == "python":
        add("python", text, fixrunner.check_python(fx.commands))
    elif fx.lang == "yaml":
        add("yaml", text, fixrunner.check_yaml(fx.commands))
    elif fx.lang == "toml":
        try:
            tomllib.loads(text)
            add("toml", text, None)
        except tomllib.TOMLDecodeError as e:
            add("toml", text, str(e))
    elif fx.lang == "powershell":
        for line in fx.commands:
            add("powershell", line, fixrunner.check_powershell(line))
    else:
        add("shell", text, fixrunner.check_shell(fx.commands))
        facts = machine_of(ex)
        machine = facts.system.machine if facts.system is not None else None
        installed = facts.torch.version if facts.torch is not None else None
        env = fixrunner.machine_env(facts)
        for line in fx.commands:
            why = unchecked(line)
            if why is not None:
                add("unchecked", line, why)
                continue
            if re.search(r"\bpip3? install\b", line) and fixrunner._TORCH_REQ.search(line):
                add("install", line, fixrunner.check_install(line, machine, installed))
            for command in fixrunner.cudadoctor_lines(line):
                key = (command, fixrunner.machine_description(facts), str(sorted(env.items())))
                if key not in ran:
                    ran[key] = fixrunner.run_cudadoctor(command, facts, run, dict(env))
                add("cudadoctor", command, ran[key])
            fixrunner.apply_env(line, env)
    return out


def test_every_example_fix_runs_or_checks_as_it_says(run_cli) -> None:
    checked: list[Checked] = []
    ran: dict = {}
    total = 0  # fix lines
    for ex in examples().values():
        for finding in ex.findings():
            for fx in finding.fix:
                if fx.commands:
                    total += len(fx.commands)
                    checked += check_fix(ex, finding.code, fx, run_cli, ran)
    failed = [c for c in checked if c.error is not None and c.kind != "unchecked"]
    # the known-wrong lines (table.py, each with what is wrong and where to fix it) must still fail here:
    # once one is fixed, its line leaves the table
    known = [c for c in failed if any(re.search(p, c.line) for p in KNOWN_WRONG)]
    assert {p for p in KNOWN_WRONG for c in known if re.search(p, c.line)} == set(KNOWN_WRONG)
    wrong = [c for c in failed if c not in known]
    assert not wrong, f"{len(wrong)} fixes do not do what they say:\n" + "\n".join(map(str, wrong))
    kinds = {c.kind for c in checked}
    assert {"cudadoctor", "python", "shell", "install", "powershell", "yaml", "unchecked"} <= kinds
    assert len([c for c in checked if c.kind == "cudadoctor"]) >= 20 and len(ran) >= 8
    # every UNCHECKED pattern still matches a line: a stale reason is removed, not kept
    used = {p for p in UNCHECKED for c in checked if c.kind == "unchecked" and re.search(p, c.line)}
    assert used == set(UNCHECKED)
    runs = len([c for c in checked if c.kind == "cudadoctor"])
    skipped = len([c for c in checked if c.kind == "unchecked"])
    print(
        f"{total} fix lines: {runs} cudadoctor lines ({len(ran)} runs), {skipped} unchecked, {len(known)} known wrong"
    )


def test_a_pick_that_selects_a_gpu_the_machine_lacks_is_caught(run_cli) -> None:
    """The check itself: `gpus --pick 2` on a one-GPU machine exits non-zero, and is reported."""
    problem = fixrunner.run_cudadoctor("cudadoctor gpus --pick 2", DEFAULT_MACHINE, run_cli)
    assert problem is not None and "exit" in problem


def test_the_checks_catch_what_they_are_for() -> None:
    assert fixrunner.check_install("pip install torch --index-url https://download.pytorch.org/whl/cu130", None)
    assert fixrunner.check_install("pip install torch==2.13.0+cu130", None)  # not on PyPI
    assert fixrunner.check_install("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128", None)
    assert (
        fixrunner.check_install("pip install torch==2.9.0 --index-url https://download.pytorch.org/whl/cu128", None)
        is None
    )
    assert (
        fixrunner.check_install(
            "pip install 'torch==2.13.0' --index-url https://download.pytorch.org/whl/cu130", "aarch64"
        )
        is None
    )
    assert fixrunner.check_install("pip install torchvision==0.28.0", None) is None  # not torch
    assert fixrunner.check_powershell('$env:X="a\\"b"') and fixrunner.check_powershell("echo 'open")
    assert fixrunner.check_powershell("wsl --shutdown") is None
    assert fixrunner.check_powershell("Write-Host 'it''s' \"a `\"b`\"\"") is None
    assert fixrunner.check_shell(['echo "open']) and fixrunner.check_python(["x = ("])
    assert fixrunner.check_yaml(["resources: {limits: {nvidia.com/gpu: 1}"])


# --- checkpoint examples: their snippets run against their checkpoint, with the torch here -----------------

NET = """
import torch


class Scale(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))


class Net(torch.nn.Module):
    '''conv1.weight, bn1.weight, fc.weight, fc.bias: the keys the examples' ResNet state dicts show.'''

    def __init__(self, classes=6, head=False):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 4, 3, bias=False)
        self.bn1 = Scale()
        self.fc = torch.nn.Linear(4, classes)
        if head:
            self.classifier = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.conv1(x).mean((2, 3)) * self.bn1.weight)
"""
# each checkpoint example's file, written as its facts describe it (storages on the CPU: the snippets load
# with map_location, so where they were saved does not change what they do), and the names its snippets
# take from the user's code
TRAINING = "{'model': {'module.' + k: v for k, v in Net().state_dict().items()}, 'optimizer': {}, 'epoch': 90}"
CHECKPOINTS: dict[str, tuple[str, str, str]] = {
    "ckpt-ddp-cuda0-on-laptop": ("ckpt/epoch_90.pt", TRAINING, "Net()"),
    "ckpt-target-torch-unknown": ("resnet50.pt", "Net().state_dict()", "Net()"),
    "ckpt-ddp-keys": ("resnet50.pt", "Net().state_dict()", "torch.nn.DataParallel(Net())"),
    "ckpt-fine-tuned-head": (
        "finetuned.pt",
        "{**Net(classes=3).state_dict(), 'aux_head.weight': torch.zeros(2)}",
        "Net(head=True)",
    ),
    "ckpt-fixed-copy": ("ckpt/epoch_90.fixed.pt", "Net().state_dict()", "Net()"),
    "ckpt-torchscript": ("traced_model.pt", "torch.jit.script(Net())", "Net()"),
}
# snippets that cannot run here, and why
CKPT_UNCHECKED = {
    "'cuda:": "loads onto a GPU, which this test machine lacks",
    "YOUR_SCRIPT": "imports the class from the user's own training script",
}


def _write_all(root) -> None:
    """Each example's directory with net.py and its checkpoint, written by one interpreter (torch imports once)."""
    script = "import os, shutil, torch\nfrom net import Net\n"
    for name, (path, value, _model) in CHECKPOINTS.items():
        target = f"{name}/{path}"
        save = "torch.jit.save" if value.startswith("torch.jit") else "torch.save"
        script += f"os.makedirs(os.path.dirname({target!r}), exist_ok=True)\nshutil.copy('net.py', {name!r})\n"
        script += f"{save}({value}, {target!r})\n"
    subprocess.run([sys.executable, "-c", script], cwd=root, check=True, timeout=300)


def test_checkpoint_examples_snippets_run_against_their_checkpoint(tmp_path) -> None:
    (tmp_path / "net.py").write_text(NET)
    _write_all(tmp_path)
    ran, skipped, failed, known = 0, 0, [], set()
    for name, ex in examples().items():
        if ex.command != "ckpt inspect":
            continue
        for finding in ex.findings():
            for fx in finding.fix:
                if fx.lang != "python":
                    continue
                text = "\n".join(fx.commands)
                if any(p in text for p in CKPT_UNCHECKED) or name not in CHECKPOINTS:
                    assert any(p in text for p in CKPT_UNCHECKED), f"{name}: a snippet with no checkpoint to run on"
                    skipped += 1
                    continue
                path, _value, model = CHECKPOINTS[name]
                if "before wrapping" in fx.when:  # the alternative that loads into the model not yet wrapped
                    model = "Net()"
                cwd = tmp_path / name
                given = {
                    "model": f"import torch\nfrom net import Net\nmodel = {model}",
                    "state": f"import torch\nstate = torch.load({path!r}, map_location='cpu')",
                }
                ok, output = fixrunner._python(fx.commands, cwd, given, {})
                ran += 1
                listed = {p for p in KNOWN_WRONG_SNIPPETS if re.search(p, text)}
                if not ok and listed:
                    known |= listed
                elif not ok:
                    failed.append(f"{name} {finding.code} {fx.when!r}\n    {text}\n    {output[-800:]}")
    assert not failed, "checkpoint snippets that fail as printed:\n" + "\n".join(failed)
    assert known == set(KNOWN_WRONG_SNIPPETS), "a known-wrong snippet works now: remove it from table.py"
    print(f"{ran} checkpoint snippets run, {skipped} unchecked, {len(known)} known wrong")
    assert ran >= 8 and skipped >= 2, (ran, skipped)
