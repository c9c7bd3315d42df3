"""Third-party CUDA extensions (flash-attn, xformers, bitsandbytes, vLLM, apex, torchvision's ops, custom
ops) against each GPU and the installed torch: the kernels their shared objects carry (facts/extensions.py)
and the torch their metadata pins. "no kernel image is available" and `undefined symbol` come from them as
often as from torch."""

from __future__ import annotations

from cudadoctor.advice import install as install_advice
from cudadoctor.advice import shell
from cudadoctor.advice.gpus import gpu_capabilities
from cudadoctor.advice.text import joined
from cudadoctor.facts import Facts
from cudadoctor.facts.extensions import ExtensionFacts, ExtensionLibrary, ExtensionPackage
from cudadoctor.knowledge import wheels
from cudadoctor.knowledge.architectures import arch_name, parse_cc
from cudadoctor.model import Finding, Fix, Severity, Table, msg
from cudadoctor.rules.catalogue import entry, fix, named

SECTION = "CUDA libraries"

NO_KERNELS = entry(
    "CD240",
    "extension-no-kernels-for-gpu",
    Severity.ERROR,
    SECTION,
    "A CUDA extension has no kernels for a GPU here",
    """An installed package ships CUDA code (its shared objects carry a fat binary) with neither a cubin that
    runs on this GPU (same major architecture, equal or lower minor; an `a`-suffixed cubin such as sm_90a
    only on exactly that architecture) nor PTX the driver could JIT-compile for it. Its first kernel launch
    on this GPU fails with "no kernel image is available for execution on the device", however well torch
    itself works. Prebuilt wheels of such packages target a list of architectures and a CUDA and torch
    release; a source build compiles for the architectures in TORCH_CUDA_ARCH_LIST.""",
    beside_torch=True,
)
PTX_ONLY = entry(
    "CD241",
    "extension-runs-on-ptx-only",
    Severity.WARNING,
    SECTION,
    "A CUDA extension runs on a GPU here only through PTX JIT",
    """The package's shared objects carry no cubin for this GPU's architecture, only PTX for an older one.
    The driver JIT-compiles that PTX at the first launch: slow the first time (minutes for a large library),
    kept in the JIT cache (~/.nv/ComputeCache) afterwards, and failing with an "unsupported PTX version"
    error when the PTX is newer than the driver. Kernels tuned for newer architectures (tensor-core paths)
    may be missing altogether.""",
    beside_torch=True,
)
OTHER_TORCH = entry(
    "CD242",
    "extension-built-for-other-torch",
    Severity.ERROR,
    SECTION,
    "A CUDA extension was built for another torch",
    """The package pins one torch release in its Requires-Dist: it was compiled against that release's C++
    API (libc10, libtorch), whose symbols change from release to release. With another torch installed it
    fails at import with `undefined symbol: _ZN3c10…` or an operator that "does not exist". pip installed it
    anyway because something installed torch afterwards (or --no-deps).""",
    beside_torch=True,
)
OTHER_CUDA = entry(
    "CD244",
    "extension-built-for-other-cuda",
    Severity.WARNING,
    SECTION,
    "A CUDA extension was built for another CUDA major version than torch",
    """The package's shared object links the CUDA runtime of another major version (libcudart.so.12 beside
    a CUDA 13 torch, or the reverse). torch's wheels bring only their own CUDA's libraries: unless something
    else installs that runtime (an nvidia-cuda-runtime wheel, a toolkit on the library path), the import
    fails with "libcudart.so.12: cannot open shared object file"; when it is found, two CUDA runtimes share
    the process, and the package was built against another torch build than this one.""",
    beside_torch=True,
)
SEEN = entry(
    "CD243",
    "cuda-extensions",
    Severity.OK,
    SECTION,
    "CUDA extensions installed, with the GPU architectures they carry",
    """Every installed package other than torch and NVIDIA's nvidia-* libraries whose shared objects carry
    CUDA device code, read from the files (never imported): the cubins (SASS, sm_XY; `a` = only that
    architecture, `f` = its family) and PTX (compute_XY) of each, and whether it links torch's C++ library.""",
)


# Installed as torch's pair, from the same index and build (their torch pin is CD222's).
_COMPANIONS = ("torchvision", "torchaudio")
# Rows of the CD243 table: a package with hundreds of CUDA objects must not flood the report.
MAX_ROWS = 40


