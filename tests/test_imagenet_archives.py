"""ImageNet as image-net.org hands it out: `ILSVRC2012_img_train.tar` (a tar of one tar a class),
`ILSVRC2012_img_val.tar` and the devkit `ILSVRC2012_devkit_t12.tar.gz`, read inside the archives with nothing
unpacked (converters/images/imagenet_archives.py). Before, a folder of the three archives held no image fastdata
read. The images are the real photos of tests/data; meta.mat is written with scipy as the devkit's is laid out."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest
from helpers import PHOTOS, class_lists, split_items, split_rejections
from scipy.io import savemat

from converters.images import imagenet_archives as archives
from converters.images.discover import discover_images
from converters.spill import FileRange
from converters.walk import NOT_FOLLOWED
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

WNIDS = ["n01440764", "n01443537", "n01484850"]
IDS = {1: "n01484850", 2: "n01440764", 3: "n01443537"}  # ILSVRC2012_IDs do not follow the sorted WNIDs
TRUTH = [2, 3, 1, 2]  # the val images' ILSVRC2012_IDs, in the images' order


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _tar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members.items():
            _add(tar, name, data)
    return out.getvalue()


def _meta(ids=IDS) -> bytes:
    """meta.mat: the synsets struct array, the leaves' ILSVRC2012_IDs with their WNIDs, and one inner synset."""
    rows = [*((i, w, 0) for i, w in ids.items()), (1001, "n00001740", 3)]
    synsets = np.empty((len(rows), 1), dtype=[("ILSVRC2012_ID", object), ("WNID", object), ("words", object),
                                               ("num_children", object)])
    for k, (i, wnid, children) in enumerate(rows):
        synsets[k, 0] = (np.array([[i]], dtype=np.uint16), np.array([wnid]), np.array([f"words of {wnid}"]),
                         np.array([[children]], dtype=np.uint8))
    out = io.BytesIO()
    savemat(out, {"synsets": synsets})
    return out.getvalue()


def _devkit(path: Path, truth=TRUTH, meta: bytes | None = None) -> None:
    with tarfile.open(path, mode="w:gz") as tar:
        _add(tar, "ILSVRC2012_devkit_t12/data/meta.mat", _meta() if meta is None else meta)
        _add(tar, "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt",
             "".join(f"{i}\n" for i in truth).encode())
        _add(tar, "ILSVRC2012_devkit_t12/readme.txt", b"ILSVRC2012 devkit\n")


def _imagenet(root: Path) -> Path:
    """The three archives of image-net.org (two photos a class, four val photos) and a checksum file beside."""
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    root.mkdir(parents=True)
    classes = {f"{w}.tar": _tar({f"{w}_{k}.JPEG": next(photos).read_bytes() for k in range(2)}) for w in WNIDS}
    (root / archives.TRAIN).write_bytes(_tar(classes))
    (root / archives.VAL).write_bytes(_tar({f"ILSVRC2012_val_{n:08d}.JPEG": next(photos).read_bytes()
                                            for n in range(1, 5)}))
    _devkit(root / archives.DEVKIT)
    (root / "md5sums").write_text("0 ILSVRC2012_img_val.tar\n")
    return root


TRAIN_ITEMS = [(f"{archives.TRAIN}/{w}.tar/{w}_{k}.JPEG", i) for i, w in enumerate(WNIDS) for k in range(2)]
VAL_ITEMS = [(f"{archives.VAL}/ILSVRC2012_val_{n:08d}.JPEG", WNIDS.index(IDS[i])) for n, i in enumerate(TRUTH, 1)]


