"""The CUDA libraries torch loaded, classified; the nvidia-* wheels against torch's pins; why an import
failed. Runs in the doctor's process on what the torch child reported (raw paths, sys.path, the
error text) and on the target's dist-info, read with importlib.metadata (no pip, no torch import).

Sources (shared cuda-facts §5, §10): the nvidia-*-cu12/-cu13 wheels put their libraries under
site-packages/nvidia/<name>/lib; torch's Linux wheels pin them in Requires-Dist; a copy found first
through LD_LIBRARY_PATH gives `undefined symbol: __nvJitLinkComplete_12_4` (pytorch#134929, #131312),
`ncclCommRegister` (pytorch#119932), `cuptiActivityEnableDriverApi` (pytorch#157381).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata

from cudadoctor.facts.libraries import (
    CompanionCheck,
    ImportFailure,
    LibraryFacts,
    LoadedLibrary,
    PinCheck,
)
from cudadoctor.facts.torch import TorchFacts

# family -> file-name prefixes (Linux sonames, Windows DLL names); the longest match wins.
FAMILIES: dict[str, tuple[str, ...]] = {
    "cudart": ("libcudart.", "cudart64_"),
    "cublas": ("libcublas.", "libcublasLt.", "cublas64_", "cublasLt64_"),
    "cudnn": ("libcudnn", "cudnn64_", "cudnn_"),
    "cufft": ("libcufft.", "libcufftw.", "cufft64_", "cufftw64_"),
    "curand": ("libcurand.", "curand64_"),
    "cusolver": ("libcusolver.", "libcusolverMg.", "cusolver64_", "cusolverMg64_"),
    "cusparse": ("libcusparse.", "libcusparseLt.", "cusparse64_", "cusparseLt"),
    "nccl": ("libnccl.",),
    "nvjitlink": ("libnvJitLink.", "nvJitLink_"),
    "nvrtc": ("libnvrtc.", "libnvrtc-builtins.", "nvrtc64_", "nvrtc-builtins64_"),
    "cupti": ("libcupti.", "cupti64_"),
    "nvtx": ("libnvToolsExt.", "nvToolsExt64_"),
}

# The family a symbol belongs to, by its prefix (the CUDA libraries' naming conventions).
SYMBOL_FAMILIES: tuple[tuple[str, str], ...] = (
    ("__nvJitLink", "nvjitlink"),
    ("nvJitLink", "nvjitlink"),
    ("nccl", "nccl"),
    ("cupti", "cupti"),
    ("cudnn", "cudnn"),
    ("cublasLt", "cublas"),
    ("cublas", "cublas"),
    ("cusparseLt", "cusparse"),
    ("cusparse", "cusparse"),
    ("cusolver", "cusolver"),
    ("cufft", "cufft"),
    ("curand", "curand"),
    ("nvrtc", "nvrtc"),
    ("nvtx", "nvtx"),
    ("cuda", "cudart"),
)

_SYS_DIRS = ("/usr/lib", "/lib", "/usr/lib64", "/lib64", "/usr/local/lib")


def family_of(name: str) -> str | None:
    """The library family of a file name or path: "libcublasLt.so.12" -> "cublas"."""
    base = re.split(r"[\\/]", name)[-1].lower()  # Windows DLL names are case-insensitive
    best: tuple[int, str] | None = None
    for family, prefixes in FAMILIES.items():
        for p in prefixes:
            if base.startswith(p.lower()) and (best is None or len(p) > best[0]):
                best = (len(p), family)
    return best[1] if best else None


def family_of_symbol(symbol: str) -> str | None:
    for prefix, family in SYMBOL_FAMILIES:
        if symbol.startswith(prefix):
            return family
    return None


def version_from_name(path: str) -> str | None:
    """ "libcudnn.so.9.10.2" -> "9.10.2"; "libcudart.so.12" -> "12"; the resolved file when it is a link."""
    candidates = [path]
    try:
        real = os.path.realpath(path)
        if real != path:
            candidates.insert(0, real)
    except OSError:
        pass
    best = None
    for c in candidates:
        m = re.search(r"\.so\.(\d+(?:\.\d+)*)$", os.path.basename(c))
        if m and (best is None or m.group(1).count(".") > best.count(".")):
            best = m.group(1)
    return best


def _under(path: str, directory: str) -> bool:
    d = directory.rstrip("/\\")
    return bool(d) and (path == d or path.startswith((d + "/", d + "\\")))


def _toolkit_root(path: str) -> str | None:
    m = re.match(r"^(.*?/cuda(?:-\d+(?:\.\d+)?)?)/(?:targets/[^/]+/)?lib(?:64)?/", path)
    return m.group(1) if m and not re.search(r"/(site|dist)-packages/", path) else None


def _conda_prefix(path: str) -> str | None:
    m = re.match(r"^(.*?/(?:envs/[^/]+|(?:mini|ana)conda\d?|miniforge\d?|mambaforge|\.pixi/envs/[^/]+))/lib/", path)
    return m.group(1) if m else None


def classify(
    path: str,
    *,
    site_dirs: Sequence[str] = (),
    torch_dir: str | None = None,
    prefix: str | None = None,
    ld_library_path: Sequence[str] = (),
    owners: Mapping[str, tuple[str, str]] | None = None,
) -> LoadedLibrary | None:
    """Where one loaded library file came from; None when it is not a CUDA library torch uses."""
    family = family_of(path)
    if family is None:
        return None
    owner = (owners or {}).get(os.path.normcase(path))
    lib = LoadedLibrary(family=family, path=path, origin="other", version=version_from_name(path))
    if owner:
        lib.package, pkg_version = owner
        lib.version = lib.version if lib.version and lib.version.count(".") >= 2 else pkg_version
    if torch_dir and _under(path, torch_dir):
        lib.origin = "torch"
    elif owner or any(_under(path, os.path.join(s, "nvidia")) for s in site_dirs):
        lib.origin = "wheel"
    elif prefix and _under(path, prefix):
        lib.origin = "env"
    else:
        entry = next((d for d in ld_library_path if d and _under(path, d)), None)
        if entry is not None:
            lib.origin, lib.via = "ld_library_path", entry
        elif root := _toolkit_root(path):
            lib.origin, lib.via = "cuda_toolkit", root
        elif root := _conda_prefix(path):
            lib.origin, lib.via = "conda", root
        elif any(_under(path, d) for d in _SYS_DIRS):
            lib.origin = "system"
    return lib


# --- dist-info -------------------------------------------------------------------------------------


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_WANTED = ("torch", "torchvision", "torchaudio", "cuda-toolkit")


def distributions(site_dirs: Sequence[str]) -> dict[str, metadata.Distribution]:
    """The distributions the library checks read (torch, its companions, nvidia-*, cuda-toolkit) in
    these directories, by canonical name; the first directory wins, as on sys.path. Names come from the
    dist-info directory names, so the metadata of nothing else is parsed."""
    import pathlib

    out: dict[str, metadata.Distribution] = {}
    for d in site_dirs:
        try:
            entries = sorted(os.listdir(d)) if d else []
        except OSError:
            continue
        for entry in entries:
            if not entry.endswith(".dist-info"):
                continue
            name = canonical(entry[: -len(".dist-info")].split("-")[0])
            if not (name.startswith("nvidia-") or name in _WANTED) or name in out:
                continue
            dist = metadata.PathDistribution(pathlib.Path(d) / entry)
            real = dist.metadata.get("Name") if dist.metadata else None
            if real and canonical(real) not in out:
                out[canonical(real)] = dist
    return out


def owners_of_files(dists: Mapping[str, metadata.Distribution]) -> dict[str, tuple[str, str]]:
    """Absolute path of every shared library in an nvidia-* distribution -> (name, version), from RECORD."""
    out: dict[str, tuple[str, str]] = {}
    for name, dist in dists.items():
        if not name.startswith("nvidia-"):
            continue
        for f in dist.files or ():
            s = str(f)
            if ".so" in s or s.endswith(".dll"):
                try:
                    p = os.path.normcase(os.path.abspath(str(dist.locate_file(f))))
                except Exception:
                    continue
                out[p] = (name, dist.version)
    return out


_MARKER_TOKEN = re.compile(
    r"""\s*(?:(?P<open>\()|(?P<close>\))|(?P<bool>and|or)\b|"""
    r"""(?P<var>\w+)\s*(?P<op>==|!=|<=|>=|<|>|not\s+in|in)\s*(?P<q>['"])(?P<value>[^'"]*)(?P=q))"""
)


def marker_applies(marker: str, env: Mapping[str, str], extras: Iterable[str] = ()) -> bool:
    """Whether a PEP 508 marker of the shapes torch's and cuda-toolkit's Requires-Dist use holds here:
    comparisons of platform_system, platform_machine, sys_platform, python_version and `extra` (active only
    for the extras asked for), joined by `and`/`or` with parentheses (`(sys_platform == 'linux' or
    sys_platform == 'win32') and extra == 'all'`). A variable we do not know, or a shape we cannot read,
    counts as true: an unknown never drops a pin."""
    tokens: list[tuple[str, tuple[str, str, str] | None]] = []
    pos, text = 0, marker.strip()
    while pos < len(text):
        m = _MARKER_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return True
        pos = m.end()
        if m.group("open"):
            tokens.append(("(", None))
        elif m.group("close"):
            tokens.append((")", None))
        elif m.group("bool"):
            tokens.append((m.group("bool"), None))
        else:
            op = " ".join(m.group("op").split())
            tokens.append(("cmp", (m.group("var"), op, m.group("value"))))
        if text[pos:].strip() == "":
            break
    if not tokens:
        return True
    wanted = {canonical(e) for e in extras}

    def compare(var: str, op: str, value: str) -> bool:
        if var == "extra":
            active = canonical(value) in wanted
            return active if op == "==" else not active
        have = env.get(var)
        if have is None:
            return True
        if var == "python_version":
            c = _compare(have, value)
            return {"==": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}.get(op, True)
        if op == "==":
            return have == value
        if op == "!=":
            return have != value
        if op == "in":
            return have in value
        if op == "not in":
            return have not in value
        return True

    i = 0

    def expr() -> bool:  # expr := conj ("or" conj)*
        nonlocal i
        result = conj()
        while i < len(tokens) and tokens[i][0] == "or":
            i += 1
            result = conj() or result
        return result

    def conj() -> bool:  # conj := atom ("and" atom)*
        nonlocal i
        result = atom()
        while i < len(tokens) and tokens[i][0] == "and":
            i += 1
            result = atom() and result
        return result

    def atom() -> bool:
        nonlocal i
        if i >= len(tokens):
            raise ValueError("marker ends early")
        kind, cmp = tokens[i]
        i += 1
        if kind == "(":
            result = expr()
            if i >= len(tokens) or tokens[i][0] != ")":
                raise ValueError("unbalanced parenthesis")
            i += 1
            return result
        if kind == "cmp" and cmp is not None:
            return compare(*cmp)
        raise ValueError(f"unexpected {kind}")

    try:
        result = expr()
    except ValueError:
        return True
    return result if i == len(tokens) else True


def _nums(v: str) -> tuple[int, ...]:
    m = re.match(r"^\s*v?(\d+(?:\.\d+)*)", v)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def _compare(a: str, b: str) -> int:
    x, y = _nums(a), _nums(b)
    width = max(len(x), len(y))
    x, y = x + (0,) * (width - len(x)), y + (0,) * (width - len(y))
    return (x > y) - (x < y)


def satisfies(version: str, spec: str) -> bool:
    """ "9.10.2.21" against "==9.10.2.21" or ">=12.6,<13"; a trailing `.*` and local tags handled."""
    for part in (p.strip() for p in spec.split(",")):
        m = re.match(r"^(===|==|!=|>=|<=|~=|>|<)\s*(.+)$", part)
        if not m:
            continue
        op, want = m.groups()
        if want.endswith(".*"):
            prefix = _nums(want[:-2])
            same = _nums(version)[: len(prefix)] == prefix
            if (op == "==" and not same) or (op == "!=" and same):
                return False
            continue
        c = _compare(version.split("+")[0], want.split("+")[0])
        if op in ("==", "===") and c != 0:
            return False
        if (op == "!=" and c == 0) or (op == ">=" and c < 0) or (op == "<=" and c > 0):
            return False
        if (op == ">" and c <= 0) or (op == "<" and c >= 0):
            return False
        if op == "~=" and (c < 0 or _nums(version)[: len(_nums(want)) - 1] != _nums(want)[:-1]):
            return False
    return True


_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*\(?\s*([^;()]*)\)?\s*(?:;(.*))?$")


def parse_requirement(line: str) -> tuple[str, str, str] | None:
    """ "nvidia-cudnn-cu12==9.10.2.21; platform_system == 'Linux'" -> (name, spec, marker)."""
    m = _REQ.match(line)
    if not m:
        return None
    return canonical(m.group(1)), m.group(3).strip().replace(" ", ""), (m.group(4) or "").strip()


def requirement_extras(line: str) -> list[str]:
    """ "cuda-toolkit[cublas,cudnn]==13.0.2" -> ["cublas", "cudnn"]."""
    m = _REQ.match(line)
    return [e.strip() for e in (m.group(2) or "").split(",") if e.strip()] if m else []


def marker_env(python_version: str | None, system: str | None = None, machine: str | None = None) -> dict[str, str]:
    import platform

    env = {
        "platform_system": system or platform.system(),
        "platform_machine": machine or platform.machine(),
        "sys_platform": sys.platform,
    }
    if python_version:
        env["python_version"] = ".".join(python_version.split(".")[:2])
    return env


# torch's cu13 wheels (2.11+) pin `cuda-toolkit[cublas,cudnn,…]==13.0.2`, whose extras pin the nvidia-*
# libraries (cuda-facts §4a): its pins are followed one level down.
META_PACKAGES = ("cuda-toolkit",)


def pin_checks(
    requires: Iterable[str],
    installed: Mapping[str, str],
    env: Mapping[str, str],
    requires_of: Mapping[str, list[str]] | None = None,
    extras: Iterable[str] = (),
    depth: int = 0,
) -> list[PinCheck]:
    """torch's nvidia-* requirements that apply here (and those of the CUDA meta-packages it pins), each
    against the installed version."""
    out: list[PinCheck] = []
    seen: set[tuple[str, str]] = set()
    for line in requires:
        req = parse_requirement(line)
        if req is None:
            continue
        name, spec, marker = req
        wanted = name.startswith("nvidia-") or name in META_PACKAGES
        if not wanted or not spec or not marker_applies(marker, env, extras) or (name, spec) in seen:
            continue
        seen.add((name, spec))
        have = installed.get(name)
        out.append(PinCheck(name, spec, have, have is not None and satisfies(have, spec)))
        sub = (requires_of or {}).get(name)
        if name in META_PACKAGES and sub is not None and depth == 0:
            out += pin_checks(sub, installed, env, requires_of, requirement_extras(line), depth + 1)
    return out


# --- import failures -------------------------------------------------------------------------------

_UNDEFINED = re.compile(r"(?P<lib>[^\s:]+\.so[.\d]*): undefined symbol: (?P<sym>[A-Za-z0-9_@.]+)")
_UNDEFINED_BARE = re.compile(r"undefined symbol: (?P<sym>[A-Za-z0-9_@.]+)")
_MISSING = re.compile(r"(?P<lib>[\w.+-]+\.so[.\d]*): cannot open shared object file")
_WIN = re.compile(r"\[WinError (?P<code>\d+)\][^\"]*?(?:\"(?P<path>[^\"]+\.dll)\"|(?P<path2>[\w:\\/. -]+\.dll))", re.I)


def analyse_import_error(error: str | None, loaded: Sequence[LoadedLibrary] = ()) -> ImportFailure | None:
    """Which library, which symbol, and which file was loaded instead, from the import error text."""
    if not error:
        return None
    by_family = {lib.family: lib for lib in loaded}
    m = _UNDEFINED.search(error) or _UNDEFINED_BARE.search(error)
    if m:
        symbol = m.group("sym")
        lib = m.groupdict().get("lib")
        family = family_of_symbol(symbol.lstrip("_")) or family_of_symbol(symbol)
        # `undefined symbol: X, version libnvJitLink.so.12` names the library that should define it
        v = re.search(r"version (lib[\w]+)\.so", error)
        if v and family_of(v.group(1) + ".so"):
            family = family_of(v.group(1) + ".so")
        failure = ImportFailure("undefined_symbol", library=lib and os.path.basename(lib), symbol=symbol, family=family)
    elif m := _MISSING.search(error):
        lib = m.group("lib")
        failure = ImportFailure("missing_library", library=lib, family=family_of(lib))
    elif m := _WIN.search(error):
        path = m.group("path") or m.group("path2") or ""
        name = re.split(r"[\\/]", path.strip())[-1]
        failure = ImportFailure("dll_load", library=name or None, family=family_of(name) if name else None)
    elif "DLL load failed" in error:
        failure = ImportFailure("dll_load")
    else:
        return ImportFailure("other")
    other = by_family.get(failure.family or "")
    if other is not None:
        failure.loaded_instead, failure.loaded_origin = other.path, other.origin
    return failure


# --- everything together ---------------------------------------------------------------------------


def ld_library_entries(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [os.path.normpath(p) for p in value.split(os.pathsep) if p]


def toolkit_version_of(directory: str) -> str | None:
    """The CUDA version of a toolkit lib directory: from its path (cuda-12.1) or its libcudart file."""
    m = re.search(r"cuda-(\d+\.\d+)", directory)
    if m:
        return m.group(1)
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    versions = [v for n in names if n.startswith("libcudart.so.") and (v := version_from_name(n)) and "." in v]
    return max(versions, key=_nums) if versions else None


def library_facts(
    raw_loaded: Mapping[str, list[str]] | None,
    *,
    site_dirs: Sequence[str],
    torch_dir: str | None,
    prefix: str | None,
    ld_library_path: str | None,
    python_version: str | None,
    import_error: str | None = None,
    user_site: str | None = None,
    companions: Mapping[str, str | None] | None = None,
) -> LibraryFacts:
    """The library facts of one target interpreter, from what its torch child reported."""
    from cudadoctor.knowledge import companions as pairs

    facts = LibraryFacts()
    ld = ld_library_entries(ld_library_path)
    facts.ld_library_path = ld
    try:
        dists = distributions(site_dirs)
    except Exception as exc:  # a broken dist-info must not take the probe down
        facts.errors.append(f"reading dist-info: {type(exc).__name__}: {exc}")
        dists = {}
    owners = owners_of_files(dists) if dists else {}
    facts.nvidia_installed = {n: d.version for n, d in sorted(dists.items()) if n.startswith("nvidia-")}
    versions = {**facts.nvidia_installed, **{n: dists[n].version for n in META_PACKAGES if n in dists}}
    meta = {n: list(dists[n].requires or []) for n in META_PACKAGES if n in dists}
    if raw_loaded is not None:
        seen: set[str] = set()
        loaded = []
        for paths in raw_loaded.values():
            for p in paths:
                if p in seen:
                    continue
                seen.add(p)
                lib = classify(
                    p, site_dirs=site_dirs, torch_dir=torch_dir, prefix=prefix, ld_library_path=ld or (), owners=owners
                )
                if lib is not None:
                    loaded.append(lib)
        facts.loaded = sorted(loaded, key=lambda x: (list(FAMILIES).index(x.family), x.path))
    torch_dist = dists.get("torch")
    if torch_dist is not None:
        facts.pins = pin_checks(torch_dist.requires or [], versions, marker_env(python_version), meta)
    # every torch package visible on sys.path (site dirs in order), and a copy in the user site
    installs = [
        os.path.join(d, "torch") for d in site_dirs if d and os.path.isfile(os.path.join(d, "torch", "__init__.py"))
    ]
    facts.torch_installs = installs
    if user_site and any(_under(i, user_site) for i in installs):
        facts.user_site_torch = next(i for i in installs if _under(i, user_site))
    if ld:
        facts.stale_toolkits = [
            f"{d}={v}" for d in ld if _toolkit_root(d.rstrip("/") + "/") and (v := toolkit_version_of(d))
        ]
    facts.import_failure = analyse_import_error(import_error, facts.loaded or ())
    if torch_dist is not None:
        checks = []
        for name in ("torchvision", "torchaudio"):
            dist = dists.get(name)
            if dist is None:
                continue
            pin = None
            for line in dist.requires or []:
                req = parse_requirement(line)
                if req and req[0] == "torch" and not req[2]:
                    pin = req[1] or None
            checks.append(pairs.check(name, dist.version, torch_dist.version, pin))
        facts.companions = checks
    elif companions:
        facts.companions = [
            CompanionCheck(name, version) for name, version in companions.items() if version is not None
        ]
    return facts


def read_jetson_release(root: str = "/") -> str | None:
    """The first line of /etc/nv_tegra_release (JetPack's L4T release), None when absent."""
    try:
        with open(os.path.join(root, "etc", "nv_tegra_release"), encoding="utf-8", errors="replace") as fh:
            return fh.readline(300).strip().lstrip("# ") or None
    except OSError:
        return None


def enrich(t: TorchFacts, root: str = "/") -> TorchFacts:
    """Fill `t.libraries` from the raw facts the torch child reported (runs in the doctor's process)."""
    if t.site_dirs is None and t.prefix is None:
        return t  # an old child, or one that said nothing: unknown stays unknown
    try:
        _enrich(t, root)
    except Exception as exc:  # the torch facts must survive whatever an odd environment holds
        t.libraries = LibraryFacts(errors=[f"{type(exc).__name__}: {exc}"])
    return t


def _enrich(t: TorchFacts, root: str) -> None:
    import platform

    from cudadoctor.backends.installer import detect

    lf = library_facts(
        t.loaded_libraries,
        site_dirs=t.site_dirs or [],
        torch_dir=t.path,
        prefix=t.prefix,
        ld_library_path=t.ld_library_path,
        python_version=t.python_version,
        import_error=t.import_error,
        user_site=t.user_site,
    )
    try:
        lf.manager = detect(t.prefix, t.torch_installer, t.stdlib)
    except Exception as exc:
        lf.errors.append(f"environment manager: {type(exc).__name__}: {exc}")
    if sys.platform.startswith("linux") and platform.machine() in ("aarch64", "arm64"):
        lf.jetson = read_jetson_release(root)
    t.libraries = lf
