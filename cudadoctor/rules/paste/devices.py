"""What the paste's prose and logs say about the hardware and the kernel: the GPU generation, a Jetson, P2P,
the launcher's processes per node; Secure Boot, the module for this kernel, the open flavour, nouveau, Xid.
"""

from __future__ import annotations

from cudadoctor.facts import Facts
from cudadoctor.facts.paste import PasteHit
from cudadoctor.knowledge.versions import parse_version
from cudadoctor.model import Finding, Severity, msg
from cudadoctor.rules.catalogue import CATALOGUE, fix
from cudadoctor.rules.paste.builds import gpus_with_cc


def hardware_and_platform(f: Facts, kinds: dict[str, list[PasteHit]]) -> list[Finding]:
    """What the paste's prose and logs say about the GPU generation, a Jetson, P2P and the launcher."""
    from cudadoctor.rules.driver import NO_GPU
    from cudadoctor.rules.multi_gpu import P2P_MISSING
    from cudadoctor.rules.requirements import LOW_CAPABILITY
    from cudadoctor.rules.torch_build import GPU_TOO_OLD
    from cudadoctor.rules.torch_packages import JETSON

    out = []
    for name, cc in gpus_with_cc(f):
        if parse_version(cc) <= (3, 0):  # type: ignore[operator]
            out.append(
                GPU_TOO_OLD.finding(
                    title=msg(
                        "{gpu} (compute capability {cc}) is older than every PyTorch CUDA build", gpu=name, cc=cc
                    ),
                    why=msg(
                        "{page} PyTorch's CUDA binaries dropped compute capability 3.0 in 0.4.1 and never ran on "
                        "2.x (pytorch#14681); such a GPU shows torch.cuda.is_available() True and then fails "
                        'with "invalid device function" or "no kernel image".',
                        page=msg(GPU_TOO_OLD.explanation),
                    ),
                    fix=[fix(msg("Use the CPU"), "device = torch.device('cpu')")],
                )
            )
            break
    if "attention-needs-newer-gpu" in kinds:
        h = kinds["attention-needs-newer-gpu"][0]
        out.append(
            LOW_CAPABILITY.finding(
                title=msg("The attention kernel needs a newer GPU: {error}", error=h.text),
                why=msg(
                    "FlashAttention(-2) runs on compute capability 8.0 (Ampere) and newer. On a Volta or Turing "
                    "GPU (V100, T4, RTX 20xx) the library falls back to another backend or refuses: a property "
                    "of the GPU, not of the installation."
                ),
                fix=[
                    fix(
                        msg("See the GPU's compute capability"), "nvidia-smi --query-gpu=name,compute_cap --format=csv"
                    ),
                    fix(
                        msg("Use an attention backend this GPU has (or an Ampere or newer GPU)"),
                        "export VLLM_ATTENTION_BACKEND=XFORMERS  # vLLM; in xFormers pick the cutlass operator",
                    ),
                ],
            )
        )
    if "jetson" in kinds and (
        (f.torch is not None and f.torch.is_available is False) or "pip-install-torch" in kinds or "sdist" in kinds
    ):
        out.append(
            JETSON.finding(
                title=msg(
                    "On a Jetson, torch must come from NVIDIA's JetPack wheels: {line}", line=kinds["jetson"][0].text
                ),
                fix=[
                    fix(msg("See the JetPack (L4T) release"), "cat /etc/nv_tegra_release"),
                    fix(
                        msg(
                            "Install the torch wheel NVIDIA builds for that JetPack (PyPI's aarch64 torch is CPU-only)"
                        ),
                        "python3 -m pip install torch --index-url https://pypi.jetson-ai-lab.io/jp6/cu126",
                    ),
                ],
            )
        )
    if "p2p-disabled" in kinds and ("hang" in kinds or "p2p-fixes" in kinds):
        out.append(
            P2P_MISSING.finding(
                title=msg("NCCL hangs unless P2P is disabled: direct GPU-to-GPU transfers fail here")
                if "hang" in kinds
                else msg(
                    "The multi-GPU run works only with NCCL_P2P_DISABLE=1: direct GPU-to-GPU transfers fail "
                    "here ({line})",
                    line=kinds["p2p-fixes"][0].text,
                ),
                severity=Severity.WARNING,
                why=msg(
                    "When NCCL_P2P_DISABLE=1 turns a hang into a working run, peer-to-peer transfers between the "
                    "GPUs do not work on this machine: usually PCIe ACS or the IOMMU (VT-d) reroutes them. "
                    "Disabling P2P is safe but slower."
                ),
                fix=[
                    fix(
                        msg("See how the GPUs are connected and whether ACS is on"),
                        "nvidia-smi topo -m",
                        "sudo lspci -vvv | grep -i acsctl",
                    ),
                    fix(
                        msg("Let the IOMMU pass device traffic through (kernel command line), then reboot"), "iommu=pt"
                    ),
                ],
            )
        )
    said = kinds.get("says-no-nvidia-gpu", [])
    if said and not _nvidia_gpu_shown(f, kinds):
        out.append(
            NO_GPU.finding(
                title=msg("No NVIDIA GPU in this machine, as the post says: {line}", line=said[0].text),
                fix=[
                    fix(
                        msg("Use the CPU in your code; it keeps working when a GPU appears"),
                        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
                    ),
                    fix(msg("Load checkpoints saved on a GPU"), "torch.load(path, map_location='cpu')"),
                ],
            )
        )
    late = kinds.get("visible-devices-too-late", [])
    if late:
        value = late[0].detail.get("value", "")
        out.append(
            CATALOGUE["CD300"].finding(
                title=msg(
                    "CUDA_VISIBLE_DEVICES set in the program ({line}) changes nothing once CUDA has started: "
                    "GPU 0 stays in use",
                    line=late[0].text,
                ),
                severity=Severity.WARNING,
                why=msg(
                    "CUDA reads CUDA_VISIBLE_DEVICES once, when the process first initialises it; set afterwards "
                    "(after torch, or a module that uses it, started CUDA) it has no effect. Set it before "
                    "`import torch`, or in the shell that starts the program."
                ),
                fix=[
                    fix(
                        msg("Set it in the shell that starts the program (Linux, macOS)"),
                        f"CUDA_VISIBLE_DEVICES={value} python train.py",
                    ),
                    fix(msg("Windows (cmd, or a .bat such as webui-user.bat)"), f"set CUDA_VISIBLE_DEVICES={value}"),
                    fix(
                        msg("Or in Python, as the first lines, before anything imports torch"),
                        "import os",
                        f'os.environ["CUDA_VISIBLE_DEVICES"] = "{value}"',
                        lang="python",
                    ),
                ],
            )
        )
    ranks = [h for h in kinds.get("invalid-ordinal", []) if h.detail.get("ranks")]
    if ranks:
        # each rank asks for the GPU of its local rank: one more rank than GPUs asks for one that is not there
        out.append(
            CATALOGUE["CD811"].finding(
                title=msg(
                    "invalid device ordinal from a rank's own GPU (set_device(local_rank)): more processes per "
                    "node than visible GPUs"
                ),
                fix=[
                    fix(
                        msg("Count the GPUs this process sees"),
                        'python -c "import torch; print(torch.cuda.device_count())"',
                    ),
                    fix(
                        msg("Start one process per visible GPU (torchrun counts them)"),
                        "torchrun --nproc_per_node=gpu train.py",
                    ),
                ],
            )
        )
    nproc = kinds.get("nproc-per-node", [])
    cvd = kinds.get("visible-devices-set", [])
    if nproc and cvd:
        n, visible = int(nproc[0].detail["n"]), [x for x in cvd[0].detail.get("value", "").split(",") if x]
        if visible and n > len(visible):
            # fleet's code, from the catalogue: rules.fleet runs check's rules, so no import of it here
            out.append(
                CATALOGUE["CD811"].finding(
                    title=msg(
                        "{n} processes per node for {k} visible GPUs: the extra ranks ask for devices that do not "
                        "exist (invalid device ordinal)",
                        n=n,
                        k=len(visible),
                    ),
                    fix=[fix(msg("Start one process per visible GPU"), f"--nproc_per_node={len(visible)}")],
                )
            )
    return out


