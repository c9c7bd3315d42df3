"""backends/paste/prose.py and what triage says about it: facts written by hand and command lines,
read conservatively, each with its line; then the verdict of the real command line on the minimal post."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cudadoctor.backends.paste import prose, read, text


def parsed(paste: str) -> prose.Partial:
    return prose.parse(text.lines(paste))


def kinds(paste: str) -> dict[str, dict[str, str]]:
    return {h.kind: h.detail for h in parsed(paste).hits}


def triage(paste: str, *args: str) -> tuple[int, str]:
    from cudadoctor.cli import cli

    r = CliRunner().invoke(cli, ["triage", *args], input=paste)
    return r.exit_code, r.stdout + r.stderr


def codes(paste: str) -> dict[str, str]:
    _, out = triage(paste, "--json")
    return {f["code"]: f["severity"] for f in json.loads(out)["findings"]}


@pytest.mark.parametrize(
    ("line", "gpu", "cc"),
    [
        ("I have a RTX 3090 graphics card.", "RTX 3090", "8.6"),
        ("What GPU / hardware type are you using? nvidia gtx 1060 6gb", "nvidia gtx 1060", "6.1"),
        ("My GPU(0) is a 2080ti", "2080ti", "7.5"),
        ("GPU is GeForce GT 740M | 3.0", "GeForce GT 740M", "3.0"),  # an ambiguous name: the stated capability
        ("my old graphics card (GeForce GM630m => cuda capability 2.1)", "GeForce GM630m", "2.1"),
    ],
)
def test_a_gpu_named_in_a_sentence(line: str, gpu: str, cc: str) -> None:
    p = parsed(line)
    assert [(g.name, g.capability) for g in p.torch_gpus] == [(gpu, cc)]
    assert kinds(line)["gpu-named"]["where"] == "line 1"


@pytest.mark.parametrize("line", ["I resized 3090 images to 512 px", "The T4 of the form was filed", "loss 1080.5"])
def test_a_number_is_not_a_gpu_without_a_gpu_context(line: str) -> None:
    assert parsed(line).torch_gpus == []


@pytest.mark.parametrize(
    ("line", "version"),
    [
        ("The requirement in the txt file, torch==1.7.1+cu101, is too low", "1.7.1+cu101"),
        ("- **PyTorch Version**: 2.2.0+cu121", "2.2.0+cu121"),
        ("Ultralytics YOLOv8.1.3 🚀 Python-3.10.11 torch-2.1.0+cpu", "2.1.0+cpu"),
        ("    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.1.2+cpu)", "2.1.2+cpu"),  # xFormers: what is installed
    ],
)
def test_the_torch_version_and_its_build(line: str, version: str) -> None:
    p = parsed(line)
    assert p.values["torch_version"] == version and p.where["torch_version"] == "line 1"
    assert p.values["torch_cuda_built"] is ("+cu" in version)


def test_a_driver_number_only_next_to_the_word_driver() -> None:
    assert parsed("- **CUDA Version**: 12.8 (Driver 570.181)").values["driver_version"] == "570.181"
    assert "driver_version" not in parsed("Ubuntu 22.04\n535.104\n").values
    assert "driver_version" not in parsed("CUDA driver version is insufficient 10.2").values


def test_command_lines_and_what_they_leave_out() -> None:
    k = kinds(
        "docker run -it --rm my/image python train.py\n"
        "singularity shell nemo.sif\n"
        "conda install pytorch torchvision cpuonly -c pytorch\n"
        'os.environ["CUDA_VISIBLE_DEVICES"] = "7"\n'
        "python -m torch.distributed.launch --nproc_per_node=4 train.py\n"
    )
    assert {"container-run-no-gpus", "singularity-no-nv", "conda-cpu", "visible-devices-set"} <= set(k)
    assert k["visible-devices-set"]["value"] == "7" and k["nproc-per-node"]["n"] == "4"
    assert "container-run-no-gpus" not in kinds("docker run --gpus all my/image\n")
    assert "singularity-no-nv" not in kinds("singularity exec --nv img.sif python x.py\n")


def test_wsl1_from_its_kernel_or_a_windows_build_without_wsl2() -> None:
    assert "wsl1" in kinds("Error! Your kernel headers for kernel 4.4.0-19041-Microsoft cannot be found.")
    assert "wsl1" in kinds("### Microsoft Windows [Version 10.0.17763.292]\n#### Ubuntu app WSL:\n")
    assert "wsl1" not in kinds("Microsoft Windows [Version 10.0.22631.3593]\nWSL 2\n")


# --- the verdicts of the real command line ------------------------------------------------------------


def test_a_gpu_and_a_wheel_in_prose_give_the_arch_verdict() -> None:
    """No torch 1.x arch list is in the tables, but CUDA 10.1 cannot compile for sm_86 at all."""
    c = codes("I have a RTX 3090 graphics card. The requirement, torch==1.7.1+cu101, is too low.")
    assert c["CD205"] == "error"
    code, out = triage("I have a RTX 3090 graphics card. The requirement, torch==1.7.1+cu101, is too low.")
    assert code == 1
    assert "CUDA 10.1, which cannot compile for RTX 3090 (sm_86)" in " ".join(out.split())


def test_visible_devices_set_in_code_hide_every_gpu() -> None:
    c = codes("os.environ['CUDA_VISIBLE_DEVICES'] = '7'\nRuntimeError: No CUDA GPUs are available\n")
    assert c["CD301"] == "error" and "CD909" not in c


def test_more_ranks_than_visible_gpus() -> None:
    c = codes("CUDA_VISIBLE_DEVICES=1,2 python -m torch.distributed.launch --nproc_per_node=4 train.py\n")
    assert c["CD811"] == "error"


def test_wsl1_is_the_cause_and_the_driver_error_follows_from_it() -> None:
    code, out = triage(
        "sudo apt install nvidia-driver-440\nNVIDIA-SMI has failed because it couldn't communicate with the "
        "NVIDIA driver.\nError! Your kernel headers for kernel 4.4.0-19041-Microsoft cannot be found.\n"
    )
    assert code == 1 and "CD112 WSL1 has no GPU support" in out and "Follows from CD112" in out


@pytest.mark.parametrize(
    "paste",
    [
        "My GPU is an RTX 4090 and nothing works.",
        "torch 2.5 is what we use here",
        "Driver Version: 550.54.14",
        "RuntimeError: CUDA error: invalid device ordinal",
    ],
)
def test_never_nothing_to_diagnose_when_a_gpu_driver_version_or_error_is_named(paste: str) -> None:
    code, out = triage(paste)
    assert code in (1, 3) and "nothing to diagnose" not in out and "None" not in out


def test_text_without_any_of_them_is_nothing_to_diagnose() -> None:
    code, out = triage("Thanks for the great project! How do I change the learning rate?\n")
    assert code == 2 and "nothing to diagnose" in out


def test_every_prose_fact_shows_its_line() -> None:
    p = read("Hi,\nI have a Quadro P2000, installed pytorch 1.8 with pip, CUDA 11.1\nthanks")
    seen = {s.what: s.where for s in p.facts.paste.seen}  # type: ignore[union-attr]
    assert seen["torch version"] == "line 2 of prose and command lines"
    code, out = triage("Hi,\nI have a Quadro P2000, installed pytorch 1.8 with pip, CUDA 11.1\nthanks")
    assert "Quadro P2000" in out and "line 2" in out and code == 3


@pytest.mark.parametrize(
    ("line", "gpu"),
    [("我的显卡是3090，跑不起来", "3090"), ("3090显卡", "3090"), ("그래픽 카드는 RTX 3060입니다", "RTX 3060")],
)
def test_gpus_named_in_chinese_and_korean_sentences(line: str, gpu: str) -> None:
    assert [g.name for g in parsed(line).torch_gpus] == [gpu]


def test_a_bare_driver_number_under_a_line_that_names_the_driver() -> None:
    assert parsed("OS: Ubuntu 22.04\nNVIDIA driver:\n535.104.05\n").values["driver_version"] == "535.104.05"
    assert "driver_version" not in parsed("OS: Ubuntu 22.04\n535.104.05\n").values


@pytest.mark.parametrize(
    "paste",
    [
        "I use `DataParallel` that device_ids is [1, 2], but only gpu 1 is used.",
        "With 4 cards only one GPU is utilized during training",
        "训练时只使用了一张卡",
        "实验名称 | 训练时间 | 显存占用 | 备注\n-- | -- | -- | --\nresnet_fp16 | 13m27s | 2300MiB | loss 变为 nan\n",
    ],
)
def test_a_run_that_used_a_gpu_says_the_stack_works(paste: str) -> None:
    """One GPU of several in use, or a table of runs with their GPU memory: CUDA ran, so the verdict is
    healthy (exit 0, CD914), not "nothing to diagnose"."""
    assert "gpu-ran" in kinds(paste)
    assert triage(paste)[0] == 0 and codes(paste).get("CD914") == "ok"


@pytest.mark.parametrize(
    "paste",
    [
        "only CPU is used, the GPU stays idle",
        "| GPU | VRAM |\n|--|--|\n| RTX 3090 | 24GB |\n",  # a card's capacity is not a run
        "实验 | 显存占用\n-- | --\nfp32 | 0MiB\n",
    ],
)
def test_no_run_is_read_from_an_idle_gpu_or_a_spec_sheet(paste: str) -> None:
    assert "gpu-ran" not in kinds(paste)


def test_a_gpu_reported_unsupported_and_older_than_the_builds_is_too_old() -> None:
    """The person reports torch's verdict in their words, about a GPU they name: CD903, with the newest
    torch that still has kernels for it."""
    paste = "I have a GTX 1060.\nI get an error that my GPU doesn't support the latest compute capabilities.\n"
    assert kinds(paste)["gpu-too-old"] == {"gpu": "GTX 1060", "cc": "6.1", "where": "line 2"}
    code, out = triage(paste)
    assert code == 1 and "CD903" in out and "cu126" in out and codes(paste)["CD903"] == "error"


@pytest.mark.parametrize(
    "paste",
    [
        "I get an error that my GPU doesn't support the latest compute capabilities.",  # which GPU: unknown
        "My RTX 5090 is not supported: compute capability 12.0 is not supported",  # newer than a build, not older
        "I have a GTX 1060 and it works fine.",
    ],
)
def test_no_too_old_verdict_without_a_named_older_gpu_and_the_report(paste: str) -> None:
    assert "gpu-too-old" not in kinds(paste)


@pytest.mark.parametrize(
    ("paste", "kind"),
    [
        ("运行提示报错，一部分程序运行在CPU上，一部分程序运行在GPU上，如何统一到GPU上", "device-mismatch"),
        ("It fails: some tensors are on the CPU and others on the GPU.", "device-mismatch"),
        ("有人说是标签超出范围，但是我查了标签没有问题", "labels-out-of-range"),
        ("The assert fires because my labels are out of range", "labels-out-of-range"),
    ],
)
def test_a_bug_of_the_program_told_in_words_is_a_run_time_problem(paste: str, kind: str) -> None:
    """Tensors split between CPU and GPU, labels out of range: the program's bug on a working stack, a
    run-time warning (CD909) with exit 0, not "nothing to diagnose"."""
    assert kind in kinds(paste)
    code, out = triage(paste)
    assert code == 0 and codes(paste)["CD909"] == "warning" and "None" not in out


@pytest.mark.parametrize(
    "paste", ["I moved the model from the CPU to the GPU", "IndexError: list index out of range", "标签页没有问题"]
)
def test_no_run_time_bug_from_a_device_move_or_another_index(paste: str) -> None:
    assert not {"device-mismatch", "labels-out-of-range"} & set(kinds(paste))


@pytest.mark.parametrize(
    "paste",
    [
        "i think i have to reduce the batch size but downt know how.",
        "batch size를 256으로 하니 위 에러가 발생하며, 128로 줄이니 위 오류가 발생되지 않습니다.",
        "把batch_size调小之后就不报错了",
    ],
)
def test_an_error_that_goes_with_a_smaller_batch_is_out_of_memory(paste: str) -> None:
    """The job does not fit: a run-time warning (CD909) whose fix makes the job smaller, exit 0."""
    assert "out-of-memory" in kinds(paste)
    code, out = triage(paste)
    assert code == 0 and codes(paste)["CD909"] == "warning" and "does not fit" in out


@pytest.mark.parametrize("paste", ["我尝试了调小学习率和 调大batch_size", "batch size 64, lr 0.01"])
def test_a_batch_size_alone_or_a_larger_one_is_not_out_of_memory(paste: str) -> None:
    assert "out-of-memory" not in kinds(paste)


def test_a_docker_container_named_in_a_sentence_is_a_container_context() -> None:
    """Not "nothing to diagnose": the post is about a container, and what decides it is asked for (exit 3)."""
    paste = "Hi! After downloading the docker container and cuda 12.2, when I run this instruction, it errors.\n"
    assert kinds(paste)["container-context"]["where"] == "line 1"
    assert triage(paste)[0] == 3
    assert "container-context" not in kinds("I keep my notes in a container of docs")


SCRIPT = """```
import torch
x = torch.randn(500, dtype=torch.float16)
gpu = torch.cumsum(x.cuda(), dim=0).cpu()
print(f"GPU error vs reference: {float(gpu.sum()):.4e}")
```
{output}
"""


def test_a_script_that_calls_cuda_and_its_printed_output_show_the_gpu_ran() -> None:
    """The printed line comes after .cuda() in the script: the program got past it, so CUDA works (exit 0)."""
    paste = SCRIPT.replace("{output}", "GPU error vs reference: 5.5936e+00")
    assert kinds(paste)["gpu-ran"]["why"] == "line 5: the script printed it after moving work to CUDA"
    assert triage(paste)[0] == 0 and codes(paste)["CD914"] == "ok"


@pytest.mark.parametrize(
    "paste",
    [
        SCRIPT.replace("{output}", ""),  # the script alone: it may never have run
        SCRIPT.replace("x.cuda()", "x.to(dev)").replace("{output}", "GPU error vs reference: 5.5936e+00"),
        "dev = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        + SCRIPT.replace("{output}", "GPU error vs reference: 1"),
    ],
)
def test_no_run_from_a_script_without_its_output_or_with_a_cpu_fallback(paste: str) -> None:
    assert "gpu-ran" not in kinds(paste)


@pytest.mark.parametrize(
    ("line", "key", "value"),
    [
        ("我的torch版本是1.8.0，显卡是3090", "torch_version", "1.8.0"),
        ("pytorch 버전은 1.13.1입니다", "torch_version", "1.13.1"),
        ("torch版本：2.1.0+cu118", "torch_cuda", "11.8"),
        ("驱动版本是470.57.02", "driver_version", "470.57.02"),
        ("드라이버 버전은 535.104.05입니다", "driver_version", "535.104.05"),
    ],
)
def test_versions_in_chinese_and_korean_sentences(line: str, key: str, value: str) -> None:
    """A Chinese or Korean word may touch the name or the number: the edges are ASCII word edges."""
    assert parsed(line).values[key] == value
    assert triage(line)[0] != 2


@pytest.mark.parametrize("line", ["torchvision版本是0.9.0", "libtorch 1.8.0", "驱动程序更新了3次"])
def test_no_torch_or_driver_version_from_another_name(line: str) -> None:
    values = parsed(line).values
    assert "torch_version" not in values and "driver_version" not in values


def test_pip_install_torch_from_pypi_on_windows_is_the_cpu_only_build() -> None:
    """PyPI's Windows torch wheels have no CUDA: triage says so with the line it read, and with the RTX 3060
    the post names, that it is the wrong build for this machine (CD202)."""
    paste = "Windows 11, RTX 3060.\npip install torch torchvision\ntorch.cuda.is_available() returns False\n"
    p = parsed(paste)
    assert p.values["torch_cuda_built"] is False and p.where["torch_cuda_built"] == "line 2"
    code, out = triage(paste)
    assert code == 1 and codes(paste)["CD202"] == "error" and "pypi-windows" in out
    assert "download.pytorch.org" in out


@pytest.mark.parametrize(
    "paste",
    [
        "Ubuntu 22.04\npip install torch\n",  # Linux: PyPI's torch is a CUDA build
        "Windows 11\npip install torch --index-url https://download.pytorch.org/whl/cu121\n",
        "Windows 11, inside WSL Ubuntu:\npip install torch\n",
        "Windows 10\npip install torchvision\n",
    ],
)
def test_no_cpu_build_from_pip_off_windows_or_from_another_index(paste: str) -> None:
    assert "torch_cuda_built" not in parsed(paste).values or parsed(paste).values["torch_cuda_built"] is True


def test_prose_that_names_true_and_false_is_asking_about_the_false_machine() -> None:
    """yolov10#218 (tests/triage_corpus/real): "on the T4 server is_available() was True ... on my win10
    machine it is False": the post is about the False one, whichever line comes first."""
    paste = (
        "T4卡的服务器，直接按安装流程，上去就可以torch.cuda.is_available() 为True。\n"
        "后来我本地win10机器，同样方法安装好后，torch.cuda.is_available() 就是False，不知道怎么办了。\n"
    )
    p = parsed(paste)
    assert p.values["torch_available"] is False and p.where["torch_available"] == "line 2"
    # and a post fixed in its own text says so in words: one value, read as it is
    assert parsed("torch.cuda.is_available() returns True now, thanks\n").values["torch_available"] is True


