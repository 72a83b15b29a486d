"""The walk every kind's discovery shares (converters/tree.py), in-process and exact: loops through any folder
between the source and the one walked, the entries after a loop, links outside the split folders, splits without
train, what reasons show of a path, and how much a kind's `detect` looks at. (tests/test_convert_containment.py
runs the same rules end to end through the CLI.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest_text import TOKENIZER
from helpers import make_image

from converters.images.discover import discover_images
from converters.text.discover import discover_text
from converters.text.options import TextOptions
from converters.tree import SPLIT_FOLDERS
from converters.walk import Walk, first_files

OUTSIDE = f"not inside a split folder ({SPLIT_FOLDERS})"


def reasons(found) -> dict[str, tuple[str, str]]:
    return {r.source: (r.split, r.reason) for r in found.rejected}


def sources(found) -> list[str]:
    return sorted(item.rel for items in found.splits.values() for item in items)


def test_a_link_to_a_folder_between_the_source_and_the_class_is_a_loop(tmp_path: Path):
    """From train/cat, a link to train (the folder above the class folder) is a loop: rejected at once, not walked
    again (where each image would have been rejected as taken once, and the link itself never named)."""
    src = tmp_path / "src"
    make_image(src / "train" / "cat" / "a.jpg")
    os.symlink(src / "train", src / "train" / "cat" / "up")
    found = discover_images(src)
    assert sources(found) == ["train/cat/a.jpg"]
    assert reasons(found) == {"train/cat/up": (
        "train", f"symlink loop: points back to {src / 'train'}, a folder being walked")}


def test_the_entries_after_a_loop_are_still_walked(tmp_path: Path):
    src = tmp_path / "src"
    make_image(src / "cat" / "z.jpg")
    os.symlink(".", src / "cat" / "a_loop")
    (src / "cat" / "b_sub").mkdir()
    make_image(src / "cat" / "b_sub" / "c.jpg")
    found = discover_images(src)
    assert sources(found) == ["cat/b_sub/c.jpg", "cat/z.jpg"]
    assert list(reasons(found)) == ["cat/a_loop"]


def test_a_linked_folder_outside_the_split_folders_has_each_file_rejected(tmp_path: Path):
    src = tmp_path / "src"
    make_image(src / "train" / "cat" / "a.jpg")
    make_image(tmp_path / "elsewhere" / "x.jpg")
    make_image(tmp_path / "elsewhere" / "y.jpg")
    os.symlink(tmp_path / "elsewhere", src / "extra")
    (src / "stray").mkdir()
    os.symlink(tmp_path / "elsewhere", src / "stray" / "deep")  # a linked folder inside a folder outside the splits
    found = discover_images(src)
    assert reasons(found) == {f"{top}/{n}": (top.split("/")[0], OUTSIDE)
                              for n in ("x.jpg", "y.jpg") for top in ("extra", "stray/deep")}


def test_a_tree_of_splits_without_train_takes_its_classes_from_every_split(tmp_path: Path):
    src = tmp_path / "src"
    make_image(src / "val" / "cat" / "a.jpg")
    make_image(src / "test" / "dog" / "b.jpg")
    found = discover_images(src)
    assert found.classes == ("cat", "dog") and found.layout == "split/class"
    assert sources(found) == ["test/dog/b.jpg", "val/cat/a.jpg"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_flat_corpus_rejects_what_it_cannot_open_under_its_split(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("one document\n")
    os.mkfifo(src / "pipe.txt")
    os.symlink(tmp_path / "missing.txt", src / "gone.txt")
    found = discover_text(src, options=TextOptions(tokenizer=str(TOKENIZER), split="val"))
    assert found.layout == "flat" and sources(found) == ["a.txt"]
    assert reasons(found) == {"pipe.txt": ("val", "a FIFO, not a regular file: never opened"),
                              "gone.txt": ("val", f"broken symlink (points to {tmp_path / 'missing.txt'})")}


def test_a_single_text_file_is_a_source_of_its_own(tmp_path: Path):
    (tmp_path / "corpus.txt").write_text("one\n\ntwo\n")
    found = discover_text(tmp_path / "corpus.txt", options=TextOptions(tokenizer=str(TOKENIZER), split="test",
                                                                       per_line=True))
    assert found.layout == "file" and found.classes == () and found.rejected == []
    assert [(i.split, i.rel, i.label) for i in found.splits["test"]] == [("test", "corpus.txt:1", None),
                                                                         ("test", "corpus.txt:3", None)]


def test_a_text_file_of_only_blank_lines_is_rejected_as_holding_no_documents(tmp_path: Path):
    (tmp_path / "src" / "a").mkdir(parents=True)
    (tmp_path / "src" / "a" / "doc.txt").write_text("real words\n")
    (tmp_path / "src" / "a" / "blank.txt").write_text("\n\n\n")
    found = discover_text(tmp_path / "src", options=TextOptions(tokenizer=str(TOKENIZER), split="val", per_line=True))
    assert found.layout == "class" and found.classes == ("a",)
    assert reasons(found) == {"a/blank.txt": ("val", "no documents (only blank or separator lines)")}


def test_reasons_show_a_links_target_unless_the_walk_is_private(tmp_path: Path):
    os.symlink(tmp_path / "patient-name", tmp_path / "link")
    first = tmp_path / "a.dcm"
    first.write_bytes(b"x")
    os.symlink(first, tmp_path / "b.dcm")
    for private, shown in ((False, str(tmp_path / "patient-name")), (True, "a path withheld")):
        walk = Walk(private=private)
        assert walk.problem(tmp_path / "link") == f"broken symlink (points to {shown})"
        assert walk.problem(first) is None
        shown_first = "a path withheld" if private else str(first)
        assert walk.problem(tmp_path / "b.dcm") == (
            f"the same file as {shown_first} (reached through a link): taken once")


def test_detect_looks_at_the_first_files_only(tmp_path: Path):
    for i in range(5):
        (tmp_path / f"{i}.txt").write_text("x")
    assert [p.name for p in first_files(tmp_path, 3)] == ["0.txt", "1.txt", "2.txt"]


def _image_tree(src: Path, layout: str) -> tuple[dict, Path]:
    """A small source of `layout` for discover_images, and one of its files."""
    if layout == "split/class":
        return {}, make_image(src / "train" / "cat" / "a.jpg")
    if layout == "class":
        return {}, make_image(src / "cat" / "a.jpg")
    if layout == "flat+labels":
        (src.parent / "labels.csv").write_text("a.jpg,cat\n")
        return {"labels_csv": str(src.parent / "labels.csv")}, make_image(src / "a.jpg")
    return {"unlabeled": True}, make_image(src / "train" / "a.jpg")


@pytest.mark.parametrize("layout", ["split/class", "class", "flat+labels", "unlabeled"])
def test_the_identity_of_an_image_source_changes_with_its_files(tmp_path: Path, layout: str):
    """A conversion into a destination holding another conversion of this source resumes it only when the
    discovery's identity (every file's split, name, label and size) is the same."""
    src = tmp_path / "src"
    options, one = _image_tree(src, layout)
    found = discover_images(src, **options)
    assert found.layout == layout and found.identity == discover_images(src, **options).identity
    assert [row[1] for row in found.identity] == [one.relative_to(src).as_posix()]
    one.write_bytes(one.read_bytes() + b"\0")
    assert discover_images(src, **options).identity != found.identity


def test_the_identity_of_a_text_source_changes_with_its_files(tmp_path: Path):
    doc = tmp_path / "src" / "train" / "news" / "a.txt"
    doc.parent.mkdir(parents=True)
    doc.write_text("one\ntwo\n")
    opts = TextOptions(tokenizer=str(TOKENIZER), per_line=True)
    found = discover_text(tmp_path / "src", options=opts)
    assert found.layout == "split/class" and found.identity == [["train", "train/news/a.txt", 0, 8, 2]]
    single = discover_text(doc, options=opts)
    assert single.layout == "file" and single.classes == () and single.identity == [["train", "a.txt", None, 8, 2]]
    doc.write_text("one\n")
    assert discover_text(doc, options=opts).identity == [["train", "a.txt", None, 4, 1]]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_single_text_source_that_is_not_a_regular_file_is_refused(tmp_path: Path):
    from fastdata.errors import ConvertError

    os.mkfifo(tmp_path / "pipe.txt")
    with pytest.raises(ConvertError, match=r"pipe\.txt cannot be read: a FIFO, not a regular file: never opened"):
        discover_text(tmp_path / "pipe.txt", options=TextOptions(tokenizer=str(TOKENIZER)))


def test_text_follows_links_to_files_and_class_folders_unless_told_not_to(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "far.txt").write_text("far away\n")
    src = tmp_path / "src"
    (src / "news").mkdir(parents=True)
    (src / "news" / "a.txt").write_text("near\n")
    os.symlink(elsewhere / "far.txt", src / "news" / "b.txt")
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "far.txt").write_text("a match\n")
    os.symlink(tmp_path / "games", src / "sport")
    opts = TextOptions(tokenizer=str(TOKENIZER))
    found = discover_text(src, options=opts)
    assert found.classes == ("news", "sport") and found.rejected == []
    assert sources(found) == ["news/a.txt", "news/b.txt", "sport/far.txt"]
    strict = discover_text(src, options=opts, follow_symlinks=False)
    assert strict.classes == ("news",) and sources(strict) == ["news/a.txt"]
    assert reasons(strict) == {n: ("train", "symbolic link not followed (--no-follow-symlinks)")
                               for n in ("news/b.txt", "sport")}


def test_text_splits_without_class_folders_take_subfolders_unlabeled(tmp_path: Path):
    src = tmp_path / "src"
    (src / "train").mkdir(parents=True)
    (src / "train" / "a.txt").write_text("one\n")
    (src / "val" / "more").mkdir(parents=True)
    (src / "val" / "more" / "b.txt").write_text("two\n")
    (tmp_path / "far").mkdir()
    (tmp_path / "far" / "c.txt").write_text("three\n")
    os.symlink(tmp_path / "far", src / "val" / "linked")
    found = discover_text(src, options=TextOptions(tokenizer=str(TOKENIZER)))
    assert found.layout == "split" and found.classes == () and found.rejected == []
    assert {s: [(i.rel, i.label) for i in items] for s, items in found.splits.items()} == {
        "train": [("train/a.txt", None)], "val": [("val/linked/c.txt", None), ("val/more/b.txt", None)]}


def test_a_text_val_class_that_train_lacks_is_rejected_under_val(tmp_path: Path, caplog):
    src = tmp_path / "src"
    for rel in ("train/news/a.txt", "train/sport/c.txt", "val/news/b.txt", "val/weather/d.txt"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("words\n")
    (src / "train" / "sport" / "c.txt").write_text("")  # sport ends up with no documents
    with caplog.at_level("WARNING", logger="converters.tree"):
        found = discover_text(src, options=TextOptions(tokenizer=str(TOKENIZER)))
    assert found.classes == ("news", "sport")
    assert reasons(found) == {"val/weather/d.txt": ("val", "class folder 'weather' is not among train's classes"),
                              "train/sport/c.txt": ("train", "empty file (0 bytes)")}
    assert [r.getMessage() for r in caplog.records] == ["class 'sport' has no documents"]


@pytest.mark.parametrize("layout", ["class", "split/class"])
def test_a_linked_class_folder_not_followed_is_rejected_as_a_link(tmp_path: Path, layout: str):
    """It was rejected as 'not inside a class folder', which it is; the link is why."""
    root = tmp_path / "src" / ("train" if layout == "split/class" else "")
    make_image(root / "cat" / "a.jpg")
    make_image(tmp_path / "dogs" / "b.jpg")
    os.symlink(tmp_path / "dogs", root / "dog")
    prefix = "train/" if layout == "split/class" else ""
    followed = discover_images(tmp_path / "src")
    assert followed.classes == ("cat", "dog") and sources(followed) == [f"{prefix}cat/a.jpg", f"{prefix}dog/b.jpg"]
    strict = discover_images(tmp_path / "src", follow_symlinks=False)
    assert strict.classes == ("cat",) and sources(strict) == [f"{prefix}cat/a.jpg"]
    assert reasons(strict) == {f"{prefix}dog": ("train", "symbolic link not followed (--no-follow-symlinks)")}


def test_linked_split_and_class_folders_are_walked_when_followed(tmp_path: Path):
    make_image(tmp_path / "dogs" / "b.jpg")
    (tmp_path / "src" / "train").mkdir(parents=True)
    os.symlink(tmp_path / "dogs", tmp_path / "src" / "train" / "dog")  # train's only class folder is a link
    found = discover_images(tmp_path / "src")
    assert found.layout == "split/class" and found.classes == ("dog",) and sources(found) == ["train/dog/b.jpg"]
    (tmp_path / "unlabeled").mkdir()
    os.symlink(tmp_path / "dogs", tmp_path / "unlabeled" / "val")  # a split folder that is a link
    found = discover_images(tmp_path / "unlabeled", unlabeled=True)
    assert {s: [i.rel for i in items] for s, items in found.splits.items()} == {"val": ["val/b.jpg"]}


def test_a_class_folder_with_subfolders_is_a_class_not_a_split(tmp_path: Path):
    make_image(tmp_path / "src" / "cat" / "kittens" / "a.jpg")
    make_image(tmp_path / "src" / "dog" / "b.jpg")
    found = discover_images(tmp_path / "src")
    assert found.layout == "class" and found.classes == ("cat", "dog")
    assert [(i.rel, i.label) for i in found.splits["train"]] == [("cat/kittens/a.jpg", 0), ("dog/b.jpg", 1)]


def test_an_image_val_class_that_train_lacks_is_rejected_under_val(tmp_path: Path):
    make_image(tmp_path / "src" / "train" / "cat" / "a.jpg")
    make_image(tmp_path / "src" / "val" / "dog" / "b.jpg")
    assert reasons(discover_images(tmp_path / "src")) == {
        "val/dog/b.jpg": ("val", "class folder 'dog' is not among train's classes")}


def test_links_not_followed_are_rejected_as_links_in_every_layout(tmp_path: Path):
    """With follow_symlinks=False a linked split, class or sub folder is rejected as a link, never walked into (a
    linked split folder of an unlabeled tree, or a subfolder of a text split, had their files taken), and never a
    class."""
    make_image(tmp_path / "pics" / "b.jpg")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "far.txt").write_text("far\n")
    not_followed = "symbolic link not followed (--no-follow-symlinks)"

    unlabeled = tmp_path / "unlabeled"
    make_image(unlabeled / "val" / "a.jpg")
    os.symlink(tmp_path / "pics", unlabeled / "train")
    found = discover_images(unlabeled, unlabeled=True, follow_symlinks=False)
    assert sources(found) == ["val/a.jpg"] and reasons(found) == {"train": ("", not_followed)}

    flat = tmp_path / "flat"
    make_image(flat / "a.jpg")
    os.symlink(tmp_path / "pics", flat / "more")
    (tmp_path / "labels.csv").write_text("a.jpg,cat\n")
    found = discover_images(flat, labels_csv=str(tmp_path / "labels.csv"), follow_symlinks=False)
    assert sources(found) == ["a.jpg"] and reasons(found) == {"more": ("train", not_followed)}

    opts = TextOptions(tokenizer=str(TOKENIZER))
    text = tmp_path / "text"
    (text / "train").mkdir(parents=True)
    (text / "train" / "a.txt").write_text("near\n")
    os.symlink(tmp_path / "docs", text / "train" / "linked")
    assert discover_text(text, options=opts).classes == ("linked",)  # followed, a class...
    found = discover_text(text, options=opts, follow_symlinks=False)
    assert found.layout == "split" and sources(found) == ["train/a.txt"]  # ...and unlabeled, not walked into
    assert reasons(found) == {"train/linked": ("train", not_followed)}

    (text / "train" / "a.txt").unlink()
    (text / "train" / "news").mkdir()
    (text / "train" / "news" / "a.txt").write_text("near\n")
    assert discover_text(text, options=opts).classes == ("linked", "news")
    found = discover_text(text, options=opts, follow_symlinks=False)
    assert found.classes == ("news",) and reasons(found) == {"train/linked": ("train", not_followed)}


def test_a_linked_folder_inside_a_class_folder_is_not_walked_when_links_are_not_followed(tmp_path: Path):
    make_image(tmp_path / "src" / "cat" / "a.jpg")
    make_image(tmp_path / "more" / "b.jpg")
    os.symlink(tmp_path / "more", tmp_path / "src" / "cat" / "more")
    assert sources(discover_images(tmp_path / "src")) == ["cat/a.jpg", "cat/more/b.jpg"]
    found = discover_images(tmp_path / "src", follow_symlinks=False)
    assert sources(found) == ["cat/a.jpg"]
    assert reasons(found) == {"cat/more": ("train", "symbolic link not followed (--no-follow-symlinks)")}


def test_what_cannot_be_read_is_rejected_with_the_systems_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Running as root, permissions cannot make a folder unreadable: the system calls fail here instead."""
    make_image(tmp_path / "src" / "cat" / "a.jpg")
    make_image(tmp_path / "src" / "dog" / "b.jpg")
    listdir, scandir, lstat = os.listdir, os.scandir, os.lstat

    def no_dog(path):
        if str(path).endswith("dog"):
            raise PermissionError(13, "Permission denied", str(path))
        return listdir(path)

    def no_dog_entries(path):
        if str(path).endswith("dog"):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    def no_a(path, *args, **kwargs):
        if str(path).endswith("a.jpg"):
            raise PermissionError(13, "Permission denied", str(path))
        return lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "listdir", no_dog)
    monkeypatch.setattr(os, "scandir", no_dog_entries)
    monkeypatch.setattr(os, "lstat", no_a)
    found = discover_images(tmp_path / "src")
    assert reasons(found) == {"dog": ("train", "unreadable folder: Permission denied"),
                              "cat/a.jpg": ("train", "unreadable: Permission denied")}