def _nvidia_gpu_shown(f: Facts, kinds: dict[str, list[PasteHit]]) -> bool:
    """The paste shows an NVIDIA GPU: nvidia-smi or torch lists one, a sentence names one, or one ran."""
    return bool(
        (f.driver is not None and (f.driver.devices or f.driver.device_count))
        or (f.torch is not None and (f.torch.devices or f.torch.is_available))
        or "gpu-named" in kinds
        or "gpu-ran" in kinds
    )


def _branch_and_flavour(f: Facts, kinds: dict[str, list[PasteHit]]) -> list[Finding]:
    """The kernel log's two reasons the module refuses a GPU: its branch dropped it (NVRM "… supported through
    the NVIDIA 580.xx Legacy drivers …", CD116), or the open module on a GPU without a GSP (CD126). The findings
    are rules/kernel_module.py's own, from the line the paste shows."""
    from cudadoctor.facts.platform import KernelModuleFacts
    from cudadoctor.rules.kernel_module import dropped_branch_finding, flavour_finding
    from cudadoctor.rules.predicates import NeededFlavour

    os_id = f.system.os_id if f.system is not None else None
    out = []
    if "legacy-branch" in kinds:
        h = kinds["legacy-branch"][0]
        out.append(dropped_branch_finding(int(h.detail["branch"]), h.detail.get("driver"), h.text, os_id))
    elif "gsp-required" in kinds:
        # a GPU without a GSP is older than Turing: the proprietary module, on a branch that still drives it
        line = kinds["gsp-required"][0].text
        out.append(flavour_finding(NeededFlavour("proprietary", line=line), os_id, KernelModuleFacts(), True))
    return out