def test_collect_envs_runpy_warning_is_not_a_hang() -> None:
    """`python -m torch.utils.collect_env` prints "<frozen runpy>:128: RuntimeWarning" first (a real H200's,
    tests/fixtures/real_h200): "frozen" names where Python keeps the module."""
    line = "<frozen runpy>:128: RuntimeWarning: 'torch.utils.collect_env' found in sys.modules after import\n"
    assert "hang" not in kinds(line)
    assert "hang" in kinds("training is frozen at epoch 3\n")


def test_a_cpu_build_beside_a_gpu_the_post_names_is_the_cpu_only_wheel() -> None:
    """The commonest beginner post: "I have an RTX 3060 ... torch 2.5.1+cpu ... is_available() False". The
    poster's GPU is the machine's (CD900 shows the line): CD202, not "whether there is a GPU is unknown"."""
    paste = "I have an RTX 3060 laptop GPU on Windows 11.\ntorch 2.5.1+cpu\ntorch.cuda.is_available() returns False\n"
    found = codes(paste)
    assert found["CD202"] == "error" and "CD216" not in found
    code, out = triage(paste)
    assert code == 1 and "OS Windows" in out
    # no GPU named: whether one is there stays unknown
    assert codes("torch 2.5.1+cpu\ntorch.cuda.is_available() returns False\n")["CD216"] == "info"


