"""Image datasets saved as NumPy `.npz` files convert as they lie (converters/images/npz_files.py): Keras' `mnist.npz`
(`x_train`, `y_train`, `x_test`, `y_test`) and MedMNIST's (`train_images`, `train_labels`, `val_*`, `test_*`;
ChestMNIST's 14 findings with `--multi-label`). Before, `fastdata convert` could not tell what such a file held. The
files are written by numpy itself (`np.savez`, `np.savez_compressed`) and read back by `np.load` as a second opinion;
the images are the real photos, made small."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers import class_lists, convert_images, converted_pixels, small_photos

from converters.images import KIND as IMAGES
from converters.images import npz_files
from converters.images.npz_files import Key, key_of
from fastdata.errors import ConvertError


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=True)
    return buf.getvalue()


def _zip(path: Path, members: dict[str, bytes], compress: int = zipfile.ZIP_STORED) -> Path:
    """An `.npz` file of `members` (name -> the bytes of a member, an .npy file or not), as np.savez lays it out."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=compress) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _all(out: Path) -> dict[str, tuple]:
    got: dict[str, tuple] = {}
    for split in ("train", "val", "test"):
        if (out / split).exists() or any(out.glob(f"{split}-*")):
            got.update(converted_pixels(out, split))
    return got


def test_keras_mnist_npz_converts_with_the_labels_and_pixels_np_load_reads(tmp_path: Path):
    src = tmp_path / "datasets"
    src.mkdir()
    images = small_photos(9, 28, "L")
    labels = np.array([5, 0, 4, 1, 9, 2, 1, 3, 1], np.uint8)
    np.savez(src / "mnist.npz", x_train=images[:6], y_train=labels[:6], x_test=images[6:], y_test=labels[6:])
    assert IMAGES.detect(src)
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 6, "test": 3}
    assert not m.rejected and m.extra["layout"] == "arrays"
    assert m.classes == tuple(str(i) for i in range(10))
    theirs = np.load(src / "mnist.npz", allow_pickle=False)
    got = {**converted_pixels(tmp_path / "out", "train"), **converted_pixels(tmp_path / "out", "test")}
    for split in ("train", "test"):
        for i, (image, y) in enumerate(zip(theirs[f"x_{split}"], theirs[f"y_{split}"], strict=True)):
            label, pixels = got[f"mnist.npz/x_{split}#{i}"]
            assert label == y
            assert np.abs(pixels.mean(axis=2) - image).mean() < 4


def test_medmnist_compressed_colour_images_in_three_splits(tmp_path: Path):
    src = tmp_path / "medmnist"
    src.mkdir()
    images = small_photos(10, 28)
    labels = np.array([[8], [0], [3], [3], [1], [7], [2], [6], [5], [4]], np.uint8)  # [N, 1], as MedMNIST's
    parts = {"train": slice(0, 6), "val": slice(6, 8), "test": slice(8, 10)}
    np.savez_compressed(src / "pathmnist.npz", **{f"{s}_images": images[p] for s, p in parts.items()},
                        **{f"{s}_labels": labels[p] for s, p in parts.items()})
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 6, "val": 2, "test": 2} and not m.rejected
    assert m.classes == tuple(str(i) for i in range(9))
    got = _all(tmp_path / "out")
    for split, part in parts.items():
        for i, n in enumerate(range(part.start, part.stop)):
            label, pixels = got[f"pathmnist.npz/{split}_images#{i}"]
            assert label == labels[n, 0]
            assert pixels.shape == (28, 28, 3)
            assert np.abs(pixels.astype(int) - images[n]).mean() < 12  # JPEG at 28 px, chroma halved


