"""`cudadoctor ckpt`: real checkpoints written here by the CPU torch, diagnosed through the CLI (the torch
child runs for real), and the static reader and rules on their own."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudadoctor.backends.ckpt import audit_globals, inspect_path, scan_pickle
from cudadoctor.backends.paste import read
from cudadoctor.cli import cli
from cudadoctor.commands.triage import diagnose
from cudadoctor.facts.ckpt import CkptFacts, CkptTorch, ModelComparison
from cudadoctor.report import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from cudadoctor.rules import ckpt as rules
from tests.conftest import ROOT
from tests.helpers import by_code

torch = pytest.importorskip("torch")


@dataclass
class TrainConfig:
    """A custom class in a training checkpoint: what weights_only=True refuses since torch 2.6."""

    lr: float = 0.1
    layers: int = 2


class Net(torch.nn.Module):
    def __init__(self, out: int = 3, extra: bool = False) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.bn = torch.nn.BatchNorm1d(8)
        self.fc2 = torch.nn.Linear(8, out)
        if extra:
            self.head = torch.nn.Linear(out, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.bn(self.fc1(x)))


NETDEF = """
import torch
class Net(torch.nn.Module):
    def __init__(self, out=3, extra=False):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.bn = torch.nn.BatchNorm1d(8)
        self.fc2 = torch.nn.Linear(8, out)
        if extra:
            self.head = torch.nn.Linear(out, 2)
def build():
    return Net()
def build_wide():
    return Net(out=5)
def build_extra():
    return Net(extra=True)
def build_wrapped():
    return torch.nn.DataParallel(Net())
def broken():
    raise RuntimeError("no config file")
"""


@pytest.fixture
def fast_child(monkeypatch):
    """The torch child's own code (ckpt_child.answer), run in this process, where torch is already
    imported: the CLI end to end without paying a torch import per call. Tests without this fixture run
    the real child process."""
    from cudadoctor.backends import ckpt as backend
    from cudadoctor.backends.children import ckpt_child

    def in_process(python: str, request: dict, timeout: float) -> tuple[dict, None, bool]:
        return ckpt_child.answer(json.loads(json.dumps(request))), None, False

    monkeypatch.setattr(backend, "run_child_request", in_process)
    yield
    sys.modules.pop("netdef", None)


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["ckpt", *args])
    return r.exit_code, r.stdout, r.stderr


def inspect_json(path: Path, *extra: str) -> tuple[int, dict]:
    code, out, err = run("inspect", str(path), "--json", *extra)
    assert out.strip(), err
    return code, json.loads(out)


def cuda_tagged(path: Path, obj: object, tags: list[str]) -> None:
    """torch.save on a CPU machine, with the storages' location tags rewritten in the archive."""
    torch.save(obj, path)
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("/data.pkl"):
                data = _retag(data, tags)
            dst.writestr(info, data)
    tmp.replace(path)


def _retag(data: bytes, tags: list[str]) -> bytes:
    """Give the n-th persistent storage id the n-th tag: torch memoizes 'cpu' once and refers back to it
    with BINGET, so every reference is replaced by a fresh BINUNICODE string."""
    import pickletools

    out = bytearray()
    memo_of_cpu: set[int] = set()
    ops = list(pickletools.genops(data))
    n = 0
    for i, (op, arg, pos) in enumerate(ops):
        end = ops[i + 1][2] if i + 1 < len(ops) else len(data)
        chunk = data[pos:end]
        is_cpu = (op.name == "BINUNICODE" and arg == "cpu") or (op.name == "BINGET" and arg in memo_of_cpu)
        if op.name == "BINPUT" and ops[i - 1][0].name == "BINUNICODE" and ops[i - 1][1] == "cpu":
            memo_of_cpu.add(arg)
        if is_cpu:
            tag = tags[min(n, len(tags) - 1)].encode()
            n += 1
            chunk = b"X" + struct.pack("<I", len(tag)) + tag
        out += chunk
    return bytes(out)