def test_windows_named_in_prose_is_the_os_unless_the_post_runs_in_wsl() -> None:
    assert parsed("win10, torch.cuda.is_available() False\n").values["os"] == "Windows"
    assert "os" not in parsed("Windows 11 with WSL2 Ubuntu 22.04\ntorch.cuda.is_available() False\n").values


def test_a_failed_assert_on_is_available_means_it_was_false() -> None:
    """so-vits-svc#137: `assert torch.cuda.is_available(), "CPU training is not allowed."` then its
    AssertionError. A compound assert (`and device_count() >= n`) could have failed on either half."""
    paste = (
        'assert torch.cuda.is_available(), "CPU training is not allowed."\n'
        "AssertionError: CPU training is not allowed\n"
    )
    assert read(paste).facts.torch.is_available is False
    compound = "assert torch.cuda.is_available() and torch.cuda.device_count() >= 2\nAssertionError\n"
    torch = read(compound).facts.torch
    assert torch is None or torch.is_available is None


def test_the_cuda_runtimes_insufficient_driver_error_is_not_put_in_torchs_mouth() -> None:
    """ "CUDA driver version is insufficient for CUDA runtime version" is the CUDA runtime's error string:
    faster-whisper's CTranslate2 prints it as well as torch (GPT-SoVITS#1048)."""
    paste = "RuntimeError: CUDA failed with error CUDA driver version is insufficient for CUDA runtime version\n"
    _code, out = triage(paste, "--json")
    found = {f["code"]: f for f in json.loads(out)["findings"]}
    assert found["CD902"]["title"].startswith("The CUDA runtime says the NVIDIA driver is too old")
    assert found["CD902"]["tables"][0]["columns"] == ["The error"]


