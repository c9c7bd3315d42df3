"""The CUDA library stack between torch and the driver: crafted site-packages trees (dist-info with
Requires-Dist and RECORD, fake .so files and symlinks) for the backend, hand-written facts for the rules,
and the real (CPU) torch for the children."""

from __future__ import annotations

import dataclasses
import os
import sys

import pytest

from cudadoctor.backends.libraries import (
    analyse_import_error,
    classify,
    family_of,
    library_facts,
    marker_applies,
    parse_requirement,
    satisfies,
)
from cudadoctor.facts import Facts, TorchFacts
from cudadoctor.facts.libraries import ImportFailure, PinCheck
from cudadoctor.knowledge import companions
from cudadoctor.model import Severity
from cudadoctor.rules import evaluate
from tests.conftest import ROOT
from tests.facts_fixtures import gpu, healthy, linux, torch_cpu, torch_cuda

PINS_28 = [
    'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-nvjitlink-cu12==12.8.93; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-nccl-cu12==2.27.3; platform_system == "Linux" and platform_machine == "x86_64"',
    'triton==3.4.0; platform_system == "Linux" and platform_machine == "x86_64"',
    "filelock",
    'opt-einsum>=3.3; extra == "opt-einsum"',
]


def dist(site, name, version, requires=(), files=()):
    d = site / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir(parents=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (d / "METADATA").write_text("\n".join(meta) + "\n")
    (d / "RECORD").write_text("".join(f"{f},,\n" for f in files))
    for f in files:
        p = site / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"\x7fELF fake")
    return d


def wheel_lib(site, sub, soname, package, version):
    rel = f"nvidia/{sub}/lib/{soname}"
    dist(site, package, version, files=[rel])
    return str(site / rel)


