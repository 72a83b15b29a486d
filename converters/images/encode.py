"""Per-image work: decode, apply EXIF orientation, cap the shorter side, re-encode as baseline RGB
JPEG, or copy the original bytes when they already satisfy all of that (no generational loss)."""

from __future__ import annotations

import io
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from converters.images.class_order import ORDERS
from converters.images.jpeg_meta import NotAJpeg, strip_metadata
from converters.images.name_labels import compile_label_pattern
from converters.images.split_lists import parse_split_lists
from converters.sample import Rejection, Sample, WorkItem
from fastdata.images.pixels import ORIENTATION, decode_problem, to_rgb
from fastdata.manifest import check_split_name

DEFAULT_MAX_PIXELS = 89_478_485  # Pillow's own decompression-bomb threshold


def bytes_limit(max_pixels: int) -> int:
    """The most bytes an image may have: 8 a pixel of `max_pixels` (16-bit RGBA, uncompressed) and 1 MiB of headers.
    A file or a table's value past it is rejected unread, as no image under `--max-pixels` needs that many."""
    return 8 * max_pixels + (1 << 20)


@dataclass(frozen=True)
class ImageOptions:
    short_side: int = 256
    quality: int = 90
    max_pixels: int = DEFAULT_MAX_PIXELS
    labels: str | None = None
    split: str = "train"
    unlabeled: bool = False
    keep_metadata: bool = False  # copied JPEGs keep EXIF/XMP/IPTC/comments (default: removed, ICC kept)
    image_field: str | None = None  # a table source's image column (tables.py; default: the one there is)
    label_field: str | None = None  # a table source's label column (default: its ClassLabel, or label/labels)
    label_pattern: str | None = None  # classes from file names (name_labels.py)
    multi_label: bool = False  # a labels CSV's row names several classes (labels_csv.py); json's `labels` lists them
    split_lists: tuple[str, ...] = ()  # SPLIT=FILE: the files FILE lists are in SPLIT (split_lists.py)
    classes: str | None = None  # a file naming the class ids 0..K-1, one a line (id_names.py)
    val_fraction: float = 0.0  # held out of --split as val, file by file (split_lists.py)
    uncertain: str | None = None  # CheXpert's and MIMIC-CXR-JPG's -1.0: "ones" present, "zeros" absent
    class_order: str = "name"  # classes that are whole numbers: as text (ImageFolder's) or by value (class_order.py)

    def __post_init__(self) -> None:
        if self.short_side < 0:
            raise ValueError(f"--short-side must be >= 0 (0 keeps the original size), got {self.short_side}")
        if not 1 <= self.quality <= 100:
            raise ValueError(f"--quality must be in 1..100, got {self.quality}")
        if self.max_pixels < 1:
            raise ValueError(f"--max-pixels must be >= 1, got {self.max_pixels}")
        check_split_name(self.split)
        if self.class_order not in ORDERS:
            raise ValueError(f"--class-order must be name or number, got {self.class_order!r}")
        if self.uncertain not in (None, "ones", "zeros"):
            raise ValueError(f"--uncertain must be ones or zeros, got {self.uncertain!r}")
        if self.label_pattern is not None:
            compile_label_pattern(self.label_pattern)
        parse_split_lists(self.split_lists)
        if not (isinstance(self.val_fraction, int | float) and 0 <= self.val_fraction < 1):
            raise ValueError(f"--val-fraction must be in [0, 1), got {self.val_fraction!r}")


class RejectInput(Exception):
    """The input is not acceptable; the message is the recorded reason."""


def target_size(width: int, height: int, short_side: int) -> tuple[int, int]:
    """Size with the shorter side capped at `short_side`, aspect ratio kept (0: no cap)."""
    short = min(width, height)
    if short_side <= 0 or short <= short_side:
        return width, height
    scale = short_side / short
    if width <= height:
        return short_side, max(1, round(height * scale))
    return max(1, round(width * scale)), short_side


def _is_progressive(im: Image.Image) -> bool:
    return bool(im.info.get("progressive") or im.info.get("progression"))


