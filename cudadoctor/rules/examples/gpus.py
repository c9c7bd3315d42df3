"""Example machines whose story is the GPUs themselves: health (ECC, retired pages, heat), which GPUs
CUDA sees (CUDA_VISIBLE_DEVICES, MIG, order), and what `check --full` measures (copies, P2P, smoke test)."""

from __future__ import annotations

from cudadoctor.facts import (
    BandwidthFacts,
    Facts,
    GpuProcess,
    MigInstance,
    PlatformFacts,
    SmokeFacts,
    SmokeStep,
    Transfer,
)
from cudadoctor.facts.measure import PeerTransfer
from cudadoctor.facts.platform import (
    IommuFacts,
    KernelModuleFacts,
    XidEvent,
)
from cudadoctor.knowledge.gpu_health import CLOCKS_HW_THERMAL, CLOCKS_SW_THERMAL, COMPUTE_EXCLUSIVE_PROCESS
from cudadoctor.rules.examples.base import (
    KERNEL,
    GiB,
    driver_580,
    example_driver,
    example_gpu,
    ubuntu_system,
    venv_torch,
)

# --- GPU health, P2P and the measurements ----------------------------------------------------------


def _gpu_health() -> dict[str, Facts]:
    node = [example_gpu(index=i, used=0, persistence_mode=True) for i in range(4)]
    node[2] = example_gpu(
        index=2,
        used=0,
        persistence_mode=True,
        ecc_uncorrected_volatile=2,
        ecc_uncorrected_aggregate=2,
        remapped_rows_uncorrectable=2,
        remapped_rows_pending=True,
    )
    xid = [
        XidEvent(48, "0000:1a:00", "NVRM: Xid (PCI:0000:1a:00): 48, pid=31337, name=python, DBE (double bit error)"),
        XidEvent(63, "0000:1a:00", "NVRM: Xid (PCI:0000:1a:00): 63, pid=31337, Row Remapper: New row marked"),
    ]
    v100 = example_gpu("Tesla V100-SXM2-32GB", "7.0", total=32, used=0, retired_pages_dbe=1, retired_pages_pending=True)
    busy = GpuProcess(pid=4242, used_memory=30 * GiB, name="python", user="bob")
    hot = example_gpu(
        "NVIDIA RTX 6000 Ada Generation",
        "8.9",
        total=48,
        used=30,
        temperature_c=91,
        clocks_event_reasons=CLOCKS_SW_THERMAL | CLOCKS_HW_THERMAL,
        persistence_mode=False,
        compute_mode=COMPUTE_EXCLUSIVE_PROCESS,
        processes=[busy],
    )
    return {
        # an A100 node whose GPU 2 had a double-bit error: remap pending, Xid 48 and 63 in the log
        "a100-double-bit-error": Facts(
            system=ubuntu_system(), driver=example_driver(devices=node), platform=PlatformFacts(xid=xid)
        ),
        # a V100 with a page waiting to be retired
        "v100-page-retirement-pending": Facts(system=ubuntu_system(), driver=example_driver(devices=[v100])),
        # a hot, shared workstation: thermal slowdown, exclusive compute mode, kernel log for root only
        "hot-shared-workstation": Facts(
            system=ubuntu_system(),
            driver=example_driver(devices=[hot]),
            platform=PlatformFacts(
                xid=None, module=KernelModuleFacts(kernel=KERNEL, loaded=True, kernel_log_readable=False)
            ),
        ),
    }


def _transfers(device: int, h2d: float, d2h: float, h2d_pageable: float, d2h_pageable: float) -> list[Transfer]:
    rates = {("h2d", "pinned"): h2d, ("d2h", "pinned"): d2h, ("h2d", "pageable"): h2d_pageable}
    rates[("d2h", "pageable")] = d2h_pageable
    return [Transfer(device, d, m, gbps=g, size=256 << 20) for (d, m), g in rates.items()]


