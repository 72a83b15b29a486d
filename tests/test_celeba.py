"""CelebA as torchvision's `CelebA` downloads it (`img_align_celeba/`, `list_attr_celeba.txt` of 1 and -1 under a
count line and a names line, `list_eval_partition.txt`) and as Kaggle's copy holds it (a nested image folder, CSVs):
`fastdata convert celeba/ DST --multi-label` makes the attributes the classes and the partition the splits
(converters/images/celeba.py). The faces are the real photos of tests/data, named as CelebA names its images."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
import torch
from conftest_images import loader
from helpers import PHOTOS, class_lists, convert_images

from converters.images.labels_columns import one_hot
from converters.images.labels_csv import read_labels
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

ATTRIBUTES = ("5_o_Clock_Shadow", "Arched_Eyebrows", "Attractive", "Bags_Under_Eyes", "Bald")  # CelebA's first five
MARKS = [[-1, 1, 1, -1, -1], [-1, -1, -1, 1, -1], [1, -1, -1, -1, 1], [-1, -1, -1, -1, -1], [1, 1, -1, -1, -1],
         [-1, 1, 1, 1, -1], [-1, -1, 1, -1, -1], [1, -1, -1, 1, 1], [-1, -1, -1, -1, 1]]
PARTITION = [0, 0, 0, 0, 0, 1, 1, 2, 2]
NAMES = [f"{i:06d}.jpg" for i in range(1, len(MARKS) + 1)]


def _classes(marks: list[int]) -> list[int]:
    return [j for j, m in enumerate(marks) if m == 1]


def _torchvision_layout(root: Path, *, partition: bool = True) -> Path:
    """`celeba/` as torchvision's CelebA(download=True) leaves it: the images, the zip they came in, and the lists."""
    src = root / "celeba"
    (src / "img_align_celeba").mkdir(parents=True)
    for name, photo in zip(NAMES, sorted(PHOTOS.glob("*.jpg"))):
        shutil.copyfile(photo, src / "img_align_celeba" / name)
    (src / "img_align_celeba.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    lines = [str(len(NAMES)), " ".join(ATTRIBUTES) + " "]  # its names line ends in a space
    lines += [name + "".join(f" {m:2d}" for m in marks) for name, marks in zip(NAMES, MARKS)]  # `-1  1  1`
    (src / "list_attr_celeba.txt").write_text("\n".join(lines) + "\n")
    if partition:
        (src / "list_eval_partition.txt").write_text("".join(f"{n} {p}\n" for n, p in zip(NAMES, PARTITION)))
    (src / "identity_CelebA.txt").write_text("".join(f"{n} {2880 + i % 2}\n" for i, n in enumerate(NAMES)))
    (src / "list_bbox_celeba.txt").write_text(f"{len(NAMES)}\nimage_id x_1 y_1 width height\n"
                                              + "".join(f"{n} 95 71 226 313\n" for n in NAMES))
    return src


def _lists(dst: Path) -> dict[str, tuple[str, list[int]]]:
    """Each converted sample's file name -> (its split, the classes its json member lists)."""
    return class_lists(dst, lambda source: Path(source).name)


def _expected(partition: bool = True) -> dict[str, tuple[str, list[int]]]:
    splits = {0: "train", 1: "val", 2: "test"}
    return {n: (splits[p] if partition else "train", _classes(m)) for n, m, p in zip(NAMES, MARKS, PARTITION)}


def test_torchvisions_folder_converts_its_attributes_as_classes_split_by_its_partition(tmp_path, capsys):
    src = _torchvision_layout(tmp_path)
    assert cli(["convert", str(src), str(tmp_path / "dst"), "--multi-label", "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ATTRIBUTES and m.extra["layout"] == "celeba" and m.extra["multi_label"] is True
    assert {s: m.split(s).samples for s in m.splits} == {"train": 5, "val": 2, "test": 2}
    assert _lists(tmp_path / "dst") == _expected()
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("img_align_celeba.zip", "not listed in labels file list_attr_celeba.txt")]  # the lists are no rejections
    assert list(m.split("train").class_counts) == [sum(MARKS[i][j] == 1 for i in range(5)) for j in range(5)]


def test_kaggles_copy_converts_the_same(tmp_path):
    src = tmp_path / "celeba-dataset"
    (src / "img_align_celeba" / "img_align_celeba").mkdir(parents=True)
    for name, photo in zip(NAMES, sorted(PHOTOS.glob("*.jpg"))):
        shutil.copyfile(photo, src / "img_align_celeba" / "img_align_celeba" / name)
    (src / "list_attr_celeba.csv").write_text("image_id," + ",".join(ATTRIBUTES) + "\n" + "".join(
        f"{n}," + ",".join(map(str, marks)) + "\n" for n, marks in zip(NAMES, MARKS)))
    (src / "list_eval_partition.csv").write_text("image_id,partition\n" + "".join(
        f"{n},{p}\n" for n, p in zip(NAMES, PARTITION)))
    m = convert_images(src, tmp_path / "dst", multi_label=True).manifest
    assert m.classes == ATTRIBUTES and m.rejected == ()
    assert _lists(tmp_path / "dst") == _expected()


def test_without_the_option_the_folder_is_refused_naming_it_and_unlabeled_it_converts(tmp_path):
    src = _torchvision_layout(tmp_path)
    with pytest.raises(ConvertError, match=r"is laid out as CelebA \(list_attr_celeba.txt beside img_align_celeba/\): "
                                           r"--multi-label converts its attributes.*--labels identity_CelebA.txt"):
        convert_images(src, tmp_path / "dst")
    m = convert_images(src, tmp_path / "faces", unlabeled=True).manifest
    assert m.classes == () and m.split("train").samples == len(NAMES)


def test_without_a_partition_every_image_goes_to_the_split_given(tmp_path):
    src = _torchvision_layout(tmp_path, partition=False)
    m = convert_images(src, tmp_path / "dst", multi_label=True).manifest
    assert list(m.splits) == ["train"]
    assert _lists(tmp_path / "dst") == _expected(partition=False)


@pytest.mark.parametrize(("lines", "problem"), [
    (["000001.jpg 3"], r"list_eval_partition.txt:1: expected a file and its split \(0 train, 1 val, 2 test\), got "
                       r"\['000001.jpg', '3'\]"),
    (["000001.jpg 0", "000002.jpg 0", "000001.jpg 0"], r"list_eval_partition.txt:3: '000001.jpg' is listed again"),
    (["000001.jpg"], r"list_eval_partition.txt:1: expected a file and its split \(0 train, 1 val, 2 test\), got "
                     r"\['000001.jpg'\]"),
    (["000001.jpg 0 1"], r"list_eval_partition.txt:1: expected a file and its split"),
    ([f"{n} 0" for n in NAMES[:-1]], r"list_eval_partition.txt: 1 image\(s\) of list_attr_celeba.txt are in no split "
                                     r"\(first: 000009.jpg\): the files are not CelebA's"),
])
def test_a_partition_that_is_not_celebas_stops_the_conversion(tmp_path, lines, problem):
    src = _torchvision_layout(tmp_path)
    (src / "list_eval_partition.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst", multi_label=True)
    assert not (tmp_path / "dst" / "manifest.json").exists()


def test_kaggles_partition_with_a_bom_an_unreadable_one_a_big_one_and_lists_without_images(tmp_path, monkeypatch):
    import converters.images.celeba as celeba

    src = _torchvision_layout(tmp_path)
    (src / "list_eval_partition.txt").unlink()
    (src / "list_eval_partition.csv").write_text("\ufeffimage_id,partition\n" + "".join(
        f"{n},{p}\n" for n, p in zip(NAMES, PARTITION)), encoding="utf-8")  # a spreadsheet's byte order mark
    convert_images(src, tmp_path / "dst", multi_label=True)
    assert _lists(tmp_path / "dst") == _expected()
    (src / "list_eval_partition.csv").write_bytes(b"image_id,partition\n\xff\xfe,0\n")
    with pytest.raises(ConvertError, match=r"cannot read .*list_eval_partition.csv: 'utf-8' codec can't decode"):
        convert_images(src, tmp_path / "bad", multi_label=True)
    monkeypatch.setattr(celeba, "MAX_FILE", 10)
    with pytest.raises(ConvertError, match=r"list_eval_partition.csv: 24 bytes, more than CelebA's partition list "
                                           r"holds"):
        convert_images(src, tmp_path / "big", multi_label=True)
    shutil.rmtree(src / "img_align_celeba")
    assert celeba.found(src) is None  # the lists without the images: no CelebA folder


def test_the_attribute_list_read_as_a_labels_file(tmp_path, caplog):
    src = _torchvision_layout(tmp_path)
    caplog.set_level(logging.WARNING)
    labels = read_labels(src / "list_attr_celeba.txt", multi=True)
    assert labels.classes == ATTRIBUTES and caplog.records == []
    assert labels.rows == {n: tuple(ATTRIBUTES[j] for j in _classes(m)) for n, m in zip(NAMES, MARKS)}
    text = (src / "list_attr_celeba.txt").read_text().splitlines()
    (tmp_path / "cut.txt").write_text("\n".join(text[:-2]) + "\n")  # cut short: its count says 9, it holds 7
    assert len(read_labels(tmp_path / "cut.txt", multi=True).rows) == 7
    assert [r.getMessage() for r in caplog.records] == [
        f"{tmp_path / 'cut.txt'}: line 1 counts 9 rows, the file holds 7 (cut short, or a subset?)"]
    (tmp_path / "short.txt").write_text("\n".join([*text[:4], text[4].rsplit(None, 1)[0]]) + "\n")
    with pytest.raises(ConvertError, match=r"short.txt:5: 5 cells, where the first row names 6 columns"):
        read_labels(tmp_path / "short.txt", multi=True)
    (tmp_path / "count.txt").write_text("9\n")
    with pytest.raises(ConvertError, match=r"count.txt: a count of 9 rows and no line of column names after it"):
        read_labels(tmp_path / "count.txt", multi=True)
    # the folder of images alone, labelled by the list (one split)
    m = convert_images(src / "img_align_celeba", tmp_path / "dst", labels=str(src / "list_attr_celeba.txt"),
                       multi_label=True).manifest
    assert m.classes == ATTRIBUTES and m.split("train").samples == len(NAMES)


def test_minus_one_is_cold_only_in_a_table_without_zeros():
    signed = [(1, ["image", "a", "b"]), (2, ["x.jpg", "1", "-1"]), (3, ["y.jpg", "-1.0", "-1"])]
    assert one_hot(Path("t.csv"), signed, multi=True) == (["a", "b"], [(2, ["x.jpg", "a"]), (3, ["y.jpg"])])
    mixed = [*signed, (4, ["z.jpg", "0", "1"])]  # CheXpert's -1 is "uncertain" beside its 0 and 1: no one-hot table
    assert one_hot(Path("t.csv"), mixed, multi=True) is None
    headless = [(1, ["x.jpg", "-1", "-1"]), (2, ["y.jpg", "1", "-1"])]  # a first row of values names no column
    assert one_hot(Path("t.csv"), headless, multi=True) is None
    with pytest.raises(ConvertError, match=r"t.csv:3: 'y.jpg' is marked with 0 classes in the one-hot columns"):
        one_hot(Path("t.csv"), signed, multi=False)


def test_batches_carry_the_attributes_as_multi_hot_rows(tmp_path):
    src = _torchvision_layout(tmp_path)
    convert_images(src, tmp_path / "dst", multi_label=True, short_side=48)
    wanted = {n: [float(m == 1) for m in marks] for n, marks in zip(NAMES, MARKS)}
    rows = []
    for split in ("train", "val", "test"):
        ld = loader(tmp_path / "dst", split=split, train=False, batch_size=4)
        for _, y in ld:
            assert y.dtype == torch.float32 and y.shape == (4, len(ATTRIBUTES))
            rows += [tuple(r) for r in y.tolist() if r[0] != -100]
    assert sorted(rows) == sorted(tuple(r) for r in wanted.values())