def test_a_name_written_three_ways_names_the_other_two(tmp_path: Path):
    """Å composed, decomposed, and as the Angstrom sign: one name in NFC."""
    names = ("\u00c5", "A\u030a", "\u212b")
    for name in names:
        make_image(tmp_path / "src" / name / "a.jpg")
    found = discover_images(tmp_path / "src")
    assert found.classes == ()
    assert reasons(found)["\u212b/a.jpg"] == ("train", "class folder name '\\u212b' differs from 'A\\u030a', '\\xc5' "
                                               "only in Unicode normalisation (NFC/NFD): the same name twice; merge or "
                                               "rename the folders")


def test_why_a_folder_name_cannot_be_a_class():
    from converters.class_folders import class_folder_problem

    assert class_folder_problem("caf\udce9") == "class folder name is not valid UTF-8: rename the folder"
    assert class_folder_problem("a\tb") == ("class folder name holds control characters (an escape sequence, a tab, "
                                            "a newline, a bidi override): rename the folder")
    assert class_folder_problem("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645") is None  # a zero-width non-joiner


@pytest.mark.parametrize(("src", "path", "rel"), [
    ("/data/photos", "/data/photos/cat/a.jpg", "cat/a.jpg"),
    ("/data/photos", "/data/photos/../photos/cat/a.jpg", "cat/a.jpg"),  # normalised first
    ("/data/photos", "/data/photos2/a.jpg", "/data/photos2/a.jpg"),  # a sibling that starts alike is not under it
    ("/data/photos", "cat/a.jpg", "cat/a.jpg"),  # relative: as written
    ("/data/photos ", "/data/photos /a.jpg", "a.jpg"),  # a name ending in a space keeps it
    ("/data/IMGX", "/data/IMGX/a.jpg", "a.jpg"),
    ("/", "/data/a.jpg", "data/a.jpg"),  # the root itself
])
def test_a_full_path_in_a_table_is_made_relative_to_the_source_it_lies_under(src: str, path: str, rel: str):
    from converters.tree import under_source

    assert under_source(path, Path(src)) == rel


