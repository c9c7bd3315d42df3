"""Facts people write by hand and the command lines they paste: "I have an RTX 3090", "torch==1.7.1+cu101",
"Driver 570.181", `pip install torch --index-url …/cu118`, `conda install pytorch … cpuonly`,
`os.environ["CUDA_VISIBLE_DEVICES"] = "7"`, `docker run` without `--gpus`, `singularity exec` without
`--nv`, a WSL1 kernel ("4.4.0-19041-Microsoft").

Read conservatively: a number is a driver version only next to the word driver; a GPU only when its
name is one knowledge/gpu_names.py knows; a torch version only next to torch/pytorch or as a wheel tag
(+cu121, +cpu). Every value keeps the line it came from.
"""

from __future__ import annotations

import re

from cudadoctor.backends.paste.model import Gpu, Hit, Partial
from cudadoctor.backends.paste.text import short, where

# A GPU model as people write it: "RTX 3090", "GTX1060", "2080ti", "A100-SXM4-40GB", "Quadro P2000", "T4".
_GPU = re.compile(
    r"(?<![\w.])(?:NVIDIA\s+)?(?:GeForce\s+)?"
    r"(?:(?:RTX|GTX|GT|GM|MX)\s?-?\d{3,4}(?:\s?(?:Ti|SUPER|M|Max-Q))*"
    r"|(?:Tesla\s+)?(?:[KMPVT]\d{1,3}|A\d{2,3}|H\d{3}|L\d{1,2}S?)(?:-[A-Z0-9]+)*"
    r"|Quadro\s+[A-Z]{0,3}\d{3,4}|TITAN\s+(?:X[Pp]?|V|RTX|Xp|Black|Z)"
    r"|(?<=\s)(?:20[6-8]0|30[5-9]0|40[6-9]0|50[6-9]0|10[5-8]0)\s?(?:ti|Ti|TI|super)?)(?![\w])",
    re.I,
)
_GPU_CONTEXT = re.compile(r"gpu|graphics|card|nvidia|geforce|显卡|그래픽|device|vram|rtx|gtx|tesla|quadro", re.I)

_TORCH_VERSION = re.compile(
    r"(?:\btorch|\bpytorch|\(you have)(?:\s*(?:version|版本))?\s*(?:\*\*)?\s*[:=-]*\s*(?:==)?\s*v?"
    r"(?P<v>\d\.\d{1,2}(?:\.\d{1,2})?(?:\.dev\d+|a0|rc\d)?(?:\+(?:cu\d{2,3}|cpu|rocm[\d.]+))?)\b",
    re.I,
)
_WHEEL_TAG = re.compile(r"(?<![\w.])(?P<v>\d\.\d{1,2}\.\d{1,2}(?:\.dev\d+)?\+(?:cu\d{2,3}|cpu))(?![\w.])")
_DRIVER = re.compile(
    r"(?:driver(?:\s+version)?|NVRM version: NVIDIA UNIX \S+ Kernel Module|驱动(?:版本)?)\s*[:：=]?\s*(?:is\s+)?"
    r"(?P<v>\d{3}\.\d{2,3}(?:\.\d{2,3})?)\b",
    re.I,
)
_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(?P<variant>cu\d{2,3}|cpu|rocm[\d.]+)\b")
_CONDA_CPU = re.compile(r"\bcpuonly\b|pytorch-mutex\S*\s+\S+\s+cpu\b|\bpytorch\S*\s+\S+\s+\S*(?:py\S*_)?cpu_\d")
_CONDA_LIST_PYTORCH = re.compile(r"^\s*pytorch\s+(\d+\.\d+\S*)\s+(\S*cpu\S*|\S*cuda\S*)\s*(\S*)\s*$")
_CVD = re.compile(
    r"""(?:CUDA_VISIBLE_DEVICES['"]?\s*\]?\s*=\s*|CUDA_VISIBLE_DEVICES=|setenv\s+CUDA_VISIBLE_DEVICES\s+)"""
    r"""['"]?(?P<v>[0-9][0-9,\s]*|)['"]?"""
)
_AVAILABLE = re.compile(
    r"is_available(?:\(\))?[`*\s]*(?:(?:it|that|still|always|just)\s+)*(?:returns?|returning|returned|shows?|gives?|is|=|==|:|->|=>|返回为?|为|就是|結果)?"
    r"\s*[`*]*\s*(?P<v>True|False)\b",
    re.I,
)
_WINVER = re.compile(r"Microsoft Windows \[(?:Version|版本)\s+10\.0\.(\d{5})")
_LINUX_DRIVER_INSTALL = re.compile(r"\bapt(?:-get)?\s+install\s+(?:-y\s+)?(nvidia-driver-\d+|cuda-drivers|nvidia-dkms-\d+)")
_CONTAINER_CONTEXT = re.compile(
    r"\bnvidia-docker\b|\bdocker\s+(?:run|build|compose)\b|\bDockerfile\b|\bFROM\s+\S+|(?:nvidia/cuda|pytorch/pytorch):\S+"
    r"|\bsingularity\s+(?:exec|run|shell|build)\b|\bapptainer\b|\bpodman\s+run\b"
)
_IMAGE_CUDA = re.compile(r"nvidia/cuda:(\d+\.\d+)|pytorch/pytorch:\S*?-cuda(\d+\.\d+)")
_SNAP_DOCKER = re.compile(r"\bsnap\s+install\s+docker\b")
_NO_SMI = re.compile(r"nvidia-smi[`'\"]?:?\s*(?:命令)?\s*(?:command not found|not found|未找到|找不到)|nvidia-smi\S*\s*命令返回错误\s*command not found", re.I)
_YOU_HAVE = re.compile(r"\(you have (?P<v>\d\.\d{1,2}\.\d{1,2}(?:\+(?:cu\d{2,3}|cpu))?)\)")
_NOT_INSTALLED_TORCH = re.compile(r"built for:?\s*$|requires?\s*$|compatible with\s*$|>=\s*$|<\s*$", re.I)
_SAYS_CPU = re.compile(r"\binstall(?:s|ed|ing)?\b[^.]{0,30}\bcpu[- ]?(?:only )?(?:version|build|variant)\b", re.I)
_JETSON = re.compile(r"\bJetson\b|\bJetPack\b|\bL4T\b", re.I)
_CAPABILITY = re.compile(r"(?:cuda|compute) capability\s*(?:is|of|:|=>|=|->)?\s*(\d{1,2}\.\d)\b|\|\s*(\d\.\d)\s*$", re.I)
_P2P_DISABLE = re.compile(r"NCCL_P2P_DISABLE\s*=\s*1")
_HANG = re.compile(r"\b(?:hang|hangs|hung|stuck|freeze|freezes|frozen|deadlock)", re.I)
_NPROC = re.compile(r"--nproc[-_]per[-_]node[= ](\d+)")
_DEVICE_CUDA = re.compile(r"device\)?\s*(?:为|is|=|:|->)\s*['\"`]?cuda\b", re.I)
_WSL1 = re.compile(r"\b(4\.4\.0-\d+-Microsoft)\b")
_DOCKER_RUN = re.compile(r"^\s*(?:\$\s*|#\s*)?(?:sudo\s+)?(?:docker|podman|nvidia-docker)\s+run\b(?P<rest>.*)$")
_SINGULARITY = re.compile(r"^\s*(?:\$\s*)?(?:singularity|apptainer)\s+(?:exec|run|shell)\b(?P<rest>.*)$")
_IN_CONTAINER = re.compile(r"inside (?:the |a )?(?:docker )?container|in (?:the |a )?docker container|容器", re.I)


