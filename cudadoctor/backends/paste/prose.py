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
from collections.abc import Callable

from cudadoctor.backends.paste import prose_more, prose_said
from cudadoctor.backends.paste.model import Gpu, Hit, Partial
from cudadoctor.backends.paste.text import short, where

# A GPU model as people write it: "RTX 3090", "GTX1060", "2080ti", "A100-SXM4-40GB", "Quadro P2000", "T4".
_GPU = re.compile(
    # "GPU3090", "显卡rtx5070ti": a model glued to the word GPU (SwinTextSpotter-style posts) is read too
    r"(?:(?<![A-Za-z0-9_.])|(?<=GPU)|(?<=gpu))(?:NVIDIA\s+)?(?:GeForce\s+)?"
    r"(?:(?:RTX|GTX|GT|GM|MX)\s?-?\d{3,4}(?:\s?(?:Ti|SUPER|M|Max-Q))*"
    r"|(?:Tesla\s+)?(?:[KMPVT]\d{1,3}|A\d{2,3}|G?H\d{3}|G?B[123]00(?!\s*M\d)|L\d{1,2}S?)(?:-[A-Z0-9]+)*"
    r"|Quadro\s+[A-Z]{0,3}\d{3,4}|TITAN\s+(?:X[Pp]?|V|RTX|Xp|Black|Z)"
    r"|(?:^|(?<=[\s\u3000-\u9fff\uac00-\ud7af：:，,（(])|(?<=GPU)|(?<=gpu))"
    r"(?:20[6-8]0|30[5-9]0|40[6-9]0|50[6-9]0|10[5-8]0)\s?(?:ti|Ti|TI|super)?)"
    r"(?![a-zA-Z0-9_])",
    re.I,
)
# searched in the lower-cased line: a case-insensitive alternation is several times slower
_GPU_CONTEXT = re.compile(r"gpu|graphics|card|nvidia|geforce|显卡|그래픽|device|vram|rtx|gtx|tesla|quadro")
# a machine or server named by its datacenter GPU ("an aarch64 machine, e.g. GB200"): only these names, which
# nothing else is called; not Cisco's "B200 M5" blade, a Mac's M4 or an instance type
_MACHINE_CONTEXT = re.compile(r"machine|server|服务器")
_DATACENTER = re.compile(r"(?<![A-Za-z0-9])G?(?:B[123]00|H[12]00)(?![A-Za-z0-9])(?!\s*M\d)")

