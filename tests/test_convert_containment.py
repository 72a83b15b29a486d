"""Nothing is read outside SRC unless the user's own link says so, nothing blocks or streams forever: links
are followed to regular files and folders (each real file once, loops rejected), FIFOs and devices are
rejected without being opened, and --no-follow-symlinks rejects every link. Every kind walks the same way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_text import TOKENIZER
from helpers import make_image, make_image_tree


def convert(src: Path, dst: Path, *extra: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "fastdata", "convert", str(src), str(dst), "-j", "1",
                           "--no-progress", *extra], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads((dst / "manifest.json").read_text())


def reasons(manifest: dict) -> dict[str, str]:
    return {r["source"]: r["reason"] for r in manifest["rejected"]}


def test_a_loop_is_walked_once_and_rejected(tmp_path: Path):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=3)
    os.symlink(".", src / "class_0" / "loop")
    os.symlink("..", src / "class_1" / "up")  # a second loop, through the parent
    m = convert(src, tmp_path / "out")
    assert m["splits"]["train"]["samples"] == 6  # each image once, not 41 times
    r = reasons(m)
    assert "symlink loop" in r["class_0/loop"] and "symlink loop" in r["class_1/up"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifos_and_devices_are_never_opened(tmp_path: Path):
    src = make_image_tree(tmp_path / "src", classes=1, per_class=2)
    os.mkfifo(src / "class_0" / "pipe.jpg")
    os.symlink("/dev/zero", src / "class_0" / "zero.jpg")
    m = convert(src, tmp_path / "out")  # returns (timeout 120 s): nothing blocked on the FIFO or read /dev/zero
    r = reasons(m)
    assert "a FIFO" in r["class_0/pipe.jpg"] and "character device" in r["class_0/zero.jpg"]
    assert m["splits"]["train"]["samples"] == 2


def test_links_are_followed_once_or_not_at_all(tmp_path: Path):
    outside = make_image(tmp_path / "elsewhere" / "far.jpg", seed=9)
    src = make_image_tree(tmp_path / "src", classes=1, per_class=2)
    os.symlink(outside, src / "class_0" / "far.jpg")
    os.symlink(outside, src / "class_0" / "far_again.jpg")
    os.symlink(tmp_path / "elsewhere", src / "class_0" / "folder")
    m = convert(src, tmp_path / "out")
    assert m["splits"]["train"]["samples"] == 3  # the two images, and the linked file once
    r = reasons(m)
    assert "taken once" in r["class_0/far_again.jpg"] and "taken once" in r["class_0/folder/far.jpg"]
    strict = convert(src, tmp_path / "strict", "--no-follow-symlinks")
    assert strict["splits"]["train"]["samples"] == 2
    assert all("not followed" in reasons(strict)[k] for k in ("class_0/far.jpg", "class_0/folder"))


def test_text_and_dicom_walk_the_same_way(tmp_path: Path):
    corpus = tmp_path / "corpus"
    (corpus / "a").mkdir(parents=True)
    (corpus / "a" / "doc.txt").write_text("hello world\n")
    os.mkfifo(corpus / "a" / "pipe.txt")
    os.symlink(".", corpus / "a" / "loop")
    m = convert(corpus, tmp_path / "tokens", "--kind", "text", "--tokenizer", str(TOKENIZER))
    r = reasons(m)
    assert "a FIFO" in r["a/pipe.txt"] and "symlink loop" in r["a/loop"]
    pytest.importorskip("pydicom")
    from conftest_dicom import write_phantom

    write_phantom(tmp_path / "scans" / "p1")
    os.mkfifo(tmp_path / "scans" / "p1" / "pipe")
    os.symlink("/dev/zero", tmp_path / "scans" / "zero")
    m = convert(tmp_path / "scans", tmp_path / "vols", "--kind", "dicom", "--salt", "s")
    r = reasons(m)
    assert m["splits"]["train"]["samples"] == 1
    assert any("a FIFO" in v for v in r.values()) and any("character device" in v for v in r.values())
    shutil.rmtree(tmp_path / "scans")


def _linked_source(kind: str, root: Path) -> tuple[Path, str]:
    """A source of `kind` with one input that is a link to a file outside it; returns (src, the link's name)."""
    src, outside = root / "src", root / "outside"
    outside.mkdir(parents=True)
    if kind in ("images", "image_text"):
        make_image_tree(src, classes=1, per_class=2)
        make_image(outside / "far.jpg", seed=9)
        if kind == "image_text":
            for p in (src / "class_0").glob("*.jpg"):
                p.with_suffix(".txt").write_text(f"a photo called {p.stem}\n")
            (src / "class_0" / "far.txt").write_text("a photo from far away\n")
        os.symlink(outside / "far.jpg", src / "class_0" / "far.jpg")
        return src, "class_0/far.jpg"
    if kind == "text":
        (src / "a").mkdir(parents=True)
        (src / "a" / "doc.txt").write_text("hello world\n")
        (outside / "far.txt").write_text("far away\n")
        os.symlink(outside / "far.txt", src / "a" / "far.txt")
        return src, "a/far.txt"
    pytest.importorskip("pydicom")
    from conftest_dicom import write_phantom

    write_phantom(src / "p1")
    first = sorted((src / "p1").iterdir())[0]
    shutil.move(first, outside / "slice")
    os.symlink(outside / "slice", first)
    return src, f"p1/{first.name}"  # a DICOM input is the series: its slices are named in rejections


@pytest.mark.parametrize(("kind", "followed", "kept"), [
    ("images", ["class_0/far.jpg", "class_0/img_0.jpg", "class_0/img_1.jpg"],
     ["class_0/img_0.jpg", "class_0/img_1.jpg"]),
    ("image_text", ["class_0/far.jpg", "class_0/img_0.jpg", "class_0/img_1.jpg"],
     ["class_0/img_0.jpg", "class_0/img_1.jpg"]),
    ("text", ["a/doc.txt", "a/far.txt"], ["a/doc.txt"]),
    ("dicom", ["p1 (16 files)"], ["p1 (15 files)"]),
])
def test_each_kind_hands_no_follow_symlinks_to_its_walk(tmp_path: Path, kind: str, followed: list, kept: list):
    """In-process, through the kind's own discover (the CLI tests above run a subprocess)."""
    from converters import get_kind
    from converters.dicom.options import DicomOptions
    from converters.image_text import ImageTextOptions
    from converters.images import ImageOptions
    from converters.text.options import TextOptions

    options = {"images": ImageOptions(), "image_text": ImageTextOptions(), "dicom": DicomOptions(),
               "text": TextOptions(tokenizer=str(TOKENIZER))}[kind]
    src, link = _linked_source(kind, tmp_path)
    found = get_kind(kind).discover(src, options=options)
    assert [i.rel for items in found.splits.values() for i in items] == followed and found.rejected == []
    strict = get_kind(kind).discover(src, options=options, follow_symlinks=False)
    assert [i.rel for items in strict.splits.values() for i in items] == kept
    assert [(r.source, r.reason) for r in strict.rejected if "link" in r.reason] == [
        (link, "symbolic link not followed (--no-follow-symlinks)")]
