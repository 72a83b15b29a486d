"""SVHN's MATLAB files (`train_32x32.mat`, `test_32x32.mat`, `extra_32x32.mat`) and STL-10's binary files
(`stl10_binary/`) convert (converters/images/svhn.py, stl10.py, array_files.py); before, `fastdata convert` could
not tell what either folder held. The MATLAB files are written by scipy's `savemat`, as MATLAB writes them; the STL-10
files byte by byte from the format. The expected pixels are worked out as torchvision's `SVHN` and `STL10` read
them. Images: the real photos, made small."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import convert_images, converted_pixels, small_photos
from scipy.io import loadmat, savemat

from converters.images import KIND as IMAGES
from fastdata.cli import main as cli
from fastdata.errors import ConvertError

STL_NAMES = ["airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck"]


def svhn_file(path: Path, images: np.ndarray, labels: list[int] | None, **more: object) -> Path:
    """A MATLAB file as SVHN's: `X` [rows, columns, channels, N], `y` [N, 1] with the digit 0 written as 10."""
    held = {"X": np.ascontiguousarray(images.transpose(1, 2, 3, 0)), **more}
    if labels is not None:
        held["y"] = np.array(labels, np.uint8).reshape(-1, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    savemat(path, held)
    return path


def torchvision_svhn(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """What torchvision's `SVHN` reads from a file: its images [N, 3, 32, 32] and labels, 10 read as 0."""
    held = loadmat(path)
    labels = held["y"].astype(np.int64).squeeze()
    np.place(labels, labels == 10, 0)
    return np.transpose(held["X"], (3, 2, 0, 1)), labels


def test_svhn_converts_its_digits_0_to_9_with_extra_in_the_default_split(tmp_path: Path):
    images = small_photos(14, 32)
    digits = [10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3, 1, 2]  # as SVHN writes them
    src = tmp_path / "svhn"
    svhn_file(src / "train_32x32.mat", images[:6], digits[:6])
    svhn_file(src / "test_32x32.mat", images[6:10], digits[6:10])
    svhn_file(src / "extra_32x32.mat", images[10:], digits[10:])
    (src / "svhn_readme.txt").write_text("format 2")
    assert IMAGES.detect(src)
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == tuple("0123456789")
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 10, "test": 4}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("svhn_readme.txt", "not a file of an image dataset kept as arrays (this source is read as the files of "
                            "torchvision's CIFAR, MNIST, SVHN, STL-10 or PCAM datasets, NumPy .npz files, "
                            "or Kaggle's tables of pixels)")]
    got = {**converted_pixels(tmp_path / "out", "train"), **converted_pixels(tmp_path / "out", "test")}
    where = [f"train_32x32.mat#{i}" for i in range(6)] + [f"test_32x32.mat#{i}" for i in range(4)] + [
        f"extra_32x32.mat#{i}" for i in range(4)]
    assert sorted(got) == sorted(where)
    theirs = {}
    for name in ("train", "test", "extra"):
        chw, labels = torchvision_svhn(src / f"{name}_32x32.mat")
        theirs.update({f"{name}_32x32.mat#{i}": (y, x) for i, (y, x) in enumerate(zip(labels, chw))})
    for i, source in enumerate(where):
        label, pixels = got[source]
        assert label == digits[i] % 10 == theirs[source][0]
        assert np.abs(pixels - images[i]).mean() < 10  # JPEG at quality 90, chroma halved
        assert np.abs(pixels - theirs[source][1].transpose(1, 2, 0)).mean() < 10
        assert np.abs(pixels - images[i].transpose(1, 0, 2)).mean() > 20  # rows read as columns


def test_a_grey_matlab_file_with_labels_as_doubles_converts_and_split_comes_from_the_name(tmp_path: Path):
    images = small_photos(4, 28, "L")[..., None]
    src = tmp_path / "digits"
    svhn_file(src / "notmnist_test.mat", images, None, y=np.array([[1.0], [2.0], [2.5], [1.0]]))
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"test": 3}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [("notmnist_test.mat#2", "no label (null in field 'y')")]
    got = converted_pixels(tmp_path / "out", "test", "L")
    assert got["notmnist_test.mat#1"][0] == 2
    svhn_file(src / "notmnist_test.mat", images, [0, 10, 3, 10])  # eleven classes 0 ... 10: its 10 is no digit 0
    convert_images(src, tmp_path / "out2")
    got = converted_pixels(tmp_path / "out2", "test", "L")
    assert [got[f"notmnist_test.mat#{i}"][0] for i in range(4)] == [0, 10, 3, 10]
    svhn_file(src / "notmnist_test.mat", images, [1, 10, 12, 10])  # from 1, past 10: not SVHN's digits either
    convert_images(src, tmp_path / "out3")
    got = converted_pixels(tmp_path / "out3", "test", "L")
    assert [got[f"notmnist_test.mat#{i}"][0] for i in range(4)] == [1, 10, 12, 10]
    assert np.abs(got["notmnist_test.mat#3"][1] - images[3, :, :, 0]).mean() < 6