_TORCH_VERSION = re.compile(
    # ASCII word edges: a Chinese or Korean word may touch the name or the number ("我的torch版本是1.8.0")
    # "pytorch-dev 1.7.0", "pytorch-nightly 1.8.0": the dev builds' names
    r"(?:(?<![A-Za-z0-9_])(?:torch|pytorch)(?:-dev|-nightly)?|\(you have)(?:\s*(?:version|版本|버전))?\s*(?:\*\*)?"
    r"\s*(?:是|为|為|은|는|：)?\s*[:=-]*\s*(?:==)?\s*v?"
    # a conda build string may follow ("0.4.1_cuda9.2_cudnn7.1.4"): the version is all of "0.4.1", never "0.4"
    r"(?P<v>\d\.\d{1,2}(?:\.\d{1,2})?(?:\.dev\d+|a0|rc\d)?(?:\+(?:cu\d{2,3}|cpu|rocm[\d.]+))?)"
    r"(?![0-9A-Za-z]|_(?!cuda\d)|\.\d)",
    re.I,
)
_WHEEL_TAG = re.compile(r"(?<![\w.])(?P<v>\d\.\d{1,2}\.\d{1,2}(?:\.dev\d+)?\+(?:cu\d{2,3}|cpu))(?![\w.])")
_DRIVER = re.compile(
    r"(?:driver(?:\s+version)?|NVRM version: NVIDIA UNIX \S+ Kernel Module|驱动(?:版本)?|드라이버(?:\s*버전)?)"
    r"\s*(?:是|为|為|은|는)?\s*[:：=]?\s*(?:is\s+)?"
    r"(?P<v>\d{3}\.\d{2,3}(?:\.\d{2,3})?)(?![0-9A-Za-z_])",
    re.I,
)
_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(?P<variant>cu\d{2,3}|cpu|rocm[\d.]+)\b")
_CONDA_CPU = re.compile(r"\bcpuonly\b|pytorch-mutex\S*\s+\S+\s+cpu\b|\bpytorch\S*\s+\S+\s+\S*(?:py\S*_)?cpu_\d")
_CONDA_LIST_PYTORCH = re.compile(r"^\s*pytorch\s+(\d+\.\d+\S*)\s+(\S*cpu\S*|\S*cuda\S*)\s*(\S*)\s*$")
_CVD = re.compile(
    r"""(?:CUDA_VISIBLE_DEVICES['"]?\s*\]?\s*=\s*|CUDA_VISIBLE_DEVICES=|setenv\s+CUDA_VISIBLE_DEVICES\s+)"""
    r"""['"]?(?P<v>[0-9][0-9,\s]*|)['"]?"""
)
# `current_env["CUDA_VISIBLE_DEVICES"] = gpu_ids`, `CUDA_VISIBLE_DEVICES="$GPUS"`: a variable, not a value
_CVD_VARIABLE = re.compile(r"""[A-Za-z_$({%<]""")
# "torch.cuda.available()" is a common misspelling of is_available() (torch/cuda/__init__.py has no
# `available`): said with an answer, it reports is_available()
_AVAILABLE = re.compile(
    r"(?:is_available|cuda\.available)(?:\(\))?[`*\s]*(?:(?:it|that|still|always|just)\s+)*(?:returns?|returning|returned|shows?|gives?|is|=|==|:|->|=>|返回为?|为|就是|結果)?"
    r"\s*[`*]*\s*(?P<v>True|False)\b",
    re.I,
)
# the same said in Korean: "torch.cuda.is_available() 을 확인하여보면 분명히 TRUE로 나오는데" (a particle, a few
# Korean words, then the answer with its particle: "TRUE로", "False가", "True 입니다")
_AVAILABLE_KO = re.compile(
    r"(?:is_available|cuda\.available)(?:\(\))?[`*\s]*[\s\uac00-\ud7af]{0,30}?[`*]*(?P<v>True|False)[`*]*"
    r"(?=\s*(?:로|으로|가|이|라고|입니다|이에요|나와|나오|반환|출력))",
    re.I,
)
_WINVER = re.compile(r"Microsoft Windows \[(?:Version|版本)\s+10\.0\.(\d{5})")
_LINUX_DRIVER_INSTALL = re.compile(
    r"\bapt(?:-get)?\s+install\s+(?:-y\s+)?(nvidia-driver-\d+|cuda-drivers|nvidia-dkms-\d+)"
)
_CONTAINER_CONTEXT = re.compile(
    r"\bnvidia-docker\b|\bdocker\s+(?:run|build|compose|container|image)s?\b|\bDockerfile\b|(?:nvidia/cuda|pytorch/pytorch):\S+"
    # a Dockerfile's FROM instruction (docs.docker.com/reference/dockerfile/#from): at the start of a line or a
    # code span, then an image reference and maybe "AS name"; not a log banner's "TRAIN FROM Ours_Bilinear"
    r"|(?:^\s*|`)FROM\s+(?:--platform=\S+\s+)?(?:\$\{?\w+\}?|[a-z0-9][a-z0-9._/-]*(?::[\w.${}-]+)?(?:@sha256:[0-9a-f]+)?)"
    r"(?:\s+(?:AS|as)\s+[\w.-]+)?\s*(?:`|$)"
    r"|\bsingularity\s+(?:exec|run|shell|build)\b|\bapptainer\b|\bpodman\s+run\b"
)
_IMAGE_CUDA = re.compile(r"nvidia/cuda:(\d+\.\d+)|pytorch/pytorch:\S*?-cuda(\d+\.\d+)")
_SNAP_DOCKER = re.compile(r"\bsnap\s+install\s+docker\b")
# a Kubernetes pod (not "pod" alone: RunPod's pods are plain containers)
_KUBERNETES = re.compile(r"\b(?:kubernetes|k8s|kubectl|runtimeClassName)\b|nvidia\.com/gpu", re.I)
_NO_SMI = re.compile(r"nvidia-smi\S*\s*(?:命令)?[^\n]{0,12}?(?:command not found|not found|未找到|找不到)", re.I)
_YOU_HAVE = re.compile(r"\(you have (?P<v>\d\.\d{1,2}\.\d{1,2}(?:\+(?:cu\d{2,3}|cpu))?)\)")
_NOT_INSTALLED_TORCH = re.compile(r"built for:?\s*$|requires?\s*$|compatible with\s*$|>=\s*$|<\s*$", re.I)
_SAYS_CPU = re.compile(r"\binstall(?:s|ed|ing)?\b[^.]{0,30}\bcpu[- ]?(?:only )?(?:version|build|variant)\b", re.I)
_JETSON = re.compile(r"\bJetson\b|\bJetPack\b|\bL4T\b", re.I)
_CAPABILITY = re.compile(
    r"(?:cuda|compute) capability\s*(?:is|of|:|=>|=|->)?\s*(\d{1,2}\.\d)\b|\|\s*(\d\.\d)\s*$", re.I
)
_P2P_DISABLE = re.compile(r"NCCL_P2P_DISABLE\s*=\s*1")
# "<frozen runpy>" is where Python names a frozen module, not a frozen program
_HANG = re.compile(r"(?<!<)\b(?:hang|hangs|hung|stuck|freeze|freezes|frozen|deadlock)", re.I)
_NPROC = re.compile(r"--nproc[-_]per[-_]node[= ](\d+)")
_DEVICE_CUDA = re.compile(r"device\)?\s*(?:为|is|=|:|->)\s*['\"`]?cuda\b", re.I)
_WSL1 = re.compile(r"\b(4\.4\.0-\d+-Microsoft)\b")
_DOCKER_RUN = re.compile(r"^\s*(?:\$\s*|#\s*)?(?:sudo\s+)?(?:docker|podman|nvidia-docker)\s+run\b(?P<rest>.*)$")
# the same command quoted inside a sentence: "… with command `docker run -it image sh` …"
_DOCKER_RUN_QUOTED = re.compile(r"`\s*(?:sudo\s+)?(?:docker|podman|nvidia-docker)\s+run\b(?P<rest>[^`]*)`")
_WSL_LIB = re.compile(r"/usr/lib/wsl/lib\b")
# "WSL2", "WSL 2" named outright (a bare "WSL" may be WSL1, which has no GPU at all: not read)
_WSL2_SAID = re.compile(r"(?<![A-Za-z0-9])WSL\s?2(?![0-9])", re.I)
_SINGULARITY = re.compile(r"^\s*(?:\$\s*)?(?:singularity|apptainer)\s+(?:exec|run|shell)\b(?P<rest>.*)$")
# "only GPU 1 is used", "only one gpu is utilized", "只使用了一张卡": of several GPUs one works, so CUDA runs
_ONE_GPU_USED = re.compile(
    r"\bonly\s+(?:one\s+|1\s+|the\s+first\s+)?gpus?\s*[:#]?\s*\d*\s+(?:is|was|gets|got|are|were)\s+"
    r"(?:being\s+)?(?:used|utili[sz]ed|busy|working|running)\b"
    r"|\bonly\s+(?:uses|used|utili[sz]es)\s+(?:one\s+|1\s+|the\s+first\s+)?gpu\b"
    r"|只(?:使)?用了?(?:一|1)(?:张|块|个)(?:GPU|卡|显卡)",
    re.I,
)
# a person reporting torch's verdict on their GPU: "my GPU doesn't support the latest compute capabilities",
# "the card is not supported anymore (cuda capability 6.1)"
_GPU_UNSUPPORTED = re.compile(
    r"\b(?:gpu|card|graphics)\b[^.]{0,40}?\b(?:doesn'?t|does not|isn'?t|is not|no longer|not)\s+"
    r"(?:support(?:ed|s)?|compatible)\b[^.]{0,50}?\b(?:compute|cuda)\s+capabilit"
    r"|\b(?:compute|cuda)\s+capabilit\w*[^.]{0,30}?\b(?:is\s+)?(?:not|no longer)\s+supported",
    re.I,
)
# torch's "Expected all tensors to be on the same device" as people tell it: "一部分程序运行在CPU上，一部分程序运行在
# GPU上", "some tensors are on the CPU and others on the GPU"
_PART = r"(?:一部分|部分|有的|另一部分|其余)[^，,。；;]{0,15}?(?:在|运行在)\s*"
_SOME = r"\b(?:some|part|others?|the rest)\b[^.]{0,40}?\bon (?:the )?"