def test_a_full_path_is_made_relative_through_the_link_or_the_folder_it_names(tmp_path: Path):
    """A table exported with full paths names the source as the user reached it (a link) or as it is (the folder the
    link names): both are recognised, whatever their names end with."""
    from converters.tree import under_source

    for real_name, link_name in (("photosX", "link "), ("photos ", "linkX")):
        real, link = tmp_path / real_name, tmp_path / link_name
        real.mkdir()
        link.symlink_to(real)
        assert under_source(f"{link}/cat/a.jpg", link) == "cat/a.jpg"
        assert under_source(f"{real}/cat/a.jpg", link) == "cat/a.jpg"
        assert under_source(f"{tmp_path}/other/a.jpg", link) == f"{tmp_path}/other/a.jpg"


def test_a_folder_handed_to_problem_is_not_a_regular_file(tmp_path: Path):
    assert Walk().problem(tmp_path) == "not a regular file"


def test_a_walk_below_its_root_knows_every_folder_between_and_one_outside_it_none(tmp_path: Path):
    """A link back to any folder between the root and the walked folder is a loop, however deep; a folder outside the
    root is walked as it is."""
    root = tmp_path / "root"
    deep = root / "x" / "y" / "z"
    deep.mkdir(parents=True)
    (deep / "a.txt").write_text("a")
    os.symlink(root / "x", deep / "up")  # two folders above z, below root
    assert [(p.name, why) for p, why in Walk().files(deep, root=root)] == [
        ("a.txt", None), ("up", f"symlink loop: points back to {root / 'x'}, a folder being walked")]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.txt").write_text("b")
    assert [(p.name, why) for p, why in Walk().files(elsewhere, root=root)] == [("b.txt", None)]
