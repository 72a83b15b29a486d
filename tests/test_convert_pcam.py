"""PatchCamelyon as torchvision's `PCAM` downloads it (`pcam/camelyonpatch_level_2_split_{train,valid,test}_{x,y}.h5`)
converts (converters/images/pcam.py, array_files.py); before, `fastdata convert pcam/` found no image in it. The HDF5
files are written by h5py as PCam's are: `x` uint8 [N, 96, 96, 3], `y` [N, 1, 1, 1]. The expected images and labels
are read as torchvision's `PCAM` reads them (`x[i]`, `int(y[i, 0, 0, 0])`). Images: the real photos, made small."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from helpers import convert_images, converted_pixels, small_photos

from converters.images import KIND as IMAGES
from converters.images import pcam
from fastdata.errors import ConvertError, MissingDependencyError

h5py = pytest.importorskip("h5py")
STEM = "camelyonpatch_level_2_split"


def pcam_pair(folder: Path, split: str, images: np.ndarray | None, labels: list[int] | None, **x_options: object
              ) -> tuple[Path, Path]:
    """`{STEM}_{split}_x.h5` holding `images` as `x` and `_y.h5` holding `labels` as `y` [N, 1, 1, 1] (each left out
    when None)."""
    folder.mkdir(parents=True, exist_ok=True)
    x, y = folder / f"{STEM}_{split}_x.h5", folder / f"{STEM}_{split}_y.h5"
    if images is not None:
        with h5py.File(x, "w") as f:
            f.create_dataset("x", data=images, **x_options)
    if labels is not None:
        with h5py.File(y, "w") as f:
            f.create_dataset("y", data=np.array(labels, np.uint8).reshape(-1, 1, 1, 1))
    return x, y


def torchvision_pcam(x: Path, y: Path) -> list[tuple[int, np.ndarray]]:
    """What torchvision's `PCAM` reads from a pair of files: (target, image [96, 96, 3]) for each index."""
    with h5py.File(x) as images, h5py.File(y) as targets:
        return [(int(targets["y"][i, 0, 0, 0]), images["x"][i]) for i in range(images["x"].shape[0])]


def test_pcam_as_torchvision_downloads_it_converts_with_its_splits_and_targets(tmp_path: Path):
    images = small_photos(12, 96)
    labels = [0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1]
    src = tmp_path / "pcam"
    pairs = {"train": pcam_pair(src, "train", images[:6], labels[:6], chunks=(1, 96, 96, 3), compression="gzip"),
             "val": pcam_pair(src, "valid", images[6:9], labels[6:9]),
             "test": pcam_pair(src, "test", images[9:], labels[9:])}
    for x, _ in (pairs["train"], pairs["val"]):  # torchvision keeps each download beside the file it unpacks
        (x.parent / (x.name + ".gz")).write_bytes(gzip.compress(x.read_bytes()))
    (src / f"{STEM}_test_meta.csv").write_text("coord_y,coord_x\n")  # beside test's images, of no download
    (src / f"{STEM}_train_meta.csv").write_text(",coord_y,coord_x,tumor_patch,center_tumor_patch,wsi\n"
                                                "0,1,2,False,False,camelyon16_train_normal_001\n")
    with h5py.File(src / f"{STEM}_train_mask.h5", "w") as f:  # tumour masks: not converted
        f.create_dataset("mask", data=np.zeros((6, 96, 96), bool))
    assert IMAGES.detect(src)
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == ("0", "1")
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 6, "val": 3, "test": 3}
    assert m.rejected == ()
    start = {"train": 0, "val": 6, "test": 9}
    for split, (x, y) in pairs.items():
        got = converted_pixels(tmp_path / "out", split)
        theirs = torchvision_pcam(x, y)
        assert sorted(got) == sorted(f"{x.name}#{i}" for i in range(len(theirs)))
        for i, (target, pixels) in enumerate(theirs):
            label, converted = got[f"{x.name}#{i}"]
            assert label == target == labels[start[split] + i]
            assert np.abs(converted - pixels).mean() < 10  # JPEG at quality 90, chroma halved
            assert np.abs(converted - images[start[split] + i]).mean() < 10
            assert np.abs(converted - pixels.transpose(1, 0, 2)).mean() > 20  # rows read as columns


