"""Example machines for the CUDA-extension check (rules/extensions.py): a venv with a current torch and
extensions built for other GPUs or another torch."""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.facts.extensions import ExtensionFacts, ExtensionLibrary, ExtensionPackage
from cudadoctor.rules.examples.base import VENV, driver_580, example_gpu, libcuda_ok, ubuntu_system, venv_torch

_FLASH = "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"
_LINKS = ["libc10.so", "libtorch.so", "libcudart.so.13"]
_LINKS_CU12 = ["libc10.so", "libtorch.so", "libcudart.so.12"]


def extension_machines() -> dict[str, Facts]:
    h100 = [example_gpu("NVIDIA H100 80GB HBM3", "9.0")]
    rtx5090 = [example_gpu("NVIDIA GeForce RTX 5090", "12.0", total=32, used=1)]
    return {
        # flash-attn built for Ampere only, on an H100: "no kernel image is available"
        "flash-attn-ampere-only-on-h100": Facts(
            system=ubuntu_system(),
            driver=driver_580(h100),
            cuda_driver=libcuda_ok(),
            torch=venv_torch(),
            extensions=ExtensionFacts(
                python_executable=VENV,
                packages=[
                    ExtensionPackage(
                        "flash_attn",
                        "2.6.3",
                        "torch",
                        [ExtensionLibrary(_FLASH, ["sm_80", "sm_86"], [], _LINKS, 812)],
                    )
                ],
            ),
        ),
        # a custom op with PTX for Turing only on an RTX 5090, and an xformers built for an older torch and CUDA 12
        "ptx-turing-only-on-rtx5090": Facts(
            system=ubuntu_system(),
            driver=driver_580(rtx5090),
            cuda_driver=libcuda_ok(),
            torch=venv_torch(),
            extensions=ExtensionFacts(
                python_executable=VENV,
                packages=[
                    ExtensionPackage("my-ops", "0.1.0", None, [ExtensionLibrary("my_ops/_C.so", [], ["compute_75"])]),
                    ExtensionPackage(
                        "xformers",
                        "0.0.28.post3",
                        "torch==2.5.1",
                        [
                            ExtensionLibrary(
                                "xformers/_C.so", ["sm_80", "sm_90", "sm_120"], ["compute_120"], _LINKS_CU12, 40
                            )
                        ],
                    ),
                ],
            ),
        ),
    }