def test_the_archives_convert_as_they_lie_with_the_devkits_val_labels(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == tuple(WNIDS) and m.extra["layout"] == "imagenet_archives"
    assert class_lists(tmp_path / "dst", field="label") == {
        **{rel: ("train", label) for rel, label in TRAIN_ITEMS}, **{rel: ("val", label) for rel, label in VAL_ITEMS}}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [("md5sums", "beside ImageNet's archives: not read")]


def test_each_image_is_the_range_of_the_archive_that_holds_its_bytes(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    d = discover_images(src)
    photos = sorted(PHOTOS.glob("*.jpg"))
    items = d.splits["train"] + d.splits["val"]
    assert [it.payload.read_bytes() for it in items] == [p.read_bytes() for p in photos[:len(items)]]
    assert d.identity[0] == ["train", TRAIN_ITEMS[0][0], 0, photos[0].stat().st_size]


def test_the_val_archive_alone_takes_the_classes_of_the_ground_truth(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    (src / archives.TRAIN).unlink()
    d = discover_images(src)
    assert d.classes == tuple(WNIDS)
    assert split_items(d) == {"val": sorted(VAL_ITEMS)}


def test_members_that_are_no_image_or_no_class_tar_are_rejections(tmp_path):
    src = tmp_path / "imagenet"
    src.mkdir()
    photo = next(iter(sorted(PHOTOS.glob("*.jpg")))).read_bytes()
    inner = _tar({"n01440764_1.JPEG": photo, "notes.txt": b"notes"})
    with tarfile.open(src / archives.TRAIN, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        _add(tar, "n01440764.tar", inner)
        _add(tar, "README", b"readme")
        _add(tar, "n01443537.tar", b"not a tar at all")
        folder = tarfile.TarInfo("n01484850.tar")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
    d = discover_images(src)
    assert d.classes == ("n01440764", "n01443537")
    assert split_items(d) == {"train": [(f"{archives.TRAIN}/n01440764.tar/n01440764_1.JPEG", 0)]}
    reasons = {rel: reason for _, rel, reason in split_rejections(d)}
    assert reasons[f"{archives.TRAIN}/n01440764.tar/notes.txt"].startswith("unsupported extension '.txt'")
    assert reasons[f"{archives.TRAIN}/README"] == "not a class tar (n01440764.tar) of the training archive: not read"
    assert reasons[f"{archives.TRAIN}/n01484850.tar"] == reasons[f"{archives.TRAIN}/README"]
    assert reasons[f"{archives.TRAIN}/n01443537.tar"].startswith("damaged or truncated archive")
    assert {split for split, _, _ in split_rejections(d)} == {"train"}


def test_a_truncated_archive_converts_what_was_read_and_rejects_the_rest(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    data = (src / archives.TRAIN).read_bytes()
    third = data.index(b"n01484850.tar")  # the third class tar's header
    (src / archives.TRAIN).write_bytes(data[:third + 700])
    d = discover_images(src)
    assert [rel for rel, _ in split_items(d)["train"]] == [rel for rel, _ in TRAIN_ITEMS[:4]]
    assert any(rel == archives.TRAIN and reason.startswith("damaged or truncated archive")
               for _, rel, reason in split_rejections(d))


def test_a_val_image_the_ground_truth_does_not_reach_is_a_rejection(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    _devkit(src / archives.DEVKIT, truth=TRUTH[:3])
    d = discover_images(src)
    assert split_items(d)["val"] == sorted(VAL_ITEMS[:3])
    assert ("val", f"{archives.VAL}/ILSVRC2012_val_00000004.JPEG",
            f"no line of {archives.GROUND_TRUTH} labels it (it has 3)") in split_rejections(d)


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: (s / archives.DEVKIT).unlink(), r"ILSVRC2012_img_val\.tar: ImageNet's val images have no labels: "
                                                r"ILSVRC2012_devkit_t12\.tar\.gz \(its ground truth\) is not in "),
    (lambda s: _devkit(s / archives.DEVKIT, truth=[2, 7]), r"data/ILSVRC2012_validation_ground_truth\.txt:2: '7' is "
                                                           r"no ILSVRC2012_ID of data/meta\.mat"),
    (lambda s: _devkit(s / archives.DEVKIT, truth=["x"]), r"ground_truth\.txt:1: 'x' is no ILSVRC2012_ID"),
    (lambda s: _devkit(s / archives.DEVKIT, meta=b"MATLAB 5.0 but broken"), r"data/meta\.mat: "),
    (lambda s: (s / archives.DEVKIT).write_bytes(b"not gzip"), r"cannot read .*ILSVRC2012_devkit_t12\.tar\.gz"),
])
def test_val_labels_that_cannot_be_read_stop_the_conversion(tmp_path, change, message):
    src = _imagenet(tmp_path / "imagenet")
    change(src)
    with pytest.raises(ConvertError, match=message):
        discover_images(src)


def test_a_devkit_without_its_files_or_synsets_is_refused(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    with tarfile.open(src / archives.DEVKIT, mode="w:gz") as tar:
        _add(tar, "ILSVRC2012_devkit_t12/data/meta.mat", _meta())
    with pytest.raises(ConvertError, match=r"holds no data/ILSVRC2012_validation_ground_truth\.txt: is it ImageNet "
                                           r"2012's devkit"):
        discover_images(src)
    out = io.BytesIO()
    savemat(out, {"other": np.zeros(3)})
    _devkit(src / archives.DEVKIT, meta=out.getvalue())
    with pytest.raises(ConvertError, match=r"data/meta\.mat holds no 'synsets' struct array of ILSVRC2012_ID and WNID"):
        discover_images(src)


def test_a_linked_archive_is_not_read_unless_links_are_followed(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    os.rename(src / archives.TRAIN, tmp_path / "train.tar")
    os.symlink(tmp_path / "train.tar", src / archives.TRAIN)
    kept = discover_images(src, follow_symlinks=False)
    assert set(kept.splits) == {"val"} and ("train", archives.TRAIN, NOT_FOLLOWED) in split_rejections(kept)
    assert split_items(discover_images(src))["train"] == sorted(TRAIN_ITEMS)


def test_a_member_read_past_the_archives_end_is_an_error(tmp_path):
    (tmp_path / "short.tar").write_bytes(b"x" * 10)
    with pytest.raises(OSError, match=r"short\.tar ends before this image's 20 bytes at 5 \(truncated\)"):
        FileRange(str(tmp_path / "short.tar"), 5, 20).read_bytes()


def test_a_folder_in_a_class_tar_and_an_archive_that_is_no_tar_are_rejections(tmp_path):
    src = tmp_path / "imagenet"
    src.mkdir()
    photo = next(iter(sorted(PHOTOS.glob("*.jpg")))).read_bytes()
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        folder = tarfile.TarInfo("n01440764")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        _add(tar, "n01440764/n01440764_1.JPEG", photo)
    (src / archives.TRAIN).write_bytes(_tar({"n01440764.tar": inner.getvalue()}))
    d = discover_images(src)
    assert split_items(d) == {"train": [(f"{archives.TRAIN}/n01440764.tar/n01440764/n01440764_1.JPEG", 0)]}
    assert split_rejections(d) == [("train", f"{archives.TRAIN}/n01440764.tar/n01440764",
                                    "not a regular file in the archive: not read")]
    (src / archives.TRAIN).write_bytes(b"<html>403 Forbidden</html>")  # a failed download saved under the name
    d = discover_images(src)
    assert d.splits == {} and [(split, rel, reason.split(":")[0]) for split, rel, reason in split_rejections(d)] == [
        ("train", archives.TRAIN, "damaged or truncated archive")]


def test_a_val_archive_that_is_no_tar_is_a_rejection_of_the_val_split(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    (src / archives.VAL).write_bytes(b"<html>403 Forbidden</html>")
    d = discover_images(src)
    assert set(d.splits) == {"train"}
    assert [(split, rel, reason.split(":")[0]) for split, rel, reason in split_rejections(d)] == [
        ("", "md5sums", "beside ImageNet's archives"), ("val", archives.VAL, "damaged or truncated archive")]


@pytest.mark.parametrize("name, devkit", [("ILSVRC2012_devkit_t12.tar.gz", True), ("devkit.TGZ", True),
                                          ("devkit.tar", True), ("labels.csv", False), ("devkit.tar.bz2", False)])
def test_a_labels_file_is_a_devkit_by_its_archive_name(tmp_path, name: str, devkit: bool):
    (tmp_path / name).write_bytes(b"x")
    assert archives.is_devkit(tmp_path / name) is devkit
    (tmp_path / "folder.tar").mkdir()
    assert archives.is_devkit(tmp_path / "folder.tar") is False


def test_a_class_tar_cut_short_ends_at_its_own_end_and_never_reads_the_next_ones(tmp_path):
    """The last image of a cut class tar claims bytes past the tar's end, up to the next class tar's first header:
    read on, that header would have put the next class's image in this class."""
    photos = sorted(PHOTOS.glob("*.jpg"))
    whole = _tar({"n01440764_1.JPEG": photos[0].read_bytes(), "n01440764_2.JPEG": photos[1].read_bytes()[:1024]})
    second = tarfile.open(fileobj=io.BytesIO(whole)).getmember("n01440764_2.JPEG").offset_data
    cut = whole[:second + 512]  # half of the last image, and no end-of-archive blocks
    src = tmp_path / "imagenet"
    src.mkdir()
    (src / archives.TRAIN).write_bytes(_tar({"n01440764.tar": cut,
                                             "n01443537.tar": _tar({"n01443537_1.JPEG": photos[2].read_bytes()})}))
    d = discover_images(src)
    assert split_items(d) == {"train": [(f"{archives.TRAIN}/n01440764.tar/n01440764_1.JPEG", 0),
                                        (f"{archives.TRAIN}/n01443537.tar/n01443537_1.JPEG", 1)]}
    assert ("train", f"{archives.TRAIN}/n01440764.tar/n01440764_2.JPEG",
            "truncated: its bytes run past the end of the archive that holds it") in split_rejections(d)
    assert [rel for _, rel, _ in split_rejections(d) if "n01443537_1" in rel] == []  # never taken for the cut tar's


def test_a_val_image_of_a_class_without_training_images_is_a_rejection(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    photo = next(iter(sorted(PHOTOS.glob("*.jpg")))).read_bytes()
    (src / archives.TRAIN).write_bytes(_tar({f"{w}.tar": _tar({f"{w}_0.JPEG": photo}) for w in WNIDS[:2]}))
    d = discover_images(src)
    assert d.classes == tuple(WNIDS[:2])
    assert ("val", f"{archives.VAL}/ILSVRC2012_val_00000003.JPEG", "class n01484850 has no training images") in \
        split_rejections(d)


def test_a_ground_truth_of_a_blank_line_among_its_ids_or_a_devkit_file_past_the_limit_is_refused(tmp_path,
                                                                                                   monkeypatch):
    src = _imagenet(tmp_path / "imagenet")
    _devkit(src / archives.DEVKIT, truth=[2, "", 1])  # a blank line would move every later image's label
    with pytest.raises(ConvertError, match=r"ground_truth\.txt:2: '' is no ILSVRC2012_ID"):
        discover_images(src)
    _devkit(src / archives.DEVKIT, truth=[2, 3, 1, 2, "", ""])  # blank lines at the end are no line of an image
    assert split_items(discover_images(src))["val"] == sorted(VAL_ITEMS)
    monkeypatch.setattr(archives, "MAX_DEVKIT_FILE", 100)
    with pytest.raises(ConvertError, match=r"data/meta\.mat is \d+ bytes, more than ImageNet's devkit holds"):
        discover_images(src)


def test_a_name_twice_in_a_tar_is_taken_once_and_a_name_that_is_not_utf8_shows_as_text(tmp_path):
    src = tmp_path / "imagenet"
    src.mkdir()
    photos = sorted(PHOTOS.glob("*.jpg"))
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w", format=tarfile.USTAR_FORMAT, encoding="latin-1") as tar:
        _add(tar, "n01440764_1.JPEG", photos[0].read_bytes())
        _add(tar, "n01440764_1.JPEG", photos[1].read_bytes())
        _add(tar, "caf\xe9.JPEG", photos[2].read_bytes())  # a Latin-1 byte: not UTF-8
    (src / archives.TRAIN).write_bytes(_tar({"n01440764.tar": inner.getvalue()}))
    d = discover_images(src)
    where = f"{archives.TRAIN}/n01440764.tar"
    assert split_items(d) == {"train": [(f"{where}/caf\\xe9.JPEG", 0), (f"{where}/n01440764_1.JPEG", 0)]}
    assert d.splits["train"][0].payload.read_bytes() == photos[0].read_bytes()
    assert split_rejections(d) == [("train", f"{where}/n01440764_1.JPEG", "the archive holds a member of this name "
                                                                           "before: that one is taken")]
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    assert f"{where}/caf\\xe9.JPEG" in class_lists(tmp_path / "dst", field="label")


def test_the_training_archive_unpacked_one_level_converts_from_its_class_tars(tmp_path):
    """`tar -xf ILSVRC2012_img_train.tar -C train/`, the first step of every ImageNet set-up, leaves a folder of class
    tars: it converts as it lies, beside the val archive and the devkit."""
    src = _imagenet(tmp_path / "imagenet")
    with tarfile.open(src / archives.TRAIN) as tar:
        tar.extractall(src, filter="data")
    (src / archives.TRAIN).unlink()
    os.rename(src / "n01484850.tar", tmp_path / "n01484850.tar")
    os.symlink(tmp_path / "n01484850.tar", src / "n01484850.tar")  # a linked class tar: followed unless asked not to
    (src / "n01530575.tar").mkdir()  # a folder of a class tar's name is no class tar
    d = discover_images(src)
    assert d.layout == "imagenet_archives" and d.classes == tuple(WNIDS)
    assert split_items(d) == {"train": sorted((rel.split("/", 1)[1], label) for rel, label in TRAIN_ITEMS),
                              "val": sorted(VAL_ITEMS)}
    assert split_rejections(d) == [("", "md5sums", "beside ImageNet's archives: not read")]
    kept = discover_images(src, follow_symlinks=False)
    assert kept.classes == tuple(WNIDS[:2]) and ("train", "n01484850.tar", NOT_FOLLOWED) in split_rejections(kept)
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    assert read_manifest(tmp_path / "dst").classes == tuple(WNIDS)


def test_class_tars_beside_the_training_archive_are_not_read_twice(tmp_path):
    src = _imagenet(tmp_path / "imagenet")
    with tarfile.open(src / archives.TRAIN) as tar:
        tar.extract("n01440764.tar", src, filter="data")  # half unpacked: the archive is what is read
    d = discover_images(src)
    assert split_items(d)["train"] == sorted(TRAIN_ITEMS)
    assert ("", "n01440764.tar", "beside ImageNet's archives: not read") in split_rejections(d)


def _unpacked(root: Path) -> Path:
    """ImageNet unpacked as its set-up scripts leave it before sorting val: train/<wnid>/ folders, val/ flat, the
    devkit beside them."""
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for w in WNIDS:
        (root / "train" / w).mkdir(parents=True)
        (root / "train" / w / f"{w}_0.JPEG").write_bytes(next(photos).read_bytes())
    (root / "val").mkdir()
    for n in range(1, 5):
        (root / "val" / f"ILSVRC2012_val_{n:08d}.JPEG").write_bytes(next(photos).read_bytes())
    _devkit(root / archives.DEVKIT)
    return root


def test_the_devkit_labels_an_unpacked_val_folder_as_a_labels_file(tmp_path):
    src = _unpacked(tmp_path / "imagenet")
    d = discover_images(src, labels_csv=f"val={src / archives.DEVKIT}")
    assert d.classes == tuple(WNIDS)
    assert split_items(d)["val"] == sorted((rel.replace(archives.VAL, "val"), label) for rel, label in VAL_ITEMS)
    assert not [r for r in split_rejections(d) if r[1].startswith("val/")]
    alone = discover_images(src / "val", labels_csv=str(src / archives.DEVKIT), split="val")  # the val folder alone
    assert split_items(alone)["val"] == sorted((rel.split("/")[1], label) for rel, label in VAL_ITEMS)
    with pytest.raises(ValueError, match=r"ILSVRC2012_devkit_t12\.tar\.gz is ImageNet's devkit, which gives each val "
                                         r"image one class by its file name: --multi-label"):
        discover_images(src / "val", labels_csv=str(src / archives.DEVKIT), multi_label=True)


def test_a_conversion_in_parts_reads_the_same_archive_ranges_as_one_run(tmp_path):
    """Each part discovers again and converts its shards from the archives (Slurm arrays, `--num-parts`); merged, the
    shards are those of one run, byte for byte."""
    src = _imagenet(tmp_path / "imagenet")
    common = ["-j", "1", "--no-progress", "--samples-per-shard", "2"]
    assert cli(["convert", str(src), str(tmp_path / "one"), *common]) == 0
    for part in ("0", "1"):
        assert cli(["convert", str(src), str(tmp_path / "parts"), *common, "--num-parts", "2", "--part", part]) == 0
    assert cli(["convert", "--merge", str(tmp_path / "parts")]) == 0

    def shards(folder: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in (".tar", ".idx")}

    assert len(shards(tmp_path / "one")) == 10 and shards(tmp_path / "parts") == shards(tmp_path / "one")
