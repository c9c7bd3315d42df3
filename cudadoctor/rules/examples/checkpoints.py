"""Example checkpoints for `ckpt`'s codes."""

from __future__ import annotations

from typing import Any

from cudadoctor.facts.ckpt import CkptFacts, CkptTorch, Content, FixResult, ModelComparison
from cudadoctor.rules.examples.base import (
    VENV,
)


def _weights(path: str, **kw: Any) -> CkptFacts:
    """A plain state dict of a ResNet-50 saved with torch.save (a story adds where and how it loads)."""
    base: dict = dict(
        format="torch-zip",
        size=102 << 20,
        tensor_count=320,
        state_dict_key="",
        state_dict_keys=["conv1.weight", "bn1.weight", "fc.weight", "fc.bias"],
    )
    base.update(kw)
    return CkptFacts(path, **base)


def checkpoints() -> dict[str, CkptFacts]:
    keys = ["module.conv1.weight", "module.bn1.weight", "module.fc.weight", "module.fc.bias"]
    training = [Content("model", "state dict"), Content("optimizer", "optimizer"), Content("epoch", "number", "90")]
    cpu_torch = CkptTorch(python=VENV, version="2.13.0+cpu", cuda_available=False, weights_only_default=True)
    one_gpu = CkptTorch(python=VENV, version="2.13.0+cu130", cuda_available=True, device_count=1)
    shards = [f"model-0000{i}-of-00004.safetensors" for i in range(1, 5)]
    return {
        # cloned without git-lfs: the file is the pointer
        "ckpt-lfs-pointer": CkptFacts(
            "resnet50.pt", format="lfs-pointer", size=133, lfs_oid="4f2c" + "0" * 60, lfs_size=102_540_000
        ),
        # wget of a Hugging Face /blob/ URL: the HTML page
        "ckpt-html-page": CkptFacts(
            "model.safetensors", format="html", size=48_213, text_title="model.safetensors · acme/vit at main"
        ),
        # a download that stopped part-way
        "ckpt-partial-download": CkptFacts(
            "ckpt/epoch_90.pt",
            format="corrupt",
            expected_format="torch-zip",
            size=61 << 20,
            detail="the zip's central directory is missing",
        ),
        # a safetensors file cut short
        "ckpt-safetensors-cut-short": CkptFacts(
            "model.safetensors",
            format="corrupt",
            header_too_large=True,
            size=12 << 20,
            detail="the header claims 7,310,868,831 bytes, the file has 12,582,912",
        ),
        # a .tar.gz someone renamed to .pt
        "ckpt-tarball-as-pt": CkptFacts("weights.pt", format="unknown", size=97 << 20, detail="a gzip file"),
        # torch.jit.save'd, opened with torch.load
        "ckpt-torchscript": CkptFacts("traced_model.pt", format="torchscript", size=98 << 20),
        # a DCP checkpoint directory from FSDP
        "ckpt-dcp-directory": CkptFacts(
            "ckpt/step_1000", format="dcp", size=2 << 30, shards=["__0_0.distcp", "__1_0.distcp", ".metadata"]
        ),
        # a sharded Hugging Face model with a shard missing
        "ckpt-shard-missing": CkptFacts(
            "llama",
            format="hf-index",
            index_file="model.safetensors.index.json",
            shards=shards,
            missing_shards=shards[1:2],
        ),
        # saved by torch 1.4
        "ckpt-torch-1-4": CkptFacts("old/model.pth", format="torch-legacy", size=44 << 20),
        # a DDP training checkpoint saved on cuda:0, opened on a laptop without CUDA
        "ckpt-ddp-cuda0-on-laptop": CkptFacts(
            "ckpt/epoch_90.pt",
            format="torch-zip",
            size=306 << 20,
            storage_devices={"cuda:0": 322},
            contents=training,
            state_dict_key="model",
            state_dict_keys=keys,
            prefixes=["module."],
            unsafe_globals=[],
            torch=cpu_torch,
        ),
        # saved on cuda:3 of an 8-GPU box, loaded where one GPU is visible
        "ckpt-cuda3-one-gpu": _weights("resnet50.pt", storage_devices={"cuda:3": 320}, torch=one_gpu),
        # saved on a GPU; the target torch not asked
        "ckpt-target-torch-unknown": _weights("resnet50.pt", storage_devices={"cuda:0": 320}),
        # a compiled model's state dict with a config class pickled from __main__
        "ckpt-main-class": CkptFacts(
            "compiled.pt",
            format="torch-zip",
            size=102 << 20,
            state_dict_keys=["_orig_mod.conv1.weight"],
            prefixes=["_orig_mod."],
            unsafe_globals=["__main__.TrainConfig"],
            globals=["__main__.TrainConfig", "collections.OrderedDict", "torch._utils._rebuild_tensor_v2"],
        ),
        # a pickle that runs a shell command when loaded
        "ckpt-malicious-pickle": CkptFacts(
            "free_model.pt",
            format="torch-zip",
            size=1 << 20,
            globals=["posix.system"],
            unsafe_globals=["posix.system"],
            dangerous_globals=["posix.system"],
        ),
        # a ResNet-50 saved on cuda:0 of a 4-GPU box, loaded on another with four GPUs
        "ckpt-saved-on-gpu-usable-here": _weights(
            "resnet50.pt",
            storage_devices={"cuda:0": 320},
            torch=CkptTorch(python=VENV, version="2.13.0+cu130", cuda_available=True, device_count=4),
        ),
        # the target venv's torch fails to import (a cuDNN it cannot find)
        "ckpt-target-torch-broken": _weights(
            "resnet50.pt",
            torch=CkptTorch(python=VENV, import_error="ImportError: libcudnn.so.9: cannot open shared object file"),
        ),
        # --model matches: every key and shape as the model's
        "ckpt-model-matches": _weights(
            "resnet50.pt", model=ModelComparison("torchvision.models:resnet50", model_keys=320, matched=320)
        ),
        # loaded into a DDP-wrapped model: keys lack module.
        "ckpt-ddp-keys": _weights(
            "resnet50.pt",
            model=ModelComparison("models:build_ddp", model_keys=320, matched=0, add="module."),
        ),
        # a fine-tuned head: keys missing, extra, and a different number of classes
        "ckpt-fine-tuned-head": _weights(
            "finetuned.pt",
            model=ModelComparison(
                "models:resnet50",
                model_keys=320,
                matched=316,
                missing=["classifier.weight", "classifier.bias"],
                unexpected=["aux_head.weight"],
                mismatched=[["fc.weight", "[1000, 2048]", "[10, 2048]"]],
            ),
        ),
        # --model names a factory that does not import
        "ckpt-factory-import-fails": _weights(
            "resnet50.pt",
            model=ModelComparison("models:build", error="ModuleNotFoundError: No module named 'models'"),
        ),
        # `ckpt fix` on a full disk
        "ckpt-fix-disk-full": _weights(
            "ckpt/epoch_90.pt",
            fix=FixResult("ckpt/epoch_90.fixed.pt", "torch", ok=False, error="[Errno 28] No space left on device"),
        ),
        # `ckpt fix` wrote a stripped CPU copy
        "ckpt-fixed-copy": _weights(
            "ckpt/epoch_90.pt",
            fix=FixResult(
                "ckpt/epoch_90.fixed.pt",
                "torch",
                ok=True,
                bytes_written=102 << 20,
                tensors=320,
                stripped=["module."],
                mapped_from=["cuda:0"],
                verified=True,
            ),
        ),
    }