# --------------------------------------------------------------------------------------------- formats


@pytest.mark.usefixtures("fast_child")
def test_dataparallel_state_dict_prefix_and_fix_named(tmp_path):
    path = tmp_path / "dp.pt"
    torch.save(torch.nn.DataParallel(Net()).state_dict(), path)
    code, data = inspect_json(path)
    f = by_code(data)
    assert code == EXIT_OK  # a prefix alone is a warning until a model says otherwise
    assert f["CD630"]["severity"] == "warning"
    text = json.dumps(f["CD630"]["fix"])
    assert "consume_prefix_in_state_dict_if_present(state, 'module.')" in text
    assert "k[7:]" not in text.replace("never k[7:]", "")
    assert "CD622" in f  # plain tensors: weights_only=True loads it
    assert data["facts"]["prefixes"] == ["module."]


def test_compiled_and_ddp_prefixes_in_order(tmp_path):
    path = tmp_path / "compiled.pt"
    compiled = torch.compile(torch.nn.DataParallel(Net()))
    torch.save(compiled.state_dict(), path)
    facts = inspect_path(str(path))
    assert facts.prefixes == ["_orig_mod.", "module."]
    found = {x.code: x for x in rules.evaluate(facts)}
    assert "CD631" in found and "CD630" not in found  # one finding for the stack of wrappers
    lines = found["CD631"].fix[0].commands
    assert lines.index("consume_prefix_in_state_dict_if_present(state, '_orig_mod.')") < lines.index(
        "consume_prefix_in_state_dict_if_present(state, 'module.')"
    )


@pytest.mark.usefixtures("fast_child")
def test_training_checkpoint_contents(tmp_path):
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 10)
    model(torch.randn(4, 4)).sum().backward()
    opt.step()
    sched.step()
    path = tmp_path / "train.pt"
    torch.save(
        {
            "epoch": 7,
            "model_state_dict": model.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
        },
        path,
    )
    code, data = inspect_json(path)
    kinds = {c["key"]: c["kind"] for c in data["facts"]["contents"]}
    assert kinds == {
        "epoch": "number",
        "model_state_dict": "state dict",
        "optimizer": "optimizer",
        "scheduler": "scheduler",
    }
    assert data["facts"]["state_dict_key"] == "model_state_dict"
    assert "model.load_state_dict(ckpt['model_state_dict'])" in json.dumps(by_code(data)["CD625"]["fix"])
    assert code == EXIT_OK and "CD622" in by_code(data)


@pytest.mark.usefixtures("fast_child")
def test_custom_class_needs_safe_globals_and_the_snippet_works(tmp_path, monkeypatch):
    path = tmp_path / "cfg.pt"
    torch.save({"model": Net().state_dict(), "config": TrainConfig()}, path)
    with pytest.raises(Exception, match="Unsupported global"):
        torch.load(path)  # what the user sees: torch 2.6+ refuses
    code, data = inspect_json(path)
    assert code == EXIT_PROBLEMS
    f = by_code(data)["CD620"]
    assert f["severity"] == "error"
    assert data["facts"]["unsafe_globals"] == ["tests.commands.test_ckpt.TrainConfig"]
    assert data["facts"]["torch"]["unsafe_globals"] == ["tests.commands.test_ckpt.TrainConfig"]  # torch agrees
    snippet = next(fx["commands"] for fx in f["fix"] if "safe_globals" in json.dumps(fx["commands"]))
    assert "from tests.commands.test_ckpt import TrainConfig" in snippet
    scope: dict = {}
    exec("\n".join(snippet), scope)  # the advice, run as printed
    assert isinstance(scope["ckpt"]["config"], TrainConfig)