@pytest.mark.parametrize("held, reason", [
    ({"X": np.zeros((32, 32, 3, 2), np.float32), "y": np.ones((2, 1))},
     "no images: 'X' is no uint8 array of [rows, columns, 1 or 3 channels, images] (float32 [32, 32, 3, 2])"),
    ({"X": np.zeros((32, 32, 2, 2), np.uint8), "y": np.ones((2, 1))},
     "no images: 'X' is no uint8 array of [rows, columns, 1 or 3 channels, images] (uint8 [32, 32, 2, 2])"),
    ({"images": np.zeros((32, 32, 3, 2), np.uint8)}, "no images: 'X' is no uint8 array of [rows, columns, 1 or 3 "
                                                     "channels, images] (NoneType)"),
    ({"X": np.zeros((0, 32, 3, 2), np.uint8), "y": np.ones((2, 1))},
     "no images: 'X' is no uint8 array of [rows, columns, 1 or 3 channels, images] (uint8 [0, 32, 3, 2])"),
    ({"X": np.zeros((32, 0, 3, 2), np.uint8), "y": np.ones((2, 1))},
     "no images: 'X' is no uint8 array of [rows, columns, 1 or 3 channels, images] (uint8 [32, 0, 3, 2])"),
    ({"X": np.zeros((32, 32, 3, 2), np.uint8), "y": np.ones((3, 1))}, "2 images and 3 labels in 'y'"),
    ({"X": np.zeros((32, 32, 3, 2), np.uint8), "y": "ab"}, "'y' is no array of numbers (<U2 array)"),
    ({"X": np.zeros((32, 32, 3, 2), np.uint8)}, "no labels: the file holds no 'y'; --unlabeled converts it without "
                                                "labels"),
])
def test_a_matlab_file_that_is_not_what_svhn_holds_is_rejected_saying_what_it_lacks(tmp_path: Path, held: dict,
                                                                                    reason: str):
    src = tmp_path / "svhn"
    svhn_file(src / "train_32x32.mat", small_photos(2, 32), [1, 2])
    savemat(src / "extra_32x32.mat", held)
    m = convert_images(src, tmp_path / "out").manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [("extra_32x32.mat", reason)]
    assert m.splits["train"].samples == 2


def test_matlab_7_3_and_broken_files_are_rejected_and_other_mat_files_are_no_dataset(tmp_path: Path):
    src = tmp_path / "svhn"
    good = svhn_file(src / "train_32x32.mat", small_photos(2, 32), [1, 2])
    head = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 ."
    (src / "test_32x32.mat").write_bytes(head.ljust(116) + b"\0" * 8 + b"\x00\x02IM" + b"\x89HDF\r\n" * 20)
    (src / "extra_32x32.mat").write_bytes(good.read_bytes()[:300])
    odd = bytearray(good.read_bytes())
    assert odd[144] == 9  # the first variable's class (9: uint8), in its array flags
    odd[144] = 0x20  # a class MATLAB has none of: scipy raised UnboundLocalError on it (found by make fuzz)
    (src / "more_32x32.mat").write_bytes(bytes(odd))
    m = convert_images(src, tmp_path / "out").manifest
    reasons = {r["source"]: r["reason"] for r in m.rejected}
    assert reasons["test_32x32.mat"] == ("a MATLAB 7.3 file (HDF5), which is not read: save it with -v7 (the "
                                         "datasets' own files are MATLAB 5)")
    assert reasons["extra_32x32.mat"] == "not a MATLAB 5 file: could not read bytes"
    assert reasons["more_32x32.mat"] == "not a MATLAB 5 file: local variable 'arr' referenced before assignment"
    assert m.splits["train"].samples == 2
    other = tmp_path / "other"
    other.mkdir()
    (other / "weights.mat").write_bytes(b"\x00" * 200)  # a .mat file that is no MATLAB 5 file
    assert not IMAGES.detect(other)
    (other / "weights.mat").write_bytes(good.read_bytes())
    assert IMAGES.detect(other)


