"""What manages the target environment, read from crafted trees: pyvenv.cfg, conda-meta, pixi, poetry."""

from __future__ import annotations

import json

from cudadoctor.backends.installer import detect


def venv(root, cfg="home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.7\n"):
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyvenv.cfg").write_text(cfg)
    (root / "bin").mkdir(exist_ok=True)
    return root


def conda_env(root, packages, history=""):
    meta = root / "conda-meta"
    meta.mkdir(parents=True)
    for name, version, build, channel in packages:
        rec = {"name": name, "version": version, "build": build, "channel": channel}
        (meta / f"{name}-{version}-{build}.json").write_text(json.dumps(rec))
    (meta / "history").write_text(history)
    return root


def test_plain_pip_venv(tmp_path):
    m = detect(str(venv(tmp_path / "env")))
    assert m.kind == "pip" and m.uv_project is None


def test_uv_venv_and_uv_project(tmp_path):
    cfg = "home = /usr/bin\nimplementation = CPython\nuv = 0.9.5\nversion_info = 3.12.3\n"
    bare = detect(str(venv(tmp_path / "bare", cfg)))
    assert bare.kind == "uv" and bare.uv_project is False
    assert "uv = 0.9.5" in bare.evidence[0]

    project = tmp_path / "proj"
    venv(project / ".venv", cfg)
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (project / "uv.lock").write_text("version = 1\n")
    m = detect(str(project / ".venv"))
    assert m.kind == "uv" and m.uv_project is True
    assert m.project == str(project) and m.manifest == str(project / "pyproject.toml")


def test_torch_installed_by_uv_into_a_plain_venv(tmp_path):
    m = detect(str(venv(tmp_path / "env")), torch_installer="uv")
    assert m.kind == "uv" and "INSTALLER" in m.evidence[-1]


def test_poetry_virtualenv_and_project(tmp_path):
    cache = tmp_path / "cache" / "pypoetry" / "virtualenvs" / "app-AbC123-py3.11"
    assert detect(str(venv(cache, "home = /usr/bin\nvirtualenv = 20.26.6\n"))).kind == "poetry"
    project = tmp_path / "app"
    venv(project / ".venv", "home = /usr/bin\nvirtualenv = 20.26.6\n")
    (project / "pyproject.toml").write_text('[tool.poetry]\nname = "app"\n')
    m = detect(str(project / ".venv"))
    assert m.kind == "poetry" and m.project == str(project)


def test_conda_cpuonly_mutex_and_pytorch_channel(tmp_path):
    history = (
        "==> 2024-03-01 10:00:00 <==\n"
        "# cmd: /opt/conda/bin/conda install pytorch torchvision cpuonly -c pytorch\n"
        "# conda version: 24.1.2\n"
        "+pytorch::cpuonly-2.0-0\n"
        "+pytorch::pytorch-mutex-1.0-cpu\n"
    )
    pkgs = [
        ("cpuonly", "2.0", "0", "https://conda.anaconda.org/pytorch/noarch"),
        ("pytorch-mutex", "1.0", "cpu", "https://conda.anaconda.org/pytorch/noarch"),
        ("pytorch", "2.5.1", "py3.11_cpu_0", "https://conda.anaconda.org/pytorch/linux-64"),
        ("python", "3.11.9", "h955ad1f_0", "pkgs/main"),
    ]
    m = detect(str(conda_env(tmp_path / "envs" / "ml", pkgs, history)))
    assert m.kind == "conda" and m.conda_frontend == "conda"
    assert m.cpuonly == ["cpuonly 2.0", "pytorch-mutex 1.0 cpu"]
    assert m.conda_torch_packages == ["pytorch", "pytorch-mutex", "cpuonly"]
    assert m.conda_torch_package == "pytorch 2.5.1 py3.11_cpu_0 (pytorch)"
    assert any("pytorch 2.5.1 from the pytorch channel" in e for e in m.pytorch_channel)
    assert any("-c pytorch" in e for e in m.pytorch_channel)


def test_conda_forge_env_with_mamba_has_no_cpu_pin(tmp_path):
    history = "==> 2025-01-01 10:00:00 <==\n# cmd: /opt/mf/bin/mamba install -c conda-forge pytorch-gpu\n"
    pkgs = [
        ("pytorch", "2.7.1", "cuda126_mkl_py311_h0", "https://conda.anaconda.org/conda-forge/linux-64"),
        ("pytorch-gpu", "2.7.1", "cuda126_mkl_h0", "https://conda.anaconda.org/conda-forge/linux-64"),
    ]
    m = detect(str(conda_env(tmp_path / "env", pkgs, history)))
    assert m.kind == "conda" and m.conda_frontend == "mamba"
    assert m.cpuonly == [] and m.pytorch_channel == []


def test_pixi_environment(tmp_path):
    project = tmp_path / "work"
    env = conda_env(project / ".pixi" / "envs" / "default", [])
    (project / "pixi.toml").write_text('[workspace]\nname = "work"\nchannels = ["conda-forge"]\n')
    m = detect(str(env))
    assert m.kind == "pixi" and m.project == str(project)
    assert m.manifest == str(project / "pixi.toml")

    other = tmp_path / "py"
    env2 = conda_env(other / ".pixi" / "envs" / "cuda", [])
    (other / "pyproject.toml").write_text('[project]\nname = "py"\n[tool.pixi.workspace]\nchannels = []\n')
    assert detect(str(env2)).manifest == str(other / "pyproject.toml")


def test_system_python_and_unknown_prefix(tmp_path):
    (tmp_path / "usr").mkdir()
    assert detect(str(tmp_path / "usr")).kind == "system"
    assert detect(None) is None


def test_history_evidence_carries_no_credentials(tmp_path):
    history = (
        "==> 2024-03-01 10:00:00 <==\n"
        "# cmd: conda install pytorch -c pytorch -c https://bob:s3cret@conda.example.com/t/tok123/main --token abc\n"
    )
    m = detect(str(conda_env(tmp_path / "env", [], history)))
    (line,) = m.pytorch_channel
    assert "s3cret" not in line and "abc" not in line and "tok123" not in line and "***@conda.example.com" in line