def _label(name: str, cc: str) -> str:
    return msg("{gpu} (compute capability {cc}, {arch})", gpu=name, cc=cc, arch=arch_name(cc))


def _package(p: ExtensionPackage) -> str:
    return f"{p.name} {p.version}" if p.version else p.name


def _carries(lib: ExtensionLibrary) -> str:
    parts = []
    if lib.sass:
        parts.append(" ".join(lib.sass))
    if lib.ptx:
        parts.append("PTX " + " ".join(lib.ptx))
    return ", ".join(parts) or msg("no kernels")


def _python(f: Facts, e: ExtensionFacts) -> str | None:
    return e.python_executable or (f.torch.python_executable if f.torch is not None else None)


def _windows(f: Facts) -> bool:
    return f.system is not None and f.system.os == "Windows"


def _capabilities_here(f: Facts) -> list[str] | None:
    """Every GPU's compute capability, each once; None when any GPU's is unknown: a rebuild for some of
    them would drop the kernels the others run."""
    if f.driver is not None and f.driver.devices:
        ccs = [d.compute_capability for d in f.driver.devices]
    elif f.torch is not None and f.torch.devices:
        ccs = [d.capability for d in f.torch.devices]
    else:
        return None
    if any(parse_cc(c) is None for c in ccs):
        return None
    return list(dict.fromkeys(c for c in ccs if c))


def rebuild_commands(f: Facts, e: ExtensionFacts, p: ExtensionPackage) -> list[str]:
    """A source build of the package for every GPU here, against the installed torch (no build isolation:
    the build must see it), from no cached wheel, leaving every other package as it is. None without its
    version, its interpreter or a GPU's capability: no install command from unknown inputs."""
    python, ccs = _python(f, e), _capabilities_here(f)
    if not p.version or not python or not ccs:
        return []
    archs = ";".join(sorted(set(ccs), key=lambda c: parse_cc(c) or (0, 0)))
    spec = f"{p.name}=={p.version.split('+')[0]}"
    if install_advice.installer(f) in ("uv", "uv-project"):
        line = f"uv pip install --python {shell.word(python)} --no-build-isolation --no-deps --no-cache --reinstall "
    else:
        py = shell.word(python, lead=True)
        line = f"{py} -m pip install --no-build-isolation --no-deps --no-cache-dir --force-reinstall "
    line += f"--no-binary {shell.word(p.name)} {shell.word(spec)}"  # names from a replayed report stay names
    if _windows(f):
        return [f'$env:TORCH_CUDA_ARCH_LIST="{archs}"', line]
    return [f'TORCH_CUDA_ARCH_LIST="{archs}" {line}']


def _rebuild_fix(f: Facts, e: ExtensionFacts, p: ExtensionPackage) -> list[Fix]:
    commands = rebuild_commands(f, e, p)
    return [fix("Rebuild it from source for this GPU (TORCH_CUDA_ARCH_LIST)", *commands)] if commands else []


def _wheel_advice(p: ExtensionPackage, cc: str) -> str:
    return msg(
        "A {package} wheel built for compute capability {cc} and this torch, from the project's release page "
        "or index, fixes it too, without a build.",
        package=p.name,
        cc=cc,
    )


_RANK = {"none": 0, "ptx": 1, "sm": 2}


def _follows_torch(f: Facts, p: ExtensionPackage, cc: str, worst: str) -> bool:
    """torchvision/torchaudio no better off than torch itself on cc: torch's finding (CD205/CD206/CD217)
    tells that story, and its fix (the build for this GPU) brings the matching pair. Whether it is needs
    torch's arch list (or its official wheel's): unknown, the pair says nothing either."""
    if p.name.lower() not in _COMPANIONS:
        return False
    t = f.torch
    machine = f.system.machine if f.system else None
    flags = (t.arch_flags or wheels.official_arch_flags(t.version, machine)) if t is not None else None
    theirs = wheels.coverage(flags, cc) if flags else None
    return theirs is None or _RANK[worst] >= _RANK[theirs]


