"""The torch install command that fits THIS driver and THESE GPUs, computed from the wheel tables: advise()
and its Advice, and the install commands for each installer. What the driver runs and its upgrade are in
advice/driver.py, the GPUs and their kernels in words in advice/gpus.py, labels built from parts in advice/text.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudadoctor.advice import shell
from cudadoctor.advice.driver import DriverView, driver_upgrade_fix, driver_view, within_branch
from cudadoctor.advice.gpus import gpu_capabilities, gpu_reasons
from cudadoctor.advice.text import not_known, parts
from cudadoctor.facts import Facts
from cudadoctor.facts.libraries import CompanionCheck, EnvironmentManager
from cudadoctor.knowledge import companions, wheels
from cudadoctor.knowledge.driver_minimums import full_minimum, major_floor
from cudadoctor.knowledge.versions import parse_version
from cudadoctor.model import Fix, Message, msg


@dataclass
class Advice:
    variant: wheels.Variant | None
    version: str | None  # the torch version to install
    commands: list[str] = field(default_factory=list)
    note: str = ""  # why this one, or why none fits: a Message (a template), so it is shown translated
    unknown: list[str] = field(default_factory=list)  # what it needs and the facts do not say: then no commands
    driver_upgrade: str | None = None  # "580.65.06" when a newer driver would allow a newer variant
    upgrade_label: str | None = None  # how to get that driver on this OS (a Message)
    upgrade_action: str | None = None  # the same, in lower case, to follow "Or " (a Message)
    upgrade_commands: list[str] = field(default_factory=list)
    snippet: list[str] = field(default_factory=list)  # lines to add to a project file (uv project)
    snippet_file: str | None = None


def _patch_version(release: str, installed: str | None) -> str:
    if installed and wheels.release_of(installed) == release:
        return installed.split("+")[0]
    return f"{release}.0"


def _fits(v: wheels.Variant, drv: DriverView, ccs: list[str], cubin: bool) -> str | None:
    compat = drv.runs(v.cuda)
    if compat is None:
        return None
    wanted = ("sm",) if cubin else ("sm", "ptx")
    if any(wheels.coverage(v.arch_flags, cc) not in (*wanted, None) for cc in ccs):
        return None
    return compat


def install_commands(version: str, variant: wheels.Variant, f: Facts) -> list[str]:
    """The install in the terms of what manages the environment: pip, uv, a uv project, conda, pixi, poetry."""
    t = f.torch
    pkgs = [f"torch=={version}"]
    if t is not None and t.torchvision and (tv := companions.torchvision_for(version)):
        pkgs.append(f"torchvision=={tv}")
    if t is not None and t.torchaudio and (ta := companions.torchaudio_for(version)):
        pkgs.append(f"torchaudio=={ta}")
    kind = installer(f)
    m = manager(f)
    py, py_arg = _py(f), _py(f, lead=False)
    names = ["torch"] + [p for p in ("torchvision", "torchaudio") if t is not None and getattr(t, p)]
    installed = t is not None and bool(t.installed)
    if kind == "conda":
        return conda_forge_commands(f, variant)
    if kind == "pixi":
        # pixi resolves CPU builds unless the workspace declares the CUDA the system has. `[system-requirements]`
        # is deprecated: the CUDA goes on the platform itself, and `platform edit` turns the bare subdir into
        # { platform = "linux-64", cuda = "12.8" } in place, so every solve of it sees CUDA (pixi
        # docs/workspace/system_requirements.md "CLI migration"; pixi_manifest platform.rs apply_edit, #6178)
        manifest = f" --manifest-path {shell.word(m.manifest)}" if m and m.manifest else ""
        deps = " ".join(["pytorch-gpu"] + [n for n in names[1:]])
        have = driver_view(f).cuda
        system_cuda = f"{have[0]}.{have[1]}" if have else str(variant.cuda[0])
        return [
            f"pixi workspace platform edit {conda_subdir(f)} --cuda {system_cuda}{manifest}",
            f'pixi add{manifest} {deps} "{conda_cuda_spec(f, variant)}"',
        ]
    if kind == "poetry" and m is not None and m.project:
        source = f"pytorch-{variant.name}"
        return [
            f"poetry -C {shell.word(m.project)} source add --priority explicit {source} {variant.index_url}",
            f"poetry -C {shell.word(m.project)} add --source {source} {' '.join(pkgs)}",
        ]
    if kind == "uv-project" and m is not None and m.project:
        return [f"uv sync --project {shell.word(m.project)} --upgrade-package torch"]
    if m is not None and m.externally_managed and kind in ("pip", "uv"):
        return _into_new_venv(f, kind, pkgs, variant)
    cmds = []
    if kind in ("uv", "uv-project"):
        # --torch-backend is explicit: `auto` looks at the driver only, never at the GPU's architecture
        if installed:
            cmds.append(f"uv pip uninstall --python {py_arg} {' '.join(names)}")
        cmds.append(f"uv pip install --python {py_arg} {' '.join(pkgs)} --torch-backend={variant.name}")
        return cmds
    pip = f"{py} -m pip"
    if installed:
        # an installed 2.x.y+cpu satisfies ==2.x.y, so pip would keep it: remove it first
        cmds.append(f"{pip} uninstall -y {' '.join(names)}")
    cmds.append(f"{pip} install {' '.join(pkgs)} --index-url {variant.index_url}")
    return cmds


def conda_subdir(f: Facts) -> str:
    """The conda subdir of this machine (a pixi workspace platform's name): linux-64, linux-aarch64, win-64."""
    s = f.system
    if s is not None and s.os == "Windows":
        return "win-64"
    return "linux-aarch64" if s is not None and s.machine in ("aarch64", "arm64") else "linux-64"


# Where the install goes when the target Python is externally managed (PEP 668): a venv made from it.
NEW_VENV = "~/venvs/torch"
_DEBIAN_FAMILY = ("debian", "ubuntu", "linuxmint", "pop", "raspbian", "kali")


def cpu_install(f: Facts) -> list[str]:
    """The CPU build, for a machine with no NVIDIA GPU: into a new venv where the target Python is
    externally managed, else with the target's pip."""
    if environment_unknowns(f):
        return []  # pip may refuse this Python, or another installer manage it: no guess
    if externally_managed(f):
        return _into_new_venv(f, "pip", ["torch"], wheels.Variant("", "cpu", ()))
    cpu = wheels.INDEX_URL.format(variant="cpu")
    return [f"{_py(f)} -m pip install torch --index-url {cpu}"]


def _into_new_venv(f: Facts, kind: str, pkgs: list[str], variant: wheels.Variant) -> list[str]:
    """pip (and uv) refuse to install into an externally managed Python (`externally-managed-environment`):
    create a venv from it, then install there. Its interpreter is the one to run torch with afterwards."""
    if kind == "uv":
        return [
            f"uv venv --python {_py(f, lead=False)} {NEW_VENV}",
            f"uv pip install --python {NEW_VENV}/bin/python {' '.join(pkgs)} --torch-backend={variant.name}",
        ]
    cmds = []
    os_id = f.system.os_id if f.system is not None else None
    if f.torch is not None and f.torch.ensurepip is False and os_id in _DEBIAN_FAMILY:
        cmds.append("sudo apt install python3-venv")  # Debian's Python makes venvs without pip otherwise
    return [
        *cmds,
        f"{_py(f)} -m venv {NEW_VENV}",
        f"{NEW_VENV}/bin/python -m pip install {' '.join(pkgs)} --index-url {variant.index_url}",
    ]


def _pep668_unknown(f: Facts) -> bool:
    """A Python that is no venv, whose stdlib was not looked at for the PEP 668 marker (a venv never is
    externally managed)."""
    m = manager(f)
    return m is not None and m.kind == "system" and m.externally_managed is None


def externally_managed(f: Facts) -> bool:
    """The install goes into a new venv: the target is externally managed and pip or uv would install."""
    m = manager(f)
    return bool(m is not None and m.externally_managed and installer(f) in ("pip", "uv"))


# --- what manages the environment -------------------------------------------------------------------


def manager(f: Facts) -> EnvironmentManager | None:
    lf = getattr(f.torch, "libraries", None) if f.torch is not None else None
    return lf.manager if lf is not None else None


def installer(f: Facts) -> str:
    """Whose terms a fix is written in: pip, uv, uv-project, conda, pixi or poetry (pip when unknown)."""
    m = manager(f)
    if m is None:
        return "pip"
    if m.kind == "conda":
        # torch pip-installed into a conda env is fixed with pip, not conda
        if m.torch_installer in ("pip", "uv") and not m.conda_torch_package:
            return "uv" if m.torch_installer == "uv" else "pip"
        return "conda"
    if m.kind == "uv":
        return "uv-project" if m.uv_project else "uv"
    if m.kind in ("pixi", "poetry"):
        return m.kind
    return "pip"


def _py(f: Facts, lead: bool = True) -> str:
    """The target interpreter as a command's program (`lead`) or as an option's value (uv's --python)."""
    return shell.word(f.torch.python_executable, lead) if f.torch is not None else "python"


def package_install(f: Facts, packages: list[str], python: str | None = None) -> str:
    """One `pip install` of some packages in this environment's installer (uv pip for uv envs)."""
    if installer(f) in ("uv", "uv-project"):
        py = shell.word(python) if python else _py(f, lead=False)
        return f"uv pip install --python {py} {' '.join(packages)}"
    py = shell.word(python, lead=True) if python else _py(f)
    return f"{py} -m pip install {' '.join(packages)}"


def _torch_variant(f: Facts) -> str | None:
    tag = companions.local_tag(f.torch.version if f.torch else None)
    return tag if tag and (tag.startswith("cu") or tag == "cpu") else None


# The CUDA library wheels torch pins (not nvidia-ml-py, DALI or other nvidia-* packages).
_NVIDIA_LIBS = (
    "'^nvidia-(cuda|cublas|cudnn|cufft|cufile|curand|cusolver|cusparse|nccl|nvjitlink|nvtx|nvshmem)[a-z0-9-]*'"
)


def reinstall_clean(f: Facts) -> list[str]:
    """Remove every nvidia-* package and reinstall torch with its own pinned set (pytorch#104259)."""
    t = f.torch
    if t is None or not t.version:
        return []
    base, py = t.version.split("+")[0], _py(f)
    variant = _torch_variant(f)
    if installer(f) in ("uv", "uv-project"):
        backend = f" --torch-backend={variant}" if variant else ""
        arg = _py(f, lead=False)
        listing = f"uv pip list --python {arg} --format=freeze | grep -oE {_NVIDIA_LIBS}"
        return [
            f"uv pip uninstall --python {arg} $({listing})",
            f"uv pip install --python {arg} --reinstall torch=={base}{backend}",
        ]
    index = f" --index-url {wheels.INDEX_URL.format(variant=variant)}" if variant else ""
    return [
        f"{py} -m pip uninstall -y $({py} -m pip list --format=freeze | grep -oE {_NVIDIA_LIBS})",
        f"{py} -m pip install --force-reinstall torch=={base}{index}",
    ]


def cudnn_reinstall(f: Facts) -> list[str]:
    """Reinstall the cuDNN wheel torch uses (nvidia-cudnn-cu12/-cu13), in this environment's installer: a
    uv venv has no pip. A conda or pixi torch has no such wheel (its cuDNN is a conda package): none."""
    kind = installer(f)
    if kind in ("conda", "pixi") or environment_unknowns(f):
        return []  # no wheel to reinstall, or which installer to speak is not known: no guess
    if kind in ("uv", "uv-project"):
        arg = _py(f, lead=False)
        listing = f"uv pip list --python {arg} --format=freeze | grep -oE {_CUDNN_WHEEL}"
        return [f"uv pip install --python {arg} --reinstall --no-deps $({listing})"]
    py = _py(f)
    listing = f"{py} -m pip list --format=freeze | grep -oE {_CUDNN_WHEEL}"
    return [f"{py} -m pip install --force-reinstall --no-deps $({listing})"]


_CUDNN_WHEEL = "'^nvidia-cudnn-cu[0-9]+'"


def torch_reinstall(f: Facts) -> list[str]:
    """The installed torch again, from its own index, without touching its dependencies (its wheels bring
    cuDNN back); none without its version and CUDA, or where conda or pixi installed it."""
    t = f.torch
    kind = installer(f)
    if t is None or not t.version or not t.cuda or kind in ("conda", "pixi") or environment_unknowns(f):
        return []
    pin, variant = f"torch=={t.version.split('+')[0]}", wheels.variant_name(t.cuda)
    if kind in ("uv", "uv-project"):
        return [f"uv pip install --python {_py(f, lead=False)} --reinstall --no-deps {pin} --torch-backend={variant}"]
    index = wheels.INDEX_URL.format(variant=variant)
    return [f"{_py(f)} -m pip install --force-reinstall --no-deps {pin} --index-url {index}"]


def companion_commands(f: Facts, bad: list[CompanionCheck]) -> list[str]:
    """Reinstall torchvision/torchaudio at the versions that pair with the installed torch, same index."""
    t = f.torch
    assert t is not None and t.version
    pkgs = [f"{c.package}=={c.expected}" for c in bad if c.expected] or [c.package for c in bad]
    variant = _torch_variant(f)
    kind = installer(f)
    if kind == "conda":
        m = manager(f)
        tool = (m.conda_frontend if m else None) or "conda"
        where = f" -p {shell.word(m.prefix)}" if m and m.prefix else ""
        return [f"{tool} install{where} -c conda-forge {' '.join(c.package for c in bad)}"]
    if kind in ("uv", "uv-project"):
        backend = f" --torch-backend={variant}" if variant else ""
        return [f"uv pip install --python {_py(f, lead=False)} --reinstall --no-deps {' '.join(pkgs)}{backend}"]
    index = f" --index-url {wheels.INDEX_URL.format(variant=variant)}" if variant else ""
    return [f"{_py(f)} -m pip install --force-reinstall --no-deps {' '.join(pkgs)}{index}"]


def conda_forge_commands(f: Facts, variant: wheels.Variant | None = None) -> list[str]:
    """conda-forge's pytorch-gpu, its CUDA chosen with cuda-version (the pytorch channel is deprecated)."""
    m = manager(f)
    tool = (m.conda_frontend if m else None) or "conda"
    where = f" -p {shell.word(m.prefix)}" if m and m.prefix else ""
    if variant is None:
        advice = advise(f)
        if advice.unknown:
            return []  # without its CUDA spec it would be another command than the one knowing more gives
        variant = advice.variant
    t = f.torch
    extra = [p for p in ("torchvision", "torchaudio") if t is not None and getattr(t, p)]
    cmds = []
    # conda remove fails on a name that is not installed: only what conda-meta lists
    old = list((m.conda_torch_packages or []) if m is not None else [])
    if old:
        cmds.append(f"{tool} remove{where} -y {' '.join(old)}")
    cuda = f' "{conda_cuda_spec(f, variant)}"' if variant else ""
    cmds.append(f"{tool} install{where} -c conda-forge {' '.join(['pytorch-gpu', *extra])}{cuda}")
    return cmds


def conda_cuda_spec(f: Facts, variant: wheels.Variant) -> str:
    """The cuda-version conda-forge resolves against: the driver's CUDA when it has the major of the build
    that fits these GPUs (any build up to it runs), else that major's range."""
    have = driver_view(f).cuda
    major = variant.cuda[0]
    if have is not None and have[0] == major:
        return f"cuda-version={have[0]}.{have[1]}"
    if have is not None and have[0] < major:
        return f"cuda-version={variant.cuda[0]}.{variant.cuda[1]}"
    return f"cuda-version>={major},<{major + 1}"


def uv_project_snippet(variant: wheels.Variant, names: list[str]) -> list[str]:
    """pyproject.toml lines that send torch (and friends) to the variant's index (uv docs, PyTorch guide)."""
    index = f"pytorch-{variant.name}"
    return [
        "[[tool.uv.index]]",
        f'name = "{index}"',
        f'url = "{variant.index_url}"',
        "explicit = true",
        "",
        "[tool.uv.sources]",
        *(f'{n} = [{{ index = "{index}" }}]' for n in names),
    ]


# --- why this variant, and a driver upgrade as a real command ---------------------------------------


def unknown_inputs(f: Facts) -> list[str]:
    """What the torch install for this machine depends on and the facts do not say (a probe skipped with
    --only, a paste, an older report). A command computed without it would be a guess that knowing it
    could turn into another command: knowing less must never change a fix, so then there is none."""
    missing = []
    s = f.system
    if s is None or not s.os or not s.machine:
        missing.append(msg("the OS and CPU architecture"))
    drv = driver_view(f)
    if drv.cuda is None or drv.version is None:
        missing.append(msg("the NVIDIA driver's version"))
    if not _capabilities_known(f):
        missing.append(msg("each GPU's compute capability"))
    return missing + environment_unknowns(f)


def _capabilities_known(f: Facts) -> bool:
    """The compute capability of every GPU that answers (NVML's list, else torch's)."""
    if f.driver is not None and f.driver.devices:
        answering = [d for d in f.driver.devices if d.error is None]
        return bool(answering) and all(d.compute_capability for d in answering)
    if f.torch is not None and f.torch.devices:
        return all(d.capability for d in f.torch.devices)
    return False


def environment_unknowns(f: Facts) -> list[str]:
    """What a command for the target environment needs: the interpreter's torch and what manages it."""
    t = f.torch
    if t is None:
        return [msg("the target Python environment")]
    missing = []
    if t.installed is None or (t.installed and not t.version):
        missing.append(msg("the installed torch version"))
    m = manager(f)
    if m is None or not m.prefix:
        return [*missing, msg("which installer manages the environment")]
    if m.kind == "uv" and m.uv_project is None:
        missing.append(msg("whether the venv belongs to a uv project"))
    if _pep668_unknown(f):
        missing.append(msg("whether pip may install into this Python"))
    return missing


def _fits_why(installed_release: bool, release: str, driver_known: bool, gpus_known: bool) -> list[Message]:
    """Why this build: it claims only what is known, since an unknown driver or GPU rules nothing out."""
    if installed_release:
        return {
            (True, True): [msg("fits this driver and every GPU")],
            (True, False): [msg("fits this driver"), msg("the GPUs are unknown")],
            (False, True): [msg("has kernels for every GPU"), msg("whether this driver runs it is unknown")],
            (False, False): [msg("the driver and the GPUs are unknown")],
        }[driver_known, gpus_known]
    if not driver_known:
        return [msg("no build of torch {release} has kernels for these GPUs", release=release)]
    if not gpus_known:
        return [msg("no build of torch {release} fits this driver", release=release)]
    return [msg("no build of torch {release} fits this driver and these GPUs as well", release=release)]


def uv_auto_differs(f: Facts, v: wheels.Variant) -> Message | None:
    """Where uv's `--torch-backend=auto` would pick another build than `v`, one without kernels for a GPU
    here, say so: auto reads only the driver and takes the newest CUDA backend the driver runs (uv
    crates/uv-torch/src/backend.rs: every backend whose driver floor the driver meets, newest first), never
    the GPU's architecture (astral-sh/uv#14742: a GTX 1080 Ti got a cu128 build without sm_61)."""
    if installer(f) not in ("uv", "uv-project"):
        return None
    drv = driver_view(f)
    machine = f.system.machine if f.system else None
    runnable = [u for u in wheels.variants(v.release, machine) if drv.runs(u.cuda) is not None]
    if not runnable:
        return None
    pick = max(runnable, key=lambda u: u.cuda)
    lacking = [name for name, cc in dict.fromkeys(gpu_capabilities(f)) if wheels.coverage(pick.arch_flags, cc) != "sm"]
    if pick.name == v.name or not lacking:
        return None
    return msg(
        "uv's --torch-backend=auto would pick {auto} from the driver alone, which has no kernels for {gpus}",
        auto=pick.name,
        gpus=", ".join(lacking),
    )


# Real cubins for every GPU before PTX JIT; then the installed release, newer ones, older ones;
# inside a release, full driver compatibility before minor-version compatibility, then the newest CUDA.
def advise(f: Facts) -> Advice:
    missing = unknown_inputs(f)
    if missing:
        return Advice(None, None, note=msg("which torch build fits is not known here"), unknown=missing)
    drv = driver_view(f)
    ccs = [cc for _, cc in gpu_capabilities(f)]
    machine = f.system.machine if f.system else None
    installed = f.torch.version if f.torch and f.torch.version else None
    release = wheels.release_of(installed)
    if release not in wheels.RELEASES:
        release = wheels.newest_release()
    here = parse_version(release)
    ordered = wheels.releases_newest_first()
    newer = [r for r in ordered if parse_version(r) > here]  # type: ignore[operator]
    older = [r for r in ordered if parse_version(r) < here]  # type: ignore[operator]
    # What a newer driver would allow: this release's newest build that covers the GPUs.
    upgrade = None
    arch_ok = [v for v in wheels.variants(release, machine) if all(wheels.covers(v.arch_flags, cc) for cc in ccs)]
    if arch_ok:
        target = max(arch_ok, key=lambda v: v.cuda)
        if drv.runs(target.cuda) is None:
            upgrade = full_minimum(*target.cuda, windows=drv.windows) or major_floor(target.cuda[0], drv.windows)
            upgrade = within_branch(f, upgrade, drv.windows) if upgrade else None
    for cubin in (True, False):
        for rel in [release, *newer, *older]:
            fitting = [(v, c) for v in wheels.variants(rel, machine) if (c := _fits(v, drv, ccs, cubin))]
            if not fitting:
                continue
            v, _compat = max(fitting, key=lambda vc: (vc[1] == "full", vc[0].cuda))
            version = _patch_version(rel, installed)
            why = _fits_why(rel == release, release, drv.known, bool(ccs))
            if not cubin:
                why.append(msg("runs through PTX JIT only"))
            reasons = gpu_reasons(f, rel)  # about the release this advice installs
            why += reasons
            if externally_managed(f) and f.torch is not None:
                why.append(
                    msg(
                        "{python} is externally managed (PEP 668): pip installs into a new venv, {venv}",
                        python=f.torch.python_executable,
                        venv=NEW_VENV,
                    )
                )
            if uv_note := uv_auto_differs(f, v):
                why.append(uv_note)
            advice = Advice(
                v,
                version,
                install_commands(version, v, f),
                note=msg("torch {version} {variant}: {why}", version=version, variant=v.name, why=parts(why)),
                driver_upgrade=upgrade if rel != release else None,
            )
            if installer(f) in ("conda", "pixi"):
                conda = msg(
                    "conda-forge pytorch-gpu, {spec}: the CUDA this driver runs, "
                    "and {variant} builds have kernels for every GPU here",
                    spec=conda_cuda_spec(f, v),
                    variant=v.name,
                )
                advice.note = parts([conda, *reasons])
            if advice.driver_upgrade:
                advice.upgrade_label, advice.upgrade_commands = driver_upgrade_fix(f, advice.driver_upgrade)
                advice.upgrade_action = driver_upgrade_fix(f, advice.driver_upgrade, lower=True)[0]
            m = manager(f)
            if installer(f) == "uv-project" and m is not None and m.project:
                names = ["torch"] + [p for p in ("torchvision", "torchaudio") if f.torch and getattr(f.torch, p)]
                advice.snippet, advice.snippet_file = uv_project_snippet(v, names), m.manifest
            return advice
    reasons = gpu_reasons(f)
    advice = Advice(
        None,
        None,
        driver_upgrade=upgrade,
        note=msg("no known torch build fits this driver and these GPUs together: {reasons}", reasons=parts(reasons))
        if reasons
        else msg("no known torch build fits this driver and these GPUs together"),
    )
    if upgrade:
        advice.upgrade_label, advice.upgrade_commands = driver_upgrade_fix(f, upgrade)
        advice.upgrade_action = driver_upgrade_fix(f, upgrade, lower=True)[0]
    return advice


PREVIOUS_VERSIONS = "https://pytorch.org/get-started/previous-versions/"


def advice_fixes(advice: Advice, label: str) -> list[Fix]:
    """The fixes an advice gives, labelled as templates so that they show translated: the install (after
    the uv project's lines), a driver upgrade that allows newer builds, or why there is no command. `label`:
    the caller's words for the install; a plain literal is looked up in the catalogue as it is."""
    what = label if isinstance(label, Message) else msg(label)
    out = []
    if advice.snippet:
        where = advice.snippet_file or "pyproject.toml"
        when = msg("{label} ({note}): add to {where}", label=what, note=advice.note, where=where)
        out.append(Fix(when=when, commands=list(advice.snippet), lang="toml"))
        what = msg("Then sync the project")
    if advice.commands:
        out.append(
            Fix(
                when=what if advice.snippet else msg("{label} ({note})", label=what, note=advice.note),
                commands=list(advice.commands),
            )
        )
    if advice.driver_upgrade:
        action = advice.upgrade_action or msg("upgrade the NVIDIA driver")
        out.append(
            Fix(when=msg("Or {action}, then keep newer builds", action=action), commands=list(advice.upgrade_commands))
        )
    if not out and advice.unknown:
        # no command rather than a guess: `check` with every probe learns what is missing
        out.append(Fix(when=not_known(what, advice.unknown)))
    elif not out:
        out.append(Fix(when=msg("{note}: see {url}", note=advice.note, url=PREVIOUS_VERSIONS)))
    return out