@pytest.mark.parametrize(
    "paste, code, severity",
    [
        # stableswarm#153: cuInit's 999 in _cuda_init's RuntimeError wording
        (
            "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. "
            "changing env variable CUDA_VISIBLE_DEVICES after program start.\n",
            "CD122",
            "error",
        ),
        # open-gpu-kernel-modules#507, in the poster's words; and the kernel log's sentence
        ("gpu randomly falls off the bus when playing games on the nvidia gpu\n", "CD156", "warning"),
        ("NVRM: GPU at PCI:0000:01:00: GPU-1234 has fallen off the bus.\n", "CD156", "warning"),
        # the NVIDIA module's own log when nouveau took the GPU first
        (
            "NVRM: The NVIDIA probe routine was not called for 1 device(s).\n"
            "NVRM: This can occur when a driver such as:\n"
            "NVRM: nouveau, rivafb, nvidiafb or rivatv\n"
            "NVRM: was loaded and obtained ownership of the NVIDIA device(s).\n",
            "CD118",
            "error",
        ),
        # PytorchOCR#137: the poster's own diagnosis, in Chinese
        ("训练时报错，shared memory不够（因为docker限制了shm）\n", "CD140", "warning"),
        # vLLM's build log prints torch's first sentence only
        ("RuntimeError: The NVIDIA driver on your system is too old\n", "CD902", "error"),
        # anibali/docker-pytorch#27: the command quoted inside a sentence
        (
            "after connected to container with command `docker run -it anibali/pytorch:1.4.0-cuda10.1 sh`\n"
            "both nvcc and nvidia-smi not found.\n",
            "CD910",
            "error",
        ),
        # flash-attention#931: torch's C++ API missing from an extension: built for another torch
        (
            "torch: 2.3.0\n"
            "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n",
            "CD242",
            "error",
        ),
    ],
)
def test_readings_real_posts_showed_missing(paste: str, code: str, severity: str) -> None:
    """Each from a post collected after the readers were written (tests/triage_corpus/real)."""
    assert codes(paste).get(code) == severity


def test_harmless_wsl_and_process_rows_are_a_healthy_verdict() -> None:
    """microsoft/WSL#5548's ldconfig notice, and nvidia-docker#179's Processes rows without the banner: the
    GPU held memory for a process. Neither is a set-up problem (exit 0, no error)."""
    for paste in (
        "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link\n",
        "|  GPU       PID  Type  Process name                               Usage      |\n"
        "|    0     28290    C   python                                        1012MiB |\n",
    ):
        code, _out = triage(paste)
        assert code == 0 and "error" not in codes(paste).values()
    assert parsed("ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link\n").values["wsl"] is True
    # an undefined symbol of torch's API in torch's own library stays CD904 (a mixed or half-upgraded torch)
    own = "site-packages/torch/lib/libtorch_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n"
    assert "CD904" in codes(own) and "CD242" not in codes(own)