def test_chestmnist_flags_convert_with_multi_label_and_a_row_of_other_values_is_rejected(tmp_path: Path):
    src = tmp_path / "chest"
    src.mkdir()
    flags = np.zeros((5, 14), np.uint8)
    flags[0, [1, 12]] = 1  # no image has the last finding
    flags[2, 4] = 1
    flags[3, 5] = 2  # no flag
    np.savez_compressed(src / "chestmnist.npz", train_images=small_photos(5, 28, "L"), train_labels=flags)
    with pytest.raises(ConvertError, match=r"14 labels an image in 'train_labels', not one 1 a row \(one-hot\): flags "
                                           r"of several classes \(ChestMNIST's findings\) convert with --multi-label"):
        convert_images(src, tmp_path / "single")
    m = convert_images(src, tmp_path / "out", multi_label=True).manifest
    assert m.classes == tuple(str(i) for i in range(14))  # every column, those no image has too
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("chestmnist.npz/train_images#3", "its row of 'train_labels' holds values other than 0 and 1")]
    assert class_lists(tmp_path / "out") == {
        "chestmnist.npz/train_images#0": ("train", [1, 12]), "chestmnist.npz/train_images#1": ("train", []),
        "chestmnist.npz/train_images#2": ("train", [4]), "chestmnist.npz/train_images#4": ("train", [])}


def test_members_without_a_split_go_to_the_split_given_and_unlabeled_reads_no_labels(tmp_path: Path):
    src = tmp_path / "plain"
    src.mkdir()
    np.savez(src / "digits.npz", X=small_photos(3, 16, "L"), Y=np.array([2, 0, 1], np.int64))
    m = convert_images(src, tmp_path / "out", split="val").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"val": 3} and m.classes == ("0", "1", "2")
    assert {k: v[0] for k, v in converted_pixels(tmp_path / "out", "val").items()} == {
        "digits.npz/X#0": 2, "digits.npz/X#1": 0, "digits.npz/X#2": 1}
    np.savez(src / "digits.npz", images=small_photos(3, 16, "L"))
    with pytest.raises(ConvertError, match=r"no labels beside it \(labels\); --unlabeled converts it without labels"):
        convert_images(src, tmp_path / "out2")
    m = convert_images(src, tmp_path / "out3", unlabeled=True).manifest
    assert m.splits["train"].samples == 3 and m.classes == ()


def test_what_an_npz_file_holds_besides_its_images_is_recorded(tmp_path: Path):
    images = small_photos(4, 20, "L")
    src = tmp_path / "src"
    _zip(src / "data.npz", {"x_train.npy": _npy(images[:2]), "y_train.npy": _npy(np.array([1, 0])),
                            "y_test.npy": _npy(np.array([0])), "mean.npy": _npy(np.zeros(3)),
                            "x_holdout.npy": _npy(images[2:]), "README.txt": b"made by hand\n", "sub/": b""})
    m = convert_images(src, tmp_path / "out").manifest
    assert m.splits["train"].samples == 2
    assert sorted((r["split"], r["source"], r["reason"]) for r in m.rejected) == [
        ("test", "data.npz/y_test", "labels without their images (x_test)"),
        ("train", "data.npz/README.txt", "not an .npy array: not read"),
        ("train", "data.npz/mean", "not named as images (x, images, x_SPLIT, SPLIT_images) or their labels (y, "
                                   "labels, ...) are: not read"),
        ("train", "data.npz/x_holdout", "not named as images (x, images, x_SPLIT, SPLIT_images) or their labels (y, "
                                        "labels, ...) are: not read")]


def _header_only(shape: tuple[int, ...], dtype: str = "|u1") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


IMAGES4 = small_photos(4, 8, "L")