def test_svhn_unlabeled_and_label_field(tmp_path: Path):
    src = tmp_path / "svhn"
    svhn_file(src / "test_32x32.mat", small_photos(3, 32), [1, 2, 10])
    m = convert_images(src, tmp_path / "out", unlabeled=True).manifest
    assert m.classes == () and m.splits["test"].samples == 3
    assert {y for y, _ in converted_pixels(tmp_path / "out", "test").values()} == {None}
    with pytest.raises(ConvertError, match=r"\(1 file\(s\) rejected: 1 x --label-field names a field of CIFAR "
                                           r"batches; a MATLAB file's labels are its 'y'\)$"):
        convert_images(src, tmp_path / "out2", label_field="coarse_labels")


def stl_bytes(images: np.ndarray) -> bytes:
    """STL-10's layout: each image's red plane, then its green, then its blue, each plane column after column."""
    return np.ascontiguousarray(images.transpose(0, 3, 2, 1)).tobytes()


def write_stl10(folder: Path, images: np.ndarray, labels: list[int], *, test: int = 2, unlabeled: int = 2) -> Path:
    """STL-10's folder: labels 1-10 as its files hold them; the last `unlabeled` images in unlabeled_X.bin."""
    folder.mkdir(parents=True, exist_ok=True)
    n = len(labels) - test
    (folder / "train_X.bin").write_bytes(stl_bytes(images[:n]))
    (folder / "train_y.bin").write_bytes(bytes(labels[:n]))
    (folder / "test_X.bin").write_bytes(stl_bytes(images[n:len(labels)]))
    (folder / "test_y.bin").write_bytes(bytes(labels[n:]))
    (folder / "unlabeled_X.bin").write_bytes(stl_bytes(images[len(labels):len(labels) + unlabeled]))
    (folder / "class_names.txt").write_bytes(("\r\n".join(STL_NAMES) + "\r\n\r\n").encode())  # a blank line at its end
    (folder / "fold_indices.txt").write_text("0 1 \n1 2 \n")
    return folder


def torchvision_stl10(data: bytes) -> np.ndarray:
    """What torchvision's `STL10` reads from an `_X.bin` file: images [N, 3, 96, 96]."""
    return np.transpose(np.frombuffer(data, np.uint8).reshape(-1, 3, 96, 96), (0, 1, 3, 2))


def test_stl10_converts_with_its_class_names_and_leaves_its_unlabeled_images_to_another_run(tmp_path: Path):
    images = small_photos(8, 96)
    labels = [1, 10, 3, 5, 2, 7]
    src = write_stl10(tmp_path / "stl10_binary", images, labels)
    assert IMAGES.detect(src)
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == tuple(STL_NAMES)  # class_names.txt's order, not sorted
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 4, "test": 2}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("unlabeled_X.bin", "no labels file beside it (unlabeled_y.bin); --unlabeled converts every file without "
                            "labels")]  # fold_indices.txt and class_names.txt are no rejection
    got = {**converted_pixels(tmp_path / "out", "train"), **converted_pixels(tmp_path / "out", "test")}
    where = [f"train_X.bin#{i}" for i in range(4)] + ["test_X.bin#0", "test_X.bin#1"]
    assert sorted(got) == sorted(where)
    theirs = np.concatenate([torchvision_stl10((src / f"{s}_X.bin").read_bytes()) for s in ("train", "test")])
    for i, source in enumerate(where):
        label, pixels = got[source]
        assert label == labels[i] - 1
        assert np.abs(pixels - images[i]).mean() < 8
        assert np.abs(pixels - theirs[i].transpose(1, 2, 0)).mean() < 8
        assert np.abs(pixels - images[i].transpose(1, 0, 2)).mean() > 20  # columns read as rows


def test_stl10_unlabeled_converts_every_file_with_the_unlabeled_images_in_train(tmp_path: Path):
    src = write_stl10(tmp_path / "stl10_binary", small_photos(7, 96), [1, 2, 3, 4], unlabeled=3)
    m = convert_images(src, tmp_path / "out", unlabeled=True).manifest
    assert m.classes == () and not m.rejected
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 5, "test": 2}
    assert {s for s in converted_pixels(tmp_path / "out", "train") if s.startswith("unlabeled")} == {
        "unlabeled_X.bin#0", "unlabeled_X.bin#1", "unlabeled_X.bin#2"}