def kernel_side(f: Facts, kinds: dict[str, list[PasteHit]]) -> list[Finding]:
    """What modprobe and the kernel log say: Secure Boot, no module for this kernel, the open module
    flavour, nouveau, Xid errors."""
    from cudadoctor.rules.health import XID
    from cudadoctor.rules.kernel_module import FLAVOUR, NOT_BUILT, NOUVEAU, SECURE_BOOT

    out = []
    if "secure-boot-rejects" in kinds:
        out.append(
            SECURE_BOOT.finding(
                title=msg(
                    "Secure Boot refuses the NVIDIA kernel module: {error}", error=kinds["secure-boot-rejects"][0].text
                ),
                fix=[
                    fix(msg("See whether Secure Boot is on"), "mokutil --sb-state"),
                    fix(
                        msg("Enrol the key DKMS signs modules with, reboot and confirm it in the blue MOK screen"),
                        "sudo mokutil --import /var/lib/dkms/mok.pub",
                        "sudo reboot",
                    ),
                ],
            )
        )
    if "module-not-built" in kinds:
        built = [h for h in kinds["module-not-built"] if h.detail.get("kernel")]
        h = (built or kinds["module-not-built"])[0]
        kernel = h.detail.get("kernel", "")
        out.append(
            NOT_BUILT.finding(
                title=msg("No NVIDIA kernel module for the running kernel {kernel}", kernel=kernel)
                if kernel
                else msg("The NVIDIA kernel module does not fit the running kernel: {error}", error=h.text),
                fix=[
                    fix(msg("See what DKMS built, for which kernels"), "dkms status"),
                    fix(
                        msg("Build it for this kernel (its headers first), then load it"),
                        "sudo apt-get install -y linux-headers-$(uname -r)",
                        "sudo dkms autoinstall",
                        "sudo modprobe nvidia",
                    ),
                ],
            )
        )
    out += _branch_and_flavour(f, kinds)
    if "needs-open-module" in kinds:
        out.append(
            FLAVOUR.finding(
                title=msg(
                    "The GPU needs NVIDIA's open kernel module: {error}", error=kinds["needs-open-module"][0].text
                ),
                fix=[
                    fix(
                        msg("Install the open flavour of the same driver (Ubuntu)"),
                        "sudo ubuntu-drivers install --gpgpu nvidia:open",
                    )
                ],
            )
        )
    elif "secure-boot-on" in kinds and f.driver is not None and f.driver.init_status == "DRIVER_NOT_LOADED":
        out.append(
            SECURE_BOOT.finding(
                title=msg("Secure Boot is on and the NVIDIA module is not loaded: an unsigned module is refused"),
                severity=Severity.WARNING,  # likely, not certain: modprobe's own error settles it
                fix=[
                    fix(
                        msg('Load it by hand: "Key was rejected by service" confirms Secure Boot'),
                        "sudo modprobe nvidia",
                    ),
                    fix(
                        msg("Enrol the key DKMS signs modules with, reboot and confirm it in the blue MOK screen"),
                        "sudo mokutil --import /var/lib/dkms/mok.pub",
                        "sudo reboot",
                    ),
                ],
            )
        )
    if "nouveau-loaded" in kinds and f.driver is not None and f.driver.init_status == "DRIVER_NOT_LOADED":
        out.append(
            NOUVEAU.finding(
                title=msg(
                    "nouveau holds the GPU, so the NVIDIA module cannot: {line}", line=kinds["nouveau-loaded"][0].text
                ),
            )
        )
    if "nouveau-owns" in kinds and "nouveau-loaded" not in kinds:
        out.append(
            NOUVEAU.finding(
                title=msg(
                    "nouveau holds the GPU, so the NVIDIA module cannot: {line}", line=kinds["nouveau-owns"][0].text
                ),
            )
        )
    if "fell-off-bus" in kinds and "xid" not in kinds:
        out.append(
            XID.finding(
                title=msg(
                    "The GPU fell off the bus (what the driver logs as Xid 79): {line}",
                    line=kinds["fell-off-bus"][0].text,
                ),
                fix=[fix(msg("See every Xid with its time"), "sudo dmesg -T | grep -i xid")],
            )
        )
    if "xid" in kinds:
        h = kinds["xid"][0]
        out.append(
            XID.finding(
                title=msg("The kernel log has NVIDIA Xid {xid}: {line}", xid=h.detail.get("xid", "?"), line=h.text),
                fix=[fix(msg("See every Xid with its time"), "sudo dmesg -T | grep -i xid")],
            )
        )
    return out
