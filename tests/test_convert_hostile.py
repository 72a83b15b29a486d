"""Hostile and broken conversion inputs: nothing crashes with a traceback, nothing is lost or silently
wrong. One writer per destination, a run that keeps nothing fails, OSErrors are one line, spreadsheet CSVs,
JSONL with Unicode line separators, dictionary-encoded Parquet, deeply nested JSON, file names that are not
UTF-8, and leftovers of a run that failed before planning."""

from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest_text import TOKENIZER, convert_text, read_rows
from helpers import convert_images, make_image, make_image_tree

from fastdata.cli import main as cli
from fastdata.errors import ConvertError


def test_a_second_writer_into_one_destination_is_refused_naming_the_first(tmp_path: Path):
    src = make_image_tree(tmp_path / "src", classes=1, per_class=2)
    lock = tmp_path / "out" / ".partial" / "lock-part-0-of-1"
    lock.parent.mkdir(parents=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    os.write(fd, b"host elsewhere, pid 4242")
    fcntl.flock(fd, fcntl.LOCK_EX)  # what a running conversion holds
    try:
        with pytest.raises(ConvertError, match="being written by another.*pid 4242"):
            convert_images(src, tmp_path / "out")
    finally:
        os.close(fd)
    result = convert_images(src, tmp_path / "out")  # released: the run goes ahead
    assert result.manifest.num_samples == 2 and not (tmp_path / "out" / ".partial").exists()


def test_a_run_that_keeps_nothing_fails_and_says_why(tmp_path: Path, capsys):
    src = tmp_path / "src" / "a"
    src.mkdir(parents=True)
    for i in range(3):
        (src / f"bad{i}.jpg").write_bytes(b"not an image at all")
    with pytest.raises(ConvertError, match="kept no sample: all 3 input"):
        convert_images(tmp_path / "src", tmp_path / "out")
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "cli"), "-j", "1", "--no-progress"]) == 2
    assert "kept no sample" in capsys.readouterr().err


