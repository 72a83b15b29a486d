"""The batched, on-device part of the kornia backend: colour jitter, normalise, dtype, memory format.

Input is a uint8 NHWC batch already on the device (every image already cropped, flipped and resized
to S x S). Per-sample jitter factors come in as an array drawn from each sample's own RNG, so the
result does not depend on the batch a sample lands in or on what ran before (exact resume). Pixels
stay uint8 until the last step; normalisation is one fused multiply-add that reads the uint8 NHWC
batch and writes float32 (NHWC memory is exactly NCHW channels_last, so no transpose; for
channels_last=False the uint8 batch is transposed first, the cheaper of the two copies).
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
        std = torch.tensor(opts.std, dtype=torch.float64)
        mean = torch.tensor(opts.mean, dtype=torch.float64)
        # (x / 255 - mean) / std == x * scale + shift; per channel, broadcast over the last (C) dim of NHWC
        self._scale = (1.0 / (255.0 * std)).to(device, torch.float32)
        self._shift = (-mean / std).to(device, torch.float32)
        self._unit_scale = (self._scale * 255.0).view(1, 3, 1, 1)  # for [0, 1] input: x * (1 / std) - mean / std
        self._unit_shift = self._shift.view(1, 3, 1, 1)

    def unit(self, images: torch.Tensor, jitter: np.ndarray | None = None) -> torch.Tensor:
        """What an `augment` hook receives: float32 NCHW in [0, 1] (channels_last memory), jittered as the
        hookless path jitters (then on whole grey levels, so an identity hook changes nothing)."""
        x = images.permute(0, 3, 1, 2).float().div_(255.0)
        if jitter is not None:
            x = self._jitter(x, torch.from_numpy(jitter).to(self.device, torch.float32))
            x = x.mul_(255.0).round_().div_(255.0)
        return x

    def finish(self, x: torch.Tensor) -> torch.Tensor:
        """A float [0, 1] NCHW batch (after the hook) in the loader's dtype and memory format: normalised, or
        for uint8 back on 0..255."""
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        if self.dtype == torch.uint8:
            return x.mul(255.0).round_().clamp_(0, 255).to(torch.uint8).contiguous(memory_format=fmt)
        out = torch.addcmul(self._unit_shift, x.float(), self._unit_scale)
        return out.to(self.dtype).contiguous(memory_format=fmt)

    def __call__(self, images: torch.Tensor, jitter: np.ndarray | None = None) -> torch.Tensor:
        """images: uint8 [B, S, S, 3] on the device; jitter: float [B, 4] per-sample factors, or None."""
        if jitter is not None:
            x = self._jitter(images.permute(0, 3, 1, 2).float().div_(255.0),
                             torch.from_numpy(jitter).to(self.device, torch.float32))
            images = x.mul_(255.0).round_().to(torch.uint8).permute(0, 2, 3, 1)
        if self.dtype == torch.uint8:
            out = images.permute(0, 3, 1, 2)  # NCHW view with channels_last strides, no copy (unless jittered)
            return out.contiguous(memory_format=torch.channels_last) if self.channels_last else out.contiguous()
        n, size = images.shape[0], images.shape[1]
        if self.channels_last:
            # NHWC memory is NCHW channels_last. Rows of W*3 values with a per-column scale keep the
            # innermost dimension dense, which vectorises (a (3,) broadcast on the innermost C does not).
            rows = images.reshape(n * size, size * 3)
            out = torch.addcmul(self._shift.repeat(size), rows, self._scale.repeat(size))  # uint8 in, float out
            out = out.view(n, size, size, 3).permute(0, 3, 1, 2)
        else:  # transpose the uint8 batch (4x less memory than float), then per-plane scale and shift
            planes = images.permute(0, 3, 1, 2).contiguous().view(n * 3, size * size).float()
            out = planes.mul_(self._scale.repeat(n).view(-1, 1)).add_(self._shift.repeat(n).view(-1, 1))
            out = out.view(n, 3, size, size)
        return out if self.dtype == torch.float32 else out.to(self.dtype)

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
