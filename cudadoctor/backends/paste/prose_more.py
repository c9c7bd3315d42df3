"""More of what people write by hand, read after prose.py's line readers: a conda build string naming torch's
CUDA ("pytorch 0.4.1_cuda9.2_cudnn7.1.4"), "I am not using an NVIDIA GPU", the Hugging Face Trainer's
"Process rank: 0, device: cpu, n_gpu: 0", "pytorch有，cuda12.2", NCCL_P2P_DISABLE=1 shown as what made a
multi-GPU run work, and a screenshot standing in for the error text. Read conservatively, each with its line.
"""

from __future__ import annotations

import re

from cudadoctor.backends.paste.model import Hit, Partial
from cudadoctor.backends.paste.text import short, where

# pytorch's conda build strings (anaconda.org/pytorch/pytorch/files): "py3.7_cuda10.1.243_cudnn7.6.3_0",
# "py36_cuda9.2.148_cudnn7.1.4_1", and as people shorten them beside the version, "0.4.1_cuda9.2_cudnn7.1.4";
# the "_cudnn" that follows makes it a build string, not a toolkit named in passing
_CONDA_BUILD = re.compile(
    r"(?<![\w.])(?:(?P<v>\d\.\d{1,2}(?:\.\d{1,2})?)_|py\d\.?\d{1,2}_)?"
    r"cuda(?P<major>\d{1,2})\.(?P<minor>\d)(?:\.\d{1,3})?_cudnn\d",
    re.I,
)
_TORCH_WORD = re.compile(r"(?<![A-Za-z])(?:py)?torch(?![A-Za-z])", re.I)
_OTHER = re.compile(r"torchvision|torchaudio|torchtext|tensorflow|mxnet|cupy|paddle", re.I)


def conda_build(p: Partial, all_lines: list[str]) -> None:
    """A pytorch conda build string on a line that names torch: torch's CUDA, and its version where the
    string starts with one ("0.4.1_cuda9.2_…"). A conda list row is packages.py's."""
    for n, line in enumerate(all_lines):
        m = _CONDA_BUILD.search(line) if "_cudnn" in line.lower() else None
        if not m or not _TORCH_WORD.search(line) or _OTHER.search(line):
            continue
        w = where(n, line)
        if m.group("v") and "torch_version" not in p.values:
            p.set("torch_version", m.group("v"), w)
        if p.values.get("torch_cuda_built") is False:
            return  # a line read as a CPU build says otherwise: neither is certain
        p.set("torch_cuda_built", True, w)
        p.set("torch_cuda", f"{int(m.group('major'))}.{m.group('minor')}", w)
        p.set("torch_installed", True, w)
        return


