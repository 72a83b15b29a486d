"""Decode on the device (kornia backend, `device_decode=True`): `torchvision.io.decode_jpeg` on a whole batch.

On CUDA this is nvJPEG; on the CPU the same calls run libjpeg, which is how the plumbing is tested
without a GPU. The host threads only read the bytes and parse the JPEG header (to reject corrupt
headers and decompression bombs early and to draw the crop box); the device decodes, crops and resizes
every image to S x S with the same geometry as the host path (`geometry.py`). A sample whose bytes the
device decoder rejects is decoded alone to name it in the error (or skip it with on_error="skip").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from fastdata.errors import ShardError
from fastdata.images.geometry import Box, center_crop_offsets, resize_short_size


@dataclass(frozen=True)
class Encoded:
    """A sample prepared on the host for device decoding."""

    data: torch.Tensor  # uint8 [n] JPEG bytes
    key: str
    shard: str
    box: Box | None  # train: the crop box in full-resolution pixels; eval: None
    flip: bool = False  # train: mirror horizontally


def _resize(image: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Bilinear antialiased resize of a uint8 CHW image on its device, rounded back to uint8."""
    if image.shape[-2:] == (height, width):
        return image
    x = image.unsqueeze(0).float()
    y = F.interpolate(x, size=(height, width), mode="bilinear", antialias=True, align_corners=False)
    return y[0].round_().clamp_(0, 255).to(torch.uint8)


def _geometry(image: torch.Tensor, enc: Encoded, *, size: int, resize_short: int) -> torch.Tensor:
    """CHW decoded image -> HWC uint8 size x size (train: crop box then resize; eval: resize + centre crop)."""
    if enc.box is not None:
        b = enc.box
        out = _resize(image[:, b.top:b.top + b.height, b.left:b.left + b.width], size, size)
        if enc.flip:
            out = out.flip(-1)
    else:
        new_h, new_w = resize_short_size(image.shape[-2], image.shape[-1], resize_short)
        top, left = center_crop_offsets(new_h, new_w, size)
        out = _resize(image, new_h, new_w)[:, top:top + size, left:left + size]
    return out.permute(1, 2, 0)


def _decode_one(enc: Encoded, device: torch.device) -> torch.Tensor | ShardError:
    from torchvision.io import ImageReadMode, decode_jpeg

    try:
        return decode_jpeg(enc.data, mode=ImageReadMode.RGB, device=device)
    except RuntimeError as exc:
        return ShardError(f"corrupt JPEG in {enc.shard}, key {enc.key}: {exc}")


def decode_on_device(batch: list[Encoded], device: torch.device, *, size: int,
                     resize_short: int) -> list[torch.Tensor | ShardError]:
    """Decode `batch` on `device` in one call; per sample an HWC uint8 size x size tensor or the ShardError."""
    from torchvision.io import ImageReadMode, decode_jpeg

    if not batch:
        return []
    try:
        decoded: list[torch.Tensor | ShardError] = list(
            decode_jpeg([e.data for e in batch], mode=ImageReadMode.RGB, device=device))
    except RuntimeError:  # one bad sample fails the batch call: find it by decoding one at a time
        decoded = [_decode_one(e, device) for e in batch]
    return [d if isinstance(d, ShardError) else _geometry(d, e, size=size, resize_short=resize_short)
            for d, e in zip(decoded, batch)]
