"""Title templates: the finding titles the rule modules build with f-strings, as messages with named
placeholders, so a translation can reorder them. `localize.title` matches a title against these (the
literal text exactly, each placeholder non-empty; the template with the most literal text wins) and
formats the translation with what matched, each value translated in turn unless it is VERBATIM. `{n}`
matches a count only, so "{n} GPUs" translates the value "2 GPUs" of a placeholder.

A title no template matches keeps its English detail behind the translated summary. Rule modules that
build titles from `_()` templates themselves would make this table unnecessary; until then, a template
here that no longer matches its rule's f-string only costs that title its translation (the test for
this package checks the common ones on hand-written facts).
"""

from __future__ import annotations

import re
from functools import cache

from cudadoctor.locale import N_

TEMPLATES: tuple[str, ...] = (
    # driver (CD100, CD102, CD108, CD122)
    N_("NVIDIA driver {version} (supports CUDA up to {cuda}), {count} GPUs: {names}"),
    N_("NVIDIA driver {version} (supports CUDA up to {cuda}), 1 GPU: {names}"),
    N_("NVIDIA driver {version}, {count} GPUs: {names}"),
    N_("NVIDIA driver {version}, 1 GPU: {names}"),
    N_("NVIDIA driver, {count} GPUs: {names}"),  # a paste that shows the GPUs but not the driver
    N_("NVIDIA driver, 1 GPU: {names}"),
    N_("{count} NVIDIA GPUs on the PCI bus, but no NVIDIA driver"),
    N_("1 NVIDIA GPU on the PCI bus, but no NVIDIA driver"),
    N_("NVML failed to initialise: {status} ({message})"),
    N_("GPU {index} cannot be queried: {error}"),
    # libcuda (CD120, CD122, CD125)
    N_("libcuda {version} at {path}: cuInit ok, {count} devices"),
    N_("libcuda {version} at {path}: cuInit ok, 1 device"),
    N_("No CUDA driver library: {error}"),
    N_("cuInit failed: {name} ({result})"),
    # toolkit (CD130, CD131)
    N_("CUDA toolkit found ({described}), but no NVIDIA driver: a toolkit is not a driver"),
    N_("CUDA toolkit: {described}"),
    # torch (CD200-CD217)
    N_("torch {version} (CUDA {cuda}, cuDNN {cudnn}) uses {count} GPUs: {names}"),
    N_("torch {version} (CUDA {cuda}, cuDNN {cudnn}) uses 1 GPU: {names}"),
    N_("torch {version} (CUDA {cuda}) uses {count} GPUs: {names}"),
    N_("torch {version} (CUDA {cuda}) uses 1 GPU: {names}"),
    N_("torch {version} (CUDA {cuda}) can use CUDA: torch.cuda.is_available() is True"),
    N_("torch {version} (CUDA {cuda}, cuDNN {cudnn}) can use CUDA: torch.cuda.is_available() is True"),
    N_("torch {version} uses {count} GPUs: {names}"),  # a paste that does not show torch's CUDA
    N_("torch {version} uses 1 GPU: {names}"),
    N_("torch {version} can use CUDA: torch.cuda.is_available() is True"),
    N_("Copy bandwidth, GB/s and % of PCIe link (median of {size} MiB copies)"),
    N_("torch {version} is a CPU-only build, but this machine has an NVIDIA GPU"),
    N_("torch {version} is a CPU-only build, and there is no NVIDIA GPU to use"),
    N_("torch {version} is a CPU-only build; whether this machine has an NVIDIA GPU is unknown"),
    N_("torch {version} is a ROCm {hip} build"),
    N_("torch {version} needs CUDA {cuda}; driver {driver} supports CUDA up to {have}"),
    N_("torch CUDA {cuda} on a driver for CUDA {have}: works through minor-version compatibility"),
    N_("torch {version} has no kernels for {gpu}"),
    N_("torch {version} runs on {gpu} only through PTX JIT"),
    N_("{gpu} is older than every current torch build"),
    N_("torch {version} finds no cuDNN"),
    N_("nvcc is CUDA {nvcc}, torch carries CUDA {cuda}: not a problem for running torch"),
    N_("torch.cuda.is_available() is False although the driver sees {count} GPUs"),
    N_("torch.cuda.is_available() is False although the driver sees 1 GPU"),
    N_("import torch fails: {detail}"),
    N_("PyTorch is not installed in {python}"),
    N_("The torch check did not finish: {error}"),
    N_("The torch check failed: {error}"),
    N_("A kernel on cuda:0 failed: {error}"),
    # CUDA libraries (CD218, CD226)
    N_("torch loaded {count} CUDA libraries, all from its own environment"),
    N_("torch loaded 1 CUDA library, all from its own environment"),
    N_("The CUDA libraries torch loaded ({count})"),
    N_("torch.compile works ({took})"),
    # visible devices (CD300, CD301)
    N_("CUDA sees {seen} of {count} GPUs (CUDA_VISIBLE_DEVICES {shown}, order {order})"),
    N_("CUDA sees {seen} of {count} GPUs (CUDA_VISIBLE_DEVICES {shown}, order {order}, estimated)"),
    N_("CUDA sees {seen} of 1 GPU (CUDA_VISIBLE_DEVICES {shown}, order {order})"),
    N_("CUDA sees {seen} of 1 GPU (CUDA_VISIBLE_DEVICES {shown}, order {order}, estimated)"),
    N_("CUDA_VISIBLE_DEVICES={shown} hides all {count} GPUs"),
    N_("CUDA_VISIBLE_DEVICES={shown} hides all 1 GPU"),
    # system and health (CD140-CD154)
    N_('/dev/shm is {size}: DataLoader workers may die with "Bus error"'),
    N_("Running in a container ({hints})"),
    N_("{variable} is set"),  # the evidence of a container (backends/host.py)
    N_("/proc/1/cgroup mentions {variable}"),
    N_("Running under WSL2, Windows NVIDIA driver {version}"),
    N_("Persistence mode is off on {off} of {count} GPUs"),
    N_("Persistence mode is off on {off} of 1 GPU"),
    N_("Uncorrectable ECC errors on {count} GPUs"),
    N_("Uncorrectable ECC errors on 1 GPU"),
    N_("{count} GPUs slowing down: {reason}"),
    N_("1 GPU slowing down: {reason}"),
    N_("Xid {xid} in the kernel log: {what}"),
    N_("Row remapping failed"),
    N_("Row remapping pending (reset needed)"),
    N_("GPU memory in use with no process listed on {count} GPUs"),
    N_("GPU memory in use with no process listed on 1 GPU"),
    N_('NVIDIA_VISIBLE_DEVICES="{value}" hides the GPUs from this container'),
    N_('NVIDIA_DRIVER_CAPABILITIES="{value}" lacks "compute": no libcuda here'),
    N_("No NVIDIA kernel module for the running kernel {kernel}"),
    N_("This GPU needs the {flavour} NVIDIA kernel module"),
    # multi-GPU (CD160-CD162)
    N_("P2P works between all {count} GPUs: slowest pair {gbps} GB/s"),
    N_("No P2P access on {missing} of {pairs} GPU pairs"),
    # measurements (CD400-CD412)
    N_("cuda:{device} pinned host-to-device {h2d} GB/s vs pageable {pageable} GB/s"),
    N_("Bandwidth measurement: {error}"),
    N_("Bandwidth skipped: {reason}"),
    N_("Smoke test: {detail}"),
    N_("Smoke test ran on the CPU only; GPU half skipped: {reason}"),
    N_("{model} on {device}: loss {first} -> {last}"),
    # page text added to a finding from facts (CD210)
    N_("Cause: {causes}."),
    N_("No other check explains it. torch said: {warnings}"),
    # built across several statements or with counted words as placeholders (issue 18, second pass)
    N_("NVIDIA driver {version} loaded; NVML did not say how many GPUs"),
    N_("NVIDIA driver (version unknown) loaded; NVML did not say how many GPUs"),
    N_("NVML fails inside WSL: {status} ({message})"),
    N_("NVML fails inside WSL: {status}"),
    N_("NVML failed to initialise: {status}"),
    N_("NVML crashed: the driver library itself failed"),
    N_("NVML {message}: the driver library itself failed"),
    N_("Driver {version} lacks NVML functions: {names}"),
    N_("NVML could not answer {n} query: {names}"),
    N_("NVML could not answer {n} queries: {names}"),
    N_("NVML could not answer {n} queries: {names}…"),
    N_("NVML {failure}; {gpus} could not be read"),
    N_("Jetson ({board}): no NVML, the integrated GPU is driven by JetPack"),
    N_("The libcuda check failed before loading it: {error}"),
    N_("cuInit could not be called: {error}"),
    N_("libcuda  at {path}: cuInit ok, {devices}"),
    N_("libcuda {version} at {path}: cuInit ok, {devices}"),
    N_("The {probe} probe crashed: {error}"),
    N_("The {probe} probe timed out after {seconds}"),
    N_("The {probe} probe {error}"),
    N_("Compute mode {modes}: a second process gets 'device busy or unavailable'"),
    N_("Compute mode {modes}: no process may use it"),
    N_("Uncorrectable ECC errors on {gpus} (lifetime count only)"),
    N_("Xid {xid} in the kernel log: {what} (+{n} other kinds)"),
    N_("Row remapping failed: {gpus}"),
    N_("Row remapping pending (reset needed): {gpus}"),
    N_("{summary}, Windows NVIDIA driver {version}"),
    N_("A Linux NVIDIA driver is installed inside WSL: {names}"),
    N_("NVIDIA device nodes: {detail}"),
    N_("No NVIDIA kernel module for the running kernel {kernel} (built for {kernels})"),
    N_("The torch child process did not finish in time"),
    N_("The torch child process did not finish in time (CUDA initialisation hung)"),
    N_("The torch check failed part-way: {error}"),
    N_("torch {version} on macOS: MPS available"),
    N_("torch {version} on macOS: MPS not available"),
    N_("cuDNN: {error}"),
    N_("{gpu} is not supported by any known torch build"),
    N_("torch loaded a cuDNN from outside its environment: {path}"),
    N_("torch loaded {families} from outside its environment: {path}"),
    N_("torch loaded {n} CUDA libraries ({families}) from {where} instead of its own"),
    N_("nvidia-* wheels do not match the pins of {torch} ({differ} differ, {missing} missing)"),
    N_("nvidia-* wheels do not match the pins of {torch} ({differ} differ)"),
    N_("nvidia-* wheels do not match the pins of {torch} ({missing} missing)"),
    # CD229
    N_("{library} {version} gives silently wrong results on {gpus}: fixed in {fixed}"),
    N_("{n} torch installs are visible; {imported} is the one imported"),
    N_("{names} do not match torch {version}"),
    N_("{names} does not match torch {version}"),
    N_("torch {version} on a Jetson ({board}) cannot use its GPU"),
    N_("LD_LIBRARY_PATH has CUDA {version} ({directory}); torch {torch} is built with CUDA {cuda}"),
    N_("{packages} installed in {prefix}"),
    N_("torch in {prefix} comes from the pytorch conda channel, which has no release after 2.5"),
    N_("The torch.compile check timed out while {stage}: {error}"),
    N_("The torch.compile check timed out while {stage}"),
    N_("The torch.compile check failed while {stage}: {error}"),
    N_("The torch.compile check failed while {stage}"),
    N_("torch.compile fails on the {where}: {error}"),
    N_("CUDA_VISIBLE_DEVICES={shown} names {gpu} twice: no GPU is visible"),
    N_("Mixed GPU models ({names}): CUDA's device numbers differ from nvidia-smi's"),
    N_("GPU {index} ({name}) is in MIG mode with {instances}"),
    N_("GPU {index} ({name}) is in MIG mode with no instances"),
    N_("CUDA_VISIBLE_DEVICES={shown}: entry '{entry}' names no device, so {ignored} is ignored"),
    N_("CUDA_VISIBLE_DEVICES={shown}: entry '{entry}' names no device, so {ignored} are ignored"),
    N_("P2P copies slow on {pairs}: {gbps} GB/s vs a {bound} GB/s link"),
    N_("P2P copies failed on {pairs}: {error}"),
    N_("No P2P between these GeForce cards ({name}): NVIDIA does not enable it"),
    N_("Needs {gpus}; {why}"),
    N_("{which} has less than {size} free ({free})"),
    N_("{which} have less than {size} free ({free})"),
    N_("{which} has compute capability {ccs}; {need} required"),
    N_("{which} have compute capability {ccs}; {need} required"),
    N_("{n} of {gpus} qualify; {need} required"),
    N_("Every requirement is met: {n} of {gpus} qualify ({which}); {need} required"),
    N_("cuDNN is required: {reason}"),
    N_("Host-to-device bandwidth of {gbps} GB/s required: {why}"),
    N_("Expected a torch built for CUDA {cuda}: {what}"),
    N_("cuda:{device} pinned host-to-device {gbps} GB/s; {need} GB/s required"),
    N_("CPU and GPU losses differ by {diff}% (tolerance {tolerance}%)"),
    N_("AMP step ({dtype}): {error}"),
    N_("DataLoader with workers: {error}"),
    N_("Checkpoint round trip: {error}"),
    N_("GPU {index} ({name}) PCIe link x{width} of x{max_width} (Gen{gen} of Gen{max_gen})"),
    N_("cuda:{device} pinned host-to-device {h2d} GB/s is {share}% of the Gen{gen} x{width} link ({top} GB/s)"),
    N_("Training the {model} on {device} failed: {error}"),
    N_("Read from the paste: {formats}"),
    N_("Read from the paste: nothing recognised"),
    N_("Read from the paste: {formats} (the report's own facts are used as they are)"),
    N_("torch says the NVIDIA driver is too old"),
    N_("torch says the NVIDIA driver is too old: it supports CUDA up to {have}"),
    N_("torch says the NVIDIA driver is too old: it supports CUDA up to {have}, torch {version} needs CUDA {cuda}"),
    N_("torch says the NVIDIA driver is too old, torch {version} needs CUDA {cuda}"),
    N_("torch says {gpu} is too old for this build"),
    N_("undefined symbol {symbol} in {library}: a library at the wrong version"),
    N_("undefined symbol {symbol}: a library at the wrong version"),
    N_("{library} cannot be found: {what} torch needs is missing"),
    N_("{library} cannot be found: no NVIDIA driver where this ran"),
    N_("Windows cannot load {dll}"),
    N_("A checkpoint saved on cuda:{device} is loaded where torch sees {n} GPUs"),
    N_("A checkpoint saved on cuda:{device} is loaded where torch sees 1 GPU"),
    N_("The state dict keys differ by the prefix '{prefix}'"),
    N_("CUDA error while running: {error}"),
    N_("The container runtime could not give the container a GPU: {error}"),
    N_("Torch not compiled with CUDA enabled: torch {version} is a CPU-only build"),
    N_("cuDNN failed: CUDNN_STATUS_{status}"),
    N_("To be sure, ask for: {commands}"),
    N_("Checkpoint: {parts}"),
    N_("Saved on {saved}: {gpus} usable here"),
    N_("Not asked of torch: {why}"),
    N_("{title} — verified"),
    N_("{name} is a Git LFS pointer ({size}), not the checkpoint"),
    N_("{name} is a Git LFS pointer ({size}), not the checkpoint of {real}"),
    N_("{name} is an HTML page ({page}), not a checkpoint"),
    N_("{name} is an HTML page, not a checkpoint"),
    N_("{name} is truncated or damaged ({format}, {size})"),
    N_("{name} is {what}, not a checkpoint"),
    N_("{name} is a plain pickle, not written by torch.save"),
    N_("A DCP checkpoint directory ({files}, {size})"),
    N_("The pickle calls {names}: it runs code when loaded"),
    N_("Saved on {saved}; whether torch here can use it was not checked"),
    N_("Saved on {saved}, but torch here has no usable CUDA: torch.load needs map_location"),
    N_("Saved on {saved}, but only {gpus} visible here (cuda:0–cuda:{last})"),
    N_("Saved on {saved}, but no GPU is visible here"),
    N_("A training checkpoint: the model's weights are in [{key}], beside {kinds}"),
    N_("The model's weights are in [{key}], beside {kinds}"),
    # will it fit (CD660-CD663)
    N_("{count} parameters (counted from its tensors): memory by precision and use"),
    N_("{count} parameters (from its config): memory by precision and use"),
    N_("{count} parameters (at least): memory by precision and use"),
    N_("Inference in {dtype} ({size}) fits on GPU {gpus}"),
    N_("Training with Adam ({size}) fits on GPU {gpus}"),
    N_("Inference in {dtype} needs at least {size}: no GPU has that much free (most: {best} on GPU {gpu})"),
    N_("Training with Adam needs at least {size}: no GPU has that much free (most: {best} on GPU {gpu})"),
    N_("The parameter count of {path} is unknown: {error}"),
    N_("torch.load(weights_only=True) will refuse this checkpoint: {globals} not allow-listed"),
    N_(
        "torch.load(weights_only=True) will refuse this checkpoint: {globals} not allow-listed (torch {version} "
        "still defaults to weights_only=False; 2.6+ will refuse)"
    ),
    N_("Every state-dict key starts with {prefix} (torch.compile)"),
    N_("Every state-dict key starts with {prefix} (DataParallel/DDP)"),
    N_(
        "Every state-dict key starts with {prefix} (torch.compile): load_state_dict fails with Missing/Unexpected "
        "key(s)"
    ),
    N_(
        "Every state-dict key starts with {prefix} (DataParallel/DDP): load_state_dict fails with Missing/Unexpected "
        "key(s)"
    ),
    N_("--model {factory}: {error}"),
    N_("The model's keys start with {prefix}, the checkpoint's do not"),
    N_("{keys} of the model missing from the checkpoint"),
    N_("{keys} in the checkpoint that the model does not have"),
    N_("{tensors} with another shape than the model's"),
    N_("Keys and shapes match {factory}() ({tensors})"),
    N_("Could not write {path}: {error}"),
    N_("{path} did not verify: {error}"),
    N_("{shards} of {total} missing or broken"),
    N_("{nodes}, {ranks} reported"),
    N_("The nodes differ in {names}"),
    N_("{nodes}: {seen} of {expected} GPUs"),
    N_("{n} nodes show fewer than {expected} GPUs"),
    N_("{gpus} measured"),
    N_("All-reduce bus bandwidth (GB/s) over {backend}, {smallest} to {biggest}"),
    N_("All-reduce bus bandwidth (GB/s) over {backend}, at {biggest}"),
    N_("All-reduce bus bandwidth"),
    N_("{nodes}: slow in every pair (best pair {gbps} GB/s)"),
    N_("{ranks} arrive {late} ms late at each collective (step {step} ms)"),
    N_("{n} of {expected} nodes joined: {nodes}"),
    N_("{ranks} never arrived"),
    N_("Ranks run {n} torch versions: {versions}"),
    N_("The gloo process group failed on {ranks}"),
    N_("{ranks} died or hung"),
    N_("{ranks} died or hung; {others} failed after it"),
    N_("{ranks} stopped with an error: {error}"),
    N_("fleet could not finish: {error}"),
    N_("No check report from {nodes}"),
    N_("{title} [{where}]"),
    N_("GPU measurements skipped on {ranks}: {reason}"),
    N_("{step} did not finish{bound}: {ranks} never arrived"),
    N_("{step} did not finish{bound}: every rank reached it, so the collective itself hung"),
    N_("{step} did not finish within {seconds} s"),
    N_("{what} on {gpus}: {values} {unit} vs the fleet's median {median}"),
    N_("Every GPU's {what} is below {floor} {unit}"),
    N_("Every GPU's {what} is below {floor} {unit} (lowest {lowest})"),
    N_("{what} on {gpus} is below {floor} {unit}"),
    N_("{what} on {gpus} is below {floor} {unit} (lowest {lowest})"),
    N_("{nodes}: --nproc-per-node {nproc} exceeds the {gpus} this node shows"),
    N_("{n} nodes run more ranks than the GPUs they show"),
    N_(
        "{gpu} sat idle in {share} % of samples (utilisation averaged {mean} %) "
        "while the main process used {cpu} of a core: the program waits"
    ),
    N_("{title} (also GPU {others})"),
    N_("{gpu} ran at its power limit in {share} % of loaded samples"),
    N_("Load batches in {n} worker processes ({cores}), pinned, kept between epochs"),
    N_("Every core is busy ({cores}): make each batch cheaper to prepare"),
    N_("{idle} of {n} cores were idle on average"),
    N_("the number of idle cores is unknown"),
    N_(
        "Raise the batch size: memory for about {room}× the activations is free; double it and watch again "
        "(scale the learning rate with it)"
    ),
    N_("Or name GPU {index} directly"),
    N_("Wrote {path} ({format}, {tensors}, {size})"),
    N_("Wrote {path} ({format}, {tensors}, {size}): {did}"),
    N_("storages from {devices} mapped to cpu"),
    N_("prefix {prefix} stripped"),
    N_("state dict extracted"),
    N_("{tensors} written as copies"),
    N_("{n} shared tensors"),
    N_("1 shared tensor"),
    N_("torch could not be imported in {python}: {error}"),
    N_("the target interpreter"),
    N_("the checkpoint child did not finish in time"),
    N_("on {nodes}: {what}"),
    N_("the driver of the other nodes ({version}), then reboot"),
    N_("install NVIDIA driver {version} (branch {branch}), as on the others, then reboot"),
    N_("{pkg} {pkgversion} as on the other nodes"),
    N_("{variable} as on the other nodes (in the job's environment)"),
    N_("persistence mode on, as on the other nodes"),
    N_("install the fleet's most common torch ({version}) on the others"),
    N_("{nodes}: inside-node all-reduce {values} GB/s vs the median {median}"),
    N_("All-reduce across {nodes} at {size}: {gbps} GB/s, below {need}"),
    N_("Inside-node all-reduce at {size} on {nodes}: {gbps} GB/s, below {need}"),
    N_("Too few samples to judge the run ({n} in {took})"),
    N_("The command never used a GPU while its CPU was busy ({mean} % of a core on average, {gpus} present)"),
    N_("No process of the command loaded libcuda (/proc/PID/maps)"),
    N_("Here CUDA_VISIBLE_DEVICES={cvd} hides every GPU from the command although NVML sees {n}"),
    N_("The CPU cannot feed {gpu}: its utilisation {pattern} while {who}"),
    N_(
        "Copies dominate on {gpu}: PCIe busy in {busy} % of samples (up to {gbps} GB/s of {link}) while utilisation "
        "averaged {mean} %"
    ),
    N_("/dev/shm was {share} % full ({used} of {total})"),
    N_("No GPU could be sampled (NVML: {nvml}): only the CPU side was watched"),
    N_("{gpu} was busy {mean} % of the time: the GPU is the bottleneck"),
    N_("{gpu} memory near its limit: {used} of {total} ({detail})"),
    N_("{gpu} memory far below the card's: peak {peak} of {total} ({share} %)"),
    N_("{gpu} slowed its clocks for heat in {share} % of loaded samples"),
    N_("{gpu}: hardware slowdown in {share} % of loaded samples"),
    N_("{step} did not finish"),
    # CUDA extensions (CD240-CD243)
    N_("{package} has no kernels for {gpu}"),
    N_("{package} runs on {gpu} only through PTX JIT"),
    N_("{package} was built for torch {pin}, but torch {version} is installed"),
    N_("CUDA extensions: {names}"),
    N_("{package} was built for CUDA {major}, torch {version} for CUDA {cuda}"),
)

