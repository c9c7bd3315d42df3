"""The findings of the torch, library, extension, torch.compile and measurement rules (CD2xx, CD4xx) are
templates where they are raised (model.msg): every title, page and fix label of the example machines is a
Message or a catalogue text, and its zh_CN rendering shows no English phrase beyond what the facts put in
it (paths, package and GPU names, versions, the error a library printed)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudadoctor import locale as i18n
from cudadoctor.facts.codec import to_jsonable
from cudadoctor.model import Finding, Message
from cudadoctor.render.localize import finding as localized
from cudadoctor.rules import (
    extensions,
    libraries,
    measurements,
    torch_build,
    torch_compile,
    torch_install,
    torch_packages,
)
from cudadoctor.rules.catalogue import CATALOGUE, Entry

MODULES = (torch_build, torch_install, libraries, torch_packages, torch_compile, measurements, extensions)
# their own entries (torch_build also imports the driver's CD105)
CODES = {e.code for m in MODULES for e in vars(m).values() if isinstance(e, Entry) and e.code[:3] in ("CD2", "CD4")}
ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "tests" / "fixtures" / "report_v1.json"

# tools/message_coverage.py's measure: three or more English words in a row, outside quotes and parentheses
ENGLISH_PHRASE = re.compile(r"(?<![\w./\-'`=])(?:[A-Za-z][a-z]+[,;:]? ){2,}[A-Za-z][a-z]+\b")
# a product's name, which a translation keeps as it is
NAMES = ("Visual Studio Build Tools",)


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")


def english_left(text: str) -> list[str]:
    text = re.sub(r"`[^`]*`|\"[^\"]*\"|'[^']*'|\([^()]*\)|\S*[/\\]\S*", " ", text)
    return ENGLISH_PHRASE.findall(text)


def verbatim(text: str) -> list[str]:
    """The values a message shows as they are: facts, never translated (an error a library printed)."""
    if not isinstance(text, Message):
        return []
    out = []
    for value in text.args.values():
        out += verbatim(value) if isinstance(value, Message) else [str(value)]
    return out


def texts(f: Finding) -> list[tuple[str, str]]:
    return [(k, v) for k, v in [("title", f.title), ("why", f.why), *(("fix", x.when) for x in f.fix)] if v]


def example_findings() -> list[Finding]:
    """Every finding of these rules the catalogue's example machines raise (cudadoctor.rules.examples)."""
    from cudadoctor.rules.examples import examples

    return [f for ex in examples().values() for f in ex.findings() if f.code in CODES]


@pytest.fixture(scope="module")
def examples() -> list[Finding]:
    return example_findings()


def test_the_examples_raise_most_of_these_codes(examples: list[Finding]) -> None:
    """What the two tests below measure: an example for most codes, not a vacuous pass."""
    assert len({f.code for f in examples}) >= 40, sorted(CODES - {f.code for f in examples})


def test_every_text_is_a_template_or_the_catalogue_s(examples: list[Finding]) -> None:
    from cudadoctor.locale import _

    loose = []
    for f in examples:
        entry = CATALOGUE[f.code]
        for field, text in texts(f):
            static = text in (entry.summary, entry.explanation)
            with i18n.use("zh_CN"):
                static = static or _(text) != text  # a literal fix label the catalogue holds
            if not isinstance(text, Message) and not static:
                loose.append(f"{f.code} {field}: {text}")
    assert not loose, "\n".join(loose)


def test_zh_cn_shows_no_english_but_the_facts(examples: list[Finding]) -> None:
    left = []
    for f in examples:
        with i18n.use("zh_CN"):
            zh = localized(f)
        for (field, en), (_, shown) in zip(texts(f), texts(zh), strict=True):
            for value in sorted(verbatim(en) + list(NAMES), key=len, reverse=True):
                shown = shown.replace(value, " ")
            if phrases := english_left(shown):
                left.append(f"{f.code} {field}: {phrases}")
    assert not left, "\n".join(left)


def _report(tmp_path: Path, code: str) -> Path:
    """A saved report of the first example machine that raises `code`."""
    from cudadoctor.rules import evaluate
    from cudadoctor.rules.examples import machines

    facts = next(m for m in machines() if code in {f.code for f in evaluate(m, [])})
    report = json.loads(REPORT.read_text())
    report.update(facts=to_jsonable(facts), findings=[], probes=[])
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    return path


def test_check_in_chinese_translates_a_cuda_build_without_kernels(run_cli, tmp_path: Path) -> None:
    """The RTX 5090 beside a cu126 torch: the title, the sentences the rule adds to the page and the fix
    label the install advice makes are all Chinese (before, they kept English behind a summary)."""
    saved = _report(tmp_path, "CD205")
    r = run_cli("check", "--json", "--lang", "zh_CN", "--from", str(saved))
    f = next(f for f in r.json["findings"] if f["code"] == "CD205")
    assert f["title"] == "torch 2.13.0+cu126 没有适用于 NVIDIA GeForce RTX 5090（算力 12.0，Blackwell 架构） 的内核"
    assert f["why"].endswith("torch 2.13 中有适用于它的内核的版本：cu130, cu132。")
    assert all(not english_left(x["when"]) for x in f["fix"])
    english = run_cli("check", "--json", "--from", str(saved)).json
    f = next(f for f in english["findings"] if f["code"] == "CD205")
    assert (
        f["title"]
        == "torch 2.13.0+cu126 has no kernels for NVIDIA GeForce RTX 5090 (compute capability 12.0, Blackwell)"
    )
    assert f["why"].endswith("torch 2.13 builds with kernels for it: cu130, cu132.")


def test_check_in_chinese_explains_an_undefined_symbol(run_cli, tmp_path: Path) -> None:
    """import torch fails on an NCCL from another wheel (CD211): the sentence that says which library needs
    which symbol from where is Chinese around the names and paths the facts give."""
    saved = _report(tmp_path, "CD211")
    r = run_cli("check", "--json", "--lang", "zh_CN", "--from", str(saved))
    f = next(f for f in r.json["findings"] if f["code"] == "CD211")
    assert "libtorch_cuda.so 需要 nccl 中的 ncclCommWindowRegister，但加载的 nccl 是" in f["why"]
    assert "有 1 个 nvidia-* 包与 torch 固定的版本不同（CD219）。" in f["why"]
    assert (
        "（nccl 是从 /home/alice/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 加载的）" in f["title"]
    )
