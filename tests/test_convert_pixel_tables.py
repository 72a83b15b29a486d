"""Kaggle's CSV tables of pixels (converters/images/pixel_tables.py, read by array_files.py): Digit Recognizer's
`train.csv` beside its unlabeled `test.csv`, Fashion-MNIST's `label,pixel1,...`, `mnist_train.csv` with `1x1`
columns or no header, FER2013's packed `pixels` cell with its `Usage` split. Before, `fastdata convert` took such a
folder for a text corpus and asked for a tokenizer. Images: the real photos, made small and grey."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import convert_images, converted_pixels, small_photos

from converters.images import KIND as IMAGES
from converters.images.pixel_tables import pixel_layout, table_layout
from converters.text import KIND as TEXT
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

NOT_ONE = ("not a file of an image dataset kept as arrays (this source is read as the files of torchvision's CIFAR, "
           "MNIST, SVHN, STL-10 or PCAM datasets, NumPy .npz files, or Kaggle's tables of pixels)")


def csv_table(path: Path, header: list[str] | None, rows: list[list[object]]) -> Path:
    lines = ([",".join(header)] if header else []) + [",".join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def digit_recognizer(src: Path, images: np.ndarray, labels: list[int], test: int) -> Path:
    src.mkdir(parents=True, exist_ok=True)
    pixels = [f"pixel{i}" for i in range(images[0].size)]
    n = len(images) - test
    csv_table(src / "train.csv", ["label", *pixels], [[y, *im.ravel()] for y, im in zip(labels[:n], images[:n])])
    csv_table(src / "test.csv", pixels, [list(im.ravel()) for im in images[n:]])
    csv_table(src / "sample_submission.csv", ["ImageId", "Label"], [[i + 1, 0] for i in range(test)])
    return src


def test_digit_recognizer_converts_its_labelled_table_and_says_why_not_the_unlabeled_one(tmp_path: Path):
    images, labels = small_photos(8, 28, "L"), [1, 0, 1, 4, 0, 3]
    src = digit_recognizer(tmp_path / "digit-recognizer", images, labels, test=2)
    assert IMAGES.detect(src)
    assert cli(["convert", str(src), str(tmp_path / "out"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "out")
    assert m.classes == ("0", "1", "2", "3", "4") and {k: s.samples for k, s in m.splits.items()} == {"train": 6}
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("sample_submission.csv", NOT_ONE),
        ("test.csv", "no label column: the other tables label their rows (column 'label'); convert it apart, with "
                     "--unlabeled")]
    got = converted_pixels(tmp_path / "out", "train", "L")
    for i in range(6):
        label, pixels = got[f"train.csv#{i}"]
        assert label == labels[i]
        assert np.abs(pixels - images[i]).mean() < 6
        assert np.abs(pixels - images[i].T).mean() > 20  # pixels in row-major order, not transposed
    m = convert_images(src, tmp_path / "all", unlabeled=True).manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 6, "test": 2} and m.classes == ()
    with pytest.raises(ConvertError, match=r"2 x --label-field names a field of CIFAR batches; a table of pixels "
                                           r"has its label in the column named label, emotion, class, target, y; "):
        convert_images(src, tmp_path / "named", label_field="digit")


def test_the_layouts_kaggle_hands_out_for_mnist_and_fashion_mnist(tmp_path: Path):
    images, labels = small_photos(6, 28, "L"), [9, 2, 1, 1, 6, 0]
    named = {"fashion": (["label", *(f"pixel{i + 1}" for i in range(784))], "fashion-mnist_{}.csv"),
             "rows-by-cols": (["label", *(f"{r + 1}x{c + 1}" for r in range(28) for c in range(28))],
                              "mnist_{}.csv"),
             "no-header": (None, "mnist_{}.csv")}
    for kind, (header, name) in named.items():
        src = tmp_path / kind
        src.mkdir()
        for split, part in (("train", slice(0, 4)), ("test", slice(4, 6))):
            csv_table(src / name.format(split), header, [[y, *im.ravel()] for y, im in zip(labels[part],
                                                                                             images[part])])
        m = convert_images(src, tmp_path / f"{kind}-out").manifest
        assert {k: s.samples for k, s in m.splits.items()} == {"train": 4, "test": 2} and not m.rejected, kind
        label, pixels = converted_pixels(tmp_path / f"{kind}-out", "test", "L")[f"{name.format('test')}#1"]
        assert label == 0 and np.abs(pixels - images[5]).mean() < 6, kind
    train = tmp_path / "no-header" / "mnist_train.csv"
    train.write_bytes(b"\xef\xbb\xbf" + train.read_bytes())  # saved by a spreadsheet: a byte order mark first
    m = convert_images(tmp_path / "no-header", tmp_path / "bom-out").manifest
    assert m.classes == tuple(str(i) for i in range(10)) and not m.rejected
    assert converted_pixels(tmp_path / "bom-out", "train", "L")["mnist_train.csv#0"][0] == 9


def test_fer2013_reads_its_packed_pixels_and_its_usage_column(tmp_path: Path):
    images, emotions = small_photos(5, 48, "L"), [0, 3, 6, 2, 3]
    usage = ["Training", "Elsewhere", "PublicTest", "PrivateTest", "Training"]
    src = tmp_path / "fer2013"
    src.mkdir()
    csv_table(src / "fer2013.csv", ["emotion", "pixels", "Usage"],
              [[e, " ".join(map(str, im.ravel())), u] for e, im, u in zip(emotions, images, usage)])
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 2, "val": 1, "test": 1}
    assert [(r["split"], r["source"], r["reason"]) for r in m.rejected] == [
        ("train", "fer2013.csv#1", "no split: 'Elsewhere' in the split column")]
    assert m.classes == tuple(str(i) for i in range(7))
    label, pixels = converted_pixels(tmp_path / "out", "val", "L")["fer2013.csv#2"]
    assert label == 6 and pixels.shape == (48, 48) and np.abs(pixels - images[2]).mean() < 6


def test_rows_that_hold_no_image_or_no_label_are_rejected_one_by_one(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    good = list(small_photos(1, 4, "L")[0].ravel())
    rows = [[1, *good], [2, *good[:-1], 300], [3, *good[:-1], "a1"], [4, *good[:-3]], ["", *good], [],
            [5, *good[:-1], -1], [0, *good], [1, *good[:-1], 256], [1, *good[:-1], 10 ** 30], [2, *good[:-1], 255]]
    csv_table(src / "train.csv", ["label", *(f"pixel{i}" for i in range(16))], rows)
    m = convert_images(src, tmp_path / "out").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("train.csv#1", "a pixel value out of 0-255: 300"),
        ("train.csv#2", "a pixel value that is no whole number: 'a1'"),
        ("train.csv#3", "14 cells, not 17"),
        ("train.csv#4", "no label (null in column 'label')"),
        ("train.csv#6", "a pixel value out of 0-255: -1"),
        ("train.csv#8", "a pixel value out of 0-255: 256"),
        ("train.csv#9", "a pixel value out of 0-255: 10000000000000000000")]  # (its first 20 digits)
    assert sorted(converted_pixels(tmp_path / "out", "train", "L")) == ["train.csv#0", "train.csv#10", "train.csv#7"]
    (src / "train.csv").write_bytes((src / "train.csv").read_bytes() + b"9," + b"\xff" * 40 + b"\n")
    m = convert_images(src, tmp_path / "out2").manifest
    assert ("train.csv", "unreadable from row 11 on: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in "
                         "position 2: invalid start byte") in [(r["source"], r["reason"]) for r in m.rejected]
    assert m.splits["train"].samples == 3  # the rows before it kept
    (src / "train.csv").write_bytes((src / "train.csv").read_bytes()[:-43] + b"9," + b"1" * (1 << 20) + b"\n")
    m = convert_images(src, tmp_path / "out3").manifest
    assert ("train.csv", "unreadable from row 11 on: Error: a line longer than 1048576 bytes") in [
        (r["source"], r["reason"]) for r in m.rejected]  # a row past the bound stops the file, never read whole
    assert m.splits["train"].samples == 3


@pytest.mark.parametrize("cells, layout", [
    (["label", *(f"pixel{i}" for i in range(784))], (True, 28, 0, None)),
    ([*(f"pixel{i}" for i in range(784))], (True, 28, None, None)),
    (["emotion", " pixels", " Usage"], (True, 0, 0, 2)),  # FER's other file, icml_face_data.csv, with spaces
    (["7", *(["0"] * 784)], (False, 28, 0, None)),
    (["label", *(f"pixel{i}" for i in range(783))], None),  # not a square
    (["label", "id", *(f"pixel{i}" for i in range(784))], None),  # a column that is none of them
    (["label", *(f"pixel{i}" for i in range(9))], None),  # 3 x 3: no image
    ([*(f"pixel{i}" for i in range(256 * 256))], (True, 256, None, None)),  # the largest side
    ([*(f"pixel{i}" for i in range(257 * 257))], None),
    (["text", "label"], None), (["1", "2"], None), (["ImageId", "Label"], None),
])
def test_what_a_first_row_says_of_a_table(cells: list[str], layout: tuple | None):
    found = pixel_layout(cells)
    assert (None if found is None else (found.header, found.side, found.label, found.split)) == layout


def test_a_text_corpus_table_is_no_table_of_pixels(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    csv_table(src / "train.csv", ["text", "label"], [["a good film", 1], ["a bad one", 0]])
    assert not IMAGES.detect(src) and TEXT.detect(src)
    only_test = tmp_path / "only-test"
    only_test.mkdir()
    csv_table(only_test / "test.csv", [f"pixel{i}" for i in range(16)], [list(range(16))])
    m = convert_images(only_test, tmp_path / "out").manifest  # no table labels its rows: read unlabeled
    assert {k: s.samples for k, s in m.splits.items()} == {"test": 1} and m.classes == ()
    assert list(converted_pixels(tmp_path / "out", "test", "L")) == ["test.csv#0"]
    (only_test / "test.csv").write_bytes(b"\xff,pixel0\n")  # a first line that is no text: no table of pixels
    assert table_layout(only_test / "test.csv") is None
    from converters.images.array_files import discover_array_files
    from converters.images.table_columns import TableOptions

    with pytest.raises(ValueError) as exc:
        discover_array_files(only_test, TableOptions(image_field="img"))
    assert str(exc.value) == (f"--image-field names the image column of a table; {only_test} holds CIFAR batches, "
                              "IDX files or tables of pixels")


def test_one_file_of_a_dataset_given_as_the_source_is_told_to_convert_its_folder(tmp_path: Path, capsys):
    from test_convert_array_files import cifar_rows, idx, py2_pickle

    src = digit_recognizer(tmp_path / "digits", small_photos(3, 28, "L"), [1, 2], test=1)
    (src / "data_batch_1").write_bytes(py2_pickle({"labels": [0], "data": cifar_rows(np.zeros((1, 32, 32, 3),
                                                                                              np.uint8))}))
    (src / "train-images-idx3-ubyte").write_bytes(idx(small_photos(1, 28, "L")))
    for name, what in (("train.csv", "a table of pixels"), ("data_batch_1", "a CIFAR batch"),
                       ("train-images-idx3-ubyte", "an IDX file")):
        assert cli(["convert", str(src / name), str(tmp_path / "dst"), "--no-progress"]) != 0
        assert (f"{src / name} is {what}: images are converted from a folder, so convert the folder that holds it "
                f"(fastdata convert {src} DST), or move it into a folder of its own") in capsys.readouterr().err
    csv_table(tmp_path / "reviews.csv", ["text", "label"], [["good", 1]])  # a text table is still text's
    assert cli(["convert", str(tmp_path / "reviews.csv"), str(tmp_path / "dst2"), "--no-progress"]) != 0
    assert "--tokenizer is required for text" in capsys.readouterr().err
