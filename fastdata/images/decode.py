"""Per-sample CPU work of the kornia backend: libjpeg-turbo decode, crop, resize to S x S (uint8).

Runs in the decode thread pool: `simplejpeg.decode_jpeg` and torch's resize kernels release the GIL,
so `num_threads` threads decode in parallel. Everything here is single-threaded per image: the decode
threads run torch's ops serially (`intraop.py`), so they start no intra-op (OpenMP) thread teams that
would compete with them for the cores.

Only what is needed is decoded: the DCT-domain downscale of libjpeg-turbo (1/2, 1/4, 1/8) is used
whenever the region we keep still has at least the output resolution (train only: eval decodes at
full size so it matches torchvision Resize + CenterCrop), and eval skips the resize when the shorter
side already has the target length (shards converted with --short-side equal to image_size / 0.875).
"""

from __future__ import annotations

import io
import math
import threading
from dataclasses import replace

import numpy as np
import torch
from PIL import Image

from fastdata.errors import ShardError
from fastdata.images.geometry import (
    Box,
    center_crop_offsets,
    dct_factor,
    resize_short_size,
)
from fastdata.images.pixels import open_image, other_format, to_rgb
from fastdata.images.reader import RawSample

DALI_READS_AS_IS = ("RGB", "L", "P", "1")  # Pillow modes that DALI's decoders turn into the RGB of `to_rgb`


def is_jpeg(data: bytes | memoryview) -> bool:
    """True unless the bytes carry the signature of another image format (those decode through Pillow)."""
    return other_format(data) is None


def _too_large(raw: RawSample, width: int, height: int, max_pixels: int) -> ShardError:
    return ShardError(f"image too large in {raw.shard}, key {raw.key}: {width}x{height} pixels is more than "
                      f"max_pixels={max_pixels} (decompression bomb guard; raise the loader's max_pixels to allow it)")


def check_header(raw: RawSample, max_pixels: int) -> tuple[int, int]:
    """(height, width) from the image header, after the pixel limit check; no pixel is decoded."""
    if not is_jpeg(raw.data):
        return _other_header(raw, max_pixels)
    import simplejpeg

    try:
        height, width, _, _ = simplejpeg.decode_jpeg_header(raw.data)
    except ValueError as exc:
        raise ShardError(f"corrupt JPEG in {raw.shard}, key {raw.key}: {exc}") from exc
    if height * width > max_pixels:
        raise _too_large(raw, width, height, max_pixels)
    return height, width


def _other_header(raw: RawSample, max_pixels: int) -> tuple[int, int]:
    """PNG, WebP and the other formats Pillow reads (adopted shards): header only."""
    try:
        with open_image(raw.data) as im:
            width, height = im.size
    except Exception as exc:  # noqa: BLE001 - any failure to read the header is a bad sample
        raise undecodable(raw, exc) from exc
    if height * width > max_pixels:
        raise _too_large(raw, width, height, max_pixels)
    return height, width


def undecodable(raw: RawSample, exc: Exception) -> ShardError:
    return ShardError(f"undecodable image in {raw.shard}, key {raw.key}: {type(exc).__name__}: {exc}")


def _decode_other(raw: RawSample) -> np.ndarray:
    try:
        with open_image(raw.data) as im:
            im.load()
            return np.array(to_rgb(im))  # a writable copy (torch.from_numpy wants one)
    except Exception as exc:  # noqa: BLE001 - any decode failure is a bad sample
        raise undecodable(raw, exc) from exc


def host_rgb(raw: RawSample) -> RawSample:
    """A sample as the DALI backend hands it to DALI: JPEGs, and other images whose mode DALI decodes to the same
    RGB as `pixels.to_rgb` (opaque 8-bit RGB, grey and palette), unchanged; any other image (transparency,
    16-bit, float, CMYK TIFF, ...) decoded here by the rule the kornia backend and the converter follow and handed
    on as a binary PPM, which DALI reads as is. DALI's PNG, WebP and TIFF decoders drop the alpha channel (a
    transparent pixel showed the colour stored under it, or black), where the rule composites over white."""
    if is_jpeg(raw.data):
        return raw
    try:
        with open_image(raw.data) as im:
            if im.mode in DALI_READS_AS_IS and "transparency" not in im.info:
                return raw
            data = rgb_ppm(im)
    except Exception as exc:  # noqa: BLE001 - any decode failure is a bad sample
        raise undecodable(raw, exc) from exc
    return replace(raw, data=data)


def rgb_ppm(im: Image.Image) -> bytes:
    """`im` decoded, made RGB by the converter's rule (`pixels.to_rgb`), as a binary PPM: what the host hands on
    in place of an image the backends would otherwise read apart (`host_rgb`, orientation.py)."""
    im.load()
    buf = io.BytesIO()
    to_rgb(im).save(buf, "PPM")
    return buf.getvalue()


def _decode(raw: RawSample, factor: int = 1, height: int = 0, width: int = 0) -> np.ndarray:
    """RGB uint8 HWC; JPEGs through libjpeg-turbo (DCT-downscaled by 1/factor when the full `height` x
    `width` is given), other formats through Pillow at full size."""
    if not is_jpeg(raw.data):
        return _decode_other(raw)
    import simplejpeg

    # libjpeg-turbo scales by M/8; simplejpeg picks the smallest output at least min_height x min_width
    # (its min_factor alone does nothing: measured, a 1282x1110 JPEG decoded at full size for every factor)
    small = factor > 1 and height > 0 and width > 0
    try:
        return simplejpeg.decode_jpeg(raw.data, colorspace="RGB", strict=True,
                                      min_height=math.ceil(height / factor) if small else 0,
                                      min_width=math.ceil(width / factor) if small else 0)
    except ValueError as exc:
        raise ShardError(f"corrupt JPEG in {raw.shard}, key {raw.key}: {exc}") from exc