def test_stl10_labels_that_are_no_class_a_cut_file_and_a_missing_partner_are_recorded(tmp_path: Path):
    images = small_photos(8, 96)
    src = write_stl10(tmp_path / "stl10_binary", images, [1, 0, 11, 10, 2, 3], unlabeled=0)
    (src / "unlabeled_X.bin").unlink()
    m = convert_images(src, tmp_path / "out").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("train_X.bin#1", "label 0 in train_y.bin is no class of class_names.txt (1-10)"),
        ("train_X.bin#2", "label 11 in train_y.bin is no class of class_names.txt (1-10)")]
    assert m.splits["train"].samples == 2
    (src / "train_X.bin").write_bytes(stl_bytes(images[:4])[:-100])  # the last image cut short
    (src / "test_y.bin").write_bytes(b"\x01\x02\x03")  # three labels, two images
    m = convert_images(src, tmp_path / "out2").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("test_X.bin", "2 images and 3 labels in test_y.bin"),
        ("train_X.bin#1", "label 0 in train_y.bin is no class of class_names.txt (1-10)"),
        ("train_X.bin#2", "label 11 in train_y.bin is no class of class_names.txt (1-10)"),
        ("train_X.bin#3", "the file is cut short: 3 whole images, then 27548 bytes")]
    assert m.splits["train"].samples == 1
    (src / "test_X.bin").unlink()
    (src / "train_y.bin").write_bytes(b"\x01\x02")  # fewer labels than whole images
    with pytest.raises(ConvertError, match=r"\(2 file\(s\) rejected: 1 x labels without their images file "
                                           r"\(test_X.bin\); 1 x 3 images and 2 labels in train_y.bin\)$"):
        convert_images(src, tmp_path / "out3")


@pytest.mark.parametrize("names, reason", [
    (None, "class_names.txt is unreadable: "),
    (b"", "class_names.txt names no class on a line of its own"),
    (b"airplane\n\nbird\n", "class_names.txt names no class on a line of its own"),
    (b"\xff\xfe", "class_names.txt is no UTF-8 text"),
    (b"x" * 70000, "class_names.txt is longer than 65536 bytes: not a list of class names"),
])
def test_stl10_without_class_names_is_rejected_saying_why(tmp_path: Path, names: bytes | None, reason: str):
    src = write_stl10(tmp_path / "stl10_binary", small_photos(4, 96), [1, 2, 3, 4], unlabeled=0)
    if names is None:
        (src / "class_names.txt").unlink()
    else:
        (src / "class_names.txt").write_bytes(names)
    with pytest.raises(ConvertError, match="holds no images input") as err:
        convert_images(src, tmp_path / "out")
    assert reason in str(err.value)


def test_a_file_named_as_stl10_images_but_shorter_than_one_is_no_dataset(tmp_path: Path):
    (tmp_path / "train_X.bin").write_bytes(b"\0" * (96 * 96 * 3 - 1))
    assert not IMAGES.detect(tmp_path)
    (tmp_path / "train_X.bin").write_bytes(b"\0" * 96 * 96 * 3)
    assert IMAGES.detect(tmp_path)


def test_one_svhn_or_stl10_file_given_as_the_source_is_told_to_convert_its_folder(tmp_path: Path, capsys):
    svhn = svhn_file(tmp_path / "svhn" / "test_32x32.mat", small_photos(1, 32), [1])
    stl = write_stl10(tmp_path / "stl", small_photos(2, 96), [1, 2], test=1, unlabeled=0) / "train_X.bin"
    for path, what in ((svhn, "a MATLAB file"), (stl, "an STL-10 file")):
        assert cli(["convert", str(path), str(tmp_path / "dst"), "--no-progress"]) != 0
        assert (f"{path} is {what}: images are converted from a folder, so convert the folder that holds it "
                f"(fastdata convert {path.parent} DST), or move it into a folder of its own") in capsys.readouterr().err