def test_a_graphics_process_row_is_not_a_sign_that_cuda_ran() -> None:
    """Xorg (type G) holds memory without CUDA; only compute rows (C, C+G, M+C) say CUDA ran."""
    header = "|  GPU       PID  Type  Process name                               Usage      |\n"
    xorg = "|    0      1234    G   /usr/lib/xorg/Xorg                           40MiB |\n"
    python = "|    0     28290    C   python                                     1012MiB |\n"
    ran = lambda paste: {h.kind for h in read(paste).facts.paste.hits}  # noqa: E731 - every reader's hits
    assert "gpu-ran" not in ran(header + xorg)
    assert "gpu-ran" in ran(header + python)


# --- REPL transcripts, words about a run, installs by uv (backends/paste/prose_said.py) ---


def test_an_ipython_transcript_answers_on_the_out_line() -> None:
    """floydhub/dockerfiles#3: IPython's `Out[2]: False` under `In [2]: torch.cuda.is_available()`, in a
    container started by plain `docker run`: the container got no GPU (CD910)."""
    post = (
        "$ sudo docker run  -t -i floydhub/pytorch:latest-gpu-py3 ipython\n"
        "In [1]: import torch\n\n"
        "In [2]: torch.cuda.is_available()\n"
        "Out[2]: False\n"
    )
    p = parsed(post)
    assert p.values["torch_available"] is False and p.where["torch_available"] == "line 5"
    assert codes(post).get("CD910") == "error"
    # the variant: version and CUDA build, quoted as IPython prints strings; a second session is the later state
    q = parsed(
        "In [1]: torch.__version__\nOut[1]: '1.0.0'\nIn [2]: torch.__version__\nOut[2]: '2.1.0+cu121'\n"
        "In [3]: torch.version.cuda\nOut[3]: '12.1'\n"
    )
    assert q.values["torch_version"] == "2.1.0+cu121" and q.values["torch_cuda"] == "12.1"
    assert q.values["torch_cuda_built"] is True
    assert "torch_available" not in parsed("In [2]: torch.cuda.is_available()\n\nIn [3]: x\n").values


def test_torch_cuda_available_is_read_as_is_available() -> None:
    """nicklashansen/tdmpc2#51: "`torch.cuda.available()` returns False", a common misspelling."""
    post = "When I call `nvidia-smi`, it works\nbut `torch.cuda.available()` returns False.\n"
    p = parsed(post)
    assert p.values["torch_available"] is False and p.where["torch_available"] == "line 2"
    assert parsed("torch.cuda.available() is True").values["torch_available"] is True
    assert "torch_available" not in parsed("the model is available() False").values


def test_uv_installs_on_windows_and_a_workaround_line() -> None:
    """kyutai-labs/delayed-streams-modeling#131: `uvx --with moshi` on Windows installed the [cpu] torch; the
    reporter's workaround (`--with torch==2.5.1+cu124 --index-url …/cu124`) is not what was installed."""
    post = (
        "Unsure, if this is an issue with windows only. But when trying to directly use `uvx --with moshi`, "
        "the wrong pytorch version is installed. It defaults to the [cpu] version even when having cuda installed.\n"
        "\n"
        "The quick-fix, is to also specify the pytorch version by appending the specific version.\n\n"
        "Example for me with CUDA 12.4, I've run the following command\n\n"
        "`uvx --with moshi --with torch==2.5.1+cu124 --index-url https://download.pytorch.org/whl/cu124 python x.py`\n"
        "- Operating system version: Windows 10\n"
    )
    p = parsed(post)
    assert p.values["torch_cuda_built"] is False and p.where["torch_cuda_built"] == "line 1"
    assert "torch_version" not in p.values  # the workaround's 2.5.1+cu124 is not the state asked about
    assert {"says-cpu-build", "pypi-windows"} <= set(kinds(post))
    # uv's other PyPI installs of torch, on Windows
    for line in ("uv add torch", "uv run --with torch python x.py", "uvx --with torch==2.5.1 python x.py"):
        q = parsed(f"Windows 11\n{line}\n")
        assert q.values["torch_cuda_built"] is False and "pypi-windows" in kinds(f"Windows 11\n{line}\n")
    # a workaround that did not help still says where torch came from
    tried = (
        "Windows 11\nuv add torch\nThe workaround: uv add torch --index-url https://download.pytorch.org/whl/cu124\n"
    )
    assert "pypi-windows" not in kinds(tried + "but I still get the same error\n")


def test_the_reporter_says_torch_is_a_cpu_build() -> None:
    """LoRA-scripts#503: "识别的却是2.3.1的cpu版本（所以无法使用GPU）" (gui.py sees torch 2.3.1, a CPU build,
    not the venv's 2.4.0): the CPU build and its version, the one asked about."""
    post = "venv中的torch版本是2.4.0：\n\n但随后执行gui.py，识别的却是2.3.1的cpu版本（所以无法使用GPU）：\n"
    p = parsed(post)
    assert p.values["torch_version"] == "2.3.1" and p.values["torch_cuda_built"] is False
    assert p.where["torch_cuda_built"] == "line 3"
    assert parsed("I found the default installation is the cpu version of PyTorch.").values["torch_cuda_built"] is False
    for line in (
        "Should I install the cpu version of pytorch?",
        "I want the GPU, not the cpu version of torch",
        "onnxruntime 1.15 cpu version with torch 2.1",
        "是否安装了torch的cpu版本",
        "The cpu version works fine",  # not said of torch
    ):
        assert "torch_cuda_built" not in parsed(line).values, line


def test_the_driver_too_old_said_in_words_and_the_later_transcript() -> None:
    """pytorch/pytorch#28195: torch 1.0 said True; after the upgrade to 1.2.0 it says False, and "the msg is
    that my Nvidia version is too old": torch's driver-too-old message, retold (CD902)."""
    post = (
        ">>> print(torch.__version__)\n1.0.0.dev20190102\n>>> torch.cuda.is_available()\nTrue\n"
        "after i update pythorch to version1.2,and enter the following commands:\n"
        "print(torch.__version__)\n1.2.0\n>>> torch.cuda.is_available()\nFalse\n"
        "when i run my program，the msg is that my Nvidia version is too old.\n"
    )
    h = kinds(post)["driver-too-old"]
    assert h == {"by": "torch", "where": "line 10"}
    assert codes(post).get("CD902") == "error"
    for line in (
        "Maybe my nvidia driver is too old?",
        "I don't think my driver version is too old",
        "my GPU is too old",
    ):
        assert "driver-too-old" not in kinds(line), line
    assert "driver-too-old" in kinds("The error says my NVIDIA driver version is too old.")