@pytest.mark.parametrize("images, labels, reason", [
    (_npy(IMAGES4.astype(np.float32)), _npy(np.arange(4)),
     "no images: 'x_train' holds floats (float32 [4, 8, 8]), not scaled by guess: save uint8 0 ... 255, "
     "`np.round(x * 255).astype(np.uint8)` for 0 ... 1"),
    (_npy(IMAGES4.astype(np.int16)), _npy(np.arange(4)),  # (whole numbers: no word of scaling)
     "no images: 'x_train' is no uint8 array of [images, rows, columns, 1 or 3 channels] (int16 [4, 8, 8])"),
    (_npy(IMAGES4.astype(np.uint16)), _npy(np.arange(4)),  # 16-bit grey (a scanner's): not cut to 8 bits by guess
     "no images: 'x_train' is no uint8 array of [images, rows, columns, 1 or 3 channels] (uint16 [4, 8, 8])"),
    (_npy(np.zeros((4, 8, 8, 4), np.uint8)), _npy(np.arange(4)),
     "no images: 'x_train' is no uint8 array of [images, rows, columns, 1 or 3 channels] (uint8 [4, 8, 8, 4])"),
    (_npy(np.zeros((4, 8, 8, 8), np.uint8)), _npy(np.arange(4)),  # MedMNIST's 3-D volumes
     "no images: 'x_train' is no uint8 array of [images, rows, columns, 1 or 3 channels] (uint8 [4, 8, 8, 8])"),
    (_header_only((1, 4097, 8)), _npy(np.arange(1)),
     "no images: 'x_train' is no uint8 array of [images, rows, columns, 1 or 3 channels] (uint8 [1, 4097, 8])"),
    (_npy(IMAGES4), _npy(np.arange(3)),
     "no labels for its 4 images: 'y_train' is no array of whole numbers, one row an image (int64 [3])"),
    (_npy(IMAGES4), _npy(np.arange(4.0)),
     "no labels for its 4 images: 'y_train' is no array of whole numbers, one row an image (float64 [4])"),
    (_npy(IMAGES4), _npy(np.array(["a", "b", "c", "d"])),
     "no labels for its 4 images: 'y_train' is no array of whole numbers, one row an image (<U1 [4])"),
    (_npy(np.array([IMAGES4[0], None], dtype=object)), _npy(np.arange(2)),
     "an array of Python objects (object), which only unpickling reads: not read"),
    (_npy(np.asfortranarray(IMAGES4)), _npy(np.arange(4)),
     "an array stored column-major (Fortran order): save it with np.ascontiguousarray"),
    (b"\x93NUMPY\x03\x00" + _npy(IMAGES4)[8:], _npy(np.arange(4)),
     "an .npy file of version 3.0: a structured array, not numbers"),
    (b"not an npy file", _npy(np.arange(4)),
     "not an .npy file numpy reads: ValueError: the magic string is not correct; expected b'\\x93NUMPY', got "
     "b'not an'"),
    (_npy(IMAGES4), _header_only((4,), "<i8") + b"\x01" * 20, "'y_train' is cut short: 20 of 32 bytes of labels"),
    (_header_only((-3, 8, 8)) + bytes(200), _npy(np.arange(4)), "a shape of [-3, 8, 8]: a negative dimension"),
    (_npy(IMAGES4), _header_only((-4,), "<i8") + bytes(64), "a shape of [-4]: a negative dimension"),
    (_header_only((2**31, 1, 1)), _header_only((2**31,), "|i1"), "'y_train' is cut short: 0 of 2147483648 bytes"),
    (_header_only((2**31 + 1, 1, 1)), _header_only((2**31 + 1,), "|i1"),
     "'y_train' holds 2147483649 bytes of labels, more than 2147483648"),
])
def test_members_that_hold_no_images_or_no_labels_are_refused_saying_why(tmp_path: Path, images: bytes,
                                                                         labels: bytes, reason: str):
    src = _zip(tmp_path / "src" / "a.npz", {"x_train.npy": images, "y_train.npy": labels})
    with pytest.raises(ConvertError, match=r"1 x ") as exc:
        convert_images(src.parent, tmp_path / "out")
    assert reason in str(exc.value)


def test_a_member_cut_short_keeps_its_whole_images_across_blocks(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(npz_files, "BLOCK_BYTES", 2 * 8 * 8)  # two images a block
    images = small_photos(5, 8, "L")
    body = _header_only((5, 8, 8)) + images.tobytes()[:-30]  # the last image cut short
    src = _zip(tmp_path / "src" / "a.npz", {"x_train.npy": body, "y_train.npy": _npy(np.arange(5))})
    m = convert_images(src.parent, tmp_path / "out").manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("a.npz/x_train#4", "cut short: 4 of 5 images are whole")]
    got = converted_pixels(tmp_path / "out", "train")
    assert sorted(got) == [f"a.npz/x_train#{i}" for i in range(4)]
    for i in range(4):
        assert got[f"a.npz/x_train#{i}"][0] == i
        assert np.abs(got[f"a.npz/x_train#{i}"][1].mean(axis=2) - images[i]).mean() < 8