def test_whole_model_pickled(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(Net(), path)
    facts = inspect_path(str(path))
    assert facts.contents[0].kind == "model object"
    assert facts.state_dict_keys == list(Net().state_dict())
    assert "tests.commands.test_ckpt.Net" in facts.unsafe_globals


class Evil:
    def __reduce__(self):
        return (os.system, (f"touch {EVIL_MARK}",))


EVIL_MARK = ""


def test_malicious_pickle_is_never_run(tmp_path):
    global EVIL_MARK
    marker = tmp_path / "pwned"
    EVIL_MARK = str(marker)  # read by Evil.__reduce__ while saving
    path = tmp_path / "evil.pt"
    torch.save({"w": torch.zeros(2), "x": Evil()}, path)
    code, data = inspect_json(path)
    assert not marker.exists()  # neither the doctor nor the child ran it
    assert code == EXIT_PROBLEMS
    f = by_code(data)
    assert "CD621" in f and "CD620" not in f
    assert "safe_globals" not in json.dumps(f["CD621"])
    code, _, err = run("fix", str(path), "--out", str(tmp_path / "out.pt"))
    assert code == EXIT_USAGE and "--trust" in err and len(err.strip().splitlines()) == 1
    assert not marker.exists() and not (tmp_path / "out.pt").exists()


# torch.load's two wordings: no usable CUDA at all / fewer GPUs than the index saved on
DESERIALIZE_ERRORS = (
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are "
    "running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
    "storages to the CPU.",
    "Attempting to deserialize object on CUDA device 3 but torch.cuda.device_count() is 1. Please use "
    "torch.load with map_location to map your storages to an existing device.",
)


def test_cuda_tagged_checkpoint_needs_map_location_and_fix_loads_here(tmp_path, monkeypatch):
    model = Net()
    path = tmp_path / "gpu.pt"
    cuda_tagged(path, {"model": model.state_dict(), "epoch": 3}, ["cuda:0", "cuda:3"])
    # the beginner's error, for real: without CUDA, or (on a machine with fewer than 4 GPUs) the index
    with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on (a CUDA device|CUDA device 3)"):
        torch.load(path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the doctor's torch child: no GPU on any machine
    code, data = inspect_json(path)
    assert data["facts"]["storage_devices"] == {"cuda:0": 1, "cuda:3": len(model.state_dict()) - 1}
    f = by_code(data)["CD610"]
    assert code == EXIT_PROBLEMS and f["severity"] == "error"
    fixes = json.dumps(f["fix"])
    assert 'torch.device(\\"cuda\\" if torch.cuda.is_available() else \\"cpu\\")' in fixes
    assert "map_location=device" in fixes
    out = tmp_path / "cpu.pt"
    code, text, err = run("fix", str(path), "--out", str(out), "--to", "cpu")
    assert code == EXIT_OK, text + err
    flat = " ".join(text.split())  # the title holds the path: where it wraps depends on the tmp dir's length
    assert "CD645" in text and "cuda:3 mapped to" in flat
    fixed = torch.load(out, weights_only=True, map_location=None)
    original = torch.load(path, map_location="cpu", weights_only=True)
    assert fixed["epoch"] == 3
    for k, v in original["model"].items():
        assert fixed["model"][k].device.type == "cpu" and torch.equal(fixed["model"][k], v)


@pytest.mark.parametrize("message", DESERIALIZE_ERRORS)
def test_both_deserialize_errors_are_recognised_in_a_paste(message):
    rep = diagnose(read(f"Traceback (most recent call last):\nRuntimeError: {message}\n"))
    found = {x.code: x for x in rep.findings}
    assert "CD907" in found and "map_location" in json.dumps(found["CD907"].fix[0].commands)
    if "device_count" in message:
        assert found["CD907"].title == "A checkpoint saved on cuda:3 is loaded where torch sees 1 GPU"


def test_device_index_beyond_count_rule():
    facts = CkptFacts(path="/x/gpu.pt", format="torch-zip", storage_devices={"cuda:0": 2, "cuda:3": 1})
    facts.torch = CkptTorch(version="2.13.0", cuda_available=True, device_count=2, weights_only_default=True)
    found = {x.code: x for x in rules.evaluate(facts)}
    assert "CD611" in found and "cuda:3" in found["CD611"].title and "2 GPUs" in found["CD611"].title
    assert "map_location={'cuda:3': 'cuda:0'}" in json.dumps(found["CD611"].fix[1].commands)
    facts.torch.device_count = 4
    assert "CD612" in {x.code for x in rules.evaluate(facts)}
    facts.torch = CkptTorch(import_error="ModuleNotFoundError: No module named 'torch'")
    got = {x.code for x in rules.evaluate(facts)}
    assert not got & {"CD610", "CD611", "CD612"}  # unknown devices: no claim either way
    assert "CD647" in got and "CD613" in got
    assert all(x.severity.value in ("info", "ok") for x in rules.evaluate(facts))  # knowing less adds no problem


@pytest.mark.usefixtures("fast_child")
def test_lfs_pointer(tmp_path):
    for name in ("model.pt", "model.safetensors"):
        path = tmp_path / name
        path.write_text(
            "version https://git-lfs.github.com/spec/v1\n"
            "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 548105171\n"
        )
        code, data = inspect_json(path)
        f = by_code(data)
        assert code == EXIT_PROBLEMS and list(f) == ["CD600"], name  # not also "HeaderTooLarge"
        assert "git lfs pull --include " + name in json.dumps(f["CD600"]["fix"])
        assert "522.7 MiB" in f["CD600"]["title"] or "548105171" in json.dumps(f["CD600"])


@pytest.mark.usefixtures("fast_child")
def test_html_page(tmp_path):
    path = tmp_path / "resnet.pth"
    path.write_text("<!DOCTYPE html>\n<html><head><title>Sign in - Google Accounts</title></head><body></body></html>")
    code, data = inspect_json(path)
    assert code == EXIT_PROBLEMS
    assert "Sign in - Google Accounts" in by_code(data)["CD601"]["title"]
    assert "/resolve/" in json.dumps(by_code(data)["CD601"]["fix"])


@pytest.mark.usefixtures("fast_child")
def test_truncated_zip(tmp_path):
    path = tmp_path / "cut.pt"
    torch.save(Net().state_dict(), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError):
        torch.load(path)
    code, report = inspect_json(path)
    assert code == EXIT_PROBLEMS and "CD602" in by_code(report)
    assert report["facts"]["expected_format"] == "torch zip"


@pytest.mark.usefixtures("fast_child")
def test_safetensors_header_too_large_and_truncated(tmp_path):
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\xff" * 64)
    code, data = inspect_json(junk)
    assert code == EXIT_PROBLEMS and "CD603" in by_code(data)
    good = tmp_path / "good.safetensors"
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    good.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)  # 8 of 16 data bytes
    code, data = inspect_json(good)
    assert code == EXIT_PROBLEMS and "CD602" in by_code(data)


@pytest.mark.usefixtures("fast_child")
def test_safetensors_shared_tensors_fix(tmp_path):
    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(10, 4)
            self.head = torch.nn.Linear(4, 10, bias=False)
            self.head.weight = self.embed.weight  # tied, as in language models

    src = tmp_path / "tied.pt"
    sd = Tied().state_dict()
    torch.save({"model": sd, "step": 1}, src)
    out = tmp_path / "tied.safetensors"
    code, text, err = run("fix", str(src), "--out", str(out), "--out-format", "safetensors")
    assert code == EXIT_USAGE and "--state-dict-only" in err  # a training dict is not a tensor map
    code, text, err = run(
        "fix", str(src), "--out", str(out), "--out-format", "safetensors", "--state-dict-only", "--json"
    )
    assert code == EXIT_OK, text + err
    fixed = json.loads(text)["facts"]["fix"]
    assert fixed["copied_shared"] == ["head.weight = embed.weight"] and fixed["verified"] is True
    facts = inspect_path(str(out))
    assert facts.format == "safetensors" and sorted(facts.state_dict_keys) == sorted(sd)
    st = pytest.importorskip("safetensors.torch")
    back = st.load_file(str(out))
    for k, v in sd.items():
        assert torch.equal(back[k], v)


def test_model_comparison_in_the_real_child(tmp_path, monkeypatch):
    (tmp_path / "netdef.py").write_text(NETDEF)
    monkeypatch.chdir(tmp_path)  # --model imports from the current directory, in the target interpreter
    dp = tmp_path / "dp.pt"
    torch.save({"model": torch.nn.DataParallel(Net()).state_dict(), "epoch": 1}, dp)
    code, data = inspect_json(dp, "--model", "netdef:build")
    f = by_code(data)
    assert code == EXIT_PROBLEMS and f["CD630"]["severity"] == "error"
    assert not {"CD640", "CD641", "CD642"} & set(f)  # the prefix is the whole story
    assert data["facts"]["model"]["strip"] == ["module."]


@pytest.mark.usefixtures("fast_child")
def test_model_comparison(tmp_path, monkeypatch):
    (tmp_path / "netdef.py").write_text(NETDEF)
    monkeypatch.chdir(tmp_path)
    dp = tmp_path / "dp.pt"
    torch.save({"model": torch.nn.DataParallel(Net()).state_dict(), "epoch": 1}, dp)

    code, data = inspect_json(dp, "--model", "netdef:build_wide")
    mism = by_code(data)["CD642"]["tables"][0]["rows"]
    assert ["fc2.weight", "(3, 8)", "(5, 8)"] in mism

    code, data = inspect_json(dp, "--model", "netdef:build_extra")
    assert [r[0] for r in by_code(data)["CD640"]["tables"][0]["rows"]] == ["head.weight", "head.bias"]

    plain = tmp_path / "plain.pt"
    torch.save(Net().state_dict(), plain)
    code, data = inspect_json(plain, "--model", "netdef:build")
    assert code == EXIT_OK and "CD643" in by_code(data)
    code, data = inspect_json(plain, "--model", "netdef:build_wrapped")
    assert "CD632" in by_code(data) and data["facts"]["model"]["add"] == "module."
    code, data = inspect_json(plain, "--model", "netdef:broken")
    assert "no config file" in by_code(data)["CD644"]["title"]


@pytest.mark.usefixtures("fast_child")
def test_fix_strip_prefix_and_state_dict_only(tmp_path):
    src = tmp_path / "ckpt.pt"
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(4, 4)).sum().backward()
    opt.step()
    torch.save({"model": torch.compile(model).state_dict(), "optimizer": opt.state_dict()}, src)
    out = tmp_path / "weights.pt"
    code, text, err = run("fix", str(src), "--out", str(out), "--strip-prefix", "--state-dict-only")
    assert code == EXIT_OK, text + err
    sd = torch.load(out, weights_only=True)
    assert list(sd) == list(model.state_dict())
    Net().load_state_dict(sd)  # strict: loads into the plain model
    for k, v in model.state_dict().items():
        assert torch.equal(sd[k], v)
    assert src.exists()  # the input is untouched