def test_oom_said_in_a_word_is_an_out_of_memory_run() -> None:
    """ultralytics/ultralytics#467: "suddenly OOM happened" in training on an A40 with torch 1.10.0+cu113: out
    of memory while running, a healthy set-up (exit 0, CD909 warning)."""
    post = (
        "### During the training, there was no problem with the first few epoch, but suddenly OOM happened.\n"
        "device：A40 48G\ntorch                          1.10.0+cu113\n"
    )
    assert kinds(post)["out-of-memory"]["where"] == "line 1"
    code, _ = triage(post)
    assert code == 0 and codes(post).get("CD909") == "warning"
    for line in (
        "the process was killed by the OOM killer during training",
        "with batch 64 training runs without OOM",
        "host RAM OOM during the training",
        "is it OOM at this batch size?",
        "torch.cuda.is_available() returns False and training hits OOM",
    ):
        assert "out-of-memory" not in kinds(line), line


@pytest.mark.parametrize(
    "line",
    [
        "However, when load 13b llama in vllm, GPU usage is about 73G.",  # vllm-project/vllm#550
        "the loading of vllm takes up 35G of GPU",  # vllm-project/vllm#822
        "it seems kv cache used a lot of vram? how can i close it?",  # vllm-project/vllm#17891
        "the fork will use all of my vram and refuse to let it go",  # AUTOMATIC1111 fork #1883
        "推理时占用了20G显存",
    ],
)
def test_gpu_memory_in_use_said_in_words_means_the_gpu_ran(line: str) -> None:
    """A running program holding GPU memory: the GPU ran (CD914), a healthy verdict (exit 0)."""
    assert "gpu-ran" in kinds(line)
    code, _ = triage(line + "\n")
    assert code == 0 and codes(line + "\n").get("CD914") == "ok"


@pytest.mark.parametrize(
    "paste",
    [
        "The model needs 35G of GPU memory to load",
        "It would take up 40GB of VRAM, but I only have 24",
        "GPU usage is about 0G",
        "GPU usage is about 73G\ntorch.cuda.is_available() returns False\n",
        "vllm takes up 35G of GPU\nRuntimeError: CUDA error: an illegal memory access was encountered\n",
        "the program uses 12GB of RAM",
    ],
)
def test_gpu_memory_a_model_would_need_or_beside_a_failure_is_not_a_run(paste: str) -> None:
    assert "gpu-ran" not in kinds(paste)


@pytest.mark.parametrize(
    ("paste", "version", "cuda"),
    [
        # pytorch/pytorch#28752
        ("RTX 2080Ti\npytorch 0.4.1_cuda9.2_cudnn7.1.4\n", "0.4.1", "9.2"),
        ("GPU: GeForce RTX 2080 Ti\npytorch 1.0.0 py3.7_cuda9.0.176_cudnn7.4.1_1\n", "1.0.0", "9.0"),
    ],
)
def test_a_conda_build_string_names_torchs_cuda(paste: str, version: str, cuda: str) -> None:
    """A CUDA 9 build has no kernels for a Turing GPU (sm_75 needs CUDA 10): CD205, an error."""
    p = parsed(paste)
    assert (p.values["torch_version"], p.values["torch_cuda"]) == (version, cuda)
    assert codes(paste).get("CD205") == "error"


@pytest.mark.parametrize(
    "paste",
    [
        # pytorch/pytorch#39028
        "I am not using NVIDIA GPU , but i have Intel HD graphics 4000.\n",
        "My laptop only has Intel UHD graphics, and torch.cuda.is_available() is False\n",
        "我的电脑没有N卡，只有核显\n",
    ],
)
def test_the_person_says_there_is_no_nvidia_gpu(paste: str) -> None:
    assert "says-no-nvidia-gpu" in kinds(paste)
    assert codes(paste).get("CD108") == "error"


@pytest.mark.parametrize(
    "paste",
    [
        "I don't have an NVIDIA GPU on this laptop, but the server has a RTX 3090\n",
        "What if I don't have an NVIDIA GPU?\n",
        "RuntimeError: No NVIDIA GPU found\n",
        "如果没有N卡可以用CPU吗\n",
    ],
)
def test_no_nvidia_gpu_is_not_read_beside_one_or_hedged(paste: str) -> None:
    assert "says-no-nvidia-gpu" not in kinds(paste)


@pytest.mark.parametrize(
    ("paste", "container"),
    [
        # pytorch/pytorch#39028: a log banner is no Dockerfile
        ("====== DIW NETWORK TRAIN FROM Ours_Bilinear=======\n", False),
        ("FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\nRUN pip install torch\n", True),
        ("FROM python:3.10-slim AS base\n", True),
        ("I start from `FROM ${BASE_IMAGE}`\n", True),
    ],
)
def test_a_dockerfile_from_only_at_a_line_start(paste: str, container: bool) -> None:
    assert ("container-context" in kinds(paste)) is container


@pytest.mark.parametrize(
    ("paste", "value"),
    [
        # huggingface/accelerate#1848: accelerate's own source, quoted
        ('            current_env["CUDA_VISIBLE_DEVICES"] = gpu_ids # this line is never be executed\n', None),
        ('export CUDA_VISIBLE_DEVICES="$GPUS"\n', None),
        ('os.environ["CUDA_VISIBLE_DEVICES"] = "7"\n', "7"),
        ('CUDA_VISIBLE_DEVICES="" python train.py\n', ""),
    ],
)
def test_a_visible_devices_variable_in_code_is_not_a_setting(paste: str, value: str | None) -> None:
    assert parsed(paste).env.get("CUDA_VISIBLE_DEVICES") == value