def test_a_damaged_member_is_refused_whole_and_a_bomb_unread(tmp_path: Path):
    images = small_photos(4, 16, "L")
    src = _zip(tmp_path / "src" / "a.npz", {"x_train.npy": _npy(images), "y_train.npy": _npy(np.arange(4))})
    data = bytearray(src.read_bytes())
    at = bytes(data).index(images[2].tobytes()[:16])
    data[at] ^= 0xFF  # a pixel of the third image: the zip's CRC no longer matches
    src.write_bytes(bytes(data))
    with pytest.raises(ConvertError, match=r"1 x damaged: BadZipFile: Bad CRC-32 for file 'x_train.npy'"):
        convert_images(src.parent, tmp_path / "out")
    zeros = np.zeros((2000, 64, 64), np.uint8)  # 8 MB of zeros: deflate stores them in about 8 KB
    bomb = _zip(tmp_path / "bomb" / "a.npz", {"x_train.npy": _npy(zeros), "y_train.npy": _npy(np.zeros(2000, int))},
                compress=zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(bomb) as zf:
        info = zf.getinfo("x_train.npy")
        assert info.file_size > 1000 * info.compress_size
    with pytest.raises(ConvertError, match=rf"1 x its {info.file_size} bytes are stored in {info.compress_size}, "
                                           r"more than 1000 times fewer"):
        convert_images(bomb.parent, tmp_path / "out2")


def test_a_file_named_npz_that_is_none_and_other_arrays_under_multi_label(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "broken.npz").write_bytes(b"PK\x03\x04 not really")
    np.savez(src / "good.npz", x_train=small_photos(2, 8, "L"), y_train=np.array([[0, 1], [1, 1]]))
    m = convert_images(src, tmp_path / "out", multi_label=True).manifest
    assert m.splits["train"].samples == 2
    assert [(r["source"], r["reason"][:45]) for r in m.rejected] == [
        ("broken.npz", "not a file of an image dataset kept as arrays")]
    (src / "broken.npz").unlink()
    (src / "good.npz").rename(src / "z.npz")  # after the IDX file: its dataset is the folder's
    (src / "train-images-idx3-ubyte").write_bytes(bytes([0, 0, 8, 3]) + (1).to_bytes(4, "big") * 3 + b"\0")
    with pytest.raises(ConvertError, match=r"2 file\(s\) rejected: 1 x an IDX file gives one class an image; "
                                           r"--multi-label reads the rows of flags of NumPy arrays: convert it apart; "
                                           r"1 x a second dataset: train-images-idx3-ubyte's is the one converted"):
        convert_images(src, tmp_path / "out2", multi_label=True)


def test_member_names_read_as_keras_medmnist_and_kuzushiji_write_them():
    assert key_of("x_train") == Key(True, "train", ("y_train",))
    assert key_of("Y_Test") == Key(False, "test", ("x_test",))
    assert key_of("validation_images") == Key(True, "val", ("validation_labels",))
    assert key_of("val_labels") == Key(False, "val", ("val_images", "val_imgs"))
    assert key_of("images") == Key(True, None, ("labels",))
    assert key_of("y") == Key(False, None, ("x",))
    assert key_of("k49-train-imgs") == Key(True, "train", ("k49-train-labels",), "k49")
    assert key_of("kmnist-test-labels") == Key(False, "test", ("kmnist-test-images", "kmnist-test-imgs"), "kmnist")
    assert key_of("kuzushiji50_train_imgs") == Key(True, "train", ("kuzushiji50_train_labels",), "kuzushiji50")
    assert key_of("mnist_x_train") == Key(True, "train", ("mnist_y_train",), "mnist")
    assert key_of("my.data.x") == Key(True, None, ("my.data.y",), "my.data")
    assert key_of("k49-holdout-imgs") == Key(True, None, ("k49-holdout-labels",), "k49-holdout")  # --split's
    assert key_of("Train.X") == Key(True, "train", ("train.y",))
    for name in ("x_holdout", "train", "mean", "x_train_extra", "images_", "_x", "xy_train", "trainx", "arr_0",
                 "x-", "x__train", ""):
        assert key_of(name) is None, name


def test_grey_images_with_a_channel_axis_and_single_labels_under_multi_label(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    images = small_photos(3, 12, "L")
    np.savez(src / "a.npz", x_train=images[:, :, :, None], y_train=np.array([2, 0, 2], np.uint8))  # [N, 12, 12, 1]
    convert_images(src, tmp_path / "out")
    got = converted_pixels(tmp_path / "out", "train")
    for i in range(3):
        assert np.abs(got[f"a.npz/x_train#{i}"][1].mean(axis=2) - images[i]).mean() < 6
    convert_images(src, tmp_path / "multi", multi_label=True)
    assert class_lists(tmp_path / "multi") == {f"a.npz/x_train#{i}": ("train", [y]) for i, y in enumerate([2, 0, 2])}


def test_images_are_read_a_block_at_a_time(monkeypatch):
    monkeypatch.setattr(npz_files, "BLOCK_BYTES", 2 * 8 * 8)  # two images a block
    images = small_photos(5, 8, "L")
    reads: list[int] = []

    class Spy(io.BytesIO):
        def read(self, n=-1):
            reads.append(n)
            return super().read(n)

    got = npz_files._blocks(Spy(images.tobytes()), npz_files.Header((5, 8, 8), np.dtype(np.uint8)))
    np.testing.assert_array_equal(next(got), images[0])
    assert reads == [128]  # the first image comes before the rest is read
    np.testing.assert_array_equal(np.stack([images[0], *got]), images)
    assert reads == [128, 128, 64]


def test_a_header_that_promises_a_trillion_images_costs_nothing_before_its_values_run_out(tmp_path: Path):
    src = _zip(tmp_path / "src" / "a.npz", {"images.npy": _header_only((2**40, 1, 1)) + b"\x07\x08"})
    m = convert_images(src.parent, tmp_path / "out", unlabeled=True).manifest
    assert m.splits["train"].samples == 2
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("a.npz/images#2", "cut short: 2 of 1099511627776 images are whole")]


def test_one_hot_labels_are_one_class_an_image_and_every_column_a_class(tmp_path: Path):
    """Keras' `to_categorical` rows, as Kaggle's Sign Language Digits ship them (`Y.npy`): one 1 a row."""
    src = tmp_path / "src"
    src.mkdir()
    onehot = np.eye(10, dtype=np.float32)[[3, 0, 3]].astype(np.uint8)  # classes 1, 2, 4 ... 9 used by no image
    np.savez(src / "a.npz", x_train=small_photos(3, 8, "L"), y_train=onehot)
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == tuple(str(i) for i in range(10)) and not m.rejected
    assert {k: v[0] for k, v in converted_pixels(tmp_path / "out", "train").items()} == {
        "a.npz/x_train#0": 3, "a.npz/x_train#1": 0, "a.npz/x_train#2": 3}
    for bad in ([[0, 1, 1], [1, 0, 0]], [[0, 0, 0], [1, 0, 0]], [[0, 2, 0], [1, 0, 0]], [[2, -1, 0], [1, 0, 0]]):
        np.savez(src / "a.npz", x_train=small_photos(2, 8, "L"), y_train=np.array(bad))
        with pytest.raises(ConvertError, match=r"3 labels an image in 'y_train', not one 1 a row \(one-hot\)"):
            convert_images(src, tmp_path / "bad")


def test_npy_files_named_as_arrays_convert_beside_each_other(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    images = small_photos(7, 16)
    labels = np.array([1, 0, 2, 1, 0, 2, 1], np.int32)
    np.save(src / "X_train.npy", images[:4])
    np.save(src / "y_train.npy", labels[:4])
    np.save(src / "test_images.npy", images[4:])
    np.save(src / "test_labels.npy", labels[4:])
    np.save(src / "mean.npy", np.zeros(3))
    np.save(src / "y_val.npy", labels[:1])
    assert IMAGES.detect(src)
    only_labels = tmp_path / "labels"
    only_labels.mkdir()
    np.save(only_labels / "y_train.npy", labels)
    assert not IMAGES.detect(only_labels)
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 4, "test": 3}
    assert m.classes == ("0", "1", "2")
    assert sorted((r["split"], r["source"], r["reason"][:40]) for r in m.rejected) == [
        ("train", "mean.npy", "not a file of an image dataset kept as a"),
        ("val", "y_val.npy", "labels without their images file (x_val.")]
    got = _all(tmp_path / "out")
    for i in range(7):
        source = f"X_train.npy#{i}" if i < 4 else f"test_images.npy#{i - 4}"
        label, pixels = got[source]
        assert label == labels[i]
        assert np.abs(pixels.astype(int) - images[i]).mean() < 12
    (src / "y_train.npy").unlink()
    (src / "y_train.npy").mkdir()  # a folder of that name is no labels file
    m = convert_images(src, tmp_path / "out2").manifest
    assert ("train", "X_train.npy", "no labels beside it (y_train); --unlabeled converts it without labels") in {
        (r["split"], r["source"], r["reason"]) for r in m.rejected}
    (src / "y_train.npy").rmdir()
    np.save(src / "y_train.npy", labels[:3])
    m = convert_images(src, tmp_path / "out3").manifest
    assert ("train", "X_train.npy", "no labels for its 4 images: 'y_train' is no array of whole numbers, one row an "
                                    "image (int32 [3])") in {(r["split"], r["source"], r["reason"]) for r in m.rejected}


def test_medmnists_folder_of_datasets_converts_the_first_and_parts_named_by_split_convert_together(tmp_path: Path):
    """MedMNIST keeps each dataset it downloads in `~/.medmnist/`, one `.npz` each: merged, 9 classes of pathology
    and 7 of dermatoscopy would be one wrong dataset of 9 classes."""
    src = tmp_path / ".medmnist"
    src.mkdir()
    for name, classes in (("pathmnist.npz", 9), ("dermamnist.npz", 7), ("dermamnist_64.npz", 7)):
        np.savez(src / name, train_images=small_photos(3, 8), train_labels=np.arange(3)[:, None] % classes)
    m = convert_images(src, tmp_path / "out").manifest
    assert m.splits["train"].samples == 3
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        (name, "a second dataset: dermamnist.npz's is the one converted from this folder; convert each from a folder "
               "of its own (links to its files will do)") for name in ("dermamnist_64.npz", "pathmnist.npz")]
    parts = tmp_path / "parts"
    parts.mkdir()
    for name, n in (("train.npz", 4), ("test.npz", 2)):  # one dataset, a file a split
        np.savez(parts / name, x=small_photos(n, 8, "L"), y=np.arange(n))
    m = convert_images(parts, tmp_path / "out2").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 4, "test": 2} and not m.rejected