def _arch_findings(f: Facts, e: ExtensionFacts, gpus: list[tuple[str, str]]) -> list[Finding]:
    out: list[Finding] = []
    for p in e.packages:
        # a library with neither cubins nor PTX launches nothing (or its lists are unknown: `null` in a report)
        libs = [lib for lib in p.libraries if lib.sass or lib.ptx]
        if any(lib.error for lib in libs):
            continue  # a fatbin read cut short: its lists are partial, so "no kernels" would be a guess
        for name, cc in gpus:
            how = {lib.path: wheels.coverage([*lib.sass, *lib.ptx], cc) for lib in libs}
            if any(v is None for v in how.values()):
                continue  # an unreadable capability: nothing to say
            missing = [lib for lib in libs if how[lib.path] == "none"]
            jit = [lib for lib in libs if how[lib.path] == "ptx"]
            worst = missing or jit
            if not worst or _follows_torch(f, p, cc, "none" if missing else "ptx"):
                continue
            files = joined(
                [msg("{path} carries: {kernels}", path=lib.path, kernels=_carries(lib)) for lib in worst[:4]]
            )
            why_entry = NO_KERNELS if missing else PTX_ONLY
            why = msg(
                "{page} {files}. {advice}", page=msg(why_entry.explanation), files=files, advice=_wheel_advice(p, cc)
            )
            if missing:
                title = msg("{package} has no kernels for {gpu}", package=_package(p), gpu=_label(name, cc))
                out.append(NO_KERNELS.finding(title=title, why=why, fix=_rebuild_fix(f, e, p)))
            else:
                title = msg("{package} runs on {gpu} only through PTX JIT", package=_package(p), gpu=_label(name, cc))
                out.append(PTX_ONLY.finding(title=title, why=why, fix=_rebuild_fix(f, e, p)))
    return out


def _exact_pin(requirement: str | None) -> str | None:
    """ "2.5.1" from "torch==2.5.1"; None for a range, a wildcard or no pin."""
    if (
        not requirement
        or not requirement.startswith("torch==")
        or requirement.startswith("torch===")
        or "," in requirement
        or "*" in requirement
    ):
        return None
    return requirement[len("torch==") :]


def _same_release(pin: str, installed: str) -> bool:
    """PEP 440's ==: `torch==2.5` is 2.5.0, and a pin without a local tag ignores the installed one's."""
    from cudadoctor.knowledge.versions import parse_version

    if "+" in pin:
        return pin == installed
    a, b = parse_version(pin), parse_version(installed.split("+")[0])
    if a is None or b is None:
        return pin == installed.split("+")[0]
    width = max(len(a), len(b))
    return tuple(a) + (0,) * (width - len(a)) == tuple(b) + (0,) * (width - len(b))


def _torch_findings(f: Facts, e: ExtensionFacts) -> list[Finding]:
    installed = f.torch.version if f.torch is not None else None
    if not installed:
        return []
    out = []
    for p in e.packages:
        pin = _exact_pin(p.torch_requirement)
        if pin is None or p.name.lower() in _COMPANIONS or _same_release(pin, installed):
            continue
        linked = [lib.path for lib in p.libraries if lib.links_torch]
        why = (
            msg("{page} {path} links torch's C++ library.", page=msg(OTHER_TORCH.explanation), path=linked[0])
            if linked
            else None
        )
        python = _python(f, e)
        if python is None:
            command = None  # no install command from unknown inputs
        elif install_advice.installer(f) in ("uv", "uv-project"):
            py = shell.word(python)
            name, pin_here = shell.word(p.name), shell.word(f"torch=={installed}")
            command = f"uv pip install --python {py} --upgrade-package {name} {name} {pin_here}"
        else:
            py = shell.word(python, lead=True)
            command = f"{py} -m pip install --upgrade {shell.word(p.name)} {shell.word(f'torch=={installed}')}"
        out.append(
            OTHER_TORCH.finding(
                title=msg(
                    "{package} was built for torch {pin}, but torch {installed} is installed",
                    package=_package(p),
                    pin=pin,
                    installed=installed,
                ),
                why=why,
                fix=[fix("Install the release of it made for the installed torch", command)] if command else [],
            )
        )
    return out


def _cudart_major(lib: ExtensionLibrary) -> int | None:
    """12 from a DT_NEEDED "libcudart.so.12"; None when it links no CUDA runtime (or a static one)."""
    for name in lib.needed:
        if name.startswith("libcudart.so."):
            major = name[len("libcudart.so.") :].split(".")[0]
            return int(major) if major.isdigit() else None
    return None


