"""`--classes FILE`: names for the class ids a labels file gives (OpenMMLab's `ann_file` and `classes.txt`,
Places365's lists and `categories_places365.txt`), and for classes that are codes (Open Images' MIDs, WordNet ids:
`code,name` lines). Before, such a dataset's classes were "0".."K-1" or the codes, and the names stayed in a file
beside it; Places365's names were read whole (`/a/airfield 0`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree, touch

from converters import get_kind
from converters.images import ImageOptions
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest


def _discover(src: Path, **options):
    return get_kind("images").discover(src, options=ImageOptions(**options))


def _ids(tmp_path: Path, lines: str = "a.jpg 0\nb.jpg 2\n") -> tuple[Path, Path]:
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    (tmp_path / "train.txt").write_text(lines)
    return src, tmp_path / "train.txt"


def test_the_names_file_names_the_ids_in_order_and_keeps_names_past_the_largest(tmp_path):
    src, labels = _ids(tmp_path)
    (tmp_path / "classes.txt").write_text("\ufefftench\n\ngoldfish\n  great white shark  \nhammerhead\n")
    d = _discover(src, labels=str(labels), classes=str(tmp_path / "classes.txt"))
    assert d.classes == ("tench", "goldfish", "great white shark", "hammerhead")
    assert sorted((it.rel, it.label) for it in d.splits["train"]) == [("a.jpg", 0), ("b.jpg", 2)]
    assert d.identity[-1] == ["classes", ["tench", "goldfish", "great white shark", "hammerhead"]]  # renamed: rerun


@pytest.mark.parametrize(("text", "message"), [
    ("tench\ngoldfish\n", r"classes\.txt names 2 classes; the labels go up to 2$"),
    ("tench\ngoldfish\ntench\n", r"classes\.txt:3: the class 'tench' is named again \(first at .*classes\.txt:1\)"),
    # one name in NFC, then in NFD
    ("M\u00fcller\nMu\u0308ller\nx\n", r"classes\.txt:2: the class .* is named again \(first at .*classes\.txt:1\)"),
    ("tench\ngold\x1b[31mfish\nx\n", r"classes\.txt:2: the class .* holds control characters"),
    ("\n \n", r"classes\.txt names no class$"),
])
def test_a_names_file_that_cannot_name_the_ids_is_refused(tmp_path, text, message):
    src, labels = _ids(tmp_path)
    (tmp_path / "classes.txt").write_text(text)
    with pytest.raises(ConvertError, match=message):
        _discover(src, labels=str(labels), classes=str(tmp_path / "classes.txt"))


def test_a_missing_or_binary_names_file_is_refused(tmp_path):
    src, labels = _ids(tmp_path)
    with pytest.raises(ConvertError, match=r"^classes file .*missing\.txt does not exist$"):
        _discover(src, labels=str(labels), classes=str(tmp_path / "missing.txt"))
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(ConvertError, match=r"^cannot read classes file .*; save it as UTF-8 text$"):
        _discover(src, labels=str(labels), classes=str(tmp_path / "bin.txt"))


@pytest.mark.parametrize(("tree", "shown"), [
    (("cat/a.jpg", "dog/b.jpg", "eel/c.jpg", "fox/d.jpg"), r"'s classes are not ids, and .*classes\.txt names none of "
                                                           r"them \(cat, dog, eel\)"),
    (("a.jpg",), " has no class")])
def test_classes_that_are_names_the_file_lists_none_of_or_no_classes_are_refused(tmp_path, tree, shown):
    (tmp_path / "classes.txt").write_text("x\ny\nkitten cat\n")  # `kitten cat` would name cat by `code name`; no
    with pytest.raises(ValueError, match=rf"^--classes names class ids 0\.\.K-1, codes by lines of `code,name`, or "
                                         rf"the classes of the labels, a name a line; this source{shown}$"):
        _discover(touch(tmp_path / "src", *tree), classes=str(tmp_path / "classes.txt"))


def test_classes_that_are_names_take_their_places_among_the_files_as_labels(tmp_path, caplog):
    """ImageNet-R's class folders are 200 of ImageNet's 1000 WordNet ids: listed in ImageNet's order, a label is the
    ImageNet index, which a model trained on ImageNet predicts."""
    src = touch(tmp_path / "src", "n01443537/a.jpg", "n01443537/b.jpg", "n01833805/c.jpg", "n01484850/d.jpg")
    (tmp_path / "wnids.txt").write_text("n01440764\nn01443537\nn01484850\nn01491361\nn01833805\n")
    caplog.set_level("INFO")
    d = _discover(src, classes=str(tmp_path / "wnids.txt"))
    assert d.classes == ("n01440764", "n01443537", "n01484850", "n01491361", "n01833805")
    assert sorted((it.rel, it.label) for it in d.splits["train"]) == [
        ("n01443537/a.jpg", 1), ("n01443537/b.jpg", 1), ("n01484850/d.jpg", 2), ("n01833805/c.jpg", 4)]
    assert d.identity[-1] == ["classes", list(d.classes)]
    assert "each label is its class's place among the 5 classes it lists (2 of them not this source's)" in caplog.text
    (tmp_path / "x.txt").write_text("x\ny\nkitten cat\n")
    xy = _discover(touch(tmp_path / "xy", "y/a.jpg", "x/b.jpg"), classes=str(tmp_path / "x.txt"))
    assert xy.classes == ("x", "y", "kitten cat")
    assert sorted((it.rel, it.label) for it in xy.splits["train"]) == [("x/b.jpg", 0), ("y/a.jpg", 1)]


def test_a_file_written_in_the_other_unicode_normalisation_keeps_the_folders_spelling(tmp_path):
    src = touch(tmp_path / "src", "Mu\u0308ller/a.jpg", "Zoe/b.jpg")  # the folder as macOS writes it (NFD)
    (tmp_path / "classes.txt").write_text("Abe\nZoe\nM\u00fcller\n")  # the list in NFC
    d = _discover(src, classes=str(tmp_path / "classes.txt"))
    assert d.classes == ("Abe", "Zoe", "Mu\u0308ller")
    assert sorted((it.rel, it.label) for it in d.splits["train"]) == [("Mu\u0308ller/a.jpg", 2), ("Zoe/b.jpg", 1)]


def test_a_file_that_lists_some_of_the_classes_only_is_refused(tmp_path):
    src = touch(tmp_path / "src", *(f"c{i}/a.jpg" for i in range(8)))
    (tmp_path / "classes.txt").write_text("c0\nc7\n")
    with pytest.raises(ConvertError, match=r"^classes file .*classes\.txt lists 2 classes, but not c1, c2, c3, c4, "
                                           r"c5 and 1 more of this source: the labels are the places of its classes "
                                           r"there$"):
        _discover(src, classes=str(tmp_path / "classes.txt"))


def test_multi_label_classes_take_their_places_too(tmp_path):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    (tmp_path / "labels.csv").write_text("a.jpg,cat|dog\nb.jpg,dog\n")
    (tmp_path / "classes.txt").write_text("dog\nbird\ncat\n")
    d = _discover(src, labels=str(tmp_path / "labels.csv"), multi_label=True, classes=str(tmp_path / "classes.txt"))
    assert d.classes == ("dog", "bird", "cat")
    assert sorted((it.rel, it.label) for it in d.splits["train"]) == [("a.jpg", (0, 2)), ("b.jpg", (0,))]


def test_name_id_lines_name_each_id_places365s_categories(tmp_path):
    src, labels = _ids(tmp_path)
    (tmp_path / "categories_places365.txt").write_text("/a/airfield 0\n/b/bakery/shop 2\n/a/alley 1\n")
    d = _discover(src, labels=str(labels), classes=str(tmp_path / "categories_places365.txt"))
    assert d.classes == ("/a/airfield", "/a/alley", "/b/bakery/shop")
    (tmp_path / "numbered.txt").write_text("model 1\nmodel 0\nmodel 2\n")  # the numbers belong to the names
    assert _discover(src, labels=str(labels), classes=str(tmp_path / "numbered.txt")).classes == (
        "model 1", "model 0", "model 2")
    (tmp_path / "twelve.txt").write_text("".join(f"c{i} {i}\n" for i in (11, 2, 10, 0, 1, 3, 4, 5, 6, 7, 8, 9)))
    assert _discover(src, labels=str(labels), classes=str(tmp_path / "twelve.txt")).classes == tuple(
        f"c{i}" for i in range(12))  # ids in numeric order, 10 after 9
    (tmp_path / "spaced.txt").write_text("great white shark 2\ntench 0\ngold fish 1\n")
    assert _discover(src, labels=str(labels), classes=str(tmp_path / "spaced.txt")).classes == (
        "tench", "gold fish", "great white shark")
    (tmp_path / "ids_first.txt").write_text("2 x\n0 y\n1 z\n")  # codes of ids are no `code name` lines: names
    assert _discover(src, labels=str(labels), classes=str(tmp_path / "ids_first.txt")).classes == ("2 x", "0 y", "1 z")
    (tmp_path / "gap.txt").write_text("a 0\nb 1\nc 3\n")  # not 0..K-1: names, one a line
    assert _discover(src, labels=str(labels), classes=str(tmp_path / "gap.txt")).classes == ("a 0", "b 1", "c 3")


def test_codes_are_named_by_code_name_lines_of_three_shapes(tmp_path):
    src = touch(tmp_path / "src", "n01440764/a.jpg", "n01443537/b.jpg", "n01484850/c.jpg")
    shapes = {"LOC_synset_mapping.txt": "n01440764 tench, Tinca tinca\nn01443537 goldfish, Carassius auratus\n"
                                        "n01484850 great white shark\nn09999999 unused\n",
              "words.txt": "n00001740\tentity\nn01440764\ttench, Tinca tinca\nn01443537\tgoldfish, Carassius "
                           "auratus\nn01484850\tgreat white shark\n",
              "descriptions.csv": 'LabelName,DisplayName\nn01484850,great white shark\nn01440764,"tench, Tinca tinca"\n'
                                  "n01443537,goldfish, Carassius auratus\n"}
    for name, text in shapes.items():
        (tmp_path / name).write_text(text)
        d = _discover(src, classes=str(tmp_path / name))
        assert d.classes == ("tench, Tinca tinca", "goldfish, Carassius auratus", "great white shark"), name
        assert sorted((it.rel, it.label) for it in d.splits["train"]) == [
            ("n01440764/a.jpg", 0), ("n01443537/b.jpg", 1), ("n01484850/c.jpg", 2)]  # the labels stay


def test_open_images_mids_named_by_their_descriptions_a_shared_name_given_its_code(tmp_path, caplog):
    src = touch(tmp_path / "src", "a.jpg", "b.jpg")
    (tmp_path / "labels.csv").write_text("ImageID,Source,LabelName,Confidence\na,verification,/m/0cat,1\n"
                                         "a,verification,/m/0ball,1\nb,crowdsource,/m/0bat,1\nb,verification,/m/0cat,0\n")
    (tmp_path / "oidv7-class-descriptions.csv").write_text("LabelName,DisplayName\n/m/0ball,Ball\n/m/0bat,Bat\n"
                                                           "/m/0cat,Cat\n/m/0bat2,Bat\n/m/0zzz,Bat\n")
    d = _discover(src, labels=str(tmp_path / "labels.csv"), multi_label=True,
                  classes=str(tmp_path / "oidv7-class-descriptions.csv"))
    assert d.classes == ("Ball", "Bat", "Cat")  # /m/0bat2 and /m/0zzz are no class of the source: not read
    assert sorted((it.rel, it.label) for it in d.splits["train"]) == [("a.jpg", (0, 2)), ("b.jpg", (1,))]
    (tmp_path / "shared.csv").write_text("/m/0ball,Bat\n/m/0bat,Bat\n/m/0cat,Cat\n")
    d = _discover(src, labels=str(tmp_path / "labels.csv"), multi_label=True, classes=str(tmp_path / "shared.csv"))
    assert d.classes == ("Bat (/m/0ball)", "Bat (/m/0bat)", "Cat")
    assert "2 classes share a name with another (/m/0ball 'Bat', /m/0bat 'Bat')" in caplog.text


@pytest.mark.parametrize(("text", "message"), [
    ("n1,tench\nn2,goldfish\n", r"classes\.txt names 2 of the 3 classes; not n3$"),
    ("n1,tench\nn2,goldfish\nn3,shark\nn1,carp\n", r"classes\.txt:4: 'n1' is named again \(first at "
                                                      r".*classes\.txt:1\): which name is meant\?"),
    ("n1,tench\nn2,tench\nn3,gold\x1b[31mfish\n", r"classes\.txt:3: the class .* holds control characters"),
    ("n1,tench\nn2,\nn3,shark\n", r"classes\.txt names 2 of the 3 classes; not n2$"),
])
def test_a_codes_file_that_cannot_name_every_class_is_refused(tmp_path, text, message):
    src = touch(tmp_path / "src", "n1/a.jpg", "n2/b.jpg", "n3/c.jpg")
    (tmp_path / "classes.txt").write_text(text)
    with pytest.raises(ConvertError, match=message):
        _discover(src, classes=str(tmp_path / "classes.txt"))


def test_ids_named_convert_into_a_manifest_of_names(tmp_path):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=2)
    (tmp_path / "train.txt").write_text("".join(f"class_{c}/img_{i}.jpg {c}\n" for c in range(2) for i in range(2)))
    (tmp_path / "classes.txt").write_text("tench\ngoldfish\n")
    convert_images(src, tmp_path / "out", labels=str(tmp_path / "train.txt"), classes=str(tmp_path / "classes.txt"))
    m = read_manifest(tmp_path / "out")
    assert m.classes == ("tench", "goldfish") and list(m.splits["train"].class_counts) == [2, 2]


def test_more_classes_unnamed_are_counted_and_codes_match_in_either_normalisation(tmp_path):
    src = touch(tmp_path / "src", *(f"n{i}/a.jpg" for i in range(8)), "caf\u00e9/b.jpg")
    (tmp_path / "classes.txt").write_text("n0,tench\n")
    with pytest.raises(ConvertError, match=r"names 1 of the 9 classes; not caf\u00e9, n1, n2, n3, n4 and 3 more$"):
        _discover(src, classes=str(tmp_path / "classes.txt"))
    (tmp_path / "classes.txt").write_text("".join(f"n{i},fish {i}\n" for i in range(8)) + "cafe\u0301,coffee\n")
    assert _discover(src, classes=str(tmp_path / "classes.txt")).classes == (
        "coffee", *(f"fish {i}" for i in range(8)))  # the folders' order, caf\u00e9 first, named by its NFD code