def test_an_os_error_is_one_line_not_a_traceback(tmp_path: Path, capsys):
    src = make_image_tree(tmp_path / "src", classes=1, per_class=1)
    (tmp_path / "file").write_text("x")
    assert cli(["convert", str(src), str(tmp_path / "file" / "out"), "-j", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastdata convert: error:") and "Traceback" not in err and err.count("\n") == 1


def test_a_spreadsheet_csv_with_bom_and_crlf_and_a_duplicate_row(tmp_path: Path):
    src = tmp_path / "flat"
    for name in ("a.jpg", "b.jpg", "c.jpg"):
        make_image(src / name)
    csv = tmp_path / "labels.csv"
    csv.write_bytes("\ufefffilename,class\r\na.jpg,cat\r\nb.jpg,dog\r\nc.jpg,cat\r\n".encode("utf-8"))
    result = convert_images(src, tmp_path / "out", labels=str(csv))
    assert result.manifest.classes == ("cat", "dog")  # no phantom 'class' from a header the BOM hid
    csv.write_bytes("\ufefffilename,class\r\na.jpg,cat\r\nb.jpg,dog\r\na.jpg,dog\r\n".encode("utf-8"))
    with pytest.raises(ConvertError, match=r"'a.jpg' is listed again \(first on line 2\)"):
        convert_images(src, tmp_path / "out2", labels=str(csv))


def test_jsonl_with_unicode_line_separators_inside_strings(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = [json.dumps({"text": f"first\u2028second {i}\u2029third\u0085end"}, ensure_ascii=False) for i in range(3)]
    (corpus / "docs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (corpus / "plain.txt").write_text("one\u2028still one\nline two\n", encoding="utf-8")
    result = convert_text(corpus, tmp_path / "tokens", per_line=True)
    assert result.manifest.rejected == ()
    # 3 JSON documents (each one line) + 2 lines of plain text: U+2028 splits neither
    assert result.manifest.num_samples == 5


def test_dictionary_encoded_parquet_and_deeply_nested_json(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    table = pa.table({"text": pa.array(["alpha beta", "gamma", "alpha beta"]).dictionary_encode()})
    pq.write_table(table, corpus / "cats.parquet")
    (corpus / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (corpus / "ok.json").write_text(json.dumps([{"text": "fine"}]))
    result = convert_text(corpus, tmp_path / "tokens")
    reasons = {r["source"]: r["reason"] for r in result.manifest.rejected}
    assert "nested too deeply" in reasons["deep.json"]
    assert len(read_rows(tmp_path / "tokens")) == 4


def test_a_tokenizer_makes_auto_detection_choose_text(tmp_path: Path):
    corpus = tmp_path / "corpus"
    (corpus / "a").mkdir(parents=True)
    (corpus / "a" / "notes.txt").write_text("some words\n")
    make_image(corpus / "a" / "figure.png", fmt="PNG")
    assert cli(["convert", str(corpus), str(tmp_path / "out"), "--tokenizer", str(TOKENIZER), "-j", "1",
                "--no-progress"]) == 0
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["kind"] == "text"


def test_a_source_no_kind_recognises_says_what_it_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """VTK image data (.vti, ParaView's) is no input fastdata converts: the error said only "cannot tell what kind of
    data"; it now says what the files are. (MetaImage's .mha, NRRD's .nrrd, FreeSurfer's .mgz, then MINC's .mnc were
    this test's example until each became an input.)"""
    src = tmp_path / "volumes"
    for i in range(3):
        (src / f"case{i}").mkdir(parents=True)
        (src / f"case{i}" / f"case{i}.t1.vti").write_bytes(b'<VTKFile type="ImageData">')
    (src / "README").write_bytes(b"\x00\x01")
    (src / "survival.v2.xlsx").write_bytes(b"PK")
    assert cli(["convert", str(src), str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"cannot tell what kind of data {src} holds (3 .vti, 1 no extension, 1 .xlsx); pass --kind (image_text, "
        "images, dicom, nifti, text)")
    many = tmp_path / "many"
    many.mkdir()
    for suffix in (".a", ".b", ".c", ".d", ".e", ".e"):
        (many / f"f{len(list(many.iterdir()))}{suffix}").write_bytes(b"\x00")
    assert cli(["convert", str(many), str(tmp_path / "out")]) == 2
    assert "holds (2 .e, 1 .a, 1 .b, 1 .c of its 6 files)" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli(["convert", str(tmp_path / "empty"), str(tmp_path / "out")]) == 2
    assert "holds (no file); pass --kind" in capsys.readouterr().err


def test_a_file_name_that_is_not_utf8_is_converted_and_reported(tmp_path: Path):
    src = make_image_tree(tmp_path / "src", classes=1, per_class=1)
    bad = os.fsencode(str(src / "class_0")) + b"/caf\xe9.jpg"
    with open(bad, "wb") as f:
        f.write(b"not an image")
    result = convert_images(src, tmp_path / "out")
    (rejected,) = result.rejected
    assert rejected["source"] == "class_0/caf\\xe9.jpg"
    json.dumps(result.manifest.to_dict()).encode("utf-8")  # the manifest is valid UTF-8
    assert (tmp_path / "out" / "manifest.json").exists()


BAD_CLASS_FOLDERS = {b"caf\xe9": "not valid UTF-8", b"red\x1b[31m": "control characters",
                     b"tab\tname": "control characters", "\u202eevil".encode(): "control characters"}


@pytest.mark.parametrize("layout", ["class", "split/class"])
def test_a_class_folder_name_that_is_not_text_is_rejected_not_a_class(tmp_path: Path, layout: str):
    """A class folder whose name is not UTF-8 stopped the conversion when the manifest was written
    (UnicodeEncodeError: surrogates not allowed), and every re-run again; one with a terminal escape sequence or a
    right-to-left override became a class name that training scripts print. Now their files are rejected with the
    reason, the rest converts."""
    src = tmp_path / "src"
    root = src / "train" if layout == "split/class" else src
    for name in [b"ok", *BAD_CLASS_FOLDERS]:
        make_image(Path(os.fsdecode(os.fsencode(str(root)) + b"/" + name + b"/a.jpg")))
    if layout == "split/class":
        make_image(Path(os.fsdecode(os.fsencode(str(src)) + b"/val/red\x1b[31m/b.jpg")))
    result = convert_images(src, tmp_path / "out")
    assert result.manifest.classes == ("ok",) and result.manifest.num_samples == 1
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    prefix = "train/" if layout == "split/class" else ""
    val = {"val/red\x1b[31m/b.jpg"} if layout == "split/class" else set()
    assert set(reasons) == {f"{prefix}caf\\xe9/a.jpg", f"{prefix}red\x1b[31m/a.jpg", f"{prefix}tab\tname/a.jpg",
                            f"{prefix}\u202eevil/a.jpg"} | val
    for source, reason in reasons.items():
        want = "not valid UTF-8" if "caf" in source else "control characters"
        assert reason.startswith(f"class folder name {'is' if 'caf' in source else 'holds'} {want}"), reason
    assert (tmp_path / "out" / "manifest.json").exists()


def test_a_text_class_folder_with_control_characters_is_rejected(tmp_path: Path):
    for name in ("news", "red\x1b[31m"):
        (tmp_path / "src" / name).mkdir(parents=True)
        (tmp_path / "src" / name / "a.txt").write_text("one document\n")
    result = convert_text(tmp_path / "src", tmp_path / "out")
    assert result.manifest.classes == ("news",)
    assert [(r["source"], r["reason"].split(" (")[0]) for r in result.rejected] == [
        ("red\x1b[31m/a.txt", "class folder name holds control characters")]


@pytest.mark.parametrize("layout", ["class", "split/class"])
def test_text_whose_only_class_folders_are_refused_is_not_taken_unlabeled(tmp_path: Path, layout: str):
    """With no usable class name left, the corpus looked flat to the text discovery: the documents of the refused
    class folder became unlabeled samples."""
    folder = tmp_path / "src" / ("train" if layout == "split/class" else "") / "red\x1b[31m"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("one document\n")
    with pytest.raises(ConvertError, match=r"holds no text input to convert \(1 file\(s\) rejected: 1 x class folder "
                                           r"name holds control characters"):
        convert_text(tmp_path / "src", tmp_path / "out")


def test_a_labels_csv_class_with_control_characters_is_refused(tmp_path: Path):
    make_image(tmp_path / "flat" / "a.jpg")
    (tmp_path / "labels.csv").write_text("a.jpg,\x1b[2Jcat\n", encoding="utf-8")
    with pytest.raises(ConvertError, match=r"labels.csv:1: the class '\\x1b\[2Jcat' holds control characters"):
        convert_images(tmp_path / "flat", tmp_path / "out", labels=str(tmp_path / "labels.csv"))


NFC, NFD = "M\u00fcller", "Mu\u0308ller"  # the same name as most systems and as macOS write it


@pytest.mark.parametrize("layout", ["class", "split/class"])
def test_class_folders_that_differ_only_in_unicode_normalisation_are_refused(tmp_path: Path, layout: str):
    """Two folders that show as the same name became two classes that look alike: which one would a label mean?"""
    root = tmp_path / "src" / ("train" if layout == "split/class" else "")
    for name in ("ok", NFC, NFD):
        make_image(root / name / "a.jpg")
    result = convert_images(tmp_path / "src", tmp_path / "out")
    assert result.manifest.classes == ("ok",) and result.manifest.num_samples == 1
    prefix = "train/" if layout == "split/class" else ""
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    assert set(reasons) == {f"{prefix}{NFC}/a.jpg", f"{prefix}{NFD}/a.jpg"}
    assert reasons[f"{prefix}{NFC}/a.jpg"] == (
        "class folder name 'M\\xfcller' differs from 'Mu\\u0308ller' only in Unicode normalisation (NFC/NFD): the "
        "same name twice; merge or rename the folders")
    assert "differs from 'M\\xfcller' only" in reasons[f"{prefix}{NFD}/a.jpg"]


def test_text_class_folders_that_differ_only_in_unicode_normalisation_are_refused(tmp_path: Path):
    for name in ("news", NFC, NFD):
        (tmp_path / "src" / name).mkdir(parents=True)
        (tmp_path / "src" / name / "a.txt").write_text("one document\n")
    result = convert_text(tmp_path / "src", tmp_path / "out")
    assert result.manifest.classes == ("news",)
    assert sorted(r["source"] for r in result.rejected if "Unicode normalisation" in r["reason"]) == sorted(
        [f"{NFC}/a.txt", f"{NFD}/a.txt"])


def test_a_val_class_folder_named_another_way_than_trains_says_so(tmp_path: Path):
    make_image(tmp_path / "src" / "train" / NFC / "a.jpg")
    make_image(tmp_path / "src" / "val" / NFD / "b.jpg")
    make_image(tmp_path / "src" / "val" / "other" / "c.jpg")
    result = convert_images(tmp_path / "src", tmp_path / "out")
    assert result.manifest.classes == (NFC,) and result.manifest.num_samples == 1
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    assert reasons == {
        f"val/{NFD}/b.jpg": "class folder 'Mu\\u0308ller' is not among train's classes; 'M\\xfcller' is, the same "
                            "name in another Unicode normalisation (NFC/NFD): rename the folder",
        "val/other/c.jpg": "class folder 'other' is not among train's classes"}


def test_a_labels_csv_class_written_two_ways_is_refused(tmp_path: Path):
    for name in ("a.jpg", "b.jpg"):
        make_image(tmp_path / "flat" / name)
    (tmp_path / "labels.csv").write_text(f"a.jpg,{NFC}\nb.jpg,{NFD}\n", encoding="utf-8")
    with pytest.raises(ConvertError, match=r"labels.csv:2: the class 'Mu\\u0308ller' differs from 'M\\xfcller' "
                                           r"\(line 1\) only in Unicode normalisation"):
        convert_images(tmp_path / "flat", tmp_path / "out", labels=str(tmp_path / "labels.csv"))


def test_a_labels_csv_finds_files_named_in_the_other_unicode_normalisation(tmp_path: Path):
    """A CSV typed on one system lists 'Müller.jpg' composed; macOS named the file decomposed. Both were rejected
    ('not listed', 'no such file') though they show as the same name. When two files have that name, the one the
    CSV spells exactly is taken and the other stays unlisted."""
    make_image(tmp_path / "flat" / f"{NFD}.jpg")
    make_image(tmp_path / "flat" / "plain.jpg")
    (tmp_path / "labels.csv").write_text(f"{NFC}.jpg,cat\nplain.jpg,dog\n", encoding="utf-8")
    result = convert_images(tmp_path / "flat", tmp_path / "out", labels=str(tmp_path / "labels.csv"))
    assert result.manifest.num_samples == 2 and result.rejected == []
    make_image(tmp_path / "flat" / f"{NFC}.jpg")
    result = convert_images(tmp_path / "flat", tmp_path / "out2", labels=str(tmp_path / "labels.csv"))
    assert result.manifest.num_samples == 2
    assert [(r["source"], r["reason"]) for r in result.rejected] == [
        (f"{NFD}.jpg", "not listed in labels file labels.csv")]


def test_leftovers_of_a_run_that_failed_before_planning_do_not_block_the_rerun(tmp_path: Path):
    src = make_image_tree(tmp_path / "src", classes=1, per_class=2)
    (tmp_path / "out" / ".partial").mkdir(parents=True)
    (tmp_path / "out" / "train-000000.tar.tmp").write_bytes(b"half")
    assert convert_images(src, tmp_path / "out").manifest.num_samples == 2


class _DiesOnce:
    """A processor whose worker kills itself (as the OOM killer would) on one input."""

    def __init__(self, victim: str) -> None:
        self.victim = victim

    def __call__(self, item):
        if item.rel.endswith(self.victim):
            os.kill(os.getpid(), 9)
        from converters.sample import Rejection

        return Rejection(item.split, item.rel, "fine")


def test_a_killed_worker_stops_the_run_with_an_error_naming_the_input(tmp_path: Path):
    import threading

    from converters.pool import WorkerDied, run_ordered
    from converters.sample import WorkItem

    items = [WorkItem(split="train", rel=f"f{i}.jpg", source="") for i in range(40)]
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.extend(run_ordered(_DiesOnce("f17.jpg"), items, jobs=2))
        except WorkerDied as exc:
            outcome.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "the conversion hung on a dead worker"
    assert isinstance(outcome[-1], WorkerDied)
    named = re.fullmatch(
        r"a conversion worker died while converting f(\d+)\.jpg \(split train\) or an input near it: killed by the "
        r"out-of-memory killer or a signal\? Lower -j or free memory, then rerun the same command: it resumes from "
        r"the finished shards", str(outcome[-1]))
    assert named is not None, str(outcome[-1])
    # the first input of an unfinished chunk (chunks of 4: f17's starts at f16), after every result before it
    first = int(named.group(1))
    assert first % 4 == 0 and first <= 16
    assert [r.source for r in outcome[:-1]] == [f"f{i}.jpg" for i in range(first)]


def test_a_pool_that_broke_before_a_submission_stops_the_run_with_the_same_error(monkeypatch):
    """The pool breaks when a worker dies; the next submit raises BrokenProcessPool itself, before any result does.
    That escaped as a bare BrokenProcessPool traceback (the test above met it when the death came early)."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from converters import pool
    from converters.sample import WorkItem

    class Breaks(ProcessPoolExecutor):
        submitted = 0

        def submit(self, *args, **kwargs):
            Breaks.submitted += 1
            if Breaks.submitted == 3:
                raise BrokenProcessPool("A child process terminated abruptly")
            return super().submit(*args, **kwargs)

    monkeypatch.setattr(pool, "ProcessPoolExecutor", Breaks)
    items = [WorkItem(split="train", rel=f"f{i}.jpg", source="") for i in range(40)]
    with pytest.raises(pool.WorkerDied, match=r"a conversion worker died while converting f0\.jpg \(split train\)"):
        list(pool.run_ordered(_DiesOnce("none"), items, jobs=2))