def test_grey_images_a_name_without_split_and_unlabeled_images_convert(tmp_path: Path):
    grey = small_photos(4, 40, "L")
    src = tmp_path / "patches"
    pcam_pair(src, "extra", grey[:2], None)  # [N, rows, columns]
    with h5py.File(src / "more_x.h5", "w") as f:  # [N, rows, columns, 1]
        f.create_dataset("x", data=grey[2:, :, :, None])
    m = convert_images(src, tmp_path / "out", unlabeled=True, split="train").manifest
    assert m.classes == () and m.rejected == ()
    got = converted_pixels(tmp_path / "out", "train", "L")
    assert sorted(got) == [f"{STEM}_extra_x.h5#0", f"{STEM}_extra_x.h5#1", "more_x.h5#0", "more_x.h5#1"]
    assert got["more_x.h5#1"][0] is None
    assert np.abs(got["more_x.h5#1"][1] - grey[3]).mean() < 6
    assert np.abs(got[f"{STEM}_extra_x.h5#0"][1] - grey[0]).mean() < 6


def test_labels_that_are_not_class_ids_are_rejected_one_by_one(tmp_path: Path):
    src = tmp_path / "pcam"
    x, y = pcam_pair(src, "train", small_photos(3, 32), None)
    with h5py.File(y, "w") as f:
        f.create_dataset("y", data=np.array([1.0, 0.5, 2.0]).reshape(3, 1, 1, 1))
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == ("0", "1", "2")
    assert [(r["source"], r["reason"]) for r in m.rejected] == [(f"{x.name}#1", "no label (null in field 'y')")]
    got = converted_pixels(tmp_path / "out", "train")
    assert [got[f"{x.name}#{i}"][0] for i in (0, 2)] == [1, 2]


UNWRITTEN = (1 << 24) + 1  # an `x` of this many 1x1 grey images, no chunk written


def _x_file(path: Path, **datasets: object) -> None:
    with h5py.File(path, "w") as f:
        for name, value in datasets.items():
            if value is UNWRITTEN:
                f.create_dataset(name, shape=(UNWRITTEN, 1, 1), dtype=np.uint8, chunks=(1 << 16, 1, 1))
            else:
                f.create_dataset(name, data=value)


@pytest.mark.parametrize("x, y, reason", [
    ({"x": np.zeros((2, 32, 32, 3), np.float32)}, [0, 1],
     "no images: 'x' holds floats (float32 [2, 32, 32, 3]), not scaled by guess: save uint8 0 ... 255, "
     "`np.round(x * 255).astype(np.uint8)` for 0 ... 1"),
    ({"x": np.zeros((2, 32, 32, 2), np.uint8)}, [0, 1],
     "no images: 'x' is no uint8 array of [images, rows, columns, 1 or 3 channels] (uint8 [2, 32, 32, 2])"),
    ({"x": np.zeros((2, 32), np.uint8)}, [0, 1],
     "no images: 'x' is no uint8 array of [images, rows, columns, 1 or 3 channels] (uint8 [2, 32])"),
    ({"x": np.zeros((2, 0, 32, 3), np.uint8)}, [0, 1],
     "no images: 'x' is no uint8 array of [images, rows, columns, 1 or 3 channels] (uint8 [2, 0, 32, 3])"),
    ({"x": np.zeros((1, 4097, 1, 3), np.uint8)}, [0],
     "no images: 'x' is no uint8 array of [images, rows, columns, 1 or 3 channels] (uint8 [1, 4097, 1, 3])"),
    ({"images": np.zeros((2, 32, 32, 3), np.uint8)}, [0, 1],
     "no dataset 'x' in the file (PCam's `_x.h5` holds 'x', its `_y.h5` 'y')"),
    ({"x": UNWRITTEN}, [0],  # a billion images in a small file: each would have a label in memory
     "'x' holds 16777217 images, more than 16777216: not a file of PCam's (its largest holds 262,144)"),
    ({"x": np.zeros((2, 32, 32, 3), np.uint8)}, [0, 1, 1],
     f"{STEM}_train_y.h5: 'y' is no array of 2 numbers, one an image (uint8 [3, 1, 1, 1])"),
    ({"x": np.zeros((2, 32, 32, 3), np.uint8)}, None,
     f"no labels file beside it ({STEM}_train_y.h5); --unlabeled converts it without labels"),
])
def test_an_images_file_that_is_not_what_pcam_holds_is_rejected_saying_what_it_lacks(tmp_path: Path, x: dict,
                                                                                    y: list[int] | None, reason: str):
    src = tmp_path / "pcam"
    pcam_pair(src, "valid", small_photos(2, 32), [1, 0])
    _, labels = pcam_pair(src, "train", None, y)
    _x_file(src / f"{STEM}_train_x.h5", **x)
    m = convert_images(src, tmp_path / "out").manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [(f"{STEM}_train_x.h5", reason)]
    assert {k: s.samples for k, s in m.splits.items()} == {"val": 2}


