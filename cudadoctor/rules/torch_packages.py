"""The packages installed beside torch (shared cuda-facts §10): the nvidia-* wheels against the versions
torch pins (CD219), a second torch on sys.path (CD221), torchvision/torchaudio built for another torch
(CD222), conda's CPU pins and the deprecated pytorch channel (CD223, CD224), a Jetson with a torch that is
not NVIDIA's (CD225). rules/libraries.py evaluates them beside the libraries torch loaded."""

from __future__ import annotations

import re

from cudadoctor.advice import install as install_advice
from cudadoctor.advice import shell
from cudadoctor.advice.text import joined
from cudadoctor.facts import Facts
from cudadoctor.facts.libraries import LibraryFacts, PinCheck
from cudadoctor.knowledge import library_defects, wheels
from cudadoctor.knowledge.versions import version_at_least
from cudadoctor.model import Finding, Severity, Table, msg
from cudadoctor.rules.catalogue import entry, fix, named

SECTION = "CUDA libraries"

PINS = entry(
    "CD219",
    "nvidia-wheels-differ-from-pins",
    Severity.WARNING,
    SECTION,
    "Installed nvidia-* wheels differ from the versions torch pins",
    """torch's Linux wheels pin every nvidia-*-cu12/-cu13 library in their Requires-Dist. Another package,
    a resolver or a manual upgrade that installs a different version mixes libraries built against each
    other's exact versions: `undefined symbol: __nvJitLinkComplete_12_4` (pytorch#134929),
    `ncclCommRegister` (pytorch#119932), `cuptiActivityEnableDriverApi` (pytorch#157381). The fix is the
    pinned versions, or removing every nvidia-* package and reinstalling torch (pytorch#104259).""",
)

TWO_TORCHES = entry(
    "CD221",
    "two-torch-installs",
    Severity.WARNING,
    SECTION,
    "Two torch installs are visible to this interpreter",
    """The user site-packages (~/.local/lib/pythonX.Y/site-packages, from `pip install --user` or a pip run
    outside any venv) comes before the environment's own site-packages on sys.path. A torch there hides
    the environment's torch, with its own CUDA build and its own nvidia-* libraries: the environment looks
    right and the wrong torch is imported.""",
)

COMPANION = entry(
    "CD222",
    "torchvision-torchaudio-mismatch",
    Severity.ERROR,
    SECTION,
    "torchvision or torchaudio was built for another torch",
    """torchvision and torchaudio contain C++/CUDA extensions compiled against one exact torch release and
    CUDA variant (their Requires-Dist pins `torch==X.Y.Z`; the local tag, +cu126, names the variant). A
    pair that does not match fails at import or at the first custom operator: `operator torchvision::nms
    does not exist`, `undefined symbol`, or a CUDA error in a torchvision kernel.""",
    beside_torch=True,
)

CONDA_CPU = entry(
    "CD223",
    "conda-cpuonly",
    Severity.WARNING,
    SECTION,
    "conda keeps this environment on a CPU build (cpuonly / pytorch-mutex cpu)",
    """The pytorch channel's `cpuonly` package pins `pytorch-mutex=*=cpu`; while either is installed, conda
    resolves every pytorch update to a CPU build again, whatever the command asks for (pytorch#92273,
    #39619).""",
)

CONDA_CHANNEL = entry(
    "CD224",
    "conda-pytorch-channel-deprecated",
    Severity.WARNING,
    SECTION,
    "torch comes from the deprecated `pytorch` conda channel",
    """PyTorch stopped publishing to its conda channel after 2.5 (pytorch#138506): nothing newer will
    come from `-c pytorch`. conda-forge's `pytorch-gpu` (with `cuda-version` to choose the CUDA) is the
    maintained conda route; pip wheels from download.pytorch.org are the other.""",
)

JETSON = entry(
    "CD225",
    "jetson-needs-jetpack-wheel",
    Severity.ERROR,
    SECTION,
    "On Jetson, torch must come from NVIDIA's JetPack wheels",
    """Jetson modules (JetPack / L4T) have an integrated GPU and their own CUDA stack. The aarch64 wheels on
    PyPI and download.pytorch.org target server GPUs (GH200, GB200) and are not built for Jetson; a torch
    from there runs on the CPU only. NVIDIA publishes torch wheels per JetPack release.""",
)

# --- pins -------------------------------------------------------------------------------------------


def _defect_fix(f: Facts, p: PinCheck) -> bool:
    """An nvidia-* wheel newer than torch's pin because the pinned release has a silent wrong-results
    defect on a GPU here (CD229's own fix): one story, not a pin problem."""
    family = re.sub(r"^nvidia-|-cu\d+$", "", p.package)
    pinned = re.sub(r"^[=<>!~]+", "", p.required)
    ccs = [d.compute_capability for d in (f.driver.devices if f.driver else [])]
    return any(
        (d := library_defects.affected(family, pinned, cc)) is not None
        and library_defects.affected(family, p.installed, cc) is None
        and version_at_least(p.installed, d.fixed)
        for cc in ccs
    )