# The person saying the machine has no NVIDIA GPU: "I am not using NVIDIA GPU, but i have Intel HD graphics
# 4000", "I don't have an NVIDIA GPU", "only Intel UHD graphics", "my laptop has an AMD Radeon", "没有N卡",
# "没有独显". First person or of the machine: an error's "no NVIDIA GPU found" is a symptom, not a fact.
_GPU_WORD = r"(?:gpu|graphics\s*card|graphics|card|video\s*card)"
_NO_NVIDIA = re.compile(
    rf"\bI(?:'m|\s+am)\s+not\s+using\s+(?:an?\s+)?nvidia\s*{_GPU_WORD}"
    rf"|\bI\s+(?:do\s*n[o']t|don'?t|did\s*n[o']t)\s+(?:have|own)\s+(?:an?\s+|any\s+)?nvidia\s*{_GPU_WORD}"
    rf"|\bI\s+have\s+no\s+nvidia\s*{_GPU_WORD}"
    rf"|\bmy\s+(?:laptop|pc|computer|machine|notebook|desktop|system)\s+(?:does\s*n[o']t|doesn'?t|has\s+no)\s+"
    rf"(?:have\s+)?(?:an?\s+|any\s+)?nvidia\s*{_GPU_WORD}"
    rf"|\bonly\s+(?:have\s+)?(?:an?\s+)?(?:intel|amd)\s+(?:u?hd|iris|radeon|arc|integrated)"
    rf"|\bI(?:'m|\s+am)\s+using\s+(?:an?\s+)?integrated\s+(?:intel|amd)\s+{_GPU_WORD}"
    rf"|\bmy\s+(?:laptop|pc|computer|machine|notebook)\s+(?:only\s+)?has\s+(?:only\s+)?(?:an?\s+)?"
    rf"(?:intel\s+(?:u?hd|iris)|amd\s+radeon)"
    r"|(?:我的?(?:电脑|笔记本|机器)?|电脑|笔记本|本机)?\s*(?:没有|没装|无)\s*(?:N卡|n卡|独显|独立显卡|英伟达(?:的)?显卡"
    r"|nvidia\s*(?:的)?\s*(?:显卡|gpu))"
    # "没装nvidia显卡驱动", "I don't have the NVIDIA GPU driver": the driver, not the GPU, is what is missing
    r"(?!\s*(?:的)?\s*(?:驱动|driver))",
    re.I,
)
_HEDGED = re.compile(r"\?|？|\b(?:if|whether|even\s+if|unless|suppose)\b|如果|若|是否|是不是|吗|假如", re.I)
# an NVIDIA GPU named anywhere in the post: a model family, or nvidia-smi's banner
_NVIDIA_NAMED = re.compile(
    r"\b(?:GeForce|RTX|GTX|Quadro|Tesla|TITAN|Jetson)\b|NVIDIA-SMI\s+\d|\b(?:A|H|L|V)100\b|\bT4\b", re.I
)


def _may_deny_nvidia(line: str) -> bool:
    """A cheap test before _NO_NVIDIA, whose Chinese branch may start anywhere: every branch names one of these."""
    low = line.lower()
    return "nvidia" in low or "intel" in low or "amd" in low or "没" in line or "无" in line


def no_nvidia_gpu(p: Partial, all_lines: list[str]) -> None:
    """The person says the machine has no NVIDIA GPU (an Intel or AMD one only): hit says-no-nvidia-gpu.
    Never where the post names an NVIDIA GPU too, or hedges it."""
    candidates = [(n, line) for n, line in enumerate(all_lines) if _may_deny_nvidia(line) and _NO_NVIDIA.search(line)]
    if not candidates or p.torch_gpus or any(_NVIDIA_NAMED.search(line) for line in all_lines):
        return
    for n, line in candidates:
        m = _NO_NVIDIA.search(line)
        if not m:
            continue
        sentence = re.split(r"(?<=[.!。！])\s*", line[: m.start()])[-1] + line[m.start() : m.end()]
        if _HEDGED.search(sentence):
            continue
        p.hits.append(Hit("says-no-nvidia-gpu", short(line, 160), {"where": where(n, line)}))
        return


# transformers' examples and LLaMA-Factory log TrainingArguments' device and n_gpu (torch.cuda.device_count())
# on each process (huggingface/transformers examples/pytorch/*/run_*.py: "Process rank: {local_rank}, device:
# {device}, n_gpu: {n_gpu}"): device cpu with no GPU is torch seeing none, unless the CPU was asked for
_RANK_LINE = re.compile(r"Process rank:\s*-?\d+,\s*device:\s*cpu\s*,\s*n_gpu:\s*0\b")
_CPU_ASKED = re.compile(
    r"\b(?:use_cpu|no_cuda)\b\s*[:=]\s*['\"]?(?:True|true|1)\b|--(?:use_cpu|no_cuda)\b(?!\s*[= ]\s*(?:False|false|0)\b)"
    r"|CUDA_VISIBLE_DEVICES\s*=\s*['\"]?\s*(?:-1)?['\"]?\s*(?:$|\s)"
)