def test_what_a_resume_checks_and_the_splits_and_sources_of_items_and_rejections(tmp_path: Path):
    from converters.images.array_files import discover_array_files
    from converters.images.table_columns import TableOptions

    src = tmp_path / "src"
    src.mkdir()
    np.savez(src / "a.npz", x_train=small_photos(3, 8, "L"), y_train=np.arange(3),
             x_test=np.zeros((2, 8, 8), np.float32), y_test=np.arange(2), x_val=small_photos(1, 8, "L"), y_val=[0])
    found = discover_array_files(src, TableOptions())
    assert found.identity == [["train", "a.npz", None, (src / "a.npz").stat().st_size, 4]]  # the images taken
    assert {it.source for items in found.splits.values() for it in items} == {str(src / "a.npz")}
    assert [(r.split, r.source, r.reason[:10]) for r in found.rejected] == [("test", "a.npz/x_test", "no images:")]
    npy = tmp_path / "npy"
    npy.mkdir()
    np.save(npy / "images.npy", small_photos(2, 8, "L"))
    np.save(npy / "labels.npy", np.array([1, 0]))
    found = discover_array_files(npy, TableOptions())
    assert sorted(found.identity) == [["train", "images.npy", None, (npy / "images.npy").stat().st_size, 2],
                                      ["train", "labels.npy", None, (npy / "labels.npy").stat().st_size, 0]]
    assert {it.source for items in found.splits.values() for it in items} == {str(npy / "images.npy")}
    with pytest.raises(ConvertError, match=r"--label-field names a field of CIFAR batches; NumPy arrays' labels are "
                                           r"the array named as its images are, with y or labels"):
        convert_images(src, tmp_path / "out", label_field="y")


