"""Tiny ImageNet as its zip unpacks (`tiny-imagenet-200/`): train in class folders with an `images/` folder inside
each, val's images loose in `val/images/` with their classes in `val/val_annotations.txt`, test's unlabeled in
`test/images/` (converters/images/discover.py). Before, val's 10,000 images were all rejected as a class named
`images`, and `--labels val=...` was refused because `val/` held a folder."""

from __future__ import annotations

from pathlib import Path

from helpers import convert_images, converted_pixels, make_image

WNIDS = ("n01443537", "n01629819", "n01641577")
TINY_ANNOTATIONS = "val_annotations.txt"


def tiny_imagenet(root: Path, val: list[tuple[str, str]], *, per_class: int = 2, test: int = 2) -> Path:
    """root/tiny-imagenet-200 as the zip unpacks: `val` is its (file, wnid) rows; the val images are made for them."""
    src = root / "tiny-imagenet-200"
    for c, wnid in enumerate(WNIDS):
        for i in range(per_class):
            make_image(src / "train" / wnid / "images" / f"{wnid}_{i}.JPEG", seed=10 * c + i)
        (src / "train" / wnid / f"{wnid}_boxes.txt").write_text(f"{wnid}_0.JPEG\t0\t0\t10\t10\n")
    for n, (name, _) in enumerate(val):
        make_image(src / "val" / "images" / name, seed=100 + n)
    (src / "val" / "val_annotations.txt").write_text("".join(f"{n}\t{w}\t0\t32\t44\t62\n" for n, w in val))
    for i in range(test):
        make_image(src / "test" / "images" / f"test_{i}.JPEG", seed=200 + i)
    (src / "wnids.txt").write_text("\n".join(WNIDS) + "\n")
    (src / "words.txt").write_text("".join(f"{w}\tthing {i}\n" for i, w in enumerate(WNIDS)))
    return src


def reasons(manifest) -> dict[str, str]:
    return {r["source"]: r["reason"] for r in manifest.rejected}


def test_tiny_imagenet_converts_val_with_the_classes_its_annotations_give(tmp_path: Path):
    val = [("val_0.JPEG", WNIDS[2]), ("val_1.JPEG", WNIDS[0]), ("val_2.JPEG", WNIDS[2])]
    src = tiny_imagenet(tmp_path, val)
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == WNIDS  # no class named `images`
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 6, "val": 3}
    labels = {source: label for source, (label, _) in converted_pixels(tmp_path / "out", "val").items()}
    assert labels == {"val/images/val_0.JPEG": 2, "val/images/val_1.JPEG": 0, "val/images/val_2.JPEG": 2}
    train = {source: label for source, (label, _) in converted_pixels(tmp_path / "out", "train").items()}
    assert train[f"train/{WNIDS[1]}/images/{WNIDS[1]}_1.JPEG"] == 1
    loose = "not inside a class folder: the split folder has none; --labels test=FILE labels its images"
    assert reasons(m) == {
        "test/images/test_0.JPEG": loose, "test/images/test_1.JPEG": loose,
        **{f"train/{w}/{w}_boxes.txt": "unsupported extension '.txt'; allowed: .jpg, .jpeg, .jfif, .jpe, .png, "
                                       ".webp, .bmp, .tif, .tiff, .gif, .avif, .ppm, .pgm, .pbm, .pnm" for w in WNIDS},
        "wnids.txt": "not inside a split folder (train, val, test, "
                     "or an alias of theirs such as training, valid, validation, "
                     "testing)",
        "words.txt": "not inside a split folder (train, val, test, "
                     "or an alias of theirs such as training, valid, validation, "
                     "testing)"}
    m2 = convert_images(src, tmp_path / "out2", labels=f"val={src / 'val' / 'val_annotations.txt'}").manifest
    assert reasons(m2) == reasons(m) and {k: s.samples for k, s in m2.splits.items()} == {"train": 6, "val": 3}


def test_what_the_annotations_do_not_label_and_files_beside_val_images_are_rejected(tmp_path: Path):
    src = tiny_imagenet(tmp_path, [("val_0.JPEG", WNIDS[0]), ("val_1.JPEG", "n99999999")])
    make_image(src / "val" / "images" / "val_9.JPEG", seed=9)  # no row
    (src / "val" / "notes.md").write_text("downloaded 2024\n")
    m = convert_images(src, tmp_path / "out").manifest
    assert m.splits["val"].samples == 1
    got = reasons(m)
    assert got["val/images/val_1.JPEG"] == "class not among train's classes: 'n99999999'"
    assert got["val/images/val_9.JPEG"] == "not listed in labels file val_annotations.txt"
    assert got["val/notes.md"] == "beside val/images/, which holds the split's images"


def test_a_class_named_images_elsewhere_keeps_val_images_a_class_folder(tmp_path: Path):
    src = tmp_path / "src"
    for split, classes in (("train", ("images", "other")), ("val", ("images",))):
        for c in classes:
            make_image(src / split / c / "a.jpg", seed=len(c))
    (src / "val" / TINY_ANNOTATIONS).write_text("a.jpg\tother\n")
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == ("images", "other")
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 2, "val": 1}
    assert {label for label, _ in converted_pixels(tmp_path / "out", "val").values()} == {0}  # its folder's class


def test_split_folders_each_holding_only_images_convert_unlabeled_not_as_one_class(tmp_path: Path):
    src = tmp_path / "src"
    for split in ("train", "val"):
        make_image(src / split / "images" / "a.jpg", seed=1)
    m = convert_images(src, tmp_path / "out").manifest
    assert m.classes == () and {k: s.samples for k, s in m.splits.items()} == {"train": 1, "val": 1}


def test_unlabeled_takes_every_split_of_tiny_imagenet_without_reading_its_annotations(tmp_path: Path, caplog):
    src = tiny_imagenet(tmp_path, [("val_0.JPEG", WNIDS[0])])
    with caplog.at_level("INFO"):
        m = convert_images(src, tmp_path / "out", unlabeled=True).manifest
    assert m.classes == () and {k: s.samples for k, s in m.splits.items()} == {"train": 6, "val": 1, "test": 2}
    assert "Tiny ImageNet" not in caplog.text