@pytest.fixture
def tree(tmp_path):
    """A venv whose torch 2.8 pins cu12 wheels; nvjitlink installed at another version; an old toolkit
    on LD_LIBRARY_PATH whose libnvJitLink is a symlink to the versioned file."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    dist(site, "torch", "2.8.0+cu128", PINS_28, files=["torch/__init__.py", "torch/lib/libtorch_cuda.so"])
    paths = {
        "cudart": wheel_lib(site, "cuda_runtime", "libcudart.so.12", "nvidia-cuda-runtime-cu12", "12.8.90"),
        "cudnn": wheel_lib(site, "cudnn", "libcudnn.so.9", "nvidia-cudnn-cu12", "9.10.2.21"),
        "nccl": wheel_lib(site, "nccl", "libnccl.so.2", "nvidia-nccl-cu12", "2.27.3"),
    }
    wheel_lib(site, "nvjitlink", "libnvJitLink.so.12", "nvidia-nvjitlink-cu12", "12.4.127")
    dist(site, "torchvision", "0.22.1+cu126", ["numpy", "torch==2.7.1"], files=["torchvision/__init__.py"])
    toolkit = tmp_path / "usr" / "local" / "cuda-12.1" / "lib64"
    toolkit.mkdir(parents=True)
    (toolkit / "libnvJitLink.so.12.1.105").write_bytes(b"fake")
    os.symlink("libnvJitLink.so.12.1.105", toolkit / "libnvJitLink.so.12")
    (toolkit / "libcudart.so.12.1.105").write_bytes(b"fake")
    paths["nvjitlink"] = str(toolkit / "libnvJitLink.so.12")
    return {"site": site, "toolkit": toolkit, "paths": paths, "prefix": tmp_path / "venv"}


def facts_of(tree, import_error=None, user_site=None, site_dirs=None):
    raw = {k: [v] for k, v in tree["paths"].items()}
    raw["other"] = ["/usr/lib/x86_64-linux-gnu/libz.so.1"]
    return library_facts(
        raw,
        site_dirs=site_dirs or [str(tree["site"])],
        torch_dir=str(tree["site"] / "torch"),
        prefix=str(tree["prefix"]),
        ld_library_path=f"{tree['toolkit']}:/opt/other",
        python_version="3.11.7",
        import_error=import_error,
        user_site=user_site,
    )


def test_families_by_file_name():
    assert family_of("/x/libcublasLt.so.12") == "cublas"
    assert family_of("libcusparseLt.so.0") == "cusparse"
    assert family_of("libnvrtc-builtins.so.12.8") == "nvrtc"
    assert family_of("cudnn64_9.dll") == "cudnn"
    assert family_of("libnvToolsExt.so.1") == "nvtx"
    assert family_of("libcuda.so.1") is None  # the driver is not a torch library family
    assert family_of("libz.so.1") is None


def test_loaded_libraries_classified_with_versions(tree):
    lf = facts_of(tree)
    by = {lib.family: lib for lib in lf.loaded}
    assert set(by) == {"cudart", "cudnn", "nccl", "nvjitlink"}
    assert by["cudnn"].origin == "wheel" and by["cudnn"].package == "nvidia-cudnn-cu12"
    assert by["cudnn"].version == "9.10.2.21"  # the soname says 9: the package says which 9
    jit = by["nvjitlink"]
    assert jit.origin == "ld_library_path" and jit.via == str(tree["toolkit"])
    assert jit.version == "12.1.105"  # through the symlink to the versioned file
    assert lf.nvidia_installed["nvidia-nvjitlink-cu12"] == "12.4.127"


def test_classify_toolkit_conda_system_and_torch_lib():
    assert classify("/usr/local/cuda-11.8/lib64/libcublas.so.11").origin == "cuda_toolkit"
    c = classify("/home/a/miniconda3/envs/old/lib/libcudnn.so.8")
    assert c.origin == "conda" and c.via == "/home/a/miniconda3/envs/old"
    assert classify("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0").origin == "system"
    assert classify("/e/lib/libcudnn.so.9", prefix="/e").origin == "env"
    assert classify("/s/torch/lib/libcudart.so.12", torch_dir="/s/torch").origin == "torch"


def test_windows_dlls_in_torch_lib_are_torchs_own():
    lib = classify(r"C:\venv\Lib\site-packages\torch\lib\cudnn64_9.dll", torch_dir=r"C:\venv\Lib\site-packages\torch")
    assert (lib.family, lib.origin) == ("cudnn", "torch")
    other = classify(r"C:\Program Files\NVIDIA\CUDNN\v8.9\bin\cudnn64_8.dll", torch_dir=r"C:\venv\torch")
    assert other.family == "cudnn" and other.origin == "other"


def test_pins_against_installed(tree):
    lf = facts_of(tree)
    by = {p.package: p for p in lf.pins}
    assert "triton" not in by and "filelock" not in by  # nvidia-* only
    assert by["nvidia-cudnn-cu12"].ok
    bad = by["nvidia-nvjitlink-cu12"]
    assert not bad.ok and bad.required == "==12.8.93" and bad.installed == "12.4.127"


def test_pins_do_not_apply_on_another_platform():
    env = {"platform_system": "Windows", "platform_machine": "AMD64", "python_version": "3.11"}
    assert not marker_applies('platform_system == "Linux" and platform_machine == "x86_64"', env)
    assert marker_applies('platform_system == "Windows" or platform_system == "Linux"', env)
    assert not marker_applies('extra == "opt-einsum"', env)
    assert marker_applies("python_version >= '3.10'", env) and not marker_applies("python_version < '3.10'", env)


def test_requirement_and_version_specs():
    assert parse_requirement("nvidia-cudnn-cu12 (==9.1.0.70) ; platform_system == 'Linux'") == (
        "nvidia-cudnn-cu12",
        "==9.1.0.70",
        "platform_system == 'Linux'",
    )
    assert parse_requirement("cuda-toolkit[cublas,cudnn]==13.0.2")[:2] == ("cuda-toolkit", "==13.0.2")
    assert satisfies("12.6.77", ">=12.6,<13") and not satisfies("13.0.1", ">=12.6,<13")
    assert satisfies("9.10.2.21", "==9.10.*") and not satisfies("9.1.0.70", "==9.10.*")
    assert satisfies("2.27.3", "==2.27.3") and not satisfies("2.21.5", "==2.27.3")


def test_torchvision_for_another_torch(tree):
    lf = facts_of(tree)
    (tv,) = lf.companions
    assert tv.package == "torchvision" and tv.requires_torch == "==2.7.1" and tv.ok is False
    assert tv.expected == "0.23.0"


def test_companion_table_and_tags():
    assert companions.torchvision_for("2.5.1+cu121") == "0.20.1"
    assert companions.torchvision_for("2.13.0") == "0.28.0"
    assert companions.torchaudio_for("2.0.1") == "2.0.2"  # the table's exception
    assert companions.torchaudio_for("2.6.0+cu126") == "2.6.0"
    assert companions.check("torchvision", "0.28.0+cu126", "2.13.0+cu126", "==2.13.0").ok is True
    assert companions.check("torchvision", "0.28.0+cu130", "2.13.0+cu126", "==2.13.0").ok is False  # other CUDA
    assert companions.check("torchaudio", "2.13.0", "2.13.0+cu126", None).ok is True  # PyPI: no tag
    assert companions.check("torchvision", "0.20.1", "2.13.0", None).ok is False


def test_two_torch_installs_user_site_first(tree, tmp_path):
    user = tmp_path / "home" / ".local" / "lib" / "python3.11" / "site-packages"
    dist(user, "torch", "2.4.0", files=["torch/__init__.py"])
    lf = facts_of(tree, user_site=str(user), site_dirs=[str(user), str(tree["site"])])
    assert lf.torch_installs == [str(user / "torch"), str(tree["site"] / "torch")]
    assert lf.user_site_torch == str(user / "torch")


def test_old_toolkit_on_ld_library_path(tree):
    assert facts_of(tree).stale_toolkits == [f"{tree['toolkit']}=12.1"]


@pytest.mark.parametrize(
    ("error", "kind", "library", "symbol", "family"),
    [
        (
            "ImportError: /v/site-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: "
            "__nvJitLinkComplete_12_4, version libnvJitLink.so.12",
            "undefined_symbol",
            "libcusparse.so.12",
            "__nvJitLinkComplete_12_4",
            "nvjitlink",
        ),
        (
            "ImportError: /v/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister",
            "undefined_symbol",
            "libtorch_cuda.so",
            "ncclCommRegister",
            "nccl",
        ),
        (
            "ImportError: /v/torch/lib/libtorch_cuda.so: undefined symbol: cuptiActivityEnableDriverApi, "
            "version libcupti.so.12",
            "undefined_symbol",
            "libtorch_cuda.so",
            "cuptiActivityEnableDriverApi",
            "cupti",
        ),
        (
            "OSError: libcudnn.so.9: cannot open shared object file: No such file or directory",
            "missing_library",
            "libcudnn.so.9",
            None,
            "cudnn",
        ),
        (
            "OSError: [WinError 126] The specified module could not be found. Error loading "
            '"C:\\Python311\\Lib\\site-packages\\torch\\lib\\c10.dll" or one of its dependencies.',
            "dll_load",
            "c10.dll",
            None,
            None,
        ),
    ],
)
def test_import_failures_name_library_symbol_and_family(error, kind, library, symbol, family):
    f = analyse_import_error(error)
    assert (f.kind, f.library, f.symbol, f.family) == (kind, library, symbol, family)


def test_import_failure_names_the_file_loaded_instead(tree):
    err = (
        f"ImportError: {tree['site']}/nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: "
        "__nvJitLinkComplete_12_4, version libnvJitLink.so.12"
    )
    f = facts_of(tree, import_error=err).import_failure
    assert f.loaded_instead == tree["paths"]["nvjitlink"] and f.loaded_origin == "ld_library_path"


# --- the rules on hand-written facts ------------------------------------------------------------------


from cudadoctor.advice.gpus import arch_reason  # noqa: E402
from cudadoctor.facts.libraries import (  # noqa: E402
    CompanionCheck,
    CompileFacts,
    EnvironmentManager,
    LibraryFacts,
    LoadedLibrary,
)
from cudadoctor.knowledge import wheels  # noqa: E402
from tests.facts_fixtures import no_driver  # noqa: E402
from tests.helpers import by_code, commands  # noqa: E402

CU126 = "5.0 6.0 7.0 7.5 8.0 8.6 9.0"
CU13X = "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
H100 = "NVIDIA H100 80GB HBM3"
SITE = "/opt/venv/lib/python3.11/site-packages"


def run(facts):
    findings = evaluate(facts, [])
    return {x.code: x for x in findings}, findings


def cmds(finding):
    return [c for r in finding.fix for c in r.commands]


def wheel(family, soname, package, version):
    return LoadedLibrary(family, f"{SITE}/nvidia/{family}/lib/{soname}", "wheel", version, package)


def a10_cu126(**libs):
    dev = [gpu(0, "NVIDIA A10", "8.6", total_gib=24)]
    facts = healthy(dev, driver="560.35.03", cuda=12060)
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", CU126, dev)
    facts.torch.libraries = LibraryFacts(**libs)
    return facts


def test_own_stack_is_ok_with_a_table():
    loaded = [
        wheel("cudart", "libcudart.so.12", "nvidia-cuda-runtime-cu12", "12.6.77"),
        wheel("cudnn", "libcudnn.so.9", "nvidia-cudnn-cu12", "9.10.2.21"),
    ]
    by, _ = run(a10_cu126(loaded=loaded, nvidia_installed={"nvidia-cudnn-cu12": "9.10.2.21"}, pins=[]))
    s = by["CD218"]
    assert s.severity is Severity.OK and s.title == "torch loaded 2 CUDA libraries, all from its own environment"
    assert s.tables[0].rows[1][:3] == ["cudnn", "9.10.2.21", "nvidia-cudnn-cu12"]
    assert "CD208" not in by


def test_every_family_shadowed_through_one_ld_library_path_entry_is_one_finding():
    d = "/usr/local/cuda-12.1/lib64"
    loaded = [
        wheel("cudnn", "libcudnn.so.9", "nvidia-cudnn-cu12", "9.10.2.21"),
        LoadedLibrary("cublas", f"{d}/libcublas.so.12.1.3.1", "ld_library_path", "12.1.3.1", via=d),
        LoadedLibrary("nvjitlink", f"{d}/libnvJitLink.so.12.1.105", "ld_library_path", "12.1.105", via=d),
    ]
    installed = {"nvidia-cublas-cu12": "12.6.4.1", "nvidia-nvjitlink-cu12": "12.6.85", "nvidia-cudnn-cu12": "9.10.2.21"}
    by, findings = run(a10_cu126(loaded=loaded, nvidia_installed=installed, ld_library_path=[d]))
    shadow = [x for x in findings if x.code == "CD208"]
    assert len(shadow) == 1 and shadow[0].severity is Severity.WARNING
    assert shadow[0].title == f"torch loaded 2 CUDA libraries (cublas, nvjitlink) from {d} instead of its own"
    assert f'grep -vxF "{d}"' in cmds(shadow[0])[0]
    assert [r[0] for r in shadow[0].tables[0].rows] == ["cublas", "nvJitLink"]
    assert by["CD218"].severity is Severity.INFO


def test_windows_cudnn_from_path_shadows_torchs_own():
    dev = [gpu(0, "NVIDIA GeForce RTX 4070", "8.9")]
    facts = healthy(dev, driver="576.02", cuda=12090, os="Windows", os_id=None)
    facts.torch = torch_cuda("2.8.0+cu128", "12.8", "7.0 7.5 8.0 8.6 9.0 10.0 12.0", dev)
    d = r"C:\Program Files\NVIDIA\CUDNN\v8.9\bin"
    facts.torch.libraries = LibraryFacts(
        loaded=[LoadedLibrary("cudnn", d + r"\cudnn64_8.dll", "other")],
        nvidia_installed={},
        torch_installs=[r"C:\venv\Lib\site-packages\torch"],
    )
    facts.torch.libraries.loaded.append(
        LoadedLibrary("cudnn", r"C:\venv\Lib\site-packages\torch\lib\cudnn64_9.dll", "torch")
    )
    by, _ = run(facts)
    f = by["CD208"]
    assert f.severity is Severity.WARNING and d in f.title
    assert cmds(f)[0] == "where cudnn64_8.dll"


def test_a_system_copy_of_a_family_the_env_lacks_is_not_shadowing():
    loaded = [LoadedLibrary("nccl", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "system", "2.21.5")]
    by, _ = run(a10_cu126(loaded=loaded, nvidia_installed={}))
    assert "CD208" not in by and by["CD218"].severity is Severity.OK


def test_pins_mismatch_gives_the_exact_versions_for_pip_and_uv():
    pins = [
        PinCheck("nvidia-nvjitlink-cu12", "==12.6.85", "12.4.127", False),
        PinCheck("nvidia-nccl-cu12", "==2.21.5", None, False),
        PinCheck("nvidia-cudnn-cu12", "==9.10.2.21", "9.10.2.21", True),
    ]
    facts = a10_cu126(pins=pins, nvidia_installed={"nvidia-nvjitlink-cu12": "12.4.127"})
    by, _ = run(facts)
    p = by["CD219"]
    assert p.title == "nvidia-* wheels do not match the pins of torch 2.13.0+cu126 (1 differ, 1 missing)"
    assert cmds(p)[0] == (
        '/opt/venv/bin/python -m pip install "nvidia-nvjitlink-cu12==12.6.85" "nvidia-nccl-cu12==2.21.5"'
    )
    assert cmds(p)[-1] == (
        "/opt/venv/bin/python -m pip install --force-reinstall torch==2.13.0 "
        "--index-url https://download.pytorch.org/whl/cu126"
    )
    assert p.tables[0].rows == [
        ["nvidia-nvjitlink-cu12", "==12.6.85", "12.4.127"],
        ["nvidia-nccl-cu12", "==2.21.5", "missing"],
    ]
    facts.torch.libraries.manager = EnvironmentManager("uv", prefix="/opt/venv", uv_project=False)
    by, _ = run(facts)
    assert cmds(by["CD219"])[0].startswith('uv pip install --python /opt/venv/bin/python "nvidia-nvjitlink-cu12==')
    assert cmds(by["CD219"])[-1].endswith("--reinstall torch==2.13.0 --torch-backend=cu126")


def test_undefined_symbol_at_import_names_library_symbol_and_file_loaded_instead():
    d = "/usr/local/cuda-12.1/lib64"
    facts = healthy([gpu(0, "NVIDIA A10", "8.6")])
    facts.torch = torch_cpu(version=None, import_error="ImportError: …: undefined symbol: __nvJitLinkComplete_12_4")
    facts.torch.libraries = LibraryFacts(
        import_failure=ImportFailure(
            "undefined_symbol",
            library="libcusparse.so.12",
            symbol="__nvJitLinkComplete_12_4",
            family="nvjitlink",
            loaded_instead=f"{d}/libnvJitLink.so.12.1.105",
            loaded_origin="ld_library_path",
        ),
        pins=[PinCheck("nvidia-nvjitlink-cu12", "==12.6.85", "12.4.127", False)],
    )
    by, _ = run(facts)
    f = by["CD211"]
    assert f.title == (
        f"import torch fails: libcusparse.so.12: undefined symbol __nvJitLinkComplete_12_4 "
        f"(nvjitlink loaded from {d}/libnvJitLink.so.12.1.105)"
    )
    assert "ld_library_path" in f.why and "CD219" in f.why
    assert f'grep -vxF "{d}"' in cmds(f)[0]
    assert by["CD219"].severity is Severity.ERROR  # the mixed wheels are the cause of an import failure


def test_windows_c10_dll_failure_points_at_the_vc_redistributable():
    facts = healthy([gpu(0, "NVIDIA GeForce RTX 4070", "8.9")], os="Windows", os_id=None)
    facts.torch = torch_cpu(version=None, import_error='OSError: [WinError 126] … "…\\torch\\lib\\c10.dll" …')
    facts.torch.libraries = LibraryFacts(import_failure=ImportFailure("dll_load", library="c10.dll"))
    by, _ = run(facts)
    assert "c10.dll" in by["CD211"].title
    assert "winget install --id Microsoft.VCRedist.2015+.x64" in cmds(by["CD211"])


def test_ld_library_path_toolkit_older_than_the_wheel():
    d = "/usr/local/cuda-11.8/lib64"
    by, _ = run(a10_cu126(stale_toolkits=[f"{d}=11.8"], ld_library_path=[d], loaded=[]))
    f = by["CD220"]
    assert f.title == f"LD_LIBRARY_PATH has CUDA 11.8 ({d}); torch 2.13.0+cu126 is built with CUDA 12.6"
    by, _ = run(a10_cu126(stale_toolkits=["/usr/local/cuda-12.8/lib64=12.8"], loaded=[]))
    assert "CD220" not in by  # newer than the wheel: no harm


def test_two_torch_installs_verdict():
    user = "/home/a/.local/lib/python3.11/site-packages/torch"
    by, _ = run(a10_cu126(torch_installs=[user, f"{SITE}/torch"], user_site_torch=user))
    f = by["CD221"]
    assert f.title == f"2 torch installs are visible; {user} is the one imported"
    assert "export PYTHONNOUSERSITE=1" in cmds(f)


def test_torchvision_for_another_torch_or_cuda():
    bad = CompanionCheck("torchvision", "0.20.1+cu121", "==2.5.1", "0.28.0", "cu121", False)
    by, _ = run(a10_cu126(companions=[bad]))
    f = by["CD222"]
    assert f.severity is Severity.ERROR and f.title == "torchvision does not match torch 2.13.0+cu126"
    assert cmds(f) == [
        "/opt/venv/bin/python -m pip install --force-reinstall --no-deps torchvision==0.28.0 "
        "--index-url https://download.pytorch.org/whl/cu126"
    ]


def conda_cpu_facts():
    dev = [gpu(0, "NVIDIA GeForce RTX 3060", "8.6", total_gib=12)]
    facts = healthy(dev, driver="560.35.03", cuda=12060)
    facts.torch = torch_cpu(version="2.5.1")
    facts.torch.python_executable = "/opt/conda/envs/ml/bin/python"
    facts.torch.libraries = LibraryFacts(
        manager=EnvironmentManager(
            "conda",
            prefix="/opt/conda/envs/ml",
            conda_frontend="conda",
            torch_installer=None,
            conda_torch_package="pytorch 2.5.1 py3.11_cpu_0 (pytorch)",
            cpuonly=["cpuonly 2.0", "pytorch-mutex 1.0 cpu"],
            conda_torch_packages=["pytorch", "pytorch-mutex", "cpuonly"],
            pytorch_channel=["pytorch 2.5.1 from the pytorch channel"],
        )
    )
    return facts


def test_conda_cpuonly_and_deprecated_channel():
    by, _ = run(conda_cpu_facts())
    cpu = by["CD223"]
    assert cpu.title == "cpuonly 2.0 and pytorch-mutex 1.0 cpu installed in /opt/conda/envs/ml"
    # one remove of exactly what conda-meta lists (conda remove fails on a name that is not installed)
    assert cmds(cpu) == [
        "conda remove -p /opt/conda/envs/ml -y pytorch pytorch-mutex cpuonly",
        'conda install -p /opt/conda/envs/ml -c conda-forge pytorch-gpu "cuda-version=12.6"',
    ]
    assert "CD224" in by
    # CD202's fix is in conda's terms too
    assert cmds(by["CD202"]) == cmds(cpu)
    assert by["CD202"].fix[0].when.startswith("Install the CUDA build for this driver (conda-forge pytorch-gpu")


def cpu_torch_with(manager, **torch):
    dev = [gpu(0, "NVIDIA GeForce RTX 3060", "8.6", total_gib=12)]
    facts = healthy(dev, driver="560.35.03", cuda=12060)
    facts.torch = torch_cpu(version="2.13.0+cpu", **torch)
    facts.torch.libraries = LibraryFacts(manager=manager)
    return run(facts)[0]["CD202"]


def test_install_fix_in_each_installers_terms():
    py = "/opt/venv/bin/python"
    pip = cpu_torch_with(EnvironmentManager("pip", prefix="/opt/venv"))
    assert cmds(pip) == [
        f"{py} -m pip uninstall -y torch",
        f"{py} -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126",
    ]

    uv = cpu_torch_with(EnvironmentManager("uv", prefix="/opt/venv", uv_project=False), torchvision="0.28.0")
    assert cmds(uv) == [
        f"uv pip uninstall --python {py} torch torchvision",
        f"uv pip install --python {py} torch==2.13.0 torchvision==0.28.0 --torch-backend=cu126",
    ]

    proj = cpu_torch_with(
        EnvironmentManager(
            "uv", prefix="/w/app/.venv", project="/w/app", manifest="/w/app/pyproject.toml", uv_project=True
        )
    )
    assert proj.fix[0].when.endswith("add to /w/app/pyproject.toml")
    assert cmds(proj)[:4] == [
        "[[tool.uv.index]]",
        'name = "pytorch-cu126"',
        'url = "https://download.pytorch.org/whl/cu126"',
        "explicit = true",
    ]
    assert 'torch = [{ index = "pytorch-cu126" }]' in cmds(proj)
    assert "uv sync --project /w/app --upgrade-package torch" in cmds(proj)

    pixi = cpu_torch_with(
        EnvironmentManager("pixi", prefix="/w/p/.pixi/envs/default", project="/w/p", manifest="/w/p/pixi.toml")
    )
    assert cmds(pixi)[:2] == [
        # [system-requirements] is deprecated: the CUDA goes on the platform (pixi docs, "CLI migration")
        "pixi workspace platform edit linux-64 --cuda 12.6 --manifest-path /w/p/pixi.toml",
        'pixi add --manifest-path /w/p/pixi.toml pytorch-gpu "cuda-version=12.6"',
    ]

    poetry = cpu_torch_with(EnvironmentManager("poetry", prefix="/w/q/.venv", project="/w/q"))
    assert cmds(poetry)[:2] == [
        "poetry -C /w/q source add --priority explicit pytorch-cu126 https://download.pytorch.org/whl/cu126",
        "poetry -C /w/q add --source pytorch-cu126 torch==2.13.0",
    ]

    # torch pip-installed into a conda env is fixed with pip
    mixed = cpu_torch_with(EnvironmentManager("conda", prefix="/opt/venv", torch_installer="pip"))
    assert cmds(mixed)[-1].startswith(f"{py} -m pip install torch==2.13.0")


def test_k80_and_rtx5090_name_the_architecture_and_why():
    assert arch_reason("Tesla K80", "3.7") == (
        "Tesla K80 is Kepler, sm_37: no current release has kernels for it; the last that does is torch 2.7 (cu118)"
    )
    # torch 2.14 still has cu126 (no sm_120); 2.15 has only cu130 and cu132, which all have it
    assert arch_reason("NVIDIA GeForce RTX 5090", "12.0", release="2.14") == (
        "NVIDIA GeForce RTX 5090 is Blackwell, sm_120: only cu128 builds and newer have kernels for it"
    )
    assert arch_reason("NVIDIA GeForce RTX 5090", "12.0") is None
    assert arch_reason("NVIDIA A100", "8.0") is None  # every current build has kernels for it
    assert (
        arch_reason("NVIDIA A100", "8.0", always=True)
        == "NVIDIA A100 is Ampere, sm_80: every torch 2.15 build has kernels for it"
    )

    # a fix that installs torch 2.13 speaks of 2.13's builds, not of the newest release's
    assert arch_reason("NVIDIA A100", "8.0", always=True, release="2.13") == (
        "NVIDIA A100 is Ampere, sm_80: every torch 2.13 build has kernels for it"
    )
    assert arch_reason("NVIDIA GeForce RTX 5090", "12.0", always=True, release="2.6") == (
        "NVIDIA GeForce RTX 5090 is Blackwell, sm_120: no torch 2.6 build has kernels for it"
    )
    rtx3060 = cpu_torch_with(EnvironmentManager("pip", prefix="/opt/venv"))
    assert "torch 2.13.0 cu126" in rtx3060.fix[0].when and "every torch 2.13 build" in rtx3060.fix[0].when
    assert "2.14" not in rtx3060.fix[0].when

    dev = [gpu(0, "NVIDIA GeForce RTX 5090", "12.0", total_gib=32)]
    facts = healthy(dev, driver="570.86.16", cuda=12080)
    facts.torch = torch_cuda("2.5.1+cu121", "12.1", CU126, dev)
    by, _ = run(facts)
    # every build of the newest release (2.15) has sm_120, so the why names the releases instead
    assert "No torch 2.5 build has kernels for it; torch 2.7 and newer do." in by["CD205"].why
    assert "sm_120: only cu128 builds and newer" in by["CD205"].fix[0].when

    dev = [gpu(0, "Tesla K80", "3.7", total_gib=12)]
    facts = healthy(dev, driver="470.82.01", cuda=11040)
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", CU126, dev, available=False)
    by, _ = run(facts)
    assert "Tesla K80 is Kepler, sm_37: no current release has kernels for it" in by["CD206"].why


def test_driver_upgrade_is_a_real_command_for_this_os():
    dev = [gpu(0, "Tesla T4", "7.5", total_gib=15)]
    facts = healthy(dev, driver="535.104.05", cuda=12020)
    facts.torch = torch_cuda("2.13.0+cu130", "13.0", "7.5 8.0 8.6 9.0 10.0 12.0+PTX", dev, available=False)
    by, _ = run(facts)
    up = by["CD203"].fix[0]
    assert up.when.startswith("Upgrade the NVIDIA driver to 580.65.06 or newer (Ubuntu)")
    assert up.commands == ["sudo apt install nvidia-driver-580", "sudo reboot"]
    facts.system.os_id = "fedora"
    assert run(facts)[0]["CD203"].fix[0].commands[0] == "sudo dnf install akmod-nvidia xorg-x11-drv-nvidia-cuda"
    facts.system.wsl = True
    wsl = run(facts)[0]["CD203"].fix[0]
    assert "on Windows" in wsl.when and wsl.commands == ["explorer.exe https://www.nvidia.com/Download/index.aspx"]
    assert not any("nvidia-smi  #" in c for x in run(facts)[1] for c in cmds(x))


def test_platform_facts():
    assert "CPU-only" in wheels.platform_note("Windows", "AMD64")
    assert "MPS" in wheels.platform_note("Darwin", "arm64")
    assert "pytorch#168065" in wheels.platform_note("Linux", "aarch64")
    assert "JetPack" in wheels.platform_note("Linux", "aarch64", jetson=True)
    assert wheels.platform_note("Linux", "x86_64") is None
    # an aarch64 server (GH200) with a CPU build: the why says where the CUDA build comes from
    dev = [gpu(0, "NVIDIA GH200 480GB", "9.0", total_gib=96)]
    facts = healthy(dev, driver="580.95.05", cuda=13000, machine="aarch64")
    facts.torch = torch_cpu(version="2.13.0")
    by, _ = run(facts)
    assert "pytorch#168065" in by["CD202"].why
    assert cmds(by["CD202"])[-1].endswith("--index-url https://download.pytorch.org/whl/cu130")


def test_jetson_with_a_pypi_torch():
    facts = no_driver(machine="aarch64")
    facts.torch = torch_cpu(version="2.13.0")
    facts.torch.libraries = LibraryFacts(jetson="R36 (release), REVISION: 4.3")
    by, _ = run(facts)
    f = by["CD225"]
    assert f.severity is Severity.ERROR and "R36" in f.title and wheels.JETSON_WHEELS in cmds(f)[-1]
    assert "CD216" not in by  # not "no NVIDIA GPU to use": the integrated GPU is not on the PCI bus


def test_unknown_library_facts_add_no_problem():
    base = a10_cu126()
    _, findings = run(base)
    assert not [x for x in findings if x.section == "CUDA libraries" and x.severity.rank >= Severity.WARNING.rank]
    base.torch.libraries = None
    base.torch.loaded_libraries = None
    _, findings = run(base)
    assert not [x for x in findings if x.section == "CUDA libraries"]


# --- torch.compile ------------------------------------------------------------------------------------


def compile_facts(**kw):
    base = dict(
        python_executable="/opt/venv/bin/python",
        torch_version="2.13.0",
        compiler="/usr/bin/g++",
        compiler_name="g++",
        python_headers=True,
        cache_dir="/tmp/ti",
        cache_writable=True,
        complete=True,
    )
    base.update(kw)
    return CompileFacts(**base)


def test_compile_ok_missing_compiler_and_timeout():
    facts = healthy([gpu(0, "NVIDIA A10", "8.6")])
    facts.compile = compile_facts(cpu_ok=True, cpu_seconds=9.5, gpu_ok=True, gpu_seconds=12.0, triton="3.5.0")
    by, _ = run(facts)
    assert by["CD226"].title == "torch.compile works (CPU 9.5 s, GPU 12 s)"

    facts.compile = compile_facts(
        compiler=None, cpu_ok=False, cpu_error="InductorError: InvalidCxxCompiler: No working C++ compiler found"
    )
    f = run(facts)[0]["CD227"]
    assert f.title == "torch.compile fails on the CPU: no C++ compiler (g++)"
    assert cmds(f) == ["sudo apt install -y g++"]

    facts.compile = compile_facts(
        cpu_ok=True,
        gpu_ok=False,
        triton=None,
        triton_error="No module named 'triton'",
        gpu_error="BackendCompilerFailed: Cannot find a working triton installation",
    )
    f = run(facts)[0]["CD227"]
    assert "no working Triton" in f.title and cmds(f) == ["/opt/venv/bin/python -m pip install triton"]

    facts.compile = compile_facts(
        python_headers=False,
        python_include="/usr/include/python3.11",
        cpu_ok=False,
        cpu_error="fatal error: Python.h: No such file or directory",
    )
    facts.torch = torch_cuda("2.13.0+cu126", "12.6", CU126, [], python_version="3.11.7")
    assert cmds(run(facts)[0]["CD227"]) == ["sudo apt install -y python3.11-dev"]

    facts.compile = compile_facts(complete=False, timed_out=True)
    assert "timed out" in run(facts)[0]["CD228"].title


def test_compile_on_windows_names_msvc_cl():
    facts = healthy([gpu(0, "NVIDIA GeForce RTX 4070", "8.9")], os="Windows", os_id=None)
    facts.compile = compile_facts(
        compiler=None, compiler_name="cl", cpu_ok=False, cpu_error="InvalidCxxCompiler: Compiler: cl is not found."
    )
    f = run(facts)[0]["CD227"]
    assert "no C++ compiler (cl)" in f.title and "Microsoft.VisualStudio.2022.BuildTools" in cmds(f)[0]


# --- the real children (CPU torch) --------------------------------------------------------------------


def test_torch_child_reports_the_stack_of_the_real_torch():
    from cudadoctor.backends.libraries import enrich
    from cudadoctor.backends.torchenv import query_torch

    torch = pytest.importorskip("torch")

    t = enrich(query_torch(sys.executable, timeout=120))
    lf = t.libraries
    assert t.site_dirs and t.prefix == sys.prefix
    assert lf is not None and lf.torch_installs[0] == os.path.dirname(torch.__file__)
    if not torch.backends.cuda.is_built():
        assert lf.pins == [] and lf.loaded == []  # a CPU wheel pins no nvidia-* package, loads none
    assert lf.manager is not None and lf.manager.prefix == os.path.normpath(sys.prefix)


def test_compile_probe_is_in_full_only_and_runs_within_its_bound():
    from cudadoctor import probes

    assert "compile" not in [p.name for p in probes.select(set(), set(), False)]
    assert "compile" in [p.name for p in probes.select(set(), set(), True)]
    from cudadoctor.backends.compile import query_compile

    torch = pytest.importorskip("torch")

    c = query_compile(sys.executable, timeout=probes.by_name("compile").timeout * probes.CHILD_SHARE)
    assert c.complete and not c.timed_out and c.torch_version == torch.__version__
    gpu = torch.cuda.is_available()
    assert (c.gpu_ok if gpu else c.cpu_ok) is True, c.gpu_error or c.cpu_error
    assert (c.cpu_ok if gpu else c.gpu_ok) is None  # the CPU is compiled for only where no GPU runs kernels


def test_crafted_tree_end_to_end_through_the_rules(tree):
    """Raw facts as the torch child reports them, for a crafted uv venv: the classified stack, the pins
    and torchvision all reach their verdicts, with fixes in uv's terms."""
    from cudadoctor.backends.libraries import enrich

    (tree["prefix"] / "pyvenv.cfg").write_text("home = /usr/bin\nuv = 0.9.5\n")
    dev = [gpu(0, "NVIDIA A10", "8.6")]
    facts = healthy(dev, driver="570.124.06", cuda=12080)
    t = torch_cuda("2.8.0+cu128", "12.8", "7.0 7.5 8.0 8.6 9.0 10.0 12.0", dev, torchvision="0.22.1+cu126")
    t.python_executable = str(tree["prefix"] / "bin" / "python")
    t.path, t.prefix, t.python_version = str(tree["site"] / "torch"), str(tree["prefix"]), "3.11.7"
    t.site_dirs, t.ld_library_path = [str(tree["site"])], str(tree["toolkit"])
    t.loaded_libraries = {k: [v] for k, v in tree["paths"].items()}
    facts.torch = enrich(t)
    by, _ = run(facts)
    assert by["CD208"].title == f"torch loaded nvjitlink from outside its environment: {tree['paths']['nvjitlink']}"
    assert by["CD219"].tables[0].rows == [["nvidia-nvjitlink-cu12", "==12.8.93", "12.4.127"]]
    assert cmds(by["CD219"])[0] == f'uv pip install --python {t.python_executable} "nvidia-nvjitlink-cu12==12.8.93"'
    assert cmds(by["CD222"]) == [
        f"uv pip install --python {t.python_executable} --reinstall --no-deps torchvision==0.23.0 --torch-backend=cu128"
    ]
    assert "CD220" not in by  # the old toolkit already has its finding: the shadowing it causes


