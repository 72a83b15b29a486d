"""torchvision's CIFAR and MNIST folders (`cifar-10-batches-py/`, `cifar-100-python/`, `MNIST/raw/`) convert
(converters/images/array_files.py, cifar.py, idx_files.py); before, `fastdata convert` could not tell what they held.
The CIFAR batches are written as Python 2 wrote the real ones (byte strings, `numpy.core.multiarray`), and read
back by the plain `pickle.load` torchvision calls as a second opinion; the IDX files are written byte by byte from
the format. Images: the real photos, made small."""

from __future__ import annotations

import gzip
import io
import lzma
import os
import pickle
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from helpers import PHOTOS, convert_images, converted_pixels, small_photos

from converters.images import KIND as IMAGES
from converters.images import cifar
from converters.images.idx_files import Idx, read_idx
from converters.table_files import TableError
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

CIFAR10_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


class _Py2Pickler(pickle._Pickler):  # type: ignore[name-defined,misc]
    """Pickles as Python 2's cPickle wrote CIFAR: text and bytes as byte strings (BINSTRING), protocol 2."""

    dispatch = pickle._Pickler.dispatch.copy()  # type: ignore[attr-defined]

    def save_byte_string(self, obj: bytes | str) -> None:
        data = obj if isinstance(obj, bytes) else obj.encode("latin1")
        if len(data) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(data)]) + data)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(data)) + data)
        self.memoize(obj)

    dispatch[bytes] = save_byte_string
    dispatch[str] = save_byte_string


def py2_pickle(value: object) -> bytes:
    buf = io.BytesIO()
    _Py2Pickler(buf, protocol=2).dump(value)
    return buf.getvalue().replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")  # as numpy 1 named it


def cifar_rows(images: np.ndarray) -> np.ndarray:
    """CIFAR's rows: each image's red plane, then its green, then its blue."""
    return np.ascontiguousarray(images.transpose(0, 3, 1, 2).reshape(len(images), -1))


def write_cifar10(folder: Path, images: np.ndarray, labels: list[int], *, test: int = 4) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    half = (len(images) - test) // 2
    parts = {"data_batch_1": slice(0, half), "data_batch_2": slice(half, len(images) - test),
             "test_batch": slice(len(images) - test, len(images))}
    for name, part in parts.items():
        (folder / name).write_bytes(py2_pickle({"batch_label": f"{name} of 2", "labels": labels[part],
                                                "data": cifar_rows(images[part]),
                                                "filenames": [f"img_{i}.png" for i in range(part.start, part.stop)]}))
    (folder / "batches.meta").write_bytes(py2_pickle({"num_cases_per_batch": half, "label_names": CIFAR10_NAMES,
                                                      "num_vis": 3072}))
    (folder / "readme.html").write_text("<html>CIFAR-10</html>")
    return folder


def idx(values: np.ndarray) -> bytes:
    return bytes([0, 0, 8, values.ndim]) + struct.pack(f">{values.ndim}I", *values.shape) + values.tobytes()


def test_cifar10_converts_with_its_classes_in_id_order_and_its_pixels_in_place(tmp_path: Path):
    images = small_photos(12, 32)
    labels = [9, 0, 3, 3, 1, 8, 2, 7, 5, 6, 4, 0]
    src = write_cifar10(tmp_path / "cifar-10-batches-py", images, labels)
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == tuple(CIFAR10_NAMES)  # the meta file's order, not sorted
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 8, "test": 4}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("readme.html", "not a file of an image dataset kept as arrays (this source is read as the files of "
                        "torchvision's CIFAR, MNIST, SVHN, STL-10 or PCAM datasets, NumPy .npz files, "
                        "or Kaggle's tables of pixels)")]
    got = {**converted_pixels(tmp_path / "out", "train"), **converted_pixels(tmp_path / "out", "test")}
    where = [f"data_batch_1#{i}" for i in range(4)] + [f"data_batch_2#{i}" for i in range(4)] + [
        f"test_batch#{i}" for i in range(4)]
    assert sorted(got) == sorted(where)
    for i, source in enumerate(where):
        label, pixels = got[source]
        assert label == labels[i]
        assert pixels.shape == (32, 32, 3)
        assert np.abs(pixels - images[i]).mean() < 10  # JPEG at quality 90, chroma halved
        wrong = cifar_rows(images[i:i + 1]).reshape(32, 32, 3)  # the planes read as if pixel after pixel
        assert np.abs(pixels - wrong).mean() > 30


