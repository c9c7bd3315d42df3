"""What `cudadoctor check` tells a user on machines issue 28's installer leads are about (docs/notes/
issue28-leads.md has the sources): free-threaded Python, the index for aarch64 and Windows, pixi's platform
CUDA, uv's driver-only `auto`, the cuDNN reinstall in a uv venv, and Kepler. Hand-written facts replayed
with `check --from`, as a saved report of that machine would be."""

from __future__ import annotations

import json
from pathlib import Path

from cudadoctor.facts import Facts
from cudadoctor.facts.codec import to_jsonable
from cudadoctor.facts.libraries import EnvironmentManager, LibraryFacts
from tests.conftest import ROOT
from tests.facts_fixtures import gpu, healthy, torch_cpu, torch_cuda

CU13X = "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
CU126 = "5.0 6.0 7.0 7.5 8.0 8.6 9.0"
PY = "/opt/venv/bin/python"


def check(run_cli, tmp_path: Path, facts: Facts, *args: str) -> dict:
    """`cudadoctor check --from` a report holding these facts; the JSON report it prints."""
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"tool": "cudadoctor", "schema_version": 2, "facts": to_jsonable(facts)}))
    r = run_cli("check", "--from", str(report), "--json", *args)
    assert r.stdout, r.stderr
    return json.loads(r.stdout)


def finding(report: dict, code: str) -> dict:
    found = [f for f in report["findings"] if f["code"] == code]
    assert found, [f["code"] for f in report["findings"]]
    return found[0]


def codes(report: dict) -> set[str]:
    return {f["code"] for f in report["findings"]}


def uv_venv() -> LibraryFacts:
    return LibraryFacts(manager=EnvironmentManager(kind="uv", prefix="/opt/venv", uv_project=False))


# --- free-threaded Python ---------------------------------------------------------------------------------


def free_threaded_machine(os_name: str = "Linux", **packages: str) -> Facts:
    dev = [gpu(0, "NVIDIA GeForce RTX 3090", "8.6", total_gib=24)]
    facts = healthy(dev, driver="580.95.05", cuda=13000, os=os_name)
    facts.torch = torch_cuda("2.14.0+cu130", "13.0", CU13X, dev, python_version="3.14.0")
    facts.torch.free_threaded = True
    facts.torch.free_threaded_packages = dict(packages)
    return facts


def test_a_free_threaded_python_names_the_companions_without_wheels_for_it(run_cli, tmp_path):
    """torchao publishes no cp313t wheel (pytorch/ao#3243); torchvision has cp314t wheels and bitsandbytes'
    py3-none wheels install anywhere: only torchao is named, with what its tracker says."""
    facts = free_threaded_machine(torchao="0.14.1", torchvision="0.29.0", bitsandbytes="0.48.2")
    f = finding(check(run_cli, tmp_path, facts), "CD230")
    assert f["severity"] == "info"
    assert f["title"] == "No build for free-threaded Python: torchao"
    assert (
        "torchao 0.14.1: no cp313t wheel on the CUDA index (0.14.1) (https://github.com/pytorch/ao/issues/3243)."
        in f["why"]
    )
    assert "torchvision" not in f["why"] and "bitsandbytes" not in f["why"]
    assert f["fix"][0]["when"] == "Use a regular (GIL) Python 3.14 for these packages: it installs their wheels"


def test_torchcodec_is_named_off_linux_only(run_cli, tmp_path):
    """torchcodec ships free-threaded wheels on Linux only (meta-pytorch/torchcodec#1266)."""
    on_linux = check(run_cli, tmp_path, free_threaded_machine("Linux", torchcodec="0.13.0"))
    assert "CD230" not in codes(on_linux)
    on_windows = check(run_cli, tmp_path, free_threaded_machine("Windows", torchcodec="0.13.0"))
    assert "torchcodec 0.13.0: free-threaded wheels on Linux only" in finding(on_windows, "CD230")["why"]


def test_a_regular_python_and_an_older_report_say_nothing_of_free_threading(run_cli, tmp_path):
    regular = free_threaded_machine(torchao="0.14.1")
    regular.torch.free_threaded = False
    assert "CD230" not in codes(check(run_cli, tmp_path, regular))
    # a report saved before the fact existed (no free_threaded field at all) still loads, and says nothing
    old = ROOT / "tests" / "fixtures" / "real_gpu_report.json"
    assert "free_threaded" not in old.read_text()
    r = run_cli("check", "--from", str(old), "--json")
    assert r.stdout and "CD230" not in codes(json.loads(r.stdout))


# --- the index for aarch64 and Windows ----------------------------------------------------------------


