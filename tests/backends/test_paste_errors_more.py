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
    # torchvision's ops come from the same index and build as torch: a kernel missing there is torch's build,
    # not an extension to rebuild against the installed torch
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/det/train.py", line 10, in <module>\n    keep = nms(boxes, scores, 0.5)\n'
        '  File "/usr/lib/python3/site-packages/torchvision/ops/boxes.py", line 41, in nms\n'
        "    return torch.ops.torchvision.nms(boxes, scores, iou_threshold)\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    assert "no-kernel-image" in kinds(paste) and "extension-no-kernel" not in kinds(paste)
    # an op library nobody names in the table: no pip line that could install a look-alike from PyPI
    paste = (
        '  File "/home/u/proj/model.py", line 12, in forward\n      return torch.ops.my_ops.fused_gelu(x)\n'
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    _, found = triage(paste)
    commands = [c for fx in found["CD240"]["fix"] for c in fx["commands"]]
    assert not any("--no-binary" in c for c in commands) and any(
        c.endswith("install --no-build-isolation -e .") for c in commands
    )


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


# --- the C / C++ runtime older than torch's build needs -----------------------------------------------------


def test_glibc_too_old_for_torch() -> None:
    # pytorch/pytorch#14274: torch 1.0 on CentOS 6 (glibc 2.12), the line as posted (plain quotes, newer glibc's)
    code, found = triage(
        "`from torch._C import *`\n"
        "`ImportError: /lib64/libc.so.6: version 'GLIBC_2.14' not found (required by "
        "/home/u/conda_packages/lib/python3.6/site-packages/torch/lib/libshm.so)`\n"
    )
    assert code == 1 and found["CD211"]["severity"] == "error"
    assert "GLIBC_2.14" in found["CD211"]["title"] and "libshm.so" in found["CD211"]["title"]
    assert any("ldd --version" in c for x in found["CD211"]["fix"] for c in x["commands"])
    # the backquoted form older glibc prints, wrapped by a terminal
    code, found = triage(
        "ImportError: /lib64/libc.so.6: version `GLIBC_2.17' not found (required by\n"
        "/opt/venv/lib/python3.8/site-packages/torch/lib/libtorch_cpu.so)\n"
    )
    assert code == 1 and "GLIBC_2.17" in found["CD211"]["title"]


def test_glibcxx_too_old_in_conda() -> None:
    # pytorch/pytorch#87279: the system's libstdc++ loaded for a conda-forge torch
    code, found = triage(
        "ImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by "
        "/home/u/miniconda3/envs/a/lib/python3.10/site-packages/torch/lib/libtorch_python.so)\n"
    )
    assert code == 1 and "GLIBCXX_3.4.30" in found["CD211"]["title"]
    commands = [c for x in found["CD211"]["fix"] for c in x["commands"]]
    assert "conda install -c conda-forge libstdcxx-ng" in commands
    # pytorch/pytorch#172259: the environment's own, older libstdc++, typographic quotes
    _, found = triage(
        "ImportError: /opt/conda/envs/py_3.10/bin/../lib/libstdc++.so.6: version ‘GLIBCXX_3.4.32’ not found "
        "(required by /opt/conda/envs/py_3.10/lib/python3.10/site-packages/torch/lib/libtorch_python.so)\n"
    )
    assert "CD211" in found and "/opt/conda/envs/py_3.10/bin/../lib/libstdc++.so.6" in found["CD211"]["why"]


def test_runtime_too_old_for_another_library_is_not_torchs_import() -> None:
    # executorch#14679: another package's extension needs the newer libstdc++; torch's import is not in question
    paste = (
        "ImportError: /opt/conda/envs/py_3.10/bin/../lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found "
        "(required by /opt/conda/envs/py_3.10/lib/python3.10/site-packages/executorch/extension/pybindings/"
        "_portable_lib.cpython-310-aarch64-linux-gnu.so)\n"
    )
    assert kinds(paste) == ["runtime-too-old"]
    code, found = triage(paste)
    assert "CD211" not in found and code == 3


# --- a program's own words for libcuda it could not dlopen --------------------------------------------------


def test_cuda_python_dlopen_under_wsl() -> None:
    # NVIDIA/cuda-python#17: cuInit under WSL2, libcuda in /usr/lib/wsl/lib
    code, found = triage(
        "File ~/miniconda3/envs/dev/lib/python3.8/site-packages/cuda/_cuda/ccuda.pyx:424, in "
        "cuda._cuda.ccuda.cuPythonInit()\n\nRuntimeError: Failed to dlopen libcuda.so\n```\n\n"
        "This is because in a WSL environment `libcuda.so` lives in `/usr/lib/wsl/lib` which is not in the default "
        "search path of dlopen.\n"
    )
    assert code == 1 and found["CD905"]["severity"] == "error"
    commands = [c for x in found["CD905"]["fix"] for c in x["commands"]]
    assert "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH" in commands
    # the newer wording, outside WSL: no driver where it ran
    code, found = triage("RuntimeError: Failed to dlopen libcuda.so.1\n")
    assert code == 1 and "libcuda.so.1" in found["CD905"]["title"] and "wsl" not in found["CD905"]["title"]


@pytest.mark.parametrize(
    "line",
    [
        # Triton's libcuda_dirs (backends/nvidia/driver.py)
        "AssertionError: libcuda.so cannot found!\n",
        # Numba's DRIVER_NOT_FOUND_MSG
        "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: \nCUDA driver library cannot be found.\n",
        # cudarc (src/lib.rs)
        "thread 'main' panicked at cudarc-0.11.9/src/lib.rs:98:5:\nUnable to dynamically load the \"cuda\" shared "
        'library - searched for library names: ["cuda", "nvcuda"]\n',
    ],
)
def test_other_programs_cannot_load_libcuda(line: str) -> None:
    code, found = triage(line)
    assert code == 1 and found["CD905"]["severity"] == "error"


def test_triton_libcuda_fix_is_the_loader_cache() -> None:
    _, found = triage("AssertionError: libcuda.so cannot found!\n")
    assert "Triton" in found["CD905"]["title"]
    assert "sudo ldconfig" in [c for x in found["CD905"]["fix"] for c in x["commands"]]


def test_numba_sysinfo_is_not_a_missing_library() -> None:
    # numba -s: "cannot be found or no CUDA enabled devices are present" says either
    assert kinds("CUDA driver library cannot be found or no CUDA enabled devices are present.\n") == []


# --- a crash while importing torch or a torch-based package -------------------------------------------------


@pytest.mark.parametrize(
    "paste",
    [
        # Lightning-AI/pytorch-lightning#4224: zsh's wording, the import named in the prose
        "```import torch\nimport pytorch_lightning as pl\n```\nThe import of pytorch_lightning fails immediately "
        "with the error: 29144 segmentation fault (core dumped)  python\n",
        # bash's wording under a one-line import
        '$ python -c "import torch"\nSegmentation fault (core dumped)\n',
        # faulthandler's, over the import machinery's frames
        "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n  File "
        '"/venv/lib/python3.10/site-packages/torch/__init__.py", line 229 in <module>\n  File '
        '"<frozen importlib._bootstrap>", line 241 in _call_with_frames_removed\n',
    ],
)
def test_segfault_while_importing_torch(paste: str) -> None:
    assert "import-segfault" in kinds(paste)
    code, found = triage(paste)
    assert code == 3 and "CD901" in found


def test_segfault_while_training_is_not_an_import_crash() -> None:
    assert "import-segfault" not in kinds(
        "import torch\nmodel = Net().cuda()\nEpoch 1/10 loss 0.53\nSegmentation fault (core dumped)\n"
    )
    assert "import-segfault" not in kinds("import cv2\nSegmentation fault (core dumped)\n")


def test_a_windows_dll_error_pasted_without_its_code_is_read() -> None:
    # Djdefrag/QualityScaler#9's title: the missing VC++ runtime, told without "[WinError 126]"
    code, found = triage(
        'The specified module could not be found. Error loading "torch\\lib\\caffe2_detectron_ops.dll" or one of '
        "its dependencies.\n"
    )
    assert code == 1 and "caffe2_detectron_ops.dll" in found["CD906"]["title"]
    assert any("VCRedist" in c for fx in found["CD906"]["fix"] for c in fx["commands"])


def test_cudnn_that_cannot_load_its_sub_library_under_wsl2() -> None:
    # facebookresearch/nougat#105: the title alone, on WSL2; the fix was putting /usr/lib/wsl/lib's libcuda in reach
    code, found = triage("Could not load library libcudnn_cnn_infer.so.8\n\nOn WSL2 Ubuntu 22.04.2 LTS\n")
    assert code == 1 and "/usr/lib/wsl/lib" in found["CD905"]["title"] and "CD141" in found
    # with the loader's own line, that line names the cause, said once
    _, found = triage(
        "WSL 2\nCould not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: "
        "No such file or directory\n"
    )
    assert found["CD905"]["title"].startswith("libcuda.so cannot be found: under WSL2")
    # not on WSL: cuDNN's words say only that the library or one it needs is missing
    _, found = triage("Could not load library libcudnn_cnn_infer.so.8\n")
    assert found["CD905"]["title"].startswith("cuDNN could not load libcudnn_cnn_infer.so.8: it, or a library")


def test_a_driver_api_symbol_missing_beside_driver_too_old_is_that_driver() -> None:
    # vllm-project/vllm#11623: CUDA 12.0's cuTensorMapEncodeTiled is missing from a CUDA 11.4 driver's libcuda
    _, found = triage(
        "ImportError('/home/u/.local/lib/python3.8/site-packages/vllm/_C.abi3.so: undefined symbol: "
        "cuTensorMapEncodeTiled')\nUserWarning: CUDA initialization: The NVIDIA driver on your system is too old "
        "(found version 11040).\n"
    )
    assert "CD902" in found and "CD904" not in found


def test_an_application_logging_that_it_fell_back_to_the_cpu() -> None:
    # 2noise/ChatTTS#102: its gpu_utils logs torch.cuda.is_available() being False
    code, found = triage("WARNING:ChatTTS.utils.gpu_utils:No GPU found, use CPU instead\n")
    assert code == 3 and "CD901" in found  # the state is read; its cause is asked for


def test_torchvision_custom_ops_that_do_not_load() -> None:
    # ultralytics/yolov5#5511: torchvision/extension.py's _assert_has_ops after a torch upgrade
    _, found = triage(
        "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions are "
        "incompatible, or if you had errors while compiling torchvision from source.\n"
    )
    assert "CD222" in found


def test_bitsandbytes_without_a_cuda_runtime_falls_back_to_its_cpu_library() -> None:
    # Thund3rPat/kohya_ss-linux#8: only libcudart.so.11.0 existed, bitsandbytes searched for libcudart.so
    code, found = triage(
        "UserWarning: The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers "
        "and GPU quantization are unavailable.\n"
    )
    assert code == 1 and found["CD905"]["title"].startswith("bitsandbytes found no CUDA runtime")
    assert any("python -m bitsandbytes" in c for fx in found["CD905"]["fix"] for c in fx["commands"])


def test_an_extension_built_for_chosen_architectures_lacks_this_gpus() -> None:
    # open-mmlab/mmcv#1413: MMCV_CUDA_ARGS built sm_61 only; the error told short, on a V100
    code, found = triage(
        "Install mmcv-full failed based on pytorch image with error msg `no kernel image is available`\n"
        "GPU version: v100\n"
        'ENV TORCH_CUDA_ARCH_LIST="6.0 6.1 7.0+PTX"\n'
        'ENV MMCV_CUDA_ARGS="-gencode=arch=compute_61,code=sm_61"\n'
    )
    assert code == 1 and "CD215" not in found and "mmcv" in found["CD240"]["title"]
    commands = [c for fx in found["CD240"]["fix"] for c in fx["commands"]]
    assert commands[0].startswith("unset MMCV_CUDA_ARGS") and 'export TORCH_CUDA_ARCH_LIST="7.0"' in commands
    # torch's notice that the variable is unset is not a build flag
    _, found = triage(
        "UserWarning: TORCH_CUDA_ARCH_LIST is not set, all archs for visible cards are included\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    assert "CD240" not in found and "CD215" in found


def test_a_missing_compiled_op_of_a_package_asks_how_it_was_built() -> None:
    # IDEA-Research/Grounded-Segment-Anything#84: groundingdino's _C was never built (CUDA_HOME unset)
    code, found = triage("ImportError: cannot import name '_C' from 'groundingdino'\n")
    assert code == 3 and any("CUDA_HOME" in c for fx in found["CD901"]["fix"] for c in fx["commands"])


def test_an_ops_check_macro_saying_no_kernel_image_is_the_extensions() -> None:
    # open-mmlab/OpenPCDet#623: "CUDA kernel failed : …" is the ops' CHECK macro; torch says "CUDA error:"
    _, found = triage("CUDA kernel failed : no kernel image is available for execution on the device\n")
    assert "CD240" in found and "CD215" not in found


def test_a_pod_whose_program_finds_no_driver_got_no_gpu() -> None:
    # NVIDIA/nvidia-docker#828: the image ran under `docker run --runtime nvidia`, not in the Kubernetes pod
    code, found = triage(
        'I can run my cuda image using "docker run --runtime nvidia imgname". But when I deploy in kubernetes I '
        'get "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory"\n'
    )
    assert code == 1 and found["CD146"]["severity"] == "error" and found["CD905"]["cause"] == "CD146"


def test_cudnn_asking_for_the_unversioned_libcuda_on_linux() -> None:
    # CUDA had started (training runs), so the driver is there: only the libcuda.so link is missing
    code, found = triage(
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such "
        "file or directory\n"
    )
    assert code == 1 and found["CD905"]["title"].startswith("cuDNN needs libcuda.so, the unversioned name")
    assert any("ln -s" in c for fx in found["CD905"]["fix"] for c in fx["commands"])


def test_the_two_key_lists_of_one_load_are_one_story() -> None:
    _, found = triage(
        'Missing key(s) in state_dict: "map_classifier.0.weight", "map_classifier.0.bias". '
        'Unexpected key(s) in state_dict: "world_classifier.0.weight", "world_classifier.0.bias".\n'
    )
    assert found["CD641"]["cause"] == "CD640"


def test_a_kernel_librarys_own_cuda_error_is_the_librarys() -> None:
    # THUDM/ChatGLM3#695: cpm_kernels (the quantized path) raises "CUDA Error: <cuGetErrorString>"; torch says
    # "CUDA error:". The full-precision model ran: the quantization kernels lack this GPU, not torch's build
    _, found = triage("RuntimeError: CUDA Error: no kernel image is available for execution on the device\n")
    assert "CD240" in found and "CD215" not in found


@pytest.mark.parametrize(
    "line",
    [
        # AbdBarho/stable-diffusion-webui-docker#130: a compose file's `driver: nvidia` names the driver
        'Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]]\n',
        # `docker run --gpus all` names none; a compose file may ask for other capabilities
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].\n',
        'could not select device driver "nvidia" with capabilities: [[compute utility]]\n',
    ],
)
def test_docker_without_an_nvidia_runtime_in_every_wording(line: str) -> None:
    code, found = triage(line)
    assert found["CD910"]["severity"] == "error" and code == 1


def test_a_torch_dll_error_without_its_winerror_code() -> None:
    # oyxhust/captcha#2: a typo'd "Erro", typographic quotes, no [WinError NNN] in front
    post = "OSError: Erro loading “xxx\\Lib\\site-packages\\torch\\lib\\fbgemm.dll” or one of its dependencies.\n"
    code, found = triage(post)
    assert found["CD906"]["title"] == "Windows cannot load fbgemm.dll" and code == 1
    coded = (
        '[WinError 126] The specified module could not be found. Error loading "C:\\t\\lib\\c10.dll" or one of '
        "its dependencies."
    )
    assert kinds(coded).count("windows-dll") == 1  # read once, not again by the bare wording


def test_an_invalid_ordinal_with_the_index_the_code_asks_for_is_explained() -> None:
    # yandex-research/tab-ddpm#20: cuda:1 on a one-GPU machine
    post = 'device = torch.device("cuda:1")\nRuntimeError: CUDA error: invalid device ordinal\n'
    code, found = triage(post)
    assert code == 0 and found["CD909"]["severity"] == "warning"
    assert "GPU 1" in json.dumps(found["CD909"]["fix"])
    code, found = triage("RuntimeError: CUDA error: invalid device ordinal\n")  # which index: unknown
    assert code == 3 and "CD901" in found  # not enough to tell: it asks


def test_cudnn_not_initialized_alone_is_memory_or_library_not_a_setup_error() -> None:
    # tinyvision/DAMO-YOLO#20: it ran with a smaller batch
    code, found = triage("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n")
    assert found["CD913"]["severity"] == "warning" and code == 3
    assert "GPU memory" in found["CD913"]["title"]
    # beside a library the loader could not match, it is the library stack
    code, found = triage(
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n"
        "ImportError: /usr/lib/x86_64-linux-gnu/libcudnn.so.8: undefined symbol: cudnnGetVersion\n"
    )
    assert found["CD913"]["severity"] == "error"


def test_the_device_plugins_nvml_not_loaded_in_a_pod() -> None:
    # NVIDIA/k8s-device-plugin#23: Docker's default runtime was not nvidia
    post = (
        "I install nvidia-docker2, and deploment device plugin in kubernetes 1.8, but kubectl describe pods, "
        "I get the error.\n\nloading NVML\nFailed to start nvml with error:  could not load NVML library\n"
    )
    code, found = triage(post)
    assert found["CD146"]["severity"] == "error" and found["CD101"]["cause"] == "CD146" and code == 1


@pytest.mark.parametrize(
    "line",
    [
        "nvcc fatal : Unsupported gpu architecture 'compute_{i}'\n",
        'OSError: Error loading "d{i}.dll" or one of its dependencies.\n',
    ],
)
def test_many_distinct_matches_of_one_error_stay_bounded(line: str) -> None:
    # each distinct match ran a search of the whole paste, or of every hit: a 1 MB paste took minutes
    import time

    paste = "".join(line.format(i=i) for i in range(10, 20_000))[: 1 << 20]
    start = time.process_time()
    assert len(kinds(paste)) <= 100
    assert time.process_time() - start < 10


def test_nccls_shared_memory_error_without_its_prefix_and_its_two_other_causes() -> None:
    # showlab/VideoDiffusion#2: torch's "Last error:" or Ray's "(Runner pid=…)" in front of NCCL's words
    line = "Error while creating shared memory segment /dev/shm/nccl-pZafXL (size 7340384)\n"
    _, found = triage(line)
    assert found["CD140"]["severity"] == "warning"
    # NVIDIA/nccl#328: /dev/shm's mode refused it; chmod fixed it, not a larger size
    _, found = triage("NCCL INFO shm_open failed : Permission denied\nNCCL WARN " + line)
    assert "Permission denied" in found["CD140"]["title"] and "chmod 1777 /dev/shm" in json.dumps(found["CD140"])
    # pytorch#26009: --ipc=host before the error, 254 GB of /dev/shm: a notice that looks elsewhere
    bus = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."
    _, found = triage("I run it in a docker container with --ipc=host\n" + bus + "\n")
    assert found["CD140"]["severity"] == "info" and "--ipc=host" in found["CD140"]["title"]
    # the size given after the error is the fix that worked, not the set-up that failed
    _, found = triage(bus + "\nWhat fixed it was adding --shm-size=1g\n")
    assert found["CD140"]["severity"] == "warning"


def test_an_invalid_ordinal_from_a_ranks_own_gpu_is_more_ranks_than_gpus() -> None:
    # HRNet/HRNet-Semantic-Segmentation#171: set_device(args.local_rank) with more processes than GPUs
    post = (
        "RuntimeError: cuda runtime error (10) : invalid device ordinal at /pytorch/torch/csrc/cuda/Module.cpp:33\n"
        '  File "tools/train.py", line 98, in main\n    torch.cuda.set_device(args.local_rank)\n'
    )
    code, found = triage(post)
    assert found["CD811"]["severity"] == "error" and "CD909" not in found and code == 1
    assert "torchrun --nproc_per_node=gpu" in json.dumps(found["CD811"]["fix"])


def test_invokeais_device_line_and_ddps_unused_parameters() -> None:
    assert "app-on-cpu" in kinds(">> Using device_type cpu\n")  # invoke-ai/InvokeAI#1202
    # WuJunde/MedSegDiff#27: a layer defined but not used in forward; the stack is fine
    code, found = triage(
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one.\n"
    )
    assert code == 0 and "find_unused_parameters=True" in json.dumps(found["CD909"]["fix"])


def test_build_flags_with_a_lower_minor_of_the_gpus_major_do_not_leave_it_out() -> None:
    # a cubin for 8.0 runs on an 8.6 GPU (X.y on X.z, z >= y): the flags explain nothing, torch's error stays
    _, found = triage(
        "GPU: RTX 3090\n"
        'export TORCH_CUDA_ARCH_LIST="8.0"\n'
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    assert "CD240" not in found
    # 7.5 only leaves an 8.6 GPU out (another major)
    _, found = triage(
        'GPU: RTX 3090\nexport TORCH_CUDA_ARCH_LIST="7.5"\n'
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    assert found["CD240"]["severity"] == "error"


def test_a_cpu_build_asked_for_cuda_with_its_version_unknown_reads_whole() -> None:
    # a CPU build said in words, no version: the title had "torch  is" with an empty version between
    _, found = triage(
        "pip gave me the cpu version of torch\n"
        "ValueError: Invalid CUDA 'device=0' requested. Use 'device=cpu' or pass valid CUDA device(s)\n"
    )
    assert found["CD202"]["title"].startswith("torch is a CPU-only build, but the program asks for CUDA")
