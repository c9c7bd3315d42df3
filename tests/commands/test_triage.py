"""`cudadoctor triage`: the paste parsers one format at a time, the GPU name table, the corpus of pastes
with their expected verdicts (tests/triage_corpus/expected.json), the command line and the GitHub
Actions recipe's script."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudadoctor.backends.paste import collect_env, env_reports, errors, nvcc, nvidia_smi, packages, read, text
from cudadoctor.commands.triage import diagnose
from cudadoctor.knowledge import gpu_names
from cudadoctor.report import Status

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "triage_corpus"
EXPECTED = {k: v for k, v in json.loads((CORPUS / "expected.json").read_text()).items() if not k.startswith("_")}


def paste(name: str) -> str:
    return (CORPUS / name).read_text(encoding="utf-8")


def lines(name: str) -> list[str]:
    return text.lines(paste(name))


@dataclass
class Ran:
    returncode: int
    stdout: bytes
    stderr: bytes


def cli(*args: str, stdin: bytes | None = None) -> Ran:
    """`cudadoctor triage ARGS` in this process (the command reads nothing of this machine)."""
    from cudadoctor.cli import cli as group

    r = CliRunner().invoke(group, ["triage", *args], input=stdin if stdin is not None else b"")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return Ran(r.exit_code, r.stdout_bytes, r.stderr_bytes)


def cli_process(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """The real command line, in a child: what a user runs."""
    return subprocess.run(
        [sys.executable, "-m", "cudadoctor", "triage", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=60,
        cwd=ROOT,
    )


# --- the corpus --------------------------------------------------------------------------------


def test_every_paste_in_the_corpus_has_an_expectation():
    files = {p.name for p in CORPUS.iterdir() if p.suffix in (".txt", ".md")} - {"unrelated_text.txt"}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_verdict(name):
    want = EXPECTED[name]
    p = read(paste(name))
    rep = diagnose(p)
    codes = {f.code for f in rep.findings}
    for fmt in want["formats"]:
        assert fmt in p.formats, (fmt, p.formats)
    assert set(want["codes"]) <= codes, (want["codes"], sorted(codes))
    assert not set(want["absent"]) & codes, sorted(codes)
    assert rep.status.value == want["status"], rep.verdict
    ask = next((f for f in rep.findings if f.code == "CD901"), None)
    for command in want.get("ask", []):
        assert ask is not None and any(command in c for fx in ask.fix for c in fx.commands)


def test_the_corpus_covers_every_verdict_family():
    families = " ".join(v["family"] for v in EXPECTED.values())
    for family in (
        "CPU-only wheel",
        "driver too old",
        "arch not in build",
        "GPU too old",
        "NVML mismatch",
        "device order",
        "cuDNN",
        "container",
        "WSL",
        "CUDA errors",
        "library mismatches",
        "checkpoint",
    ):
        assert family in families, family


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ask_for_whenever_a_deciding_fact_is_unknown(name):
    p = read(paste(name))
    f = p.facts
    assert f.paste is not None
    if f.paste.from_report:
        return
    macos = f.system is not None and f.system.os == "Darwin"  # there is no NVIDIA driver to ask about
    undecided = f.torch is None or f.torch.cuda_built is None or (f.driver is None and not macos)
    codes = {x.code for x in diagnose(p).findings}
    if undecided:
        assert "CD901" in codes


def test_only_torch_version_is_never_healthy():
    rep = diagnose(read(">>> torch.__version__\n'2.13.0'\n"))
    assert rep.status is Status.INCOMPLETE and rep.exit_code == 3  # no verdict: not enough to tell
    assert rep.verdict.startswith("NOT ENOUGH TO TELL") and "nvidia-smi" in rep.verdict
    ask = next(f for f in rep.findings if f.code == "CD901")
    assert "nvidia-smi" in ask.title


def test_truncating_a_paste_never_crashes_and_never_turns_healthy_without_torch_ok():
    whole = paste("issue_mixed_wrapped_truncated.md").splitlines()
    for n in range(1, len(whole) + 1, 3):
        p = read("\n".join(whole[:n]))
        if p.empty:
            continue
        rep = diagnose(p)
        if rep.status is Status.HEALTHY:
            assert any(f.code == "CD200" for f in rep.findings)


def test_a_paste_of_one_harmless_warning_is_not_called_a_healthy_machine():
    # kohya-ss/sd-scripts#678: the TypedStorage notice alone; nothing of the setup was shown
    rep = diagnose(read(paste("real/kohya_678_typedstorage_warning.txt")))
    assert rep.exit_code == 0 and any(f.code == "CD915" for f in rep.findings)
    assert not rep.verdict.startswith("HEALTHY")
    assert rep.verdict.startswith("NOTHING TO FIX in what was shown") and "0 of 8 checks ran" in rep.verdict


def test_no_cuda_gpus_alone_is_not_called_a_run_time_error_and_asks_what_hides_them():
    # torch raises it when CUDA counts no device: the process sees no GPU at all, a set-up matter
    rep = diagnose(read("RuntimeError: No CUDA GPUs are available\n"))
    assert "CD909" not in {f.code for f in rep.findings}
    assert rep.exit_code == 3 and rep.verdict.startswith("NOT ENOUGH TO TELL")
    ask = next(f for f in rep.findings if f.code == "CD901")
    assert any('echo "[$CUDA_VISIBLE_DEVICES]"' in c for fx in ask.fix for c in fx.commands)


def test_no_kernel_image_on_a_named_blackwell_gpu_is_the_build_lacking_its_architecture():
    # hanamizuki-ai/launcher-support#28: a launcher's bundled torch on an RTX 5070 Ti; no torch version shown
    post = (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
        "多次重启后无果\n系统windows11\ncpui714700\n显卡rtx5070ti\n"
    )
    rep = diagnose(read(post))
    codes = {f.code: f for f in rep.findings}
    assert "CD215" not in codes  # one problem, said once, with the GPU named
    cd205 = codes["CD205"]
    assert cd205.severity.value == "error" and "sm_120" in cd205.title and "CUDA 12.8" in cd205.title
    assert any("get_arch_list()" in c for fx in cd205.fix for c in fx.commands)
    # an older GPU: the message alone cannot tell torch from an extension, and no GPU is blamed
    older = diagnose(read(post.replace("rtx5070ti", "RTX 3060")))
    assert "CD205" not in {f.code for f in older.findings}


def test_no_cuda_gpus_in_a_container_says_the_container_likely_has_no_gpu():
    post = "I run it in a docker container\ndocker compose up\nRuntimeError: No CUDA GPUs are available\n"
    rep = diagnose(read(post))
    cd910 = next(f for f in rep.findings if f.code == "CD910")
    assert cd910.severity.value == "warning" and "likely" in cd910.title
    assert any("--gpus all" in c for fx in cd910.fix for c in fx.commands)
    # Lightning's wording is also what a CPU-only torch gives: the container is not blamed
    lightning = "inside the docker container\nMisconfigurationException: GPUs requested but none are available.\n"
    assert "CD910" not in {f.code for f in diagnose(read(lightning)).findings}


def test_the_verdict_names_what_the_paste_did_not_show():
    rep = diagnose(read(paste("nvml_mismatch.txt")))
    assert rep.scope is not None and "not checked" in rep.scope and "torch" in rep.scope


def test_the_real_collect_env_of_this_torch_parses():
    p = read(paste("collect_env_2.13_real_cpu.txt"))
    t = p.facts.torch
    assert t is not None and t.version == "2.13.0+cpu" and t.cuda_built is False and t.cuda is None
    assert p.facts.driver is None  # "Could not collect": unknown, not "no driver"
    assert p.facts.system is not None and p.facts.system.os == "Linux"


# --- one parser at a time ------------------------------------------------------------------------


def test_collect_env_torch_2x():
    part = collect_env.parse(lines("collect_env_2.1_cpu_wheel_on_gpu.txt"))
    v = part.values
    assert v["torch_version"] == "2.1.0+cpu" and v["torch_cuda_built"] is False and v["torch_available"] is False
    assert v["driver_version"] == "535.104.05" and v["nvml_status"] == "ok" and v["gpu_count"] == 1
    assert v["os"] == "Linux" and v["machine"] == "x86_64" and v["python_version"] == "3.10.12"
    assert part.gpus[0].name == "NVIDIA GeForce RTX 3090"
    assert part.packages["torch"] == "2.1.0+cpu"
    assert "nvcc_version" not in v  # "Could not collect" stays unknown


def test_collect_env_torch_1x_and_multiline_gpus():
    part = collect_env.parse(lines("collect_env_1.4_v100.txt"))
    assert part.values["torch_cuda"] == "10.1" and part.values["torch_available"] is True
    assert [g.name for g in part.gpus] == ["Tesla V100-SXM2-16GB"] * 2
    assert part.values["nvcc_version"] == "10.1"
    assert "os" in part.values and "machine" not in part.values  # 1.x printed no machine


def test_collect_env_with_full_width_colons_reads_its_gpus_and_the_driver_verdict():
    # verbatim from pytorch/pytorch#37320 (torch 1.5.0, "GPU 0：" with U+FF1A): the GPUs were not read,
    # so the driver check that explains is_available() False never ran
    post = (
        "PyTorch version 1.5.0\nIs debug build: No\nCUDA used to build PyTorch: 10.2\n\n"
        "Os: Ubuntu 18.04.3 LTS\nPython version: 3.6\nIs CUDA available: No\n"
        "CUDA runtime version: 10.0.130\nGPU models and configuration:\n"
        "GPU 0： Tesla P100-PCIE-16GB\nGPU 1： Tesla P100-PCIE-16GB\n\n"
        "Nvidia driver version: 410.104\n"
    )
    part = collect_env.parse(text.lines(post))
    assert [g.name for g in part.gpus] == ["Tesla P100-PCIE-16GB"] * 2
    rep = diagnose(read(post))
    cd203 = next(f for f in rep.findings if f.code == "CD203")
    assert cd203.severity.value == "error" and "410.104" in cd203.title


def test_collect_env_windows_crlf_and_localized():
    p = read(paste("collect_env_windows_crlf_healthy.txt"))
    assert p.facts.system is not None and p.facts.system.os == "Windows"
    loc = collect_env.parse(lines("collect_env_windows_localized_cpu_wheel.txt"))
    assert loc.values["os"] == "Windows" and loc.values["os_release"] == "Microsoft Windows 11 Famille"
    assert loc.values["torch_cuda_built"] is False
    assert loc.gpus[0].name == "NVIDIA GeForce RTX 3060 Laptop GPU"


def test_collect_env_vllm_sections_and_environment():
    part = collect_env.parse(lines("vllm_collect_env_h100.txt"))
    assert part.format == "vLLM collect_env"
    assert part.values["torch_available"] is True and part.values["torch_cuda"] == "12.4"
    assert len(part.gpus) == 2 and part.env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert part.packages["nvidia-cuda-runtime-cu12"] == "12.4.127"


def test_collect_env_wsl_platform():
    part = collect_env.parse(lines("wsl_collect_env_no_driver.txt"))
    assert part.values["wsl"] is True
    assert "driver_version" not in part.values and not part.gpus  # "No CUDA" is not a fact


def test_accelerate_and_transformers_env():
    acc = env_reports.parse_hf(lines("accelerate_env.txt"))
    assert acc.format == "accelerate env"
    assert acc.values["torch_version"] == "2.4.1+cu121" and acc.values["torch_available"] is True
    assert acc.torch_gpus[0].name == "NVIDIA A10G"
    old = env_reports.parse_hf(lines("transformers_env_old.txt"))
    assert old.format == "transformers env" and old.values["torch_available"] is False and old.values["os"] == "Windows"
    na = env_reports.parse_hf(lines("transformers_env_accelerator_na.txt"))
    assert na.values["torch_available"] is False and "torch_cuda_built" not in na.values


def test_ds_report_with_colours():
    assert env_reports.detect_ds(lines("ds_report_small_shm.txt"))
    part = env_reports.parse_ds(lines("ds_report_small_shm.txt"))
    assert part.values["torch_cuda"] == "12.1" and part.values["nvcc_version"] == "12.1"
    assert part.values["shm_total"] == 64 << 20


def test_nvidia_smi_banner_old_layout_truncated_name():
    part = nvidia_smi.parse(lines("driver_too_old_smi_pip.txt"))
    assert part.values["driver_version"] == "470.82.01" and part.values["driver_cuda"] == 11040
    assert part.gpus[0].name == "Tesla V100-SXM2..." and part.gpus[0].memory_total == 16160 << 20


def test_nvidia_smi_banner_new_layout_two_gpus():
    part = nvidia_smi.parse(lines("device_order_mixed_gpus.txt"))
    assert [g.name for g in part.gpus] == ["NVIDIA GeForce RTX 3060", "NVIDIA GeForce RTX 4090"]
    assert part.values["gpu_count"] == 2 and part.values["driver_cuda"] == 12020


def test_nvidia_smi_list_query_csv_topo():
    part = nvidia_smi.parse(lines("nvidia_smi_L_and_nvcc.txt"))
    assert part.gpus[1].uuid.startswith("GPU-1c8f") and part.gpus[0].name == "NVIDIA RTX A6000"
    q = nvidia_smi.parse(lines("nvidia_smi_q.txt"))
    assert q.format == "nvidia-smi -q"
    assert q.gpus[0].name == "NVIDIA A100-SXM4-40GB" and q.gpus[0].mig is True and q.values["driver_cuda"] == 12040
    csv = nvidia_smi.parse(lines("nvidia_smi_query_csv.txt"))
    assert csv.gpus[0].capability == "8.9" and csv.values["driver_version"] == "570.86.15"
    topo = nvidia_smi.parse(lines("nvidia_smi_topo.txt"))
    assert topo.values["gpu_count"] == 4


def test_nvcc_version():
    assert nvcc.parse(lines("nvidia_smi_L_and_nvcc.txt")).values["nvcc_version"] == "12.2"


def test_pip_list_freeze_and_conda():
    pip = packages.parse(lines("driver_too_old_smi_pip.txt"))
    assert pip.format == "pip list" and pip.values["torch_cuda"] == "12.4"
    conda = packages.parse(lines("not_compiled_with_cuda.txt"))
    assert conda.format == "conda list" and conda.values["torch_cuda_built"] is False
    cuda_conda = packages.parse(
        ["# Name  Version  Build  Channel", "pytorch  2.1.0  py3.10_cuda12.1_cudnn8.9.2_0  pytorch"]
    )
    assert cuda_conda.values["torch_cuda"] == "12.1"
    forge = packages.parse(
        ["# Name  Version  Build  Channel", "pytorch  2.5.1  cuda126_generic_py312_h1234  conda-forge"]
    )
    assert forge.values["torch_cuda"] == "12.6"


@pytest.mark.parametrize(
    ("snippet", "kind"),
    [
        ("The NVIDIA driver on your system is too old (found version 11040).", "driver-too-old"),
        ("CUDA error: no kernel image is available for execution on the device", "no-kernel-image"),
        ("Error 804: forward compatibility was attempted on non supported HW", "cuda-init-failed"),
        ("Failed to initialize NVML: Driver/library version mismatch", "nvml-lib-rm-version-mismatch"),
        ("libtorch_cuda.so: undefined symbol: ncclCommRegister", "undefined-symbol"),
        ("OSError: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file", "cannot-open-library"),
        ("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1.", "deserialize-cuda"),
        ('Missing key(s) in state_dict: "module.fc.weight"', "state-dict-prefix"),
        ("RuntimeError: CUDA error: device-side assert triggered", "device-side-assert"),
        ("nvidia-container-cli: initialization error: nvml error: driver not loaded", "nvidia-container-cli"),
    ],
)
def test_error_texts(snippet, kind):
    assert kind in [h.kind for h in errors.parse(text.lines("some prose\n" + snippet + "\nmore")).hits]


def test_error_text_wrapped_across_lines():
    wrapped = "UserWarning: CUDA initialization: The NVIDIA driver on your system is too\nold (found version 11040)."
    hit = errors.parse(text.lines(wrapped)).hits[0]
    assert hit.kind == "driver-too-old" and hit.detail["found"] == 11040


def test_arch_warning_names_the_gpu_and_the_arch_list():
    part = errors.parse(lines("arch_not_in_build_rtx5090.txt"))
    assert part.torch_gpus[0].name == "NVIDIA GeForce RTX 5090" and part.torch_gpus[0].capability == "12.0"
    assert part.values["torch_arch_flags"][-1] == "sm_90"


def test_cudadoctor_reports_are_read_whole():
    p = read(paste("cudadoctor_json_report.md"))
    assert p.facts.paste is not None and p.facts.paste.from_report
    assert p.facts.pci is not None  # only a machine's own check has PCI facts
    md = read(paste("cudadoctor_markdown_report.md"))
    assert md.formats[0] == "cudadoctor Markdown report" and md.facts.pci is not None


# --- GPU names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6"),
        ("Tesla V100-SXM2-16GB", "7.0"),
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("NVIDIA A100-SXM4-80GB", "8.0"),
        ("NVIDIA A10G", "8.6"),
        ("NVIDIA L4", "8.9"),
        ("NVIDIA L40S", "8.9"),
        ("NVIDIA RTX 6000 Ada Generation", "8.9"),
        ("Quadro RTX 6000", "7.5"),
        ("NVIDIA RTX A6000", "8.6"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0"),
        ("NVIDIA GeForce RTX 5090", "12.0"),
        ("NVIDIA B200", "10.0"),
        ("NVIDIA GB10", "12.1"),
        ("NVIDIA GeForce GTX 1080 Ti", "6.1"),
        ("GeForce GTX 1080", "6.1"),
        ("NVIDIA GeForce GTX 1650", "7.5"),
        ("NVIDIA GeForce RTX 2050", "8.6"),
        ("NVIDIA GeForce MX450", "7.5"),
        ("Tesla T4", "7.5"),
        ("Tesla P100-PCIE-16GB", "6.0"),
        ("Tesla P40", "6.1"),
        ("Tesla K80", "3.7"),
        ("Tesla K40m", "3.5"),
        ("NVIDIA TITAN RTX", "7.5"),
        ("NVIDIA TITAN X (Pascal)", "6.1"),
        ("GeForce GTX TITAN X", "5.2"),
        ("NVIDIA GeForce GTX 960M", "5.0"),
        ("Orin (nvgpu)", "8.7"),
        ("NVIDIA Jetson Xavier NX", "7.2"),
        ("NVIDIA Tegra X1", "5.3"),
    ],
)
def test_gpu_names(name, cc):
    assert gpu_names.capability(name) == cc


@pytest.mark.parametrize("name", ["NVIDIA GeForce GT 730", "NVIDIA GeForce ...", "Some Other GPU", "", None])
def test_gpu_names_unknown_or_ambiguous(name):
    assert gpu_names.capability(name) is None


# --- the command line ----------------------------------------------------------------------------


def test_cli_text_from_file():
    r = cli_process(str(CORPUS / "driver_too_old_smi_pip.txt"))
    out = r.stdout.decode()
    assert r.returncode == 1
    assert out.startswith("Found in the paste: nvidia-smi, pip list")
    assert "CD203" in out and "CD901" in out


def test_cli_stdin_json():
    r = cli("--format", "json", stdin=paste("only_torch_version.txt").encode())
    data = json.loads(r.stdout)
    assert data["command"] == "triage" and data["status"] != "healthy"
    assert data["facts"]["paste"]["formats"] == ["Python prompt output"]
    assert r.returncode == 3 and data["verdict"].startswith("NOT ENOUGH TO TELL")


def test_cli_markdown_is_a_reply():
    r = cli("-", "--format", "markdown", stdin=paste("cudnn_missing_library.txt").encode())
    out = r.stdout.decode()
    assert out.startswith("## cudadoctor") and "**Triage of the pasted output.**" in out
    assert "CD905" in out and "To be sure, ask for" in out


@pytest.mark.parametrize("name", ["empty", "blank", "unrelated_text.txt"])
def test_cli_nothing_to_diagnose(name):
    body = {"empty": b"", "blank": b"   \n\n"}[name] if name in ("empty", "blank") else paste(name).encode()
    r = cli(stdin=body)
    assert r.returncode == 2 and r.stdout == b""
    err = r.stderr.decode()
    assert err.startswith("cudadoctor: nothing to diagnose in this text") and "collect_env" in err
    assert err.count("\n") == 1


def test_cli_binary_huge_and_missing_input(tmp_path):
    binary = tmp_path / "core"
    binary.write_bytes(b"\x7fELF\x00\x01" * 100)
    huge = tmp_path / "huge.log"
    huge.write_bytes(b"x" * (3 << 20))
    for path, words in (
        (binary, "binary"),
        (huge, "MiB"),
        (tmp_path / "nope.txt", "cannot read"),
        (tmp_path, "directory"),
    ):
        r = cli(str(path))
        err = r.stderr.decode()
        assert r.returncode == 2 and words in err and err.count("\n") == 1, err


def test_adversarial_input_is_bounded_in_time():
    nasty = "\n".join(
        [
            "{" * 200_000,
            "lib" * 100_000,
            "Found GPU0 " * 20_000,
            "CUDA capability sm_80 is not compatible with the current PyTorch installation " * 2_000,
            "| " * 100_000,
            "undefined symbol: " * 20_000,
        ]
    )
    start = time.monotonic()
    p = read(nasty[: 2 << 20])
    diagnose(p) if not p.empty else None
    assert time.monotonic() - start < 20


# --- the GitHub Actions recipe ----------------------------------------------------------------------


def _event(tmp_path: Path, body: str, title: str = "") -> Path:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"action": "opened", "issue": {"number": 7, "title": title, "body": body}}))
    return path


@pytest.mark.parametrize(
    ("name", "code"),
    [("issue_mixed_wrapped_truncated.md", "CD205"), ("driver_too_old_error_only.txt", "CD902")],
)
def test_recipe_script_writes_the_comment(tmp_path, name, code):
    body = paste(name)
    out = tmp_path / "comment.md"
    r = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "examples" / "triage_issue.py"), str(_event(tmp_path, body)), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    comment = out.read_text()
    assert comment.startswith("<!-- cudadoctor-triage -->") and code in comment and "**Verdict:**" in comment


def test_recipe_script_posts_nothing_for_unrelated_issues(tmp_path):
    out = tmp_path / "comment.md"
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "docs" / "examples" / "triage_issue.py"),
            str(_event(tmp_path, "Add dark mode")),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert r.returncode == 0 and not out.exists() and "nothing to triage" in r.stdout


def test_recipe_script_reads_the_issue_title_where_the_error_often_is(tmp_path):
    # OpenGVLab/Ask-Anything#57: the error only in the title, a sentence in the body
    event = _event(
        tmp_path,
        "While running demo.py, I am able to initialize the various models but get terminated with the AssertionError.",
        title="AssertionError: Torch not compiled with CUDA enabled",
    )
    out = tmp_path / "comment.md"
    r = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "examples" / "triage_issue.py"), str(event), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    assert "CD912" in out.read_text()


def test_the_recipe_in_the_docs_runs_the_tested_script():
    doc = (ROOT / "docs" / "triage.md").read_text()
    # the workflow keeps this repository at tools/cudadoctor: the script it runs is the one tested above
    run = 'python tools/cudadoctor/docs/examples/triage_issue.py "$GITHUB_EVENT_PATH" triage-comment.md'
    assert run in doc and (ROOT / run.split()[1].removeprefix("tools/cudadoctor/")).is_file()
    assert "github.event.issue.body" not in doc  # untrusted text never reaches a shell line


def test_the_recipe_installs_cudadoctor_from_its_source():
    """cudadoctor is on no index: `pip install cudadoctor` would fail (or install someone else's
    package). The workflow installs the checkout it keeps beside the project, a project pip can
    install (a pyproject.toml that names cudadoctor)."""
    doc = (ROOT / "docs" / "triage.md").read_text()
    runs = [line.strip() for line in doc.splitlines() if line.strip().startswith("- run: pip install")]
    assert runs == ["- run: pip install ./tools/cudadoctor"]
    assert "submodules: true" in doc
    assert 'name = "cudadoctor"' in (ROOT / "pyproject.toml").read_text()
    assert "`pip install .` in a checkout" in doc and "git+" in doc  # anywhere else


def test_secrets_in_a_paste_never_reach_the_report():
    body = paste("device_order_vllm_mixed.txt").replace("NCCL_CUMEM_ENABLE=0", "HF_TOKEN=hf_abcdefghijklmnopqrstu")
    body += "\nImportError: libfoo.so.1: cannot open shared object file (from https://bob:s3cret@example.com/x)"
    r = cli("--format", "json", stdin=body.encode())
    assert b"hf_abcdefghijklmnopqrstu" not in r.stdout and b"s3cret" not in r.stdout
    assert json.loads(r.stdout)["facts"]["system"]["env"]["HF_TOKEN"] == "***"


def test_a_powershell_redirected_utf16_file_is_read(tmp_path):
    path = tmp_path / "env.txt"
    path.write_bytes(paste("collect_env_windows_localized_cpu_wheel.txt").encode("utf-16"))  # BOM + UTF-16LE
    r = cli(str(path))
    assert r.returncode == 1 and b"CD202" in r.stdout


def test_a_long_log_is_read_at_its_start_and_its_end():
    log = "\n".join(f"epoch 1 step {n} loss 0.{n % 97:02d}" for n in range(40_000))
    p = read(paste("nvidia_smi_L_and_nvcc.txt") + "\n" + log + "\n" + paste("cudnn_missing_library.txt"))
    assert "nvidia-smi -L" in p.formats and "error text" in p.formats
    assert {"CD100", "CD905"} <= {f.code for f in diagnose(p).findings}


def test_an_error_number_outside_a_cuda_message_is_not_a_cuda_error():
    assert not errors.parse(["make: *** [all] Error 3: no rule to make target"]).hits
    assert errors.parse(["CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 3: init"]).hits


def test_a_wrapped_nvidia_smi_header():
    wrapped = ["| NVIDIA-SMI 550.54.15              Driver Version:", "550.54.15      CUDA Version: 12.4     |"]
    part = nvidia_smi.parse(wrapped)
    assert part.values["driver_version"] == "550.54.15" and part.values["driver_cuda"] == 12040


def test_a_linux_nvidia_smi_on_a_windows_driver_is_wsl2():
    banner = "| NVIDIA-SMI 570.124.03             Driver Version: 572.60         CUDA Version: 12.8     |"
    part = nvidia_smi.parse([banner])
    assert part.values["wsl"] is True and part.values["driver_version"] == "572.60"
    native = nvidia_smi.parse(["| NVIDIA-SMI 572.60      Driver Version: 572.60      CUDA Version: 12.8 |"])
    assert "wsl" not in native.values


def test_pip_freeze_direct_url_wheel():
    part = packages.parse(
        ["torch @ https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp310-cp310-linux_x86_64.whl"]
    )
    assert part.values["torch_version"] == "2.1.0+cu121" and part.values["torch_cuda"] == "12.1"


def test_a_healthy_h100_collect_env_does_not_claim_zero_gpus():
    """Real output of a lent H100 (issue 19): collect_env's GPU list comes from nvidia-smi, so which devices
    torch sees is unknown — once rendered as "uses 0 GPUs: no devices"."""
    rep = diagnose(read(paste("collect_env_2.11_real_h100.txt")))
    ok = next(f for f in rep.findings if f.code == "CD200")
    assert ok.title == "torch 2.11.0+cu130 (CUDA 13.0) can use CUDA: torch.cuda.is_available() is True"
    assert rep.status is Status.HEALTHY


# --- unknown is not false, in what the user reads ---------------------------------------------------

# A Python value the page names, not an unknown fact: a CPU-only build's torch.version.cuda is None.
PYTHON_NONE = "torch.version.cuda is None"


def shown_text(out: str) -> str:
    """What a user reads: the report without the JSON facts a Markdown reply folds away (JSON may hold
    null for an unknown) and without shell redirections to /dev/null."""
    out = re.sub(r"```json\n.*?\n```", "", out, flags=re.DOTALL)
    return out.replace("/dev/null", "").replace(PYTHON_NONE, "")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_output_shows_none_for_an_unknown(name, fmt):
    r = cli(str(CORPUS / name), "--format", fmt)
    out = shown_text(r.stdout.decode())
    assert out.strip() and not re.findall(r".{0,40}\b(?:None|null)\b.{0,20}", out)


def test_a_driver_the_paste_does_not_show_is_not_none():
    """nvidia-smi -L lists GPUs but not the driver: CD100 names the GPUs, and no version."""
    out = cli(str(CORPUS / "nvidia_smi_L_and_nvcc.txt")).stdout.decode()
    assert "CD100 NVIDIA driver, 2 GPUs: NVIDIA RTX A6000" in out
    out = cli(str(CORPUS / "accelerate_env.txt")).stdout.decode()
    assert "CD200 torch 2.4.1+cu121 uses 1 GPU: NVIDIA A10G" in out  # not "(CUDA None) uses 0 GPUs"


NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
SMI_535 = "| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n"


def test_an_install_fix_claims_only_what_the_paste_shows():
    """Without the driver, GPUs and environment, no install command is guessed: the fix says what is
    unknown (knowing less never changes an install command into another one); never "fits this driver"."""
    unknown = " ".join(
        cli(stdin=("torch                     2.5.1+cu124\n" + NO_KERNEL).encode()).stdout.decode().split()
    )
    assert "Install a build" in unknown and "fits this driver" not in unknown
    assert "which build fits is not known (the OS and CPU architecture; the NVIDIA driver's version" in unknown
    assert "pip install" not in unknown and "run every check to see it." in unknown  # no colon: no command follows
    rtx5090 = " ".join(cli(str(CORPUS / "arch_not_in_build_rtx5090.txt")).stdout.decode().split())
    assert "No torch 2.5 build has kernels for it; torch 2.7 and newer do" in rtx5090
    assert "fits this driver" not in rtx5090


@pytest.mark.parametrize(
    "listing",
    [
        # `pip list | grep torch`: no header, columns aligned by spaces
        "torch                     2.5.1+cu124\ntorchvision               0.20.1+cu124\n",
        "$ pip list | grep -i torch\ntorch                     2.5.1+cu124\n",
        # Windows: `pip list | findstr torch`, CRLF line ends
        "C:\\> pip list | findstr torch\r\ntorch                     2.5.1+cu124\r\n",
        # the same lines with the header pip prints
        "Package                   Version\n------------------------- ------------\n"
        "torch                     2.5.1+cu124\n",
        # an editable install adds its location
        "torch                     2.5.1+cu124   /home/me/src/pytorch\n",
        # the nvidia-* wheels a PyPI torch brings, listed beside it
        "nvidia-cudnn-cu12         9.1.0.70\ntorch                     2.5.1+cu124\n",
    ],
)
def test_pip_list_grep_lines_are_read(listing):
    out = cli(stdin=listing.encode()).stdout.decode()
    head = out.split("\n", 2)
    assert head[0] == "Found in the paste: pip list", out
    assert head[1].strip() == "torch version 2.5.1+cu124; torch built for CUDA 12.4"


def test_prose_that_names_torch_is_read_as_prose_not_as_a_pip_list():
    """Issue 27: a text that names a torch version is never "nothing to diagnose"; it is read from the
    sentence (with its line), not taken for a pip list, and the rest is asked for."""
    r = cli(stdin=b"torch 2.5 is what we use here\nnvidia-smi 535.104\n")
    out = r.stdout.decode()
    assert r.returncode == 3 and "prose and command lines" in out and "pip list" not in out.split("\n")[0]
    assert "torch version 2.5" in out and "NOT ENOUGH TO TELL" in out


def test_the_where_column_keeps_the_line_when_it_is_cut():
    """At 80 columns the table is cut; each fact still says which line of the paste it came from."""
    out = cli(str(CORPUS / "collect_env_2.11_real_h100.txt")).stdout.decode()
    table = out[out.index("CD900") :].split("\n")[2:16]
    assert all(len(line) <= 80 for line in out.splitlines())
    assert all(re.search(r"line \d+ of ", line) for line in table), table


def test_every_exit_code_means_one_thing_in_every_doc():
    """Not enough to tell is 3, no verdict, like an incomplete check: the docs say so, and triage does it."""
    r = cli(stdin=paste("only_torch_version.txt").encode())
    assert r.returncode == 3 and b"NOT ENOUGH TO TELL" in r.stdout
    assert cli(str(CORPUS / "driver_too_old_smi_pip.txt")).returncode == 1
    assert cli(stdin=b"hello").returncode == 2
    codes = (ROOT / "docs" / "exit-codes.md").read_text()
    row3 = next(line for line in codes.splitlines() if line.startswith("| 3 |"))
    assert "No verdict" in row3 and "NOT ENOUGH TO TELL" in row3 and "`triage`" in row3
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "3 no verdict" in readme and "`triage`'s paste does not show enough" in readme
    triage_doc = (ROOT / "docs" / "triage.md").read_text()
    row = next(line for line in triage_doc.splitlines() if line.startswith("| 3 |"))
    assert "NOT ENOUGH TO TELL" in row
    help_text = " ".join(cli("--help").stdout.decode().split())
    assert "3 not enough to tell" in help_text


def test_a_fix_without_commands_has_no_empty_block_in_markdown():
    """A fix that only says which build is unknown prints its sentence, never an empty ```sh block."""
    out = cli(
        "--format", "markdown", stdin=("torch                     2.5.1+cu124\n" + NO_KERNEL).encode()
    ).stdout.decode()
    assert "run every check to see it." in out
    assert not re.search(r"```\w*\n\s*```", out)


def test_torch_s_own_not_compatible_verdict_is_one_finding(run_cli):
    """A real post (Hellod035/LeggedLab#26): torch's "sm_120 is not compatible" warning and the rules'
    finding on the arch list it prints are one problem, said once: no second CD205 with another fix."""
    post = ROOT / "tests" / "triage_corpus" / "real" / "leggedlab_26_sm120_zh.txt"
    r = run_cli("triage", "--json", str(post))
    cd205 = [f for f in r.json["findings"] if f["code"] == "CD205"]
    assert len(cd205) == 1 and "has no kernels for NVIDIA GeForce RTX 5090" in cd205[0]["title"]
    assert "torch 2.15 builds with kernels for it: cu130, cu132" in " ".join(cd205[0]["why"].split())
    md = run_cli("--lang", "zh_CN", "triage", "--format", "markdown", str(post)).stdout
    # a page and this machine's facts on lines of their own stay inside their list item
    inside = md.split("**CD205**", 1)[1].split("###", 1)[0]
    assert all(ln.startswith(("  ", "|")) or not ln.strip() for ln in inside.splitlines()[1:]), inside


@pytest.mark.parametrize(
    ("post", "absent"),
    [
        # the driver, not the GPU, is what is missing
        ("容器里没装nvidia显卡驱动，torch.cuda.is_available() 返回 False\n", "CD108"),
        # a container denied, or where the same program works: not where it failed
        ("I'm not running in docker, this is bare metal.\nRuntimeError: No CUDA GPUs are available\n", "CD910"),
        (
            "The same script works fine in docker, but on the host I get:\nRuntimeError: No CUDA GPUs are available\n",
            "CD910",
        ),
        # a comparison of builds beside a CUDA error, which proves a CUDA build
        (
            "The CPU build of torch works fine, but the CUDA build fails.\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n",
            "CD216",
        ),
        # torchaudio's library is not torch's: its import failing is not "import torch fails"
        (
            ">>> import torchaudio\nOSError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found "
            "(required by /home/u/venv/lib/python3.10/site-packages/torchaudio/lib/libtorchaudio.so)\n",
            "CD211",
        ),
        # an export told in a sentence, with the GPU's own architecture in it: torch's build, not an extension's
        (
            "I have an RTX 5090 and get this when running my model:\n"
            "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
            'I already tried export TORCH_CUDA_ARCH_LIST="12.0" before running, same error.\n',
            "CD240",
        ),
    ],
)
def test_second_read_counter_examples_raise_nothing_they_do_not_show(post, absent):
    # each from the review of the eighth session's readers: a sentence that resembles a reading but says otherwise
    assert absent not in {f.code for f in diagnose(read(post)).findings}


def test_wsl2_denied_is_not_wsl2_and_a_library_said_twice_is_one_finding():
    p = read("This is native Ubuntu 22.04, not WSL2.\nOSError: libcuda.so.1: cannot open shared object file\n")
    assert not (p.facts.system and p.facts.system.wsl)
    rep = diagnose(
        read(
            "CUDA SETUP: Required library version not found: libbitsandbytes_cpu.so.\n"
            "UserWarning: The installed version of bitsandbytes was compiled without GPU support.\n"
        )
    )
    assert [f.code for f in rep.findings].count("CD905") == 1


def test_a_long_token_beside_a_loader_error_is_read_in_bounded_time():
    # a base64 image in the same paste as a GLIBCXX error: the runtime's path is bounded, not retried per offset
    paste = "![x](data:image/png;base64," + "A" * 400_000 + ")\nversion `GLIBCXX_3.4.30' not found\n"
    start = time.perf_counter()
    read(paste)
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(
    ("post", "code", "severity"),
    [
        # microsoft/DeepSpeed's op builder and apex's setup.py say what torch's cpp_extension says (MGM#91)
        (
            "DeepSpeed Op Builder: Installed CUDA version 12.2 does not match the version torch was compiled with "
            "11.7, unable to compile cuda/cpp extensions without a matching cuda version.\n",
            "CD244",
            "warning",
        ),
        # "torch was not compiled with CUDA support" retold (haoheliu/AudioLDM#5)
        ("complaints that torch was not compiled with CUDA support\n", "CD912", "error"),
        # "I run out of CUDA memory on A100 40GB" (Lightning-AI/litgpt#781)
        ("I run out of CUDA memory on A100 40GB when finetuning\n", "CD909", "warning"),
        # Korean: "an error saying CUDA memory is short"
        ("쿠다 메모리가 모자란다는 에러가 발생합니다\n", "CD909", "warning"),
        # torch's notice alone, no GPU named: a problem only where a GPU exists (HIT-SCIR/ltp#468)
        (
            "UserWarning: CUDA initialization: Found no NVIDIA driver on your system. Please check that you have an "
            "NVIDIA GPU and installed a driver\n",
            "CD911",
            "warning",
        ),
        # "I'm using a integrated Intel GPU(iris xe graphics)" (Akegarasu/lora-scripts#101)
        ("I'm using a integrated Intel GPU(iris xe graphics). os is win 11, torch==2.0.0+cu118\n", "CD108", "error"),
        # a GPU glued to the word: "GPU3090，" with a CUDA 10.1 torch (SwinTextSpotter-style posts)
        ("GPU3090，\ntorch==1.7.0+cu101\n", "CD205", "error"),
    ],
)
def test_readings_of_the_last_batch(post, code, severity):
    found = {f.code: f.severity.value for f in diagnose(read(post)).findings}
    assert found.get(code) == severity, found


