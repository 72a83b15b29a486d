"""Adopted images whose EXIF orientation says they are not upright (phone photos taken sideways): `fastdata index`
counts them per split and warns, and both backends turn them upright (fastdata/images/orientation.py), as
`fastdata convert` does. Before, Pillow turned TIFFs by itself on the kornia backend while DALI read them as
stored, and every other format came out as stored on both."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_adopt import by_label, raw_tar
from PIL import Image

import fastdata
from converters.adopt import AdoptOptions, adopt
from fastdata.cli import main as cli
from fastdata.errors import ShardError
from fastdata.images import orientation
from fastdata.images.pixels import ORIENTATION, orientation_of

pytest.importorskip("kornia")

RED, BLUE = (220, 20, 20), (20, 20, 220)


def halves(fmt: str, orientation: int | None, *, size: tuple[int, int] = (64, 48)) -> bytes:
    """An image stored red on its left half and blue on its right, with this EXIF orientation (None: no EXIF)."""
    w, h = size
    pixels = np.empty((h, w, 3), np.uint8)
    pixels[:, : w // 2], pixels[:, w // 2:] = RED, BLUE
    save: dict[str, object] = {}
    if orientation is not None:
        exif = Image.Exif()
        exif[ORIENTATION] = orientation
        save["exif"] = exif.tobytes()
    buf = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buf, fmt, quality=95, **save) if fmt == "JPEG" else \
        Image.fromarray(pixels, "RGB").save(buf, fmt, **save)
    return buf.getvalue()


MEMBERS = {  # label -> (member name, bytes): turned ones in every format that records an orientation, one upright
    0: ("a.jpg", halves("JPEG", 6)), 1: ("b.jpg", halves("JPEG", None)), 2: ("c.png", halves("PNG", 8)),
    3: ("d.webp", halves("WEBP", 3)), 4: ("e.tiff", halves("TIFF", 6)), 5: ("f.jpg", halves("JPEG", 1))}
TURNED = 4


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    members = []
    for label, (name, data) in MEMBERS.items():
        members += [(name, data), (f"{name.split('.')[0]}.cls", str(label).encode())]
    raw_tar(tmp_path / "s" / "train-000000.tar", members)
    return tmp_path / "s"


@pytest.mark.parametrize("label", sorted(MEMBERS))
def test_the_orientation_a_header_records(label: int) -> None:
    data = MEMBERS[label][1]
    with Image.open(io.BytesIO(data[:1 << 16])) as im:
        assert orientation_of(im) == {0: 6, 1: 1, 2: 8, 3: 3, 4: 6, 5: 1}[label]


@pytest.mark.parametrize("value", [0, 9, 65535, "6", 6.0])
def test_an_orientation_out_of_range_or_of_another_type_counts_as_upright(value: object) -> None:
    class Header:
        info = {"exif": b"Exif\x00\x00"}
        tag_v2 = {ORIENTATION: value}

    Header.info = {}
    assert orientation_of(Header()) == 1  # type: ignore[arg-type]


def test_unreadable_exif_counts_as_upright() -> None:
    class Header:
        info = {"exif": b"Exif\x00\x00MM\x00\x2a\xff\xff\xff\xff"}  # an IFD offset past the end

    assert orientation_of(Header()) == 1  # type: ignore[arg-type]


def test_index_counts_the_turned_images_and_warns(shards: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="converters.adopt"):
        result = adopt(shards, options=AdoptOptions(jobs=1))
    assert not result.rejected
    stats = json.loads((shards / "manifest.json").read_text())["splits"]["train"]["stats"]
    assert stats["exif_oriented"] == TURNED
    said = [r.getMessage() for r in caplog.records if r.name == "converters.adopt"]
    assert len(said) == 1 and said[0].startswith(f"{TURNED} image(s) carry an EXIF orientation"), said


def test_upright_shards_record_nothing_and_stay_quiet(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    raw_tar(tmp_path / "s" / "x-000000.tar", [("a.jpg", MEMBERS[1][1]), ("a.cls", b"0"), ("b.jpg", MEMBERS[5][1]),
                                              ("b.cls", b"1")])
    with caplog.at_level(logging.WARNING):
        adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
        fastdata.loader(tmp_path / "s", batch_size=2, image_size=32, backend="kornia", device="cpu").close()
    assert "exif_oriented" not in json.loads((tmp_path / "s" / "manifest.json").read_text())["splits"]["train"]["stats"]
    assert not [r for r in caplog.records if "orientation" in r.getMessage()]


UPRIGHT = {0: "top", 1: "left", 2: "bottom", 3: "right", 4: "top", 5: "left"}  # where the red half ends up


def red_side(image: torch.Tensor) -> str:
    """Which side of a [3, H, W] uint8 image the red half is on (the other half is blue)."""
    edges = {"left": image[:, :, :10], "right": image[:, :, -10:], "top": image[:, :10, :],
             "bottom": image[:, -10:, :]}
    red = [side for side, band in edges.items() if band[0].float().mean() > 180 and band[2].float().mean() < 60]
    assert len(red) == 1, {side: band.float().mean((1, 2)).tolist() for side, band in edges.items()}
    return red[0]


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_both_backends_turn_the_images_upright(shards: Path, backend: str, train: bool,
                                               caplog: pytest.LogCaptureFixture) -> None:
    if backend == "dali":
        pytest.importorskip("nvidia.dali")
    adopt(shards, options=AdoptOptions(jobs=1))
    with caplog.at_level(logging.WARNING, logger="fastdata.images.orientation"):
        # train: crops of at least 90% of the image, no flip, so the red half stays on its side
        images = by_label(shards, backend, train=train, seed=1, scale=(0.9, 1.0), ratio=(1.0, 1.0), hflip=False,
                          drop_last=False)
    assert sorted(images) == sorted(MEMBERS)
    assert {label: red_side(image) for label, image in images.items()} == UPRIGHT
    said = [r.getMessage() for r in caplog.records if r.name == "fastdata.images.orientation"]
    assert len(said) == 1 and said[0].startswith(f"{TURNED} image(s) of split 'train' of "), said


def test_the_backends_agree_with_each_other_and_with_the_converter(shards: Path, tmp_path: Path) -> None:
    pytest.importorskip("nvidia.dali")
    adopt(shards, options=AdoptOptions(jobs=1))
    kornia, dali = by_label(shards, "kornia", train=False), by_label(shards, "dali", train=False)
    src = tmp_path / "raw" / "train"
    for label, (name, data) in MEMBERS.items():
        (src / f"c{label}").mkdir(parents=True)
        (src / f"c{label}" / name).write_bytes(data)
    assert cli(["convert", str(tmp_path / "raw"), str(tmp_path / "conv"), "--short-side", "0", "--quality", "100",
                "-j", "1", "--no-progress"]) == 0
    converted = by_label(tmp_path / "conv", "kornia", train=False)
    for label in MEMBERS:
        assert (kornia[label].int() - dali[label].int()).abs().max() <= 3, label
        assert (kornia[label].int() - converted[label].int()).abs().float().mean() < 3, label


def test_jpegs_are_looked_at_only_where_the_manifest_counts_turned_images(shards: Path) -> None:
    """A manifest without the count (written before it existed): the JPEGs' headers are not read, so a turned JPEG
    is read as stored; the formats Pillow decodes are turned anyway."""
    adopt(shards, options=AdoptOptions(jobs=1))
    path = shards / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["splits"]["train"]["stats"]["exif_oriented"]
    path.write_text(json.dumps(manifest))
    images = by_label(shards, "kornia", train=False)
    assert {label: red_side(image) for label, image in images.items()} == {**UPRIGHT, 0: "left"}


def test_an_upright_sample_is_looked_at_once(shards: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adopt(shards, options=AdoptOptions(jobs=1))
    looked: list[str] = []
    real = orientation.upright_ppm

    def counted(raw, **kw):
        looked.append(raw.key)
        return real(raw, **kw)

    monkeypatch.setattr(orientation, "upright_ppm", counted)
    loader = fastdata.loader(shards, batch_size=3, image_size=32, backend="kornia", device="cpu", train=False)
    for epoch in range(3):
        loader.set_epoch(epoch)
        assert sum(len(y) for _, y in loader) == len(MEMBERS)
    # upright (b, f): looked at once; turned (a, c, d, e): turned each time they are read (every epoch, and the
    # one the loader produces ahead)
    assert {key: looked.count(key) for key in "bf"} == {"b": 1, "f": 1}
    assert all(looked.count(key) >= 3 for key in "acde"), looked


def test_a_turned_png_that_cannot_be_decoded_is_a_bad_sample_named(tmp_path: Path) -> None:
    data = MEMBERS[2][1]  # c.png, orientation 8
    raw_tar(tmp_path / "s" / "x-000000.tar", [("a.png", data), ("a.cls", b"0"), ("cut.png", data[:-30]),
                                              ("cut.cls", b"1")])
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    with pytest.raises(ShardError, match=r"^undecodable image in .*x-000000\.tar, key cut: (OSError|SyntaxError|"
                                         r"ValueError): "):
        by_label(tmp_path / "s", "kornia", train=False)


def test_a_turned_jpeg_whose_data_is_cut_is_a_bad_sample_named(tmp_path: Path) -> None:
    data = MEMBERS[0][1]
    raw_tar(tmp_path / "s" / "x-000000.tar", [("a.jpg", data), ("a.cls", b"0"), ("cut.jpg", data[:-60]),
                                              ("cut.cls", b"1"), ("b.jpg", MEMBERS[1][1]), ("b.cls", b"1")])
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    with pytest.raises(ShardError, match=r"corrupt JPEG in .*x-000000\.tar, key cut: "):
        by_label(tmp_path / "s", "kornia", train=False)
    loader = fastdata.loader(tmp_path / "s", batch_size=4, image_size=32, backend="kornia", device="cpu",
                             train=False, on_error="skip")
    labels = torch.cat([y for _, y in loader])
    assert labels[labels != -100].tolist() == [0, 1]


@pytest.mark.parametrize("forged", [True, "4", -1, 0, 2.5])
def test_a_forged_count_is_not_warned_of(shards: Path, forged: object, caplog: pytest.LogCaptureFixture) -> None:
    adopt(shards, options=AdoptOptions(jobs=1))
    path = shards / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["splits"]["train"]["stats"]["exif_oriented"] = forged
    path.write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING, logger="fastdata.images.orientation"):
        fastdata.loader(shards, batch_size=2, image_size=32, backend="kornia", device="cpu").close()
    assert not [r for r in caplog.records if r.name == "fastdata.images.orientation"]