def _cuda_findings(f: Facts, e: ExtensionFacts) -> list[Finding]:
    t = f.torch
    ours = parse_cc(t.cuda) if t is not None and t.cuda else None  # "13.0" -> (13, 0)
    if t is None or ours is None:
        return []
    out = []
    for p in e.packages:
        other = next(((lib, m) for lib in p.libraries if (m := _cudart_major(lib)) and m != ours[0]), None)
        if other is None:
            continue
        lib, major = other
        commands = rebuild_commands(f, e, p)
        why = msg(
            "{page} {path} links libcudart.so.{major}. A {package} wheel built for CUDA {cuda} and this torch, "
            "from the project's release page or index, fixes it too, without a build.",
            page=msg(OTHER_CUDA.explanation),
            path=lib.path,
            major=major,
            package=p.name,
            cuda=ours[0],
        )
        out.append(
            OTHER_CUDA.finding(
                title=msg(
                    "{package} was built for CUDA {major}, {torch} for CUDA {cuda}",
                    package=_package(p),
                    major=major,
                    torch=named("torch", t.version),
                    cuda=t.cuda,
                ),
                why=why,
                fix=[fix("Rebuild it from source against this torch and its CUDA", *commands)] if commands else [],
            )
        )
    return out


def _arch_number(arch: str) -> tuple[int, str]:
    digits = "".join(ch for ch in arch.split("_", 1)[-1] if ch.isdigit())
    return (int(digits) if digits else 0, arch)


def _span(archs: list[str]) -> str:
    """A long arch list as its ends (the JSON keeps every one): the row stays readable at 80 columns."""
    archs = sorted(set(archs), key=_arch_number)
    if not archs:
        return "-"
    return " ".join(archs) if len(archs) <= 2 else f"{archs[0]}…{archs[-1]}"


def _runs(libs: list[ExtensionLibrary], cc: str) -> str:
    """What runs on compute capability cc, for the library that fares worst: the cubin ("sm_90"), the PTX
    the driver would JIT-compile ("compute_80"), "-" for nothing, "?" when the capability reads as none."""
    worst: tuple[int, str] | None = None
    for lib in libs:
        cubins = [a for a in lib.sass if wheels.coverage([a], cc) == "sm"]
        ptx = [a for a in lib.ptx if wheels.coverage([a], cc) == "ptx"]
        best = max(cubins, key=_arch_number) if cubins else max(ptx, key=_arch_number) if ptx else "-"
        rank = 2 if cubins else 1 if ptx else 0
        if worst is None or rank < worst[0]:
            worst = (rank, best)
    return worst[1] if worst else "?"


def _seen(e: ExtensionFacts, gpus: list[tuple[str, str]]) -> Finding:
    """One row a package: its libraries' cubins and PTX, what of it runs on each GPU, whether it links torch."""
    rows = []
    ccs = list(dict.fromkeys(cc for _, cc in gpus))
    for p in e.packages:
        libs = [lib for lib in p.libraries if lib.sass or lib.ptx] or p.libraries
        links = [lib.links_torch for lib in libs]
        linked = "yes" if any(links) else "no" if all(v is False for v in links) else "?"
        # one GPU model: what runs on it; several: each capability named
        here = ", ".join(f"{cc}: {_runs(libs, cc)}" if len(ccs) > 1 else _runs(libs, cc) for cc in ccs)
        sass = _span([a for lib in libs for a in lib.sass])
        ptx = _span([a for lib in libs for a in lib.ptx])
        rows.append([p.name, str(len(libs)), sass, ptx, here, linked])  # the versions are in the title
    if len(rows) > MAX_ROWS:
        rows = [*rows[: MAX_ROWS - 1], ["…", f"{len(rows) - MAX_ROWS + 1} more", "", "", "", ""]]
    names = ", ".join(_package(p) for p in e.packages[:6]) + (", …" if len(e.packages) > 6 else "")
    if ccs:
        table = Table(["Package!", "Libs>", "Cubins", "PTX", "On GPU", "Links torch?"], rows)
    else:  # no GPU known here: no column of what would run on one
        table = Table(["Package!", "Libs>", "Cubins", "PTX", "Links torch?"], [r[:4] + r[5:] for r in rows])
    return SEEN.finding(title=msg("CUDA extensions: {packages}", packages=names), tables=[table])


def evaluate(f: Facts) -> list[Finding]:
    e = f.extensions
    if e is None or not e.packages:
        return []
    gpus = [(name, cc) for name, cc in dict.fromkeys(gpu_capabilities(f)) if parse_cc(cc)]
    return [*_arch_findings(f, e, gpus), *_torch_findings(f, e), *_cuda_findings(f, e), _seen(e, gpus)]
