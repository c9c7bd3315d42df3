"""The torch build against the driver and the GPU, as the paste's texts show them: a driver too old for the
wheel's CUDA, a GPU too old for the build, a CPU-only torch (pip, conda, the 0.1.2 placeholder) and a GPU
the build's CUDA cannot compile for.
"""

from __future__ import annotations

import re

from cudadoctor.advice.install import PREVIOUS_VERSIONS
from cudadoctor.facts import Facts
from cudadoctor.facts.paste import PasteHit
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.architectures import FIRST_CUDA, arch_name
from cudadoctor.knowledge.driver_minimums import full_minimum, major_floor
from cudadoctor.knowledge.versions import cuda_int_to_str, parse_version
from cudadoctor.model import Finding, Fix, Table, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.paste.entries import DRIVER_TOO_OLD, GPU_TOO_OLD, NOT_COMPILED
from cudadoctor.rules.paste.installs import advice_fix, cuda_at_least, cuda_build_install, with_driver_cuda


def driver_facts_decide(f: Facts) -> bool:
    """CD203 fires from facts when NVML saw GPUs and torch's CUDA is known."""
    d, t = f.driver, f.torch
    return bool(d and d.init_status == "ok" and d.device_count and d.cuda_driver_version and t and t.cuda)


def driver_too_old(f: Facts, h: PasteHit) -> Finding:
    found = int(h.detail["found"]) if h.detail.get("found", "").isdigit() else None
    t = f.torch
    have = cuda_int_to_str(found)
    wheel = parse_version(t.cuda) if t and t.cuda else None
    windows = f.system is not None and f.system.os == "Windows"
    need = None
    if wheel and len(wheel) >= 2:
        need = full_minimum(wheel[0], wheel[1], windows=windows) or major_floor(wheel[0], windows)
    needs = (
        msg(", torch {version} needs CUDA {cuda}", version=t.version, cuda=t.cuda) if t and t.version and t.cuda else ""
    )
    if have:
        title = msg(
            "torch says the NVIDIA driver is too old: it supports CUDA up to {have}{needs}", have=have, needs=needs
        )
    elif h.detail.get("by") == "torch":  # torch's message, cut before its "(found version …)"
        title = msg("torch says the NVIDIA driver is too old{needs}", needs=needs)
    else:
        # "CUDA driver version is insufficient for CUDA runtime version" is the CUDA runtime's own error
        # string (cudaErrorInsufficientDriver): torch prints it, and so do CTranslate2, TensorFlow, CuPy
        title = msg("The CUDA runtime says the NVIDIA driver is too old{needs}", needs=needs)
    upgrade = (
        msg("Upgrade the NVIDIA driver to {need} or newer", need=need) if need else msg("Upgrade the NVIDIA driver")
    )
    fixes = [fix(upgrade, "nvidia-smi  # the driver now")]
    fixes += advice_fix(with_driver_cuda(f, found), msg("Or install the torch build this driver runs"))[:1]
    by_torch = have or h.detail.get("by") == "torch"
    said = Table(["torch said"], [[h.text]]) if by_torch else Table(["The error"], [[h.text]])
    return DRIVER_TOO_OLD.finding(title=title, fix=fixes, tables=[said])


def gpu_too_old(f: Facts, h: PasteHit) -> Finding:
    cc, name = h.detail.get("cc"), h.detail.get("gpu") or msg("the GPU")
    covering = [
        (r, v.name)
        for r in wheels.releases_newest_first()
        for v in wheels.variants(r)
        if wheels.coverage(v.arch_flags, cc) == "sm"
    ]
    label = msg("{gpu} (compute capability {cc}, {arch})", gpu=name, cc=cc, arch=arch_name(cc))  # as torch_build
    if covering:
        release, variant = covering[0]
        fixes = [
            fix(
                msg(
                    "Install torch {release}, the newest with kernels for {cc} ({variant})",
                    release=release,
                    cc=cc,
                    variant=variant,
                ),
                f"python -m pip install torch=={release}.0 --index-url {wheels.INDEX_URL.format(variant=variant)}",
            ),
            fix("Or use the CPU", "device = torch.device('cpu')"),
        ]
        why = msg(
            "{page} The newest torch with a build for {cc} is {release} ({variant}).",
            page=msg(GPU_TOO_OLD.explanation),
            cc=cc,
            release=release,
            variant=variant,
        )
    else:
        fixes = [fix("Use the CPU: no torch build in cudadoctor's tables supports it", "device = torch.device('cpu')")]
        why = msg("{page} No PyTorch release in cudadoctor's tables supports it.", page=msg(GPU_TOO_OLD.explanation))
    return GPU_TOO_OLD.finding(title=msg("torch says {gpu} is too old for this build", gpu=label), why=why, fix=fixes)