def test_our_unpickler_reads_what_torchvision_reads_and_nothing_that_runs_code(tmp_path: Path):
    images = small_photos(4, 32)
    path = tmp_path / "data_batch_1"
    path.write_bytes(py2_pickle({"labels": [1, 2, 3, 4], "data": cifar_rows(images)}))
    assert path.read_bytes().startswith(b"\x80\x02}")
    with open(path, "rb") as f:
        theirs = pickle.load(f, encoding="latin1")  # what torchvision's CIFAR10 does
    ours = cifar.read_batch(path, "labels")
    np.testing.assert_array_equal(theirs["data"], cifar_rows(images))
    np.testing.assert_array_equal(ours.images, images)
    assert ours.labels == [1, 2, 3, 4]
    marker = tmp_path / "ran"

    class Runs:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    path.write_bytes(pickle.dumps({"data": Runs()}, protocol=2))
    with pytest.raises(TableError, match=r"^not a CIFAR pickle: it holds a pickled (posix|nt)\.system, which is never "
                                         r"loaded \(only numpy arrays are\)$"):
        cifar.load(path)
    assert not marker.exists()
    path.write_bytes(pickle.dumps([1, 2], protocol=2))
    with pytest.raises(TableError, match=r"^not a CIFAR pickle: it holds a list, not a dict$"):
        cifar.load(path)
    path.write_bytes(pickle.dumps({"data": b"\xff"}, protocol=2).replace(b"latin1", b"lauin1"))  # found by make fuzz
    with pytest.raises(TableError, match=r"^not a CIFAR pickle: unknown encoding: lauin1$"):
        cifar.load(path)
    path.write_bytes(pickle.dumps({"data": 1}, protocol=2)[:-3])
    with pytest.raises(TableError, match=r"^not a CIFAR pickle: "):
        cifar.load(path)


@pytest.mark.parametrize("batch, reason", [
    ({"labels": [1], "data": np.zeros((1, 3071), np.uint8)},
     "no images: 'data' is no uint8 array of rows of 3072 bytes (uint8 [1, 3071])"),
    ({"labels": [1], "data": np.zeros((1, 3072), np.int16)},
     "no images: 'data' is no uint8 array of rows of 3072 bytes (int16 [1, 3072])"),
    ({"labels": [1], "data": [0] * 3072}, "no images: 'data' is no uint8 array of rows of 3072 bytes (list)"),
    ({"fine_labels": [1], "data": np.zeros((1, 3072), np.uint8)},
     "no label field 'labels' (label fields: fine_labels); name it with --label-field"),
    ({"labels": [1, 2], "data": np.zeros((1, 3072), np.uint8)}, "1 images and 2 labels in 'labels'"),
])
def test_a_batch_that_is_not_what_cifar_holds_is_rejected_saying_what_it_lacks(tmp_path: Path, batch: dict,
                                                                                 reason: str):
    src = write_cifar10(tmp_path / "src", small_photos(6, 32), [0, 1, 2, 3, 4, 5], test=2)
    (src / "data_batch_2").write_bytes(py2_pickle(batch))
    m = convert_images(src, tmp_path / "out").manifest
    assert ("data_batch_2", reason) in [(r["source"], r["reason"]) for r in m.rejected]
    assert m.splits["train"].samples == 2


def test_labels_that_are_no_class_and_a_batch_without_its_meta_file_are_rejected(tmp_path: Path):
    src = write_cifar10(tmp_path / "src", small_photos(6, 32), [0, 10, 2, -1, 4, 5], test=2)
    (src / "data_batch_2").write_bytes(py2_pickle({"labels": [1, "cat"], "data": cifar_rows(small_photos(2, 32))}))
    m = convert_images(src, tmp_path / "out").manifest
    assert {(r["source"], r["reason"]) for r in m.rejected if r["source"].startswith("data_batch")} == {
        ("data_batch_1#1", "label is no class of field 'labels' (10 classes): 10"),
        ("data_batch_2#1", "no label (null in field 'labels')")}
    assert m.splits["train"].samples == 2  # data_batch_1#0 and data_batch_2#0
    (src / "batches.meta").unlink()
    with pytest.raises(ConvertError, match=r"3 x no meta file beside it \(batches.meta or meta\): it names the "
                                           r"classes; 1 x not a file of an image dataset"):
        convert_images(src, tmp_path / "out2")