def test_stl10_is_read_in_chunks_and_a_file_cut_by_one_byte_keeps_its_whole_images(tmp_path: Path, monkeypatch):
    from converters.images import stl10

    monkeypatch.setattr(stl10, "CHUNK", 2)  # a chunk of two images: five images take three reads, the last short
    images = small_photos(7, 96)
    src = write_stl10(tmp_path / "stl10_binary", images, [1, 2, 3, 4, 5, 6, 7], test=2, unlabeled=0)
    (src / "unlabeled_X.bin").unlink()
    (src / "test_X.bin").write_bytes(stl_bytes(images[5:7]) + b"\0")  # one byte past the last whole image
    (src / "test_y.bin").write_bytes(bytes([6, 7, 8]))  # the labels of the images it held whole
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 5, "test": 2}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("test_X.bin#2", "the file is cut short: 2 whole images, then 1 bytes")]
    got = converted_pixels(tmp_path / "out", "train")
    assert np.abs(got["train_X.bin#4"][1] - images[4]).mean() < 8  # the one image of the last read
    (src / "train_X.bin").write_bytes(stl_bytes(images[:4]))  # exactly two chunks: nothing after them
    (src / "train_y.bin").write_bytes(bytes([1, 2, 3, 4]))
    assert convert_images(src, tmp_path / "out2").manifest.splits["train"].samples == 4


def test_class_names_of_exactly_the_largest_size_are_read_and_label_field_is_refused(tmp_path: Path):
    from converters.images.stl10 import MAX_NAMES

    src = write_stl10(tmp_path / "stl10_binary", small_photos(3, 96), [1, 2, 3], test=1, unlabeled=0)
    text = "\n".join(STL_NAMES) + "\n"
    (src / "class_names.txt").write_text(text + " " * (MAX_NAMES - len(text)))  # a last line of spaces: no name
    assert convert_images(src, tmp_path / "out").manifest.classes == tuple(STL_NAMES)
    with pytest.raises(ConvertError, match=r"rejected: 3 x --label-field names a field of CIFAR batches; STL-10's "
                                           r"labels are its _y.bin files\)$"):
        convert_images(src, tmp_path / "out2", label_field="labels")


def test_svhn_files_past_the_limits_are_refused_and_scipy_missing_says_how_to_install_it(tmp_path: Path,
                                                                                       monkeypatch):
    from converters.images import svhn
    from converters.table_files import TableError

    for shape, ok in (((4096, 1, 1, 1), True), ((1, 4096, 1, 1), True), ((4097, 1, 1, 1), False),
                      ((1, 4097, 1, 1), False)):
        path = tmp_path / f"side-{shape[0]}-{shape[1]}.mat"
        savemat(path, {"X": np.zeros(shape, np.uint8), "y": np.ones((1, 1))})
        if ok:
            assert svhn.read_digits(path, labelled=True).images.shape == (1, shape[0], shape[1], 1)
        else:
            with pytest.raises(TableError, match=r"^no images: 'X' is no uint8 array of \[rows, columns, 1 or 3 "
                                                 rf"channels, images\] \(uint8 \[{shape[0]}, {shape[1]}, 1, 1\]\)$"):
                svhn.read_digits(path, labelled=True)
    big = tmp_path / "big.mat"
    with open(big, "wb") as f:  # sparse: a header, then a hole up to the limit, and one byte past it
        f.write(b"MATLAB 5.0 MAT-file")
        f.truncate(svhn.MAX_FILE)
    with pytest.raises(TableError, match=r"^not a MATLAB 5 file: "):  # read (a file of the limit is no bigger)
        svhn.read_digits(big, labelled=True)
    os.truncate(big, svhn.MAX_FILE + 1)
    with pytest.raises(TableError, match=rf"^a file of {svhn.MAX_FILE + 1} bytes, more than an SVHN file has "
                                         rf"\({svhn.MAX_FILE}\)$"):
        svhn.read_digits(big, labelled=True)
    monkeypatch.setitem(sys.modules, "scipy.io", None)  # scipy not installed
    with pytest.raises(TableError, match=r"^MATLAB files are read with scipy: pip install 'fastdata\[nifti\]' \(or "
                                         r"pip install scipy\)$"):
        svhn.read_digits(tmp_path / "side-4096-1.mat", labelled=True)


def test_a_cifar_meta_file_given_as_the_source_is_told_to_convert_its_folder(tmp_path: Path, capsys):
    from test_convert_array_files import write_cifar10

    meta = write_cifar10(tmp_path / "cifar", small_photos(3, 32), [0, 1, 2], test=1) / "batches.meta"
    assert cli(["convert", str(meta), str(tmp_path / "dst"), "--no-progress"]) != 0
    assert f"{meta} is a CIFAR meta file: images are converted from a folder" in capsys.readouterr().err