def trainer_on_cpu(p: Partial, all_lines: list[str]) -> None:
    """ "Process rank: 0, device: cpu, n_gpu: 0": torch.cuda.is_available() was False in that run."""
    if "n_gpu" not in "\n".join(all_lines):
        return
    for n, line in enumerate(all_lines):
        if "n_gpu" in line and _RANK_LINE.search(line):
            if any(_CPU_ASKED.search(line) for line in all_lines):
                return
            w = where(n, line)
            p.set("torch_available", False, w)
            p.set("torch_installed", True, w)
            return


# "pytorch有，cuda12.2", "torch已安装": torch is installed; a CUDA version beside it is said, not which one
_TORCH_HAVE = re.compile(r"(?<![A-Za-z])(?:py)?torch\s*(?:也|都)?\s*(?:有|已安装|已经安装|装了|安装了|已装)", re.I)
_CUDA_SAID = re.compile(r"(?<![A-Za-z])cuda\s*(?:版本)?\s*(?:是|为|:|：)?\s*(?P<v>\d{1,2}\.\d)(?![\d])", re.I)


def torch_said_installed(p: Partial, all_lines: list[str]) -> None:
    for n, line in enumerate(all_lines):
        m = _TORCH_HAVE.search(line) if "torch" in line.lower() else None
        if not m or re.search(r"没|未|不", line[m.start() : m.end() + 2]):
            continue
        w = where(n, line)
        p.set("torch_installed", True, w)
        cuda = _CUDA_SAID.search(line)
        if cuda:
            p.hits.append(Hit("cuda-version-said", short(line, 160), {"version": cuda.group("v"), "where": w}))
        return


# NCCL_P2P_DISABLE=1 shown as what made a failing multi-GPU run work: "Disabling NCCL does the trick",
# "NCCL_P2P_DISABLE=1 fixes it", beside "does not work" without it
_WORKED = re.compile(
    r"\b(?:does|did)\s+the\s+tri\w*|\bfix(?:es|ed)?\b|\bsolv(?:es|ed)\b|\bresolv(?:es|ed)\b|\bworks?\b|\bworked\b"
    r"|\bhelp(?:s|ed)\b|解决|可以了|就好了|正常了",
    re.I,
)
_NOT_WORKED = re.compile(
    r"n'?t\b|\bnot\b|\bno\s+(?:luck|help|effect|difference)\b|\bstill\b|\bwithout\b|没|不|仍|还是", re.I
)
_FAILED = re.compile(
    r"\b(?:does|do|did|odes)?\s*n[o']t\s+work|doesn'?t\s+work|\bfail\w*|\berror\b|communication"
    r"|time[ds]?\s*out|\bhang|\bstuck\b|\bfreez",
    re.I,
)
_P2P_LINE = re.compile(r"NCCL_P2P_DISABLE\s*=\s*1")


def p2p_fixes(p: Partial, all_lines: list[str]) -> None:
    """A line saying it worked, at or up to three lines above NCCL_P2P_DISABLE=1, in a post that says the
    run failed without it: hit p2p-fixes (with p2p-disabled, CD161)."""
    if "NCCL_P2P_DISABLE" not in "\n".join(all_lines) or not any(_FAILED.search(line) for line in all_lines):
        return
    for n, line in enumerate(all_lines):
        if not _P2P_LINE.search(line):
            continue
        for k in range(max(0, n - 3), min(len(all_lines), n + 2)):
            said = all_lines[k]
            if _WORKED.search(said) and not _NOT_WORKED.search(said):
                p.hits.append(Hit("p2p-fixes", short(said, 160), {"where": where(k, said)}))
                return


# a screenshot in the post: Markdown's ![alt](url) or an HTML <img src=…>
_SCREENSHOT = re.compile(r"!\[[^\]]*\]\(\s*[^)\s]+[^)]*\)|<img\b[^>]*\bsrc\s*=", re.I)
_TOPIC = re.compile(
    r"\b(?:gpus?|cuda|nvidia|torch|pytorch|errors?|exceptions?|traceback|crash\w*|fail\w*)\b|显卡|报错|错误|에러|오류"
    r"|エラー|그래픽|(?<![A-Za-z])(?:py)?torch|cuda",
    re.I,
)
# error text pasted as text: a traceback, a named exception with its message, a CUDA or compiler error line
_ERROR_TEXT = re.compile(
    r"Traceback \(most recent call last\)|\b\w+(?:Error|Exception):\s*\S|CUDA error:|^\s*error:\s*\S"
    r"|Segmentation fault|core dumped|^\s*File \".+\", line \d+",
)