def test_a_message_retold_as_history_then_acted_on_is_not_the_state_now():
    # hpc-admin-sist/DockerMonitor#42: torch said the CUDA was too old, so they updated it: a mismatch followed
    post = (
        "在运行Anaconda环境下的pytorch时，因提示CUDA版本过旧而无法利用GPU，因此尝试按其提示更新CUDA。"
        "运行 `nvidia-smi` 发现报错 `Failed to initialize NVML: Driver/library version mismatch`\n"
    )
    codes = {f.code for f in diagnose(read(post)).findings}
    assert "CD103" in codes and "CD902" not in codes


def test_an_nvcc_older_than_the_architecture_asks_for_the_toolkit():
    # the error is the verdict (CD240, below); which toolkit it was is still asked for
    rep = diagnose(read("nvcc fatal : Unsupported gpu architecture 'compute_86'\n"))
    ask = next(f for f in rep.findings if f.code == "CD901")
    assert rep.exit_code == 1 and any(c == "nvcc -V" for fx in ask.fix for c in fx.commands)


def test_a_cpu_build_said_beside_cuda_wanted_in_words_is_cd202():
    # kyutai-labs/delayed-streams-modeling#131: uvx on Windows installed torch's CPU build
    post = (
        "Operating system: Windows\nBut when trying to directly use `uvx --with moshi`, the wrong pytorch version is "
        "installed. It defaults to the [cpu] version even when having cuda installed.\n"
    )
    found = {f.code: f for f in diagnose(read(post)).findings}
    assert found["CD202"].severity.value == "error" and "wants CUDA" in found["CD202"].title
    assert "CD216" not in found  # "whether a GPU exists is unknown" is not said beside it
    # wanting CUDA without a CPU build known says nothing of the build
    assert "CD202" not in {f.code for f in diagnose(read("how can i use my GPU with torch?\n")).findings}