@pytest.mark.usefixtures("fast_child")
def test_fix_legacy_to_zip(tmp_path):
    src = tmp_path / "old.pt"
    sd = Net().state_dict()
    torch.save(sd, src, _use_new_zipfile_serialization=False)
    assert inspect_path(str(src)).format == "torch-legacy"
    out = tmp_path / "new.pt"
    code, text, err = run("fix", str(src), "--out", str(out))
    assert code == EXIT_OK, text + err
    assert zipfile.is_zipfile(out)
    back = torch.load(out, weights_only=True, mmap=True)
    assert all(torch.equal(back[k], v) for k, v in sd.items())


@pytest.mark.usefixtures("fast_child")
def test_bad_input_is_one_line_exit_2(tmp_path):
    ckpt = tmp_path / "a.pt"
    torch.save({"w": torch.ones(1)}, ckpt)
    (tmp_path / "empty_dir").mkdir()
    taken = tmp_path / "taken.pt"
    taken.write_bytes(b"x")
    cases = [
        ("inspect", str(tmp_path / "missing.pt")),
        ("inspect", str(tmp_path / "empty_dir")),
        ("fix", str(ckpt), "--out", str(taken)),
        ("fix", str(ckpt), "--out", str(ckpt)),
        ("fix", str(ckpt), "--out", str(tmp_path / "no" / "dir.pt")),
    ]
    for args in cases:
        code, _, err = run(*args)
        assert code == EXIT_USAGE, args
        assert err.startswith("cudadoctor: ") and len(err.strip().splitlines()) == 1, err
    assert taken.read_bytes() == b"x"