def _torch(p: Partial, version: str, w: str) -> None:
    p.set("torch_version", version, w)
    p.set("torch_installed", True, w)
    m = re.search(r"\+cu(\d{2,3})$", version)
    if m:
        d = m.group(1)
        p.set("torch_cuda_built", True, w)
        p.set("torch_cuda", f"{int(d[:-1])}.{d[-1]}", w)
    elif version.endswith("+cpu"):
        p.set("torch_cuda_built", False, w)


def _gpu(p: Partial, line: str, w: str) -> None:
    from cudadoctor.knowledge import gpu_names

    if p.torch_gpus or not _GPU_CONTEXT.search(line):
        return
    for m in _GPU.finditer(line):
        name = m.group(0).strip()
        model = gpu_names.lookup(name) or gpu_names.lookup(re.sub(r"(?i)^(\d{4})", r"RTX \1", name))
        if model is None:
            model = gpu_names.lookup(re.sub(r"(?i)(RTX|GTX|GT|MX)\s?-?(\d)", r"\1 \2", name))
        cap = _CAPABILITY.search(line[m.end() :])
        cc = (cap.group(1) or cap.group(2)) if cap else (model.cc if model else None)
        if cc is not None:
            p.torch_gpus.append(Gpu(index=0, name=name, capability=cc))
            p.hits.append(Hit("gpu-named", short(line, 120), {"gpu": name, "cc": cc, "where": w}))
            return