@pytest.mark.parametrize(
    ("version", "wanted", "never"),
    [
        # valeoai/xmuda#19: torch 1.4.0 has no wheel on /whl/cu126; pasted, that line fails to install
        ("1.4.0", "https://pytorch.org/get-started/previous-versions/", "torch==1.4.0 --index-url"),
        # 2.5's oldest CUDA build is cu118: the one most drivers run
        ("2.5.1", "torch==2.5.1 --index-url https://download.pytorch.org/whl/cu118", "whl/cu126"),
    ],
)
def test_a_cpu_build_is_replaced_from_an_index_that_serves_its_release(version: str, wanted: str, never: str) -> None:
    post = f"torch version: {version}\nAssertionError: Torch not compiled with CUDA enabled\n"
    r = cli("--json", "-", stdin=post.encode())
    (cd912,) = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "CD912"]
    shown = json.dumps(cd912["fix"])
    assert wanted in shown and never not in shown


def test_nvcc_older_than_the_gpus_architecture_stops_the_extensions_build() -> None:
    # open-mmlab/OpenPCDet#591: CUDA 11.0's nvcc and an RTX 3070 Ti; TORCH_CUDA_ARCH_LIST="8.0" built it
    post = "nvcc fatal   : Unsupported gpu architecture 'compute_86'\n"
    found = {f["code"]: f for f in json.loads(cli("--json", "-", stdin=post.encode()).stdout)["findings"]}
    assert found["CD240"]["severity"] == "error" and "older than CUDA 11.1" in found["CD240"]["title"]
    shown = json.dumps(found["CD240"]["fix"])
    assert 'export TORCH_CUDA_ARCH_LIST=\\"8.0\\"' in shown and "CUDA 11.0 or newer" in shown
    # an nvcc shown too old for 8.0 as well gets no 8.0 line: it could not build that either
    post = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 10.2, V10.2.89\n" + post
    found = {f["code"]: f for f in json.loads(cli("--json", "-", stdin=post.encode()).stdout)["findings"]}
    assert "TORCH_CUDA_ARCH_LIST" not in json.dumps(found["CD240"]["fix"])