def test_cifar100_takes_its_fine_labels_or_the_coarse_ones_named(tmp_path: Path):
    images = small_photos(6, 32)
    fine, coarse = [5, 99, 0, 42, 7, 1], [1, 19, 0, 3, 1, 0]
    src = tmp_path / "cifar-100-python"
    src.mkdir()
    for name, part in (("train", slice(0, 4)), ("test", slice(4, 6))):
        (src / name).write_bytes(py2_pickle({"fine_labels": fine[part], "coarse_labels": coarse[part],
                                             "data": cifar_rows(images[part])}))
    fine_names = [f"fine{i:02d}" for i in range(100)]
    (src / "meta").write_bytes(py2_pickle({"fine_label_names": fine_names,
                                           "coarse_label_names": [f"coarse{i:02d}" for i in range(20)]}))
    m = convert_images(src, tmp_path / "fine").manifest
    assert m.classes == tuple(fine_names) and not m.rejected
    assert {s: y for s, (y, _) in converted_pixels(tmp_path / "fine", "train").items()} == {
        f"train#{i}": fine[i] for i in range(4)}
    m = convert_images(src, tmp_path / "coarse", label_field="coarse_labels").manifest
    assert len(m.classes) == 20 and m.classes[19] == "coarse19"
    assert {s: y for s, (y, _) in converted_pixels(tmp_path / "coarse", "test").items()} == {"test#0": 1, "test#1": 0}
    with pytest.raises(ConvertError, match=r"2 x no class names 'superclasses_names' for label field "
                                           r"'superclasses' \(names held: coarse_label_names, fine_label_names\)"):
        convert_images(src, tmp_path / "bad", label_field="superclasses")


