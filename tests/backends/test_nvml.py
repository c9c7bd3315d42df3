"""The NVML backend's pieces that need no driver."""

from __future__ import annotations

from cudadoctor.backends.nvml import library_version_from_path


def test_user_space_driver_version_from_library_file():
    assert library_version_from_path("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14") == "550.54.14"
    assert library_version_from_path("/tmp/libnvidia-ml.so.1") is None