@pytest.mark.parametrize(
    ("line", "key", "value"),
    [
        # LISTatSNU wellness #17
        (
            "torch.cuda.is_available() 을 확인하여보면 분명히 TRUE로 나오는데 그냥 CPU로 학습을 시작하여",
            "torch_available",
            True,
        ),
        ("torch.cuda.is_available() 결과가 False 입니다", "torch_available", False),
        # Lightning-AI/pytorch-lightning#4224
        ("I am using pytorch-dev 1.7.0 as it is required for cuda11", "torch_version", "1.7.0"),
        # hiyouga/LLaMA-Factory#3545
        ("系统是WIN11，pytorch有，cuda12.2", "torch_installed", True),
        # hiyouga/LLaMA-Factory#3228 (transformers' examples log TrainingArguments' device and n_gpu)
        (
            "[INFO|parser.py:242] 2024-04-11 11:16:12,325 >> Process rank: 0, device: cpu, n_gpu: 0, distributed "
            "training: False,",
            "torch_available",
            False,
        ),
    ],
)
def test_more_phrasings(line: str, key: str, value: object) -> None:
    assert parsed(line).values[key] == value


def test_the_trainer_on_cpu_asked_for_is_not_torch_seeing_no_gpu() -> None:
    paste = "--use_cpu True\nProcess rank: 0, device: cpu, n_gpu: 0, distributed training: False\n"
    assert "torch_available" not in parsed(paste).values


@pytest.mark.parametrize(
    "line",
    [
        "docker运行轻量级版本出现no cuda gpu aviliable",
        "在docker中运行时报错",
        "I am running it in docker",
        "in Docker Desktop",
    ],
)
def test_running_in_docker_said_in_words(line: str) -> None:
    # duix.avatar #307 (the first line)
    assert parsed(line).values.get("in_container") is True


@pytest.mark.parametrize("line", ["I use docker-compose up", "pulled from in docker hub", "docker is installed"])
def test_docker_named_is_not_running_in_one(line: str) -> None:
    assert "in_container" not in parsed(line).values


def test_docker_run_with_no_cuda_gpu_is_a_container_without_one() -> None:
    # duix.avatar #307
    paste = "docker运行轻量级版本出现no cuda gpu aviliable，wsl ubuntu里直接运行nvidia-smi能出现cuda12.4\n"
    assert codes(paste).get("CD910") == "warning"


@pytest.mark.parametrize(
    "paste",
    [
        # LISTatSNU FastMRI_challenge #197
        "![image](https://github.com/LISTatSNU/FastMRI_challenge/assets/1/6fe8.png)\n\n"
        "안녕하세요. 이틀 전부터 위와 같은 에러가 뜨는데, 혹시 현재 gpu 관련 이슈가 있는지 문의드립니다.\n",
        '<img width="600" src="https://example.com/a.png">\nI get this CUDA error when training\n',
    ],
)
def test_a_screenshot_for_the_error_is_something_to_diagnose(paste: str) -> None:
    assert "error-in-screenshot" in kinds(paste)
    code, out = triage(paste)
    assert code != 2 and "nothing to diagnose" not in out


@pytest.mark.parametrize(
    "paste",
    [
        "![image](https://example.com/a.png)\nRuntimeError: CUDA error: out of memory\n",
        "![cat](https://example.com/cat.png)\nMy cat sleeps on the keyboard.\n",
    ],
)
def test_a_screenshot_beside_the_error_text_or_off_topic_is_not_read(paste: str) -> None:
    assert "error-in-screenshot" not in kinds(paste)


def test_nccl_p2p_disable_shown_as_the_fix_is_p2p_unavailable() -> None:
    # dice-group/dice-embeddings #212
    paste = (
        "The following code odes not work\n"
        "`CUDA_VISIBLE_DEVICES=0,1 torchrun --standalone --nnodes=1 --nproc_per_node=2 run.py`\n"
        "Disabling NCCL does the trich\n"
        "```\nNCCL_P2P_DISABLE=1\nCUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node=2 run.py\n```\n"
    )
    assert codes(paste).get("CD161") == "warning"
    still = paste.replace("Disabling NCCL does the trich", "Disabling NCCL P2P still does not help")
    assert "CD161" not in codes(still)


def test_chinese_retellings_of_the_driver_message_and_of_cuda_working() -> None:
    # FunAudioLLM/CosyVoice#845: "cuda驱动是11.4", and what a newer torch showed, told under a condition
    c = codes(
        "cuda驱动是11.4，发现无论怎么尝试，皆无法安装成功。如果安装高版本的torch，则会提示cuda太老旧，"
        "如果安装低版本的torch (<=1.12)，cuda是支持了\n"
    )
    assert "CD902" in c
    asked = read("我的显卡是RTX 3060，是不是驱动版本太旧了？\n").facts.paste
    assert asked is not None and not any(h.kind == "driver-too-old" for h in asked.hits)  # asked, not reported
    # "cuda可用" said as a fact is torch.cuda.is_available() True; asked or denied it is not
    assert read("cuda可用，但是训练很慢\n").facts.torch.is_available is True
    assert read("cuda可用吗？\n").facts.torch is None
    assert read("cuda不可用\n").facts.torch is None


def test_torch_oom_advice_tried_means_an_oom_happened() -> None:
    # Tencent/HunyuanVideo#62: the message itself not pasted
    p = read("我修改了max_split_size_mb也不行，加了--batch-size参数也不行\n")
    assert p.facts.paste is not None and any(h.kind == "out-of-memory" for h in p.facts.paste.hits)
    # a config that merely sets it says nothing of an OOM
    p = read("PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128\n")
    assert p.facts.paste is None or not any(h.kind == "out-of-memory" for h in p.facts.paste.hits)


def test_flash_attention_missing_from_a_windows_wheel_is_harmless() -> None:
    # modelscope/DiffSynth-Studio#26: the maintainer, "does not affect use"
    c = codes(
        "UserWarning: 1Torch was not compiled with flash attention. (Triggered internally at "
        "..\\aten\\src\\ATen\\native\\transformers\\cuda\\sdp_utils.cpp:263.)\n"
    )
    assert "CD915" in c