def write_mnist(folder: Path, images: np.ndarray, labels: np.ndarray, *, prefix: str = "", test: int = 3,
                gz: bool = True, plain: bool = True) -> Path:
    """torchvision's `MNIST/raw/`: each file unpacked, and its `.gz` beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    n = len(images) - test
    for stem, part in ((f"{prefix}train", slice(0, n)), (f"{prefix}t10k" if not prefix else f"{prefix}test",
                                                        slice(n, None))):
        for what, data in (("images-idx3", idx(images[part])), ("labels-idx1", idx(labels[part]))):
            if plain:
                (folder / f"{stem}-{what}-ubyte").write_bytes(data)
            if gz:
                (folder / f"{stem}-{what}-ubyte.gz").write_bytes(gzip.compress(data))
    return folder


def test_mnist_as_torchvision_keeps_it_converts_each_file_once(tmp_path: Path):
    images = small_photos(9, 28, "L")
    labels = np.array([5, 0, 4, 1, 9, 2, 1, 3, 1], np.uint8)
    src = write_mnist(tmp_path / "MNIST" / "raw", images, labels)
    assert IMAGES.detect(src)
    from converters.images.array_kinds import has_array_files

    (tmp_path / "MNIST" / "raw" / "zz.png").write_bytes(b"")  # an image among the first files: a folder of images
    assert not has_array_files(src, limit=100)
    (tmp_path / "MNIST" / "raw" / "zz.png").unlink()
    labels_only = tmp_path / "labels-only"
    labels_only.mkdir()
    (labels_only / "train-labels-idx1-ubyte").write_bytes(idx(labels))
    assert not has_array_files(labels_only, limit=100)
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 6, "test": 3}
    assert not m.rejected
    assert m.classes == tuple(str(i) for i in range(10))  # ids 0 ... the largest, as a labels CSV's
    got = converted_pixels(tmp_path / "out", "test")
    assert sorted(got) == ["t10k-images-idx3-ubyte#0", "t10k-images-idx3-ubyte#1", "t10k-images-idx3-ubyte#2"]
    for i in range(3):
        label, pixels = got[f"t10k-images-idx3-ubyte#{i}"]
        assert label == labels[6 + i]
        assert np.abs(pixels.mean(axis=2) - images[6 + i]).mean() < 4


def test_gzip_files_alone_and_emnist_turned_back(tmp_path: Path):
    images = small_photos(5, 28, "L")
    labels = np.array([1, 2, 3, 4, 5], np.uint8)
    src = write_mnist(tmp_path / "EMNIST" / "raw", images.transpose(0, 2, 1), labels, prefix="emnist-letters-",
                      test=2, plain=False)
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 3, "test": 2}
    got = converted_pixels(tmp_path / "out", "train")
    label, pixels = got["emnist-letters-train-images-idx3-ubyte.gz#2"]
    assert label == 3
    assert np.abs(pixels.mean(axis=2) - images[2]).mean() < 4  # stored transposed, read upright


def test_damaged_idx_files_keep_their_whole_images_and_say_what_is_wrong(tmp_path: Path):
    images = small_photos(6, 28, "L")
    labels = np.array([1, 2, 3, 4, 5, 6], np.uint8)
    src = write_mnist(tmp_path / "raw", images, labels, gz=False)
    train = src / "train-images-idx3-ubyte"
    train.write_bytes(train.read_bytes()[:-100])  # its last image cut short
    (src / "t10k-labels-idx1-ubyte").write_bytes(idx(labels[:2]))
    m = convert_images(src, tmp_path / "out").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("t10k-images-idx3-ubyte", "3 images and 2 labels in t10k-labels-idx1-ubyte"),
        ("train-images-idx3-ubyte#2", "the file is cut short: 2 of 3 images are whole")]
    assert m.splits["train"].samples == 2
    (src / "t10k-labels-idx1-ubyte").unlink()
    train.write_bytes(b"\x00\x00\x09\x03" + train.read_bytes()[4:])
    with pytest.raises(ConvertError, match=r"1 x no labels file beside it \(t10k-labels-idx1-ubyte\); --unlabeled "
                                           r"converts it without labels; 1 x not an IDX file of 3-dimensional "
                                           r"unsigned bytes: it starts 00 00 09 03, not 00 00 08 03\)$"):
        convert_images(src, tmp_path / "out2")
    (src / "train-images-idx3-ubyte").unlink()
    m = convert_images(src, tmp_path / "out3", unlabeled=True).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("train-labels-idx1-ubyte", "labels without their images file (train-images-idx3-ubyte)")]
    assert m.splits["test"].samples == 3 and m.classes == ()


@pytest.mark.parametrize("head, reason", [
    (b"", "not an IDX file of 3-dimensional unsigned bytes: it starts nothing, not 00 00 08 03"),
    (b"\x00\x00", "not an IDX file of 3-dimensional unsigned bytes: it starts 00 00, not 00 00 08 03"),
    (b"\x00\x00\x08\x03", "the file is cut short inside its header"),
    (idx(np.zeros((1, 0, 28), np.uint8)), "images of 0 x 28 pixels: not what an IDX dataset holds"),
    (idx(np.zeros((1, 28, 0), np.uint8)), "images of 28 x 0 pixels: not what an IDX dataset holds"),
    (gzip.compress(idx(np.zeros((3, 28, 28), np.uint8)), mtime=0)[:-12],
     "unreadable: EOFError: Compressed file ended before the end-of-stream marker was reached"),
    (b"\x00\x00\x08\x03\x00\x00", "the file is cut short inside its header"),
    (idx(np.zeros((1, 28, 5000), np.uint8))[:16], "images of 28 x 5000 pixels: not what an IDX dataset holds"),
    (b"\x00\x00\x08\x03" + struct.pack(">3I", 1 << 20, 4096, 4096),
     "its header gives 1048576 items of 16777216 bytes, more than 2147483648 bytes"),
])
def test_idx_headers_that_promise_what_no_dataset_holds_are_refused_before_reading(tmp_path: Path, head: bytes,
                                                                                     reason: str):
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(head)
    with pytest.raises(TableError) as exc:
        read_idx(path, 3)
    assert str(exc.value) == reason


def test_a_second_dataset_in_the_tree_is_rejected_and_the_cli_detects_the_first(tmp_path: Path, capsys):
    root = tmp_path / "data"
    write_mnist(root / "FashionMNIST" / "raw", small_photos(5, 28, "L"), np.arange(5, dtype=np.uint8), test=2, gz=False)
    write_mnist(root / "MNIST" / "raw", small_photos(5, 28, "L"), np.arange(5, dtype=np.uint8), test=2, gz=False)
    assert cli(["convert", str(root), str(tmp_path / "out"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "out")
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 3, "test": 2}
    second = "a second dataset: the first is in FashionMNIST/raw; convert each folder apart"
    assert sorted((r["split"], r["source"], r["reason"]) for r in m.rejected) == [
        ("test", "MNIST/raw/t10k-images-idx3-ubyte", second), ("test", "MNIST/raw/t10k-labels-idx1-ubyte", second),
        ("train", "MNIST/raw/train-images-idx3-ubyte", second), ("train", "MNIST/raw/train-labels-idx1-ubyte", second)]
    top = tmp_path / "top"
    write_mnist(top, small_photos(3, 28, "L"), np.arange(3, dtype=np.uint8), test=1, gz=False)
    write_mnist(top / "more", small_photos(3, 28, "L"), np.arange(3, dtype=np.uint8), test=1, gz=False)
    m = convert_images(top, tmp_path / "out2").manifest
    assert {r["reason"] for r in m.rejected} == {"a second dataset: the first is in .; convert each folder apart"}


def test_detection_reads_pickles_named_as_batches_and_nothing_else(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train").write_text("a text file named train\n")
    (src / "test").write_bytes(b"\x80")
    assert not IMAGES.detect(src)
    (src / "test").write_bytes(py2_pickle({"data": cifar_rows(small_photos(1, 32)), "labels": [0]}))
    assert IMAGES.detect(src)
    (src / "a.jpg").write_bytes((PHOTOS / "apple.jpg").read_bytes())
    assert IMAGES.detect(src)  # an image folder, read as one
    with pytest.raises(Exception, match="--image-field names the image column of a table"):
        from converters.images.array_files import discover_array_files
        from converters.images.table_columns import TableOptions

        discover_array_files(src, TableOptions(image_field="img"))


def test_classes_named_by_a_file_and_the_labels_of_a_fashion_mnist_kept(tmp_path: Path):
    names = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
    (tmp_path / "classes.txt").write_text("\n".join(names) + "\n")
    src = write_mnist(tmp_path / "FashionMNIST" / "raw", small_photos(5, 28, "L"), np.array([9, 0, 0, 3, 8], np.uint8),
                      test=2)
    m = convert_images(src, tmp_path / "out", classes=str(tmp_path / "classes.txt")).manifest
    assert m.classes == tuple(names)
    assert {s: y for s, (y, _) in converted_pixels(tmp_path / "out", "test").items()} == {
        "t10k-images-idx3-ubyte#0": 3, "t10k-images-idx3-ubyte#1": 8}


def test_unlabeled_cifar_and_a_label_field_idx_files_do_not_have(tmp_path: Path):
    src = write_cifar10(tmp_path / "cifar", small_photos(6, 32), [0, 1, 2, 3, 4, 5], test=2)
    m = convert_images(src, tmp_path / "out", unlabeled=True).manifest
    assert m.classes == () and m.splits["train"].samples == 4
    assert {y for y, _ in converted_pixels(tmp_path / "out", "train").values()} == {None}  # no label, no cls member
    mnist = write_mnist(tmp_path / "raw", small_photos(5, 28, "L"), np.arange(5, dtype=np.uint8), test=2, gz=False)
    with pytest.raises(ConvertError, match=r"2 x --label-field names a field of CIFAR batches; an IDX file has one "
                                           r"label an image"):
        convert_images(mnist, tmp_path / "out2", label_field="labels")


def test_cifar_in_parts_makes_the_shards_one_run_makes(tmp_path: Path):
    from converters.assemble import merge

    src = write_cifar10(tmp_path / "cifar", small_photos(10, 32), [i % 10 for i in range(10)], test=2)
    whole = convert_images(src, tmp_path / "whole", samples_per_shard=2).manifest
    for part in (0, 1):
        convert_images(src, tmp_path / "parts", samples_per_shard=2, num_parts=2, part=part)
    merged = merge(tmp_path / "parts")
    assert {s: [sh.sha256 for sh in merged.split(s).shards] for s in merged.splits} == {
        s: [sh.sha256 for sh in whole.split(s).shards] for s in whole.splits}
    assert whole.splits["train"].samples == 8


def test_kaggles_copy_of_mnist_names_its_files_with_a_dot(tmp_path: Path):
    """Kaggle's MNIST: `train-images.idx3-ubyte` beside `train-labels.idx1-ubyte`."""
    images, labels = small_photos(4, 28, "L"), np.array([3, 1, 4, 1], np.uint8)
    src = tmp_path / "mnist"
    src.mkdir()
    for stem, part in (("train", slice(0, 3)), ("t10k", slice(3, 4))):
        (src / f"{stem}-images.idx3-ubyte").write_bytes(idx(images[part]))
        (src / f"{stem}-labels.idx1-ubyte").write_bytes(idx(labels[part]))
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 3, "test": 1} and not m.rejected
    assert converted_pixels(tmp_path / "out", "test")["t10k-images.idx3-ubyte#0"][0] == 1


