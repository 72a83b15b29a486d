"""The segmentation masks of a volume loader (nifti datasets with label.npy members): the batch of their patches
on the device, and the classes a mixture of masked datasets names."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def mask_batch(masks: list[np.ndarray], device: torch.device) -> torch.Tensor:
    """[B, 1, D, H, W] float32 on `device` (label values are whole numbers, exact in float32 up to 2**24): floats,
    so that the augmentation moves them with their patches. int32 on the host, where uint16 values fit."""
    host = torch.from_numpy(np.stack(masks).astype(np.int32))[:, None]
    return (host.pin_memory() if device.type == "cuda" else host).to(device, non_blocking=True).float()


def mask_classes(view: Any) -> tuple[str, ...]:  # a MixedView
    """The classes of a mixture of masked datasets: mask values are labels, so every dataset must name them alike,
    value for value (the classes of a mixture of images are united and remapped; a mask's 0 must stay background)."""
    lists = {v.manifest.classes for v in view.views}
    if len(lists) > 1:
        shown = "; ".join(f"{name}: {list(v.manifest.classes)}" for name, v in zip(view.names, view.views))
        raise ValueError(f"datasets with masks mix only when they name the same labels in the same order; these "
                         f"differ: {shown}")
    return view.views[0].manifest.classes