def test_a_cpu_torch_on_gh200_gets_the_aarch64_cuda_index(run_cli, tmp_path):
    """PyPI's aarch64 torch is CPU-only (pytorch#160162, #168065); pytorch's get-started page sends aarch64
    to download.pytorch.org (test-infra PR#7652): the fix installs from there, and the page names it."""
    dev = [gpu(0, "NVIDIA GH200 480GB", "9.0", total_gib=96)]
    facts = healthy(dev, driver="580.95.05", cuda=13000, machine="aarch64")
    facts.torch = torch_cpu("2.13.0")
    f = finding(check(run_cli, tmp_path, facts), "CD202")
    assert f["fix"][0]["commands"][-1] == (
        f"{PY} -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu130"
    )
    assert "On Linux aarch64 (GH200, GB200, DGX Spark), install the CUDA build from download.pytorch.org " in f["why"]
    assert "(--index-url https://download.pytorch.org/whl/cu130)" in f["why"]


def test_a_cpu_torch_on_windows_gets_the_cuda_index(run_cli, tmp_path):
    dev = [gpu(0, "NVIDIA GeForce RTX 4090", "8.9", total_gib=24)]
    facts = healthy(dev, driver="581.57", cuda=13000, os="Windows", os_id=None)
    facts.torch = torch_cpu("2.13.0+cpu")
    f = finding(check(run_cli, tmp_path, facts), "CD202")
    assert f["fix"][0]["commands"][-1].endswith("torch==2.13.0 --index-url https://download.pytorch.org/whl/cu130")
    assert "CUDA builds come from download.pytorch.org (--index-url https://download.pytorch.org/whl/cu130)" in f["why"]


# --- pixi declares CUDA on the platform ---------------------------------------------------------------------


def test_pixi_on_aarch64_puts_the_drivers_cuda_on_its_platform(run_cli, tmp_path):
    """`[system-requirements]` is deprecated: `pixi workspace platform edit <subdir> --cuda` (pixi docs)."""
    dev = [gpu(0, "NVIDIA GH200 480GB", "9.0", total_gib=96)]
    facts = healthy(dev, driver="580.95.05", cuda=13000, machine="aarch64")
    pixi = EnvironmentManager("pixi", prefix="/w/p/.pixi/envs/default", project="/w/p", manifest="/w/p/pixi.toml")
    facts.torch = torch_cpu("2.13.0", libraries=LibraryFacts(manager=pixi))
    cmds = finding(check(run_cli, tmp_path, facts), "CD202")["fix"][0]["commands"]
    assert cmds == [
        "pixi workspace platform edit linux-aarch64 --cuda 13.0 --manifest-path /w/p/pixi.toml",
        'pixi add --manifest-path /w/p/pixi.toml pytorch-gpu "cuda-version=13.0"',
    ]


# --- uv's --torch-backend=auto reads the driver only ----------------------------------------------------------


def test_uv_users_are_told_when_auto_would_pick_a_build_without_their_gpus_kernels(run_cli, tmp_path):
    """astral-sh/uv#14742: auto gave a GTX 1080 Ti a build without sm_61. Our advice (cu126) says so."""
    dev = [gpu(0, "NVIDIA GeForce GTX 1080 Ti", "6.1", total_gib=11)]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", CU13X, dev, libraries=uv_venv())
    fx = finding(check(run_cli, tmp_path, facts), "CD205")["fix"][0]
    assert fx["commands"][-1] == f"uv pip install --python {PY} torch==2.13.0 --torch-backend=cu126"
    assert fx["when"].endswith(
        "uv's --torch-backend=auto would pick cu132 from the driver alone, which has no kernels for "
        "NVIDIA GeForce GTX 1080 Ti)"
    )


