"""The house rules for verdicts, held on random machines (hypothesis):

- knowing less never adds a problem: forgetting any facts (None = unknown) never adds an error or a
  warning, other than the doctor's findings about itself; nor does it change an install command into
  another one (a fix needs what it is computed from, or prints no command);
- one story: no two findings contradict each other, and a finding that follows from a root cause
  points at it while the verdict names the root cause.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cudadoctor.facts import (
    BandwidthFacts,
    CudaDriverFacts,
    DriverFacts,
    Facts,
    MigInstance,
    NvmlDevice,
    PciDevice,
    PciFacts,
    SmokeFacts,
    SmokeStep,
    SystemFacts,
    ToolkitFacts,
    TorchDevice,
    TorchFacts,
    Transfer,
)
from cudadoctor.facts.extensions import ExtensionFacts, ExtensionLibrary, ExtensionPackage
from cudadoctor.facts.libraries import EnvironmentManager, LibraryFacts, LoadedLibrary, PinCheck
from cudadoctor.facts.platform import ContainerFacts, KernelModuleFacts, PlatformFacts, XidEvent
from cudadoctor.knowledge import wheels
from cudadoctor.model import ProbeOutcome, Severity
from cudadoctor.report import Status, build
from cudadoctor.rules import evaluate
from cudadoctor.rules.examples import machines as example_machines
from cudadoctor.rules.requirements import Requirements
from cudadoctor.rules.story import breaks, rests_on

GPUS = [
    ("Tesla K80", "3.7"),
    ("Tesla V100-SXM2-32GB", "7.0"),
    ("Tesla T4", "7.5"),
    ("NVIDIA A100-SXM4-80GB", "8.0"),
    ("NVIDIA GeForce RTX 3090", "8.6"),
    ("NVIDIA GeForce RTX 4090", "8.9"),
    ("NVIDIA H100 80GB HBM3", "9.0"),
    ("NVIDIA GeForce RTX 5090", "12.0"),
]
DRIVERS = [("470.82.01", 11040), ("535.104.05", 12020), ("550.54.14", 12040), ("580.95.05", 13000)]
TORCH = ["2.13.0+cu130", "2.13.0+cu126", "2.8.0+cu128", "2.5.1+cu121", "2.13.0+cpu", "2.7.0+cu118"]
STATUSES = ["ok", "LIBRARY_NOT_FOUND", "DRIVER_NOT_LOADED", "LIB_RM_VERSION_MISMATCH", "NO_PERMISSION", "UNKNOWN"]
MAYBE_BOOL = st.sampled_from([True, False, None])


MIG_UUIDS = ["MIG-aaaaaaaa-1111-2222-3333-444455556666", "MIG-bbbbbbbb-1111-2222-3333-444455556666"]


@st.composite
def mig(draw: st.DrawFn, gpu: int) -> tuple[bool | None, list[MigInstance]]:
    """MIG mode, and its instances with and without a known UUID (only GPU 0's can be MIG_UUIDS)."""
    enabled = draw(MAYBE_BOOL)
    if not enabled:
        return enabled, []
    uuids = draw(st.lists(st.sampled_from([*MIG_UUIDS, None]) if gpu == 0 else st.none(), max_size=2, unique=True))
    return True, [MigInstance(j, uuid=u, memory_total=10 << 30) for j, u in enumerate(uuids)]


@st.composite
def devices(draw: st.DrawFn) -> list[NvmlDevice]:
    out = []
    # identical GPUs (as most machines have), one of them perhaps with an unknown name or capability
    identical = draw(st.sampled_from([None, *GPUS]))
    unknown = draw(st.sampled_from([None, "name", "compute_capability"]))
    for i in range(draw(st.integers(0, 3))):
        name, cc = identical or draw(st.sampled_from(GPUS))
        mig_enabled, instances = draw(mig(i))
        total = 80 << 30
        used = draw(st.integers(0, 80)) << 30
        out.append(
            NvmlDevice(
                index=i,
                name=(None if unknown == "name" and i == 0 else name)
                if identical
                else draw(st.sampled_from([name, None])),
                uuid=f"GPU-{i:08x}-1111-2222-3333-444455556666",
                pci_bus_id=f"00000000:{0x18 + i:02X}:00.0",
                compute_capability=(None if unknown == "compute_capability" and i == 0 else cc)
                if identical
                else draw(st.sampled_from([cc, None])),
                memory_total=total,
                memory_used=used,
                memory_free=total - used,
                pcie_gen_current=draw(st.sampled_from([4, 5, None])),
                pcie_gen_max=5,
                pcie_width_current=draw(st.sampled_from([8, 16, None])),
                pcie_width_max=16,
                mig_enabled=mig_enabled,
                mig_instances=instances,
                error=draw(st.sampled_from([None, None, None, "GPU_IS_LOST"])),
            )
        )
    return out


@st.composite
def torch_facts(draw: st.DrawFn, gpus: list[NvmlDevice], machine: str | None = None) -> TorchFacts:
    """An official wheel's facts: its arch list is the one built for this machine's CPU architecture (an
    aarch64 cu130 wheel has no sm_75, so a T4 there is a real CD205, not one that knowing less invents)."""
    if draw(st.integers(0, 5)) == 0:  # not installed: then nothing else about torch is known
        return TorchFacts(python_executable="/opt/venv/bin/python", installed=False, complete=True)
    version = draw(st.sampled_from(TORCH))
    local = version.partition("+")[2]
    cuda = None if local == "cpu" else f"{local[2:-1]}.{local[-1]}"
    available = draw(MAYBE_BOOL) if cuda else False
    flags = wheels.official_arch_flags(version, machine)
    return TorchFacts(
        python_executable="/opt/venv/bin/python",
        installed=True,
        version=version,
        path="/opt/venv/lib/python3.11/site-packages/torch",
        cuda=cuda,
        cuda_built=cuda is not None,
        arch_flags=draw(st.sampled_from([list(flags), None])) if flags else [],
        cudnn_built=cuda is not None,
        is_available=available,
        device_count=len(gpus) if available else 0,
        devices=[TorchDevice(d.index, d.name, d.compute_capability) for d in gpus] if available else [],
        cudnn_version=draw(st.sampled_from([91002, None])) if available else None,
        cudnn_present=draw(MAYBE_BOOL) if available else None,
        kernel_error=draw(st.sampled_from([None, None, "RuntimeError: no kernel image is available"]))
        if available
        else None,
        loaded_libraries=draw(st.sampled_from([None, {}, {"cudnn": ["/usr/lib/x86_64-linux-gnu/libcudnn.so.9"]}])),
        complete=True,
    )


@st.composite
def machines(draw: st.DrawFn) -> Facts:
    gpus = draw(devices())
    status = draw(st.sampled_from(STATUSES))
    version, cuda = draw(st.sampled_from(DRIVERS))
    driver = DriverFacts(
        binding="nvidia-ml-py 13.615.71",
        library_loaded=status != "LIBRARY_NOT_FOUND",
        init_status=status,
        driver_version=version if status == "ok" else None,
        cuda_driver_version=cuda if status == "ok" else None,
        device_count=len(gpus) if status == "ok" else None,
        devices=gpus if status == "ok" else [],
        missing_functions=draw(st.sampled_from([[], ["nvmlDeviceGetComputeRunningProcesses_v3"]])),
    )
    env = draw(
        st.sampled_from(
            [
                None,
                {},
                {"CUDA_VISIBLE_DEVICES": "1"},
                {"CUDA_VISIBLE_DEVICES": ""},
                {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
                {"CUDA_VISIBLE_DEVICES": MIG_UUIDS[0]},
                {"CUDA_VISIBLE_DEVICES": f"0,{MIG_UUIDS[1]}"},
            ]
        )
    )
    system = SystemFacts(
        os=draw(st.sampled_from(["Linux", "Linux", "Windows", "Darwin"])),
        os_id=draw(st.sampled_from(["ubuntu", "rhel", None])),
        machine=draw(st.sampled_from(["x86_64", "aarch64", None])),
        python_version="3.11.7",
        hostname="box",
        user="alice",
        in_container=draw(MAYBE_BOOL),
        wsl=draw(MAYBE_BOOL),
        shm_total=draw(st.sampled_from([64 << 20, 32 << 30, None])),
        env=env,
    )
    pci = PciFacts(
        scanned=draw(st.booleans()),
        nvidia_gpus=[PciDevice(address=f"0000:{0x18 + i:02x}:00.0", kernel_driver="nvidia") for i in range(len(gpus))],
    )
    cuda_driver = CudaDriverFacts(
        library_found=draw(MAYBE_BOOL),
        init_result=draw(st.sampled_from([0, 3, 34, 100, 999, None])),
        driver_version=cuda,
        device_count=len(gpus),
    )
    toolkit = ToolkitFacts(nvcc_version=draw(st.sampled_from([None, "12.4", "13.0"])))
    bandwidth = draw(
        st.sampled_from(
            [
                None,
                BandwidthFacts(skipped="no usable CUDA device"),
                BandwidthFacts(transfers=[Transfer(0, "h2d", "pinned", 12.0), Transfer(0, "h2d", "pageable", 11.0)]),
            ]
        )
    )
    smoke = draw(
        st.sampled_from(
            [
                None,
                SmokeFacts(steps=[SmokeStep("cpu", "mlp", [2.3, 2.0], 50.0)], dataloader_ok=True, checkpoint_ok=True),
            ]
        )
    )
    torch = draw(torch_facts(gpus, system.machine))
    if torch.installed:
        torch.libraries = draw(st.sampled_from(LIBRARIES))
    return Facts(
        system=system,
        pci=pci,
        driver=driver,
        cuda_driver=cuda_driver,
        toolkit=toolkit,
        torch=torch,
        bandwidth=bandwidth,
        smoke=smoke,
        platform=draw(st.sampled_from(PLATFORMS)),
        extensions=draw(st.sampled_from(EXTENSIONS)),
    )


# What lies between torch and the driver: a shadowing library, mismatched pins, a conda CPU pin.
LIBRARIES = [
    None,
    LibraryFacts(),
    LibraryFacts(
        loaded=[
            LoadedLibrary(
                "cudnn",
                "/usr/local/cuda-11.8/lib64/libcudnn.so.8",
                "ld_library_path",
                "8.9.0",
                via="/usr/local/cuda-11.8/lib64",
            )
        ],
        pins=[PinCheck("nvidia-cudnn-cu12", "==9.10.2.21", "9.1.0.70", ok=False)],
        ld_library_path=["/usr/local/cuda-11.8/lib64"],
        stale_toolkits=["/usr/local/cuda-11.8/lib64=11.8"],
        manager=EnvironmentManager(kind="conda", prefix="/opt/conda", cpuonly=["cpuonly 2.0"]),
    ),
    # a system Python (no venv), PEP 668's marker in its stdlib: installs go through a new venv
    LibraryFacts(manager=EnvironmentManager(kind="system", prefix="/usr", externally_managed=True)),
]
# Third-party CUDA extensions: one built for Ampere only with a torch pin, one with PTX for Turing only.
EXTENSIONS = [
    None,
    ExtensionFacts(),
    ExtensionFacts(
        python_executable="/opt/venv/bin/python",
        packages=[
            ExtensionPackage(
                "flash_attn", "2.6.3", "torch==2.5.1", [ExtensionLibrary("flash_attn_2_cuda.so", ["sm_80"], [], [], 9)]
            ),
            ExtensionPackage("my-ops", "0.1.0", None, [ExtensionLibrary("my_ops/_C.so", [], ["compute_75"])]),
        ],
    ),
]
# Below torch: the kernel module, the container, the kernel log.
PLATFORMS = [
    None,
    PlatformFacts(),
    PlatformFacts(
        module=KernelModuleFacts(kernel="6.8.0-45-generic", loaded=False, secure_boot=True, nouveau_loaded=False),
        container=ContainerFacts(runtime="docker", visible_devices="void", driver_capabilities="utility"),
    ),
    PlatformFacts(
        module=KernelModuleFacts(loaded=True, loaded_version="550.54.14", library_versions=["550.54.14"]),
        xid=[XidEvent(79, "0000:18:00.0", "NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus")],
    ),
]


def _optional(cls: type, name: str) -> bool:
    tp = typing.get_type_hints(cls)[name]
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


# Fields whose None states a fact, not ignorance: a GPU whose error is None answered its queries, so
# "forgetting" a lost GPU's error would make it a working one (and its link a known one).
# The same for what the backends read from files: a companion the child found no distribution of
# (torchvision None: not installed), and what an environment's files lack (no INSTALLER record, no conda
# pytorch package, no frontend in conda-meta/history, no project or manifest beside the venv).
STATED_BY_NONE = {
    ("NvmlDevice", "error"),
    ("TorchFacts", "torchvision"),
    ("TorchFacts", "torchaudio"),
    ("EnvironmentManager", "torch_installer"),
    ("EnvironmentManager", "conda_torch_package"),
    ("EnvironmentManager", "conda_frontend"),
    ("EnvironmentManager", "project"),
    ("EnvironmentManager", "manifest"),
}


def forget(facts: Facts, draw: st.DrawFn) -> Facts:
    """A copy with some Optional facts, at any depth of the probe facts, replaced by None."""

    def walk(obj: object) -> object:
        if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
            return obj
        changes = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            stated = (type(obj).__name__, f.name) in STATED_BY_NONE
            if _optional(type(obj), f.name) and value is not None and not stated and draw(st.integers(0, 5)) == 0:
                changes[f.name] = None
            elif dataclasses.is_dataclass(value):
                changes[f.name] = walk(value)
            elif isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
                changes[f.name] = [walk(v) for v in value]
        return dataclasses.replace(obj, **changes)

    return walk(facts)  # type: ignore[return-value]


# Codes that tell one state with more or less detail: knowing less may turn the specific one into the
# general one ("no NVIDIA GPU on the bus" into "no NVIDIA driver" once the PCI scan is unknown).
# Likewise "no current torch build has kernels for this GPU" (CD206) is "this build has none" (CD205) once
# the CPU architecture is unknown: which builds exist, and so whether a current one covers the GPU, differs
# between x86_64 and aarch64.
SAME_STATE = {"CD108": "CD101", "CD109": "CD101", "CD206": "CD205"}


def problems(facts: Facts, req: Requirements | None = None) -> set[str]:
    return {
        SAME_STATE.get(f.code, f.code)
        for f in evaluate(facts, [], req)
        if f.severity in (Severity.ERROR, Severity.WARNING) and f.section != "Doctor"
    }


# no "explain" phase: its tracer made one failing example take minutes to report
SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
)


@SETTINGS
@given(machines(), st.data())
def test_knowing_less_never_adds_a_problem(facts: Facts, data: st.DataObject) -> None:
    less = forget(facts, data.draw)
    assert problems(less) <= problems(facts)


# A command that installs Python packages, in any installer's terms.
INSTALL = re.compile(r"\b(?:pip|conda|mamba|micromamba|pixi|poetry) (?:install|add)\b|\buv (?:pip install|sync)\b")


def install_commands(facts: Facts) -> set[str]:
    return {c for f in evaluate(facts, []) for x in f.fix for c in x.commands if INSTALL.search(c)}


@SETTINGS
@given(machines(), st.data())
def test_knowing_less_never_changes_an_install_command(facts: Facts, data: st.DataObject) -> None:
    """Issue 24: `--only torch` (driver and PCI unknown) on four A100s recommended the CPU build. Every
    install command printed when less is known is one printed when more is known, or there is none."""
    less = forget(facts, data.draw)
    assert install_commands(less) <= install_commands(facts)


@SETTINGS
@given(machines(), st.data())
def test_knowing_less_never_fails_the_gate_more(facts: Facts, data: st.DataObject) -> None:
    req = Requirements(require_gpus=1, min_free_memory=8 << 30, min_compute_capability="8.0")
    less = forget(facts, data.draw)
    assert problems(less, req) - {"CD501", "CD502", "CD503"} <= problems(facts, req)


# Pairs that can never both be true of one machine.
CONTRADICTIONS = [
    ("CD100", "CD101"),
    ("CD100", "CD102"),
    ("CD100", "CD103"),
    ("CD100", "CD108"),
    ("CD100", "CD130"),
    ("CD120", "CD121"),
    ("CD120", "CD122"),
    ("CD120", "CD125"),
    ("CD200", "CD210"),
    ("CD200", "CD202"),
    ("CD202", "CD216"),
    ("CD108", "CD202"),
    ("CD500", "CD501"),
]


def assert_one_story(findings: list) -> None:
    codes = {f.code for f in findings}
    for a, b in CONTRADICTIONS:
        assert not (a in codes and b in codes), f"{a} and {b} contradict: {sorted(codes)}"
    known = {f.code for f in findings}
    for f in findings:
        assert f.cause is None or f.cause in known, f"{f.code} points at {f.cause}, which is not in the report"
    # what rests on a layer an error here breaks (as the entries declare it) follows from a root cause
    broken = {layer for f in findings if f.severity is Severity.ERROR for layer in breaks(f.code)}
    for f in findings:
        if f.severity is Severity.ERROR and rests_on(f.code) & (broken - breaks(f.code)):
            assert f.cause is not None, f"{f.code} rests on a broken layer yet names no cause: {sorted(codes)}"


@SETTINGS
@given(machines())
def test_no_two_findings_contradict(facts: Facts) -> None:
    findings = evaluate(facts, [])
    assert_one_story(findings)
    rep = build("check", facts, [], findings)
    roots = [f for f in findings if f.severity is Severity.ERROR and f.cause is None]
    if rep.status is Status.PROBLEMS and roots:
        # the verdict names a root cause, never a consequence (of two independent roots, the one other
        # findings point at comes first: report.verdict_line)
        assert any(r.title in rep.verdict for r in roots), (rep.verdict, [r.code for r in roots])


@SETTINGS
@given(machines(), st.integers(1, 4))
def test_the_gate_never_contradicts_itself_nor_blames_what_is_no_cause(facts: Facts, need: int) -> None:
    """Issue 24: CD500 appears only when every requirement holds; every unmet one fails the gate; a gate
    finding follows only from a cause that breaks what it rests on (no CD502 "follows from" CD121)."""
    from cudadoctor.rules.story import breaks, rests_on

    for req in (
        Requirements(min_free_memory=8 << 30, min_compute_capability="8.0"),
        Requirements(require_gpus=need, min_free_memory=8 << 30, require_cudnn=True),
    ):
        gate = [f for f in evaluate(facts, [], req) if f.section == "Requirements"]
        codes = {f.code for f in gate}
        assert ("CD500" in codes) == (codes == {"CD500"}), codes
        assert all(f.severity is Severity.ERROR for f in gate if f.code != "CD500")
        for f in gate:
            assert f.cause is None or breaks(f.cause) & rests_on(f.code), (f.code, f.cause)


def test_the_hand_written_machines_tell_one_story() -> None:
    import tests.rules.test_rules_machines as machines_module
    from tests import facts_fixtures as fx

    dev = [fx.gpu(0, "NVIDIA A100-SXM4-80GB", "8.0")]
    cases = [fx.no_driver(), fx.healthy(dev), fx.healthy(dev, driver="470.82.01", cuda=11040)]
    cases[2].torch = fx.torch_cuda("2.13.0+cu130", "13.0", machines_module.CU13X, dev, available=False)
    for facts in cases:
        assert_one_story(evaluate(facts, []))


def test_a_consequence_points_at_its_root_cause() -> None:
    from tests import facts_fixtures as fx

    facts = fx.no_driver()
    findings = evaluate(facts, [], Requirements(require_gpus=1))
    by = {f.code: f for f in findings}
    assert by["CD501"].cause == "CD108"
    rep = build("check", facts, [], findings)
    assert rep.verdict.startswith("PROBLEMS") and "No NVIDIA GPU in this machine" in rep.verdict


def test_a_verdict_names_its_scope() -> None:
    from tests import facts_fixtures as fx

    facts = Facts(toolkit=ToolkitFacts())
    outcomes = [ProbeOutcome("toolkit", "ok", 0.1)] + [
        ProbeOutcome(n, "skipped", 0.0) for n in ("torch", "system", "pci", "driver", "cuda_driver")
    ]
    expected = ["torch", "system", "pci", "driver", "cuda_driver", "toolkit"]
    rep = build("check", facts, outcomes, evaluate(facts, outcomes), expected=expected)
    assert rep.status is Status.HEALTHY
    assert "1 of 6 checks ran: toolkit" in rep.verdict
    assert "not checked: torch, system, pci, driver, cuda_driver" in rep.verdict
    timed_out = [*outcomes[1:], ProbeOutcome("toolkit", "timeout", 10.0, "did not finish within 10 s")]
    rep = build("check", fx.no_driver(), timed_out, [], expected=expected)
    assert rep.status is Status.INCOMPLETE and rep.exit_code == 3 and "failed: toolkit timeout" in rep.verdict


def test_an_unknown_machine_reads_the_arch_list_every_platform_agrees_on() -> None:
    """Found by the forgetting property: a K80 with torch 2.8.0+cu128 on an aarch64 box got no arch finding
    (the tables have no aarch64 cu128 list), and forgetting the machine added CD206 from the x86 list."""
    from cudadoctor.knowledge import wheels

    assert wheels.official_arch_flags("2.8.0+cu128", "aarch64") is None
    assert wheels.official_arch_flags("2.8.0+cu128", None) is None
    both = wheels.official_arch_flags("2.13.0+cu130", None)
    x86, arm = (wheels.official_arch_flags("2.13.0+cu130", m) for m in ("x86_64", "aarch64"))
    assert both is not None and x86 and arm and set(both) == set(x86) | set(arm)


def test_an_empty_arch_list_reads_as_unknown() -> None:
    """Found by the forgetting property: torch answered arch_flags=[] for three K80s and got no arch finding,
    while the same machine with the list unknown got CD206 from the wheel's table."""
    from tests import facts_fixtures as ff

    k80 = [ff.gpu(0, "Tesla K80", "3.7")]
    facts = ff.healthy(k80, driver="580.95.05", cuda=13000)
    facts.torch = ff.torch_cuda("2.8.0+cu128", "12.8", "7.5", k80)
    facts.system.machine = "x86_64"
    facts.torch.arch_flags = []
    said = {f.code for f in evaluate(facts, [])}
    facts.torch.arch_flags = None
    assert "CD206" in said and "CD206" in {f.code for f in evaluate(facts, [])}


def shown(findings: list) -> list[str]:
    """Every text of the findings a user reads: titles, pages, fix labels and commands, table cells."""
    out = []
    for f in findings:
        out += [f.title, f.why.replace("torch.version.cuda is None", "")]  # a Python value, not an unknown
        out += [x.when for x in f.fix] + [c.replace("/dev/null", "") for x in f.fix for c in x.commands]
        out += [str(cell) for t in f.tables for row in [t.columns, *t.rows] for cell in row]
    return out


def none_shown(findings: list) -> list[str]:
    import re

    return [text for text in shown(findings) if re.search(r"\b(?:None|null)\b", text)]


@SETTINGS
@given(machines(), st.data())
def test_knowing_less_never_shows_none(facts: Facts, data: st.DataObject) -> None:
    """An unknown fact never reaches a title, a page, a fix or a table as "None" (unknown is not false)."""
    less = forget(facts, data.draw)
    assert not none_shown(evaluate(less, [])), none_shown(evaluate(less, []))


@SETTINGS
@given(st.sampled_from(range(len(example_machines()))), st.data())
def test_an_example_machine_that_knows_less_never_shows_none(index: int, data: st.DataObject) -> None:
    less = forget(example_machines()[index], data.draw)
    assert not none_shown(evaluate(less, [])), none_shown(evaluate(less, []))