def test_cut_short_and_flag_rows_are_rejected_in_their_split_and_labels_must_agree(tmp_path: Path):
    src = _zip(tmp_path / "src" / "a.npz", {
        "x_val.npy": _header_only((3, 8, 8)) + IMAGES4[:2].tobytes() + b"\0",
        "y_val.npy": _npy(np.array([[1, 0], [1, 1], [1, 1]]))})
    m = convert_images(src.parent, tmp_path / "out", multi_label=True).manifest
    assert sorted((r["split"], r["source"], r["reason"]) for r in m.rejected) == [
        ("val", "a.npz/x_val#2", "cut short: 2 of 3 images are whole")]
    _zip(src, {"x_val.npy": _npy(IMAGES4[:2]), "y_val.npy": _npy(np.array([[1, 0], [2, 1]]))})
    m = convert_images(src.parent, tmp_path / "out2", multi_label=True).manifest
    assert [(r["split"], r["source"]) for r in m.rejected] == [("val", "a.npz/x_val#1")]
    _zip(src, {"x_test.npy": _npy(IMAGES4[:2]), "y_test.npy": _npy(np.eye(3, dtype=int)[[0, 2]]),
               "x_train.npy": _npy(IMAGES4[:2]), "y_train.npy": _npy(np.array([0, 1]))})
    m = convert_images(src.parent, tmp_path / "out3").manifest
    assert [(r["split"], r["source"], r["reason"]) for r in m.rejected] == [
        ("train", "a.npz/x_train", "its labels are not those of a.npz/x_test (label field 'y_test' with 3 classes): "
                                   "convert them apart")]