def test_labels_of_strings_and_files_alone_are_rejected(tmp_path: Path):
    src = tmp_path / "pcam"
    pcam_pair(src, "valid", small_photos(2, 32), [1, 0])
    pcam_pair(src, "train", small_photos(2, 32), None)
    with h5py.File(src / f"{STEM}_train_y.h5", "w") as f:
        f.create_dataset("y", data=np.array([b"a", b"b"]))
    pcam_pair(src, "test", None, [0, 1])  # labels without images
    (src / f"{STEM}_extra_x.h5.gz").write_bytes(gzip.compress(b"\x89HDF\r\n\x1a\n"))  # a download not unpacked
    (src / f"{STEM}_extra_meta.csv").write_text("coord_y,coord_x\n")  # beside the download: PCam's
    (src / f"{STEM}_test_meta.csv").write_text("coord_y,coord_x\n")  # beside no images: no PCam file
    (src / f"{STEM}_test_mask.h5").write_bytes(b"\x89HDF\r\n\x1a\n")
    m = convert_images(src, tmp_path / "out").manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == sorted([
        (f"{STEM}_train_x.h5", f"{STEM}_train_y.h5: 'y' is no array of 2 numbers, one an image (|S1 [2])"),
        (f"{STEM}_test_y.h5", f"labels without their images file ({STEM}_test_x.h5)"),
        (f"{STEM}_extra_x.h5.gz", f"a gzip-compressed HDF5 file, which is read in place only unpacked: gunzip it "
                                  f"(to {STEM}_extra_x.h5)"),
        *[(f"{STEM}_test_{what}", "not a file of an image dataset kept as arrays (this source is read as the files "
                                  "of torchvision's CIFAR, MNIST, SVHN, STL-10 or PCAM datasets, NumPy .npz "
                                  "files, or Kaggle's tables of pixels)") for what in ("mask.h5", "meta.csv")]])
    assert {k: s.samples for k, s in m.splits.items()} == {"val": 2}


@pytest.mark.parametrize("block", [pcam.BLOCK_BYTES, 2 * 32 * 32 * 3])
def test_a_damaged_file_and_a_damaged_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int):
    """A file cut short is rejected whole; a chunk whose compressed bytes are damaged loses its image only: the
    block it lies in (all five images, or images 2 and 3 of blocks of two) is read again image by image."""
    monkeypatch.setattr(pcam, "BLOCK_BYTES", block)
    images = small_photos(5, 32)
    src = tmp_path / "pcam"
    x, _ = pcam_pair(src, "train", images, [0, 1, 0, 1, 0], chunks=(1, 32, 32, 3), compression="gzip")
    with h5py.File(x) as f:
        info = f["x"].id.get_chunk_info(2)  # the third image's chunk
    data = bytearray(x.read_bytes())
    data[info.byte_offset:info.byte_offset + info.size] = bytes(info.size)
    x.write_bytes(bytes(data))
    cut, _ = pcam_pair(src, "test", images[:2], [1, 1])
    cut.write_bytes(cut.read_bytes()[:1500])
    m = convert_images(src, tmp_path / "out").manifest
    reasons = {r["source"]: r["reason"] for r in m.rejected}
    assert sorted(reasons) == [f"{STEM}_test_x.h5", f"{x.name}#2"]
    assert reasons[f"{STEM}_test_x.h5"].startswith("not a readable HDF5 file (OSError: ")
    assert reasons[f"{x.name}#2"].startswith("image 2 of 'x' cannot be read (OSError: ")
    got = converted_pixels(tmp_path / "out", "train")
    assert sorted(got) == [f"{x.name}#{i}" for i in (0, 1, 3, 4)]
    for i in (0, 1, 3, 4):
        assert np.abs(got[f"{x.name}#{i}"][1] - images[i]).mean() < 10