def test_only_the_variables_asked_for_are_loaded_and_a_failure_says_what_scipy_said(tmp_path: Path, monkeypatch):
    import scipy.io

    from converters import mat_files
    from converters.images import svhn

    path = svhn_file(tmp_path / "train_32x32.mat", small_photos(2, 32), [1, 2], weights=np.zeros((64, 64)))
    held = mat_files.load_mat(path, ["X"], limit=1 << 20, what="a file")
    assert sorted(k for k in held if not k.startswith("__")) == ["X"]
    asked = []
    real = svhn.load_mat

    def spy(p, variables, **kw):
        asked.append(variables)
        return real(p, variables, **kw)

    monkeypatch.setattr(svhn, "load_mat", spy)
    assert svhn.read_digits(path, labelled=True).labels == [1, 2]
    assert asked == [["X", "y"]]
    for raised, reason in ((EOFError(), "EOFError"), (ValueError("v" * 300), "v" * 120)):
        def fail(*args, exc=raised, **kwargs):
            raise exc
        monkeypatch.setattr(scipy.io, "loadmat", fail)  # what the child answers (it reads in a process of its own)
        assert mat_files._answer(str(path), ["X"]) == ("bad", f"not a MATLAB 5 file: {reason}")
    monkeypatch.setattr(scipy.io, "loadmat", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):  # an error nobody expected is no damaged file
        mat_files._answer(str(path), ["X"])
    (tmp_path / "folder.mat").mkdir()  # unreadable as a file: no MATLAB file
    (tmp_path / "gone.mat").symlink_to(tmp_path / "nowhere.mat")
    assert mat_files.is_mat(path) and not mat_files.is_mat(tmp_path / "folder.mat")
    assert not mat_files.is_mat(tmp_path / "gone.mat")


def test_labels_that_are_none_of_them_class_ids_are_each_recorded(tmp_path: Path):
    from converters.images import svhn
    from converters.table_files import TableError

    path = svhn_file(tmp_path / "notmnist_test.mat", small_photos(2, 32), None, y=np.array([[2.5], [0.5]]))
    assert svhn.read_digits(path, labelled=True).labels == [None, None]  # no digits at all: no SVHN 10 to read as 0
    with pytest.raises(TableError, match=r"^'y' is no array of numbers \(str\)$"):
        svhn._labels("12", 2)


def test_an_stl10_file_that_cannot_be_read_is_said_or_no_dataset(tmp_path: Path):
    from converters.images import stl10
    from converters.table_files import TableError

    (tmp_path / "test_y.bin").mkdir()  # it has a size, and cannot be read as a file
    with pytest.raises(TableError, match=r"^test_y.bin is unreadable: \[Errno 21\] Is a directory"):
        stl10.labels(tmp_path / "test_y.bin", 1, 10, cut=True)
    other = tmp_path / "other"
    other.mkdir()
    (other / "train_X.bin").symlink_to(tmp_path / "nowhere.bin")
    assert not IMAGES.detect(other) and not stl10.is_images_file(other / "train_X.bin")


def test_a_reader_that_crashes_or_fails_unexpectedly_in_its_child_is_said_so(tmp_path: Path, monkeypatch):
    """scipy's reader segfaults on some damaged files (the fuzz's `lists` target, seed 80): it reads in a child, whose
    death by a signal refuses the file, and whose unexpected error is raised as one, not taken for a bad file."""
    from converters import mat_files
    from converters.table_files import TableError

    path = svhn_file(tmp_path / "train_32x32.mat", small_photos(1, 32), [1])
    monkeypatch.setattr(mat_files, "_CHILD", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    with pytest.raises(TableError, match=r"^not a MATLAB 5 file scipy can read: its reader crashed on it \(signal "
                                         r"11\)$"):
        mat_files.load_mat(path, ["X"], limit=1 << 20, what="a file")
    monkeypatch.setattr(mat_files, "_CHILD", "raise ZeroDivisionError('nobody expected')")
    with pytest.raises(RuntimeError, match=r"(?s)reading the MATLAB file .*train_32x32.mat failed: .*"
                                           r"ZeroDivisionError: nobody expected"):
        mat_files.load_mat(path, ["X"], limit=1 << 20, what="a file")
    monkeypatch.setattr(mat_files, "_CHILD", "import time\ntime.sleep(30)")
    monkeypatch.setattr(mat_files, "CHILD_TIMEOUT_S", 1)
    with pytest.raises(TableError, match=r"^not a MATLAB 5 file scipy can read: it read for more than 1 s$"):
        mat_files.load_mat(path, ["X"], limit=1 << 20, what="a file")
