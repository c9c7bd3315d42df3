"""The checkpoint (CD6xx), fit (CD66x) and training (CD7xx) findings read as Chinese: each title, page and
fix label is a template (model.msg) or a catalogue text, and its zh_CN rendering has no English phrase left
beyond the arguments shown as they are (paths, names, a child's or a reader's own message)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from cudadoctor import locale as i18n
from cudadoctor.facts.fit import FitFacts, FitGpu, ModelSize
from cudadoctor.facts.watch import Timeline
from cudadoctor.model import Finding, Message
from cudadoctor.render.localize import finding as localized
from cudadoctor.rules import ckpt, fit, watch
from cudadoctor.rules.examples import checkpoints
from cudadoctor.rules.watch import clocks
from tests.commands.test_watch import SWING, GiB, timeline

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("message_coverage", ROOT / "tools" / "message_coverage.py")
assert _spec is not None and _spec.loader is not None
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)


def _verbatim(text: object) -> list[str]:
    """The arguments a message shows as they are, at any depth (a message argument is translated itself)."""
    if not isinstance(text, Message):
        return []
    out: list[str] = []
    for value in text.args.values():
        out += _verbatim(value) if isinstance(value, Message) else [str(value)]
    return out


def english_in_zh(findings: list[Finding]) -> list[str]:
    """What is not a template or catalogue text, and the English phrases left in zh_CN outside verbatim
    arguments; one line each, empty when everything reads as Chinese."""
    problems = []
    for f in findings:
        with i18n.use("zh_CN"):
            zh = localized(f)
        for (field, text), (_, shown) in zip(coverage.texts(f), coverage.texts(zh), strict=True):
            if not (isinstance(text, Message) or coverage.static(f.code, field, text)):
                problems.append(f"{f.code} {field} is not a template: {text!r}")
            for value in sorted(_verbatim(text), key=len, reverse=True):
                shown = shown.replace(value, " ")
            if left := coverage.english_left(shown):
                problems.append(f"{f.code} {field}: {left} in {shown!r}")
    return problems


def test_checkpoint_examples_read_as_chinese() -> None:
    findings = [f for c in checkpoints() for f in ckpt.evaluate(c)]
    raised = {f.code for f in findings}
    assert {"CD600", "CD601", "CD602", "CD609", "CD610", "CD620", "CD625", "CD630", "CD640", "CD645"} <= raised
    assert english_in_zh(findings) == []


def _timelines() -> list[Timeline]:
    no_nvml = timeline([0, 0, 0, 0, 0])
    no_nvml.nvml = "NVML_ERROR_LIBRARY_NOT_FOUND"
    hidden_gpus = timeline([0] * 8, on_gpu=0, tree_mem=None)
    hidden_gpus.cuda_visible_devices = ""
    return [
        timeline([0, 0]),  # CD711
        timeline(SWING, main=99.0),  # CD701, from the main process
        timeline([40] * 10, main=30.0, workers=[98.0, 97.0], cpu_busy=50.0, cpu_count=32),  # CD701, workers
        timeline([40] * 10, main=30.0, workers=[98.0] * 8, cpu_busy=99.0, cpu_count=8),  # CD701, no core free
        timeline([95] * 8, tree_mem=78 * GiB, others=1),  # CD710, CD703
        timeline([95] * 8, tree_mem=4 * GiB),  # CD702
        timeline([30] * 8, main=20.0, rx=12 * 10**9, clocks=clocks.HW_THERMAL, others=1, second_gpu=True),
        timeline([95] * 6, clocks=clocks.SW_POWER_CAP | clocks.HW_SLOWDOWN),  # CD706, CD707
        timeline([5] * 10, main=10.0),  # CD714
        timeline([95] * 8, shm=(60 << 20, 64 << 20)),  # CD709, a container's /dev/shm
        hidden_gpus,  # CD700, CUDA_VISIBLE_DEVICES hides every GPU
        no_nvml,  # CD712
    ]


def test_training_verdicts_read_as_chinese() -> None:
    findings = [f for tl in _timelines() for f in watch.evaluate(tl)]
    raised = {f.code for f in findings}
    assert {f"CD{n}" for n in range(700, 715) if n != 713} <= raised, sorted(raised)
    assert english_in_zh(findings) == []


def _fit(parameters: int | None, free_gib: list[float] | None, training: bool = False) -> FitFacts:
    model = ModelSize(
        "/models/qwen",
        "config",
        parameters=parameters,
        dtype="bfloat16",
        why_unknown=None if parameters else "config.json names no architecture this knows",
        hf_dir="/models/qwen",
    )
    gpus = None if free_gib is None else [FitGpu(i, memory_free=int(g * GiB)) for i, g in enumerate(free_gib)]
    return FitFacts(model=model, training=training, gpus=gpus)


def test_fit_verdicts_read_as_chinese() -> None:
    cases = [
        _fit(None, [10]),  # CD663
        _fit(494_032_768, [0.5, 20]),  # CD660, CD662
        _fit(494_032_768, [2, 3], training=True),  # CD661, across GPUs
        _fit(494_032_768, [0.3]),  # CD661, with a lower precision that fits
    ]
    findings = [f for c in cases for f in fit.evaluate(c)]
    assert {"CD660", "CD661", "CD662", "CD663"} <= {f.code for f in findings}
    problems = english_in_zh(findings)
    # the reason a count is unknown is the size reader's own sentence, shown as it is
    assert problems == []


def test_ckpt_inspect_in_chinese(run_cli, tmp_path: Path) -> None:
    """What a user runs: `ckpt inspect FILE --lang zh_CN` on a Git LFS pointer reads as Chinese; --json keeps
    English unless --lang is given."""
    path = tmp_path / "model.pt"
    path.write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 548105171\n"
    )
    r = run_cli("ckpt", "inspect", str(path), "--lang", "zh_CN")
    assert "model.pt 是 Git LFS 指针文件（" in r.stdout + r.stderr, r.stdout + r.stderr
    assert "不是 522.7 MiB 的检查点本身" in r.stdout + r.stderr
    assert "is a Git LFS pointer" not in r.stdout + r.stderr
    r = run_cli("ckpt", "inspect", str(path), "--json")
    title = json.loads(r.stdout)["findings"][0]["title"]
    assert title == "model.pt is a Git LFS pointer (134 B), not the checkpoint of 522.7 MiB"  # 134 bytes on disk


@pytest.mark.fakenvml
def test_fit_in_chinese(run_cli, tmp_path: Path) -> None:
    """`fit MODEL --training --lang zh_CN` on GPUs too small: the verdict and its page read as Chinese."""
    model = tmp_path / "qwen"
    model.mkdir()
    (model / "config.json").write_text((ROOT / "tests/fixtures/hf_configs/qwen2.5-0.5b.config.json").read_text())
    total = 80 * GiB
    machine = "driver 550.54.14\ncuda 12040\n" + "".join(
        f'device name="NVIDIA A100-SXM4-80GB" cc=8.0 total={total} used={total - free * GiB} util=0 temp=40\n'
        for free in (2, 3)
    )
    r = run_cli("fit", str(model), "--training", "--lang", "zh_CN", machine=machine)
    assert r.code == 1 and "用 Adam 训练至少需要 7.4 GiB" in r.stdout and "needs at least" not in r.stdout, r.stdout
    r = run_cli("fit", str(model), "--training", "--json", "--lang", "zh_CN", machine=machine)
    too_big = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "CD661")
    assert (
        too_big["title"]
        == "用 Adam 训练至少需要 7.4 GiB：没有哪块 GPU 有这么多空闲显存（最多的是 GPU 1，空闲 3.0 GiB）"
    )
    assert too_big["why"].endswith("2 块 GPU 共有 5.0 GiB 空闲显存；至少需要 3 块 GPU 的空闲显存。")
