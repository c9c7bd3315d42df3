"""cuDNN's own status errors (CUDNN_STATUS_…, CD913): a mismatched cuDNN, or a GPU out of memory when cuDNN
starts; which one only where the paste shows the library stack."""

from __future__ import annotations

from cudadoctor.facts.paste import PasteHit
from cudadoctor.model import Finding, Severity, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.paste.entries import CUDNN_STATUS

# cuDNN failing to start: a GPU out of memory when its handle is created as often as a mismatched cuDNN
_MEMORY_OR_LIBRARY = ("NOT_INITIALIZED", "ALLOC_FAILED", "MAPPING_ERROR")
# what in the paste points at the library stack rather than memory
_LIBRARY_KINDS = ("undefined-symbol", "cannot-open-library", "cudnn-incompatible", "runtime-too-old")


def cudnn_status(h: PasteHit, kinds: dict[str, list[PasteHit]]) -> Finding:
    status = h.detail.get("status", "?")
    library = [
        fix(
            "Use the cuDNN of torch's own wheel: drop system paths",
            "echo $LD_LIBRARY_PATH",
            "unset LD_LIBRARY_PATH",
        ),
        fix("Check cuDNN as torch sees it", 'python -c "import torch; print(torch.backends.cudnn.version())"'),
    ]
    if status in _MEMORY_OR_LIBRARY and not any(k in kinds for k in _LIBRARY_KINDS):
        # nothing shown decides between the two (tinyvision/DAMO-YOLO#20 ran with a smaller batch): no set-up
        # error is claimed
        return CUDNN_STATUS.finding(
            title=msg(
                "cuDNN could not start: CUDNN_STATUS_{status} (GPU memory running out, or a cuDNN that does not "
                "match torch: the paste does not show which)",
                status=status,
            ),
            severity=Severity.WARNING,
            fix=[
                fix(
                    "See whether it is memory: the GPU's free memory, then the same run with a smaller batch",
                    "nvidia-smi",
                ),
                *library,
            ],
        )
    return CUDNN_STATUS.finding(
        title=msg("cuDNN failed: CUDNN_STATUS_{status}", status=status),
        fix=[library[0], fix("See whether it is memory", "nvidia-smi"), library[1]],
    )
