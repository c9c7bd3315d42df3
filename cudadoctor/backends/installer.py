"""What manages the target environment: pip, uv, conda/mamba, pixi or poetry. Reads files only.

Markers (shared cuda-facts §10; formats read in the tools' sources and docs):
- uv writes `uv = <version>` into the pyvenv.cfg of the venvs it creates; a uv project has `uv.lock` or a
  `[tool.uv]` table beside its `.venv`. uv and poetry write their name into each dist-info INSTALLER.
- conda: `<prefix>/conda-meta/` with one JSON record per package (`name`, `version`, `build`, `channel`)
  and `conda-meta/history` (`==> date <==`, `# cmd: …`, `+channel::name-version-build`). A leftover
  `cpuonly` or `pytorch-mutex=*=cpu` keeps the CPU build (pytorch#92273, #39619); the `pytorch` channel
  is deprecated after 2.5 (pytorch#138506).
- pixi: environments live in `<project>/.pixi/envs/<name>` (conda prefixes) beside `pixi.toml` or a
  `pyproject.toml` with `[tool.pixi…]` (pixi docs, "Environment").
- poetry: virtualenvs under `…/pypoetry/virtualenvs/` or a project `.venv` beside `poetry.lock` /
  `[tool.poetry]`.
"""

from __future__ import annotations

import json
import os
import re

from cudadoctor.facts.libraries import EnvironmentManager

_LIMIT = 4 << 20  # conda-meta/history of a long-lived env can be large; read at most this much


def _read(path: str, limit: int = 1 << 20) -> str | None:
    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None


def pyvenv_cfg(prefix: str) -> dict[str, str] | None:
    text = _read(os.path.join(prefix, "pyvenv.cfg"), 64 << 10)
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def _project_of(prefix: str) -> str | None:
    """The project a `.venv` belongs to: its parent directory."""
    return os.path.dirname(prefix.rstrip("/\\")) if os.path.basename(prefix.rstrip("/\\")) == ".venv" else None


def _has_table(pyproject: str, table: str) -> bool:
    text = _read(pyproject, 1 << 20)
    return bool(text) and re.search(rf"^\s*\[+\s*{re.escape(table)}[\].]", text, re.M) is not None


def conda_packages(prefix: str) -> dict[str, dict]:
    """conda-meta/*.json records by package name (name, version, build, channel)."""
    meta = os.path.join(prefix, "conda-meta")
    out: dict[str, dict] = {}
    try:
        names = sorted(os.listdir(meta))
    except OSError:
        return out
    for n in names:
        if not n.endswith(".json"):
            continue
        text = _read(os.path.join(meta, n), 8 << 20)
        if not text:
            continue
        try:
            rec = json.loads(text)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("name"), str):
            out[rec["name"]] = {k: rec.get(k) for k in ("name", "version", "build", "channel", "url")}
    return out


def _channel_name(rec: dict) -> str:
    ch = str(rec.get("channel") or rec.get("url") or "")
    m = re.search(r"(?:conda\.anaconda\.org|repo\.anaconda\.com/pkgs)/([^/]+)", ch)
    return m.group(1) if m else ch.rstrip("/").split("/")[-1] if "/" in ch else ch


def history_commands(prefix: str) -> list[str]:
    text = _read(os.path.join(prefix, "conda-meta", "history"), _LIMIT)
    if not text:
        return []
    return [ln[len("# cmd:") :].strip() for ln in text.splitlines() if ln.startswith("# cmd:")]


def _mask(cmd: str) -> str:
    """A command line as evidence, without credentials: URL user:password@, token=…, --token …"""
    cmd = re.sub(r"(://)[^/@\s]+@", r"\1***@", cmd)
    cmd = re.sub(r"(://[^\s]*?/t/)[^/\s]+", r"\1***", cmd)  # anaconda.org tokens: /t/<token>/channel
    cmd = re.sub(r"(?i)((?:token|password|passwd|key)=)[^&\s]+", r"\1***", cmd)
    return re.sub(r"(?i)(--(?:token|password)(?:\s+|=))\S+", r"\1***", cmd)


def _uses_pytorch_channel(cmd: str) -> bool:
    return re.search(r"(?:^|\s)(?:-c|--channel)(?:\s+|=)pytorch(?:\s|$)", cmd) is not None


MARKER = "EXTERNALLY-MANAGED"  # PEP 668, in sysconfig.get_path("stdlib")


def externally_managed(stdlib: str | None, is_venv: bool) -> bool | None:
    """Does pip refuse to install here (PEP 668)? Never in a venv (pip skips the marker there, as the PEP
    says); elsewhere when the stdlib directory holds the marker. None when the stdlib is unknown."""
    if is_venv:
        return False
    if not stdlib:
        return None
    return os.path.isfile(os.path.join(stdlib, MARKER))


