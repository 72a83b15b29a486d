"""Folders nested deeper than Python's recursion limit, and deeper than the system's longest path. The walk that
every discovery shares went down one call a folder: a chain of a thousand nested folders ended a conversion with
RecursionError (a traceback, not an error), whatever its kind. It is a loop now, its order unchanged; a folder
whose path is too long for the system is a rejection, and kind detection names it, shortened, with what mends it."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest_text import TOKENIZER
from helpers import convert_images, make_image, touch

from converters.text.discover import discover_text
from converters.text.options import TextOptions
from converters.walk import Walk
from fastdata.cli import main as cli
from fastdata.manifest import read_manifest

DEEP = 1100  # past sys.getrecursionlimit() (1000), short of the longest path (2 bytes a level)


@pytest.fixture
def deep_tmp():
    """A temporary folder outside pytest's own, removed by `rm -rf` after the test: pytest removes its temporary
    folders with shutil.rmtree, which recurses a call a folder and stops at the recursion limit (a test killed
    before its clean-up would leave pytest's next run failing in its own)."""
    root = Path(tempfile.mkdtemp(prefix="fastdata-deep-"))
    yield root
    subprocess.run(["rm", "-rf", str(root)], check=True)  # (coreutils' rm walks without recursion)


def chain(top: Path, levels: int) -> Path:
    """`top/a/a/.../a`, `levels` folders deep, made one level at a time from inside (a path past the system's
    limit cannot be made whole)."""
    here = os.getcwd()
    os.chdir(top)
    try:
        for _ in range(levels):
            os.mkdir("a")
            os.chdir("a")
    finally:
        os.chdir(here)
    return top.joinpath(*["a"] * levels)


def test_the_walk_order_is_a_folders_files_then_each_subfolder_whole(tmp_path) -> None:
    src = touch(tmp_path / "src", "z.jpg", "a/1.jpg", "a/b/2.jpg", "a/b/c/3.jpg", "a/d/4.jpg", "a/d/e/5.jpg",
                "y/6.jpg")
    walked = [(p.relative_to(src).as_posix(), problem) for p, problem in Walk().files(src)]
    assert walked == [("z.jpg", None), ("a/1.jpg", None), ("a/b/2.jpg", None), ("a/b/c/3.jpg", None),
                      ("a/d/4.jpg", None), ("a/d/e/5.jpg", None), ("y/6.jpg", None)]


def test_an_image_below_a_thousand_folders_converts(tmp_path, deep_tmp) -> None:
    src = deep_tmp / "src"
    make_image(src / "cat" / "a.jpg", size=(40, 30))
    make_image(src / "dog" / "b.jpg", size=(40, 30), seed=1)
    deep = chain(src / "cat", DEEP)
    make_image(deep / "c.jpg", size=(40, 30), seed=2)
    result = convert_images(src, tmp_path / "out")
    m = read_manifest(tmp_path / "out")
    assert m.splits["train"].samples == 3 and result.rejected == []


def test_a_document_below_a_thousand_folders_is_read(tmp_path, deep_tmp) -> None:
    src = deep_tmp / "src"
    src.mkdir()
    deep = chain(src, DEEP)
    (deep / "deep.txt").write_text("a document far down\n")
    found = discover_text(src, options=TextOptions(tokenizer=str(TOKENIZER)))
    assert [it.rel for items in found.splits.values() for it in items] == ["a/" * DEEP + "deep.txt"]


def test_a_folder_past_the_longest_path_is_rejected_and_named_short(tmp_path, capsys, deep_tmp) -> None:
    src = deep_tmp / "src"
    make_image(src / "cat" / "a.jpg", size=(40, 30))
    make_image(src / "dog" / "b.jpg", size=(40, 30), seed=1)
    chain(src / "cat", 2100)  # 4,200 bytes and more
    assert cli(["convert", str(src), str(tmp_path / "out"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "holds: cat/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/...a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/ cannot be read: " \
           "File name too long (its path is longer than the 4,096 bytes the system takes: nest it less deeply); " \
           "mend that, or name the kind with --kind" in err, err
    assert cli(["convert", str(src), str(tmp_path / "out"), "--kind", "images", "--no-progress"]) == 0
    rejected = read_manifest(tmp_path / "out").rejected
    assert [r["reason"] for r in rejected] == ["unreadable folder: File name too long"]
    assert rejected[0]["source"].startswith("cat/a/a/") and len(rejected[0]["source"]) > 4000