def test_headers_of_version_2_empty_splits_and_bytes_after_the_values(tmp_path: Path):
    buf = io.BytesIO()
    np.lib.format.write_array_header_2_0(buf, {"descr": "|u1", "fortran_order": False, "shape": (2, 8, 8)})
    one_d = io.BytesIO()  # Fortran order means nothing to one dimension
    np.lib.format.write_array_header_1_0(one_d, {"descr": "<i8", "fortran_order": True, "shape": (2,)})
    src = _zip(tmp_path / "src" / "a.npz", {
        "x_train.npy": buf.getvalue() + IMAGES4[:2].tobytes(),
        "y_train.npy": one_d.getvalue() + np.array([3, 1]).tobytes() + b"trailing",
        "x_val.npy": _npy(np.zeros((0, 8, 8), np.uint8)), "y_val.npy": _npy(np.zeros(0, int))})
    m = convert_images(src.parent, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 2} and not m.rejected
    assert {k: v[0] for k, v in converted_pixels(tmp_path / "out", "train").items()} == {
        "a.npz/x_train#0": 3, "a.npz/x_train#1": 1}
    _zip(src, {"x_train.npy": _npy(IMAGES4[:2]), "y_train.npy": _npy(np.asfortranarray(np.eye(3, dtype=int)[:2]))})
    with pytest.raises(ConvertError, match=r"an array stored column-major \(Fortran order\)"):
        convert_images(src.parent, tmp_path / "out2")


def test_detection_reads_names_only_and_what_is_no_npz(tmp_path: Path):
    labels_only = _zip(tmp_path / "labels" / "a.npz", {"y_train.npy": _npy(np.arange(3))})
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "a.npz").write_bytes(b"PK\x03\x04 no zip")
    assert not npz_files.holds_images(labels_only) and not npz_files.holds_images(broken / "a.npz")
    assert not IMAGES.detect(labels_only.parent) and not IMAGES.detect(broken)
    assert npz_files.array_key(tmp_path / "x_train.npy") == Key(True, "train", ("y_train",))
    assert npz_files.array_key(tmp_path / "x_train.txt") is None


