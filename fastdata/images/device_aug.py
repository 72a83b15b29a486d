"""The batched, on-device part of the kornia backend: colour jitter, normalise, dtype, memory format.

Input is a uint8 NHWC batch already on the device (every image already cropped, flipped and resized
to S x S). Per-sample jitter factors come in as an array drawn from each sample's own RNG, so the
result does not depend on the batch a sample lands in or on what ran before (exact resume). Pixels
stay uint8 until the last step, then become float32 [0, 1] in one conversion (NHWC memory is exactly NCHW
channels_last, so no transpose; for channels_last=False the uint8 batch is transposed first, the cheaper
of the two copies). That is what an `augment` hook receives; it is then normalised in place by one
multiply-add with a per-column (channels_last) or per-plane scale. On the CPU, without colour jitter, the
uint8 batch goes to the normalised float (or, for a hook, to [0, 1]) in one blocked pass (`_from_uint8`),
into a batch buffer reused once nothing outside the loader refers to it (`buffers.py`).
"""

from __future__ import annotations

import numpy as np
import torch

from fastdata.images.buffers import BufferPool
from fastdata.images.options import ImageLoaderOptions

# an image loader's `dtype` names, as torch dtypes (both backends' outputs, and the memory a batch takes)
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "uint8": torch.uint8}

_BLOCK = 1 << 20  # elements a block of _affine_rows (4 MiB of float32 output), the fastest measured (1 << 16 .. 30)