def screenshot_only(p: Partial, all_lines: list[str]) -> None:
    """A screenshot where the error should be: the post names a GPU, CUDA, torch or an error, and pastes no
    error text. Hit error-in-screenshot (the ask: paste the error as text)."""
    blob = "\n".join(all_lines).lower()
    if "![" not in blob and "<img" not in blob:
        return
    shot = next(((n, line) for n, line in enumerate(all_lines) if _SCREENSHOT.search(line)), None)
    if shot is None or any(_ERROR_TEXT.search(line) for line in all_lines):
        return
    if not any(_TOPIC.search(_SCREENSHOT.sub(" ", line)) for line in all_lines):
        return
    n, line = shot
    p.hits.append(Hit("error-in-screenshot", short(line, 160), {"where": where(n, line)}))


# CUDA said to work, in Chinese ("cuda可用", "GPU是可以用的"): what torch.cuda.is_available() True is told as;
# not denied (不可用, 无法使用) nor asked (吗, ？, 是否)
_USABLE_ZH = re.compile(
    r"(?:cuda|CUDA|gpu|GPU)\s*(?:是|也|都)?\s*(?<![不没無无])可(?:以)?用(?:的)?(?![吗嗎?？]|\s*(?:的)?(?:显存|内存|空间|资源))"
)
_ASKED_ZH = re.compile(r"吗|嗎|？|\?|是否|是不是|能不能|可不可以|如何|怎么")


def cuda_usable_said(p: Partial, all_lines: list[str]) -> None:
    """ "cuda可用" said as a fact: torch.cuda.is_available() is True, with the line."""
    if "torch_available" in p.values or "可" not in "\n".join(all_lines):
        return
    for n, line in enumerate(all_lines):
        m = _USABLE_ZH.search(line)
        if not m:
            continue
        clause = re.split(r"[，,。；;！!]", line[m.start() :])[0] + re.split(r"[，,。；;！!]", line[: m.start()])[-1]
        if _ASKED_ZH.search(clause):
            continue
        w = where(n, line)
        p.set("torch_available", True, w)
        p.set("torch_installed", True, w)
        return


# torch's OOM advice tried without success ("我修改了max_split_size_mb也不行", Tencent/HunyuanVideo#62): the run
# ran out of GPU memory, though the message itself is not pasted
_TRIED = re.compile(
    r"不行|没用|无效|没有用|didn'?t help|doesn'?t help|did not help|no help|still|tried|试了|修改了|改了", re.I
)


def oom_advice_tried(p: Partial, all_lines: list[str]) -> None:
    """PYTORCH_CUDA_ALLOC_CONF's knobs said to have been tried: an out-of-memory error happened."""
    blob = "\n".join(all_lines)
    if any(h.kind == "out-of-memory" for h in p.hits) or ("max_split_size_mb" not in blob and "expandable" not in blob):
        return
    for n, line in enumerate(all_lines):
        if ("max_split_size_mb" in line or "expandable_segments" in line) and _TRIED.search(line):
            p.hits.append(Hit("out-of-memory", short(line.strip()), {"where": where(n, line)}))
            return


# The person wants CUDA, in words: "how can I use my GPU", "even when having cuda installed", "装了cuda",
# "--use-cuda" (also glued to Chinese: "--use-cuda不能使用", where \b fails), device="cuda" (with a CPU-only
# torch known, the build is what stands in the way: CD202)
_WANTS_CUDA = re.compile(
    r"\b(?:how\s+(?:can|do|could)\s+i\s+)?(?:use|run\s+on|using|utili[sz]e)\s+(?:my|the)\s+(?:nvidia\s+)?gpu\b"
    r"|\b(?:having|have|has|with)\s+(?:the\s+)?cuda(?:\s+toolkit)?\s+installed\b|\bcuda\s+(?:is\s+)?installed\b"
    r"|(?:装了|安装了|已安装|有)\s*(?:cuda|CUDA)|--use[-_]cuda(?![A-Za-z0-9_-])|device\s*=\s*['\"]cuda",
    re.I,
)