def cpu_only_decided(f: Facts) -> bool:
    """CD202 fires from facts when the build is CPU-only and NVML saw GPUs."""
    t, d = f.torch, f.driver
    return bool(t and t.cuda_built is False and d and d.init_status == "ok" and d.device_count)


def _cuda_build_of_same_release(f: Facts) -> list[Fix]:
    """With the driver unknown: the same release's build with the oldest CUDA it was published for (the one
    most drivers run). A release the wheel tables do not know gets the page that lists its builds, never an
    index that does not serve it (torch 1.4.0 on /whl/cu126 fails to install)."""
    version = (f.torch.version or "").split("+")[0] if f.torch else ""
    label = msg("Replace it with a CUDA build (pick the variant your driver supports: nvidia-smi shows its CUDA)")
    if not version:
        return [fix(label, "python -m pip uninstall -y torch", cuda_build_install(f))]
    machine = f.system.machine if f.system is not None else None
    # a release only (not "2.6.0.dev20241112" or "2.1.0a0+git…": no index serves those under that pin), the
    # machine's own builds (aarch64 has fewer), and those with kernels for every GPU the paste names
    stable = re.fullmatch(r"\d+\.\d+\.\d+", version) is not None
    offered = wheels.variants(wheels.release_of(version) or "", machine) if stable else []
    gpus = [cc for _, cc in gpus_with_cc(f)]
    offered = sorted(
        (v for v in offered if all(wheels.covers(v.arch_flags, cc) is not False for cc in gpus)), key=lambda v: v.cuda
    )
    if offered:
        pin = f"python -m pip install torch=={version} --index-url {offered[0].index_url}"
        return [fix(label, "python -m pip uninstall -y torch", pin)]
    return [
        fix(
            msg(
                "torch {version} is not in cudadoctor's wheel tables: {url} lists its CUDA builds; pick one "
                "your driver supports (nvidia-smi shows its CUDA)",
                version=version,
                url=PREVIOUS_VERSIONS,
            ),
            "nvidia-smi",
        ),
        fix(msg("Or replace it with a current CUDA build"), "python -m pip uninstall -y torch", cuda_build_install(f)),
    ]


def not_compiled(f: Facts, h: PasteHit) -> Finding:
    fixes = advice_fix(f, msg("Install a CUDA build")) if f.driver and f.driver.driver_version else []
    if not fixes:
        fixes = _cuda_build_of_same_release(f)
    if f.system is not None and f.system.os == "Windows":
        fixes.append(fix("On Windows, PyPI's torch is CPU-only: always use the index URL", "nvidia-smi"))
    title = NOT_COMPILED.summary
    if f.torch and f.torch.version:
        title = msg(
            "Torch not compiled with CUDA enabled: torch {version} is a CPU-only build", version=f.torch.version
        )
    return NOT_COMPILED.finding(title=title, fix=fixes)


def cpu_torch_wanted(f: Facts, h: PasteHit) -> Finding:
    from cudadoctor.rules.torch_install import CPU_ONLY

    version = f.torch.version if f.torch is not None else None
    if h.detail.get("by") == "prose":
        title = (
            msg("torch {version} is a CPU-only build, but the post wants CUDA: {line}", version=version, line=h.text)
            if version
            else msg("torch is a CPU-only build, but the post wants CUDA: {line}", line=h.text)
        )
    elif version:
        title = msg(
            "torch {version} is a CPU-only build, but the program asks for CUDA: {error}", version=version, error=h.text
        )
    else:
        title = msg("torch is a CPU-only build, but the program asks for CUDA: {error}", error=h.text)
    return CPU_ONLY.finding(
        title=title,
        fix=[
            fix(
                msg("Replace it with a CUDA build (pick the variant your driver supports: nvidia-smi shows its CUDA)"),
                "python -m pip uninstall -y torch",
                cuda_build_install(f),
            )
        ],
    )