def test_an_nvcc_too_old_under_cmake_gets_no_torch_arch_variable() -> None:
    # graphdeco-inria/nerfshop#13: tiny-cuda-nn built with cmake, where TORCH_CUDA_ARCH_LIST does nothing
    post = (
        "`cmake --build build --config RelWithDebInfo -j`\n`nvcc fatal   : Unsupported gpu architecture 'compute_89'`\n"
    )
    found = {f["code"]: f for f in json.loads(cli("--json", "-", stdin=post.encode()).stdout)["findings"]}
    assert "CUDA 11.8 or newer" in json.dumps(found["CD240"]["fix"])
    assert "TORCH_CUDA_ARCH_LIST" not in json.dumps(found["CD240"]["fix"])


def test_a_missing_compiler_for_torch_compile_is_installed_the_windows_way_on_windows() -> None:
    error = "InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx\n"
    windows = cli("--json", "-", stdin=("OS: Microsoft Windows 11 Pro\n" + error).encode())
    shown = json.dumps([f["fix"] for f in json.loads(windows.stdout)["findings"] if f["code"] == "CD227"])
    assert "winget install --id Microsoft.VisualStudio.2022.BuildTools" in shown and "apt" not in shown
    # no OS shown: no distribution's package manager is guessed
    unknown = cli("--json", "-", stdin=error.encode())
    shown = json.dumps([f["fix"] for f in json.loads(unknown.stdout)["findings"] if f["code"] == "CD227"])
    assert "conda install -c conda-forge gxx" in shown and "apt" not in shown and "winget" not in shown


