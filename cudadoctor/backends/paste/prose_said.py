"""What people say about a run in words, and the REPL transcripts they paste: IPython's `In [2]:` /
`Out[2]:` pairs, "my Nvidia version is too old", "suddenly OOM happened", "GPU usage is about 73G",
"the [cpu] version", "2.3.1的cpu版本". Read conservatively, each with its line; prose.parse calls these
after its line readers.
"""

from __future__ import annotations

import re

from cudadoctor.backends.paste.model import Hit, Partial
from cudadoctor.backends.paste.text import short, where

# IPython's prompts (ipython IPython/terminal/prompts.py: "In [N]: " and "Out[N]: ") and the plain `>>>`;
# the expression, optionally printed, then its answer on the next line that is not blank.
_PROMPT = re.compile(
    r"^\s*(?:>>>|In\s*\[\d+\]:)\s*(?:print\(\s*)?"
    r"(?P<expr>torch\.cuda\.(?:is_)?available\(\)|torch\.__version__|torch\.version\.cuda)\s*\)?\s*;?\s*$"
)
_OUT = re.compile(r"^\s*(?:Out\s*\[\d+\]:\s*)?['\"]?(?P<v>[^'\"\s]+)['\"]?\s*$")
_TORCH_V = re.compile(r"\d+\.\d+\.\d+(?:[.+][0-9A-Za-z.]+)?")


def repl(p: Partial, all_lines: list[str]) -> None:
    """`In [2]: torch.cuda.is_available()` then `Out[2]: False` (and torch.__version__, torch.version.cuda;
    `torch.cuda.available()`, a common misspelling, as is_available). Where the transcript shows the same
    question twice (before and after an upgrade), the later answer is the state asked about."""
    found: dict[str, tuple[object, str]] = {}
    blob = "\n".join(all_lines)
    if ">>>" not in blob and "In [" not in blob and "In[" not in blob:
        return
    for n, line in enumerate(all_lines):
        m = _PROMPT.match(line)
        if not m:
            continue
        answer = next(((k, a) for k, a in enumerate(all_lines[n + 1 : n + 4], n + 1) if a.strip()), None)
        if answer is None or re.match(r"\s*(?:>>>|In\s*\[|\.\.\.)", answer[1]):
            continue
        out = _OUT.match(answer[1])
        if not out:
            continue
        v, w, expr = out.group("v"), where(answer[0], answer[1]), m.group("expr")
        if "available" in expr and v in ("True", "False"):
            found["torch_available"] = (v == "True", w)
        elif expr == "torch.__version__" and _TORCH_V.fullmatch(v):
            found["torch_version"] = (v, w)
        elif expr == "torch.version.cuda" and (v == "None" or re.fullmatch(r"\d+\.\d+(?:\.\d+)?", v)):
            found["torch_cuda"] = (v, w)
    for key, (value, w) in found.items():
        if key == "torch_cuda":
            cuda = str(value)
            p.set("torch_cuda_built", cuda != "None", w)
            if cuda != "None":
                p.set("torch_cuda", ".".join(cuda.split(".")[:2]), w)
        else:
            p.set(key, value, w)
        p.set("torch_installed", True, w)


# torch's "The NVIDIA driver on your system is too old" (torch/csrc/cuda/Module.cpp, c10/cuda) as people
# retell it: "the msg is that my Nvidia version is too old", "my nvidia driver version is too old"; not a
# guess or a question about it ("maybe my driver is too old", "is my driver too old?")
_DRIVER_OLD = re.compile(
    r"\b(?:my|the|our|your)\s+(?:nvidia|gpu|graphics)?\s*(?:(?:nvidia|gpu|graphics|display)\s+)?"
    r"(?:driver\s*(?:version)?|nvidia\s+version)\s+(?:is|was)\s+(?:much\s+|way\s+)?too\s+old\b"
    r"|(?:显卡)?驱动(?:程序)?(?:版本)?(?:太|过)(?:旧|老|低)",
    re.I,
)
_HEDGE = re.compile(
    r"\b(?:if|whether|maybe|perhaps|might|may|could|think|guess|suspect|possibl[ey]|probably|not sure|unless"
    r"|don'?t|doesn'?t|isn'?t|not)\b|\?|是不是|是否|可能|吗|如果|怀疑|？",
    re.I,
)


_END = re.compile(r"[.!?](?=\s|$)|[。！？；;]")


def _sentence(line: str, start: int, end: int) -> str:
    """The sentence of `line` around [start, end): a full stop ends one only before a space ("2.3.1" does not)."""
    left = max((e.end() for e in _END.finditer(line, 0, start)), default=0)
    right = _END.search(line, end)
    return line[left : right.end() if right else len(line)]


