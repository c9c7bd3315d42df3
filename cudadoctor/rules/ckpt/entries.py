"""The checkpoint findings' catalogue entries (CD600–CD647): the codes, their summaries and pages."""

from __future__ import annotations

from cudadoctor.model import Severity
from cudadoctor.rules.catalogue import entry

S = "Checkpoint"

LFS_POINTER = entry(
    "CD600",
    "ckpt-lfs-pointer",
    Severity.ERROR,
    S,
    "The file is a Git LFS pointer, not the checkpoint",
    """The repository was cloned without Git LFS (or with GIT_LFS_SKIP_SMUDGE=1), so the file holds the
    three-line pointer Git LFS stores in place of the real file. torch.load fails with "invalid load key,
    'v'" and safetensors with "HeaderTooLarge" (the text "version " read as a header length).""",
)
HTML_PAGE = entry(
    "CD601",
    "ckpt-html-page",
    Severity.ERROR,
    S,
    "The file is an HTML page, not a checkpoint",
    """The download saved a web page (a login page, a "blob" view, a quota or redirect page) under the
    checkpoint's name. torch.load fails with "invalid load key, '<'". Download the raw file instead:
    Hugging Face URLs use /resolve/ (not /blob/), GitHub uses raw.githubusercontent.com or ?raw=1, and
    Google Drive needs a tool that follows its confirmation page (gdown).""",
)
TRUNCATED = entry(
    "CD602",
    "ckpt-truncated",
    Severity.ERROR,
    S,
    "The checkpoint is truncated or damaged",
    """The file ends before its format says it should (an interrupted download or copy, a full disk
    while saving, a job killed during torch.save). torch.load fails with "PytorchStreamReader failed
    reading zip archive: failed finding central directory" or "Ran out of input". No loader can recover
    the missing bytes: download or copy it again and compare its size or checksum.""",
)
HEADER_TOO_LARGE = entry(
    "CD603",
    "ckpt-header-too-large",
    Severity.ERROR,
    S,
    "safetensors: HeaderTooLarge — the file is not a complete safetensors file",
    """A safetensors file starts with an 8-byte header length. A length over 100 MB (the library's
    limit) means the first bytes are not a safetensors header at all: almost always a Git LFS pointer or
    an incomplete download (transformers#27923).""",
)
NOT_A_CHECKPOINT = entry(
    "CD604",
    "ckpt-not-a-checkpoint",
    Severity.ERROR,
    S,
    "The file is not a checkpoint torch.load can read",
    """Its first bytes match none of the formats torch.load (zip or legacy pickle), torch.jit.load or
    safetensors read: it is empty, text, another archive, or a pickle not written by torch.save.""",
)
TORCHSCRIPT = entry(
    "CD605",
    "ckpt-torchscript",
    Severity.ERROR,
    S,
    "A TorchScript archive: load it with torch.jit.load, not torch.load",
    """torch.jit.save writes a zip with code and constants.pkl. Since torch 2.6 torch.load refuses it
    ("Cannot use weights_only=True with TorchScript archives passed to torch.load"); before, it
    dispatched to torch.jit.load with a warning. torch.jit.load reads it and takes map_location too.""",
)
DCP = entry(
    "CD606",
    "ckpt-dcp",
    Severity.INFO,
    S,
    "A torch.distributed.checkpoint (DCP) directory",
    """DCP writes one directory (.metadata plus *.distcp files) that torch.load cannot read. Load it with
    torch.distributed.checkpoint.load into a model's state dict, or convert it once to a single file with
    torch.distributed.checkpoint.format_utils.dcp_to_torch_save. Its .metadata is a pickle with DCP's
    own classes: read it only from a source you trust.""",
)
SHARDS = entry(
    "CD607",
    "ckpt-shards-missing",
    Severity.ERROR,
    S,
    "A sharded checkpoint with missing or broken shards",
    """The *.index.json maps every tensor to a shard file; from_pretrained and friends fail when a shard is
    absent, is a Git LFS pointer, or was cut short.""",
)
LEGACY = entry(
    "CD608",
    "ckpt-legacy-format",
    Severity.INFO,
    S,
    "Saved in the legacy (pre-1.6) torch format",
    """torch.load still reads it, but not with mmap=True, so loading it needs all of its bytes in
    memory at once. `cudadoctor ckpt fix` rewrites it in the zip format.""",
)
SUMMARY = entry(
    "CD609",
    "ckpt-summary",
    Severity.OK,
    S,
    "What the checkpoint holds",
    """Format, size, tensors, dtypes and what else the file carries, read without running any code from
    it.""",
)
NO_CUDA_HERE = entry(
    "CD610",
    "ckpt-cuda-not-available",
    Severity.ERROR,
    S,
    "Saved on a GPU, but torch here has no usable CUDA: load with map_location",
    """torch.save records the device of every storage, and torch.load puts each back there. Without a
    usable GPU, torch.load fails with "Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False". map_location moves the storages while loading; picking the device
    once (cuda when available, else cpu) makes the same code run on both kinds of machine.""",
)
DEVICE_INDEX = entry(
    "CD611",
    "ckpt-device-index",
    Severity.ERROR,
    S,
    "Saved on a GPU index this machine does not have",
    """torch.load restores each storage onto the device index it was saved from; with fewer GPUs visible it
    fails with "Attempting to deserialize object on CUDA device N but torch.cuda.device_count() is M".
    map_location remaps them.""",
)
DEVICES_OK = entry(
    "CD612",
    "ckpt-devices-usable",
    Severity.OK,
    S,
    "The devices the storages were saved on exist here",
    """torch.load without map_location puts every storage back on the device it was saved from; those
    devices are usable here.""",
)
UNSAFE_GLOBALS = entry(
    "CD620",
    "ckpt-unsafe-globals",
    Severity.ERROR,
    S,
    "torch.load(weights_only=True) will refuse this checkpoint",
    """Since torch 2.6, torch.load defaults to weights_only=True: a restricted unpickler that builds only
    tensors, containers and allow-listed types. This pickle names classes or functions outside that list,
    so loading fails with "Weights only load failed ... Unsupported global". Allow-list exactly those names
    with torch.serialization.safe_globals when you trust the file; weights_only=False runs whatever the
    pickle says. The audit reads the pickle's opcodes statically: nothing in it was run.""",
)
DANGEROUS = entry(
    "CD621",
    "ckpt-dangerous-globals",
    Severity.ERROR,
    S,
    "The pickle calls functions that run code or touch the system",
    """Loading it with weights_only=False (or allow-listing these names) executes them. A checkpoint has
    no reason to call these: treat the file as hostile, do not load it, and get the weights from a source
    you trust (prefer safetensors, which holds no code).""",
)
WEIGHTS_ONLY_OK = entry(
    "CD622",
    "ckpt-weights-only-ok",
    Severity.OK,
    S,
    "weights_only=True can read it: every global is on torch's allow-list",
    """Every global the pickle names is on torch's weights_only allow-list, so torch.load needs no
    safe_globals and no weights_only=False (where the target's torch was asked, its test load onto the
    meta device agreed).""",
)
SAVED_ON_GPU = entry(
    "CD613",
    "ckpt-saved-on-gpu",
    Severity.INFO,
    S,
    "Saved on a GPU: torch.load without map_location needs that device",
    """torch.load puts every storage back on the device it was saved from. Whether those devices exist
    where it will be loaded was not checked here (the target's torch could not be asked); map_location
    makes the load independent of them.""",
)
TRAINING = entry(
    "CD625",
    "ckpt-training-checkpoint",
    Severity.INFO,
    S,
    "The model's weights are one entry among others",
    """Training loops save a dict with the model's state dict beside the optimizer, scheduler, epoch and
    more; released weights often come in a dict beside their config. model.load_state_dict needs that one
    entry, not the whole dict; `ckpt fix --state-dict-only` writes it alone.""",
)
PREFIX_MODULE = entry(
    "CD630",
    "ckpt-prefix-module",
    Severity.WARNING,
    S,
    "Every key starts with 'module.' (saved from DataParallel/DistributedDataParallel)",
    """nn.DataParallel and DistributedDataParallel keep the model as .module, so a state dict saved from
    the wrapper prefixes every key with 'module.'. Loading it into the plain model fails with "Missing
    key(s) ... Unexpected key(s)". torch.nn.modules.utils.consume_prefix_in_state_dict_if_present strips
    it, metadata included; slicing keys with k[7:] corrupts any key that does not carry the prefix.""",
)
PREFIX_COMPILE = entry(
    "CD631",
    "ckpt-prefix-orig-mod",
    Severity.WARNING,
    S,
    "Every key starts with '_orig_mod.' (saved from a torch.compile'd model)",
    """torch.compile returns an OptimizedModule that holds the model as _orig_mod, so its state dict
    prefixes every key with '_orig_mod.' (with DDP too: '_orig_mod.module.'). Save model._orig_mod's state
    dict, or strip the prefix with consume_prefix_in_state_dict_if_present.""",
)
MODEL_WRAPPED = entry(
    "CD632",
    "ckpt-model-wrapped",
    Severity.ERROR,
    S,
    "The model is wrapped, the checkpoint is not",
    """The model's keys carry a wrapper's prefix ('module.' from DataParallel/DDP, '_orig_mod.' from
    torch.compile) that the checkpoint's lack. Load into the inner model (model.module or model._orig_mod)
    or before wrapping.""",
)
MISSING = entry(
    "CD640",
    "ckpt-missing-keys",
    Severity.ERROR,
    S,
    "The model has parameters the checkpoint lacks",
    """load_state_dict(strict=True) raises "Missing key(s) in state_dict". The checkpoint is for another
    architecture or configuration, or a part of the model was added after it was saved.""",
)
UNEXPECTED = entry(
    "CD641",
    "ckpt-unexpected-keys",
    Severity.ERROR,
    S,
    "The checkpoint has keys the model does not",
    """load_state_dict(strict=True) raises "Unexpected key(s) in state_dict". strict=False ignores them
    (and missing keys too: check what it returns).""",
)
SHAPES = entry(
    "CD642",
    "ckpt-shape-mismatch",
    Severity.ERROR,
    S,
    "Tensors whose shapes differ between the checkpoint and the model",
    """load_state_dict raises "size mismatch for KEY" even with strict=False: the model was built with
    another configuration (classes, vocabulary, hidden size) than the one that was saved.""",
)
MODEL_OK = entry(
    "CD643",
    "ckpt-model-matches",
    Severity.OK,
    S,
    "Keys and shapes match the model",
    """Every key the model expects is in the checkpoint with the same shape, and nothing else is.""",
)
MODEL_ERROR = entry(
    "CD644",
    "ckpt-model-error",
    Severity.ERROR,
    S,
    "The --model factory could not build the model",
    """--model MODULE:FACTORY is imported in the target interpreter (with the current directory on
    sys.path) and called without arguments, under torch.device("meta") first so no memory is spent on
    weights.""",
)
FIX_WRITTEN = entry(
    "CD645",
    "ckpt-fix-written",
    Severity.OK,
    S,
    "Fixed copy written and verified",
    """The copy was read back the way a user loads it (weights_only=True, no map_location) and its tensors
    compared byte for byte with the original's.""",
)
FIX_FAILED = entry(
    "CD646",
    "ckpt-fix-failed",
    Severity.ERROR,
    S,
    "The fixed copy could not be written or did not verify",
    """Nothing was left at the output path when writing failed; when the copy did not verify, it is left
    there for inspection and should not be used.""",
)
CHILD_FAILED = entry(
    "CD647",
    "ckpt-torch-unavailable",
    Severity.INFO,
    S,
    "The target interpreter's torch could not be asked",
    """torch is not installed in the target interpreter, or its child process failed. Everything read
    from the file's bytes is still reported; what needs torch (the devices usable here, a test load) is
    not.""",
)