# Fix labels built from facts (advice/install.py): "LABEL (NOTE)", the note's parts joined by "; ".
LABELS: tuple[str, ...] = (
    N_("Load it in {precision} ({size}: fits on GPU {gpu}; bitsandbytes for 8 and 4 bits)"),
    N_("Install a CUDA build"),
    N_("Install a build compiled for this GPU"),
    N_("Install the CUDA build for this driver"),
    N_("Or install the build this driver runs"),
    N_("Or install the torch build this driver runs"),
    N_("Install torch {release}"),
    N_("Then sync the project"),
    N_("Run only these probes: {names}."),
    N_("Or {action}, then keep newer builds"),
    N_("Upgrade the NVIDIA driver to {need} or newer ({family})"),
    N_("upgrade the NVIDIA driver to {need} or newer ({family})"),
    N_("Install NVIDIA driver {need} or newer for Windows"),
    N_("install NVIDIA driver {need} or newer for Windows"),
    N_("Install NVIDIA driver {need} or newer on Windows (WSL uses the Windows driver; never install one inside WSL)"),
    N_("install NVIDIA driver {need} or newer on Windows (WSL uses the Windows driver; never install one inside WSL)"),
    N_("torch {version} {variant}: fits this driver and every GPU"),
    N_("torch {version} {variant}: no build of torch {release} fits this driver and these GPUs as well"),
    # what the advice claims where the driver or the GPUs are unknown (a paste): parts joined by "; "
    N_("torch {version} {variant}: fits this driver"),
    N_("the GPUs are unknown"),
    N_("torch {version} {variant}: has kernels for every GPU"),
    N_("whether this driver runs it is unknown"),
    N_("torch {version} {variant}: the driver and the GPUs are unknown"),
    N_("torch {version} {variant}: no build of torch {release} has kernels for these GPUs"),
    N_("torch {version} {variant}: no build of torch {release} fits this driver"),
    N_("runs through PTX JIT only"),
    # no install command while what it is computed from is unknown (advice/install.unknown_inputs)
    N_("{label}: which build fits is not known ({unknown}); run every check to see it"),
    N_(
        "Install the build that fits this machine: whether it has an NVIDIA GPU is not known; run every check to see it"
    ),
    N_("Remove the CPU pins, then install a CUDA build: which one fits is not known here; run every check to see it"),
    N_("Install the build that fits this machine"),
    N_("the OS and CPU architecture"),
    N_("the NVIDIA driver's version"),
    N_("each GPU's compute capability"),
    N_("the target Python environment"),
    N_("the installed torch version"),
    N_("which installer manages the environment"),
    N_("whether the venv belongs to a uv project"),
    N_("whether pip may install into this Python"),
    # PEP 668: the install goes into a new venv
    N_("{python} is externally managed (PEP 668): pip installs into a new venv, {venv}"),
    N_("{python} is externally managed (PEP 668): pip installs into a new venv"),
    # parts of titles (rules/toolkit.py)
    N_("nvcc {version} at {path}"),
    N_("CUDA {version} at {path}"),
    N_("no known torch build fits this driver and these GPUs together"),
    N_("{gpu} is {arch}, sm_{sm}: every torch {release} build has kernels for it"),
    N_("{gpu} is {arch}, sm_{sm}: no PyTorch build in cudadoctor's tables has kernels for it"),
    N_("{gpu} is {arch}, sm_{sm}: no current release has kernels for it"),
    N_("{gpu} is {arch}, sm_{sm}: no torch {release} build has kernels for it"),
    N_("the last that does is torch {release} ({names})"),
    N_("{gpu} is {arch}, sm_{sm}: only {variant} builds and newer have kernels for it"),
    N_("{gpu} is {arch}, sm_{sm}: of torch {release}'s builds only {names} have kernels for it"),
    N_("{gpu} (compute capability {cc}, {arch})"),
    N_("unset"),
    # counted words and parts of titles: a placeholder's value ("2 GPUs") is translated by these
    N_("{n} GPUs"),
    N_("1 GPU"),
    N_("{n} NVIDIA GPUs"),
    N_("1 NVIDIA GPU"),
    N_("{n} visible GPUs"),
    N_("1 visible GPU"),
    N_("{n} devices"),
    N_("1 device"),
    N_("{n} GPU pairs"),
    N_("1 GPU pair"),
    N_("{n} NVSwitches"),
    N_("1 NVSwitch"),
    N_("{n} keys"),
    N_("1 key"),
    N_("{n} tensors"),
    N_("1 tensor"),
    N_("{n} shards"),
    N_("1 shard"),
    N_("{n} shard files"),
    N_("1 shard file"),
    N_("{n} globals"),
    N_("1 global"),
    N_("{n} ranks"),
    N_("1 rank"),
    N_("{n} other ranks"),
    N_("1 other rank"),
    N_("{n} nodes"),
    N_("1 node"),
    N_("all {n} nodes"),
    N_("{names} and {n} more"),
    N_("kernel module {version}"),
    N_("libraries {version}"),
    N_("kernel module {module} vs libraries {libraries}"),
    N_("{mode} on GPU {index}"),
    N_("{gpu} ran at its power limit{watts} in {share} % of loaded samples"),
    N_("It trains on {gpu}, shared with other processes in {share} % of samples, while GPU {index} was free"),
    N_("loss fell on {devices}"),
    N_("CPU/GPU losses agree within {diff}%"),
    N_("CNN {speedup}x faster on the GPU"),
    N_("CNN {slowdown}x slower on the GPU"),
    N_("AMP {dtype} ok"),
    N_("DataLoader workers ok"),
    N_("checkpoint loads on CPU"),
    N_("swung between idle and busy ({idle} % of samples below {low} %, {peak} % at {high} % or more)"),
    N_("averaged {mean} %"),
    N_("the main process at {share} of a core"),
    N_("{workers} at {share} each"),
    N_("{n} DataLoader workers"),
    N_("1 DataLoader worker"),
    N_("{n} instances"),
    N_("1 instance"),
    N_("GPU {index} ({names})"),
    N_("GPUs {indices} ({names})"),
    N_("compiling on the GPU"),
    N_("compiling on the CPU"),
    N_("starting"),
    N_("a CUDA library"),
    N_("the command's own peak {size}"),
    N_("the command's own share unknown"),
    N_("other processes held up to {size}"),
    N_(" of {watts} W"),
    N_(" within {seconds} s"),
    N_("an empty file"),
    N_("a text file"),
    N_("a text file starting {head}"),
    N_("in no format torch reads"),
    # fix labels and their parts built from facts (advice/install.py, paste, libraries), paste formats
    N_("It shows {what}"),
    N_("the torch build, whether CUDA is available, the OS, GPUs and driver"),
    N_("the driver, the newest CUDA it supports, and every GPU"),
    N_('the newest CUDA the driver supports (the "CUDA Version" in its header)'),
    N_("each GPU's compute capability (its name is not in cudadoctor's table)"),
    N_("the GPU architectures this torch build has kernels for"),
    N_("the version of the loaded kernel module, to compare with the libraries"),
    N_("which GPUs CUDA sees and in what order (mixed models)"),
    N_("which torch and nvidia-* wheels are installed, and the library search path"),
    N_(
        "conda-forge pytorch-gpu, {spec}: the CUDA this driver runs, "
        "and {variant} builds have kernels for every GPU here"
    ),
    N_("On the host (not in this container): {action}"),
    N_("on the host (not in this container): {action}"),
    N_("{note}: see {url}"),
    N_("no known torch build fits this driver and these GPUs together: {reasons}"),
    N_("RHEL and derivatives"),
    N_("Any Linux"),
    N_("Upgrade the NVIDIA driver to {need} or newer"),
    N_("Reinstall torch with {package} at the versions it pins"),
    N_("Strip '{prefix}' from the checkpoint's keys before loading"),
    N_("Drop {directory} from LD_LIBRARY_PATH (torch finds its own copies without it), then check"),
    N_("Windows found {library} in {directory} before torch\\lib: remove that directory from PATH, then check"),
    N_("error text"),
    N_("Python prompt output"),
    N_("cudadoctor JSON report"),
    N_("cudadoctor Markdown report"),
    N_("compute capability {cc} below {need}"),
    N_("no devices"),
    # sentences a rule adds to a page (rules/torch_build.py, rules/containers.py)
    N_(
        "This is a container with its own PID namespace, so the processes using these GPUs run elsewhere "
        "(another container or the host) — not 'no processes'"
    ),
    N_(
        "This is a container; if it has its own PID namespace (not known here), the processes using these "
        "GPUs run elsewhere (another container or the host) — not 'no processes'"
    ),
    N_("Processes of other users (or of containers) are listed only to root; listing them needs root"),
    N_("This build targets: {archs}"),
    N_("This build targets: {archs} (its wheel's list)"),
    N_("No torch {release} build has kernels for it; torch {newer} and newer do"),
    N_("torch {release} builds with kernels for it: {names}"),
    N_("Xid {xid}: {action}"),
    # the gate's fixes where no selection of this machine's GPUs can meet it (rules/requirements.py)
    N_("Free memory on {which}: stop the processes that hold it, or wait for them to finish"),
    N_("Run the job on a node with {gpus}: this one has {n}"),
    N_("Run the job on a node with {gpus} that have {size} free: this one has {n}"),
    N_("Run the job on a node with {gpus} that have compute capability {cc} or higher: this one has {n}"),
    N_(
        "Run the job on a node with {gpus} that have {size} free and compute capability {cc} or higher: "
        "this one has {n}"
    ),
    # a probe that ran out of time (rules/probe_failures.py): what it was doing, and the likely reason
    N_("It was importing torch and initialising CUDA in a child process"),
    N_("It was importing torch in a child process (no NVIDIA driver or GPU here: no CUDA to initialise)"),
    N_("It was querying the driver and every GPU through NVML"),
    N_("It was loading libcuda and calling cuInit in a child process"),
    N_("It was reading the OS, /dev/shm and the environment"),
    N_("It was reading the PCI bus"),
    N_("It was looking for the CUDA toolkit (nvcc --version)"),
    N_("It was reading the kernel module, the device nodes and the kernel log (modinfo, dmesg)"),
    N_("It was timing copies between host and GPU"),
    N_("It was running the training smoke test"),
    N_("It was compiling a tiny function with torch.compile"),
    N_(
        "The bound, {bound} s, is less than the {default} s this check gets by default: "
        "it was most likely still working, not stuck"
    ),
    N_("NVML did not answer: the NVIDIA kernel driver may be stuck (a wedged GPU, an Xid error)"),
    N_("cuInit did not return: the NVIDIA kernel driver may be stuck (a wedged GPU, an Xid error)"),
    N_(
        "Importing torch or initialising CUDA hangs: the NVIDIA kernel driver may be stuck (a wedged GPU, an Xid error)"
    ),
    N_("Importing torch hangs or is very slow (a slow or network file system, many packages)"),
    N_("A program it ran or a file it read did not answer in time"),
    N_(
        "No NVIDIA driver or GPU is in use here, so no driver hung: importing torch outlasted the bound "
        "(a --timeout shorter than the check's own, a slow or network file system)"
    ),
    N_("Run it without --timeout, so that each check has its own bound ({seconds} s for this one)"),
    N_("One time bound for every probe instead of its own: {bounds}."),
    N_("No PyTorch release in cudadoctor's tables supports it"),
    N_("{library} carries: {archs}"),
    N_(
        "Or install a {pkg} wheel built for compute capability {cc} and this torch, "
        "from the project's release page or index"
    ),
    N_("{library} links torch's C++ library"),
    N_("{library} links libcudart.so.{major}"),
    N_("Or install a {pkg} wheel built for CUDA {cuda} and this torch, from the project's release page or index"),
    # the most general last: the first template that matches wins
    N_("{label}: CUDA {cuda}"),
    N_("{label}: install the NVIDIA driver"),
    N_("{label} ({note}): add to {file}"),
    N_("{label} ({note})"),
)

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
# never span a "; " between parts of a list ("GPU 0 is Blackwell, sm_120: ...; GPU 1 is ...")
_ONE_PART = frozenset(
    {"path", "version", "gpu", "arch", "sm", "variant", "release", "cuda", "need", "family", "spec", "devices"}
)
_CLASSES = {
    "n": r"\d+",  # a count: "{n} GPUs" is the value "2 GPUs" of another template's placeholder
    "archs": "[^.;]+",  # "sm_80 sm_90", never the next sentence
    **{name: r"\S+" for name in ("pkg", "pkgversion", "variable")},  # one word
    **{name: "[^;]+?" for name in _ONE_PART},
}
# values shown as the rule wrote them: error messages, commands, paths and names are never translated
VERBATIM = frozenset(
    {"error", "commands", "message", "path", "directory", "library", "dll", "symbol", "prefix", "url", "python", "venv"}
)
# a label, never a whole title: "{label} ({note})" would match any title ending in brackets
_GENERIC = frozenset(LABELS[-4:])


@cache
def _compiled() -> tuple[tuple[re.Pattern[str], str], ...]:
    out = []
    # the most literal text first: "X (lifetime count only)" before "X", whatever the order above
    by_detail = sorted(TEMPLATES + LABELS, key=lambda t: -len(_PLACEHOLDER.sub("", t)))
    for template in by_detail:
        pattern, pos = "", 0
        for m in _PLACEHOLDER.finditer(template):
            name = m.group(1)
            value = ".+?" if name not in _CLASSES else _CLASSES[name]
            pattern += re.escape(template[pos : m.start()]) + f"(?P<{m.group(1)}>{value})"
            pos = m.end()
        pattern += re.escape(template[pos:])
        out.append((re.compile(pattern, re.DOTALL), template))
    return tuple(out)


def match(title: str, generic: bool = True) -> tuple[str, dict[str, str]] | None:
    """The template `title` was built from, and the values of its placeholders (`generic`: also the
    most general label templates, which a whole finding title never is)."""
    for pattern, template in _compiled():
        if not generic and template in _GENERIC:
            continue
        m = pattern.fullmatch(title)
        if m:
            return template, m.groupdict()
    return None