def test_kuzushiji_49_as_its_npz_files_of_one_array_each(tmp_path: Path):
    """ROIS-CODH's Kuzushiji-49 (and KMNIST's NumPy format): `k49-train-imgs.npz` beside `k49-train-labels.npz`, each
    one array that `np.savez(file, array)` names `arr_0`. Without `k49_classmap.csv` beside them (test_class_maps.py)
    the classes are the ids."""
    src = tmp_path / "k49"
    src.mkdir()
    images = small_photos(7, 28, "L")
    labels = np.array([48, 0, 12, 3, 48, 7, 1], np.uint8)
    for split, part in (("train", slice(0, 5)), ("test", slice(5, 7))):
        np.savez_compressed(src / f"k49-{split}-imgs.npz", images[part])
        np.savez_compressed(src / f"k49-{split}-labels.npz", labels[part])
    assert IMAGES.detect(src)
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 5, "test": 2}
    assert m.classes == tuple(str(i) for i in range(49))
    assert not m.rejected
    got = _all(tmp_path / "out")
    for split, first in (("train", 0), ("test", 5)):
        theirs = np.load(src / f"k49-{split}-labels.npz")["arr_0"]
        for i, y in enumerate(theirs):
            label, pixels = got[f"k49-{split}-imgs.npz#{i}"]
            assert label == y == labels[first + i]
            assert np.abs(pixels.mean(axis=2) - images[first + i]).mean() < 4
    for split in ("train", "test"):  # KMNIST's NumPy files in the same folder: another dataset
        np.savez_compressed(src / f"kmnist-{split}-imgs.npz", images[:2])
        np.savez_compressed(src / f"kmnist-{split}-labels.npz", labels[:2])
    m = convert_images(src, tmp_path / "out2").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 5, "test": 2}
    assert sorted(r["source"] for r in m.rejected if r["reason"].startswith("a second dataset: k49-")) == [
        f"kmnist-{s}-{w}.npz" for s in ("test", "train") for w in ("imgs", "labels")]


def test_kaggles_kuzushiji_npy_files_and_npz_files_that_are_no_single_array(tmp_path: Path):
    src = tmp_path / "kanji"
    src.mkdir()
    images = small_photos(4, 16, "L")
    np.save(src / "kuzushiji50_train_imgs.npy", images)
    np.save(src / "kuzushiji50_train_labels.npy", np.array([2, 0, 1, 2]))
    m = convert_images(src, tmp_path / "out").manifest
    assert m.splits["train"].samples == 4 and m.classes == ("0", "1", "2") and not m.rejected
    other = tmp_path / "other"
    other.mkdir()
    np.savez(other / "x_train.npz", images=images, labels=np.arange(4))  # two arrays: an archive, not an array file
    assert npz_files.array_key(other / "x_train.npz") is None and npz_files.holds_images(other / "x_train.npz")
    m = convert_images(other, tmp_path / "out2").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 4} and not m.rejected  # its name's split
    np.savez(other / "y_train.npz", np.arange(4))
    assert npz_files.array_key(other / "y_train.npz") == Key(False, "train", ("x_train",))
    m = convert_images(other, tmp_path / "out3").manifest
    assert [r["source"] for r in m.rejected] == ["y_train.npz"]  # of another dataset than the archive beside
    data = bytearray((src / "kuzushiji50_train_imgs.npy").read_bytes())
    np.savez(src / "kuzushiji50_train_imgs.npz", images)  # (.npz beside .npy: the first of either is read)
    (src / "kuzushiji50_train_imgs.npy").unlink()
    packed = bytearray((src / "kuzushiji50_train_imgs.npz").read_bytes())
    at = bytes(packed).index(bytes(data[-40:-20]))
    packed[at] ^= 0xFF
    (src / "kuzushiji50_train_imgs.npz").write_bytes(bytes(packed))
    with pytest.raises(ConvertError, match=r"1 x damaged: BadZipFile: Bad CRC-32 for file 'arr_0.npy'"):
        convert_images(src, tmp_path / "out4")


def test_a_member_of_a_compression_method_zipfile_lacks_is_a_rejection(tmp_path: Path):
    """zipfile raises NotImplementedError for a member compressed by a method it lacks (here 99, WinZip's AES)."""
    src = _zip(tmp_path / "src" / "a.npz", {"x_train.npy": _npy(IMAGES4), "y_train.npy": _npy(np.arange(4))})
    data = bytearray(src.read_bytes())
    local, central = 0, bytes(data).index(b"PK\x01\x02")  # the first member's local and central headers
    data[local + 8:local + 10] = data[central + 10:central + 12] = (99).to_bytes(2, "little")
    src.write_bytes(bytes(data))
    with pytest.raises(ConvertError, match=r"1 x damaged: NotImplementedError: That compression method is not "
                                           r"supported"):
        convert_images(src.parent, tmp_path / "out")