def pins(f: Facts, lf: LibraryFacts) -> list[Finding]:
    bad = [p for p in lf.pins or () if not p.ok and not _defect_fix(f, p)]
    if not bad:
        return []
    t = f.torch
    specs = [f"{p.package}{p.required}" for p in bad]
    sev = PINS.severity
    failure = lf.import_failure
    if failure is not None and failure.kind == "undefined_symbol":
        sev = Severity.ERROR
    missing = [p for p in bad if p.installed is None]
    differ = [p for p in bad if p.installed is not None]
    counts = [
        *([msg("{n} differ", n=len(differ))] if differ else []),
        *([msg("{n} missing", n=len(missing))] if missing else []),
    ]
    fixes = [fix("Install the versions torch pins", install_advice.package_install(f, [f'"{s}"' for s in specs]))]
    clean = install_advice.reinstall_clean(f)
    if clean:
        fixes.append(fix("Or remove every nvidia-* package and reinstall torch, which brings its own set", *clean))
    return [
        PINS.finding(
            title=msg(
                "nvidia-* wheels do not match the pins of {torch} ({counts})",
                torch=named("torch", t.version if t is not None else None),
                counts=joined(counts, ", "),
            ),
            severity=sev,
            fix=fixes,
            tables=[
                Table(
                    ["Package", "torch requires", "Installed"],
                    [[p.package, p.required, p.installed or "missing"] for p in bad],
                )
            ],
        )
    ]


# --- two torches, companions ------------------------------------------------------------------------


def two_torches(f: Facts, lf: LibraryFacts) -> list[Finding]:
    installs = lf.torch_installs or []
    if len(installs) < 2:
        return []
    t = f.torch
    py = shell.word(t.python_executable, lead=True) if t else "python"
    imported = installs[0]
    rows = [[p, "imported" if i == 0 else "hidden"] for i, p in enumerate(installs)]
    fixes = []
    if lf.user_site_torch:
        fixes.append(
            fix(
                msg(
                    "Remove the copy in the user site-packages ({path}): pip removes the first one on sys.path, the "
                    "user site's",
                    path=lf.user_site_torch,
                ),
                f"{py} -m pip uninstall -y torch torchvision torchaudio",
            )
        )
        fixes.append(fix("Or ignore the user site for this interpreter", "export PYTHONNOUSERSITE=1"))
    else:
        fixes.append(fix("See where each comes from", f'{py} -c "import sys; print(*sys.path, sep=chr(10))"'))
    return [
        TWO_TORCHES.finding(
            title=msg("{n} torch installs are visible; {path} is the one imported", n=len(installs), path=imported),
            fix=fixes,
            tables=[Table(["torch", "On sys.path"], rows)],
        )
    ]


def companions(f: Facts, lf: LibraryFacts) -> list[Finding]:
    t = f.torch
    bad = [c for c in lf.companions or () if c.ok is False]
    if not bad or t is None or not t.version:
        return []
    rows = [[c.package, c.version, c.requires_torch or "?", c.expected or "?"] for c in bad]
    names = joined([c.package for c in bad], " and ", names=True)
    return [
        COMPANION.finding(
            title=msg(
                "{packages} do not match {torch}" if len(bad) > 1 else "{packages} does not match {torch}",
                packages=names,
                torch=named("torch", t.version),
            ),
            fix=[fix("Install the matching pair from the same index", *install_advice.companion_commands(f, bad))],
            # the last header names the installed torch: a message (render/localize.column shows it in English
            # until it translates messages as it does titles)
            tables=[
                Table(["Package", "Installed", "Built for torch", msg("Pairs with {version}", version=t.version)], rows)
            ],
        )
    ]


# --- conda, Jetson ----------------------------------------------------------------------------------


def conda(f: Facts, lf: LibraryFacts) -> list[Finding]:
    m = lf.manager
    if m is None:
        return []
    out = []
    tool = m.conda_frontend or "conda"
    if m.cpuonly:
        names = " ".join(x.split()[0] for x in m.cpuonly)
        label = msg("Remove the CPU pins, then install a CUDA build")
        install = install_advice.advise(f).commands
        if not install:  # removing the pins alone would leave no torch
            steps = []
            label = msg("{label}: which one fits is not known here; run every check to see it", label=label)
        elif install_advice.installer(f) == "conda":
            steps = install_advice.conda_forge_commands(f)  # its remove takes the pins with it
        else:
            steps = [f"{tool} remove -p {shell.word(m.prefix or '')} -y {names}", *install]
        pinned = joined(m.cpuonly, " and ", names=True)
        out.append(
            CONDA_CPU.finding(
                title=msg("{packages} installed in {prefix}", packages=pinned, prefix=m.prefix)
                if m.prefix
                else msg("{packages} installed", packages=pinned),
                fix=[fix(label, *steps)],
            )
        )
    if m.pytorch_channel:
        out.append(
            CONDA_CHANNEL.finding(
                title=msg(
                    "torch in {prefix} comes from the pytorch conda channel, which has no release after 2.5"
                    if m.prefix
                    else "torch comes from the pytorch conda channel, which has no release after 2.5",
                    prefix=m.prefix,
                ),
                fix=[
                    fix("Move to conda-forge's pytorch-gpu", *steps)
                    if (steps := install_advice.conda_forge_commands(f))
                    else fix("Move to conda-forge's pytorch-gpu: which build fits is not known here; run every check")
                ],
                tables=[Table(["Evidence"], [[e] for e in m.pytorch_channel])],
            )
        )
    return out


def jetson(f: Facts, lf: LibraryFacts) -> list[Finding]:
    t = f.torch
    if not lf.jetson or t is None or not t.installed or t.version is None:
        return []
    if t.cuda_built and t.is_available is not False:
        return []
    note = wheels.platform_note("Linux", "aarch64", jetson=True)
    return [
        JETSON.finding(
            title=msg(
                "{torch} on a Jetson ({release}) cannot use its GPU", torch=named("torch", t.version), release=lf.jetson
            ),
            why=msg("{page} {note}", page=msg(JETSON.explanation), note=msg(note)) if note else None,
            fix=[
                fix(
                    "Install the torch wheel NVIDIA built for this JetPack release (see the page for the URL)",
                    f"{shell.word(t.python_executable, lead=True)} -m pip uninstall -y torch",
                    f"xdg-open {wheels.JETSON_WHEELS}",
                )
            ],
        )
    ]
