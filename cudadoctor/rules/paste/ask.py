"""CD901, "To be sure, ask for:": the commands whose output settles what the paste left unknown."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.model import Finding, Message, Severity, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.paste.entries import ASK_FOR
from cudadoctor.rules.paste.runtime import explained_at_run_time

_ASK_ALL = "cudadoctor check --format markdown   # everything below in one report"


_CE = "python -m torch.utils.collect_env"


_SMI = "nvidia-smi"


_CC = "nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv"


_ARCH = (
    'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), '
    'torch._C._cuda_getArchFlags())"'
)


_MODULE = "cat /proc/driver/nvidia/version"


_WHY = 'python -c "import torch; torch.zeros(1).cuda()"'


_NCCL = "NCCL_DEBUG=INFO python train.py 2>&1 | grep NCCL  # the same command, with NCCL's log"


_ENV = "env | grep -E '^CUDA_(VISIBLE_DEVICES|DEVICE_ORDER)='"


_FAULT = 'python -X faulthandler -c "import {module}"'


_OP_BUILD = (
    'echo "CUDA_HOME=$CUDA_HOME"; nvcc -V; python -c "import torch; print(torch.__version__, torch.version.cuda)"'
)


_AS_TEXT = "python train.py 2>&1 | tail -n 50  # the same command; paste the text, not a screenshot"


_SEEN = 'echo "[$CUDA_VISIBLE_DEVICES]"  # in the shell that runs the program'


_LIBS = "python -m pip list | grep -i -E '^(torch|nvidia-)'; echo $LD_LIBRARY_PATH"


def ask_for(f: Facts, findings: list[Finding]) -> list[Finding]:
    """CD901: the commands whose output would settle what the paste left unknown; a warning when
    nothing found so far explains the machine and the deciding facts are unknown."""
    p = f.paste
    if p is None or p.from_report:
        return []
    t, d = f.torch, f.driver
    asks: list[tuple[Message, str]] = []  # (what it settles, command)
    # first, so the cap of four never drops them: the paste's own failure, unseen
    seg = next((h for h in p.hits if h.kind == "import-segfault"), None)
    if seg is not None:
        module = seg.detail.get("module", "torch")
        asks.append((msg("where the import crashes: Python's traceback of the crash"), _FAULT.format(module=module)))
    if any(h.kind == "nvcc-arch-unsupported" for h in p.hits):
        asks.append(
            (msg("which CUDA toolkit builds the extension: an nvcc older than the GPU's architecture"), "nvcc -V")
        )
    op = next((h for h in p.hits if h.kind == "extension-op-missing"), None)
    if op is not None:
        asks.append(
            (
                msg("whether the package's CUDA op was built: CUDA_HOME at build time, nvcc against torch's CUDA"),
                _OP_BUILD,
            )
        )
    if any(h.kind == "error-in-screenshot" for h in p.hits):
        asks.append((msg("the error itself, as text (a screenshot cannot be searched or read here)"), _AS_TEXT))
    if t is None or t.installed is None or (t.installed and t.cuda_built is None):
        asks.append((msg("the torch build, whether CUDA is available, the OS, GPUs and driver"), _CE))
    macos = f.system is not None and f.system.os == "Darwin"  # no NVIDIA driver exists for it: nothing to ask
    if any(h.kind == "nvidia-smi-not-found" for h in p.hits):
        asks.append(
            (
                msg("whether a driver is installed on the host; a container needs the GPUs passed in"),
                "nvidia-smi  # on the host; in Docker: docker run --gpus all IMAGE nvidia-smi",
            )
        )
    elif d is None and not macos:
        asks.append((msg("the driver, the newest CUDA it supports, and every GPU"), _SMI))
    elif d is not None and d.init_status == "ok" and d.cuda_driver_version is None and t is not None and t.cuda_built:
        asks.append((msg('the newest CUDA the driver supports (the "CUDA Version" in its header)'), _SMI))
    ccs_known = bool(d and any(x.compute_capability for x in d.devices)) or bool(
        t and any(x.capability for x in t.devices)
    )
    gpus_named = bool(d and d.devices) or bool(t and t.devices)
    if gpus_named and not ccs_known:
        asks.append((msg("each GPU's compute capability (its name is not in cudadoctor's table)"), _CC))
    if t is not None and t.cuda_built and (t.arch_flags is None or t.is_available is None) and (ccs_known or d is None):
        asks.append((msg("the GPU architectures this torch build has kernels for"), _ARCH))
    if (
        d is not None
        and d.init_status == "LIB_RM_VERSION_MISMATCH"
        and not (f.system and f.system.kernel_module_version)
    ):
        asks.append((msg("the version of the loaded kernel module, to compare with the libraries"), _MODULE))
    names = {x.name for x in d.devices} if d is not None else set()
    if len(names) > 1 and (f.system is None or f.system.env is None):
        asks.append((msg("which GPUs CUDA sees and in what order (mixed models)"), _ENV))
    if any(h.kind == "no-cuda-gpus" for h in p.hits):
        asks.append((msg("whether CUDA_VISIBLE_DEVICES hides every GPU from the program"), _SEEN))
    if t is not None and t.cuda_built and t.is_available is False:
        asks.append((msg("torch's own reason why CUDA is not available"), _WHY))
    if any(h.kind == "nccl-error" for h in p.hits):
        asks.append(
            (msg("NCCL's own reason: its log names the transport that failed (shared memory, P2P, network)"), _NCCL)
        )
    if any(h.kind in ("undefined-symbol", "cannot-open-library") for h in p.hits):
        asks.append((msg("which torch and nvidia-* wheels are installed, and the library search path"), _LIBS))
    if not asks:
        return []
    asks = list(dict.fromkeys(asks))[:4]
    settled = (
        any(x.severity is Severity.ERROR for x in findings)
        or any(explained_at_run_time(h) for h in p.hits)
        or any(x.code == "CD200" for x in findings)
        or (t is not None and t.cuda_built is False and (d is not None or macos))
    )
    severity = Severity.INFO if settled else Severity.WARNING
    title = msg("To be sure, ask for: {commands}", commands=", ".join(f"`{cmd.split('  #')[0]}`" for _, cmd in asks))
    # not settled: a warning, which `triage` turns into its NOT ENOUGH TO TELL verdict
    return [
        ASK_FOR.finding(
            title=title,
            severity=severity,
            fix=[fix(msg("It shows {what}", what=what), cmd) for what, cmd in asks]
            + [fix("Or everything at once", _ASK_ALL)],
        )
    ]
