"""torch.compile (CD226-CD228): whether inductor compiles a tiny function on the CPU and the GPU in this
environment, and what it lacks when it does not (a C++ compiler, the Python headers, a writable cache,
Triton). A --full check of its own section, not a library."""

from __future__ import annotations

from cudadoctor.advice import install as install_advice
from cudadoctor.advice import shell
from cudadoctor.advice.text import joined
from cudadoctor.facts import Facts
from cudadoctor.facts.libraries import CompileFacts
from cudadoctor.model import Finding, Fix, Severity, Table, msg
from cudadoctor.rules.catalogue import entry, fix

COMPILE_SECTION = "torch.compile"  # a --full check of its own, not a library

COMPILE_OK = entry(
    "CD226",
    "torch-compile-ok",
    Severity.OK,
    COMPILE_SECTION,
    "torch.compile works",
    """A tiny function was compiled with torch.compile (inductor) and gave the eager result.""",
)
COMPILE_FAILED = entry(
    "CD227",
    "torch-compile-fails",
    Severity.WARNING,
    COMPILE_SECTION,
    "torch.compile fails in this environment",
    """torch.compile's inductor backend generates C++ (CPU) or Triton (GPU) code and compiles it at run
    time: it needs a C++ compiler (g++/clang++, or MSVC `cl` on Windows: "Compiler: cl is not found",
    pytorch#157458), the Python headers, a writable cache directory, and Triton for GPU code. Eager
    PyTorch is unaffected.""",
)
COMPILE_INCOMPLETE = entry(
    "CD228",
    "torch-compile-probe-incomplete",
    Severity.WARNING,
    COMPILE_SECTION,
    "The torch.compile check did not finish",
    """Compiling a tiny function took longer than the probe's time bound, or the child process died. A
    cold inductor cache makes the first compile slow (tens of seconds on a small machine); a hang usually
    means a compiler that waits on something.""",
)


def evaluate(f: Facts) -> list[Finding]:
    c = getattr(f, "compile", None)
    return _compile(f, c) if c is not None else []


def _compile(f: Facts, c: CompileFacts) -> list[Finding]:
    if c.timed_out or (c.child_error and c.cpu_ok is None):
        # a GPU that runs kernels is compiled for alone (backends/children/compile_child.py); before, after the CPU
        t = f.torch
        gpu = c.cpu_ok or (c.cpu_ok is None and t is not None and t.is_available is True and not t.kernel_error)
        stage = (
            (msg("compiling on the GPU") if gpu else msg("compiling on the CPU"))
            if c.torch_version
            else msg("starting")
        )
        if c.child_error:
            title = msg(
                "The torch.compile check timed out while {stage}: {error}"
                if c.timed_out
                else "The torch.compile check failed while {stage}: {error}",
                stage=stage,
                error=c.child_error,
            )
        else:
            title = msg(
                "The torch.compile check timed out while {stage}"
                if c.timed_out
                else "The torch.compile check failed while {stage}",
                stage=stage,
            )
        return [
            COMPILE_INCOMPLETE.finding(
                title=title,
                fix=[
                    fix(
                        "Run it by hand and watch where it stops",
                        f"{shell.word(c.python_executable, lead=True)} -c "
                        '"import torch; print(torch.compile(lambda x: x.sin() * 2)(torch.ones(4)))"',
                    )
                ],
            )
        ]
    if c.cpu_ok is None and c.gpu_ok is None:
        return []
    failures = [
        (where, err)
        for where, ok, err in (("CPU", c.cpu_ok, c.cpu_error), ("GPU", c.gpu_ok, c.gpu_error))
        if ok is False
    ]
    if not failures:
        times = (("CPU", c.cpu_seconds), ("GPU", c.gpu_seconds))
        took = ", ".join(f"{w} {round(s, 1):g} s" for w, s in times if s is not None)
        return [COMPILE_OK.finding(title=msg("torch.compile works ({times})", times=took))]
    windows = f.system is not None and f.system.os == "Windows"
    missing, fixes = _compile_causes(f, c, " ".join(e or "" for _, e in failures), windows)
    where = joined([w for w, _ in failures], " and ", names=True)
    title = msg(
        "torch.compile fails on the {devices}: {cause}", devices=where, cause=missing[0] if missing else failures[0][1]
    )
    return [
        COMPILE_FAILED.finding(
            title=title,
            fix=fixes,
            tables=[Table(["Device", "Error"], [[w, e or "?"] for w, e in failures])],
        )
    ]