def cuda_wanted_said(p: Partial, all_lines: list[str]) -> None:
    """A post that wants CUDA in words: hit cuda-wanted (by prose), which with a CPU-only torch known gives CD202."""
    for n, line in enumerate(all_lines):
        low = line.lower()
        if "gpu" not in low and "cuda" not in low:
            continue
        m = _WANTS_CUDA.search(line)
        if m is None or re.search(r"\b(?:not|n't|no)\b|没有|未", line[max(0, m.start() - 12) : m.start()], re.I):
            continue
        said = re.split(r"(?<=[.!?。！？])\s+", line[: m.start()])[-1] + line[m.start() :]
        said = re.split(r"(?<=[.!?。！？])\s", said, maxsplit=1)[0]
        p.hits.append(Hit("cuda-wanted", short(said.strip(), 160), {"by": "prose", "where": where(n, line)}))
        return


# the machine's CPU architecture said in words: "On aarch64, `pip install torch` …", "an ARM64 server (GH200)";
# only where no x86 is named beside it (a post comparing the two says neither is the machine)
_ARM = re.compile(r"(?<![A-Za-z0-9_])(?:aarch64|arm64)(?![A-Za-z0-9])", re.I)
_X86 = re.compile(r"(?<![A-Za-z0-9])(?:x86[_-]64|x86|amd64|x64)(?![A-Za-z0-9])", re.I)


def machine_said(p: Partial, all_lines: list[str]) -> None:
    """aarch64 named in prose, no x86 beside it: the machine (which torch builds exist depends on it)."""
    if "machine" in p.values:
        return
    blob = "\n".join(all_lines)
    if not ("aarch64" in blob.lower() or "arm64" in blob.lower()) or _X86.search(blob):
        return
    for n, line in enumerate(all_lines):
        if _ARM.search(line):
            p.set("machine", "aarch64", where(n, line))
            return


# CUDA_VISIBLE_DEVICES set inside the program, and the person saying it keeps running on GPU 0: the variable was
# set after CUDA had started (AUTOMATIC1111#442, open-mmlab/mmdetection3d#1020: "set it before import torch")
_CVD_IN_CODE = re.compile(r"os\.environ\[\s*['\"]CUDA_VISIBLE_DEVICES['\"]\s*\]\s*=\s*['\"](?P<v>[\d, ]+)['\"]")
_STILL_GPU0 = re.compile(
    r"\b(?:always|still)\s+(?:uses?|using|runs?\s+on|running\s+on)\s+(?:the\s+first\s+gpu|gpu\s*0|cuda:0)\b", re.I
)


def visible_devices_too_late(p: Partial, all_lines: list[str]) -> None:
    """os.environ["CUDA_VISIBLE_DEVICES"] = "1" in the code, and "always using GPU0" said: set too late."""
    if "CUDA_VISIBLE_DEVICES" not in "\n".join(all_lines):
        return
    code = next(((n, m) for n, line in enumerate(all_lines) if (m := _CVD_IN_CODE.search(line))), None)
    said = next(((n, m) for n, line in enumerate(all_lines) if (m := _STILL_GPU0.search(line))), None)
    if code is None or said is None or code[1].group("v").strip() in ("0", ""):
        return
    n, m = code
    p.hits.append(
        Hit(
            "visible-devices-too-late",
            short(m.group(0), 120),
            {"value": m.group("v").replace(" ", ""), "where": where(n, m.string)},
        )
    )
    k, s = said
    p.hits.append(Hit("gpu-ran", short(s.string.strip(), 120), {"why": f"{where(k, s.string)}: GPU 0 was in use"}))