def _measured() -> dict[str, Facts]:
    link = dict(pcie_gen_current=4, pcie_gen_max=4, pcie_width_current=16, pcie_width_max=16)
    a6000 = [example_gpu("NVIDIA RTX A6000", "8.6", index=i, total=48, used=0, **link) for i in range(4)]
    # P2P between the pairs on one switch only, and slow there: the IOMMU translates GPU traffic
    p2p = [[i != j and i // 2 == j // 2 for j in range(4)] for i in range(4)]
    riser = example_gpu(
        "NVIDIA GeForce RTX 4090",
        "8.9",
        total=24,
        used=1,
        pcie_gen_current=4,
        pcie_gen_max=4,
        pcie_width_current=8,
        pcie_width_max=16,
    )
    return {
        # a 4-GPU workstation with the IOMMU in translation mode (`check --full`)
        "iommu-translation-slow-p2p": Facts(
            system=ubuntu_system(),
            driver=driver_580(a6000),
            platform=PlatformFacts(
                iommu=IommuFacts(
                    enabled=True, cmdline="intel_iommu=on", group_types={d.pci_bus_id or "": "DMA-FQ" for d in a6000}
                )
            ),
            bandwidth=BandwidthFacts(
                transfers=[t for i in range(4) for t in _transfers(i, 24.6, 26.1, 11.8, 12.3)],
                device_names={str(i): "NVIDIA RTX A6000" for i in range(4)},
                p2p_access=p2p,
                p2p=[PeerTransfer(0, 1, gbps=3.1, size=256 << 20), PeerTransfer(2, 3, gbps=3.3, size=256 << 20)],
            ),
        ),
        # an RTX 4090 on a riser that trained to x8, its copies far below the link
        "riser-x8": Facts(
            system=ubuntu_system(),
            driver=driver_580([riser]),
            bandwidth=BandwidthFacts(transfers=_transfers(0, 6.2, 6.5, 5.8, 5.9), device_names={"0": riser.name or ""}),
        ),
        # a GPU that computes wrong results: the smoke test's loss does not fall on it
        "gpu-computes-wrong": Facts(
            system=ubuntu_system(),
            driver=driver_580([example_gpu(used=0)]),
            torch=venv_torch(),
            smoke=SmokeFacts(
                steps=[SmokeStep("cpu", "mlp", [2.31, 0.42]), SmokeStep("cuda:0", "mlp", [2.31, 2.35])],
                max_loss_difference=0.8,
                amp_dtype="bfloat16",
                amp_finite=False,
                amp_error="loss is nan",
                checkpoint_ok=False,
                checkpoint_error="tensors differ after torch.load(map_location='cpu')",
            ),
        ),
    }


# --- which GPUs CUDA sees --------------------------------------------------------------------------


def _visible_devices() -> dict[str, Facts]:
    l40s = [example_gpu("NVIDIA L40S", "8.9", index=i, total=48, used=0) for i in range(4)]
    mixed = [
        example_gpu("NVIDIA GeForce RTX 3060", "8.6", total=12, used=0),
        example_gpu("NVIDIA GeForce RTX 4090", "8.9", 1, 24, 0),
    ]
    mig = example_gpu(
        mig_enabled=True,
        used=0,
        mig_instances=[
            MigInstance(i, uuid=f"MIG-{0x5E3F7A10 + i:08x}-0b3e-5d2c-9a41-{0x2E7C9B10 + i:012x}") for i in range(3)
        ],
    )
    # a shared 4-GPU box: CUDA_VISIBLE_DEVICES set empty, with an index out of range, with a GPU twice
    box = {
        "cuda-visible-devices-empty": "",
        "cuda-visible-devices-out-of-range": "0,4,1",
        "cuda-visible-devices-twice": "1,1",
    }
    return {
        **{
            name: Facts(system=ubuntu_system(env={"CUDA_VISIBLE_DEVICES": v}), driver=example_driver(devices=l40s))
            for name, v in box.items()
        },
        # an RTX 3060 next to an RTX 4090: CUDA's order differs from nvidia-smi's
        "mixed-gpus-order": Facts(system=ubuntu_system(), driver=example_driver(devices=mixed)),
        # an A100 split into MIG instances
        "a100-mig": Facts(system=ubuntu_system(), driver=example_driver(devices=[mig])),
    }


def examples() -> dict[str, Facts]:
    return {**_gpu_health(), **_visible_devices(), **_measured()}