def prepare_jpeg(data: bytes, opts: ImageOptions) -> tuple[bytes, dict[str, object]]:
    """Return (baseline RGB JPEG bytes, metadata). Raises RejectInput or a decoder error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        im = Image.open(io.BytesIO(data))
    with im:
        width, height = im.size
        if width * height > opts.max_pixels:
            raise RejectInput(f"decompression bomb: {width}x{height} = {width * height} pixels is over the "
                              f"limit of {opts.max_pixels} (--max-pixels)")
        orientation = im.getexif().get(ORIENTATION, 1)
        swapped = orientation in (5, 6, 7, 8)
        upright = (height, width) if swapped else (width, height)
        target = target_size(*upright, opts.short_side)
        if opts.short_side and max(upright) * opts.short_side ** 2 > DEFAULT_MAX_PIXELS * min(upright):
            scaled = round(max(upright) * opts.short_side / min(upright))
            raise RejectInput(f"extreme aspect ratio: {upright[0]}x{upright[1]} with its shorter side at "
                              f"{opts.short_side} (as evaluation resizes it) would be {scaled}x{opts.short_side} = "
                              f"{scaled * opts.short_side} pixels, more than a loader decodes ({DEFAULT_MAX_PIXELS})")
        meta = {"orig_width": upright[0], "orig_height": upright[1], "width": target[0], "height": target[1],
                "orig_format": im.format, "orig_mode": im.mode}
        if im.format == "JPEG":  # decoded strictly: a warning of libjpeg (data cut out, bad header) rejects it
            problem = decode_problem(data)
            if problem is not None:
                raise RejectInput(f"corrupt or truncated JPEG: {problem}")
        if im.format == "JPEG" and im.mode == "RGB" and not _is_progressive(im) and orientation in (0, 1) \
                and target == upright:
            if opts.keep_metadata:
                return data, {**meta, "copied": True}
            clean, removed = strip_metadata(data)
            return clean, {**meta, "copied": True, "metadata_removed": removed}
        if im.format == "JPEG":
            im.draft("RGB", (target[1], target[0]) if swapped else target)  # DCT-domain downscale first
        im.load()
        out = to_rgb(ImageOps.exif_transpose(im))
        if out.size != target:
            out = out.resize(target, Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        icc = im.info.get("icc_profile") if im.mode in ("RGB", "RGBA", "RGBX") else None  # an RGB profile fits
        out.save(buf, "JPEG", quality=opts.quality, optimize=False, progressive=False,
                 **({"icc_profile": icc} if icc else {}))
        return buf.getvalue(), {**meta, "copied": False}


def process_image(item: WorkItem, /, *, opts: ImageOptions) -> Sample | Rejection:
    """Convert one source image into a sample with members jpg, cls and json."""
    if Image.MAX_IMAGE_PIXELS is not None and Image.MAX_IMAGE_PIXELS * 2 < opts.max_pixels:
        Image.MAX_IMAGE_PIXELS = opts.max_pixels  # our own limit is checked above; do not let Pillow's undercut it
    limit = bytes_limit(opts.max_pixels)
    try:  # an image of a table lies in the spill file (tables.py), measured there
        size = None if item.payload is not None else os.stat(item.source).st_size
        if size is not None and size > limit:  # a disk image or a video named .jpg was read whole: a worker's memory
            return Rejection(item.split, item.rel, f"too large for an image: a file of {size:,} bytes, more than an "
                                                   f"image of --max-pixels {opts.max_pixels:,} may hold ({limit:,})")
        data = item.payload.read_bytes() if item.payload is not None else Path(item.source).read_bytes()
    except OSError as exc:
        return Rejection(item.split, item.rel, f"unreadable: {exc.strerror or exc}")
    if not data:
        return Rejection(item.split, item.rel, "empty file (0 bytes)")
    try:
        jpeg, meta = prepare_jpeg(data, opts)
    except RejectInput as exc:
        return Rejection(item.split, item.rel, str(exc))
    except UnidentifiedImageError:
        return Rejection(item.split, item.rel, "not an image (no known image format signature)")
    except Image.DecompressionBombError as exc:
        return Rejection(item.split, item.rel, f"decompression bomb: {exc}")
    except NotAJpeg as exc:
        return Rejection(item.split, item.rel, f"corrupt JPEG structure: {exc}")
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        return Rejection(item.split, item.rel, f"corrupt or truncated image: {exc}")
    multi = isinstance(item.label, tuple | list)  # --multi-label: the classes are the json member's `labels`
    info = {"source": item.rel, **({"labels": list(item.label)} if multi else {"label": item.label}), **meta}
    info_bytes = json.dumps(info, sort_keys=True).encode()
    key = item.key
    members = {"jpg": jpeg, "json": info_bytes}
    row = {"key": key, "image": {"bytes": jpeg, "path": f"{key}.jpg"}, "json": info_bytes.decode()}
    if multi:
        row["labels"] = list(item.label)
    elif item.label is not None:  # unlabeled datasets have no cls member and no label column
        members["cls"] = str(item.label).encode()
        row["label"] = item.label
    stats = {"copied": int(meta["copied"]), "metadata_removed": int(bool(meta.get("metadata_removed")))}
    return Sample(key=key, label=tuple(item.label) if multi else item.label, members=members, row=row, stats=stats)