# the message retold as what torch showed ("如果安装高版本的torch，则会提示cuda太老旧", FunAudioLLM/CosyVoice#845):
# "提示/报/显示" reports an observation, so a condition in front of it ("if I install a newer torch") is no hedge
_SHOWN_OLD = re.compile(
    r"(?:提示|报错?|显示)\s*(?:说)?\s*(?:cuda|CUDA|(?:显卡|nvidia|NVIDIA)?驱动)(?:版本)?(?:太|过)(?:老旧|旧|老|低)"
)
_ASKED = re.compile(r"是不是|吗|？|\?")
# the message told as history, then acted on ("因提示CUDA版本过旧…，因此尝试按其提示更新CUDA", "so I updated the
# driver"): the state now is what came after (hpc-admin-sist/DockerMonitor#42: a version mismatch)
_ACTED = re.compile(
    r"(?:因此|所以|于是|然后|就)[^。！？]{0,12}(?:更新|升级|安装|装了|重装)"
    r"|\b(?:so|then|and)\s+I\s+(?:updated|upgraded|installed|reinstalled)\b",
    re.I,
)
# the CUDA the driver supports, said in Chinese: "cuda驱动是11.4" (the "CUDA Version" nvidia-smi prints)
_DRIVER_CUDA_ZH = re.compile(r"(?:cuda|CUDA)\s*驱动(?:版本)?\s*(?:是|为|:|：)?\s*(?P<v>1[0-9]\.\d)(?![\d.])")


def driver_too_old(p: Partial, all_lines: list[str]) -> None:
    """The person reports torch's "driver too old" message in words: the same hit and facts the message
    sets (a CUDA build, is_available() False), with the line."""
    blob = "\n".join(all_lines)
    if "驱动" not in blob and "too old" not in blob.lower() and "太" not in blob:
        return
    for n, line in enumerate(all_lines):
        c = _DRIVER_CUDA_ZH.search(line) if "驱动" in line else None
        if c and not _ASKED.search(_sentence(line, c.start(), c.end())):
            major, minor = c.group("v").split(".")
            p.set("driver_cuda", int(major) * 1000 + int(minor) * 10, where(n, line))
    for n, line in enumerate(all_lines):
        shown = _SHOWN_OLD.search(line)
        m = shown or _DRIVER_OLD.search(line)
        if not m:
            continue
        said = _sentence(line, m.start(), m.end())
        if (_ASKED if shown else _HEDGE).search(said) or _ACTED.search(line[m.end() : m.end() + 60]):
            continue
        w = where(n, line)
        p.set("torch_cuda_built", True, w)
        p.set("torch_installed", True, w)
        p.set("torch_available", False, w)
        p.hits.append(Hit("driver-too-old", short(line), {"by": "torch", "where": w}))
        return


# Errors that say CUDA did not work: prose about a GPU at work is not read beside them
_CUDA_FAILED = re.compile(
    r"is_available\(\)\)?\W{0,6}(?:(?:returns?|returned|is|gives?|shows?)\s+)?False|CUDA error|cuda runtime error"
    r"|CUDA_ERROR_|no CUDA GPUs|not compiled with CUDA|Found no NVIDIA driver|NVIDIA driver on your system is too old"
    r"|CUDA driver version is insufficient|no kernel image|CUDA initialization|NVIDIA-SMI has failed",
    re.I,
)
# out of memory said in a word: "suddenly OOM happened", "OOM at batch 120" (torch's "CUDA out of memory"
# itself is runtime.py's); not the kernel's OOM killer, host RAM, or an OOM that did not happen
_OOM_WORD = re.compile(r"(?<![\w-])OOM(?:s|ed|'d)?(?![\w-])")
_NOT_GPU_OOM = re.compile(
    r"oom[-_ ]?kill|OOMKilled|\bkilled\b|\b(?:cpu|ram|host|system|disk|swap|shm|cgroup|container|pod|kernel)\s+"
    r"(?:memory\s+)?OOM|\bRAM\b|内存",
    re.I,
)
# an OOM that did not happen, or might: asked about in its own clause ("to avoid OOM", "no OOM so far")
_OOM_DENIED = re.compile(
    r"\b(?:avoid|prevent|without|no|not|never|won'?t|doesn'?t|didn'?t|wouldn'?t|isn'?t|if|whether|instead|would"
    r"|could|might|may|risk|fix|fixes|tips?|to reduce|readme|docs?)\b|\?",
    re.I,
)
_RUN_CONTEXT = re.compile(r"gpu|cuda|vram|显存|train|epoch|batch|iteration|step|infer|model|forward|backward", re.I)