def test_a_file_reaching_outside_itself_or_declaring_pixels_it_does_not_store_is_refused_unread(tmp_path: Path):
    secret = tmp_path / "secret.h5"
    with h5py.File(secret, "w") as f:
        f.create_dataset("x", data=np.full((2, 32, 32, 3), 7, np.uint8))
    raw = tmp_path / "secret.raw"
    raw.write_bytes(np.full((2, 32, 32, 3), 9, np.uint8).tobytes())
    src = tmp_path / "pcam"
    src.mkdir()
    with h5py.File(src / "linked_x.h5", "w") as f:
        f["x"] = h5py.ExternalLink(str(secret), "/x")
    with h5py.File(src / "stored_x.h5", "w") as f:
        f.create_dataset("x", shape=(2, 32, 32, 3), dtype=np.uint8, external=[(str(raw), 0, 2 * 32 * 32 * 3)])
    with h5py.File(src / "virtual_x.h5", "w") as f:
        layout = h5py.VirtualLayout(shape=(2, 32, 32, 3), dtype=np.uint8)
        layout[...] = h5py.VirtualSource(str(secret), "x", shape=(2, 32, 32, 3))
        f.create_virtual_dataset("x", layout)
    pcam_pair(src, "good", small_photos(1, 32), None)
    with h5py.File(src / "unwritten_x.h5", "w") as f:  # 300 MB of pixels, no chunk written
        f.create_dataset("x", shape=(100_000, 32, 32, 3), dtype=np.uint8, chunks=(1, 32, 32, 3))
    with h5py.File(src / "crowded_x.h5", "w") as f:  # more objects than a file of PCam's (one dataset) could hold
        f.create_dataset("x", data=small_photos(1, 32))
        for i in range(pcam.MAX_OBJECTS):
            f.create_group(f"g{i}")
    m = convert_images(src, tmp_path / "out", unlabeled=True).manifest
    outside = "only what lies in the file is read"
    assert {r["source"]: r["reason"] for r in m.rejected} == {
        "linked_x.h5": f"the HDF5 file links to an object in another file; {outside}",
        "stored_x.h5": f"an HDF5 dataset whose bytes lie in other files (external storage, or a virtual dataset); "
                       f"{outside}",
        "virtual_x.h5": f"an HDF5 dataset whose bytes lie in other files (external storage, or a virtual dataset); "
                        f"{outside}",
        "crowded_x.h5": f"an HDF5 file of more than {pcam.MAX_OBJECTS} objects",
        "unwritten_x.h5": "'x' holds 307200000 bytes of pixels in 0 bytes of the file, more than 1000 times as many "
                          "(unwritten or extremely compressed chunks); PCam's images are stored as they are"}
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 1}
    from converters.hdf5_files import is_hdf5

    assert is_hdf5(str(src / f"{STEM}_good_x.h5")) and not is_hdf5(str(raw))
    assert not is_hdf5(str(src)) and not is_hdf5(str(tmp_path / "missing.h5"))  # what cannot be read is none


def test_without_h5py_each_file_is_rejected_naming_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    src = tmp_path / "pcam"
    pcam_pair(src, "train", small_photos(2, 32), [0, 1])

    def missing(module: str, extra: str):
        raise MissingDependencyError(f"{module!r} is not installed; install it with: pip install 'fastdata[{extra}]'")

    monkeypatch.setattr(pcam, "require", missing)
    with pytest.raises(ConvertError, match=r"holds no images input to convert \(1 file\(s\) rejected: 1 x an HDF5 "
                                           r"file, which is read with h5py: 'h5py' is not installed; install it with: "
                                           r"pip install 'fastdata\[hdf5\]'\)$"):
        convert_images(src, tmp_path / "out")


def test_pixels_may_be_stored_compressed_up_to_max_ratio_and_sides_up_to_4096(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    """An uncompressed dataset stores its pixels once (a ratio of 1); gzip stores fewer bytes than the photos'
    pixels. With MAX_RATIO 1, the first is read and the second refused."""
    images = small_photos(3, 32)
    src = tmp_path / "pcam"
    pcam_pair(src, "train", images, [0, 1, 1])
    pcam_pair(src, "test", images, [0, 1, 1], chunks=(1, 32, 32, 3), compression="gzip")
    monkeypatch.setattr(pcam, "MAX_RATIO", 1)
    m = convert_images(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 3}
    [(source, reason)] = [(r["source"], r["reason"]) for r in m.rejected]
    assert source == f"{STEM}_test_x.h5"
    assert reason.startswith("'x' holds 9216 bytes of pixels in ") and "more than 1 times as many" in reason
    with h5py.File(tmp_path / "side.h5", "w") as f:
        long = f.create_dataset("x", data=np.zeros((1, 4096, 1, 3), np.uint8))
        assert pcam._pixels_layout(long) is None
