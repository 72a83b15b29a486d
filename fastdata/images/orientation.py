"""EXIF orientation at load time: adopted images whose header says they are stored mirrored or turned (a phone
photo taken sideways) reach both image backends upright, as `fastdata convert` makes them and as DALI's own
decoders read them (`adjust_orientation`).

`fastdata convert` applies the orientation when it re-encodes, so converted shards hold upright pixels and no
orientation. Adopted shards hold the images as some other tool wrote them. Before this, Pillow turned a TIFF
upright by itself (its TIFF reader applies the tag) while DALI's TIFF decoder did not, so the two backends
disagreed, and DALI's crop windows were drawn on the turned size of an image it decoded unturned; PNGs, WebPs
and JPEGs were read unturned by both.

The rule, for a sample whose orientation is 2..8: its image is decoded by Pillow (a JPEG first checked strictly,
as the converter does), turned with `ImageOps.exif_transpose` and made RGB by the converter's rule
(`pixels.to_rgb`), and handed on as a binary PPM, which both backends read as they read any opaque RGB image;
its size, and so its crop box, is the upright one. Non-JPEG images (decoded by Pillow anyway) are looked at
always. JPEGs are looked at only in datasets whose manifest counts turned images (`stats.exif_oriented`, written
by `fastdata index`), so that the JPEGs of every other dataset cost nothing more. A sample found upright is
remembered and not looked at again.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np
from PIL import ImageOps

from fastdata.errors import ShardError
from fastdata.images.decode import is_jpeg, rgb_ppm, undecodable
from fastdata.images.pixels import EXIF_ORIENTED, decode_problem, open_image, orientation_of
from fastdata.images.reader import RawSample

log = logging.getLogger(__name__)

_UNKNOWN, _UPRIGHT = 0, 1


def turned_images(view: Any) -> int:
    """How many images the manifest of `view` (each member of a mixture) counts as stored turned; a count that is
    not a positive integer (a forged or older manifest) counts as none."""
    total = 0
    for member in view.views:
        split = member.manifest.splits.get(member.split)
        count = split.stats.get(EXIF_ORIENTED) if split is not None else None
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            total += count
    return total


def say_if_turned(view: Any) -> None:
    """Log, once a loader, that the dataset holds images that will be turned upright (and what that costs)."""
    count = turned_images(view)
    if count:
        log.warning("%d image(s) of %s carry an EXIF orientation other than upright: they are turned upright on "
                    "the host (as `fastdata convert` and DALI's decoders do), and every JPEG's header is read for "
                    "its orientation; `fastdata convert` of the original images stores them upright", count,
                    ", ".join(f"split {m.split!r} of {m.root}" for m in view.views))


class Upright:
    """Turns the samples of one loader upright (`__call__`), remembering the ones that already are."""

    def __init__(self, num_samples: int, *, look_at_jpegs: bool) -> None:
        self.look_at_jpegs = look_at_jpegs
        self._state = np.zeros(num_samples, dtype=np.uint8)  # _UNKNOWN or _UPRIGHT, one byte a sample

    def __call__(self, raw: RawSample, height: int, width: int) -> tuple[RawSample, int, int]:
        """`raw` and its (height, width), upright; the pixel limit was checked on its header before."""
        known = 0 <= raw.index < len(self._state)
        if known and self._state[raw.index] == _UPRIGHT:
            return raw, height, width
        jpeg = is_jpeg(raw.data)
        turned = None if jpeg and not self.look_at_jpegs else upright_ppm(raw, jpeg=jpeg)
        if turned is None:
            if known:
                self._state[raw.index] = _UPRIGHT
            return raw, height, width
        data, height, width = turned
        return replace(raw, data=data), height, width


def upright_ppm(raw: RawSample, *, jpeg: bool) -> tuple[bytes, int, int] | None:
    """(a binary PPM of the upright RGB image, its height, its width), or None when the header records no
    orientation to apply. A JPEG is checked strictly first (cut or corrupt data is an error, as libjpeg-turbo
    makes it on the usual path); a failure is a bad sample, named."""
    try:
        with open_image(raw.data) as im:
            if orientation_of(im) == 1:
                return None
            if jpeg:
                problem = decode_problem(bytes(raw.data))
                if problem is not None:
                    raise ShardError(f"corrupt JPEG in {raw.shard}, key {raw.key}: {problem}")
            upright = ImageOps.exif_transpose(im)
            return rgb_ppm(upright), upright.height, upright.width
    except ShardError:
        raise
    except Exception as exc:  # noqa: BLE001 - any decode failure is a bad sample
        raise undecodable(raw, exc) from exc