# GPU memory said to run out, in Chinese: "显存不够", "爆显存", "似乎是内存不够" beside a GPU model or a size
# (Vision-CAIR/MiniGPT-4#50: "我试图用我的3060（12G）跑，似乎是内存不够"); 内存 alone is host RAM
_OOM_ZH = re.compile(
    r"显存(?:不够|不足|爆了?|溢出)|爆显存|(?:内存)(?:不够|不足)|报.{0,4}显存(?:问题|错误)"
    # Korean: "쿠다 메모리가 모자란다는 에러" (CUDA memory is short)
    r"|(?:쿠다|CUDA|GPU|그래픽)\s*메모리(?:가|이)?\s*(?:모자|부족)"
)
_GPU_OR_SIZE = re.compile(r"显存|显卡|(?<!\d)(?:[1-9]\d{3}|[AHLV]100|T4)(?!\d)|\d+\s*G(?:B|iB)?(?![A-Za-z])", re.I)


def _oom_said_zh(p: Partial, all_lines: list[str]) -> bool:
    for n, line in enumerate(all_lines):
        m = _OOM_ZH.search(line) if ("显存" in line or "内存" in line or "메모리" in line) else None
        if not m:
            continue
        said = _sentence(line, 0, m.end())
        if re.search(r"吗|？|\?|如果|是否|不是", said):
            continue
        if "内存" in m.group(0) and not _GPU_OR_SIZE.search(said):
            continue  # 内存 without a GPU beside it is the host's memory
        p.hits.append(Hit("out-of-memory", short(said.strip()), {"where": where(n, line)}))
        return True
    return False


def oom_said(p: Partial, all_lines: list[str]) -> None:
    """ "OOM" said of a run, with a run or GPU word in the sentence: out of memory while running, as torch's
    message would say it, without its sizes. Not where the paste shows CUDA failing."""
    blob = "\n".join(all_lines)
    if ("OOM" not in blob and "存" not in blob and "메모리" not in blob) or any(
        _CUDA_FAILED.search(line) for line in all_lines
    ):
        return
    if ("存" in blob or "메모리" in blob) and _oom_said_zh(p, all_lines):
        return
    for n, line in enumerate(all_lines):
        m = _OOM_WORD.search(line) if "OOM" in line else None
        if not m:
            continue
        said = _sentence(line, m.start(), m.end())
        clause = re.split(r"[,，;；:：]|\bbut\b", line[: m.start()])[-1] + re.split(r"[,，;；:：]", line[m.end() :])[0]
        if _NOT_GPU_OOM.search(said) or _OOM_DENIED.search(clause) or not _RUN_CONTEXT.search(said):
            continue
        p.hits.append(Hit("out-of-memory", short(said.strip().lstrip("#").strip()), {"where": where(n, line)}))
        return


# GPU memory a running program holds, as people report it: "GPU usage is about 73G", "takes up 35G of GPU",
# "kv cache used a lot of vram", "the fork will use all of my vram", "占用了20G显存"
_SIZE = r"\d+(?:\.\d+)?\s?(?:[GM]i?B?|gb|gib|mb|mib)(?![A-Za-z0-9])"  # "20G显存": no ASCII word edge
_ABOUT = r"(?:(?:about|around|almost|nearly|roughly|approximately|over|~|up\s+to)\s*)?"
_GPU_MEM = r"(?:(?:the\s+)?gpu(?:'s)?(?:\s+(?:memory|mem|ram|vram))?|(?:my\s+|the\s+)?(?:vram|video\s+memory)|显存)"
_USE = (
    r"(?:uses?|used|using|takes?\s+up|took\s+up|taking\s+up|occup(?:y|ies|ied|ying)|consum(?:es?|ed|ing)"
    r"|eats?(?:\s+up)?|ate|fills?(?:\s+up)?|hogs?)"
)
_LOTS = (
    r"(?:a\s+lot\s+of|lots\s+of|all\s+(?:of\s+)?(?:my|the)?|most\s+of\s+(?:my|the)?|too\s+much|so\s+much"
    r"|(?:nearly|almost)\s+all\s+(?:of\s+)?(?:my|the)?)"
)
_MEMORY_USED = re.compile(
    rf"\bgpu\s+(?:memory\s+)?usage\s+(?:is|was|reaches|reached|goes\s+up\s+to|of)?\s*{_ABOUT}(?P<size>{_SIZE})"
    rf"|\b{_USE}\s+{_ABOUT}(?P<size2>{_SIZE})\s*(?:of\s+)?{_GPU_MEM}"
    rf"|\b{_USE}\s+{_LOTS}\s*(?:the\s+)?(?:gpu\s+)?(?:vram|gpu\s+memory|video\s+memory|gpu\s+ram)\b"
    rf"|(?:占用|占了|用了|吃了|使用了?)\s*(?:约|大约|将近|差不多)?\s*(?P<size3>{_SIZE})\s*的?\s*显存"
    rf"|显存(?:占用|使用|用了|占了)(?:了|为|是|约|大约|到)?\s*(?P<size4>{_SIZE})",
    re.I,
)
_NOT_A_RUN = re.compile(
    r"\b(?:need|needs|needed|require[sd]?|should|would|could|expect\w*|at\s+least|minimum|recommend\w*|how\s+much"
    r"|only\s+have|can'?t|cannot|unable|not\s+enough|too\s+(?:big|large)|exceed\w*|if)\b|需要|要求|如果|至少",
    re.I,
)


