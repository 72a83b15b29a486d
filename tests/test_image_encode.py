"""The per-image conversion step (converters/images/encode.py) in detail: option refusals, the size cap at its
edges, every EXIF orientation, the DCT-domain downscale asked for in the stored orientation, the quality and the
colour profile of re-encoded images, the pixel limits (ours and Pillow's), the recorded rejections, the stats each
sample adds to the manifest and the sample's own bytes."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest_adopt import encoded
from helpers import make_image
from PIL import Image, ImageCms, JpegImagePlugin

from converters.images import encode
from converters.images.encode import ImageOptions, RejectInput, prepare_jpeg, process_image, target_size
from converters.images.jpeg_meta import NotAJpeg
from converters.sample import Rejection, WorkItem, add_counts


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"short_side": -1}, "--short-side must be >= 0 (0 keeps the original size), got -1"),
    ({"quality": 0}, "--quality must be in 1..100, got 0"),
    ({"quality": 101}, "--quality must be in 1..100, got 101"),
    ({"max_pixels": 0}, "--max-pixels must be >= 1, got 0"),
])
def test_option_refusals(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        ImageOptions(**kwargs)
    assert str(caught.value) == message


def test_option_limits_are_accepted() -> None:
    for kwargs in ({"quality": 1}, {"quality": 100}, {"max_pixels": 1}, {"short_side": 0}):
        ImageOptions(**kwargs)


@pytest.mark.parametrize(("w", "h", "short", "expected"), [
    (50, 20, 1, (2, 1)), (20, 50, 1, (1, 2)),  # a cap of one pixel still applies
    (30, 25, 1, (1, 1)), (25, 30, 1, (1, 1)),  # the longer side rounds down to one pixel, not two
    (256, 300, 256, (256, 300)), (300, 256, 256, (300, 256)),  # the shorter side already at the cap
])
def test_target_size_at_its_edges(w: int, h: int, short: int, expected: tuple[int, int]) -> None:
    assert target_size(w, h, short) == expected


def _oriented(orientation: int, size: tuple[int, int] = (40, 20)) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return encoded("JPEG", size=size, quality=95, exif=exif.tobytes())


@pytest.mark.parametrize("orientation", range(0, 9))
def test_every_exif_orientation(orientation: int) -> None:
    out, meta = prepare_jpeg(_oriented(orientation), ImageOptions())
    upright = (20, 40) if orientation in (5, 6, 7, 8) else (40, 20)
    assert (meta["orig_width"], meta["orig_height"]) == upright == Image.open(io.BytesIO(out)).size
    assert meta["copied"] is (orientation in (0, 1))  # 0 (invalid) and 1 need no turn: the bytes are kept


@pytest.mark.parametrize(("orientation", "asked"), [(1, (100, 25)), (6, (100, 25)), (8, (100, 25)), (3, (100, 25))])
def test_the_dct_downscale_is_asked_for_in_the_stored_orientation(orientation: int, asked: tuple[int, int],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = JpegImagePlugin.JpegImageFile.draft

    def spy(self, mode, size):
        calls.append((mode, size))
        return original(self, mode, size)

    monkeypatch.setattr(JpegImagePlugin.JpegImageFile, "draft", spy)
    out, meta = prepare_jpeg(_oriented(orientation, (1600, 400)), ImageOptions(short_side=25))
    assert calls == [("RGB", asked)]
    swapped = orientation in (5, 6, 7, 8)
    assert Image.open(io.BytesIO(out)).size == ((25, 100) if swapped else (100, 25)) == (meta["width"], meta["height"])


@pytest.mark.parametrize("quality", [30, 90])
def test_reencoded_images_use_the_quality_asked_for(quality: int) -> None:
    out, meta = prepare_jpeg(encoded("JPEG", size=(200, 100), quality=97), ImageOptions(short_side=50, quality=quality))
    reference = Image.open(io.BytesIO(encoded("JPEG", size=(8, 8), quality=quality)))
    written = Image.open(io.BytesIO(out))
    assert meta["copied"] is False and written.quantization == reference.quantization
    assert not written.info.get("progressive")


def test_a_resized_image_is_resampled_with_lanczos() -> None:
    grey = Image.fromarray(np.random.default_rng(0).integers(0, 256, (200, 400), dtype=np.uint8), "L")
    buf = io.BytesIO()
    grey.save(buf, "PNG")  # lossless, and grey: the JPEG's chroma subsampling loses nothing
    out, _ = prepare_jpeg(buf.getvalue(), ImageOptions(short_side=50, quality=100))
    got = np.asarray(Image.open(io.BytesIO(out)).convert("L")).astype(int)
    lanczos = np.asarray(grey.resize((100, 50), Image.Resampling.LANCZOS)).astype(int)
    assert np.abs(got - lanczos).max() <= 2  # JPEG at quality 100; Pillow's default (bicubic) is 9 grey levels off


def _srgb() -> bytes:
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


@pytest.mark.parametrize(("mode", "fmt", "kept"), [("RGB", "JPEG", True), ("RGBA", "PNG", True), ("L", "PNG", False)])
def test_a_reencoded_image_keeps_an_rgb_colour_profile(mode: str, fmt: str, kept: bool) -> None:
    icc = _srgb()
    if mode == "L":  # a grey profile describes one channel: it does not fit the RGB output
        icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()
    data = encoded(fmt, size=(200, 100), mode=mode, icc_profile=icc)
    out, meta = prepare_jpeg(data, ImageOptions(short_side=50))
    assert meta["copied"] is False
    assert Image.open(io.BytesIO(out)).info.get("icc_profile") == (icc if kept else None)


def test_a_reencoded_image_without_a_profile_gets_none() -> None:
    out, _ = prepare_jpeg(encoded("JPEG", size=(200, 100)), ImageOptions(short_side=50))
    assert "icc_profile" not in Image.open(io.BytesIO(out)).info


def test_keep_metadata_copies_the_bytes_as_they_are() -> None:
    data = _oriented(1)
    out, meta = prepare_jpeg(data, ImageOptions(keep_metadata=True))
    assert out == data and meta["copied"] is True and "metadata_removed" not in meta
    out, meta = prepare_jpeg(data, ImageOptions())
    assert out != data and meta["copied"] is True and meta["metadata_removed"] == ["EXIF"]


def test_the_pixel_limit_is_inclusive_and_its_refusal_exact() -> None:
    data = encoded("JPEG", size=(40, 25))
    assert prepare_jpeg(data, ImageOptions(max_pixels=1000))[0] == data
    with pytest.raises(RejectInput) as caught:
        prepare_jpeg(data, ImageOptions(max_pixels=999))
    assert str(caught.value) == "decompression bomb: 40x25 = 1000 pixels is over the limit of 999 (--max-pixels)"


def test_an_extreme_aspect_ratio_is_refused_with_the_size_evaluation_would_reach() -> None:
    with pytest.raises(RejectInput) as caught:
        prepare_jpeg(encoded("PNG", size=(1400, 1), mode="L"), ImageOptions())
    assert str(caught.value) == ("extreme aspect ratio: 1400x1 with its shorter side at 256 (as evaluation resizes it) "
                                 "would be 358400x256 = 91750400 pixels, more than a loader decodes (89478485)")
    with pytest.raises(RejectInput) as caught:  # the upright size, after the EXIF turn
        prepare_jpeg(_oriented(6, (2800, 2)), ImageOptions(short_side=256))
    assert str(caught.value) == ("extreme aspect ratio: 2x2800 with its shorter side at 256 (as evaluation resizes "
                                 "it) would be 358400x256 = 91750400 pixels, more than a loader decodes (89478485)")
    # a long thin image well inside the limit is kept as it is (no upscaling at conversion)
    thin = encoded("JPEG", size=(20, 1))
    assert prepare_jpeg(thin, ImageOptions()) == (thin, {
        "orig_width": 20, "orig_height": 1, "width": 20, "height": 1, "orig_format": "JPEG", "orig_mode": "RGB",
        "copied": True, "metadata_removed": []})


def test_pillows_own_limit_is_raised_to_ours_only_when_it_would_undercut_it(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    path = make_image(tmp_path / "a.jpg", size=(40, 40), quality=90)  # 1600 pixels
    item = WorkItem("train", "a.jpg", str(path), 0, 3)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Pillow's DecompressionBombWarning (over 1000 pixels) is silenced inside
        assert isinstance(process_image(item, opts=ImageOptions(max_pixels=2000)), encode.Sample)
    assert Image.MAX_IMAGE_PIXELS == 1000  # 2 x 1000 does not undercut 2000
    process_image(item, opts=ImageOptions(max_pixels=2001))
    assert Image.MAX_IMAGE_PIXELS == 2001


def test_pillows_bomb_refusal_is_a_recorded_rejection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = make_image(tmp_path / "a.jpg", size=(50, 50), quality=90)  # 2500 pixels, over Pillow's 2 x 1000
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    got = process_image(WorkItem("val", "c/a.jpg", str(path), 0, 3), opts=ImageOptions(max_pixels=1500))
    assert got == Rejection("val", "c/a.jpg", "decompression bomb: Image size (2500 pixels) exceeds limit of 2000 "
                                              "pixels, could be decompression bomb DOS attack.")


def test_a_jpeg_structure_metadata_removal_refuses_is_a_recorded_rejection(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    def refuse(data: bytes):
        raise NotAJpeg("expected a marker at byte 9")

    monkeypatch.setattr(encode, "strip_metadata", refuse)
    path = make_image(tmp_path / "a.jpg", size=(40, 30), quality=90)
    got = process_image(WorkItem("val", "c/a.jpg", str(path), 0, 3), opts=ImageOptions())
    assert got == Rejection("val", "c/a.jpg", "corrupt JPEG structure: expected a marker at byte 9")


def test_a_samples_bytes_and_stats(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[0x013B] = "Jane"
    cases = {"clean.jpg": ({"quality": 90}, {"copied": 1, "metadata_removed": 0}),
             "exif.jpg": ({"quality": 90, "exif": exif.tobytes()}, {"copied": 1, "metadata_removed": 1}),
             "big.jpg": ({"quality": 90, "size": (600, 300)}, {"copied": 0, "metadata_removed": 0})}
    total: dict = {}
    for name, (save, stats) in cases.items():
        path = make_image(tmp_path / name, **{"size": (60, 40), **save})
        sample = process_image(WorkItem("train", name, str(path), 1, 5), opts=ImageOptions())
        assert sample.stats == stats
        raw = sample.members["json"]
        assert list(json.loads(raw)) == sorted(json.loads(raw))  # keys written sorted: the same bytes every run
        assert sample.row["json"] == raw.decode() and sample.row["label"] == 1 and sample.members["cls"] == b"1"
        add_counts(total, sample.stats)
    assert total == {"copied": 2, "metadata_removed": 1}


def test_add_counts_sums_nested_counts_in_place() -> None:
    total = {"copied": 1, "by": {"a": 2}}
    assert add_counts(total, {"copied": 2, "new": 5, "by": {"a": 3, "b": 1}, "deep": {"x": {"y": 4}}}) is total
    assert total == {"copied": 3, "new": 5, "by": {"a": 5, "b": 1}, "deep": {"x": {"y": 4}}}