def _split(a: str, b: str) -> str:
    return f"{_PART}{a}\\s*上[^。]{{0,4}}?{_PART}{b}\\s*上|{_SOME}{a}\\b[^.]{{0,20}}?{_SOME}{b}\\b"


_DEVICES_SPLIT = re.compile(_split("cpu", "(?:gpu|cuda)") + "|" + _split("(?:gpu|cuda)", "cpu"), re.I)
# a device-side assert's usual cause, as people name it: "标签超出范围", "labels out of range"
_LABELS_OUT = re.compile(
    r"标签(?:值)?(?:超出|越界|超过)(?:了)?(?:类别)?(?:范围)?|\blabels?\b[^.]{0,20}?\bout of (?:range|bounds)\b", re.I
)
# out of memory as people tell it: the error comes with a batch size and goes with a smaller one ("reduce the
# batch size", "batch size를 256으로 하니 … 128로 줄이니 … 발생되지 않습니다", "把batch_size调小")
_BATCH = r"batch[\s_-]?size"
_SMALLER_BATCH = re.compile(
    rf"\b(?:reduc\w*|lower\w*|decreas\w*|smaller)\s+(?:the\s+|my\s+)?{_BATCH}"
    rf"|{_BATCH}\S*[^.\n]{{0,40}}?(?:줄이|줄였|调小|减小|减少|降低|改小)|(?:调小|减小|减少|降低|改小)(?:了)?\s*{_BATCH}",
    re.I,
)
_IN_CONTAINER = re.compile(
    r"inside (?:the |a )?(?:docker )?container|in (?:the |a )?docker container|容器"
    # "running in docker", "in Docker Desktop", "docker运行", "在docker中运行"; not "docker-compose", Docker Hub
    r"|\bin(?:side)?\s+(?:a\s+|the\s+|my\s+)?docker\b(?![-\w.]|\s*hub)|docker\s*(?:中|里|内)?\s*运行|在\s*docker",
    re.I,
)


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

    if p.torch_gpus:
        return
    for m in _GPU.finditer(line):
        name = m.group(0).strip()
        # people write "GTX1060", "2080ti": the table's names have the spaces
        spaced = re.sub(r"(?i)(\d)(ti|super)\b", r"\1 \2", re.sub(r"(?i)(RTX|GTX|GT|MX)\s?-?(\d)", r"\1 \2", name))
        model = gpu_names.lookup(name) or gpu_names.lookup(spaced)
        if model is None:  # a bare number: RTX 2080-5090, GTX 1050-1080 ("1080ti")
            model = gpu_names.lookup(re.sub(r"(?i)^(\d{4})", r"RTX \1", spaced)) or gpu_names.lookup(
                re.sub(r"(?i)^(\d{4})", r"GTX \1", spaced)
            )
        cap = _CAPABILITY.search(line[m.end() :])
        cc = (cap.group(1) or cap.group(2)) if cap else (model.cc if model else None)
        if cc is not None:
            p.torch_gpus.append(Gpu(index=0, name=name, capability=cc))
            p.hits.append(Hit("gpu-named", short(line, 120), {"gpu": name, "cc": cc, "where": w}))
            return