def test_idx_images_of_any_shape_and_count_are_read_as_the_header_gives_them(tmp_path: Path):
    path = tmp_path / "train-images-idx3-ubyte"
    odd = np.arange(2 * 3 * 5, dtype=np.uint8).reshape(2, 3, 5)  # not square
    path.write_bytes(idx(odd) + b"\xff" * 15)  # and bytes after the last image
    images, count = read_idx(path, 3)
    np.testing.assert_array_equal(images, odd)
    assert count == 2
    path.write_bytes(idx(np.full((4, 1, 1), 7, np.uint8)))  # one pixel a side
    assert read_idx(path, 3)[0].shape == (4, 1, 1)
    path.write_bytes(b"\x00\x00\x08\x03" + struct.pack(">3I", 1 << 23, 16, 16))  # 2 GiB exactly: not refused
    images, count = read_idx(path, 3)
    assert images.shape == (0, 16, 16) and count == 1 << 23


def test_pickles_that_are_no_cifar_batch_and_files_that_are_no_pickle(tmp_path: Path):
    src = write_cifar10(tmp_path / "cifar", small_photos(4, 32), [1, 2, 3, 4], test=2)
    (src / "extra.pkl").write_bytes(py2_pickle({"data": cifar_rows(small_photos(1, 32)), "labels": [0]}))
    m = convert_images(src, tmp_path / "out").manifest
    assert sorted(r["source"] for r in m.rejected) == ["extra.pkl", "readme.html"]
    assert m.extra["layout"] == "arrays"
    assert not cifar.is_pickle(tmp_path / "missing") and not cifar.is_pickle(src)
    big = tmp_path / "data_batch_9"
    with open(big, "wb") as f:
        f.truncate(cifar.MAX_FILE + 1)  # sparse: nothing is written
    with pytest.raises(TableError) as exc:
        cifar.load(big)
    assert str(exc.value) == "a file of 1073741825 bytes, more than a CIFAR file has (1073741824)"


