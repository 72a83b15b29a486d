"""Pre-resizing and re-encoding: every input variant comes out as baseline RGB JPEG of the right size."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import PHOTOS, make_image
from PIL import Image

from converters.images.encode import ImageOptions, prepare_jpeg, target_size


def _decode(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


def _check_baseline(data: bytes) -> Image.Image:
    im = _decode(data)
    assert im.format == "JPEG" and im.mode == "RGB"
    assert not (im.info.get("progressive") or im.info.get("progression"))
    return im


@pytest.mark.parametrize(("w", "h", "short", "expected"), [
    (640, 480, 256, (341, 256)), (480, 640, 256, (256, 341)), (200, 100, 256, (200, 100)),
    (1000, 1000, 256, (256, 256)), (640, 480, 0, (640, 480)), (3, 1000, 2, (2, 667)),
])
def test_target_size_caps_shorter_side(w: int, h: int, short: int, expected: tuple[int, int]) -> None:
    assert target_size(w, h, short) == expected


def test_large_baseline_jpeg_is_resized(tmp_path: Path) -> None:
    src = make_image(tmp_path / "a.jpg", size=(640, 480), quality=95)
    out, meta = prepare_jpeg(src.read_bytes(), ImageOptions(short_side=256))
    im = _check_baseline(out)
    assert im.size == (341, 256) and meta["copied"] is False
    assert (meta["orig_width"], meta["orig_height"]) == (640, 480)


def test_compliant_jpeg_is_copied_byte_for_byte(tmp_path: Path) -> None:
    data = make_image(tmp_path / "a.jpg", size=(300, 200), quality=80).read_bytes()
    out, meta = prepare_jpeg(data, ImageOptions(short_side=256))
    assert out == data and meta["copied"] is True
    out0, meta0 = prepare_jpeg(data, ImageOptions(short_side=0))
    assert out0 == data and meta0["copied"] is True


def test_progressive_jpeg_is_reencoded_as_baseline(tmp_path: Path) -> None:
    data = make_image(tmp_path / "p.jpg", size=(120, 90), progressive=True).read_bytes()
    assert _decode(data).info.get("progressive")
    out, meta = prepare_jpeg(data, ImageOptions())
    assert meta["copied"] is False and _check_baseline(out).size == (120, 90)


def test_real_progressive_and_greyscale_photos(tmp_path: Path) -> None:
    kinds = {"progressive": None, "L": None}
    for p in sorted(PHOTOS.glob("*.jpg")):
        with Image.open(p) as im:
            if im.info.get("progressive") and kinds["progressive"] is None:
                kinds["progressive"] = p
            if im.mode == "L" and kinds["L"] is None:
                kinds["L"] = p
    assert all(kinds.values()), kinds
    for p in kinds.values():
        out, meta = prepare_jpeg(p.read_bytes(), ImageOptions())
        assert meta["copied"] is False
        _check_baseline(out)


@pytest.mark.parametrize(("fmt", "mode", "ext"), [
    ("PNG", "RGBA", ".png"), ("PNG", "P", ".png"), ("PNG", "L", ".png"), ("WEBP", "RGB", ".webp"),
    ("BMP", "RGB", ".bmp"), ("TIFF", "CMYK", ".tif"), ("JPEG", "CMYK", ".jpg"), ("JPEG", "L", ".jpg"),
    ("PNG", "I;16", ".png"),
])
def test_other_formats_and_modes_become_rgb_jpeg(tmp_path: Path, fmt: str, mode: str, ext: str) -> None:
    path = tmp_path / f"x{ext}"
    if mode == "I;16":
        Image.fromarray(np.arange(64 * 48, dtype=np.uint16).reshape(48, 64) * 20).save(path, fmt)
    else:
        make_image(path, size=(64, 48), mode=mode, fmt=fmt)
    out, meta = prepare_jpeg(path.read_bytes(), ImageOptions())
    im = _check_baseline(out)
    assert im.size == (64, 48) and meta["orig_mode"] == mode


def test_alpha_is_composited_on_white(tmp_path: Path) -> None:
    rgba = np.zeros((32, 32, 4), np.uint8)  # fully transparent black
    Image.fromarray(rgba, "RGBA").save(tmp_path / "t.png")
    out, _ = prepare_jpeg((tmp_path / "t.png").read_bytes(), ImageOptions())
    assert np.asarray(_decode(out)).min() >= 250


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    im = Image.new("RGB", (80, 40), (255, 0, 0))
    im.paste((0, 0, 255), (0, 0, 40, 40))  # left half blue in stored orientation
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 CW to view
    path = tmp_path / "o.jpg"
    im.save(path, quality=95, exif=exif.tobytes())
    out, meta = prepare_jpeg(path.read_bytes(), ImageOptions())
    upright = np.asarray(_decode(out))
    assert upright.shape[:2] == (80, 40) and meta["copied"] is False
    assert (meta["orig_width"], meta["orig_height"]) == (40, 80)
    top, bottom = upright[5, 20], upright[75, 20]
    assert top[2] > 200 and top[0] < 60  # stored-left (blue) is on top after a 90-degree CW turn
    assert bottom[0] > 200 and bottom[2] < 60


def test_json_records_source_and_sizes(tmp_path: Path) -> None:
    from converters.images.encode import process_image
    from converters.sample import WorkItem

    src = make_image(tmp_path / "c" / "big.png", size=(600, 300), fmt="PNG")
    s = process_image(WorkItem("train", "c/big.png", str(src), 2, 7), opts=ImageOptions(short_side=100))
    info = json.loads(s.members["json"])
    assert s.key == "00000007" and s.members["cls"] == b"2"
    assert info == {"source": "c/big.png", "label": 2, "orig_width": 600, "orig_height": 300, "width": 200,
                    "height": 100, "orig_format": "PNG", "orig_mode": "RGB", "copied": False}


def test_netpbm_files_are_images_as_gtsrb_ships_its_signs(tmp_path: Path) -> None:
    """GTSRB's `Training/00000/00000_00000.ppm` (binary RGB), greyscale PGM, bitmap PBM, ASCII P3 and a 16-bit PGM
    had been rejected for their extension, every sign of the dataset with them; the CSV beside them still is."""
    from converters.images.discover import discover_images

    sign = Image.new("RGB", (31, 29), (200, 30, 30))
    (tmp_path / "00000").mkdir()
    sign.save(tmp_path / "00000" / "00000_00000.ppm", "PPM")
    sign.convert("L").save(tmp_path / "00000" / "00000_00001.PGM", "PPM")
    sign.convert("1").save(tmp_path / "00000" / "00000_00002.pbm", "PPM")
    (tmp_path / "00000" / "GT-00000.csv").write_text("Filename;Width;Height;ClassId\n00000_00000.ppm;31;29;0\n")
    (tmp_path / "00001").mkdir()
    (tmp_path / "00001" / "a.pnm").write_bytes(b"P3\n2 2\n255\n255 0 0  0 255 0\n0 0 255  255 255 255\n")
    Image.fromarray(np.full((8, 8), 40000, dtype=np.uint16)).save(tmp_path / "00001" / "b.pgm", "PPM")
    found = discover_images(tmp_path)
    assert found.classes == ("00000", "00001")
    assert sorted((it.rel, it.label) for it in found.splits["train"]) == [
        ("00000/00000_00000.ppm", 0), ("00000/00000_00001.PGM", 0), ("00000/00000_00002.pbm", 0),
        ("00001/a.pnm", 1), ("00001/b.pgm", 1)]
    assert [(r.source, r.reason.split(";")[0]) for r in found.rejected] == [
        ("00000/GT-00000.csv", "unsupported extension '.csv'")]
    for item in found.splits["train"]:
        out, meta = prepare_jpeg((tmp_path / item.rel).read_bytes(), ImageOptions())
        assert meta["orig_format"] == "PPM" and _check_baseline(out).mode == "RGB"
    out, _ = prepare_jpeg((tmp_path / "00001" / "b.pgm").read_bytes(), ImageOptions())
    assert abs(int(np.asarray(_decode(out))[0, 0, 0]) - round(40000 / 65535 * 255)) <= 1  # 16 bits scaled, not cut


def test_jfif_gif_and_avif_files_are_images(tmp_path: Path) -> None:
    """`.jfif` and `.jpe` (JPEGs as browsers save them), GIF (the first frame of an animation) and AVIF were rejected
    for their extension; JPEG 2000 still is, saying which extensions are taken."""
    from converters.images.discover import discover_images

    red, green = Image.new("RGB", (64, 48), (200, 30, 30)), Image.new("RGB", (64, 48), (30, 200, 30))
    for name, fmt in (("a.jfif", "JPEG"), ("b.JPE", "JPEG"), ("c.avif", "AVIF"), ("e.jp2", "JPEG2000")):
        red.save(tmp_path / name, fmt)
    red.save(tmp_path / "d.gif", save_all=True, append_images=[green])
    found = discover_images(tmp_path)
    assert sorted(it.rel for it in found.splits["train"]) == ["a.jfif", "b.JPE", "c.avif", "d.gif"]
    assert [(r.source, r.reason.split(";")[0]) for r in found.rejected] == [("e.jp2", "unsupported extension '.jp2'")]
    for item in found.splits["train"]:
        im = _check_baseline(prepare_jpeg((tmp_path / item.rel).read_bytes(), ImageOptions())[0])
        assert im.size == (64, 48) and abs(np.asarray(im)[..., 0].astype(int).mean() - 200) < 4, item.rel


def test_extensions_match_case_insensitively(tmp_path: Path) -> None:
    from converters.images.discover import discover_images

    for name in ("a.JPEG", "b.Jpg", "c.PNG", "d.jpeg", "e.TIFF", "f.WebP", "g.bmp"):
        make_image(tmp_path / "src" / "cls" / name, size=(16, 16),
                   fmt={"PNG": "PNG", "TIFF": "TIFF", "WebP": "WEBP", "bmp": "BMP"}.get(name.split(".")[1], "JPEG"))
    found = discover_images(tmp_path / "src")
    assert len(found.splits["train"]) == 7 and not found.rejected
