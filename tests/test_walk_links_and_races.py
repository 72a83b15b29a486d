"""The walk every discovery shares, against a link to a folder that holds the source and against entries that go
between being listed and being looked at.

- A link to `/` (or to the home folder, or to the source's parent) in a class folder was followed: the walk took
  everything on the machine around the source, and in /proc met a process that had ended between its listing and
  its stat, which stopped the discovery with FileNotFoundError after 5 s. Such a link is a rejection now.
- A folder gone between its listing and its stat (a folder of temporary files, a process in /proc) is a rejection,
  not an exception; so is a link gone before it could be read. Kind detection does not count a folder that is gone
  among those it cannot read: it hides nothing."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from fuzz_unreadable import unlisted
from helpers import split_items, split_rejections, touch

from converters.images.discover import discover_images
from converters.walk import Walk, first_unreadable

AROUND = "symlink to a folder that holds the source: {} (followed, the walk would take all that lies around the source)"


def test_a_link_to_a_folder_that_holds_the_source_is_rejected_not_walked(tmp_path) -> None:
    src = touch(tmp_path / "src", "cat/a.jpg", "dog/b.jpg")
    touch(tmp_path, "elsewhere/c.jpg")  # beside the source: what following `up` would have taken
    os.symlink("/", src / "dog" / "everything")
    os.symlink(tmp_path, src / "cat" / "up")
    os.symlink(tmp_path / "elsewhere", src / "cat" / "photos")  # a link to a folder outside: followed, as ever
    found = discover_images(src)
    assert split_items(found) == {"train": [("cat/a.jpg", 0), ("cat/photos/c.jpg", 0), ("dog/b.jpg", 1)]}
    assert split_rejections(found) == [("train", "cat/up", AROUND.format(tmp_path)),
                                       ("train", "dog/everything", AROUND.format("/"))]


def test_a_walk_below_the_source_measures_from_the_source(tmp_path) -> None:
    src = touch(tmp_path / "src", "cat/a.jpg")
    os.symlink(src, src / "cat" / "back")  # a loop: the source is a folder being walked
    os.symlink(tmp_path, src / "cat" / "up")
    walked = dict(Walk().files(src / "cat", root=src))
    assert walked[src / "cat" / "up"] == AROUND.format(tmp_path)
    assert walked[src / "cat" / "back"].startswith("symlink loop: points back to ")
    private = dict(Walk(private=True).files(src / "cat", root=src))  # DICOM's: no path in a reason
    assert private[src / "cat" / "up"] == AROUND.format("a path withheld")


def test_a_folder_gone_since_it_was_listed_is_a_rejection(tmp_path, monkeypatch) -> None:
    src = touch(tmp_path / "src", "cat/a.jpg", "cat/gone/b.jpg", "dog/c.jpg")
    gone = str(src / "cat" / "gone")
    real_stat, real_isdir = os.stat, os.path.isdir

    def stat(path, *args, **kwargs):
        if os.fspath(path) == gone:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), gone)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os.path, "isdir", lambda p: os.fspath(p) == gone or real_isdir(p))  # a folder when listed
    found = discover_images(src)
    assert split_items(found) == {"train": [("cat/a.jpg", 0), ("dog/c.jpg", 1)]}
    assert split_rejections(found) == [("train", "cat/gone", "unreadable folder: No such file or directory")]


def test_a_link_gone_before_it_is_read_is_a_rejection(tmp_path, monkeypatch) -> None:
    src = touch(tmp_path / "src", "cat/a.jpg", "dog/c.jpg")
    os.symlink(tmp_path / "nowhere.jpg", src / "cat" / "dangling.jpg")
    os.symlink(tmp_path / "nowhere.jpg", src / "cat" / "gone.jpg")
    real_readlink = os.readlink

    def readlink(path, *args, **kwargs):
        if os.fspath(path).endswith("gone.jpg"):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
        return real_readlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "readlink", readlink)
    found = discover_images(src)
    assert split_rejections(found) == [
        ("train", "cat/dangling.jpg", f"broken symlink (points to {tmp_path / 'nowhere.jpg'})"),
        ("train", "cat/gone.jpg", "unreadable: No such file or directory")]


def test_kind_detection_does_not_count_a_folder_that_is_gone(tmp_path) -> None:
    src = touch(tmp_path / "src", "cat/a.jpg", "gone/b.jpg", "locked/c.jpg")
    with unlisted({str(src / "gone"): errno.ENOENT, str(src / "locked"): errno.EACCES}):
        assert first_unreadable(src, 100) == [(src / "locked", "Permission denied")]
        assert [p for p, why in Walk().files(src) if why] == [Path(src / "gone"), Path(src / "locked")]