def test_batches_pickled_by_python_3_with_byte_keys_and_what_a_label_field_lacks(tmp_path: Path):
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps({b"data": cifar_rows(small_photos(2, 32)), b"labels": [3, 4]}, protocol=2))
    assert cifar.read_batch(path, "labels").labels == [3, 4]
    path.write_bytes(pickle.dumps({"data": cifar_rows(small_photos(1, 32)), "fine_labels": [1], "coarse_labels": [0],
                                   "label_names": ["a"]}))
    with pytest.raises(TableError) as exc:
        cifar.read_batch(path, "labels")
    assert str(exc.value) == "no label field 'labels' (label fields: coarse_labels, fine_labels); name it with " \
                             "--label-field"
    path.write_bytes(pickle.dumps({"data": cifar_rows(small_photos(1, 32))}))
    with pytest.raises(TableError, match=r"\(label fields: none\)"):
        cifar.read_batch(path, "labels")
    meta = tmp_path / "batches.meta"
    for held, reason in (({"label_names": []}, "no class names 'label_names' for label field 'labels' (names held: "
                                                "label_names)"),
                         ({"num_vis": 3072}, "no class names 'label_names' for label field 'labels' (names held: "
                                             "none)"),
                         ({"label_names": ["a", 2]}, "no class names 'label_names' for label field 'labels' (names "
                                                     "held: label_names)")):
        meta.write_bytes(py2_pickle(held))
        with pytest.raises(TableError) as exc:
            cifar.class_names(meta, None)
        assert str(exc.value) == reason


def test_a_batch_naming_numpy_core_loads_without_numpys_deprecation(tmp_path: Path):
    import warnings

    path = tmp_path / "data_batch_1"
    path.write_bytes(py2_pickle({"labels": [1], "data": cifar_rows(small_photos(1, 32))}))
    assert b"cnumpy.core.multiarray\n" in path.read_bytes()  # as the real files name it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cifar.read_batch(path, "labels").labels == [1]


