"""DICOM discovery (converters/dicom/discover.py) compared whole: series grouped by SeriesInstanceUID per split,
every file that is not a usable image rejected with its own reason, files outside the split folders recorded, the
layout and the identity that resume checks, links followed or not, and the header read without pixels."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pydicom")

from conftest_dicom import edit_dicom, make_slice  # noqa: E402

from converters.dicom import discover  # noqa: E402
from converters.dicom.discover import SeriesFiles, _bounded_map, discover_dicom, read_header  # noqa: E402
from converters.sample import Rejection  # noqa: E402
from converters.tree import SPLIT_FOLDERS  # noqa: E402
from fastdata.errors import ConvertError, MissingDependencyError  # noqa: E402

PLANE = np.full((4, 4), 100, np.uint16)
OUTSIDE = f"not inside a split folder ({SPLIT_FOLDERS})"


def _slice(path: Path, uid: str, z: float = 0.0, **attrs: object) -> Path:
    make_slice(path, PLANE, series_uid=uid, position=(0.0, 0.0, z), pixel_spacing=(1.0, 1.0), instance=int(z) + 1)
    if attrs:
        edit_dicom(path, **attrs)
    return path


def _items(found) -> list[tuple[str, str, str, str, tuple]]:
    return [(split, it.split, it.rel, it.source, it.payload) for split, items in found.splits.items() for it in items]


@pytest.fixture
def export(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    for n in (2, 0, 1):  # written out of order: discovery sorts
        _slice(src / "train" / "a" / f"{n:02d}.dcm", "1.2.1", z=2.0 * n)
    _slice(src / "train" / "b" / "x.dcm", "1.2.2")
    _slice(src / "val" / "c" / "y.dcm", "1.2.3")
    (src / "train" / "notes.txt").write_text("hello")
    (src / "train" / "empty.dcm").write_bytes(b"")
    (src / "train" / "short.dcm").write_bytes(b"\0" * 131)
    _slice(src / "train" / "dir.dcm", "1.2.9", SOPClassUID="1.2.840.10008.1.3.10")
    # the dataset's own SOP class (a text report) is named, not the file meta's (CT, from make_slice)
    edit_dicom(_slice(src / "train" / "sr.dcm", "1.2.9"), file_meta={}, SOPClassUID="1.2.840.10008.5.1.4.1.1.88.11",
               Rows=None)
    edit_dicom(_slice(src / "train" / "unknown.dcm", "1.2.9"), file_meta={}, SOPClassUID="1.2.3.4.5", Rows=None)
    # no SOP class in the dataset: the file meta's says what it is
    edit_dicom(_slice(src / "train" / "dirmeta.dcm", "1.2.9"), SOPClassUID=None,
               file_meta={"MediaStorageSOPClassUID": "1.2.840.10008.1.3.10"})
    _slice(src / "train" / "burned.dcm", "1.2.9", BurnedInAnnotation="YES")
    _slice(src / "train" / "nocols.dcm", "1.2.9", Columns=None)
    _slice(src / "train" / "nouid.dcm", "1.2.9", SeriesInstanceUID=None)
    os.symlink(src / "nowhere", src / "train" / "gone.dcm")
    (src / "stray.dcm").write_bytes(b"x")
    (src / "other" / "deep").mkdir(parents=True)
    (src / "other" / "deep" / "z.dcm").write_bytes(b"z")
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "w.dcm").write_bytes(b"w")
    os.symlink(tmp_path / "more", src / "other" / "inner")  # a link inside a folder outside the split folders
    return src


def test_series_per_split_and_every_rejection(export: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="converters.dicom.discover"):
        found = discover_dicom(export)
    a = [(str(export / "train" / "a" / f"{n:02d}.dcm"), f"train/a/{n:02d}.dcm") for n in range(3)]
    b = [(str(export / "train" / "b" / "x.dcm"), "train/b/x.dcm")]
    c = [(str(export / "val" / "c" / "y.dcm"), "val/c/y.dcm")]
    assert _items(found) == [("train", "train", "train/a (3 files)", a[0][0], SeriesFiles("1.2.1", tuple(a))),
                             ("train", "train", "train/b/x.dcm", b[0][0], SeriesFiles("1.2.2", tuple(b))),
                             ("val", "val", "val/c/y.dcm", c[0][0], SeriesFiles("1.2.3", tuple(c)))]
    no_image = "DICOM object without an image (no Rows/Columns; {})"
    assert found.rejected == [
        Rejection("", "other/deep/z.dcm", OUTSIDE),
        Rejection("", "other/inner/w.dcm", OUTSIDE),
        Rejection("", "stray.dcm", OUTSIDE),
        Rejection("train", "train/gone.dcm", "broken symlink (points to a path withheld)"),  # private by default
        Rejection("train", "train/burned.dcm", "BurnedInAnnotation YES: the pixels may show identifying text that "
                  "de-identification cannot remove (--allow-burned-in converts such images)"),
        Rejection("train", "train/dir.dcm", "DICOMDIR (a directory index, not an image)"),
        Rejection("train", "train/dirmeta.dcm", "DICOMDIR (a directory index, not an image)"),
        Rejection("train", "train/empty.dcm", "empty file (0 bytes)"),
        Rejection("train", "train/nocols.dcm", no_image.format("CT Image Storage")),
        Rejection("train", "train/notes.txt", "not a DICOM file (no 'DICM' marker at byte 128)"),
        Rejection("train", "train/nouid.dcm", "image without SeriesInstanceUID (cannot be grouped into a series)"),
        Rejection("train", "train/short.dcm", "not a DICOM file (no 'DICM' marker at byte 128)"),
        Rejection("train", "train/sr.dcm", no_image.format("Basic Text SR Storage")),
        Rejection("train", "train/unknown.dcm", no_image.format("a SOP class pydicom does not know")),
    ]
    assert [r.getMessage() for r in caplog.records] == ["found 3 series (14 files rejected)"]
    # without following links, a link inside a folder outside the split folders is recorded itself
    unfollowed = discover_dicom(export, follow_symlinks=False)
    assert [r.source for r in unfollowed.rejected if not r.split] == ["other/inner", "other/deep/z.dcm", "stray.dcm"]
    size = (export / "train" / "b" / "x.dcm").stat().st_size
    assert found.layout == "split/series" and found.classes == ()
    assert found.identity == [["train", [[r, size] for _, r in a]], ["train", [[b[0][1], size]]],
                              ["val", [[c[0][1], size]]]]


def test_without_split_folders_every_series_goes_to_one_split(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _slice(src / "one.dcm", "1.3.1", z=0.0)
    _slice(src / "two.dcm", "1.3.1", z=1.0)  # a series whose files share no folder below SRC
    _slice(src / "s" / "t" / "x.dcm", "1.3.2")
    _slice(src / "s" / "u" / "y.dcm", "1.3.2", z=1.0)
    found = discover_dicom(src)
    assert [(s, it.rel) for s, items in found.splits.items() for it in items] == [
        ("train", ". (2 files)"), ("train", "s (2 files)")]
    assert found.layout == "series" and found.rejected == []
    assert list(discover_dicom(src, split="test").splits) == ["test"]


def test_split_folders_by_other_names(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _slice(src / "Training" / "a" / "x.dcm", "1.3.1")
    _slice(src / "validation" / "b" / "y.dcm", "1.3.2")
    found = discover_dicom(src)
    assert [(s, it.rel) for s, items in found.splits.items() for it in items] == [
        ("train", "Training/a/x.dcm"), ("val", "validation/b/y.dcm")]
    assert found.layout == "split/series"


def test_a_source_that_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "f.dcm").write_bytes(b"x")
    for src in (tmp_path / "f.dcm", tmp_path / "missing"):
        with pytest.raises(ConvertError) as caught:
            discover_dicom(src)
        assert str(caught.value) == f"source {src} is not a directory"


def test_links_are_followed_by_default_and_refused_when_asked(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _slice(elsewhere / "series" / "x.dcm", "1.4.1")
    _slice(elsewhere / "valset" / "y.dcm", "1.4.2")
    _slice(elsewhere / "loose" / "z.dcm", "1.4.3")
    src = tmp_path / "src"
    (src / "train").mkdir(parents=True)
    os.symlink(elsewhere / "series", src / "train" / "linked")  # a series folder that is a link
    os.symlink(elsewhere / "valset", src / "val")  # a split folder that is a link
    os.symlink(elsewhere / "loose", src / "extra")  # a link to a folder outside the split folders
    found = discover_dicom(src)
    assert [(s, it.rel) for s, items in found.splits.items() for it in items] == [
        ("train", "train/linked/x.dcm"), ("val", "val/y.dcm")]
    assert found.rejected == [Rejection("", "extra/z.dcm", OUTSIDE)]
    kept = discover_dicom(src, follow_symlinks=False)
    assert list(kept.splits) == ["train"] and kept.splits["train"] == []
    assert kept.rejected == [Rejection("", "extra", OUTSIDE), Rejection("", "val", OUTSIDE),
                             Rejection("train", "train/linked", "symbolic link not followed (--no-follow-symlinks)")]


def test_a_link_back_to_the_source_is_a_loop_named_privately(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _slice(src / "train" / "a.dcm", "1.5.1")
    os.symlink(src, src / "train" / "up")
    found = discover_dicom(src)
    assert [it.rel for it in found.splits["train"]] == ["train/a.dcm"]
    assert found.rejected == [
        Rejection("train", "train/up", "symlink loop: points back to a path withheld, a folder being walked")]
    shown = discover_dicom(src, private=False)  # paths shown where they identify no one
    assert shown.rejected == [
        Rejection("train", "train/up", f"symlink loop: points back to {src}, a folder being walked")]


def test_the_header_is_read_without_its_pixels(tmp_path: Path) -> None:
    ds, reason = read_header(_slice(tmp_path / "a.dcm", "1.6.1"))
    assert reason is None and ds.SeriesInstanceUID == "1.6.1" and "PixelData" not in ds
    assert read_header(tmp_path) == (None, "unreadable: Is a directory")


def test_a_header_pydicom_cannot_read_is_a_fixed_text_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pydicom.errors import InvalidDicomError

    path = _slice(tmp_path / "a.dcm", "1.6.2")

    def refuse(*args, **kwargs):
        raise InvalidDicomError("File is missing DICOM File Meta Information header")

    monkeypatch.setattr("pydicom.dcmread", refuse)
    assert read_header(path) == (
        None, "corrupt DICOM header: InvalidDicomError: File is missing DICOM File Meta Information header")


def test_pydicom_is_asked_for_by_its_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _slice(tmp_path / "a.dcm", "1.6.3")
    monkeypatch.setitem(__import__("sys").modules, "pydicom", None)  # an import of it now fails
    with pytest.raises(MissingDependencyError) as caught:
        discover.read_header(path)
    assert str(caught.value) == "'pydicom' is not installed; install it with: pip install 'fastdata[dicom]'"


def test_headers_are_read_in_bounded_chunks_in_order() -> None:
    with ThreadPoolExecutor(3) as pool:
        assert list(_bounded_map(pool, lambda x: x * 10, list(range(10)), chunk=3)) == [x * 10 for x in range(10)]
        assert list(_bounded_map(pool, lambda x: x, [])) == []
