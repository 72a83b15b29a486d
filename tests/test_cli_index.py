"""`fastdata index` as a command (fastdata/cli/index.py): which argument is DST, every option reaching the adoption
(split, a class file with a byte-order mark, header-only or full decode, the pixel limit), and its report compared
line by line for labeled, unlabeled and image-text shards, with and without rejections and --strict."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest_adopt import encoded, raw_tar
from helpers import cut_scan

from fastdata.cli import main as cli
from fastdata.cli.format import human_bytes
from fastdata.cli.index import split_paths


@pytest.mark.parametrize(("paths", "expected"), [
    (["shards/"], (["shards/"], None)),
    (["shards/", "out"], (["shards/"], "out")),
    (["a/", "b/", "out"], (["a/", "b/"], "out")),
    (["a.tar", "b.tar"], (["a.tar", "b.tar"], None)),  # a last .tar is a source, existing or not
    (["a/", "shards-{000000..000003}.tar"], (["a/", "shards-{000000..000003}.tar"], None)),
    (["a/", "s-*.tar"], (["a/", "s-*.tar"], None)),
])
def test_which_argument_is_dst(paths: list[str], expected: tuple) -> None:
    assert split_paths(paths) == expected


def test_a_folder_named_with_pattern_characters_is_dst(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fastdata index shards/ 'meta[1]/'` took `meta[1]/` for a pattern of shards: 'matches no file'."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "old{a,b}").mkdir()
    (tmp_path / "s-0.tar").write_bytes(b"")
    assert split_paths(["a/", "old{a,b}"]) == (["a/"], "old{a,b}")  # exists: a folder
    assert split_paths(["a/", "meta[1]/"]) == (["a/"], "meta[1]/")  # new, with a trailing slash: a folder
    assert split_paths(["a/", "meta[1]"]) == (["a/", "meta[1]"], None)  # new, no slash: a pattern
    assert split_paths(["a/", "s-*/"]) == (["a/"], "s-*/")  # matches no folder
    (tmp_path / "s-1").mkdir()
    assert split_paths(["a/", "s-*/"]) == (["a/", "s-*/"], None)  # matches one: a pattern of sources


def test_an_existing_file_is_never_dst(tmp_path: Path) -> None:
    shard = tmp_path / "old.tgz"
    shard.write_bytes(b"x")
    assert split_paths(["a/", str(shard)]) == (["a/", str(shard)], None)


def _jpeg(seed: int) -> bytes:
    return encoded("JPEG", size=(40, 32), seed=seed, quality=90)



def _labeled(folder: Path) -> Path:
    raw_tar(folder / "train-000000.tar", [("a.jpg", _jpeg(1)), ("a.cls", b"0"), ("b.jpg", _jpeg(2)),
                                          ("b.cls", b"1"), ("c.jpg", cut_scan(_jpeg(3))), ("c.cls", b"1")])
    return folder


def _report(capsys: pytest.CaptureFixture) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_the_report_of_labeled_shards_indexed_beside_them(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = _labeled(tmp_path / "shards")
    size = (src / "train-000000.tar").stat().st_size
    assert cli(["index", str(src), "--no-progress", "-j", "1"]) == 0
    assert _report(capsys) == [
        f"indexed 1 shard(s) -> {src / 'manifest.json'}",
        f"  train            3 samples      1 shards  {human_bytes(size)}",
        "  labeled, 2 classes; image members jpg",
    ]


def test_options_reach_the_adoption_and_the_report_names_rejections(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    src = _labeled(tmp_path / "shards")
    (tmp_path / "classes.txt").write_text("\ufeffcat\n\ndog\n", encoding="utf-8")  # a BOM and a blank line
    out = tmp_path / "out"
    args = ["index", str(src), str(out), "--split", "val", "--classes", str(tmp_path / "classes.txt"), "--decode",
            "--no-progress", "-j", "1"]
    assert cli(args) == 0
    report = _report(capsys)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["classes"] == ["cat", "dog"] and list(manifest["splits"]) == ["val"]
    assert report[0] == f"indexed 1 shard(s) -> {out / 'manifest.json'} (shards in {manifest['shard_root']})"
    assert report[1].startswith("  val              2 samples      1 shards  ")
    assert report[2:4] == ["  labeled, 2 classes; image members jpg",
                           f"  rejected 1 sample(s) or member(s) (`fastdata info {out} --rejected`):"]
    assert report[4].startswith("         1  ") and len(report) == 5  # the decode's reason, summarised
    assert cli([*args[:2], str(tmp_path / "strict"), *args[3:], "--strict"]) == 1
    assert capsys.readouterr().err == "--strict: 1 rejection(s)\n"



@pytest.mark.parametrize(("text", "error"), [
    ("cat\ndo\x1b[31mg\n", r"classes\.txt:2: the class 'do\\x1b\[31mg' holds control characters"),
    ("cat\n\ncat\n", r"classes\.txt:3: the class 'cat' is named again \(first at .*classes\.txt:1\): two ids would "
                      r"have one name"),
    (None, r"classes file .*classes\.txt does not exist"),
    (b"\xff\xfecat", r"cannot read classes file .*classes\.txt: .*; save it as UTF-8 text"),
])
def test_a_classes_file_that_would_name_labels_wrong_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                text: str | bytes | None, error: str) -> None:
    """`fastdata index --classes` reads the file as `fastdata convert --classes` does; it had taken an escape
    sequence into the manifest, and two labels of one name."""
    src = _labeled(tmp_path / "shards")
    if isinstance(text, str):
        (tmp_path / "classes.txt").write_text(text, encoding="utf-8")
    elif text is not None:
        (tmp_path / "classes.txt").write_bytes(text)
    assert cli(["index", str(src), str(tmp_path / "out"), "--classes", str(tmp_path / "classes.txt"),
                "--no-progress", "-j", "1"]) == 2
    assert re.search("^fastdata index: error: .*?" + error, capsys.readouterr().err)
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_headers_only_by_default_and_the_pixel_limit(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = _labeled(tmp_path / "shards")
    assert cli(["index", str(src), str(tmp_path / "o1"), "--no-progress", "-j", "1", "--strict"]) == 0
    assert json.loads((tmp_path / "o1" / "manifest.json").read_text())["splits"]["train"]["samples"] == 3
    capsys.readouterr()
    assert cli(["index", str(src), str(tmp_path / "o2"), "--no-progress", "-j", "1", "--max-pixels", "1279"]) == 2
    bomb = "decompression bomb: 40x32 = 1280 pixels is over the limit of 1279 (--max-pixels)"  # each image
    assert capsys.readouterr().err == (f"fastdata index: error: no usable sample in 1 tar(s) under {src} "
                                       f"({bomb}; {bomb}; {bomb})\n")


def test_the_report_of_unlabeled_and_image_text_shards(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    raw_tar(tmp_path / "u" / "train-000000.tar", [("a.jpg", _jpeg(1)), ("b.png", encoded("PNG", seed=2))])
    assert cli(["index", str(tmp_path / "u"), "--no-progress", "-j", "1"]) == 0
    assert _report(capsys)[2] == "  unlabeled; image members jpg, png"
    raw_tar(tmp_path / "p" / "train-000000.tar", [("a.jpg", _jpeg(1)), ("a.txt", b"a cat"), ("b.jpg", _jpeg(2)),
                                                  ("b.txt", b"a dog")])
    assert cli(["index", str(tmp_path / "p"), "--no-progress", "-j", "1"]) == 0
    assert _report(capsys)[2] == "  image-text pairs (captions in txt); image members jpg"


def test_several_sources_are_indexed_together(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    raw_tar(tmp_path / "s" / "train-000000.tar", [("a.jpg", _jpeg(1)), ("a.cls", b"0")])
    raw_tar(tmp_path / "s" / "train-000001.tar", [("b.jpg", _jpeg(2)), ("b.cls", b"1")])
    raw_tar(tmp_path / "s" / "train-000002.tar", [("c.jpg", _jpeg(3)), ("c.cls", b"1")])
    out = tmp_path / "out"
    assert cli(["index", str(tmp_path / "s" / "train-000000.tar"), str(tmp_path / "s" / "train-000001.tar"),
                str(out), "--no-progress", "-j", "1"]) == 0
    assert _report(capsys)[0] == f"indexed 2 shard(s) -> {out / 'manifest.json'} (shards in ../s)"  # relative
    assert sorted(json.loads((out / "manifest.json").read_text())["splits"]["train"]["shards"][i]["name"]
                  for i in range(2)) == ["train-000000.tar", "train-000001.tar"]  # the third was not named


def test_shards_and_manifest_in_folders_named_with_pattern_characters(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture) -> None:
    src = _labeled(tmp_path / "run[1]{a,b}")
    out = tmp_path / "meta[2]"
    for source in (str(src), str(src / "train-*.tar"), str(src / "train-000000.tar")):
        assert cli(["index", source, f"{out}/", "--no-progress", "-j", "1"]) == 0
        assert _report(capsys)[0] == f"indexed 1 shard(s) -> {out / 'manifest.json'} (shards in ../run[1]{{a,b}})"
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "train-000000.idx"]


def test_a_progress_bar_on_a_terminal_and_lines_in_a_log(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    src = _labeled(tmp_path / "shards")
    assert cli(["index", str(src), str(tmp_path / "o1"), "-j", "1"]) == 0
    err = capsys.readouterr().err  # not a terminal: no bar, a line (tests/test_cli_progress.py)
    assert err.startswith("fastdata index: 1/1 shards (100.0%) in ") and err.count("\n") == 1 and "\r" not in err
    assert cli(["index", str(src), str(tmp_path / "o0"), "-j", "1", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli(["index", str(src), str(tmp_path / "o2"), "-j", "1", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    assert cli(["index", str(src), str(tmp_path / "o3"), "-j", "1"]) == 0
    bar = capsys.readouterr().err
    assert "1/1 [" in bar and "shard/s" in bar  # one shard of one, counted in shards
