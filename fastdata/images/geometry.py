"""Crop and resize geometry, shared by every backend, written to match torchvision exactly.

- `random_resized_crop_box` is torchvision's `RandomResizedCrop.get_params` (10 attempts, then the
  central fallback), reading its uniform numbers from the sample's row of draws (`draws.py`), so that
  the result depends only on (seed, epoch, sample index).
- `resize_short_size` is torchvision `Resize(int)`: the shorter side becomes `size`, the longer side
  is `int(size * long / short)` (truncated, as torchvision does).
- `center_crop_offsets` is torchvision `CenterCrop`: `int(round((h - S) / 2))`.
- `dct_factor` picks the libjpeg-turbo scale 1/k (k in 1, 2, 4, 8) for decoding at reduced size when
  the region we need stays at least `min_side` pixels (DCT-domain downscale: faster decode).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from fastdata.images.draws import CROP_ATTEMPTS, DRAWS_PER_ATTEMPT, integer_below


class Box(NamedTuple):
    """A crop box in pixels: top, left, height, width."""

    top: int
    left: int
    height: int
    width: int

    def scaled(self, sy: float, sx: float, *, max_h: int, max_w: int) -> Box:
        """The same region in an image scaled by (sy, sx), clipped to (max_h, max_w)."""
        top = min(round(self.top * sy), max_h - 1)  # both edges rounded: at most half a pixel off each
        left = min(round(self.left * sx), max_w - 1)
        height = max(1, min(round((self.top + self.height) * sy) - top, max_h - top))
        width = max(1, min(round((self.left + self.width) * sx) - left, max_w - left))
        return Box(top, left, height, width)


def random_resized_crop_box(u: Sequence[float], height: int, width: int, *,
                            scale: tuple[float, float], ratio: tuple[float, float]) -> Box:
    """torchvision RandomResizedCrop.get_params, reading uniform numbers in [0, 1) from `u`
    (DRAWS_PER_ATTEMPT per attempt, CROP_ATTEMPTS attempts)."""
    area = height * width
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for a in range(0, CROP_ATTEMPTS * DRAWS_PER_ATTEMPT, DRAWS_PER_ATTEMPT):
        target_area = area * (scale[0] + (scale[1] - scale[0]) * u[a])
        aspect = math.exp(log_lo + (log_hi - log_lo) * u[a + 1])
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return Box(integer_below(u[a + 2], height - h + 1), integer_below(u[a + 3], width - w + 1), h, w)
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        w, h = width, height
    return Box((height - h) // 2, (width - w) // 2, h, w)


def resize_short_size(height: int, width: int, size: int) -> tuple[int, int]:
    """(new_height, new_width) of torchvision Resize(size): shorter side -> size, longer side truncated."""
    if height <= width:
        return size, int(size * width / height)
    return int(size * height / width), size


def center_crop_offsets(height: int, width: int, size: int) -> tuple[int, int]:
    """(top, left) of torchvision CenterCrop(size) on a (height, width) image at least size x size."""
    return int(round((height - size) / 2.0)), int(round((width - size) / 2.0))


def dct_factor(height: int, width: int, min_side: int) -> int:
    """Largest k in (8, 4, 2, 1) with ceil(height/k) and ceil(width/k) both >= min_side."""
    for k in (8, 4, 2):
        if math.ceil(height / k) >= min_side and math.ceil(width / k) >= min_side:
            return k
    return 1
