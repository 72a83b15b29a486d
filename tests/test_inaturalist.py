"""iNaturalist 2017, 2018 and 2019 as their archives unpack (`train_val2018/Plantae/2856/<image>.jpg`,
`train2018.json`, `val2018.json`: COCO's shape, one annotation an image): converted as it lies
(converters/images/inaturalist.py). Before, `train_val2018/` as a tree was its 14 super categories (all 8,142 species
of Plantae one class), and train and val lay in one split. The images are the real photos of tests/data."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, split_items, split_rejections

from converters.images import inaturalist
from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

# category id -> (its folder, its obfuscated name, its real name)
CATEGORIES = {0: ("Plantae/0", "a1f3", "Abies concolor"), 1: ("Plantae/1", "77c0", "Abies grandis"),
              2: ("Aves/2", "e9d2", "Anas platyrhynchos"), 3: ("Aves/3", "0b4c", "Ardea herodias")}
TRAIN = {"Plantae/0/a.jpg": 0, "Plantae/0/b.jpg": 0, "Aves/2/c.jpg": 2, "Aves/3/d.jpg": 3}
VAL = {"Plantae/1/e.jpg": 1, "Aves/2/f.jpg": 2}


def _file(images: dict[str, int], folder: str, categories=CATEGORIES, annotate=True) -> dict:
    return {"info": {"year": 2018}, "licenses": [],
            "images": [{"id": i, "file_name": f"{folder}/{rel}", "width": 9, "height": 9}
                       for i, rel in enumerate(images)],
            "annotations": [{"id": i, "image_id": i, "category_id": c} for i, c in enumerate(images.values())]
            if annotate else [],
            "categories": [{"id": c, "name": name, "supercategory": folder_.split("/")[0]}
                           for c, (folder_, name, _) in categories.items()]}


def _inat(root: Path, year: str = "2018") -> Path:
    """iNaturalist's folder as its archives unpack: the photos in the images' folder, the training, validation and
    test files, the test images, and a readme beside them."""
    folder = inaturalist.IMAGES[year]
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for rel in (*TRAIN, *VAL):
        (root / folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), root / folder / rel)
    (root / f"test{year}").mkdir()
    shutil.copyfile(next(photos), root / f"test{year}" / "t.jpg")
    (root / f"train{year}.json").write_text(json.dumps(_file(TRAIN, folder)))
    (root / f"val{year}.json").write_text(json.dumps(_file(VAL, folder)))
    (root / f"test{year}.json").write_text(json.dumps(_file({"t.jpg": 0}, f"test{year}", annotate=False)))
    (root / "README.md").write_text("iNaturalist\n")
    return root


def test_the_folder_converts_train_and_val_with_the_category_ids_as_labels(tmp_path):
    src = _inat(tmp_path / "inat")
    assert cli(["convert", str(src), str(tmp_path / "dst"), "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == ("a1f3", "77c0", "e9d2", "0b4c")  # the files' names, in the order of the ids
    assert m.extra["layout"] == "inaturalist"
    assert class_lists(tmp_path / "dst", field="label") == {
        **{f"train_val2018/{rel}": ("train", c) for rel, c in TRAIN.items()},
        **{f"train_val2018/{rel}": ("val", c) for rel, c in VAL.items()}}
    assert sorted((r["split"], r["source"], r["reason"]) for r in m.rejected) == [
        ("test", "test2018/t.jpg", inaturalist.NO_TEST_LABELS),
        ("train", "README.md", "beside iNaturalist's folders and files: not read")]


def test_categories_json_gives_the_names_released_after_the_competition(tmp_path):
    src = _inat(tmp_path, "2019")
    (src / "categories.json").write_text(json.dumps([{"id": c, "name": real, "kingdom": "k"}
                                                     for c, (_, _, real) in reversed(CATEGORIES.items())]))
    d = discover_images(src)
    assert d.classes == ("Abies concolor", "Abies grandis", "Anas platyrhynchos", "Ardea herodias")
    assert split_items(d)["val"] == sorted((f"train_val2019/{rel}", c) for rel, c in VAL.items())
    assert "categories.json" not in [r[1] for r in split_rejections(d)]


def test_2017s_folder_and_a_validation_file_alone_convert(tmp_path, caplog):
    src = _inat(tmp_path, "2017")
    (src / "train2017.json").unlink()
    d = discover_images(src)
    assert d.layout == "inaturalist"
    assert "2 classes have no image: 'a1f3', '0b4c'" in caplog.text
    assert split_items(d) == {"val": sorted((f"train_val_images/{rel}", c) for rel, c in VAL.items())}
    assert sorted(r for r in split_rejections(d) if r[0] == "train" and r[1].startswith("train_val")) == [
        ("train", f"train_val_images/{rel}", "not listed in labels file val2017.json") for rel in sorted(TRAIN)]


def test_images_no_file_names_and_names_without_an_image_are_rejections(tmp_path):
    src = _inat(tmp_path)
    shutil.copyfile(src / "train_val2018" / "Aves" / "2" / "c.jpg", src / "train_val2018" / "Aves" / "2" / "x.jpg")
    (src / "train_val2018" / "Plantae" / "0" / "b.jpg").unlink()
    d = discover_images(src)
    assert [r for r in split_rejections(d) if r[1].startswith("train_val2018")] == [
        ("train", "train_val2018/Aves/2/x.jpg", "not listed in labels file train2018.json and val2018.json"),
        ("train", "train_val2018/Plantae/0/b.jpg", "listed in train2018.json and val2018.json but no such file in "
                                                   "the source")]


def _rewrite(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: _rewrite(s / "val2018.json", lambda d: d["annotations"].append(
        {"id": 9, "image_id": 0, "category_id": 2})), r"val2018\.json: the image train_val2018/Plantae/1/e\.jpg has 2 "
                                                      r"categories; an iNaturalist image has one"),
    (lambda s: _rewrite(s / "val2018.json", lambda d: d["annotations"].pop()), r"val2018\.json: the image "
                                                                               r"train_val2018/Aves/2/f\.jpg has 0"),
    (lambda s: _rewrite(s / "val2018.json", lambda d: d["images"][0].update(file_name="train_val2018/Plantae/0/a.jpg")),
     r"val2018\.json: the image train_val2018/Plantae/0/a\.jpg is in train too: an image has one split"),
    (lambda s: _rewrite(s / "val2018.json", lambda d: d["images"][0].update(file_name="Plantae/1/e.jpg")),
     r"val2018\.json: the image Plantae/1/e\.jpg is not in train_val2018/, where its images lie"),
    (lambda s: _rewrite(s / "val2018.json", lambda d: d["categories"].pop()), r"val2018\.json: its categories are not "
                                                                              r"those of train2018\.json"),
    (lambda s: _rewrite(s / "train2018.json", lambda d: d.pop("images")), r"train2018\.json: no 'images' list"),
    (lambda s: (s / "train2018.json").write_text("{"), r"cannot read .*train2018\.json: invalid JSON"),
    (lambda s: (s / "categories.json").write_text('[{"id": 0, "name": "x"}]'), r"categories\.json: its categories "
     r"are not those of the dataset's files \(the id 1 is in one only\): is it another year's\?"),
    (lambda s: (s / "categories.json").write_text(json.dumps([{"id": c, "name": "x"} for c in range(5)])),
     r"categories\.json: category 1 \(1, 'x'\) repeats an id or a name"),
    (lambda s: (s / "categories.json").write_text(json.dumps([{"id": c, "name": f"{c}"} for c in range(5)])),
     r"\(the id 4 is in one only\)"),
    (lambda s: (s / "categories.json").write_text('{"categories": []}'), r"categories\.json: expected a list of "
                                                                         r"categories .*; got dict"),
    (lambda s: (s / "categories.json").write_bytes(b"\xff"), r"cannot read .*categories\.json"),
    (lambda s: (s / "val2019.json").write_text("{}"), r"holds the files of iNaturalist 2018 and 2019: convert one "
                                                      r"year apart"),
    (lambda s: shutil.rmtree(s / "train_val2018"), r"train2018\.json and val2018\.json name the images of "
                                                   r"train_val2018/, which is not in "),
])
def test_files_that_cannot_be_read_right_stop_the_conversion(tmp_path, change, message):
    src = _inat(tmp_path)
    change(src)
    with pytest.raises(ConvertError, match=message):
        discover_images(src)


def test_a_test_file_alone_or_another_years_name_is_not_inaturalist(tmp_path):
    src = _inat(tmp_path)
    (src / "train2018.json").unlink()
    (src / "val2018.json").rename(src / "val2020.json")
    (src / "val2018.json").mkdir()  # a folder of the name: no file
    assert inaturalist.found(src) is None
    assert discover_images(src).layout != "inaturalist"


def test_2021s_split_folders_of_class_folders_convert_as_a_tree_in_the_order_of_the_ids(tmp_path):
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    classes = ["00000_Animalia_Annelida_Clitellata_Haplotaxida_Lumbricidae_Lumbricus_terrestris",
               "00001_Animalia_Annelida_Polychaeta_Phyllodocida_Nereididae_Alitta_succinea",
               "00010_Animalia_Arthropoda_Arachnida_Araneae_Agelenidae_Agelenopsis_pennsylvanica"]
    for folder in ("train", "val", "train_mini"):
        for c in classes:
            (tmp_path / folder / c).mkdir(parents=True)
            shutil.copyfile(next(photos), tmp_path / folder / c / "a.jpg")
    (tmp_path / "train.json").write_text("{}")
    (tmp_path / "val.json").write_text("{}")
    d = discover_images(tmp_path)
    assert d.layout == "split/class" and list(d.classes) == classes
    assert split_items(d) == {s: [(f"{s}/{c}/a.jpg", i) for i, c in enumerate(classes)] for s in ("train", "val")}
    assert sorted(r[1] for r in split_rejections(d)) == [
        "train.json", *[f"train_mini/{c}/a.jpg" for c in classes], "val.json"]


def test_the_identity_a_resume_checks_holds_each_images_split_label_and_size(tmp_path):
    """The fingerprint a resume and each part check is made of the discovery's identity: a label changed in the
    validation file must change it."""
    src = _inat(tmp_path / "inat")
    folder = src / "train_val2018"
    found = inaturalist.discover_inaturalist(src, follow=True)
    assert sorted(found.identity) == sorted(
        [s, f"train_val2018/{rel}", c, (folder / rel).stat().st_size]
        for s, images in (("train", TRAIN), ("val", VAL)) for rel, c in images.items())
    (src / "val2018.json").write_text(json.dumps(_file({**VAL, "Aves/2/f.jpg": 3}, "train_val2018")))
    assert ["val", "train_val2018/Aves/2/f.jpg", 3, (folder / "Aves/2/f.jpg").stat().st_size] in (
        inaturalist.discover_inaturalist(src, follow=True).identity)


def test_an_image_that_is_a_link_is_followed_unless_told_not_to(tmp_path):
    src = _inat(tmp_path / "inat")
    image = src / "train_val2018" / "Aves/3/d.jpg"
    shutil.move(image, tmp_path / "d.jpg")
    image.symlink_to(tmp_path / "d.jpg")
    assert ("train_val2018/Aves/3/d.jpg", 3) in split_items(inaturalist.discover_inaturalist(src, follow=True))["train"]
    kept = inaturalist.discover_inaturalist(src, follow=False)
    assert ("train_val2018/Aves/3/d.jpg", 3) not in split_items(kept)["train"]
    assert ("train", "train_val2018/Aves/3/d.jpg") in {(s, rel) for s, rel, _ in split_rejections(kept)}
