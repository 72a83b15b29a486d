"""USPS and SEMEION as torchvision downloads them (`usps.bz2`, `usps.t.bz2`, `semeion.data`) convert as they lie
(converters/images/digit_texts.py); before, `fastdata convert` could not tell what they held. The files are written
line by line as the originals are (LIBSVM lines in bzip2; UCI's text of pixels and digit flags) from the real photos
made 16x16, and read back by torchvision's `USPS` and `SEMEION` as a second opinion."""

from __future__ import annotations

import bz2
from pathlib import Path

import numpy as np
import pytest
from helpers import convert_images, converted_pixels, small_photos

from converters.images import KIND as IMAGES
from converters.images import digit_texts
from converters.table_files import TableError


def usps_line(label: int, image: np.ndarray) -> bytes:
    values = image.reshape(-1).astype(np.float64) / 255 * 2 - 1  # -1 ... 1, as USPS's
    return (f"{label} " + " ".join(f"{i}:{v:.6f}" for i, v in enumerate(values, start=1)) + " \n").encode()


def semeion_line(digit: int, image: np.ndarray) -> bytes:
    pixels = (image.reshape(-1) > 127).astype(int)
    flags = [1 if d == digit else 0 for d in range(10)]
    return (" ".join(f"{p}.0000" for p in pixels) + " " + " ".join(map(str, flags)) + " \n").encode()


def write_usps(root: Path, images: np.ndarray, labels: list[int], test: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    n = len(images) - test
    for name, part in (("usps.bz2", slice(0, n)), ("usps.t.bz2", slice(n, None))):
        lines = b"".join(usps_line(y, im) for y, im in zip(labels[part], images[part], strict=True))
        (root / name).write_bytes(bz2.compress(lines))
    return root


def test_usps_converts_with_the_pixels_and_targets_torchvision_reads(tmp_path: Path):
    torchvision = pytest.importorskip("torchvision")
    images = small_photos(9, 16, "L")
    labels = [6, 10, 1, 2, 3, 4, 5, 7, 9]  # 1 ... 10, as USPS's
    src = write_usps(tmp_path / "usps", images, labels, test=3)
    assert IMAGES.detect(src)
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 6, "test": 3} and not m.rejected
    assert m.classes == tuple(str(i) for i in range(10))
    got = {**converted_pixels(tmp_path / "out", "train"), **converted_pixels(tmp_path / "out", "test")}
    for train, name, first in ((True, "usps.bz2", 0), (False, "usps.t.bz2", 6)):
        theirs = torchvision.datasets.USPS(str(src), train=train)
        for i in range(len(theirs)):
            image, target = theirs[i]
            label, pixels = got[f"{name}#{i + 1}"]
            assert label == target == labels[first + i] - 1
            assert np.abs(pixels.mean(axis=2) - np.asarray(image, np.float32)).mean() < 6
    ours = [image for _, image, _ in digit_texts.rows(src / "usps.bz2")]
    np.testing.assert_array_equal(np.stack(ours), torchvision.datasets.USPS(str(src), train=True).data)  # exact


def test_semeion_converts_with_the_pixels_and_targets_torchvision_reads(tmp_path: Path, monkeypatch):
    torchvision = pytest.importorskip("torchvision")
    images = small_photos(6, 16, "L")
    digits = [3, 0, 9, 3, 1, 7]
    src = tmp_path / "semeion"
    src.mkdir()
    (src / "semeion.data").write_bytes(b"".join(semeion_line(d, im) for d, im in zip(digits, images, strict=True)))
    m = convert_images(src, tmp_path / "out").manifest
    assert m.splits["train"].samples == 6 and not m.rejected
    monkeypatch.setattr(torchvision.datasets.SEMEION, "_check_integrity", lambda self: True)  # not UCI's file
    theirs = torchvision.datasets.SEMEION(str(src), download=False)
    ours = [image for _, image, _ in digit_texts.rows(src / "semeion.data")]
    np.testing.assert_array_equal(np.stack(ours), theirs.data)
    got = converted_pixels(tmp_path / "out", "train")
    for i in range(6):
        label, pixels = got[f"semeion.data#{i + 1}"]
        assert label == theirs[i][1] == digits[i]
        assert np.abs(pixels.mean(axis=2) - theirs.data[i]).mean() < 12  # black and white, through JPEG


def test_lines_that_are_no_image_are_rejected_one_by_one(tmp_path: Path):
    image = small_photos(1, 16, "L")[0]
    good = usps_line(3, image)
    bad = {
        b"x " + good[2:]: "the label 'x' is no whole number",
        b"11 " + good[2:]: "the label 11: USPS's are 1 ... 10",
        b"0 " + good[2:]: "the label 0: USPS's are 1 ... 10",
        good.replace(b" 5:", b" 5-", 1): "'5-", b"3 1:0.5 1:0.5\n": "the index 1 is listed twice",
        b"3 257:0.5\n": "the index 257 is outside 1 ... 256", b"3 0:0.5\n": "the index 0 is outside 1 ... 256",
        b"3 7:1.5\n": "the value '1.5' of pixel 7 is outside -1 ... 1", b"3 7:nan\n": "the value 'nan' of pixel 7",
    }
    src = tmp_path / "usps"
    src.mkdir()
    (src / "usps.bz2").write_bytes(bz2.compress(good + b"\n" + b"".join(bad) + b"3 9:-1\n"))
    m = convert_images(src, tmp_path / "out").manifest
    assert m.splits["train"].samples == 2  # the first line, and the last: its other pixels 0 (grey), LIBSVM's
    reasons = {r["source"]: r["reason"] for r in m.rejected}
    assert set(reasons) == {f"usps.bz2#{n}" for n in range(3, 3 + len(bad))}  # line 2 is blank
    for n, want in enumerate(bad.values(), start=3):
        assert reasons[f"usps.bz2#{n}"].startswith(want), (n, reasons[f"usps.bz2#{n}"])
    last = [image for number, image, _ in digit_texts.rows(src / "usps.bz2") if number == 3 + len(bad)][0]
    assert last[0, 8] == 0 and (np.delete(last.reshape(-1), 8) == 127).all()


