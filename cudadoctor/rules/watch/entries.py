"""The training verdicts' catalogue entries (CD700–CD714): the codes, their summaries, pages and usual
fixes."""

from __future__ import annotations

from cudadoctor.model import Severity
from cudadoctor.rules.catalogue import entry, fix

SECTION = "Training"

CPU_ONLY = entry(
    "CD700",
    "watch-trains-on-cpu",
    Severity.WARNING,
    SECTION,
    "The command never used a GPU while its CPU was busy",
    """No process of the command's tree ever ran on a GPU (NVML never listed one, or none of them loaded
    libcuda, the CUDA driver library every GPU program loads), while the tree kept the CPU busy: the
    training ran on the CPU. The usual causes: the model or the batches were never moved with
    `.to(device)`, the device was chosen as "cpu" (a CPU-only torch wheel makes
    `torch.cuda.is_available()` False), or CUDA_VISIBLE_DEVICES hides every GPU.""",
    fixes=(
        fix(
            "Move the model and every batch to the GPU",
            "model = model.to(device)",
            "inputs, targets = inputs.to(device), targets.to(device)",
        ),
        fix("Check that this torch can use the GPU", "cudadoctor check"),
    ),
)
INPUT_BOUND = entry(
    "CD701",
    "watch-input-bound",
    Severity.WARNING,
    SECTION,
    "The CPU cannot feed the GPU: the input pipeline is the bottleneck",
    """GPU utilisation stayed low or swung between idle and busy while the main process or the DataLoader
    workers were saturated: each step waits for the next batch. More workers (up to the free cores),
    pinned memory and workers that persist between epochs keep batches ready before the GPU asks.""",
    fixes=(
        fix(
            "More DataLoader workers (up to the idle cores), pinned, kept between epochs",
            "DataLoader(dataset, ..., num_workers=4, pin_memory=True, persistent_workers=True, prefetch_factor=4)",
        ),
    ),
)
MEMORY_UNDERUSED = entry(
    "CD702",
    "watch-memory-underused",
    Severity.INFO,
    SECTION,
    "GPU memory far below the card's: a larger batch fits",
    """The command's peak GPU memory was a small share of the card's. A larger batch uses the GPU's
    parallelism better and usually trains faster per sample; scale the learning rate with it. NVML shows
    what PyTorch's caching allocator reserved, which is at least what the tensors needed.""",
    fixes=(fix("Raise the batch size and watch again (scale the learning rate with it)", "batch_size *= 2"),),
)
MEMORY_NEAR_LIMIT = entry(
    "CD703",
    "watch-memory-near-limit",
    Severity.WARNING,
    SECTION,
    "GPU memory near the card's limit",
    """The GPU's memory was nearly full: the next larger batch, a longer sequence or fragmentation ends
    in `torch.OutOfMemoryError`, and a full allocator spends time freeing and retrying.""",
    fixes=(
        fix(
            "Lower the batch (accumulate gradients to keep the effective batch), compute in bfloat16",
            "batch_size //= 2",
            'with torch.autocast("cuda", dtype=torch.bfloat16):',
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        ),
    ),
)
COPIES_DOMINATE = entry(
    "CD704",
    "watch-copies-dominate",
    Severity.WARNING,
    SECTION,
    "Host-device copies dominate: PCIe busy while the GPU waits",
    """The PCIe link carried heavy traffic in much of the run while the GPU's utilisation stayed low: the
    GPU waits for copies. Copies from pageable memory go through a staging buffer and block the host;
    pinned memory with `non_blocking=True` overlaps them with compute, and data that fits on the GPU
    need not cross the bus every step.""",
    fixes=(
        fix(
            "Pin the batches and copy them without blocking",
            "DataLoader(dataset, ..., pin_memory=True)",
            "inputs = inputs.to(device, non_blocking=True)",
        ),
    ),
)
THERMAL = entry(
    "CD705",
    "watch-thermal-throttling",
    Severity.WARNING,
    SECTION,
    "The GPU slowed its clocks for heat",
    """NVML reported thermal slowdown (software or hardware) as a clock event reason while the GPU was
    under load: it ran below its clocks to cool down, so every step took longer.""",
    fixes=(
        fix(
            "See the temperatures and slowdown thresholds; improve cooling", "nvidia-smi -q -d TEMPERATURE,PERFORMANCE"
        ),
    ),
)
POWER_CAP = entry(
    "CD706",
    "watch-power-capped",
    Severity.INFO,
    SECTION,
    "The GPU ran at its power limit",
    """NVML reported the software power cap as a clock event reason under load: the GPU lowered its
    clocks to stay within its power limit. Common and harmless on a fully loaded card; a limit set below
    the card's default costs speed.""",
    fixes=(fix("Compare the limit with the default and the maximum", "nvidia-smi -q -d POWER"),),
)
HW_SLOW = entry(
    "CD707",
    "watch-hardware-slowdown",
    Severity.WARNING,
    SECTION,
    "Hardware slowdown: the board or the power supply cut the clocks",
    """NVML reported hardware slowdown or the power brake as a clock event reason: the board (or an external
    signal from the power supply) halved the clocks, typically for a failing or undersized power supply,
    a loose power cable or extreme temperature.""",
    fixes=(fix("See which slowdown is active; check the power supply and cables", "nvidia-smi -q -d PERFORMANCE"),),
)
BUSY_GPU = entry(
    "CD708",
    "watch-busy-gpu",
    Severity.WARNING,
    SECTION,
    "It trains on a GPU other processes use while another GPU is free",
    """Processes outside the command shared its GPU for much of the run, while another GPU had no process
    and idled: the command competes for compute and memory it need not share.""",
    fixes=(fix("Run on the freest GPU", 'eval "$(cudadoctor gpus --pick 1)"'),),
)
SHM_FULL = entry(
    "CD709",
    "watch-shm-full",
    Severity.WARNING,
    SECTION,
    "/dev/shm is nearly full",
    """DataLoader workers hand batches to the main process through shared memory (/dev/shm). When it
    fills, workers die with "Bus error" or "unable to write to file </torch_…>". Docker gives a
    container only 64 MB of /dev/shm unless told otherwise.""",
    fixes=(fix("Give the container more shared memory", "docker run --shm-size=8g …"),),
)
GPU_BOUND = entry(
    "CD710",
    "watch-gpu-bound",
    Severity.OK,
    SECTION,
    "The GPU was busy: it is the bottleneck, as it should be",
    """The GPU's utilisation stayed high: the input pipeline keeps up.""",
)
TOO_SHORT = entry(
    "CD711",
    "watch-too-short",
    Severity.INFO,
    SECTION,
    "Too few samples to judge the run",
    """The command ended (or was stopped) before enough samples were taken to say anything about it. Watch
    a longer stretch of training: a few hundred steps.""",
    fixes=(fix("Watch a longer stretch of training", "cudadoctor watch --interval 0.5 -- COMMAND"),),
)
NO_GPU_DATA = entry(
    "CD712",
    "watch-no-gpu-data",
    Severity.INFO,
    SECTION,
    "No GPU could be sampled: only the CPU side was watched",
    """NVML (the NVIDIA driver's management library) could not be used, so GPU utilisation, memory and
    PCIe traffic are unknown and no GPU verdict is given. `cudadoctor check` says why.""",
    fixes=(fix("Find out why NVML cannot be used", "cudadoctor check"),),
)
PIDS_HIDDEN = entry(
    "CD713",
    "watch-gpu-pids-hidden",
    Severity.INFO,
    SECTION,
    "NVML's process IDs are not this PID namespace: the command's own GPU use is unknown",
    """NVML lists processes with the host's process IDs; inside a container those do not match the
    container's, so the command's GPU memory cannot be told from other processes' and the verdicts that
    need it are skipped.""",
    fixes=(fix("Share the host's PID namespace, or watch from the host", "docker run --pid=host …"),),
)

WAITING = entry(
    "CD714",
    "watch-gpu-waits-on-nothing-busy",
    Severity.WARNING,
    SECTION,
    "The GPU sat idle while the CPU was not busy either: the program waits",
    """GPU utilisation stayed low while neither the main process nor any DataLoader worker was busy and
    the PCIe link was quiet: each step spends most of its time waiting, not computing. The usual causes
    are reading data from a slow disk or the network in the main process, `time.sleep` or polling, a lock
    or a queue shared with another process, and a synchronising call every step (`loss.item()`,
    `print(tensor)`, `torch.cuda.synchronize()`). A profile of the waiting process shows where the time
    goes.""",
    fixes=(
        fix(
            "See where the main process waits (py-spy shows idle frames with --idle)",
            "py-spy dump --pid PID",
            "py-spy record --idle -o profile.svg --pid PID",
        ),
    ),
)
