"""A DST inside its own source (`fastdata convert photos/ photos/shards/`), and the next conversion of that source.
The second conversion read the first one's folder as a class ('shards', without images: a model head one class
too wide) and its tars, indexes and manifest as rejected inputs; beside a text corpus's loose files it made the tree
one of class folders and converted nothing, after reading the DST's Arrow shard and manifest as input tables; a
DICOM or NIfTI private report beside the DST became a rejected input. What fastdata wrote (a manifest.json of
format "fastdata", a conversion's `.partial/` plan or lock, a private report) is not read: converters/outputs.py,
listed by converters/walk.py's `listed`."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest
from conftest_dicom import Phantom, convert_dicom, write_phantom
from conftest_nifti import convert_nifti, decathlon
from conftest_pairs import convert_pairs, make_pair_tree
from conftest_text import convert_text, copy_fortunes
from helpers import convert_images, crash_after_first_record, make_image, make_image_tree

from converters.outputs import written_by_fastdata
from converters.state import PARTIAL
from converters.walk import listed


def _summary(dst: Path) -> tuple:
    manifest = json.loads((dst / "manifest.json").read_text())
    samples = {split: info["samples"] for split, info in manifest["splits"].items()}
    return manifest["classes"], samples, manifest["rejected"], manifest["fingerprint"]


def _class_split_tree(root: Path) -> None:
    """`root/<class>/{train,val}/`: the layout a DST inside a class folder turned into one split of class folders."""
    for c in range(2):
        for s, split in enumerate(("train", "val")):
            for i in range(2):
                make_image(root / f"class_{c}" / split / f"img_{i}.jpg", seed=10 * c + 3 * s + i, quality=92)


def _split_series(root: Path) -> None:
    write_phantom(root / "train" / "p0", Phantom(slices=4))
    write_phantom(root / "val" / "p1", Phantom(slices=4), seed=1)


KINDS = {  # source, conversion, where inside the source the DSTs go
    "images": (lambda root: make_image_tree(root, classes=2, per_class=3), convert_images, ""),
    "split images": (lambda root: make_image_tree(root, classes=2, per_class=2, splits=("train", "val")),
                     convert_images, ""),
    "in a split folder": (lambda root: make_image_tree(root, classes=2, per_class=2, splits=("train", "val")),
                          convert_images, "train"),
    "in a class folder": (_class_split_tree, convert_images, "class_0"),
    "text": (copy_fortunes, convert_text, ""),
    "pairs": (lambda root: make_pair_tree(root, n=6), convert_pairs, ""),
    "dicom": (lambda root: write_phantom(root / "p0", Phantom(slices=4)), convert_dicom, ""),
    "split dicom": (_split_series, convert_dicom, ""),
    "nifti": (lambda root: decathlon(root, cases=2, test_cases=0), convert_nifti, ""),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_second_conversion_reads_the_source_as_the_first_did(tmp_path: Path, kind: str,
                                                               caplog: pytest.LogCaptureFixture):
    make, convert, inside = KINDS[kind]
    src = tmp_path / "src"
    src.mkdir()
    make(src)
    convert(src, tmp_path / "outside")
    convert(src, src / inside / "first")
    convert(src, src / inside / "second")
    assert _summary(src / inside / "first") == _summary(src / inside / "second") == _summary(tmp_path / "outside")
    skipped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("not reading")]
    first = src / inside / "first"
    report = [f"not reading {first}.private-sources.jsonl: the private report of a conversion fastdata wrote, not "
              "source data"] if "dicom" in kind or kind == "nifti" else []  # kinds that name sources by pseudonym
    assert skipped == [f"not reading {first}: a dataset fastdata wrote, not source data", *report]


def test_an_arrow_dst_is_no_table_of_images(tmp_path: Path):
    """A tree of image files beside an Arrow DST was read as a tree of tables ('holds Parquet or Arrow tables')."""
    src = make_image_tree(tmp_path / "src", classes=2, per_class=3)
    convert_images(src, src / "arrow", format="arrow")
    convert_images(src, src / "wds")
    convert_images(src, tmp_path / "outside")
    assert _summary(src / "wds") == _summary(tmp_path / "outside")


def test_a_crashed_conversion_inside_its_source_resumes_as_it_began(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    """Its DST holds shards and `.partial/` and no manifest yet: the resumed run reads the source as the first did,
    without a warning that the class 'out' has no images."""
    src = make_image_tree(tmp_path / "src", classes=2, per_class=3)
    convert_images(src, tmp_path / "outside", samples_per_shard=2)
    with crash_after_first_record():
        convert_images(src, src / "out", samples_per_shard=2)
    assert (src / "out" / PARTIAL).is_dir() and not (src / "out" / "manifest.json").exists()
    caplog.clear()
    result = convert_images(src, src / "out", samples_per_shard=2)
    assert len(result.skipped) == 1
    assert _summary(src / "out") == _summary(tmp_path / "outside")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"not reading {src / 'out'}: a dataset fastdata wrote, not source data"]


def test_a_folder_is_skipped_only_for_a_manifest_fastdata_wrote(tmp_path: Path):
    ds = make_image_tree(tmp_path / "src", classes=3, per_class=1)
    convert_images(ds, tmp_path / "ds")
    shutil.copy(tmp_path / "ds" / "manifest.json", ds / "class_0" / "manifest.json")
    (ds / "class_1" / "manifest.json").write_text(json.dumps({"format": "coco", "kind": "images"}))  # another tool's
    os.mkfifo(ds / "class_2" / "manifest.json")  # never opened: a FIFO would block
    (ds / "class_3").mkdir()
    (ds / "class_3" / "manifest.json").mkdir()
    (ds / "class_4").mkdir()
    (ds / "class_4" / "manifest.json").write_bytes(b"\xff{not json")
    (ds / "notes.txt").write_text("a file is no dataset")
    assert listed(ds) == ["class_1", "class_2", "class_3", "class_4", "notes.txt"]
    assert [written_by_fastdata(ds / name) for name in listed(ds)] == [False] * 5


def test_a_manifest_is_parsed_up_to_its_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import converters.outputs as outputs

    body = json.dumps({"format": "fastdata"}).encode()
    monkeypatch.setattr(outputs, "MAX_MANIFEST_BYTES", len(body) + 4)
    (tmp_path / "at").mkdir()
    (tmp_path / "at" / "manifest.json").write_bytes(body + b"    ")  # exactly the limit: read
    (tmp_path / "past").mkdir()
    (tmp_path / "past" / "manifest.json").write_bytes(body + b"     ")  # a byte past it: not parsed, no dataset
    assert [written_by_fastdata(tmp_path / n) for n in ("at", "past")] == [True, False]


def test_a_file_is_skipped_only_for_a_private_report_fastdata_wrote(tmp_path: Path):
    from converters.outputs import REPORT_NOTE

    first = json.dumps({"source": "/data", "destination": "ds", "note": REPORT_NOTE})
    (tmp_path / "ds.private-sources.jsonl").write_text(first + "\n" + json.dumps({"name": "x", "path": "/p"}) + "\n")
    (tmp_path / "corpus.private-sources.jsonl").write_text(json.dumps({"text": REPORT_NOTE}) + "\n")  # a corpus
    (tmp_path / "renamed.jsonl").write_text(first + "\n")  # a report by another name is a corpus like any other
    (tmp_path / "empty.private-sources.jsonl").write_bytes(b"")
    (tmp_path / "binary.private-sources.jsonl").write_bytes(b"\xff\x00" * 10)
    os.mkfifo(tmp_path / "fifo.private-sources.jsonl")  # never opened: a FIFO would block
    os.symlink(tmp_path / "nowhere", tmp_path / "gone.private-sources.jsonl")  # dangling: not ours, an input
    long = json.dumps({"source": "/data", "destination": "ds", "note": REPORT_NOTE, "pad": "x" * (1 << 16)})
    (tmp_path / "long.private-sources.jsonl").write_text(long + "\n")  # judged by its first 64 KiB: no report
    assert listed(tmp_path) == ["binary.private-sources.jsonl", "corpus.private-sources.jsonl",
                                "empty.private-sources.jsonl", "fifo.private-sources.jsonl",
                                "gone.private-sources.jsonl", "long.private-sources.jsonl", "renamed.jsonl"]


def test_a_conversions_state_is_told_by_its_plan_or_lock(tmp_path: Path):
    """A `.partial/` folder another tool left (a download's) is no conversion's state: its folder is read."""
    for name, files in {"plan": ["plan.json"], "lock": ["lock-part-0-of-1"], "other": ["x.part"], "empty": []}.items():
        (tmp_path / name / ".partial").mkdir(parents=True)
        for f in files:
            (tmp_path / name / ".partial" / f).write_text("{}")
    assert listed(tmp_path) == ["empty", "other"]


def test_hidden_names_stay_hidden(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a.jpg").write_bytes(b"")
    assert listed(tmp_path) == ["a.jpg", "b"]


def test_the_warning_names_a_folder_once(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    convert_images(make_image_tree(tmp_path / "src", classes=1, per_class=1), tmp_path / "ds")
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert listed(tmp_path) == ["src"]
    assert [r.getMessage() for r in caplog.records] == [
        f"not reading {tmp_path / 'ds'}: a dataset fastdata wrote, not source data"]