@pytest.mark.parametrize("line, reason", [
    (b"1.0 0.0\n", "2 numbers, not SEMEION's 256 pixels and 10 digit flags"),
    (b"0.5 " * 256 + b"0 0 0 0 0 0 0 0 0 0\n", "digit flags 0 0 0 0 0 0 0 0 0 0: not one 1"),
    (b"0.5 " * 256 + b"1 0 0 0 0 0 0 0 0 1\n", "digit flags 1 0 0 0 0 0 0 0 0 1: not one 1"),
    (b"0.5 " * 256 + b"2 0 0 0 0 0 0 0 0 0\n", "digit flags 2 0 0 0 0 0 0 0 0 0: not one 1"),
    (b"1.5 " * 256 + b"1 0 0 0 0 0 0 0 0 0\n", "a pixel outside 0 ... 1"),
    (b"-0.1 " * 256 + b"1 0 0 0 0 0 0 0 0 0\n", "a pixel outside 0 ... 1"),
    (b"a " * 256 + b"1 0 0 0 0 0 0 0 0 0\n", "a value that is no number"),
])
def test_semeion_lines_that_are_no_image(tmp_path: Path, line: bytes, reason: str):
    path = tmp_path / "semeion.data"
    path.write_bytes(semeion_line(4, small_photos(1, 16, "L")[0]) + line)
    got = list(digit_texts.rows(path))
    assert [(n, y) for n, _, y in got] == [(1, 4), (2, None)]
    assert got[1][1] == reason


def test_files_that_cannot_be_read_on_keep_the_lines_before(tmp_path: Path, monkeypatch):
    image = small_photos(1, 16, "L")[0]
    src = tmp_path / "usps"
    src.mkdir()
    packed = bz2.compress(usps_line(1, image) * 3)
    (src / "usps.bz2").write_bytes(packed[:-10])  # the stream cut short
    m = convert_images(src, tmp_path / "out").manifest
    assert [(r["source"], r["reason"][:50]) for r in m.rejected] == [
        ("usps.bz2", "cannot be read on: EOFError: Compressed file ended")]
    assert m.splits["train"].samples == 2  # the lines before the last one whole
    monkeypatch.setattr(digit_texts, "MAX_LINES", 2)
    (src / "usps.bz2").write_bytes(packed)
    m = convert_images(src, tmp_path / "out2").manifest
    assert m.splits["train"].samples == 2
    assert [(r["source"], r["reason"]) for r in m.rejected] == [("usps.bz2", "more than 2 lines: the rest is not read")]
    monkeypatch.setattr(digit_texts, "MAX_LINE", 100)
    with pytest.raises(TableError, match="line 1 is longer than 100 bytes: not a line of pixels"):
        list(digit_texts.rows(src / "usps.bz2"))


def test_only_torchvisions_names_are_read(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "usps.txt.bz2").write_bytes(bz2.compress(usps_line(1, small_photos(1, 16, "L")[0])))
    (src / "semeion.txt").write_bytes(semeion_line(1, small_photos(1, 16, "L")[0]))
    assert not IMAGES.detect(src)
    assert not digit_texts.is_digit_text(src / "usps.txt.bz2") and digit_texts.is_digit_text(Path("usps.t.bz2"))


def test_usps_beside_semeion_in_torchvisions_root_convert_one_at_a_time(tmp_path: Path):
    """torchvision's `USPS` and `SEMEION` download into the root they are given, often the same `data/`."""
    images = small_photos(4, 16, "L")
    root = write_usps(tmp_path / "data", images, [1, 2, 3, 4], test=1)
    (root / "semeion.data").write_bytes(b"".join(semeion_line(d, im) for d, im in zip([5, 6], images, strict=False)))
    m = convert_images(root, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 2}  # semeion.data, the first by name
    assert sorted((r["source"], r["reason"][:60]) for r in m.rejected) == [
        (name, "a second dataset: semeion.data's is the one converted from t") for name in ("usps.bz2", "usps.t.bz2")]


def test_the_bounds_of_values_and_lines_are_kept_and_a_byte_that_is_no_text_is_shown(tmp_path: Path, monkeypatch):
    path = tmp_path / "usps.bz2"
    lines = [b"1 1:-1 2:1 3:-1.0000\n", b"2 1:-1.5\n", b"\xff 1:0\n", b"3 1:1.0001\n"]
    path.write_bytes(bz2.compress(b"".join(lines)))
    got = list(digit_texts.rows(path))
    assert got[0][1].reshape(-1)[:3].tolist() == [0, 255, 0] and got[0][2] == 0  # -1 and 1, the ends, kept
    assert [why for _, why, _ in got[1:]] == ["the value '-1.5' of pixel 1 is outside -1 ... 1",
                                             "the label '\ufffd' is no whole number",
                                             "the value '1.0001' of pixel 1 is outside -1 ... 1"]
    monkeypatch.setattr(digit_texts, "MAX_LINE", len(lines[0]))  # a line of exactly the bound is read
    assert next(digit_texts.rows(path))[2] == 0