def detect(
    prefix: str | None, torch_installer: str | None = None, stdlib: str | None = None
) -> EnvironmentManager | None:
    """What manages the environment at `prefix` (sys.prefix of the target interpreter); `stdlib` is its
    sysconfig stdlib directory, where a PEP 668 marker says whether pip may install into it."""
    if not prefix:
        return None
    prefix = os.path.normpath(prefix)
    m = EnvironmentManager(kind="pip", prefix=prefix, torch_installer=torch_installer)
    parts = prefix.replace("\\", "/").split("/")
    cfg = pyvenv_cfg(prefix)
    is_conda = os.path.isdir(os.path.join(prefix, "conda-meta"))
    if ".pixi" in parts and "envs" in parts:
        root = "/".join(parts[: parts.index(".pixi")]) or "/"
        m.kind, m.project = "pixi", root
        for name in ("pixi.toml", "pyproject.toml"):
            path = os.path.join(root, name)
            if os.path.isfile(path) and (name == "pixi.toml" or _has_table(path, "tool.pixi")):
                m.manifest = path
                break
        m.evidence.append(f"{prefix} is a pixi environment (.pixi/envs)")
    elif is_conda:
        m.kind = "conda"
        m.evidence.append(f"{prefix}/conda-meta exists")
    elif cfg is not None:
        project = _project_of(prefix)
        if "uv" in cfg:
            m.kind = "uv"
            m.evidence.append(f"pyvenv.cfg: uv = {cfg['uv']}")
            if project and (
                os.path.isfile(os.path.join(project, "uv.lock"))
                or _has_table(os.path.join(project, "pyproject.toml"), "tool.uv")
            ):
                m.project, m.uv_project = project, True
                m.manifest = os.path.join(project, "pyproject.toml")
            else:
                m.uv_project = False
        if "pypoetry" in parts and "virtualenvs" in parts:
            m.kind = "poetry"
            m.evidence.append(f"{prefix} is a poetry virtualenv")
        elif project and (
            os.path.isfile(os.path.join(project, "poetry.lock"))
            or _has_table(os.path.join(project, "pyproject.toml"), "tool.poetry")
        ):
            if m.kind != "uv" or not m.uv_project:
                m.kind, m.project = "poetry", project
                m.manifest = os.path.join(project, "pyproject.toml")
                m.evidence.append(f"{project} is a poetry project")
        if m.kind == "pip":
            m.evidence.append(f"{prefix}/pyvenv.cfg: a virtual environment")
    else:
        m.kind = "system"
        m.evidence.append(f"{prefix} is not a virtual environment")
    if torch_installer in ("uv", "poetry") and m.kind in ("pip", "system"):
        m.kind = torch_installer
        m.evidence.append(f"torch's INSTALLER is {torch_installer}")
    if is_conda or m.kind == "pixi":
        _conda_details(prefix, m)
    m.externally_managed = externally_managed(stdlib, cfg is not None)
    if m.externally_managed:
        m.evidence.append(f"{os.path.join(stdlib or '', MARKER)} exists: pip does not install here (PEP 668)")
    return m


def _conda_details(prefix: str, m: EnvironmentManager) -> None:
    pkgs = conda_packages(prefix)
    cpu = []
    if "cpuonly" in pkgs:
        cpu.append(f"cpuonly {pkgs['cpuonly'].get('version')}")
    mutex = pkgs.get("pytorch-mutex")
    if mutex and "cpu" in str(mutex.get("build") or ""):
        cpu.append(f"pytorch-mutex {mutex.get('version')} {mutex.get('build')}")
    m.cpuonly = cpu
    m.conda_torch_packages = [
        n for n in ("pytorch", "torchvision", "torchaudio", "pytorch-cuda", "pytorch-mutex", "cpuonly") if n in pkgs
    ]
    torch_pkg = pkgs.get("pytorch")
    if torch_pkg:
        m.conda_torch_package = (
            f"pytorch {torch_pkg.get('version')} {torch_pkg.get('build')} ({_channel_name(torch_pkg)})"
        )
    channel = []
    for name in ("pytorch", "pytorch-cuda", "pytorch-mutex", "torchvision", "torchaudio"):
        rec = pkgs.get(name)
        if rec and _channel_name(rec) == "pytorch":
            channel.append(f"{name} {rec.get('version')} from the pytorch channel")
    cmds = history_commands(prefix)
    channel += [f"conda-meta/history: {_mask(c)}" for c in cmds if _uses_pytorch_channel(c)][-2:]
    m.pytorch_channel = channel
    frontends = [re.split(r"[\\/]", c.split()[0])[-1] for c in cmds if c.split()]
    if any(f.startswith(("mamba", "micromamba")) for f in frontends):
        m.conda_frontend = "mamba"
    elif frontends:
        m.conda_frontend = "conda"