def _cd240(post: str) -> dict:
    return next(
        f for f in json.loads(cli("--json", "-", stdin=post.encode()).stdout)["findings"] if f["code"] == "CD240"
    )


@pytest.mark.parametrize(
    ("post", "said", "never"),
    [
        # an architecture newer toolkits dropped: the nvcc is too new, never "older than compute_35"
        ("nvcc fatal : Unsupported gpu architecture 'compute_35'\n", "No CUDA after 11.8", "older than"),
        (
            "Cuda compilation tools, release 13.0, V13.0.48\nnvcc fatal : Unsupported gpu architecture 'compute_70'\n",
            "This nvcc (CUDA 13.0) no longer compiles for compute_70",
            "CUDA 9.0 or newer",
        ),
        # dropped by 13.0 and new in 9.0: without nvcc -V the paste does not say which side
        ("nvcc fatal : Unsupported gpu architecture 'compute_70'\n", "only CUDA 9.0 to 12.9 can", "older than"),
    ],
)
def test_nvcc_refusing_an_architecture_says_too_old_or_too_new_only_where_known(post: str, said: str, never: str):
    found = _cd240(post)
    assert said in found["title"] and never not in json.dumps(found)


def test_the_lower_minor_is_one_the_nvcc_shown_compiles_for():
    # nvcc 11.0 cannot build 8.6 (11.1) for an 8.9 GPU, but 8.0 (11.0) it can
    post = "Cuda compilation tools, release 11.0, V11.0.221\nnvcc fatal : Unsupported gpu architecture 'compute_89'\n"
    assert 'TORCH_CUDA_ARCH_LIST=\\"8.0\\"' in json.dumps(_cd240(post)["fix"])