@pytest.mark.usefixtures("fast_child")
def test_dcp_and_hf_index(tmp_path):
    import warnings

    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save({"model": Net().state_dict()}, checkpoint_id=str(tmp_path / "dcp"))
    facts = inspect_path(str(tmp_path / "dcp"))
    assert facts.format == "dcp" and "fc1.weight" in facts.state_dict_keys
    assert "CD606" in {x.code for x in rules.evaluate(facts)}

    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "model-00001-of-00002.safetensors").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64 + "\nsize 10\n"
    )
    (hf / "model.safetensors.index.json").write_text(
        json.dumps(
            {
                "metadata": {"total_size": 20},
                "weight_map": {
                    "a.weight": "model-00001-of-00002.safetensors",
                    "b.weight": "model-00002-of-00002.safetensors",
                },
            }
        )
    )
    code, data = inspect_json(hf)
    assert code == EXIT_PROBLEMS
    rows = by_code(data)["CD607"]["tables"][0]["rows"]
    assert ["model-00002-of-00002.safetensors", "missing"] in rows
    assert any("Git LFS pointer" in r[1] for r in rows)


@pytest.mark.usefixtures("fast_child")
def test_text_markdown_and_explain(tmp_path):
    path = tmp_path / "dp.pt"
    torch.save(torch.nn.DataParallel(Net()).state_dict(), path)
    code, out, _ = run("inspect", str(path))
    assert code == EXIT_OK and "CD630" in out and "consume_prefix_in_state_dict_if_present(state, 'module.')" in out
    code, out, _ = run("inspect", str(path), "--format", "markdown")
    assert code == EXIT_OK and "**CD630**" in out
    r = CliRunner().invoke(cli, ["explain", "CD610"])
    assert r.exit_code == 0 and "map_location" in r.stdout


