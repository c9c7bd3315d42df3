"""The kernel side (modprobe, dmesg/journal NVRM lines) and libraries built for another torch or CUDA,
each from the minimal line a post holds, through the real command line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner


def findings(paste: str) -> tuple[int, dict[str, dict]]:
    from cudadoctor.cli import cli

    r = CliRunner().invoke(cli, ["triage", "--json"], input=paste)
    return r.exit_code, {f["code"]: f for f in json.loads(r.stdout)["findings"]}


@pytest.mark.parametrize(
    ("paste", "code", "words"),
    [
        ("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service\n", "CD117", "Secure Boot"),
        (
            "modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.5.0-14-generic\n",
            "CD119",
            "running kernel 6.5.0-14-generic",
        ),
        (
            "NVRM: API mismatch: the client has the version 550.90.07, but\n"
            "NVRM: this kernel module has the version 550.54.14.  Please\n",
            "CD103",
            "kernel module 550.54.14 vs libraries 550.90.07",
        ),
        (
            "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2684) installed in this system requires use of the "
            "NVIDIA open kernel modules.\n",
            "CD126",
            "open kernel module",
        ),
        ("RuntimeError: operator torchvision::nms does not exist\n", "CD222", "torchvision"),
    ],
)
def test_each_text_names_its_cause(paste: str, code: str, words: str) -> None:
    exit_code, found = findings(paste)
    assert exit_code == 1 and found[code]["severity"] == "error" and words in found[code]["title"]


def test_an_xid_is_a_warning_with_its_number() -> None:
    _, found = findings("[ 1234.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    assert found["CD156"]["severity"] == "warning" and "Xid 79" in found["CD156"]["title"]


def test_an_extension_built_with_another_cuda_major() -> None:
    _, found = findings(
        "RuntimeError:\nThe detected CUDA version (12.1) mismatches the version that was used to compile\n"
        "PyTorch (11.8). Please make sure to use the same CUDA versions.\n"
    )
    assert "CUDA 12.1 for a torch built with CUDA 11.8" in found["CD244"]["title"]


def test_nouveau_is_named_only_where_the_nvidia_module_is_not_loaded() -> None:
    smi = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    _, found = findings(smi + "$ lsmod | grep nouveau\nnouveau              2203648  1\n")
    assert found["CD118"]["severity"] == "error"
    _, found = findings("$ lsmod | grep nouveau\nnouveau              2203648  1\n")
    assert "CD118" not in found


def test_dkms_that_could_not_build_the_module() -> None:
    _, found = findings("Error! Bad return status for module build on kernel: 6.2.0-26-generic (x86_64)\n")
    assert "6.2.0-26-generic" in found["CD119"]["title"]


def test_secure_boot_on_and_no_module_is_a_warning_until_modprobe_says_so() -> None:
    smi = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    _, found = findings("$ mokutil --sb-state\nSecureBoot enabled\n$ nvidia-smi\n" + smi)
    assert found["CD117"]["severity"] == "warning" and "sudo modprobe nvidia" in json.dumps(found["CD117"]["fix"])


def test_wsl_list_shows_wsl1() -> None:
    _, found = findings(
        "PS C:\\> wsl -l -v\n  NAME            STATE           VERSION\n* Ubuntu-20.04    Running         1\n"
    )
    assert found["CD112"]["severity"] == "error"
    from cudadoctor.cli import cli

    r = CliRunner().invoke(
        cli, ["triage"], input="  NAME            STATE           VERSION\n* Ubuntu-22.04    Running         2\n"
    )
    assert "CD112" not in r.stdout + r.stderr


def test_torch_compile_without_triton() -> None:
    _, found = findings(
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "RuntimeError: Cannot find a working triton installation. More information on installing Triton can be "
        "found at https://github.com/openai/triton\n"
    )
    fixes = json.dumps(found["CD227"]["fix"])
    # the Triton torch pins, read from torch's own metadata; never a bare `pip install triton` (the newest)
    assert found["CD227"]["severity"] == "warning" and "requires('torch')" in fixes
    assert "pip install triton" not in fixes


def test_the_arch_list_typed_at_a_prompt_is_the_builds() -> None:
    from cudadoctor.backends.paste import read

    p = read(">>> torch.cuda.get_arch_list()\n['sm_50', 'sm_60', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'sm_90']\n")
    assert p.facts.torch is not None and p.facts.torch.arch_flags == [
        "sm_50",
        "sm_60",
        "sm_70",
        "sm_75",
        "sm_80",
        "sm_86",
        "sm_90",
    ]
    _, found = findings(
        "GPU 0: NVIDIA GeForce RTX 5090 (UUID: GPU-1)\n>>> torch.cuda.get_arch_list()\n"
        "['sm_50', 'sm_60', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'sm_90']\n"
    )
    assert found["CD205"]["severity"] == "error"


def test_an_image_that_needs_a_newer_host_driver() -> None:
    _, found = findings(
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver "
        "to a newer version, or use an earlier cuda container: unknown.\n"
    )
    assert "CUDA 12.4 or newer" in found["CD902"]["title"] and "CD910" not in found


def test_a_cuda_build_that_is_not_available_is_never_healthy() -> None:
    """The index of the install line names the build; is_available() False then asks torch for its reason."""
    code, found = findings(
        "pip install torch --index-url https://download.pytorch.org/whl/cu118\n"
        "torch.cuda.is_available() returns False\n"
        "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |\n"
    )
    assert code == 3 and "torch.zeros(1).cuda()" in found["CD901"]["title"]


def test_an_nccl_error_asks_for_nccls_own_log() -> None:
    code, found = findings("RuntimeError: NCCL Error 2: unhandled system error\n")
    assert code == 3 and "`NCCL_DEBUG=INFO python train.py 2>&1 | grep NCCL`" in found["CD901"]["title"]