def test_collect_envs_cmake_version_line_is_no_cmake_build():
    post = "CMake version: version 3.28.1\nnvcc fatal : Unsupported gpu architecture 'compute_86'\n"
    assert "TORCH_CUDA_ARCH_LIST" in json.dumps(_cd240(post)["fix"])


@pytest.mark.parametrize(
    ("post", "index"),
    [
        ("python train.py --gpus 2\nRuntimeError: CUDA error: invalid device ordinal\n", None),  # a count
        ("python train.py --gpu 2\nRuntimeError: CUDA error: invalid device ordinal\n", "2"),
    ],
)
def test_gpus_is_a_count_not_the_index_asked_for(post: str, index: str | None) -> None:
    from cudadoctor.backends.paste import read

    hits = read(post).facts.paste.hits  # type: ignore[union-attr]
    assert next(h for h in hits if h.kind == "invalid-ordinal").detail.get("index") == index


@pytest.mark.parametrize(
    ("post", "index"),
    [
        # no aarch64 CUDA wheel of 2.5: the page that lists its builds, never an x86 index
        ("machine: aarch64\ntorch version: 2.5.1\n", None),
        # a nightly is on no stable index under its pin
        ("torch version: 2.6.0.dev20241112\n", None),
        # an RTX 5090 (sm_120) needs 2.7's cu128, not its oldest cu118
        (
            "I have an RTX 5090 GPU\ntorch version: 2.7.0\n",
            "torch==2.7.0 --index-url https://download.pytorch.org/whl/cu128",
        ),
    ],
)
def test_the_cpu_builds_replacement_is_one_that_exists_and_runs_here(post: str, index: str | None) -> None:
    r = cli("--json", "-", stdin=(post + "AssertionError: Torch not compiled with CUDA enabled\n").encode())
    shown = json.dumps([f["fix"] for f in json.loads(r.stdout)["findings"] if f["code"] == "CD912"])
    if index is None:
        assert "previous-versions" in shown and "torch==2.5.1 --index-url" not in shown and "torch==2.6.0" not in shown
    else:
        assert index in shown


def test_the_device_plugins_own_nvml_failure_makes_the_nvidia_runtime_the_default():
    post = "deployed the device plugin in kubernetes\nFailed to start nvml with error:  could not load NVML library\n"
    found = {f["code"]: f for f in json.loads(cli("--json", "-", stdin=post.encode()).stdout)["findings"]}
    assert "nvidia-ctk runtime configure --runtime=containerd --set-as-default" in json.dumps(found["CD146"]["fix"])