def test_torch_child_reports_an_import_failure_with_what_was_loaded(tmp_path):
    """A crafted torch whose import fails like a mixed nvJitLink does: the child's report, classified."""
    from cudadoctor.backends.libraries import enrich
    from cudadoctor.backends.torchenv import query_torch

    site = tmp_path / "site"
    msg = (
        "/x/nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, "
        "version libnvJitLink.so.12"
    )
    dist(site, "torch", "2.8.0+cu128", PINS_28, files=["torch/__init__.py"])
    (site / "torch" / "__init__.py").write_text(f"raise ImportError({msg!r})\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    t = enrich(query_torch(sys.executable, timeout=60, env=env))
    assert t.installed is True and "undefined symbol" in t.import_error
    f = t.libraries.import_failure
    assert (f.library, f.symbol, f.family) == ("libcusparse.so.12", "__nvJitLinkComplete_12_4", "nvjitlink")
    missing = {p.package for p in t.libraries.pins if p.installed is None}
    assert "nvidia-nvjitlink-cu12" in missing  # pinned by the crafted torch, not installed here
    facts = healthy([gpu(0, "NVIDIA A10", "8.6")])
    facts.torch = t
    by, _ = run(facts)
    assert by["CD211"].title == "import torch fails: libcusparse.so.12: undefined symbol __nvJitLinkComplete_12_4"


def test_macos_mps_build_and_compile_without_xcode_tools():
    facts = no_driver(os="Darwin", os_id=None, machine="arm64")
    facts.torch = torch_cpu(version="2.13.0", mps_built=True, mps_available=True)
    facts.torch.libraries = LibraryFacts(loaded=None, pins=[], torch_installs=[f"{SITE}/torch"])
    facts.compile = compile_facts(compiler=None, compiler_name="clang++", cpu_ok=False, cpu_error="InvalidCxxCompiler")
    by, _ = run(facts)
    assert by["CD216"].title == "torch 2.13.0 on macOS: MPS available"
    assert cmds(by["CD227"]) == ["xcode-select --install"]
    assert not {"CD202", "CD208", "CD219", "CD225"} & set(by)


def test_library_and_compile_facts_survive_a_saved_report(tree):
    from cudadoctor.facts import Facts
    from cudadoctor.facts.codec import from_jsonable, to_jsonable

    facts = a10_cu126(**vars(facts_of(tree)))
    facts.torch.libraries.manager = EnvironmentManager("uv", prefix="/v", uv_project=False, evidence=["uv = 0.9"])
    facts.compile = compile_facts(cpu_ok=True, cpu_seconds=3.0)
    back = from_jsonable(Facts, to_jsonable(facts))
    assert back == facts
    assert run(back)[0].keys() == run(facts)[0].keys()


def test_cu13_wheels_pins_through_the_cuda_toolkit_meta_package(tmp_path):
    """torch 2.11+ cu130 wheels pin `cuda-toolkit[cublas,…]==13.0.2`; its extras pin the libraries."""
    site = tmp_path / "site"
    dist(
        site,
        "torch",
        "2.13.0",
        ['cuda-toolkit[cublas,cudnn]==13.0.2; platform_system == "Linux"', "filelock"],
        files=["torch/__init__.py"],
    )
    dist(
        site,
        "cuda-toolkit",
        "13.0.2",
        [
            'nvidia-cublas==13.1.0.3; extra == "cublas"',
            'nvidia-cudnn-cu13==9.13.0.50; extra == "cudnn"',
            'nvidia-cufft==12.0.0.61; extra == "cufft"',
        ],
    )
    dist(site, "nvidia-cublas", "13.0.0.19")
    dist(site, "nvidia-cudnn-cu13", "9.13.0.50")
    lf = library_facts(
        None,
        site_dirs=[str(site)],
        torch_dir=None,
        prefix=str(tmp_path),
        ld_library_path=None,
        python_version="3.12.3",
    )
    by = {p.package: p for p in lf.pins}
    assert set(by) == {"cuda-toolkit", "nvidia-cublas", "nvidia-cudnn-cu13"}  # cufft: extra not asked for
    assert by["cuda-toolkit"].ok and by["nvidia-cudnn-cu13"].ok
    assert not by["nvidia-cublas"].ok and by["nvidia-cublas"].installed == "13.0.0.19"


def test_crafted_conda_env_end_to_end(tmp_path):
    """A conda env kept on a CPU build by cpuonly from the pytorch channel, read from conda-meta by the
    backend, reaches CD223/CD224 and a conda-forge fix for exactly the packages installed."""
    import json

    from cudadoctor.backends.libraries import enrich

    prefix = tmp_path / "envs" / "ml"
    meta = prefix / "conda-meta"
    meta.mkdir(parents=True)
    for name, version, build in (
        ("pytorch", "2.5.1", "py3.11_cpu_0"),
        ("cpuonly", "2.0", "0"),
        ("pytorch-mutex", "1.0", "cpu"),
    ):
        rec = {
            "name": name,
            "version": version,
            "build": build,
            "channel": "https://conda.anaconda.org/pytorch/linux-64",
        }
        (meta / f"{name}-{version}-{build}.json").write_text(json.dumps(rec))
    (meta / "history").write_text(
        "==> 2024-01-01 00:00:00 <==\n# cmd: /opt/mf/bin/mamba install pytorch cpuonly -c pytorch\n"
    )
    site = prefix / "lib" / "python3.11" / "site-packages"
    dist(site, "torch", "2.5.1", ["filelock"], files=["torch/__init__.py"])
    dev = [gpu(0, "NVIDIA GeForce RTX 3060", "8.6", total_gib=12)]
    facts = healthy(dev, driver="560.35.03", cuda=12060)
    t = torch_cpu(version="2.5.1")
    t.python_executable, t.prefix, t.site_dirs, t.torch_installer = (
        str(prefix / "bin" / "python"),
        str(prefix),
        [str(site)],
        "conda",
    )
    t.loaded_libraries = {}
    facts.torch = enrich(t)
    by, _ = run(facts)
    assert "CD223" in by and "CD224" in by
    assert cmds(by["CD223"]) == [
        f"mamba remove -p {prefix} -y pytorch pytorch-mutex cpuonly",
        f'mamba install -p {prefix} -c conda-forge pytorch-gpu "cuda-version=12.6"',
    ]


def _requires(name: str) -> list[str]:
    text = (ROOT / "tests" / "fixtures" / "metadata" / name).read_text()
    return [ln for ln in text.splitlines() if ln and not ln.startswith("#")]


def test_torch_2_11_cu130_pins_read_as_on_pypi(tmp_path):
    """The real Requires-Dist of torch 2.11.0 and cuda-toolkit 13.0.2 (tests/fixtures/metadata). On a
    healthy H100 box the doctor warned "26 missing": cuda-toolkit's markers are
    `(sys_platform == 'linux' or sys_platform == 'win32') and extra == 'all'`, and an evaluator without
    parentheses took every extra's pin (nvcc, npp, nvjpeg …, each twice) as torch's."""
    site = tmp_path / "site"
    dist(site, "torch", "2.11.0+cu130", _requires("torch-2.11.0.requires.txt"), files=["torch/__init__.py"])
    toolkit = _requires("cuda-toolkit-13.0.2.requires.txt")
    dist(site, "cuda-toolkit", "13.0.2", toolkit)
    asked = [
        "cublas",
        "cudart",
        "cufft",
        "cufile",
        "cupti",
        "curand",
        "cusolver",
        "cusparse",
        "nvjitlink",
        "nvrtc",
        "nvtx",
    ]
    installed = {}
    for line in toolkit:
        name, spec, marker = parse_requirement(line)
        extra = marker.rsplit("'", 2)[-2]
        if extra in asked:
            installed[name] = spec.removeprefix("==").removesuffix(".*")
    installed |= {
        "nvidia-cudnn-cu13": "9.19.0.56",
        "nvidia-cusparselt-cu13": "0.8.0",
        "nvidia-nccl-cu13": "2.28.9",
        "nvidia-nvshmem-cu13": "3.4.5",
    }
    for name, version in installed.items():
        dist(site, name, version)
    lf = library_facts(
        None, site_dirs=[str(site)], torch_dir=None, prefix=str(tmp_path), ld_library_path=None, python_version="3.12.3"
    )
    packages = [p.package for p in lf.pins]
    assert len(packages) == len(set(packages)), "a pin is listed twice"
    assert set(packages) == {"cuda-toolkit", *installed}
    assert all(p.ok for p in lf.pins), [p for p in lf.pins if not p.ok]
    # and a library of an extra torch did not ask for is not torch's business
    assert "nvidia-cuda-nvcc" not in packages and "nvidia-npp" not in packages


def test_markers_with_parentheses_bind_as_pep_508_says():
    env = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": "x86_64", "python_version": "3.12"}
    both = "(sys_platform == 'linux' or sys_platform == 'win32') and extra == '{}'"
    assert not marker_applies(both.format("all"), env, ["cublas"])
    assert marker_applies(both.format("cublas"), env, ["cublas"])
    assert not marker_applies("sys_platform == 'win32' and (extra == 'a' or extra == 'b')", env, ["a"])
    assert marker_applies("sys_platform == 'win32' or (extra == 'a' and python_version >= '3.10')", env, ["a"])
    assert marker_applies("platform_machine not in 'aarch64 arm64'", env)
    assert marker_applies("an unreadable ( marker", env)  # unknown shapes keep the pin


def test_loaded_libraries_are_named_by_file_and_paths_keep_their_end():
    """On the H100 box libcublas and libcublasLt both showed as "cublas", libcusparseLt as "cusparse", and
    the File column kept "/opt/torch/.venv/lib/pyth…": the one part every row shares."""
    from cudadoctor.render.layout import table_lines
    from cudadoctor.rules.libraries import _table

    site = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia"
    libs = [
        LoadedLibrary("cublas", f"{site}/cu13/lib/libcublas.so.13", "wheel", "13.1.0.3", package="nvidia-cublas"),
        LoadedLibrary("cublas", f"{site}/cu13/lib/libcublasLt.so.13", "wheel", "13.1.0.3", package="nvidia-cublas"),
        LoadedLibrary(
            "cusparse", f"{site}/cusparselt/lib/libcusparseLt.so.0", "wheel", "0.8.0", package="nvidia-cusparselt-cu13"
        ),
        LoadedLibrary("cudnn", "C:\\torch\\lib\\cudnn_graph64_9.dll", "torch", "9.1"),
    ]
    lines = table_lines(_table(libs), 72)
    assert [ln.split()[0] for ln in lines] == ["Library", "cublas", "cublasLt", "cusparseLt", "cudnn_graph64_9"]
    assert all(len(ln) <= 72 for ln in lines)
    assert lines[2].endswith("lib/libcublasLt.so.13") and "…" in lines[2]
    assert lines[0].split()[-1] == "File"  # the layout mark is not shown


def test_environment_paths_in_fixes_are_one_shell_word():
    """A conda prefix or a uv/poetry project from the machine (or a replayed report) pastes as one word."""
    conda = cpu_torch_with(EnvironmentManager("conda", prefix="/opt/my env", conda_torch_package=True))
    assert any(" -p '/opt/my env' " in c for c in cmds(conda))
    poetry = cpu_torch_with(EnvironmentManager("poetry", prefix="/w/q/.venv", project="/w/my q"))
    assert all(c.startswith("poetry -C '/w/my q' ") for c in cmds(poetry))


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


def test_pins_with_an_unknown_torch_version() -> None:
    t = torch_cpu(version=None)
    t.libraries = LibraryFacts(pins=[PinCheck("nvidia-cudnn-cu12", "==9.10.2.21", "9.1.0.70", ok=False)])
    title = by_code(evaluate(Facts(system=linux(), torch=t), []))["CD219"].title
    assert title == "nvidia-* wheels do not match the pins of torch (1 differ)"
    t.version = "2.13.0+cu130"
    title = by_code(evaluate(Facts(system=linux(), torch=t), []))["CD219"].title
    assert title == "nvidia-* wheels do not match the pins of torch 2.13.0+cu130 (1 differ)"


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

    from cudadoctor.rules.torch_install import import_failure_detail

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