def _affine_rows(src: torch.Tensor, dst: torch.Tensor, a: torch.Tensor, b: torch.Tensor | None) -> None:
    """dst = src * a + b (b None: no shift) over 2-D rows of a CPU tensor, `a` and `b` per column (1-D) or per
    row (2-D, one column). A uint8 `src` is converted as it is read: one pass, 38 us per 224 x 224 image on one
    thread against 113 us for numpy's multiply and add (which convert through buffers). In blocks of rows:
    one op over a whole 128-image batch took 7.5x longer. `dst` may be `src`."""
    per_row = a.dim() == 2
    step = max(1, _BLOCK // max(src.shape[1], 1))
    for r in range(0, len(src), step):
        scale = a[r:r + step] if per_row else a
        if b is None:
            torch.mul(src[r:r + step], scale, out=dst[r:r + step])
        else:
            torch.addcmul(b[r:r + step] if per_row else b, src[r:r + step], scale, out=dst[r:r + step])


def pool_size(opts: ImageLoaderOptions) -> int:
    """Buffers a pool keeps: the batches that can be alive at once (the producer's and the hook stage's
    queues, the one being made, the one the training step holds), plus one."""
    return 2 * (opts.prefetch + 1) + 2


class DeviceAugment:
    """Turns a uint8 NHWC device batch into the output tensor of the loader contract."""

    def __init__(self, opts: ImageLoaderOptions, device: torch.device) -> None:
        self.device = device
        self.dtype = TORCH_DTYPES[opts.dtype]
        self.channels_last = opts.channels_last
        std = torch.tensor(opts.std, dtype=torch.float64)
        mean = torch.tensor(opts.mean, dtype=torch.float64)
        # (x / 255 - mean) / std == x * scale + shift; per channel, broadcast over the last (C) dim of NHWC
        self._scale = (1.0 / (255.0 * std)).to(device, torch.float32)
        self._shift = (-mean / std).to(device, torch.float32)
        self._unit_scale = (self._scale * 255.0).view(1, 3, 1, 1)  # for [0, 1] input: x * (1 / std) - mean / std
        self._unit_shift = self._shift.view(1, 3, 1, 1)
        self._floats = BufferPool(keep=pool_size(opts))  # the output batches made on the CPU

    def unit(self, images: torch.Tensor, jitter: np.ndarray | None = None) -> torch.Tensor:
        """What an `augment` hook receives: float32 NCHW in [0, 1] (channels_last memory), jittered as the
        hookless path jitters (then on whole grey levels, so an identity hook changes nothing); in the output's
        memory format. (`.float().mul_()` is twice as fast on CPU as a type-promoting `torch.mul(uint8, float)`.)"""
        n, size = images.shape[0], images.shape[1]
        if images.device.type == "cpu":
            x = self._from_uint8(images, None, None)
        elif self.channels_last:
            rows = images.reshape(n * size, size * 3).float().mul_(1.0 / 255.0)
            x = rows.view(n, size, size, 3).permute(0, 3, 1, 2)
        else:  # transpose the uint8 batch (4x less memory than float), then to float
            x = images.permute(0, 3, 1, 2).contiguous().float().mul_(1.0 / 255.0)
        if jitter is not None:
            x = self._jitter(x, torch.from_numpy(jitter).to(self.device, torch.float32))
            x = x.mul_(255.0).round_().div_(255.0)
        return x

    def finish(self, x: torch.Tensor, *, inplace: bool = False) -> torch.Tensor:
        """A float [0, 1] NCHW batch (after the hook) in the loader's dtype and memory format: normalised, or
        for uint8 back on 0..255. `inplace`: `x` is the loader's own tensor (the hook returned what it got), so
        float32 output is written over it: no new batch-sized allocation, whose page faults cost more than
        the arithmetic."""
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        if self.dtype == torch.uint8:
            return x.mul(255.0).round_().clamp_(0, 255).to(torch.uint8).contiguous(memory_format=fmt)
        n, size = x.shape[0], x.shape[-1]
        reuse = inplace and x.dtype == torch.float32
        if x.dtype == torch.float32 and x.shape[-2] == size and x.is_contiguous(memory_format=torch.channels_last):
            rows = x.permute(0, 2, 3, 1).view(n * size, size * 3)  # the channels_last memory, no copy
            scale, shift = self._scale.mul(255.0).repeat(size), self._shift.repeat(size)
            out = self._scale_shift(rows, scale, shift) if reuse else torch.addcmul(shift, rows, scale)
            out = out.view(n, size, size, 3).permute(0, 3, 1, 2).contiguous(memory_format=fmt)
        elif reuse and x.is_contiguous():  # per-plane scale and shift over (N*3, H*W), written over x
            planes = x.view(n * 3, -1)
            self._scale_shift(planes, self._scale.mul(255.0).repeat(n).view(-1, 1), self._shift.repeat(n).view(-1, 1))
            out = x.contiguous(memory_format=fmt)
        else:
            out = torch.addcmul(self._unit_shift, x.float(), self._unit_scale).contiguous(memory_format=fmt)
        return out if self.dtype == torch.float32 else out.to(self.dtype)

    def _scale_shift(self, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        """x * scale + shift written over x (2-D: rows, with per-column or per-row scale and shift); on the CPU in
        blocks of rows (`_affine_rows`)."""
        if x.device.type == "cpu":
            _affine_rows(x, x, scale, shift)
            return x
        return torch.addcmul(shift, x, scale, out=x)

    def _from_uint8(self, images: torch.Tensor, scale: torch.Tensor | None, shift: torch.Tensor | None) -> torch.Tensor:
        """A uint8 NHWC CPU batch as float32 NCHW in the output's memory format, `x * scale + shift` per channel
        (None: x / 255), in one trip through memory: each block of rows is converted as it is scaled
        (`_affine_rows`), on the producer thread alone (`intraop.py`). Converting with `.float()` and then scaling
        reads and writes the float batch twice more (unit + finish: 3 passes over 38 MB for 64 x 224^2)."""
        n, size = images.shape[0], images.shape[1]
        per_channel = (1.0 / 255.0) * torch.ones(3) if scale is None else scale.cpu()
        if not self.channels_last:
            return self._planar_from_uint8(images, per_channel, shift)
        src = images.reshape(n * size, size * 3)  # rows of the NHWC memory, per-column factors
        a, b = per_channel.repeat(size), None if shift is None else shift.cpu().repeat(size)
        dst = torch.from_numpy(self._floats.take(tuple(src.shape), np.float32))  # already mapped (buffers.py)
        _affine_rows(src, dst, a, b)
        return dst.view(n, size, size, 3).permute(0, 3, 1, 2)

    def _planar_from_uint8(self, images: torch.Tensor, per_channel: torch.Tensor,
                           shift: torch.Tensor | None) -> torch.Tensor:
        """Contiguous NCHW output: each image's (H*W, 3) pixels are read transposed straight into its three float
        planes (x * scale + shift per plane) with numpy. Measured on a 128 x 224^2 batch, one thread: 15 ms,
        against 21 ms for a torch uint8 permute-copy of the batch (whose kernel is 3x slower than numpy's strided
        copy) then the float pass. Torch's addcmul reading the transposed uint8 view was faster alone (98 against
        150 us an image) but slower in the loader, beside the decode threads: 205 against 128 us of CPU an image."""
        n, size = images.shape[0], images.shape[1]
        src = images.reshape(n, size * size, 3).numpy()
        a = per_channel.view(3, 1).numpy()
        b = None if shift is None else shift.cpu().view(3, 1).numpy()
        dst = self._floats.take((n, 3, size * size), np.float32)
        for i in range(n):
            np.multiply(src[i].T, a, out=dst[i])
            if b is not None:
                np.add(dst[i], b, out=dst[i])
        return torch.from_numpy(dst).view(n, 3, size, size)

    def __call__(self, images: torch.Tensor, jitter: np.ndarray | None = None) -> torch.Tensor:
        """images: uint8 [B, S, S, 3] on the device; jitter: float [B, 4] per-sample factors, or None."""
        if self.dtype == torch.uint8 and jitter is None:  # nothing to compute: a view, or one layout copy
            out = images.permute(0, 3, 1, 2)  # NCHW view with channels_last strides
            if self.channels_last:
                return out
            if images.device.type == "cpu":  # numpy's strided copy: 3x faster than torch's uint8 permute-copy
                return torch.from_numpy(np.ascontiguousarray(out.numpy()))
            return out.contiguous()
        if jitter is None and images.device.type == "cpu":  # uint8 -> normalised float in one pass
            out = self._from_uint8(images, self._scale, self._shift)
            return out if self.dtype == torch.float32 else out.to(self.dtype)
        # to float once (jittered on whole grey levels), then normalised in place, or back to uint8
        return self.finish(self.unit(images, jitter), inplace=True)

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