def cpu_torch_beside_gpu(f: Facts, h: PasteHit) -> Finding:
    from cudadoctor.rules.torch_install import CPU_ONLY

    return CPU_ONLY.finding(
        title=msg(
            "torch {version} is a CPU-only build, yet another run in the paste used {gpu}: {line}",
            version=h.detail.get("torch", ""),
            gpu=h.detail.get("gpu", ""),
            line=h.text,
        ),
        fix=[
            fix(
                msg("Replace it with a CUDA build (pick the variant your driver supports: nvidia-smi shows its CUDA)"),
                "python -m pip uninstall -y torch",
                cuda_build_install(f),
            )
        ],
    )


def placeholder_sdist(h: PasteHit) -> Finding:
    from cudadoctor.rules.torch_install import NOT_INSTALLED

    return NOT_INSTALLED.finding(
        title=msg(
            "pip found no torch wheel for this platform or Python and took the 0.1.2 placeholder: {line}", line=h.text
        ),
        why=msg(
            "PyPI's torch 0.1.2 is a placeholder source package: pip falls back to it only when no wheel "
            "matches the platform (a Jetson's aarch64 with an old pip, 32-bit Python) or the Python version, "
            "and it cannot be installed. torch is not installed."
        ),
        fix=[
            fix(msg("See the platform and Python pip installs for"), "python -m pip debug --verbose | head -20"),
            fix(msg("On a Jetson: NVIDIA's JetPack torch wheel"), "cat /etc/nv_tegra_release"),
        ],
    )


def conda_cpu(f: Facts, kinds: dict[str, list[PasteHit]]) -> Finding | None:
    """conda chose pytorch's CPU build: the plan or list shows it, or a conda install was followed by
    is_available() False with nothing else to explain it."""
    from cudadoctor.rules.torch_packages import CONDA_CPU

    if "conda-cpu" in kinds:
        h, sure = kinds["conda-cpu"][0], True
    elif "conda-install" in kinds and "says-cpu-build" in kinds:
        h, sure = kinds["conda-install"][0], True
    elif (
        "conda-install" in kinds
        and f.torch is not None
        and f.torch.is_available is False
        and f.torch.cuda_built is not True
    ):
        h, sure = kinds["conda-install"][0], False
    else:
        return None
    return CONDA_CPU.finding(
        title=msg("conda chose pytorch's CPU build: {line}", line=h.text)
        if sure
        else msg("conda likely chose pytorch's CPU build (is_available() is False after: {line})", line=h.text),
        fix=[
            fix(
                msg("See which build conda installed (a cpu build string, or cpuonly / pytorch-mutex cpu)"),
                "conda list | grep -E 'pytorch|cpuonly|mutex'",
            ),
            fix(
                msg("Install torch from PyTorch's CUDA wheels instead (in this env)"),
                "conda remove -y pytorch cpuonly",
                "python -m pip install torch --index-url https://download.pytorch.org/whl/cu126",
            ),
        ],
    )


def gpus_with_cc(f: Facts) -> list[tuple[str, str]]:
    from cudadoctor.advice.gpus import gpu_capabilities

    known = gpu_capabilities(f)
    if not known and f.paste is not None:  # a GPU named in prose, with nothing else of torch shown
        known = [(h.detail["gpu"], h.detail["cc"]) for h in f.paste.hits if h.kind == "gpu-named" and "cc" in h.detail]
    return list(dict.fromkeys(known))