_MAX_PER_KIND = 3  # a long log repeats its lines: a few of each say it


def _hit(kind: str, **detail: str) -> Callable[[Partial, str, str, re.Match[str]], None]:
    def handler(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
        p.hits.append(Hit(kind, short(line, 160), {"where": w, **{k: m.group(v) for k, v in detail.items()}}))

    return handler


def _version_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    m = _YOU_HAVE.search(line) or _TORCH_VERSION.search(line) or _WHEEL_TAG.search(line)
    if m is None:
        return
    before = line[max(0, m.start() - 24) : m.start()]
    if re.search(r"torchvision|torchaudio|torchtext", before[-12:], re.I) or _NOT_INSTALLED_TORCH.search(before):
        return  # another package's version, or the torch something was built for
    _torch(p, m.group("v"), w)


def _driver_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    if "cuda driver version" not in line.lower():
        p.set("driver_version", m.group("v"), w)


def _index_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    """`pip install torch … --index-url …/whl/cu118`: the index names the build that was installed."""
    if not re.search(r"\b(?:pip3?|uv)\b.*\binstall\b|index-url|extra-index-url|-f\s", line):
        return
    variant = m.group("variant")
    p.hits.append(Hit("install-index", short(line, 160), {"variant": variant, "where": w}))
    if not re.search(r"\binstall\b[^#\n]*\btorch\b", line):
        return
    if variant == "cpu":
        p.set("torch_cuda_built", False, w)
        p.set("torch_installed", True, w)
    elif variant.startswith("cu"):
        digits = variant[2:]
        p.set("torch_cuda_built", True, w)
        p.set("torch_cuda", f"{int(digits[:-1])}.{digits[-1]}", w)
        p.set("torch_installed", True, w)


def _conda_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    listed = _CONDA_LIST_PYTORCH.match(line)
    if listed:
        p.conda.setdefault("pytorch", (listed.group(1), listed.group(2)))
    if _CONDA_CPU.search(line) or re.search(r"::cpu-only-|[-_]cpu_\d\b|\+cpu-py", line):
        p.hits.append(Hit("conda-cpu", short(line, 160), {"where": w}))
    elif re.search(r"\bconda\s+(?:install|create)\b.*\b(?:pytorch|torch|vak)\b", line):
        p.hits.append(Hit("conda-install", short(line, 160), {"where": w}))


def _available_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    available = m.group("v").lower() == "true"
    if available and re.search(r"device_count\(\)[`*\s]*(?:is|returns?|=|==|:)?[`*\s]*0\b", line):
        return  # "is_available() is True but device_count() is 0" (Lightning-AI#16590): no usable state, not True
    if not available and p.values.get("torch_available") is True:
        # "on the server it is True ... on my Windows PC it is False": prose that names both is asking
        # about the False one (a post fixed in its own text says so in words, not in a second value)
        del p.values["torch_available"]
    p.set("torch_available", available, w)
    p.set("torch_installed", True, w)


def _cvd_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    if not m.group("v") and _CVD_VARIABLE.match(line[m.end() : m.end() + 1]):
        return  # a variable's name, in code: not a value the person set
    if "CUDA_VISIBLE_DEVICES" not in p.env:
        p.env["CUDA_VISIBLE_DEVICES"] = m.group("v").replace(" ", "")
        p.hits.append(Hit("visible-devices-set", short(line, 160), {"value": p.env["CUDA_VISIBLE_DEVICES"]}))


def _wsl1_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    p.set("kernel", m.group(1), w)
    p.set("os", "Linux", w)
    p.hits.append(Hit("wsl1", short(line, 160), {"kernel": m.group(1)}))


def _container_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    image = _IMAGE_CUDA.search(line)
    detail = {"where": w, **({"cuda": image.group(1) or image.group(2)} if image else {})}
    p.hits.append(Hit("container-context", short(line, 160), detail))
    if re.search(r"\bnvidia-smi\b", line):  # the driver reached a container: its banner follows
        p.hits.append(Hit("container-ran-smi", short(line, 160), {"where": w}))


def _docker_run_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    gpus = r"--gpus|--runtime[= ]nvidia|--device[= ]nvidia\.com/gpu|--device[= ]/dev/nvidia"
    if not re.search(gpus, m.group("rest")):
        p.hits.append(Hit("container-run-no-gpus", short(line, 160), {"where": w}))


def _singularity_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    if not re.search(r"--nv\b|--nvccli\b", m.group("rest")):
        p.hits.append(Hit("singularity-no-nv", short(line, 160), {"where": w}))


# "I'm not running in docker", "works fine in docker, but on the host …": not where the failing run is
_NOT_THERE = re.compile(r"(?:\bnot|n't|\bno\b|\bnever|\bwithout|不是|不在|没有?|非)\W*(?:\w+\W+){0,3}$", re.I)
_WORKS_THERE = re.compile(r"\b(?:works?|worked|working|fine|ok|okay)\b|正常|没问题|可以用", re.I)


def _wsl2_said(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    """WSL2 named, not denied ("native Ubuntu 22.04, not WSL2", "instead of WSL2")."""
    if re.search(
        r"(?:\bnot|n't|\bno|\bwithout|instead of|rather than|不是|没有?用?)\W*$",
        line[max(0, m.start() - 20) : m.start()],
        re.I,
    ):
        return
    p.set("wsl", True, w)


def _in_container_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    before = line[max(0, m.start() - 40) : m.start()]
    clause = re.split(r"[,;.，；。]|\bbut\b|但", line)
    here = next((c for c in clause if m.group(0) in c), line)
    if _NOT_THERE.search(before) or _WORKS_THERE.search(here):
        return
    p.set("in_container", True, w)


def _device_cuda_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    p.hits.append(Hit("gpu-ran", short(line, 120), {"why": f"{w}: the program's device is cuda"}))


def _split_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    # the sentence itself, not its line: it becomes the finding's title
    p.hits.append(Hit("device-mismatch", short(m.group(0)), {"where": w}))
    p.hits.append(Hit("gpu-ran", short(m.group(0), 120), {"why": f"{w}: part of the program ran on the GPU"}))


def _labels_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    p.hits.append(Hit("labels-out-of-range", short(m.group(0)), {"where": w}))


def _smaller_batch_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    p.hits.append(Hit("out-of-memory", short(m.group(0)), {"where": w}))


def _one_gpu_used_line(p: Partial, line: str, w: str, m: re.Match[str]) -> None:
    p.hits.append(Hit("gpu-ran", short(line, 120), {"why": f"{w}: a GPU is in use"}))


_Handler = Callable[[Partial, str, str, re.Match[str]], None]
_ALWAYS = re.compile("")
# (words of which one must be in the lower-cased line, pattern, handler): the words are a cheap test,
# so a 1 MB log runs few patterns per line.
_READERS: list[tuple[tuple[str, ...], re.Pattern[str], _Handler]] = [
    (("torch", "+cu", "+cpu", "you have"), _ALWAYS, _version_line),
    (("pip",), re.compile(r"\bpip3?\s+install\b[^#\n]*\btorch\b"), _hit("pip-install-torch")),
    (("tar.gz",), re.compile(r"Downloading \S*torch-0\.\S+\.tar\.gz"), _hit("sdist")),
    (("cpu",), _SAYS_CPU, _hit("says-cpu-build")),
    (("jetson", "jetpack", "l4t"), _JETSON, _hit("jetson")),
    (("nccl_p2p",), _P2P_DISABLE, _hit("p2p-disabled")),
    (("hang", "hung", "stuck", "freez", "frozen", "deadlock"), _HANG, _hit("hang")),
    (("nproc",), _NPROC, _hit("nproc-per-node", n=1)),
    (("device",), _DEVICE_CUDA, _device_cuda_line),
    (("driver", "驱动", "드라이버", "nvrm"), _DRIVER, _driver_line),
    (("download.pytorch.org",), _INDEX, _index_line),
    (("conda", "cpu", "pytorch "), _ALWAYS, _conda_line),
    (("is_available", "cuda.available"), _AVAILABLE, _available_line),
    (("is_available", "cuda.available"), _AVAILABLE_KO, _available_line),
    (("cuda_visible_devices",), _CVD, _cvd_line),
    (("microsoft",), _WSL1, _wsl1_line),
    (("windows",), _WINVER, _hit("windows-build", build=1)),
    (("apt",), _LINUX_DRIVER_INSTALL, _hit("linux-driver-install", package=1)),
    (
        ("docker", "singularity", "apptainer", "podman", "from ", "pytorch/pytorch", "nvidia/cuda"),
        _CONTAINER_CONTEXT,
        _container_line,
    ),
    (("snap",), _SNAP_DOCKER, _hit("docker-snap")),
    (("kube", "k8s", "runtimeclass", "nvidia.com/gpu"), _KUBERNETES, _hit("kubernetes-context")),
    (("nvidia-smi",), _NO_SMI, _hit("nvidia-smi-not-found")),
    (("docker", "podman"), _DOCKER_RUN, _docker_run_line),
    (("docker", "podman"), _DOCKER_RUN_QUOTED, _docker_run_line),
    # WSL2's driver libraries live there (the Windows driver mounts them): this is WSL2
    (("/usr/lib/wsl",), _WSL_LIB, lambda p, line, w, m: p.set("wsl", True, w)),
    (("wsl",), _WSL2_SAID, _wsl2_said),
    (("singularity", "apptainer"), _SINGULARITY, _singularity_line),
    (("container", "容器", "docker"), _IN_CONTAINER, _in_container_line),
    (("only", "只"), _ONE_GPU_USED, _one_gpu_used_line),
    (("capabilit",), _GPU_UNSUPPORTED, _hit("says-gpu-unsupported")),
    (("cpu",), _DEVICES_SPLIT, _split_line),
    (("标签", "label"), _LABELS_OUT, _labels_line),
    (("batch",), _SMALLER_BATCH, _smaller_batch_line),
]


_WORDS = re.compile("|".join(re.escape(w) for words, _, _ in _READERS for w in words))


# a line that shows what fixed it, not the state asked about: the install there is the workaround
_STATE_READERS = (_version_line, _index_line, _conda_line)


def parse(all_lines: list[str]) -> Partial:
    p = Partial("prose and command lines")
    done: set[str] = set()
    fixes = _workaround_lines(all_lines)
    for n, line in enumerate(all_lines):
        lower = line.lower()
        if not lower.strip() or line in done:
            continue  # a repeated line says nothing new: its first occurrence was read
        done.add(line)
        w = ""
        for words, pattern, handler in _READERS if _WORDS.search(lower) else ():
            if n in fixes and handler in _STATE_READERS:
                continue
            if any(word in lower for word in words):
                m = (
                    pattern.search(line)
                    if pattern is not _DOCKER_RUN and pattern is not _SINGULARITY
                    else pattern.match(line)
                )
                if m:
                    w = w or where(n, line)
                    handler(p, line, w, m)
        if not p.torch_gpus and (
            _GPU_CONTEXT.search(lower) or (_MACHINE_CONTEXT.search(lower) and _DATACENTER.search(line))
        ):
            _gpu(p, line, w or where(n, line))
    _bare_driver(p, all_lines)
    prose_more.conda_build(p, all_lines)
    prose_said.repl(p, all_lines)
    prose_said.driver_too_old(p, all_lines)
    prose_said.cpu_build_said(p, all_lines)
    _memory_table(p, all_lines)
    _too_old(p)
    _script_output(p, all_lines)
    prose_said.memory_in_use(p, all_lines)
    prose_said.oom_said(p, all_lines)
    _windows_pypi(p, all_lines, fixes)
    _wsl(p, all_lines)
    _windows_named(p, all_lines)
    prose_more.no_nvidia_gpu(p, all_lines)
    prose_more.trainer_on_cpu(p, all_lines)
    prose_more.torch_said_installed(p, all_lines)
    prose_more.p2p_fixes(p, all_lines)
    prose_more.screenshot_only(p, all_lines)
    prose_more.cuda_usable_said(p, all_lines)
    prose_more.oom_advice_tried(p, all_lines)
    prose_more.cuda_wanted_said(p, all_lines)
    prose_more.machine_said(p, all_lines)
    prose_more.visible_devices_too_late(p, all_lines)
    p.hits = _capped(p.hits)
    return p


_BARE_VERSION = re.compile(r"^\s*(?P<v>\d{3}\.\d{2,3}(?:\.\d{2,3})?)\s*$")


def _bare_driver(p: Partial, all_lines: list[str]) -> None:
    """A driver number on a line of its own, under a line that names the driver: "NVIDIA driver:" then
    "535.104.05". A bare number anywhere else is not read."""
    if "driver_version" in p.values:
        return
    previous = ""
    for n, line in enumerate(all_lines):
        m = _BARE_VERSION.match(line)
        if m and re.search(r"driver|驱动|드라이버", previous, re.I):
            p.set("driver_version", m.group("v"), where(n, line))
            return
        if line.strip():
            previous = line


# a Markdown table of runs with a GPU-memory column: "| 训练时间 | 显存占用 |" then "| 13m27s | 2300MiB |"
# the column names memory a run used, not a card's capacity ("VRAM", "显存大小")
_MEMORY_HEADER = re.compile(
    r"显存(?:占用|使用|消耗)|(?:vram|gpu\s*mem(?:ory)?)\s*(?:usage|used|use|peak|consumption)"
    r"|peak\s+(?:vram|gpu\s*mem)|(?:gpu|그래픽)\s*메모리\s*사용",
    re.I,
)
_MEMORY_CELL = re.compile(r"^\s*(?:\d+(?:\.\d+)?)\s*(?:[KMG]i?B)\s*$", re.I)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _memory_table(p: Partial, all_lines: list[str]) -> None:
    """A table of runs whose GPU-memory column holds a size: each such row is a run that held that much
    GPU memory, so CUDA ran. Only a header cell names GPU memory; a size elsewhere says nothing."""
    column = None
    for n, line in enumerate(all_lines):
        if line.count("|") < 2:
            column = None
            continue
        cells = _cells(line)
        if column is None:
            column = next((i for i, c in enumerate(cells) if _MEMORY_HEADER.search(c)), None)
            continue
        cell = cells[column] if column < len(cells) else ""
        if _MEMORY_CELL.match(cell) and re.search(r"[1-9]", cell):
            why = f"{where(n, line)}: a run held {cell} of GPU memory"
            p.hits.append(Hit("gpu-ran", short(line, 120), {"why": why}))
            return


def _too_old(p: Partial) -> None:
    """ "My GPU is not supported (compute capability)" about a GPU the post names, older than every
    kernel of a current build: torch's verdict that the GPU is too old for the build installed, as the
    person reports it. A GPU newer than the builds is a different problem and reads as nothing here."""
    from cudadoctor.knowledge import wheels

    said = next((h for h in p.hits if h.kind == "says-gpu-unsupported"), None)
    gpu = p.torch_gpus[0] if p.torch_gpus else None
    if said is None or gpu is None or gpu.capability is None:
        return
    cc = tuple(int(x) for x in gpu.capability.split("."))
    for v in wheels.variants(wheels.newest_release()):
        sms = [(int(f[3:-1]), int(f[-1])) for f in v.arch_flags if re.fullmatch(r"sm_\d{2,3}", f)]
        if sms and wheels.coverage(v.arch_flags, gpu.capability) == "none" and cc < min(sms):
            p.hits.append(Hit("gpu-too-old", said.text, {"gpu": gpu.name, "cc": gpu.capability, **said.detail}))
            return


# a script that moves work to the GPU unconditionally, then prints: its printed lines in the post show it ran
_CUDA_CALL = re.compile(r"\.cuda\(\s*\d*\s*\)|\.to\(\s*['\"]cuda(?::\d+)?['\"]|device\s*=\s*['\"]cuda(?::\d+)?['\"]")
_PRINT = re.compile(r"\bprint\(\s*f?['\"](?P<text>[^'\"{}\\]{12,})")


def _script_output(p: Partial, all_lines: list[str]) -> None:
    """The post's script calls .cuda() (no CPU fallback: no is_available() in it), and a line the script
    prints after that call is in the post as output: the program got past the call, so CUDA ran."""
    if any(h.kind == "gpu-ran" for h in p.hits) or any("is_available" in line for line in all_lines):
        return
    first = next((n for n, line in enumerate(all_lines) if _CUDA_CALL.search(line)), None)
    if first is None:
        return
    printed = {m.group("text").strip() for line in all_lines[first:] for m in [_PRINT.search(line)] if m}
    for n, line in enumerate(all_lines):
        said = line.strip()
        if "print(" not in line and any(said.startswith(t) for t in printed if len(t) >= 12):
            why = f"{where(n, line)}: the script printed it after moving work to CUDA"
            p.hits.append(Hit("gpu-ran", short(line, 120), {"why": why}))
            return


_WINDOWS = re.compile(r"\bWindows\s*(?:10|11|Server)\b|\bwin\s?(?:10|11)\b|Microsoft Windows \[", re.I)
_PIP_TORCH = re.compile(
    r"\b(?:pip3?|uv\s+pip)\s+install\b[^#\n]*(?<![\w-])torch(?:==[\d.]+)?(?![\w.+-])"
    # uv's other ways to install from PyPI (docs.astral.sh/uv/guides/integration/pytorch): `uv add torch`,
    # `uv run --with torch`, `uvx --with torch`
    r"|\buv\s+add\b[^#\n]*(?<![\w-])torch(?:==[\d.]+)?(?![\w.+-])"
    r"|\b(?:uv\s+run|uvx)\b[^#\n]*--with[= ]\s*torch(?:==[\d.]+)?(?![\w.+-])"
)
# `uvx --with moshi`, `uv run --with X`, `uv add X` on a line that says it installed torch: torch came along
# from PyPI as a dependency
_UV_DEPENDENCY = re.compile(r"\b(?:uvx|uv\s+run)\b[^#\n]*--with\b|\buv\s+(?:add|sync)\b")
_SAYS_TORCH = re.compile(r"(?<![\w-])(?:py)?torch(?![\w-])", re.I)
# the reporter showing what fixed it: the next few lines are the workaround, not the state asked about
_WORKAROUND = re.compile(
    r"\b(?:quick[- ]?fix|work[- ]?around|hot[- ]?fix|the fix|my fix|fixed (?:it|this|the issue|the problem)"
    r"|solved (?:it|this|the issue|the problem)|solution (?:is|was)|solves it|to fix (?:it|this)"
    r"|can be (?:bypassed|worked around|avoided|fixed|solved) (?:with|by)|bypass(?:ed)? (?:it|this) (?:with|by))\b"
    r"|解决(?:方法|方案|办法)|临时方案|绕过",
    re.I,
)
_WORKAROUND_WORDS = ("fix", "work", "solv", "solution", "bypass", "avoid", "解决", "临时", "绕过")
_STILL = re.compile(
    r"\bstill\b|\bsame (?:error|issue|problem)\b|didn'?t (?:work|help)|doesn'?t (?:work|help)|仍然|还是", re.I
)
_ELSEWHERE = re.compile(r"download\.pytorch\.org|index-url|\s-f\s|\+cu\d|\.whl\b|\bWSL\b|conda\s+install", re.I)


def _windows_named(p: Partial, all_lines: list[str]) -> None:
    """ "Windows 11", "win10" in prose: the OS, unless the post also names WSL (then torch runs in Linux)."""
    low = "\n".join(all_lines).lower()
    if "os" in p.values or "win" not in low:
        return
    if ("wsl" in low or "subsystem for linux" in low) and any(
        re.search(r"\bWSL\d?\b|Subsystem for Linux", line, re.I) for line in all_lines
    ):
        return
    for n, line in enumerate(all_lines):
        if "win" in line.lower() and _WINDOWS.search(line):
            p.set("os", "Windows", where(n, line))
            return


def _workaround_lines(all_lines: list[str]) -> set[int]:
    """The lines that show a workaround: one that names it ("The quick-fix is ...") and the next three
    lines that are not blank, up to a heading; not where the same lines say it did not help."""
    out: set[int] = set()
    for n, line in enumerate(all_lines):
        low = line.lower()
        # a cheap test first: every wording names one of these (a 1 MB paste has tens of thousands of lines)
        if not any(w in low for w in _WORKAROUND_WORDS) or not _WORKAROUND.search(line):
            continue
        block = [n]
        for k in range(n + 1, min(len(all_lines), n + 12)):
            if all_lines[k].lstrip().startswith("#") or len(block) > 3:
                break
            if all_lines[k].strip():
                block.append(k)
        if not any(_STILL.search(all_lines[k]) for k in block):
            out.update(block)
    return out


def _windows_pypi(p: Partial, all_lines: list[str], fixes: set[int]) -> None:
    """`pip install torch` (or uv's `uv add torch`, `uvx --with torch`) from PyPI on Windows installs the
    CPU-only build (PyPI's Windows wheels have no CUDA). Only where the post names Windows and no line
    installs from anywhere else or under WSL; a workaround the reporter shows (an index URL, a +cu tag
    given as the fix) does not say what was installed first."""
    if p.values.get("torch_cuda_built") is True or not any(_WINDOWS.search(line) for line in all_lines):
        return
    if any(_ELSEWHERE.search(line) for n, line in enumerate(all_lines) if n not in fixes):
        return
    for n, line in enumerate(all_lines):
        if n in fixes:
            continue
        if _PIP_TORCH.search(line) or (_UV_DEPENDENCY.search(line) and _SAYS_TORCH.search(line)):
            w = where(n, line)
            p.set("torch_cuda_built", False, w)
            p.set("torch_installed", True, w)
            p.hits.append(Hit("pypi-windows", short(line, 160), {"where": w}))
            return


def _capped(hits: list[Hit]) -> list[Hit]:
    seen: dict[str, int] = {}
    out = []
    for h in hits:
        seen[h.kind] = seen.get(h.kind, 0) + 1
        if seen[h.kind] <= _MAX_PER_KIND:
            out.append(h)
    return out


_WSL_LIST_ROW = re.compile(r"^\s*\*\s*(?P<name>\S+)\s+(?:Running|Stopped|Installing|Converting)\s+(?P<v>[12])\s*$")


def _wsl(p: Partial, all_lines: list[str]) -> None:
    """WSL1 from a paste: its kernel ("4.4.0-19041-Microsoft"), or WSL on a Windows build older than
    18362, which has no WSL2 at all."""
    # `wsl -l -v`: the default distribution (*) and its WSL version
    for n, line in enumerate(all_lines):
        m = _WSL_LIST_ROW.match(line)
        if m and m.group("v") == "1" and n > 0 and "VERSION" in "".join(all_lines[max(0, n - 4) : n]):
            p.hits.append(Hit("wsl1", short(line, 160), {"distro": m.group("name")}))
            p.set("os", "Linux", where(n, line))
            break
    builds = [int(h.detail["build"]) for h in p.hits if h.kind == "windows-build"]
    wsl_named = any(re.search(r"\bWSL\b|Subsystem for Linux|Ubuntu app", line) for line in all_lines)
    if not any(h.kind == "wsl1" for h in p.hits) and builds and builds[0] < 18362 and wsl_named:
        line = next(h.text for h in p.hits if h.kind == "windows-build")
        p.hits.append(Hit("wsl1", line, {"build": str(builds[0])}))
        p.set("os", "Linux", "")
