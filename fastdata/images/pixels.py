"""Image helpers without torch (the converter imports them): sniffing formats, strict decode checks, and
decoded images of any Pillow mode -> 8-bit RGB, by what the mode means (never by the pixel values).

- RGB as is; L, 1, P, CMYK, YCbCr, HSV through Pillow's own conversion;
- transparency (RGBA, LA, PA, P with a transparent index, L and RGB with a PNG tRNS colour key) composited over
  white (a 16-bit image's colour key is not applied);
- 16-bit integer modes (I;16*) and I (Pillow's mode for 16-bit PNG/TIFF data) scaled from 0..65535;
- F (32-bit float) read as 0..1 (the float image convention), clipped;
- LAB through an ICC transform to sRGB.
Shared by the converter (`converters/images/encode.py`) and the loaders' non-JPEG path (`decode.py`).
`orientation_of` reads the EXIF orientation an image's header records (`fastdata index` counts the turned ones).
"""

from __future__ import annotations

import io

import numpy as np
from PIL import ExifTags, Image

WHITE = (255, 255, 255)
ORIENTATION = int(ExifTags.Base.Orientation)  # the EXIF tag (0x0112)
EXIF_ORIENTED = "exif_oriented"  # a split's stat (adopted shards): its images whose orientation is not upright


def _scaled_grey(im: Image.Image, top: float) -> Image.Image:
    arr = np.asarray(im, dtype=np.float64)
    grey = np.clip(np.nan_to_num(arr * (255.0 / top)), 0, 255).round().astype(np.uint8)
    return Image.fromarray(grey, "L").convert("RGB")


def to_rgb(im: Image.Image) -> Image.Image:
    """`im` as an 8-bit RGB image; see the module docstring for the rule of each mode."""
    mode = im.mode
    keyed = mode in ("P", "L", "RGB") and "transparency" in im.info  # a transparent palette index or colour key
    if mode == "RGB" and not keyed:
        return im
    if mode in ("RGBA", "LA", "PA", "RGBa", "La") or keyed:
        rgba = (im.convert("LA") if mode == "La" else im).convert("RGBA")  # Pillow has no La -> RGBA
        background = Image.new("RGB", im.size, WHITE)
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    if mode.startswith("I;16") or mode == "I":
        return _scaled_grey(im, 65535.0)
    if mode == "F":
        return _scaled_grey(im, 1.0)
    if mode == "LAB":
        from PIL import ImageCms

        transform = ImageCms.buildTransform(ImageCms.createProfile("LAB"), ImageCms.createProfile("sRGB"),
                                            "LAB", "RGB")
        return ImageCms.applyTransform(im, transform)
    return im.convert("RGB")


_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "png"), (b"GIF87a", "gif"), (b"GIF89a", "gif"), (b"BM", "bmp"),
               (b"II*\x00", "tiff"), (b"MM\x00*", "tiff"),
               (b"P6\n", "ppm"))  # binary PPM, as Pillow writes it: an image turned upright at load (orientation.py)


def other_format(data: bytes | memoryview) -> str | None:
    """The format of an image that is not a JPEG (PNG, WebP, GIF, BMP, TIFF, PPM), None for anything else.

    Everything else goes to the JPEG decoder, whose error then names a corrupt JPEG."""
    if data[:2] == b"\xff\xd8":  # a JPEG's start of image, which no other signature begins with: asked for
        return None  # every sample the loaders decode, 0.2 against 1.0 us of Python under the GIL
    head = bytes(data[:16])
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return next((name for magic, name in _SIGNATURES if head.startswith(magic)), None)


def open_image(data: bytes | memoryview) -> Image.Image:
    """A lazily decoded Pillow image (header read only); Pillow's own bomb limit is ours to enforce."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        return Image.open(io.BytesIO(bytes(data)))


def decode_problem(data: bytes) -> str | None:
    """Why `data` is not a decodable image (None when it decodes): JPEGs through libjpeg-turbo at reduced
    scale (which still entropy-decodes every block), other formats through Pillow."""
    if not data:
        return "empty image member"
    try:
        if other_format(data) is not None:
            with open_image(data) as im:
                im.load()
        else:
            import simplejpeg

            simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True, min_height=1, min_width=1)
    except Exception as exc:  # noqa: BLE001 - any decode failure is the finding
        return f"{type(exc).__name__}: {exc}"
    return None


def orientation_of(im: Image.Image) -> int:
    """The EXIF orientation an opened image's header records: 2..8 when its stored pixels are mirrored or turned
    (a phone photo taken sideways is 6 or 8), else 1. Read from the header only: JPEG and WebP hold their EXIF
    there, a PNG before its pixel data, a TIFF as a tag of its own."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow's "Corrupt EXIF data": unreadable EXIF is read as upright
            raw = im.info.get("exif")
            if raw:
                exif = Image.Exif()
                exif.load(raw)
                value = exif.get(ORIENTATION)
            else:
                value = getattr(im, "tag_v2", {}).get(ORIENTATION)
    except Exception:  # noqa: BLE001 - unreadable EXIF: nothing says the pixels are turned
        return 1
    return value if isinstance(value, int) and 2 <= value <= 8 else 1