def arch_beyond_cuda(f: Facts) -> list[Finding]:
    """A GPU newer than every architecture the torch build's CUDA can compile for: certain from the
    CUDA version alone, where the build's own arch list is not in the paste or the tables."""
    from cudadoctor.rules.torch_build import ARCH_UNSUPPORTED

    t = f.torch
    if t is None or not t.cuda or t.arch_flags or wheels.official_arch_flags(t.version, None):
        return []
    have = parse_version(t.cuda)
    if not have or len(have) < 2:
        return []
    out = []
    for name, cc in gpus_with_cc(f):
        key = tuple(int(x) for x in cc.split("."))
        first = FIRST_CUDA.get(key)  # type: ignore[arg-type]
        if first is None or tuple(have[:2]) >= first:
            continue
        need = f"{first[0]}.{first[1]}"
        out.append(
            ARCH_UNSUPPORTED.finding(
                title=msg(
                    "torch {version} is built with CUDA {cuda}, which cannot compile for {gpu} (sm_{sm}): it "
                    "has no kernels for it",
                    version=t.version or "",
                    cuda=t.cuda,
                    gpu=name,
                    sm=cc.replace(".", ""),
                ),
                why=msg(
                    "{page} CUDA compiles for compute capability {cc} from CUDA {need} on; a build with CUDA "
                    "{cuda} cannot contain its kernels. Install a torch built with CUDA {need} or newer.",
                    page=msg(ARCH_UNSUPPORTED.explanation),
                    cc=cc,
                    need=need,
                    cuda=t.cuda,
                ),
                fix=advice_fix(f, msg("Install a build compiled for this GPU")) or cuda_at_least(first),
            )
        )
    return out


def no_kernel_image_for_gpu(f: Facts) -> list[Finding]:
    """CUDA's "no kernel image is available" with one GPU named that only CUDA 12.8+ compiles for (Blackwell)
    and no arch list of the build in the paste: the build that ran predates the GPU. Said as CD205 for that
    GPU; for older GPUs the message alone cannot tell torch from an extension, and CD215 stays."""
    from cudadoctor.rules.torch_build import ARCH_UNSUPPORTED

    t = f.torch
    if t is not None and (t.arch_flags or wheels.official_arch_flags(t.version, None)):
        return []  # the build's own list is known: the table rule (torch_build._arch) decides
    gpus = gpus_with_cc(f)
    if len(gpus) != 1:
        return []
    name, cc = gpus[0]
    first = FIRST_CUDA.get(tuple(int(x) for x in cc.split(".")))  # type: ignore[arg-type]
    if first is None or first < (12, 8):
        return []
    need = f"{first[0]}.{first[1]}"
    return [
        ARCH_UNSUPPORTED.finding(
            title=msg(
                '{gpu} (sm_{sm}) needs a torch built with CUDA {need} or newer: "no kernel image" says the '
                "build that ran has no kernels for it",
                gpu=name,
                sm=cc.replace(".", ""),
                need=need,
            ),
            why=msg(
                "{page} CUDA compiles for compute capability {cc} from CUDA {need} on. The paste does not "
                "show the torch build; an extension built without sm_{sm} (xformers, flash-attn) fails with "
                "the same message, and torch's own list below tells which.",
                page=msg(ARCH_UNSUPPORTED.explanation),
                cc=cc,
                need=need,
                sm=cc.replace(".", ""),
            ),
            fix=[
                fix(
                    msg("See the torch build and the architectures it has kernels for"),
                    'python -c "import torch; print(torch.__version__, torch.cuda.get_arch_list())"',
                ),
                *(advice_fix(f, msg("Install a build compiled for this GPU")) or cuda_at_least(first)),
            ],
        )
    ]


def torch_says_no_kernels(f: Facts, h: PasteHit) -> Finding:
    """torch's own warning ("sm_86 is not compatible with the current PyTorch installation") is its
    verdict on its build: it outranks an estimate from the tables (a PTX JIT that torch itself rejects)."""
    from cudadoctor.rules.torch_build import ARCH_UNSUPPORTED

    gpu, cc = h.detail.get("gpu") or msg("the GPU"), h.detail.get("cc", "?")
    return ARCH_UNSUPPORTED.finding(
        title=msg(
            "torch says {gpu} (sm_{sm}) is not compatible with this build: it has no kernels for it",
            gpu=gpu,
            sm=cc.replace(".", ""),
        ),
        why=msg(
            "{page} torch lists what it was built for: {flags}.",
            page=msg(ARCH_UNSUPPORTED.explanation),
            flags=h.detail.get("flags", ""),
        ),
        fix=advice_fix(f, msg("Install a build compiled for this GPU"))
        or cuda_at_least(FIRST_CUDA.get(tuple(int(x) for x in cc.split(".")) if cc != "?" else (0, 0), (0, 0)))  # type: ignore[arg-type]
        or [fix(msg("Install a torch built for this GPU (a newer CUDA variant)"), "nvidia-smi")],
        tables=[Table(["torch said"], [[h.text]])],
    )