def resize_hwc(image: np.ndarray | torch.Tensor, height: int, width: int,
               out: np.ndarray | None = None) -> torch.Tensor:
    """Bilinear, antialiased resize of a uint8 HWC image (torchvision v2 Resize on uint8 tensors), written
    into `out` (a dense height x width x 3 uint8 array, e.g. a row of the batch: `rows.py`) or a new one.

    Returns the dense HWC result. The kernel is the one `F.interpolate(antialias=True)` calls, with its
    `out=` argument. The NCHW views handed to it have true channels_last strides (the batch dimension is
    a reshape of the dense image, so its stride is H*W*3, not numpy's 0 for a new axis), so torch keeps
    that memory format and writes the HWC bytes in place; a stride torch does not recognise as
    channels_last would make it write planar NCHW into a temporary and copy it back transposed. The
    views are numpy's: torch's own view ops cost 4 us more a sample of Python holding the GIL.
    """
    image = image.numpy() if isinstance(image, torch.Tensor) else image
    if image.shape[:2] == (height, width):  # nothing to resize: one copy, dense
        if out is None:
            return torch.from_numpy(np.ascontiguousarray(image))
        np.copyto(out, image)
        return torch.from_numpy(out)
    image = np.ascontiguousarray(image)  # dense HWC (a strided crop straight into the kernel is no faster)
    if out is None:
        out = np.empty((height, width, 3), dtype=np.uint8)
    _resize_aa(_nchw(image), (height, width), False, None, None, out=_nchw(out))
    return torch.from_numpy(out)


def _nchw(image: np.ndarray) -> torch.Tensor:
    """A dense HWC array as a 1 x C x H x W tensor with channels_last strides (no copy)."""
    return torch.from_numpy(image.reshape(1, *image.shape).transpose(0, 3, 1, 2))


_resize_aa = torch._C._nn._upsample_bilinear2d_aa  # what F.interpolate(mode="bilinear", antialias=True) runs


def hflip_hwc(image: torch.Tensor, out: np.ndarray | None = None) -> torch.Tensor:
    """Mirror a dense uint8 HWC image horizontally (into `out` when given). On a loader thread torch runs it
    serially (`intraop.py`): 17 us for a 224 x 224 image, against 36 us for the flips of bands of rows below
    torch's parallel grain joined by `cat` that an unrestricted thread needed to stay serial."""
    flipped = image.flip(1)
    return flipped if out is None else torch.from_numpy(out).copy_(flipped)


def decode_train(raw: RawSample, box: Box, height: int, width: int, size: int, *, flip: bool,
                 out: np.ndarray | None = None) -> torch.Tensor:
    """Decode (downscaled in the DCT when the crop allows), crop `box`, resize to size x size, mirror
    when `flip`: uint8 HWC, written into `out` when given. The mirror is applied to the S x S result,
    not to the (larger) crop: it commutes exactly with the antialiased bilinear resize (its weights are
    symmetric), and a reversed numpy view of the crop would cost a slow element-wise copy before the resize."""
    image = _decode(raw, dct_factor(box.height, box.width, size), height, width)
    if flip:  # resized into this thread's scratch image, mirrored into `out`
        return hflip_hwc(crop_resize_train(image, box, height, width, size, out=_scratch(size)), out=out)
    return crop_resize_train(image, box, height, width, size, out=out)


_local = threading.local()


def _scratch(size: int) -> np.ndarray:
    """A size x size x 3 uint8 image of the calling thread, reused by its next call: a fresh 150 KB array per
    flipped image cost 6-13 us more CPU a flip (two threads resizing and flipping 224 x 224 images)."""
    image = getattr(_local, "scratch", None)
    if image is None or image.shape[0] != size:
        image = _local.scratch = np.empty((size, size, 3), dtype=np.uint8)
    return image


def crop_resize_train(image: np.ndarray, box: Box, height: int, width: int, size: int,
                      out: np.ndarray | None = None) -> torch.Tensor:
    """The `box` (drawn on the full `height` x `width`) of a decoded image, which may be DCT-downscaled,
    resized to size x size: uint8 HWC (into `out` when given)."""
    if image.shape[:2] != (height, width):
        box = box.scaled(image.shape[0] / height, image.shape[1] / width, max_h=image.shape[0],
                         max_w=image.shape[1])
    return resize_hwc(image[box.top:box.top + box.height, box.left:box.left + box.width], size, size, out=out)


def decode_eval(raw: RawSample, *, resize_short: int, size: int, out: np.ndarray | None = None) -> torch.Tensor:
    """Decode, resize the shorter side to `resize_short`, centre crop size x size: uint8 HWC, copied into
    `out` when given (the header, and so the pixel limit, was checked when the sample was prepared)."""
    # full resolution: eval tensors must match torchvision / DALI closely
    return resize_crop_eval(_decode(raw), resize_short=resize_short, size=size, out=out)


def resize_crop_eval(image: np.ndarray, *, resize_short: int, size: int, out: np.ndarray | None = None) -> torch.Tensor:
    """A decoded image with its shorter side resized to `resize_short`, centre-cropped to size x size (a view,
    or a copy in `out`)."""
    new_h, new_w = resize_short_size(image.shape[0], image.shape[1], resize_short)
    top, left = center_crop_offsets(new_h, new_w, size)
    if (new_h, new_w) != image.shape[:2]:
        image = resize_hwc(image, new_h, new_w).numpy()
    crop = image[top:top + size, left:left + size]
    if out is None:
        return torch.from_numpy(crop)
    np.copyto(out, crop)
    return torch.from_numpy(out)

