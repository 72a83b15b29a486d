"""`fastdata info` and `fastdata verify`: what users run after converting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import convert_images

from fastdata.cli import main as cli
from fastdata.manifest import MANIFEST_NAME


@pytest.fixture
def dataset(small_tree: Path, tmp_path: Path) -> Path:
    (small_tree / "class_1" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 nope")
    convert_images(small_tree, tmp_path / "out", samples_per_shard=5)
    return tmp_path / "out"


def test_info_lists_splits_classes_rejections_and_preprocessing(dataset: Path, capsys) -> None:
    assert cli(["info", str(dataset)]) == 0
    out = capsys.readouterr().out
    assert "images dataset, wds shards" in out
    assert "train" in out and "12" in out
    assert "classes (3): class_0, class_1, class_2" in out
    assert "short_side=256" in out and "quality=90" in out
    assert "rejected inputs: 1\n       1  corrupt or truncated image\n" in out
    assert cli(["info", str(dataset), "--rejected"]) == 0
    assert "class_1/broken.jpg" in capsys.readouterr().out
    assert cli(["info", str(dataset), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["splits"]["train"]["samples"] == 12


def test_verify_passes_on_a_fresh_dataset(dataset: Path, capsys) -> None:
    assert cli(["verify", str(dataset), "--decode"]) == 0
    assert capsys.readouterr().out == f"OK: 3 shard(s), 12 samples match {dataset}/manifest.json\n"


def test_verify_fails_on_a_changed_byte(dataset: Path, capsys) -> None:
    tar = dataset / "train-000001.tar"
    data = bytearray(tar.read_bytes())
    data[700] ^= 0xFF
    tar.write_bytes(bytes(data))
    assert cli(["verify", str(dataset)]) == 1
    out = capsys.readouterr().out
    assert "train-000001.tar: sha256 differs" in out
    assert out.endswith(f"\nFAILED: 1 problem(s) in {dataset}\n")


def test_verify_fails_on_missing_and_truncated_files(dataset: Path, capsys) -> None:
    (dataset / "train-000000.tar").unlink()
    tar = dataset / "train-000002.tar"
    tar.write_bytes(tar.read_bytes()[:1024])
    (dataset / "train-000001.idx").write_text("v1.2 0\n")
    assert cli(["verify", str(dataset)]) == 1
    out = capsys.readouterr().out
    assert "train-000000.tar: missing" in out
    assert "train-000002.tar: 1024 bytes, the manifest says" in out
    assert "train-000001.idx: sha256 differs" in out


def test_missing_manifest_and_bad_version_are_clear(dataset: Path, tmp_path: Path, capsys) -> None:
    manifest = json.loads((dataset / MANIFEST_NAME).read_text())
    manifest["format_version"] = 99
    (dataset / MANIFEST_NAME).write_text(json.dumps(manifest))
    assert cli(["info", str(dataset)]) == 2
    assert "format_version 99" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli(["verify", str(tmp_path / "empty")]) == 2
    assert "no manifest.json" in capsys.readouterr().err


ESC = "\x1b]0;owned\x07\x1b[2J"  # retitle the terminal, clear the screen


def test_info_and_verify_show_text_from_the_shards_with_control_characters_escaped(dataset: Path, capsys) -> None:
    """Class names, stats, preprocessing and extras come from whoever wrote the manifest, and verify's problems
    name keys from the index: printed raw, an escape sequence in them drove the user's terminal."""
    path = dataset / MANIFEST_NAME
    m = json.loads(path.read_text())
    m["classes"][0] += ESC
    m["preprocessing"]["quality"] = ESC
    m["splits"]["train"]["stats"]["note"] = ESC
    m["extra"]["origin"] = ESC
    path.write_text(json.dumps(m))
    assert cli(["info", str(dataset), "--rejected"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert out.count("\\x1b]0;owned\\x07\\x1b[2J") == 4
    idx = dataset / "train-000000.idx"
    lines = idx.read_text().splitlines()
    first = lines[1].split()
    key = first[3].partition(".")[0]
    lines[1] = " ".join(f.replace(key, key + "\x1b[2J") if i % 4 == 3 else f for i, f in enumerate(first))
    idx.write_text("\n".join(lines) + "\n")
    assert cli(["verify", str(dataset)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and f"sample {key}\\x1b[2J" in out


def test_histogram_buckets_are_shown_in_numeric_order() -> None:
    from fastdata.cli.info import _render

    buckets = {"513+": 1, "9-16": 3, "1-8": 2, "65-128": 4, "other": 5}
    assert _render(buckets) == "other: 5  1-8: 2  9-16: 3  65-128: 4  513+: 1"  # a name that is no number first
    assert _render(7) == "7"


@pytest.mark.parametrize("counts, line", [
    ((5, 3, 4), None),  # less than twice: nothing to say
    ((6, 3, 4), "classes: largest a (6), smallest b (3), 2.0x; sample_weights='balanced' draws them alike"),
    ((2, 9, 2), "classes: largest b (9), smallest a (2), 4.5x; sample_weights='balanced' draws them alike"),
    ((4, 0, 4), "classes: largest a (4), smallest b (0), a class without samples; sample_weights='balanced' draws "
                "them alike"),
    ((), None),
    ((0, 0, 0), None),  # a volume dataset's classes (its masks' values): no sample has one, nothing to balance
])
def test_info_names_an_imbalance_and_the_option_for_it(counts, line) -> None:
    from fastdata.cli.info import _imbalance

    got = [x.strip() for x in _imbalance(("a", "b", "c"), counts)]
    assert got == ([] if line is None else [line])


def test_info_line_by_line(dataset: Path, capsys) -> None:
    import re

    import fastdata

    assert cli(["info", str(dataset)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{dataset}: images dataset, wds shards, format v1, written by fastdata {fastdata.__version__}"
    assert lines[1] == "split        samples  shards       bytes"
    assert re.fullmatch(r"train {13}12 {7}3 +\d+\.\d KiB", lines[2]), lines[2]
    assert re.fullmatch(r" {11}data_digest: [0-9a-f]{32} \(what a loader state saved on the whole split names\)",
                        lines[3]), lines[3]
    assert lines[4:7] == ["           copied: 12", "           metadata_removed: 0",
                          "classes (3): class_0, class_1, class_2"]
    shown = dict(item.split("=", 1) for item in lines[7].removeprefix("preprocessing: ").split(", ")
                 if "=" in item)
    assert lines[7].startswith("preprocessing: copy_when_compliant=True, ") and list(shown) == sorted(shown)
    assert shown["quality"] == "90" and shown["short_side"] == "256" and shown["format"] == "wds"
    assert lines[8] == "layout: class" and lines[9].startswith('versions: {"fastdata": ')
    assert lines[10:] == ["rejected inputs: 1", "       1  corrupt or truncated image"]
    assert cli(["info", str(dataset), "--rejected"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[:10] == lines[:10] and listed[10] == "rejected inputs: 1"
    assert listed[11].startswith("  [train] class_1/broken.jpg: corrupt or truncated image") and len(listed) == 12


def test_info_of_a_multi_label_split_names_what_weighs_its_classes_not_the_refused_option() -> None:
    from fastdata.cli.info import _imbalance

    assert [x.strip() for x in _imbalance(("a", "b"), (6, 2), multi=True)] == [
        "classes: largest a (6), smallest b (2), 3.0x; BCEWithLogitsLoss's pos_weight from fastdata.sample_labels "
        "weighs them"]


def test_info_names_no_imbalance_when_the_counts_are_not_the_classes() -> None:
    from fastdata.cli.info import _imbalance

    assert list(_imbalance(("a", "b", "c"), (9, 1))) == []  # counts of another class list: nothing said


def test_info_of_many_imbalanced_classes(tmp_path: Path, capsys) -> None:
    from helpers import make_image

    for c in range(12):  # class c00 holds 3 images, the others 1
        for i in range(3 if c == 0 else 1):
            make_image(tmp_path / "src" / f"c{c:02d}" / f"img_{i}.jpg", size=(24, 20), seed=10 * c + i)
    convert_images(tmp_path / "src", tmp_path / "out")
    assert cli(["info", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert ("           classes: largest c00 (3), smallest c01 (1), 3.0x; sample_weights='balanced' draws them "
            "alike\n") in out
    assert "classes (12): " + ", ".join(f"c{c:02d}" for c in range(10)) + ", ...\n" in out
    assert cli(["info", str(tmp_path / "out"), "--json"]) == 0
    assert capsys.readouterr().out.startswith('{\n "')  # indented, one level a space
