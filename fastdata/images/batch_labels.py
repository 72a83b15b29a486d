"""A batch's labels as both image backends deliver them: int64 `[B]` class indices, or for a dataset converted
`--multi-label` float32 `[B, classes]` multi-hot rows (1.0 for each class of the image: the target
`torch.nn.BCEWithLogitsLoss` takes). A padding row (eval's last batch, docs/loading.md) is -100 throughout."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from fastdata.images.order import PAD_LABEL


def batch_labels(labels: Sequence[int | tuple[int, ...] | None], multi_hot: int = 0) -> torch.Tensor:
    """The labels of a batch's rows (None: a padding row); `multi_hot`: the class count of a multi-label dataset,
    whose labels are tuples of class indices (0: one class index a row)."""
    if not multi_hot:
        return torch.tensor([PAD_LABEL if label is None else label for label in labels], dtype=torch.int64)
    out = np.zeros((len(labels), multi_hot), dtype=np.float32)
    rows = [r for r, label in enumerate(labels) for _ in (label or ())]
    out[rows, [c for label in labels for c in (label or ())]] = 1.0
    out[[r for r, label in enumerate(labels) if label is None]] = PAD_LABEL
    return torch.from_numpy(out)
