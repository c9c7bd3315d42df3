"""Error texts triage reads since the corpus4-7 posts: each from the real line of a post (the thread in the
comment), plus a variant of the same family, through the real command line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner


def triage(paste: str) -> tuple[int, dict[str, dict]]:
    from cudadoctor.cli import cli

    r = CliRunner().invoke(cli, ["triage", "--json"], input=paste)
    return r.exit_code, {f["code"]: f for f in json.loads(r.stdout)["findings"]}


def kinds(paste: str) -> list[str]:
    from cudadoctor.backends.paste import read

    p = read(paste).facts.paste
    assert p is not None
    return [h.kind for h in p.hits]


@pytest.mark.parametrize(
    "line",
    [
        # liuyuan-pal/Gen6D#39: an incomplete download
        "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory\n",
        "RuntimeError: PytorchStreamReader failed reading file data/0: invalid header or archive is corrupted\n",
        "RuntimeError: unexpected EOF, expected 7457519 more bytes. The file might be corrupted.\n",
    ],
)
def test_truncated_checkpoint(line: str) -> None:
    code, found = triage(line)
    assert found["CD602"]["severity"] == "error" and code == 1


def test_zip_reader_file_not_found_is_not_truncation() -> None:
    assert "ckpt-truncated" not in kinds(
        "RuntimeError: PytorchStreamReader failed locating file constants.pkl: file not found\n"
    )


def test_missing_and_unexpected_keys() -> None:
    # hou-yz/MVDet#7: a renamed head
    _, found = triage(
        'Missing key(s) in state_dict: "map_classifier.0.weight", "map_classifier.0.bias".\n\n'
        'Unexpected key(s) in state_dict: "world_classifier.0.weight", "world_classifier.0.bias".\n'
    )
    assert found["CD640"]["severity"] == "error" and found["CD641"]["severity"] == "error"
    assert "map_classifier.0.weight" in found["CD640"]["title"]
    # nikhilbarhate99/PPO-PyTorch#32, a tab-indented line under "Error(s) in loading state_dict"
    _, found = triage(
        "RuntimeError: Error(s) in loading state_dict for ActorCritic:\n"
        '\tUnexpected key(s) in state_dict: "affine.weight", "affine.bias". \n'
    )
    assert "CD641" in found and "CD640" not in found and "(2)" in found["CD641"]["title"]


def test_wrapper_prefix_still_wins() -> None:
    _, found = triage(
        'Missing key(s) in state_dict: "conv1.weight". Unexpected key(s) in state_dict: "module.conv1.weight".\n'
    )
    assert "CD908" in found and "CD640" not in found and "CD641" not in found


def test_old_size_mismatch_wording() -> None:
    _, found = triage(
        'While copying the parameter named "fc.weight", whose dimensions in the model are torch.Size([10, 512]) '
        "and whose dimensions in the checkpoint are torch.Size([1000, 512]).\n"
    )
    assert "[1000, 512]" in found["CD642"]["title"]


def test_torchvision_op_without_cuda_kernel() -> None:
    # ltdrdata/ComfyUI-Impact-Pack#915
    _, found = triage(
        "Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. This could be because the "
        "operator doesn't exist for this backend\n"
    )
    assert found["CD222"]["severity"] == "error" and "nms" in found["CD222"]["title"]
    _, found = triage(
        "NotImplementedError: Could not run ‘torchvision::roi_align’ with arguments from the ‘CUDA’ backend.\n"
    )
    assert "CD222" in found


def test_triton_newer_than_torch_pins() -> None:
    # woct0rdho/triton-windows#158: Triton 3.5 beside torch 2.8
    paste = (
        "ImportError: cannot import name 'triton_key' from 'triton.compiler.compiler'\n"
        "PyTorch: 2.8.0+cu129\nTriton (with error): 3.5.0-windows.post21\n"
    )
    _, found = triage(paste)
    fixes = json.dumps(found["CD227"]["fix"])
    assert '\\"triton-windows>=3.4,<3.5\\"' in fixes and "pip install triton\\" not in fixes
    # Linux: torch's wheel pins its Triton exactly, read from the installed torch's metadata
    _, found = triage("ImportError: cannot import name 'triton_key' from 'triton.compiler.compiler'\nPyTorch: 2.8.0\n")
    fixes = json.dumps(found["CD227"]["fix"])
    assert "requires('torch')" in fixes and "windows" not in fixes and "pip install triton\\" not in fixes


def test_no_kernel_image_in_an_extension() -> None:
    # open-mmlab/mmcv#2201: mmcv built on an A100, run on a V100 (a debugger prints the frames last)
    paste = (
        "Exception has occurred: RuntimeError\n"
        "CUDA error: no kernel image is available for execution on the device\n"
        '  File "/root/mmcv/mmcv/ops/focal_loss.py", line 60, in forward\n'
        "    ext_module.sigmoid_focal_loss_forward(\n"
    )
    _, found = triage(paste)
    assert found["CD240"]["severity"] == "error" and "mmcv" in found["CD240"]["title"] and "CD215" not in found
    # a Python traceback: the last frame before the error is the extension's
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/det/train.py", line 10, in <module>\n    keep = nms(boxes, scores, 0.5)\n'
        '  File "/usr/lib/python3/site-packages/torchvision/ops/boxes.py", line 41, in nms\n'
        "    return torch.ops.torchvision.nms(boxes, scores, iou_threshold)\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    assert "extension-no-kernel" in kinds(paste)


def test_no_kernel_image_in_torch_stays_torchs() -> None:
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 10, in <module>\n    y = model(x)\n'
        '  File "/usr/lib/python3/site-packages/torch/nn/modules/conv.py", line 456, in _conv_forward\n'
        "    return F.conv2d(input, weight, bias, self.stride,\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    assert "no-kernel-image" in kinds(paste) and "extension-no-kernel" not in kinds(paste)


@pytest.mark.parametrize(
    "line",
    [
        # AUTOMATIC1111/stable-diffusion-webui#2986
        'But I get the error "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable".\n',
        "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n",
    ],
)
def test_devices_busy_both_wordings(line: str) -> None:
    from cudadoctor.backends.paste import read

    facts = read(line).facts
    assert facts.cuda_driver is not None and facts.cuda_driver.init_result == 46
    _, found = triage(line)
    assert found["CD122"]["severity"] == "error"


@pytest.mark.parametrize("apostrophe", ["'", "\u2018", "\u2019"])
def test_typographic_apostrophes(apostrophe: str) -> None:
    # qixuema/envs#4 (a Chinese post with "couldn‘t")
    line = f"NVIDIA-SMI has failed because it couldn{apostrophe}t communicate with the NVIDIA driver.\n"
    _, found = triage(line)
    assert found["CD102"]["severity"] == "error"


def test_legacy_branch_drops_the_gpu() -> None:
    # NixOS/nixos-hardware#1828, journalctl's wrapped NVRM lines
    paste = (
        "Apr 13 16:41:14 nixos kernel: NVRM: The NVIDIA NVIDIA GeForce GTX 1050 GPU installed in this system>\n"
        "                              NVRM:  supported through the NVIDIA 580.xx Legacy drivers. Please\n"
        "                              NVRM:  visit http://www.nvidia.com/object/unix.html for more\n"
        "                              NVRM:  information.  The 595.58.03 NVIDIA driver will ignore\n"
        "                              NVRM:  this GPU.  Continuing probe...\n"
    )
    _, found = triage(paste)
    assert found["CD116"]["severity"] == "error" and "580" in found["CD116"]["title"]
    assert "595.58.03" in found["CD116"]["title"]


def test_open_module_without_gsp() -> None:
    # negativo17/nvidia-driver#158: a GT 1030 with the open module
    paste = (
        "kernel: NVRM: The NVIDIA GPU 0000:09:00.0 (PCI ID: 10de:1d01)\n"
        "             NVRM: installed in this system is not supported by open\n"
        "             NVRM: nvidia.ko because it does not include the required GPU\n"
        "             NVRM: System Processor (GSP).\n"
    )
    _, found = triage(paste)
    assert found["CD126"]["severity"] == "error" and "proprietary" in found["CD126"]["title"]


def test_tensorflow_module_and_cuinit_lines() -> None:
    # tensorflow/tensorflow#5473
    paste = (
        "modprobe: ERROR: could not insert 'nvidia_367_uvm': Unknown symbol in module, or unknown parameter "
        "(see dmesg)\n"
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:491] failed call to cuInit: CUDA_ERROR_UNKNOWN\n"
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:140] kernel driver does not appear to be running "
        "on this host (gzhao-b1208): /proc/driver/nvidia/version does not exist\n"
    )
    from cudadoctor.backends.paste import read

    facts = read(paste).facts
    assert facts.cuda_driver is not None and facts.cuda_driver.init_result == 999
    assert facts.driver is not None and facts.driver.init_status == "DRIVER_NOT_LOADED"
    _, found = triage(paste)
    assert found["CD119"]["severity"] == "error" and "nvidia_367_uvm" in found["CD119"]["title"]
    assert "CD102" in found


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: No CUDA GPUs are available\n",
        # lllyasviel/Fooocus#1189, GuijiAI/Duix-Avatar#307 (a Chinese sentence around it)
        "as soons as is start generating i get a runtime error: no cuda gp available.\n",
        "docker运行轻量级版本出现no cuda gpu aviliable，wsl ubuntu里\n",
        # Lightning, across versions (deep-packet#4)
        "pytorch_lightning.utilities.exceptions.MisconfigurationException: GPUs requested but none are available.\n",
        "MisconfigurationException: You requested gpu: [0]\n But your machine only has: []\n",
        "MisconfigurationException: `CUDAAccelerator` can not run on your system since the accelerator is not "
        "available.\n",
    ],
)
def test_no_cuda_gpus_wordings(line: str) -> None:
    assert "no-cuda-gpus" in kinds(line)


def test_no_cuda_gpus_needs_the_words() -> None:
    assert "no-cuda-gpus" not in kinds("CUDA GPUs are available here, and no one else uses them.\n")
