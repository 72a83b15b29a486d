"""Nothing wrong, silently, and nothing private by default: JPEGs are decoded strictly at conversion and by
`verify --decode` (scan data cut out, a header larger than its data), metadata is removed from JPEGs copied
byte for byte (EXIF GPS, XMP, comments) with the colour profile kept and the pixels unchanged, and images
whose resized size would exceed the pixel limit (extreme aspect ratios) are rejected with a reason."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from helpers import convert_images, cut_scan
from PIL import Image

from fastdata.cli import main as cli


def smooth(size: tuple[int, int], seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    w, h = size
    base = rng.integers(0, 256, size=(max(h // 8, 1), max(w // 8, 1), 3), dtype=np.uint8)
    return Image.fromarray(base, "RGB").resize((w, h), Image.Resampling.BILINEAR)


def jpeg(im: Image.Image, **save) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=92, **save)
    return buf.getvalue()


def members(ds: Path) -> dict[str, bytes]:
    out = {}
    for tar in sorted(ds.glob("*.tar")):
        with tarfile.open(tar) as t:
            out.update({m.name: t.extractfile(m).read() for m in t})
    return out


def with_gps_and_comment(im: Image.Image, icc: bytes) -> bytes:
    exif = Image.Exif()
    exif[0x013B] = "Jane Photographer"  # Artist
    exif[0xA431] = "SERIAL-12345"  # BodySerialNumber
    exif.get_ifd(0x8825)[2] = (48.0, 51.0, 24.0)  # GPSLatitude
    return jpeg(im, exif=exif, icc_profile=icc, comment=b"shot at home")


def test_copied_jpegs_lose_exif_and_comments_keep_icc_and_pixels(tmp_path: Path):
    from PIL import ImageCms

    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    data = with_gps_and_comment(smooth((64, 48)), icc)
    assert b"SERIAL-12345" in data and b"shot at home" in data
    (tmp_path / "src" / "a").mkdir(parents=True)
    (tmp_path / "src" / "a" / "x.jpg").write_bytes(data)
    convert_images(tmp_path / "src", tmp_path / "out")
    (stored,) = [v for k, v in members(tmp_path / "out").items() if k.endswith(".jpg")]
    assert b"SERIAL-12345" not in stored and b"Jane" not in stored and b"shot at home" not in stored
    assert b"ICC_PROFILE" in stored
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(stored))), np.asarray(Image.open(io.BytesIO(data))))
    info = json.loads([v for k, v in members(tmp_path / "out").items() if k.endswith(".json")][0])
    assert info["copied"] and sorted(info["metadata_removed"]) == ["EXIF", "comment"]
    convert_images(tmp_path / "src", tmp_path / "kept", keep_metadata=True)
    (kept,) = [v for k, v in members(tmp_path / "kept").items() if k.endswith(".jpg")]
    assert kept == data



def _bigger_header(data: bytes) -> bytes:
    """The frame header claims 9000x9000 pixels over the real scan data."""
    sof = data.index(b"\xff\xc0")
    out = bytearray(data)
    out[sof + 5:sof + 9] = (9000).to_bytes(2, "big") + (9000).to_bytes(2, "big")
    return bytes(out)


@pytest.mark.parametrize("size", [(64, 48), (400, 300)], ids=["copy-path", "reencode-path"])
def test_corrupt_jpegs_with_an_intact_end_are_rejected(tmp_path: Path, size):
    good = jpeg(smooth(size, seed=2))
    src = tmp_path / "src" / "a"
    src.mkdir(parents=True)
    (src / "good.jpg").write_bytes(good)
    (src / "cut.jpg").write_bytes(cut_scan(good))
    (src / "header.jpg").write_bytes(_bigger_header(good))
    (src / "cut90.jpg").write_bytes(good[:len(good) * 9 // 10])  # scan data cut at 90%, no end marker
    result = convert_images(tmp_path / "src", tmp_path / "out", short_side=256)
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    assert set(reasons) == {"a/cut.jpg", "a/header.jpg", "a/cut90.jpg"}
    assert all("JPEG" in r for r in reasons.values())
    assert result.manifest.num_samples == 1


def test_verify_decode_finds_a_cut_scan_in_a_shard(tmp_path: Path, capsys):
    src = tmp_path / "src" / "a"
    src.mkdir(parents=True)
    good = jpeg(smooth((64, 48), seed=3))
    (src / "x.jpg").write_bytes(good)
    convert_images(tmp_path / "src", tmp_path / "out")
    tar = next((tmp_path / "out").glob("*.tar"))
    raw = tar.read_bytes()
    start = raw.index(good[:64])
    damaged = cut_scan(good)
    tar.write_bytes(raw[:start] + damaged + raw[start + len(good):])
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    import hashlib

    shard = manifest["splits"]["train"]["shards"][0]
    shard["sha256"] = hashlib.sha256(tar.read_bytes()).hexdigest()  # only the decode can notice
    (tmp_path / "out" / "manifest.json").write_text(json.dumps(manifest))
    assert cli(["verify", str(tmp_path / "out")]) == 0
    assert cli(["verify", str(tmp_path / "out"), "--decode"]) == 1
    assert "does not decode" in capsys.readouterr().out


def test_an_extreme_aspect_ratio_is_rejected_before_it_is_resized(tmp_path: Path):
    src = tmp_path / "src" / "a"
    src.mkdir(parents=True)
    Image.fromarray(np.zeros((1, 20000, 3), np.uint8)).save(src / "strip.png")
    smooth((64, 48)).save(src / "ok.png")
    result = convert_images(tmp_path / "src", tmp_path / "out", max_pixels=10_000_000)
    (rejected,) = result.rejected
    assert rejected["source"] == "a/strip.png" and "extreme aspect ratio" in rejected["reason"]