def test_no_uv_note_where_auto_would_pick_a_build_with_the_gpus_kernels(run_cli, tmp_path):
    dev = [gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = torch_cpu("2.13.0+cpu", libraries=uv_venv())
    fx = finding(check(run_cli, tmp_path, facts), "CD202")["fix"][0]
    assert "--torch-backend=" in fx["commands"][-1] and "auto would pick" not in fx["when"]


# --- the cuDNN reinstall speaks the environment's installer ---------------------------------------------------


def cudnn_broken(libraries: LibraryFacts) -> Facts:
    dev = [gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = torch_cuda(
        "2.13.0+cu130",
        "13.0",
        CU13X,
        dev,
        libraries=libraries,
        cudnn_error="RuntimeError: cuDNN version incompatibility",
    )
    return facts


def test_the_cudnn_reinstall_in_a_uv_venv_uses_uv_which_has_no_pip_there(run_cli, tmp_path):
    f = finding(check(run_cli, tmp_path, cudnn_broken(uv_venv())), "CD207")
    (reinstall,) = [x for x in f["fix"] if x["when"] == "Reinstall the wheel's cuDNN"]
    assert reinstall["commands"] == [
        f"uv pip install --python {PY} --reinstall --no-deps "
        f"$(uv pip list --python {PY} --format=freeze | grep -oE '^nvidia-cudnn-cu[0-9]+')"
    ]
    assert not any(" -m pip " in c or c.startswith("pip ") for x in f["fix"] for c in x["commands"])


def test_the_cudnn_reinstall_in_a_pip_venv_uses_that_pythons_pip(run_cli, tmp_path):
    pip = LibraryFacts(manager=EnvironmentManager(kind="pip", prefix="/opt/venv", externally_managed=False))
    f = finding(check(run_cli, tmp_path, cudnn_broken(pip)), "CD207")
    (reinstall,) = [x for x in f["fix"] if x["when"] == "Reinstall the wheel's cuDNN"]
    assert reinstall["commands"] == [
        f"{PY} -m pip install --force-reinstall --no-deps "
        f"$({PY} -m pip list --format=freeze | grep -oE '^nvidia-cudnn-cu[0-9]+')"
    ]


def test_a_missing_cudnn_in_a_uv_venv_reinstalls_torch_with_uv(run_cli, tmp_path):
    facts = cudnn_broken(uv_venv())
    facts.torch.cudnn_error = None
    facts.torch.cudnn_present = False
    f = finding(check(run_cli, tmp_path, facts), "CD207")
    assert f["fix"][0]["commands"] == [
        f"uv pip install --python {PY} --reinstall --no-deps torch==2.13.0 --torch-backend=cu130"
    ]


# --- Kepler: torch 2.7 cu118 and the 470 driver branch ---------------------------------------------------------


def test_a_k80_gets_torch_27_cu118_the_last_build_with_sm_37(run_cli, tmp_path):
    dev = [gpu(0, "Tesla K80", "3.7", total_gib=12)]
    facts = healthy(dev, driver="470.256.02", cuda=11040)
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", CU126, dev, available=False)
    f = finding(check(run_cli, tmp_path, facts), "CD206")
    assert (
        f["fix"][0]["commands"][-1]
        == f"{PY} -m pip install torch==2.7.0 --index-url https://download.pytorch.org/whl/cu118"
    )


def test_a_kepler_driver_upgrade_never_leaves_the_470_branch(run_cli, tmp_path):
    """CUDA 11.8 needs 520 in full, but 470 runs it through minor-version compatibility (from 450.80.02):
    the upgrade stays where the driver still drives the K80, and names no 580 package."""
    dev = [gpu(0, "Tesla K80", "3.7", total_gib=12)]
    facts = healthy(dev, driver="418.87.00", cuda=10010)
    facts.torch = torch_cuda("2.7.0+cu118", "11.8", "3.7 " + CU126, dev, available=False)
    f = finding(check(run_cli, tmp_path, facts), "CD203")
    assert f["fix"][0]["when"] == "Upgrade the NVIDIA driver to 450.80.02 or newer (Any Linux, driver 470): CUDA 11.8"
    assert not any("580" in c or "ubuntu-drivers" in c for x in f["fix"] for c in x["commands"])


def test_an_old_driver_on_a_kepler_gpu_is_never_upgraded_to_the_580_branch(run_cli, tmp_path):
    """NVML of an old driver lacks functions: the driver rule's upgrade for a K80 is its 470 legacy driver
    (from NVIDIA's download page: no distribution package for 470 is sourced), never `nvidia-driver-580`,
    which ignores Kepler like every branch after 470."""
    dev = [gpu(0, "Tesla K80", "3.7", total_gib=12)]
    facts = healthy(dev, driver="418.87.00", cuda=10010)
    facts.driver.missing_functions = ["nvmlDeviceGetMemoryInfo_v2"]
    report = check(run_cli, tmp_path, facts)
    upgrade = [x for f in report["findings"] for x in f["fix"] if x["when"].startswith("Upgrade the driver")]
    assert upgrade and upgrade[0]["commands"] == ["xdg-open https://www.nvidia.com/Download/index.aspx"]


# --- the texts are templates, shown in Chinese ---------------------------------------------------------------


def _english_left():
    import importlib.util

    spec = importlib.util.spec_from_file_location("message_coverage", ROOT / "tools" / "message_coverage.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.english_left


def advice_machines() -> list[Facts]:
    """Machines whose fixes come from advice/install.py: a note, a GPU's reason, uv's pick, a driver
    upgrade capped at the GPU's branch, conda, Windows, aarch64, and no command while inputs are unknown."""
    p1080 = [gpu(0, "NVIDIA GeForce GTX 1080 Ti", "6.1", total_gib=11)]
    k80 = [gpu(0, "Tesla K80", "3.7", total_gib=12)]
    gh200 = [gpu(0, "NVIDIA GH200 480GB", "9.0", total_gib=96)]
    rtx5090 = [gpu(0, "NVIDIA GeForce RTX 5090", "12.0", total_gib=32)]
    v100 = [gpu(0, "Tesla V100-SXM2-32GB", "7.0", total_gib=32)]
    conda = LibraryFacts(manager=EnvironmentManager(kind="conda", prefix="/opt/conda", torch_installer="conda"))
    cases = [
        (p1080, "580.95.05", 13000, torch_cuda("2.13.0+cu130", "13.0", CU13X, p1080, libraries=uv_venv()), {}),
        (k80, "470.256.02", 11040, torch_cuda("2.13.0+cu126", "12.6", CU126, k80, available=False), {}),
        (k80, "418.87.00", 10010, torch_cuda("2.7.0+cu118", "11.8", "3.7 " + CU126, k80, available=False), {}),
        (gh200, "580.95.05", 13000, torch_cpu("2.13.0"), {"machine": "aarch64"}),
        (gh200, "580.95.05", 13000, torch_cpu("2.13.0", libraries=conda), {}),
        (rtx5090, "570.86.10", 12080, torch_cuda("2.13.0+cu126", "12.6", CU126, rtx5090), {"in_container": True}),
        (
            v100,
            "470.82.01",
            11040,
            torch_cuda("2.13.0+cu126", "12.6", CU126, v100, available=False),
            {"os_id": "rocky"},
        ),
        (rtx5090, "580.95.05", 13000, torch_cpu("2.13.0+cpu", libraries=LibraryFacts()), {"os": "Windows"}),
    ]
    out = []
    for devices, driver, cuda, torch, system in cases:
        facts = healthy(devices, driver=driver, cuda=cuda, **system)
        facts.torch = torch
        out.append(facts)
    return out


def test_advice_and_free_threading_texts_are_templates_with_no_english_left_in_chinese():
    from cudadoctor import locale as i18n
    from cudadoctor.model import Message
    from cudadoctor.render.localize import finding as localized
    from cudadoctor.rules import evaluate
    from cudadoctor.rules.examples import examples

    english_left = _english_left()
    findings = [x for facts in advice_machines() for x in evaluate(facts, [])]
    findings += [x for ex in examples().values() for x in ex.findings() if x.code == "CD230"]
    assert any(x.code == "CD230" for x in findings)
    advice_labels = 0
    try:
        for x in findings:
            with i18n.use("zh_CN"):
                zh = localized(x)
            labels = [(a.when, b.when) for a, b in zip(x.fix, zh.fix, strict=True)]
            if x.code == "CD230":
                for english, chinese in [(x.title, zh.title), (x.why, zh.why), *labels]:
                    assert isinstance(english, Message), english
                    assert english_left(chinese) == [], (english, chinese)
            for english, chinese in labels:
                if "(torch " in english or "NVIDIA driver" in english:  # built by advice/install.py
                    assert isinstance(english, Message), english
                    assert english_left(chinese) == [], (x.code, english, chinese)
                    advice_labels += 1
    finally:
        i18n.set_language("en")
    assert advice_labels >= 4


def test_check_in_chinese_names_the_free_threaded_companions(run_cli, tmp_path):
    facts = free_threaded_machine(torchao="0.14.1")
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"tool": "cudadoctor", "schema_version": 2, "facts": to_jsonable(facts)}))
    r = run_cli("check", "--from", str(report), "--lang", "zh_CN", env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert "没有适用于自由线程 Python 的构建：torchao" in r.stdout, r.stdout


# --- wheel variants (PEP 817) -------------------------------------------------------------------------------


def test_the_null_variant_of_a_variant_wheel_is_explained_and_the_fix_names_the_build(run_cli, tmp_path):
    """A variant-enabled uv that ran where it saw no GPU (a `docker build`) installs torch's null variant,
    the CPU build (PEP 817, "Null variant"). The page says why; the fix names the CUDA build itself."""
    from cudadoctor.facts.torch import WheelVariant

    dev = [gpu(0, "NVIDIA GeForce RTX 4090", "8.9", total_gib=24)]
    facts = healthy(dev, driver="580.95.05", cuda=13000)
    facts.torch = torch_cpu("2.13.0", libraries=uv_venv())
    facts.torch.torch_installer = "uv"
    facts.torch.torch_variant = WheelVariant(label="null", properties=[])
    f = finding(check(run_cli, tmp_path, facts), "CD202")
    assert "null variant of a variant wheel" in f["why"] and "no plug-in chooses" in f["why"]
    assert f["fix"][0]["commands"][-1].endswith("torch==2.13.0 --torch-backend=cu130")
    # a CUDA variant, or a regular wheel: nothing about variants
    facts.torch.torch_variant = WheelVariant(label="cu130", properties=["nvidia :: cuda_version_lower_bound :: 13.0"])
    assert "variant wheel" not in (finding(check(run_cli, tmp_path, facts), "CD202")["why"] or "")
