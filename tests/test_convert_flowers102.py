"""Oxford Flowers-102 as torchvision's `Flowers102` downloads it (`flowers-102/`: `jpg/image_00001.jpg` ...,
`imagelabels.mat`, `setid.mat`) converts with its labels and its three splits (converters/images/flowers102.py);
before, `jpg/` was read as the one class of every image. The MATLAB files are written by scipy's `savemat` as the
real ones hold their arrays (1 x N doubles)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import convert_images, converted_pixels, make_image
from scipy.io import savemat

from fastdata.errors import ConvertError


def flowers(root: Path, labels: list[int], sets: dict[str, list[int]] | None) -> Path:
    """root/flowers-102 with one image a label (`labels`: 1 ... 102, in image order) and `sets` as setid.mat."""
    src = root / "flowers-102"
    for n in range(1, len(labels) + 1):
        make_image(src / "jpg" / f"image_{n:05d}.jpg", seed=n)
    savemat(src / "imagelabels.mat", {"labels": np.array([labels], dtype=np.float64)})
    if sets is not None:
        savemat(src / "setid.mat", {k: np.array([v], dtype=np.float64) for k, v in sets.items()})
    (src / "102flowers.tgz").write_bytes(b"\x1f\x8b")  # the archive torchvision keeps beside what it unpacked
    return src


def test_flowers102_converts_with_its_labels_from_0_and_its_three_splits(tmp_path: Path):
    labels = [77, 1, 102, 77, 5, 1, 9]
    src = flowers(tmp_path, labels, {"trnid": [1, 2, 3], "valid": [4, 5], "tstid": [6, 7]})
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == tuple(str(i) for i in range(102))  # class c is torchvision's label c
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 3, "val": 2, "test": 2}
    got = {**converted_pixels(tmp_path / "out", "train"), **converted_pixels(tmp_path / "out", "val"),
           **converted_pixels(tmp_path / "out", "test")}
    assert {source: label for source, (label, _) in got.items()} == {
        f"jpg/image_{n:05d}.jpg": labels[n - 1] - 1 for n in range(1, 8)}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("102flowers.tgz", "not listed in labels file imagelabels.mat")]  # the .mat files are read, not rejected


def test_without_setid_every_image_goes_to_split_and_the_label_field_is_not_asked_for(tmp_path: Path):
    src = flowers(tmp_path, [3, 2, 1], None)
    m = convert_images(src, tmp_path / "out", split="val").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"val": 3} and m.classes == ("0", "1", "2")
    m = convert_images(src, tmp_path / "out2", unlabeled=True).manifest  # --unlabeled: images alone
    assert m.classes == () and m.splits["train"].samples == 3
    (tmp_path / "mine.csv").write_text("file,class\njpg/image_00001.jpg,rose\njpg/image_00002.jpg,tulip\n")
    m = convert_images(src, tmp_path / "out3", labels=str(tmp_path / "mine.csv")).manifest  # a CSV of your own
    assert m.classes == ("rose", "tulip") and m.splits["train"].samples == 2
    with pytest.raises(ValueError, match="--image-field and --label-field name the columns"):
        convert_images(src, tmp_path / "out4", label_field="labels")


@pytest.mark.parametrize("labels, sets, problem", [
    ([1, 2], {"trnid": [1], "valid": [2], "tstid": [2]}, r"setid.mat: image 2 is in two of its splits"),
    ([1, 2], {"trnid": [1], "valid": [3], "tstid": [2]}, r"setid.mat: image 3 is past the 2 imagelabels.mat labels"),
    ([1, 2], {"trnid": [1], "valid": [1.5], "tstid": [2]}, r"setid.mat: 'valid' holds a value that is no image "
                                                           r"number \(1 or more\)"),
    ([1, 2], {"trnid": [1], "tstid": [2]}, r"setid.mat: no 'valid' of image numbers \(variables held: trnid, tstid\)"),
    ([1, 2, 2], {"trnid": [1], "valid": [2], "tstid": [3]}, None),
    ([1, 2, 3], {"trnid": [1], "valid": [2], "tstid": [3, 3]}, None),  # twice in one split: taken once
    ([1, 2, 3, 4], {"trnid": [1], "valid": [2], "tstid": [3]}, r"setid.mat: 1 labelled image\(s\) are in none of "
                                                               r"its splits \(first: jpg/image_00004.jpg\)"),
    ([0, 2], None, r"imagelabels.mat: 'labels' holds a value that is no image number"),
    ([1, 2, 3], {"trnid": [1], "valid": [2], "tstid": []}, r"setid.mat: no 'tstid' of image numbers"),
])
def test_setid_or_imagelabels_that_are_not_flowers102s_stop_the_conversion(tmp_path: Path, labels, sets, problem):
    src = flowers(tmp_path, labels, sets)
    if problem is None:
        assert convert_images(src, tmp_path / "out").manifest.splits["test"].samples == 1
        return
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "out")


def test_a_missing_image_an_extra_one_and_a_broken_mat_file_are_said(tmp_path: Path):
    src = flowers(tmp_path, [1, 2, 3], {"trnid": [1], "valid": [2], "tstid": [3]})
    (src / "jpg" / "image_00002.jpg").unlink()
    make_image(src / "jpg" / "image_00004.jpg", seed=4)
    m = convert_images(src, tmp_path / "out").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("102flowers.tgz", "not listed in labels file imagelabels.mat"),
        ("jpg/image_00002.jpg", "listed in imagelabels.mat but no such file in the source"),
        ("jpg/image_00004.jpg", "not listed in labels file imagelabels.mat")]
    (src / "setid.mat").write_bytes(b"MATLAB 5.0 MAT-file" + b"\0" * 50)
    with pytest.raises(ConvertError, match=r"setid.mat: not a MATLAB 5 file: "):
        convert_images(src, tmp_path / "out3")
    (src / "imagelabels.mat").write_bytes(b"MATLAB 5.0 MAT-file" + b"\0" * 50)
    with pytest.raises(ConvertError, match=r"imagelabels.mat: not a MATLAB 5 file: "):
        convert_images(src, tmp_path / "out2")


def test_a_class_folder_named_jpg_or_a_stray_imagelabels_file_is_no_flowers102(tmp_path: Path):
    src = tmp_path / "src"
    make_image(src / "jpg" / "a.jpg", seed=1)
    make_image(src / "png" / "b.png", seed=2, fmt="PNG")
    assert convert_images(src, tmp_path / "out").manifest.classes == ("jpg", "png")  # class folders, as before
    (src / "png").rename(src / "imagelabels.mat")  # a folder of that name: no labels file
    assert convert_images(src, tmp_path / "out2").manifest.classes == ("imagelabels.mat", "jpg")
    other = tmp_path / "other"
    make_image(other / "a" / "x.jpg", seed=3)
    savemat(other / "imagelabels.mat", {"labels": np.array([[1.0]])})  # no jpg/ beside it
    assert convert_images(other, tmp_path / "out3").manifest.classes == ("a",)


def test_the_mat_files_are_read_for_their_variables_only_and_a_file_too_large_is_named(tmp_path: Path,
                                                                                     monkeypatch):
    from converters.images import flowers102

    src = flowers(tmp_path, [1, 2, 3], {"trnid": [1], "valid": [2], "tstid": [3]})
    asked = []
    real = flowers102.load_mat

    def spy(path, variables, **kw):
        asked.append((path.name, variables))
        return real(path, variables, **kw)

    monkeypatch.setattr(flowers102, "load_mat", spy)
    assert convert_images(src, tmp_path / "out").manifest.splits["test"].samples == 1
    assert asked == [("imagelabels.mat", ["labels"]), ("setid.mat", ["trnid", "valid", "tstid"])]
    monkeypatch.setattr(flowers102, "MAX_FILE", (src / "setid.mat").stat().st_size - 1)
    monkeypatch.setattr(flowers102, "load_mat", real)
    savemat(src / "imagelabels.mat", {"labels": np.array([[1, 2, 3]], dtype=np.float64)})
    with pytest.raises(ConvertError, match=r"setid.mat: a file of \d+ bytes, more than Flowers-102's setid.mat has"):
        convert_images(src, tmp_path / "out2")
    savemat(src / "imagelabels.mat", {"labels": np.array([list(range(1, 40))], dtype=np.float64)})
    with pytest.raises(ConvertError, match=r"imagelabels.mat: a file of \d+ bytes, more than Flowers-102's "
                                           r"imagelabels.mat has"):
        convert_images(src, tmp_path / "out3")
    savemat(src / "imagelabels.mat", {})
    with pytest.raises(ConvertError, match=r"^imagelabels.mat: no 'labels' of image numbers \(variables held: none\)$"):
        convert_images(src, tmp_path / "out4")
