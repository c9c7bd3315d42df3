"""Issue 24: every fix it prints is right where it is pasted. Each test runs the command a user runs and
looks at what they see: alternatives that never read as one command line, fences labelled by what the
lines are, the torch.compile check in a section of its own, --python given a directory, and an install
into an externally managed Python that goes through a venv."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.backends.test_torch_session import fake_python
from tests.conftest import H100_HEALTHY

LOST_GPU = H100_HEALTHY + 'device name="NVIDIA A100-SXM4-80GB" cc=8.0 error=15\n'


def test_github_annotations_never_join_alternatives_into_one_command_line(run_cli):
    """`GITHUB_ACTIONS=true cudadoctor check` printed `sudo nvidia-smi --gpu-reset -i 1 | sudo reboot`, a
    shell pipe; each way to fix is now its own labelled block, one command a line."""
    r = run_cli("check", "--skip", "torch", "--json", machine=LOST_GPU, env={"GITHUB_ACTIONS": "true"})
    lost = next(ln for ln in r.stderr.splitlines() if ln.startswith("::error title=cudadoctor CD105::"))
    body = lost.split("::", 2)[2].split("%0A")
    assert "    sudo nvidia-smi --gpu-reset -i 1" in body and "    sudo reboot" in body
    reset, reboot = body.index("    sudo nvidia-smi --gpu-reset -i 1"), body.index("    sudo reboot")
    assert body[reboot - 1].startswith("Fix — Or reboot"), body  # an alternative under its own label
    assert reset < reboot - 1
    # every command line of every annotation is one command of the report, never two joined
    commands = {c for f in r.json["findings"] for x in f["fix"] for c in x["commands"]}
    annotations = [ln.split("::", 2)[2] for ln in r.stderr.splitlines() if ln.startswith("::")]
    shown = [ln[4:] for a in annotations for ln in a.split("%0A") if ln.startswith("    ")]
    assert shown and set(shown) <= commands


def test_markdown_fences_say_what_the_lines_are(run_cli):
    """A Python snippet sat in a ```sh fence; now Python is ```python and shell lines are ```sh."""
    r = run_cli("check", "--format", "markdown", machine=H100_HEALTHY)
    text = r.stdout
    fences = re.findall(r"```(\w*)\n((?:    .*\n)+?)    ```", text)
    python = "".join(body for lang, body in fences if lang == "python")
    assert "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')" in python
    assert "torch.device" not in "".join(body for lang, body in fences if lang == "sh")
    assert any("-m pip install torch==" in body for lang, body in fences if lang == "sh")  # CD202's install
    # the text report names the language beside the label, the JSON report carries it
    r = run_cli("check", "--json", machine=H100_HEALTHY)
    fixes = [x for f in r.json["findings"] for x in f["fix"] if x["commands"]]
    assert {x["lang"] for x in fixes if "torch.device" in x["commands"][0]} == {"python"}
    r = run_cli("check", machine=H100_HEALTHY)
    assert "Fix — Pick the device at run time (Python):" in r.stdout


def test_the_torch_compile_check_has_a_section_of_its_own(tmp_path):
    """`check --full` listed the torch.compile check under "CUDA libraries"."""
    import subprocess

    python, _ = fake_python(tmp_path)
    p = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "check", "--full", "--python", python],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = p.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if "CD226 torch.compile works" in ln)
    heading = next(ln for ln in reversed(lines[:at]) if ln and not ln.startswith(" "))
    assert heading == "torch.compile"
    p = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "check", "--full", "--python", python, "--format", "markdown"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    md = p.stdout
    assert md.index("### torch.compile") < md.index("**CD226**")
    assert "### CUDA libraries" not in md[: md.index("**CD226**")].rsplit("###", 1)[-1]


def test_python_given_an_environment_directory_uses_its_interpreter(tmp_path):
    """`check --python SOME_VENV_DIR` said "Permission denied"; a venv or conda directory now means its
    interpreter, and a directory with none gets one line that says what to pass."""
    import subprocess
    import venv

    env = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env)

    def doctor(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cudadoctor", *args], capture_output=True, text=True, timeout=120)

    p = doctor("check", "--only", "torch", "--json", "--python", str(env))
    assert "Permission denied" not in p.stdout + p.stderr
    report = json.loads(p.stdout)
    assert report["facts"]["torch"]["python_executable"] == str(env / "bin" / "python")
    assert [f["code"] for f in report["findings"]] == ["CD201"]  # this venv has no torch: that, and only that

    empty = tmp_path / "empty"
    empty.mkdir()
    p = doctor("check", "--only", "torch", "--python", str(empty))
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"cudadoctor: --python {empty}: no Python interpreter in this directory; pass one, like {empty}/bin/python"
    ]


A100 = 'device name="NVIDIA A100-SXM4-80GB" cc=8.0 total=85520809984 used=1073741824 gen=4/4 width=16/16\n'
FOUR_A100 = "driver 550.54.14\ncuda 12040\n" + A100 * 4


def test_only_torch_never_recommends_the_cpu_build_on_a_gpu_machine(run_cli, tmp_path):
    """`check --python VENV/bin/python --only torch` on four A100s said "Install the build that fits this
    machine: … /whl/cpu": with the driver and PCI checks skipped, whether there is a GPU is unknown, so no
    install command is given; the full check gives the CUDA build for this driver."""
    import venv

    env = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(env)
    python = str(env / "bin" / "python")
    r = run_cli("check", "--python", python, "--only", "torch", "--json", machine=FOUR_A100)
    (cd201,) = [f for f in r.json["findings"] if f["code"] == "CD201"]
    commands = [c for x in cd201["fix"] for c in x["commands"]]
    assert not any("pip install" in c for c in commands), commands
    assert "whether it has an NVIDIA GPU is not known" in cd201["fix"][0]["when"]
    r = run_cli("check", "--python", python, "--json", machine=FOUR_A100)
    (cd201,) = [f for f in r.json["findings"] if f["code"] == "CD201"]
    install = cd201["fix"][0]["commands"]
    assert install and install[-1].startswith(f"{python} -m pip install torch==")
    assert "/whl/cu12" in install[-1]  # driver 550 runs CUDA 12.4: a cu12x build, never cpu


def externally_managed_python(root: Path) -> Path:
    """A system-like interpreter (no venv) whose stdlib carries PEP 668's EXTERNALLY-MANAGED marker, as
    Debian's /usr/bin/python3 does: this interpreter run with PYTHONHOME on a copy of its stdlib made of
    links, with no site-packages (so no torch), and the marker added."""
    import sysconfig

    stdlib = Path(sysconfig.get_paths(vars={"base": sys.base_prefix, "installed_base": sys.base_prefix})["stdlib"])
    lib = root / "lib" / stdlib.name
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "EXTERNALLY-MANAGED"):
            (lib / entry.name).symlink_to(entry)
    (lib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=use a venv\n")
    python = root / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nPYTHONHOME={root} exec {sys._base_executable} "$@"\n')
    python.chmod(0o755)
    return python


def test_an_externally_managed_python_gets_its_install_through_a_venv(run_cli, tmp_path):
    """`check --python /usr/bin/python3` on Debian (PEP 668): the `pip install` fix failed with
    `externally-managed-environment`. The install now makes a venv from that Python and installs there."""
    python = externally_managed_python(tmp_path / "usr")
    r = run_cli("check", "--python", str(python), "--json", machine=H100_HEALTHY)
    manager = r.json["facts"]["torch"]["libraries"]["manager"]
    assert manager["kind"] == "system" and manager["externally_managed"] is True
    (cd201,) = [f for f in r.json["findings"] if f["code"] == "CD201"]
    install = cd201["fix"][0]
    assert install["commands"][-2:] == [
        f"{python} -m venv ~/venvs/torch",
        install["commands"][-1],
    ]
    assert install["commands"][-1].startswith("~/venvs/torch/bin/python -m pip install torch==")
    assert not any(c.startswith(f"{python} -m pip install") for c in install["commands"])
    assert "externally managed (PEP 668)" in install["when"]
    # a venv made from the same Python is not externally managed: pip installs into it directly
    import venv

    env = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env)
    r = run_cli("check", "--python", str(env / "bin" / "python"), "--json", machine=H100_HEALTHY)
    (cd201,) = [f for f in r.json["findings"] if f["code"] == "CD201"]
    assert cd201["fix"][0]["commands"][-1].startswith(f"{env / 'bin' / 'python'} -m pip install torch==")