def _compile_causes(f: Facts, c: CompileFacts, errors: str, windows: bool) -> tuple[list[str], list[Fix]]:
    """What inductor lacks (each a message, for the title) and the fixes for it."""
    py = c.python_executable
    missing: list[str] = []
    fixes: list[Fix] = []
    text = errors.lower()
    if c.compiler is None or "invalidcxxcompiler" in text or "cl is not found" in text:
        name = c.compiler_name or ("cl" if windows else "g++")
        missing.append(msg("no C++ compiler ({name})", name=name))
        if windows:
            fixes.append(compiler_fix(f, windows=True))
        elif name not in ("g++", "clang++", "c++"):
            fixes.append(
                fix(
                    msg(
                        "CXX names {name}, which inductor cannot run: unset it (or point it at an installed compiler)",
                        name=name,
                    ),
                    "unset CXX",
                )
            )
        else:
            fixes.append(compiler_fix(f))
    if c.python_headers is False or "python.h" in text:
        missing.append(msg("no Python headers (Python.h not in {path})", path=c.python_include))
        headers = _headers_install(f)
        if headers:
            fixes.append(fix("Install the Python development headers", *headers))
        else:  # no package name known for this system: say what to install, not a comment to paste
            fixes.append(
                fix(
                    msg(
                        "Install the Python development headers (Python.h) for {python} with the system's installer",
                        python=py,
                    )
                )
            )
    if c.cache_writable is False or "permission denied" in text or "read-only file system" in text:
        missing.append(msg("cache directory not writable ({path})", path=c.cache_dir))
        fixes.append(
            fix(
                "Point inductor at a writable cache directory",
                "export TORCHINDUCTOR_CACHE_DIR=$HOME/.cache/torchinductor",
            )
        )
    if c.gpu_ok is False and (c.triton is None or "triton" in text):
        missing.append(
            msg("no working Triton ({error})", error=c.triton_error) if c.triton_error else msg("no working Triton")
        )
        pkg = "triton-windows" if windows else "triton"  # Windows: the community build (no official wheels)
        fixes.append(fix("Install Triton (GPU code generation)", install_advice.package_install(f, [pkg], python=py)))
    if not fixes:
        fixes.append(
            fix(
                "See the full error",
                f"TORCHDYNAMO_VERBOSE=1 {shell.word(py)} -c "
                '"import torch; torch.compile(lambda x: x.sin())(torch.ones(4))"',
            )
        )
    return missing, fixes


def compiler_fix(f: Facts, windows: bool | None = None) -> Fix:
    """Installing a C++ compiler inductor can run, for this OS (`windows`: as the caller knows it; else from
    the facts). Check and triage share it: an apt line on Windows would fail when pasted."""
    if windows is None:
        windows = f.system is not None and f.system.os == "Windows"
    if windows:
        return fix(
            "Install MSVC (Visual Studio Build Tools, C++ workload), then run Python from a "
            '"x64 Native Tools" prompt so `cl` is on PATH',
            "winget install --id Microsoft.VisualStudio.2022.BuildTools --override "
            '"--add Microsoft.VisualStudio.Workload.VCTools --includeRecommended --passive"',
        )
    return fix("Install a C++ compiler", *_compiler_install(f))


def _compiler_install(f: Facts) -> list[str]:
    os_id = f.system.os_id if f.system else None
    if f.system is not None and f.system.os == "Darwin":
        return ["xcode-select --install"]
    return {
        "ubuntu": ["sudo apt install -y g++"],
        "debian": ["sudo apt install -y g++"],
        "fedora": ["sudo dnf install -y gcc-c++"],
        "rhel": ["sudo dnf install -y gcc-c++"],
        "rocky": ["sudo dnf install -y gcc-c++"],
        "almalinux": ["sudo dnf install -y gcc-c++"],
        "centos": ["sudo yum install -y gcc-c++"],
        "arch": ["sudo pacman -S gcc"],
        "opensuse-leap": ["sudo zypper install gcc-c++"],
        "alpine": ["sudo apk add g++"],
    }.get(os_id or "", ["conda install -c conda-forge gxx  # or your distribution's g++ package"])


def _headers_install(f: Facts) -> list[str]:
    os_id = f.system.os_id if f.system else None
    ver = ".".join((f.torch.python_version or "").split(".")[:2]) if f.torch and f.torch.python_version else ""
    if os_id in ("ubuntu", "debian"):
        return [f"sudo apt install -y python{ver}-dev" if ver else "sudo apt install -y python3-dev"]
    if os_id in ("fedora", "rhel", "rocky", "almalinux", "centos"):
        return [f"sudo dnf install -y python{ver}-devel" if ver else "sudo dnf install -y python3-devel"]
    if os_id in ("opensuse-leap", "opensuse-tumbleweed", "sles"):
        return [
            f"sudo zypper install -y python{ver.replace('.', '')}-devel"
            if ver
            else "sudo zypper install -y python3-devel"
        ]
    if os_id == "alpine":
        return ["sudo apk add python3-dev"]
    return []