def _memory_words(line: str) -> bool:
    low = line.lower()
    return "gpu" in low or "vram" in low or "video" in low or "显存" in line


def memory_in_use(p: Partial, all_lines: list[str]) -> None:
    """A person reports GPU memory a running program holds: the GPU ran. Never beside a CUDA failure in the
    same paste, nor for memory a model would need."""
    if p.values.get("torch_available") is False:
        return
    # every wording names the GPU, VRAM, video memory or 显存: a cheap test first, the failure scan only if one does
    cheap = [(n, line) for n, line in enumerate(all_lines) if _memory_words(line)]
    if not cheap or any(_CUDA_FAILED.search(line) for line in all_lines):
        return
    for n, line in cheap:
        m = _MEMORY_USED.search(line)
        if not m:
            continue
        size = next((s for s in m.groups() if s), "")
        if size and not re.search(r"[1-9]", size):
            continue
        if _NOT_A_RUN.search(_sentence(line, m.start(), m.end())):
            continue
        why = f"{where(n, line)}: a program held GPU memory"
        p.hits.append(Hit("gpu-ran", short(line, 120), {"why": why}))
        return


# the person saying torch is a CPU build: "It defaults to the [cpu] version", "装的是CPU版本的torch",
# "识别的却是2.3.1的cpu版本"; said of torch (the line names it, or a torch version is in front of it)
_CPU_BUILD = re.compile(
    r"(?:\[cpu\]|\bcpu(?:[- ]only)?)\s*(?:version|build|variant|wheel)\b|(?P<zh>(?:\[cpu\]|cpu)\s*(?:版本|版))",
    re.I,
)
_VERSION_BEFORE = re.compile(r"(?P<v>\d\.\d{1,2}(?:\.\d{1,2})?)\s*(?:的|版本的|version\s+of\s+the|\s)?\s*$")
_OTHER_PACKAGE = re.compile(
    r"onnx|paddle|tensorflow|\btf\b|jax|mxnet|faiss|llama|ctranslate|xformers|cupy|opencv|cv2|torchvision|torchaudio",
    re.I,
)
_NOT_SAID = re.compile(
    r"\?|\b(?:if|whether|should|want|wants|wanted|need|needs|how|instead|rather|not|no|n't|switch\w*|uninstall\w*"
    r"|remov\w*|replac\w*|avoid|don'?t)\b|n't\b|如果|是否|是不是|吗|不是|想|应该|怎么|而不是|换成|改成|卸载|删除",
    re.I,
)


# "The CPU build of torch works fine, but the CUDA build fails": a comparison, not the build in use
_CUDA_BUILD_TOO = re.compile(r"\b(?:cuda|gpu)\s*(?:build|version|wheel|variant)\b|(?:cuda|gpu|GPU)\s*版", re.I)
_CUDA_RAN = re.compile(
    r"CUDA error: (?!no kernel image)|CUDA out of memory|illegal memory access|device-side assert", re.I
)


def cpu_build_said(p: Partial, all_lines: list[str]) -> None:
    """The person says the torch in use is the CPU build: a CPU build, with the line; a version named in
    front of it ("2.3.1的cpu版本") is that build's, the one asked about."""
    blob = "\n".join(all_lines)
    if "cpu" not in blob.lower() or _CUDA_RAN.search(blob):
        return  # a CUDA error while running proves a CUDA build, whatever a sentence compares it with
    torch_named = any(re.search(r"(?<![A-Za-z])(?:py)?torch", line, re.I) for line in all_lines)
    for n, line in enumerate(all_lines):
        m = _CPU_BUILD.search(line)
        said = _sentence(line, m.start(), m.end()) if m else ""
        if not m or _OTHER_PACKAGE.search(line) or _NOT_SAID.search(said) or _CUDA_BUILD_TOO.search(said):
            continue
        before = _VERSION_BEFORE.search(line[: m.start()])
        of_torch = re.search(r"(?<![A-Za-z])(?:py)?torch", line, re.I) or (before and torch_named)
        if not of_torch:
            continue
        w = where(n, line)
        if p.values.get("torch_cuda_built") is True:
            return  # a line read as a CUDA build says otherwise: neither is certain
        if before and not re.search(r"(?i)cuda\s*$", line[: before.start()]):
            p.values["torch_version"], p.where["torch_version"] = before.group("v"), w
        p.set("torch_cuda_built", False, w)
        p.set("torch_installed", True, w)
        p.hits.append(Hit("says-cpu-build", short(line, 160), {"where": w}))
        return
