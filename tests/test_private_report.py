"""The private report of a pseudonymised conversion (converters/private_report.py): where it goes (given, beside a
local destination, in the working folder for a remote one; never inside the destination) and every line it holds,
compared whole: the header, one line per converted input with its split and sample key, one per rejection with
its reason, then the files inside the inputs; UTF-8 as written, mode 0600."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from converters.destination import LocalDestination
from converters.kind import Discovery
from converters.private_report import report_path, write_report
from converters.sample import Rejection, WorkItem
from converters.tree import SPLIT_FOLDERS
from fastdata.errors import ConvertError

OUTSIDE = f"not inside a split folder ({SPLIT_FOLDERS})"


class _Remote:
    """What report_path reads of a remote destination: its label (a URL); it has no local `work` folder."""

    def __init__(self, label: str) -> None:
        self.label = label


def test_the_report_goes_beside_a_local_destination(tmp_path: Path) -> None:
    dest = LocalDestination(tmp_path / "runs" / "ct-out")
    assert report_path(dest, None) == tmp_path / "runs" / "ct-out.private-sources.jsonl"


@pytest.mark.parametrize(("url", "name"), [("s3://bucket/data/ct-out", "ct-out"),
                                           ("s3://bucket/data/ct-out/", "ct-out"), ("gs://bucket/a/b/c//", "c"),
                                           ("s3://bucket", "bucket"), ("s3://bucket/BOX/", "BOX")])
def test_a_remote_destinations_report_goes_to_the_working_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 url: str, name: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert report_path(_Remote(url), None) == tmp_path / f"{name}.private-sources.jsonl"


def test_a_given_report_path_is_used_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert report_path(LocalDestination(tmp_path / "out"), "keep/r.jsonl") == tmp_path / "keep" / "r.jsonl"
    # a remote destination has no local folder the report could be inside
    assert report_path(_Remote("s3://bucket/out"), "out/r.jsonl") == tmp_path / "out" / "r.jsonl"


@pytest.mark.parametrize("inside", ["out/r.jsonl", "out/deeper/r.jsonl"])
def test_a_report_inside_a_local_destination_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        inside: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConvertError) as caught:
        report_path(LocalDestination("out"), inside)
    assert str(caught.value) == (f"--private-report {tmp_path / inside} is inside the destination out: the paths it "
                                 "holds must not travel with the dataset")
    # beside it (a sibling whose name starts the same) is not inside
    assert report_path(LocalDestination("out"), "out2/r.jsonl") == tmp_path / "out2" / "r.jsonl"


def test_every_line_of_the_report(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    src = tmp_path / "export"
    src.mkdir()
    shuffled = {
        "val": [WorkItem(split="val", rel="series-bbb", source="/x", position=0)],
        "train": [WorkItem(split="train", rel="series-aaa", source="/x", position=1),
                  WorkItem(split="train", rel="series-unmapped", source="/x", position=0)],
    }
    rejected = [Rejection("train", "file-111", "not a DICOM file (no 'DICM' marker at byte 128)"),
                Rejection("", "file-222", OUTSIDE),
                Rejection("val", "file-unmapped", "empty file (0 bytes)")]
    paths = {"series-aaa": "Müller^Jana/CT (3 files)", "series-bbb": "Müller^Jana/MR (2 files)",
             "file-111": "Müller^Jana/notes.txt", "file-222": "stray.dcm", "file-333": "Müller^Jana/CT/1.dcm"}
    report = tmp_path / "private" / "deeper" / "r.jsonl"
    dest = LocalDestination(tmp_path / "out")
    with caplog.at_level(logging.INFO, logger="converters.private_report"):
        write_report(report, dest, src, shuffled, Discovery({}, (), rejected, "series"), paths)
    text = report.read_text(encoding="utf-8")
    assert "Müller^Jana" in text  # written as UTF-8, not as \u escapes
    assert [json.loads(line) for line in text.splitlines()] == [
        {"source": str(src.resolve()), "destination": str(tmp_path / "out"),
         "note": "PRIVATE: maps pseudonyms to source paths; keep it with the source data, never with the dataset"},
        {"split": "train", "key": "00000001", "name": "series-aaa", "path": "Müller^Jana/CT (3 files)"},
        {"split": "train", "key": "00000000", "name": "series-unmapped", "path": "series-unmapped"},
        {"split": "val", "key": "00000000", "name": "series-bbb", "path": "Müller^Jana/MR (2 files)"},
        {"split": "train", "name": "file-111", "path": "Müller^Jana/notes.txt",
         "reason": "not a DICOM file (no 'DICM' marker at byte 128)"},
        {"split": "", "name": "file-222", "path": "stray.dcm", "reason": OUTSIDE},
        {"split": "val", "name": "file-unmapped", "path": "file-unmapped", "reason": "empty file (0 bytes)"},
        {"name": "file-333", "path": "Müller^Jana/CT/1.dcm"},  # a file inside an input, named only in reasons
    ]
    assert text.endswith("}\n") and len(text.splitlines()) == 8
    assert oct(report.stat().st_mode & 0o777) == "0o600"
    assert [r.getMessage() for r in caplog.records] == [
        f"the source paths behind the pseudonyms are in {report} (private: do not share it)"]