def test_a_linked_batch_is_followed_unless_told_not_to(tmp_path: Path):
    src = write_cifar10(tmp_path / "cifar", small_photos(6, 32), [0, 1, 2, 3, 4, 5], test=2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (src / "data_batch_2").rename(elsewhere / "data_batch_2")
    (src / "data_batch_2").symlink_to(elsewhere / "data_batch_2")
    assert convert_images(src, tmp_path / "out").manifest.splits["train"].samples == 4
    from converters.images.array_files import discover_array_files
    from converters.images.table_columns import TableOptions

    found = discover_array_files(src, TableOptions(), follow_symlinks=False)
    assert sum(len(v) for v in found.splits.values()) == 4  # data_batch_1 and test_batch
    assert [r.source for r in found.rejected] == ["data_batch_2", "readme.html"]


def idx_int(values: np.ndarray) -> bytes:
    """An IDX file of big-endian 32-bit integers (type 0x0C): QMNIST's labels."""
    return (bytes([0, 0, 0x0C, values.ndim]) + struct.pack(f">{values.ndim}I", *values.shape)
            + values.astype(">i4").tobytes())


def qmnist_labels(classes: list[int]) -> np.ndarray:
    """QMNIST's N x 8 labels: the class, then NIST's series, writer, index, class code, global index, duplicate flag
    and an unused zero (the writer ids run past 255, so a byte-per-label reader would see other classes)."""
    n = len(classes)
    return np.stack([np.array(classes), np.full(n, 4), 2100 + np.arange(n), np.arange(n) % 7,
                     np.array(classes) + 48, 300000 + np.arange(n), np.zeros(n), np.zeros(n)], axis=1).astype(np.int32)


def write_qmnist(folder: Path, images: np.ndarray, classes: list[int], *, test: int, gz: bool = True) -> Path:
    """torchvision's `QMNIST/raw/`: each file unpacked, and its `.gz` beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    labels = qmnist_labels(classes)
    n = len(images) - test
    for stem, part in (("qmnist-train", slice(0, n)), ("qmnist-test", slice(n, None))):
        for name, data in ((f"{stem}-images-idx3-ubyte", idx(images[part])),
                           (f"{stem}-labels-idx2-int", idx_int(labels[part]))):
            (folder / name).write_bytes(data)
            if gz:
                (folder / f"{name}.gz").write_bytes(gzip.compress(data))
    return folder


def test_qmnist_as_torchvision_keeps_it_converts_with_torchvisions_targets(tmp_path: Path):
    torchvision = pytest.importorskip("torchvision")
    images = small_photos(10, 28, "L")
    classes = [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    src = write_qmnist(tmp_path / "QMNIST" / "raw", images, classes, test=4)
    assert IMAGES.detect(src)
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 6, "test": 4}
    assert not m.rejected  # the .gz copies beside the unpacked files are left, not rejected
    assert m.classes == tuple(str(i) for i in range(10))
    got = {**converted_pixels(tmp_path / "out", "train"), **converted_pixels(tmp_path / "out", "test")}
    for what, stem, first in (("train", "qmnist-train", 0), ("test", "qmnist-test", 6)):
        theirs = torchvision.datasets.QMNIST(str(tmp_path), what=what, download=False)  # compat: the class
        assert len(theirs) == len(images[first:first + 6 if what == "train" else None])
        for i in range(len(theirs)):
            image, target = theirs[i]
            label, pixels = got[f"{stem}-images-idx3-ubyte#{i}"]
            assert label == target == classes[first + i]
            assert np.abs(pixels.mean(axis=2) - np.asarray(image, np.float32)).mean() < 4


def test_nist_digits_as_xz_convert_alone_and_are_refused_beside_qmnist(tmp_path: Path):
    images = small_photos(5, 28, "L")
    labels = qmnist_labels([3, 1, 4, 1, 5])
    nist = tmp_path / "nist"
    nist.mkdir()
    for name, data in (("xnist-images-idx3-ubyte", idx(images)), ("xnist-labels-idx2-int", idx_int(labels))):
        (nist / f"{name}.xz").write_bytes(lzma.compress(data))
    assert IMAGES.detect(nist)
    m = convert_images(nist, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 5} and not m.rejected  # --split's, train
    assert [y for _, (y, _) in sorted(converted_pixels(tmp_path / "out", "train").items())] == [3, 1, 4, 1, 5]
    write_qmnist(nist, images, [3, 1, 4, 1, 5], test=2, gz=False)
    m = convert_images(nist, tmp_path / "out2").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 3, "test": 2}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("xnist-images-idx3-ubyte.xz", "NIST's digits, QMNIST's train and test images among them: beside QMNIST's "
                                       "files they would be converted twice; convert this pair from a folder of its "
                                       "own")]


def test_a_labels_file_cut_short_records_each_image_it_leaves_without_a_label(tmp_path: Path):
    images = small_photos(6, 28, "L")
    src = write_mnist(tmp_path / "raw", images, np.array([1, 2, 3, 4, 5, 6], np.uint8), test=2, gz=False)
    labels = src / "train-labels-idx1-ubyte"
    labels.write_bytes(labels.read_bytes()[:-1])  # its header still promises 4 labels
    m = convert_images(src, tmp_path / "out").manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("train-images-idx3-ubyte#3", "the labels file is cut short: 3 labels for 4 whole images")]
    assert m.splits["train"].samples == 3
    q = write_qmnist(tmp_path / "q", images, [1, 2, 3, 4, 5, 6], test=2, gz=False)
    qlabels = q / "qmnist-train-labels-idx2-int"
    qlabels.write_bytes(qlabels.read_bytes()[:-5])  # the last label's class whole, its row not: no label
    m = convert_images(q, tmp_path / "out2").manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("qmnist-train-images-idx3-ubyte#3", "the labels file is cut short: 3 labels for 4 whole images")]


@pytest.mark.parametrize("body, reason", [
    (idx(np.zeros((3, 8), np.uint8)),
     "not an IDX file of 2-dimensional 32-bit integers: it starts 00 00 08 02, not 00 00 0c 02"),
    (idx_int(np.zeros((3, 0), np.int32)), "labels of 0 values each: not what an IDX dataset holds"),
    (idx_int(np.zeros((3, 65), np.int32)), "labels of 65 values each: not what an IDX dataset holds"),
    (lzma.compress(idx_int(qmnist_labels([1, 2, 3])))[:40],
     "unreadable: EOFError: Compressed file ended before the end-of-stream marker was reached"),
    (lzma.compress(idx_int(qmnist_labels([1, 2, 3])))[:20] + b"\0" * 40, "unreadable: LZMAError: Corrupt input data"),
])
def test_qmnist_labels_files_that_are_none_are_refused(tmp_path: Path, body: bytes, reason: str):
    src = tmp_path / "raw"
    src.mkdir()
    (src / "qmnist-train-images-idx3-ubyte").write_bytes(idx(small_photos(3, 28, "L")))
    (src / "qmnist-train-labels-idx2-int.xz").write_bytes(body)
    with pytest.raises(ConvertError, match=re.escape(f"1 x {reason}")):
        convert_images(src, tmp_path / "out")


def test_idx_names_read_as_the_files_torchvision_downloads():
    from converters.images.idx_files import idx_name

    assert idx_name("qmnist-test-labels-idx2-int.gz") == Idx("qmnist-test", False, ".gz", "-", True)
    assert idx_name("xnist-images-idx3-ubyte.XZ") == Idx("xnist", True, ".xz")
    assert idx_name("train-labels.idx1-ubyte") == Idx("train", False, "", ".")
    for name in ("train-labels-idx2-ubyte", "train-images-idx3-int", "train-labels-idx1-int", "train-images-idx1-ubyte",
                 "train-labels-idx3-ubyte", "qmnist-train-labels-idx2-int.bz2", "train-images-idx3-ubyte.gz.part"):
        assert idx_name(name) is None, name
    p = Path("/d/qmnist-train-images-idx3-ubyte.gz")
    assert [q.name for q in Idx("qmnist-train", True, ".gz").partner(p)] == [
        "qmnist-train-labels-idx1-ubyte", "qmnist-train-labels-idx1-ubyte.gz", "qmnist-train-labels-idx1-ubyte.xz",
        "qmnist-train-labels-idx2-int", "qmnist-train-labels-idx2-int.gz", "qmnist-train-labels-idx2-int.xz"]


def test_integer_labels_of_any_width_up_to_the_bound_are_read_as_the_header_gives_them(tmp_path: Path):
    from converters.images.idx_files import INT, MAX_COLUMNS

    path = tmp_path / "x-labels-idx2-int"
    for values in (np.array([[-5], [7], [2**31 - 1]], np.int32), np.arange(2 * MAX_COLUMNS).reshape(2, MAX_COLUMNS)):
        path.write_bytes(idx_int(values) + b"\x01\x02")  # and bytes after the last label
        got, count = read_idx(path, 2, INT)
        np.testing.assert_array_equal(got, values)
        assert got.dtype == np.int32 and count == len(values)


def test_emnists_six_datasets_in_one_folder_convert_one_at_a_time(tmp_path: Path):
    """torchvision's `EMNIST` unpacks every split it downloads into `EMNIST/raw/` (balanced, byclass, bymerge,
    digits, letters, mnist: 47, 62, 47, 10, 26 and 10 classes): merged, they would be one wrong dataset."""
    raw = tmp_path / "EMNIST" / "raw"
    images = small_photos(5, 28, "L")
    write_mnist(raw, images.transpose(0, 2, 1), np.array([1, 2, 3, 4, 5], np.uint8), prefix="emnist-letters-", test=2)
    write_mnist(raw, images.transpose(0, 2, 1), np.array([0, 9, 8, 7, 6], np.uint8), prefix="emnist-digits-", test=2)
    m = convert_images(raw, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 3, "test": 2}
    assert m.classes == tuple(str(i) for i in range(10))  # emnist-digits, the first by name
    second = ("a second dataset: emnist-digits-test-images-idx3-ubyte's is the one converted from this folder; "
              "convert each from a folder of its own (links to its files will do)")
    assert {r["reason"] for r in m.rejected} == {second}
    assert sorted(r["source"] for r in m.rejected) == sorted(
        p.name for p in raw.iterdir() if p.name.startswith("emnist-letters-"))
    letters = tmp_path / "letters"  # what the rejection says to do
    letters.mkdir()
    for p in raw.glob("emnist-letters-*"):
        (letters / p.name).symlink_to(p)
    assert convert_images(letters, tmp_path / "out2").manifest.classes == tuple(str(i) for i in range(6))