# ------------------------------------------------------------------------------------------- static reader


def test_static_reader_never_imports_torch(tmp_path):
    path = tmp_path / "cfg.pt"
    torch.save({"model": Net().state_dict(), "config": TrainConfig()}, path)
    code = (
        "import sys; from cudadoctor.backends.ckpt import inspect_path; from cudadoctor.rules import ckpt;"
        "import cudadoctor.commands.ckpt;"
        f"f = inspect_path({str(path)!r}); ckpt.evaluate(f);"
        "assert 'torch' not in sys.modules, 'torch imported'; print(f.unsafe_globals)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "tests.commands.test_ckpt.TrainConfig" in p.stdout


def test_scan_is_bounded():
    # a BINBYTES8 claiming 2**40 bytes: refused, not read into memory
    import io

    data = b"\x80\x04\x8e" + struct.pack("<Q", 1 << 40)
    scan = scan_pickle(io.BytesIO(data), limit=1 << 20)
    assert scan.error and scan.root is None
    unsafe, dangerous = audit_globals(["collections.OrderedDict", "posix.system", "mypkg.Config"])
    assert unsafe == ["posix.system", "mypkg.Config"] and dangerous == ["posix.system"]


def test_model_comparison_rules_without_torch():
    facts = CkptFacts(path="/x/m.pt", format="safetensors", state_dict_key="", state_dict_keys=["a"], prefixes=[])
    facts.model = ModelComparison(factory="m:f", missing=["b"], unexpected=[], matched=1)
    found = {x.code: x for x in rules.evaluate(facts)}
    assert "CD640" in found and "CD643" not in found


def test_a_hung_child_is_bounded(tmp_path):
    path = tmp_path / "a.pt"
    torch.save({"w": torch.ones(2)}, path)
    slow = tmp_path / "slowpython"
    slow.write_text(f'#!/bin/sh\nif [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi\nsleep 60\n')
    slow.chmod(0o755)
    code, data = inspect_json(path, "--python", str(slow), "--timeout", "1")
    assert code == 3  # EXIT_INCOMPLETE: the verdict does not pretend
    assert data["status"] == "incomplete"
    assert "CD609" in by_code(data)  # what the bytes said is still there


@pytest.mark.usefixtures("fast_child")
def test_fix_sharded_safetensors_into_one_file(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    a = {"a.weight": torch.randn(3, 3)}
    b = {"b.weight": torch.randn(2, 3).to(torch.bfloat16)}
    st.save_file(a, str(tmp_path / "model-00001-of-00002.safetensors"))
    st.save_file(b, str(tmp_path / "model-00002-of-00002.safetensors"))
    weight_map = {"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    out = tmp_path / "merged.pt"
    code, text, err = run("fix", str(tmp_path), "--out", str(out))
    assert code == EXIT_OK, text + err
    back = torch.load(out, weights_only=True)
    assert torch.equal(back["a.weight"], a["a.weight"]) and torch.equal(back["b.weight"], b["b.weight"])


@pytest.mark.usefixtures("fast_child")
def test_failed_fix_leaves_nothing_behind(tmp_path):
    src = tmp_path / "c.pt"
    torch.save({"z": torch.zeros(2, dtype=torch.complex128)}, src)  # no safetensors dtype for it
    out = tmp_path / "c.safetensors"
    code, text, _ = run("fix", str(src), "--out", str(out), "--out-format", "safetensors", "--format", "json")
    assert code == EXIT_PROBLEMS
    assert "CD646" in by_code(json.loads(text)) and not out.exists()


class Ema:
    def __init__(self) -> None:
        self.shadow = {"w": torch.ones(3, dtype=torch.float16)}
        self.decay = 0.999


def test_static_counts_match_torch(tmp_path):
    sd = Net().state_dict()
    obj = {"model": sd, "ema": Ema(), "f8": torch.zeros(4, dtype=torch.float8_e4m3fn)}
    expected = sum(t.numel() * t.element_size() for t in sd.values()) + 3 * 2 + 4
    for name, legacy in (("zip.pt", False), ("legacy.pt", True)):
        path = tmp_path / name
        torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
        facts = inspect_path(str(path))
        assert facts.tensor_bytes == expected, name
        assert facts.tensor_count == len(sd) + 2
        assert "ema.shadow.w" in {t.name for t in facts.tensors}  # tensors inside an object count too
        assert facts.dtypes == {"float32": len(sd) - 1, "int64": 1, "float16": 1, "float8_e4m3fn": 1}
        assert {c.key: c.kind for c in facts.contents}["ema"] == "object"


@pytest.mark.usefixtures("fast_child")
def test_fix_with_trust_extracts_weights_from_a_custom_class_checkpoint(tmp_path):
    src = tmp_path / "cfg.pt"
    model = Net()
    torch.save({"model": model.state_dict(), "config": TrainConfig(lr=0.5)}, src)
    kept = tmp_path / "kept.pt"
    code, text, _ = run("fix", str(src), "--out", str(kept), "--trust", "--format", "json")
    assert code == EXIT_PROBLEMS  # the copy still needs TrainConfig: said, not hidden
    assert "add --state-dict-only" in json.loads(text)["facts"]["fix"]["verify_error"]
    out = tmp_path / "weights.pt"
    code, text, err = run("fix", str(src), "--out", str(out), "--trust", "--state-dict-only")
    assert code == EXIT_OK, text + err
    sd = torch.load(out, weights_only=True)
    assert all(torch.equal(sd[k], v) for k, v in model.state_dict().items())