def test_text_pasted_on_a_fence_line_is_read() -> None:
    # lllyasviel/ControlNet#301: "```RuntimeError: CUDA out of memory. …" on one line
    c = codes(
        "```RuntimeError: CUDA out of memory. Tried to allocate 4.00 GiB (GPU 0; 23.64 GiB total capacity; "
        "15.35 GiB already allocated; 1.87 GiB free; 19.58 GiB reserved in total by PyTorch)\n```\n"
    )
    assert c.get("CD909") == "warning"
    assert text.lines("```python\nx = 1\n```") == ["x = 1"]  # an info string is no text


def test_gpu_memory_running_out_said_in_chinese() -> None:
    # Vision-CAIR/MiniGPT-4#50: 内存 beside a GPU and its size is the GPU's memory
    assert codes("我试图用我的3060（12G）跑，似乎是内存不够\n").get("CD909") == "warning"
    p = read("服务器内存不够，程序被杀了\n").facts.paste  # the host's memory
    assert p is None or not any(h.kind == "out-of-memory" for h in p.hits)


def test_lightning_device_banner_and_tensor_cores_tip() -> None:
    # Lightning's _log_device_info and its Tensor Cores tip (openvinotoolkit/anomalib#232, mittagessen/kraken#596)
    assert read("GPU available: False, used: False\n").facts.torch.is_available is False
    c = codes(
        "GPU available: True (cuda), used: True\nYou are using a CUDA device ('NVIDIA GeForce RTX 4070') that has "
        "Tensor Cores. To properly utilize them, you should set `torch.set_float32_matmul_precision('medium' | "
        "'high')`\n"
    )
    assert "CD915" in c and not any(v == "error" for v in c.values())


def test_available_but_no_device_is_not_read_as_available() -> None:
    # Lightning-AI/pytorch-lightning#16590: a torch bug, not a working GPU
    assert read("`torch.cuda.is_available()` is `True` but `torch.cuda.device_count()` is `0`\n").facts.torch is None


def test_the_gpus_available_memory_is_not_cuda_said_to_work() -> None:
    # "GPU可用显存只有2G": the GPU's available memory, not "CUDA is usable"
    assert read("GPU可用显存只有2G，模型跑不起来\n").facts.torch is None


def test_use_cuda_glued_to_chinese_is_a_wish_for_cuda() -> None:
    # dmMaze/BallonsTranslator#210's title: `\b` fails between "cuda" and a Chinese character
    title = "requirements里torch install时默认是cpu版本，所以cuda.is_available()只会返回false，导致--use-cuda不能使用"
    assert kinds(title)["cuda-wanted"]["by"] == "prose"
    assert "cuda-wanted" not in kinds("run it with --use-cuda-graphs for speed")


def test_a_workaround_that_can_bypass_it_does_not_say_what_was_installed() -> None:
    # pytorch#168065: the CPU build said, the CUDA index shown only as the way around it
    post = (
        "Hi, noticing that trying to `pip install torch` resulted in the CPU version of torch stable.\n"
        "1. Get an aarch64 machine, e.g. GB200\n"
        "It can be bypassed with \n```\npip3 install torch --index-url https://download.pytorch.org/whl/cu128\n```\n"
    )
    p = parsed(post)
    assert p.values["torch_cuda_built"] is False and "torch_cuda" not in p.values
    assert p.values["machine"] == "aarch64"
    assert [g.name for g in p.torch_gpus] == ["GB200"]
    assert codes(post)["CD202"] == "error"


def test_aarch64_beside_x86_names_no_machine() -> None:
    assert "machine" not in parsed("works on x86_64, fails on aarch64").values
    assert parsed("Our ARM64 server has an H100").values["machine"] == "aarch64"


@pytest.mark.parametrize(
    ("post", "gpus"),
    [
        ("Our Cisco UCS B200 M5 server has a Tesla V100", ["Tesla V100"]),  # a blade, not a Blackwell GPU
        ("Mac mini M4 machine running torch 2.9.0+cu130", []),
        ("m4.xlarge machine", []),
        ("1. Get an aarch64 machine, e.g. GB200", ["GB200"]),
    ],
)
def test_machine_words_name_only_datacenter_gpus(post: str, gpus: list[str]) -> None:
    assert [g.name for g in parsed(post).torch_gpus] == gpus


def test_cuda_visible_devices_set_in_the_program_after_cuda_started() -> None:
    # AUTOMATIC1111/stable-diffusion-webui#442: set in webui.py, "always using GPU0"; it worked from the .bat
    post = (
        'os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
        "This was working fine until recent updates.  Now, the program is always using GPU0.\n - OS: Windows 11\n"
    )
    code, out = triage(post, "--json")
    found = {f["code"]: f for f in json.loads(out)["findings"]}
    assert code == 0 and found["CD300"]["severity"] == "warning" and "CD914" in found
    assert "set CUDA_VISIBLE_DEVICES=1" in json.dumps(found["CD300"]["fix"])
    # set in the code alone, with nothing said of the GPU in use: nothing is claimed
    assert "visible-devices-too-late" not in kinds('os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n')


def test_a_bare_gtx_number_is_named() -> None:
    assert [(g.name, g.capability) for g in parsed("switch it to my GPU ?(Cuda, 1080ti)").torch_gpus] == [
        ("1080ti", "6.1")
    ]


def test_a_visible_devices_list_written_with_spaces_is_one_word_in_the_fix() -> None:
    post = 'os.environ["CUDA_VISIBLE_DEVICES"] = "1, 2"\nbut it still uses GPU 0\n'
    _, out = triage(post, "--json")
    found = {f["code"]: f for f in json.loads(out)["findings"]}
    assert "CUDA_VISIBLE_DEVICES=1,2 python train.py" in json.dumps(found["CD300"]["fix"])
