"""The batched, on-device part of the kornia backend: flip, colour jitter, normalise, dtype, layout.

Input is a uint8 NHWC batch already on the device (every image already cropped and resized to S x S).
Per-sample random decisions (flip, jitter factors) come in as arrays drawn from each sample's own RNG,
so the result does not depend on the batch a sample lands in or on what ran before (exact resume).
Pixels stay uint8 until the last step; normalisation is one fused multiply-add on the device.
"""

from __future__ import annotations

import numpy as np
import torch

from fastdata.images.options import ImageLoaderOptions

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "uint8": torch.uint8}


class DeviceAugment:
    """Turns a uint8 NHWC device batch into the output tensor of the loader contract."""

    def __init__(self, opts: ImageLoaderOptions, device: torch.device) -> None:
        self.device = device
        self.dtype = _DTYPES[opts.dtype]
        self.channels_last = opts.channels_last
        std = torch.tensor(opts.std, dtype=torch.float32, device=device).view(1, 3, 1, 1)
        mean = torch.tensor(opts.mean, dtype=torch.float32, device=device).view(1, 3, 1, 1)
        self._scale = 1.0 / (255.0 * std)  # (x / 255 - mean) / std == x * scale + shift
        self._shift = -mean / std

    def __call__(self, images: torch.Tensor, flips: np.ndarray | None = None,
                 jitter: np.ndarray | None = None) -> torch.Tensor:
        """images: uint8 [B, S, S, 3] on the device; flips: bool [B]; jitter: float [B, 4] or None."""
        x = images.permute(0, 3, 1, 2)  # NCHW view with channels_last strides, no copy
        if flips is not None and flips.any():
            from kornia.geometry.transform import hflip

            idx = torch.from_numpy(np.flatnonzero(flips)).to(self.device)
            x = x.clone(memory_format=torch.channels_last)
            x[idx] = hflip(x[idx])
        if jitter is not None:
            y = self._jitter(x.float().div_(255.0), torch.from_numpy(jitter).to(self.device, torch.float32))
            if self.dtype == torch.uint8:
                x = y.mul_(255.0).round_().to(torch.uint8)
            else:
                x = torch.addcmul(self._shift, y, self._scale * 255.0).to(self.dtype)
        elif self.dtype != torch.uint8:
            x = torch.addcmul(self._shift, x.float(), self._scale).to(self.dtype)
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        return x.contiguous(memory_format=fmt)

    @staticmethod
    def _jitter(x: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
        """Brightness, contrast, saturation, hue (fixed order) with per-sample factors, on 0..1 floats."""
        from kornia.enhance import (
            adjust_brightness_accumulative,
            adjust_contrast_with_mean_subtraction,
            adjust_hue,
            adjust_saturation,
        )

        x = adjust_brightness_accumulative(x, factors[:, 0])
        x = adjust_contrast_with_mean_subtraction(x, factors[:, 1])
        x = adjust_saturation(x, factors[:, 2])
        return adjust_hue(x, factors[:, 3] * (2 * torch.pi))


def to_torch_dtype(name: str) -> torch.dtype:
    return _DTYPES[name]