def parse(all_lines: list[str]) -> Partial:
    p = Partial("prose and command lines")
    for n, line in enumerate(all_lines):
        if not line.strip():
            continue
        w = where(n, line)
        m = _YOU_HAVE.search(line) or _TORCH_VERSION.search(line) or _WHEEL_TAG.search(line)
        before = line[max(0, m.start() - 24) : m.start()] if m else ""
        if m and not re.search(r"torchvision|torchaudio|torchtext", before[-12:], re.I) and not (
            _NOT_INSTALLED_TORCH.search(before) or (n > 0 and _NOT_INSTALLED_TORCH.search(all_lines[n - 1]) and not _YOU_HAVE.search(line))
        ):
            _torch(p, m.group("v"), w)
        if re.search(r"\bpip3?\s+install\b[^#\n]*\btorch\b", line):
            p.hits.append(Hit("pip-install-torch", short(line, 160), {"where": w}))
        if re.search(r"Downloading \S*torch-0\.\S+\.tar\.gz", line):
            p.hits.append(Hit("sdist", short(line, 160), {"where": w}))
        if _SAYS_CPU.search(line):
            p.hits.append(Hit("says-cpu-build", short(line, 160), {"where": w}))
        if _JETSON.search(line):
            p.hits.append(Hit("jetson", short(line, 160), {"where": w}))
        if _P2P_DISABLE.search(line):
            p.hits.append(Hit("p2p-disabled", short(line, 160), {"where": w}))
        if _HANG.search(line):
            p.hits.append(Hit("hang", short(line, 160), {"where": w}))
        m = _NPROC.search(line)
        if m:
            p.hits.append(Hit("nproc-per-node", short(line, 160), {"n": m.group(1), "where": w}))
        if _DEVICE_CUDA.search(line):
            p.hits.append(Hit("gpu-ran", short(line, 120), {"why": f"{w}: the program's device is cuda"}))
        m = _DRIVER.search(line)
        if m and "cuda driver version" not in line.lower():
            p.set("driver_version", m.group("v"), w)
        m = _INDEX.search(line)
        if m and re.search(r"\b(?:pip3?|uv)\b.*\binstall\b|index-url|extra-index-url|-f\s", line):
            p.hits.append(Hit("install-index", short(line, 160), {"variant": m.group("variant"), "where": w}))
        if _CONDA_CPU.search(line) or re.search(r"::cpu-only-|[-_]cpu_\d\b|\+cpu-py", line):
            p.hits.append(Hit("conda-cpu", short(line, 160), {"where": w}))
        elif re.search(r"\bconda\s+(?:install|create)\b.*\b(?:pytorch|torch|vak)\b", line):
            p.hits.append(Hit("conda-install", short(line, 160), {"where": w}))
        m = _AVAILABLE.search(line)
        if m:
            p.set("torch_available", m.group("v").lower() == "true", w)
            p.set("torch_installed", True, w)
        cl = _CONDA_LIST_PYTORCH.match(line)
        if cl:
            p.conda.setdefault("pytorch", (cl.group(1), cl.group(2)))
            if "cpu" in cl.group(2):
                p.hits.append(Hit("conda-cpu", short(line, 160), {"where": w}))
        m = _CVD.search(line)
        if m and "CUDA_VISIBLE_DEVICES" not in p.env:
            p.env["CUDA_VISIBLE_DEVICES"] = m.group("v").replace(" ", "")
            p.hits.append(Hit("visible-devices-set", short(line, 160), {"value": p.env["CUDA_VISIBLE_DEVICES"]}))
        m = _WSL1.search(line)
        if m:
            p.set("kernel", m.group(1), w)
            p.set("os", "Linux", w)
            p.hits.append(Hit("wsl1", short(line, 160), {"kernel": m.group(1)}))
        m = _WINVER.search(line)
        if m:
            p.hits.append(Hit("windows-build", short(line, 160), {"build": m.group(1), "where": w}))
        m = _LINUX_DRIVER_INSTALL.search(line)
        if m:
            p.hits.append(Hit("linux-driver-install", short(line, 160), {"package": m.group(1), "where": w}))
        if _CONTAINER_CONTEXT.search(line):
            m = _IMAGE_CUDA.search(line)
            detail = {"where": w, **({"cuda": m.group(1) or m.group(2)} if m else {})}
            p.hits.append(Hit("container-context", short(line, 160), detail))
            if re.search(r"\bnvidia-smi\b", line):  # the driver reached a container: its banner follows
                p.hits.append(Hit("container-ran-smi", short(line, 160), {"where": w}))
        if _SNAP_DOCKER.search(line):
            p.hits.append(Hit("docker-snap", short(line, 160), {"where": w}))
        if _NO_SMI.search(line) or ("nvidia-smi" in line and "command not found" in line):
            p.hits.append(Hit("nvidia-smi-not-found", short(line, 160), {"where": w}))
        m = _DOCKER_RUN.match(line)
        if m and not re.search(r"--gpus|--runtime[= ]nvidia|--device[= ]nvidia\.com/gpu|--device[= ]/dev/nvidia", m.group("rest")):
            p.hits.append(Hit("container-run-no-gpus", short(line, 160), {"where": w}))
        m = _SINGULARITY.match(line)
        if m and not re.search(r"--nv\b|--nvccli\b", m.group("rest")):
            p.hits.append(Hit("singularity-no-nv", short(line, 160), {"where": w}))
        if _IN_CONTAINER.search(line):
            p.set("in_container", True, w)
        _gpu(p, line, w)
    _wsl(p, all_lines)
    return p


def _wsl(p: Partial, all_lines: list[str]) -> None:
    """WSL1 from a paste: its kernel ("4.4.0-19041-Microsoft"), or WSL on a Windows build older than
    18362, which has no WSL2 at all."""
    builds = [int(h.detail["build"]) for h in p.hits if h.kind == "windows-build"]
    wsl_named = any(re.search(r"\bWSL\b|Subsystem for Linux|Ubuntu app", line) for line in all_lines)
    if not any(h.kind == "wsl1" for h in p.hits) and builds and builds[0] < 18362 and wsl_named:
        line = next(h.text for h in p.hits if h.kind == "windows-build")
        p.hits.append(Hit("wsl1", line, {"build": str(builds[0])}))
        p.set("os", "Linux", "")
