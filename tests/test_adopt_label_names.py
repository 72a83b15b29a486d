"""`fastdata index` of shards whose label members hold class names (`{"cls": "tench"}` through webdataset's
encoder) rather than indices: the classes, the loaders' labels, `verify`, and every way a label member is neither."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
from conftest_adopt import encoded, labels_of, photo_bytes, raw_tar

import fastdata
from converters.adopt import AdoptOptions, adopt
from fastdata.cli import main as cli
from fastdata.errors import ConvertError, ManifestError, ShardError
from fastdata.manifest import read_manifest
from fastdata.verify import verify_dataset

pytest.importorskip("webdataset")

NAMES = ["tench", "goldfish", "great white shark, white shark, man-eater, man-eating shark", "café"]


def named_shards(folder: Path, count: int = 10) -> dict[str, str]:
    """Shards of real photos written by `webdataset.ShardWriter` with class names in `cls`; key -> name."""
    import webdataset as wds

    folder.mkdir(parents=True, exist_ok=True)
    names = {}
    with wds.ShardWriter(str(folder / "train-%06d.tar"), maxcount=4, verbose=0) as sink:
        for i, (_, data) in enumerate(photo_bytes(count)):
            key = f"s{i:05d}"
            names[key] = NAMES[i % len(NAMES)]
            sink.write({"__key__": key, "jpg": data, "cls": names[key]})
    return names


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_names_become_sorted_classes_and_each_sample_gets_its_names_index(tmp_path: Path, backend: str):
    if backend == "dali":
        pytest.importorskip("nvidia.dali")
    names = named_shards(tmp_path / "s")
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    m = result.manifest
    assert result.rejected == []
    assert m.classes == tuple(sorted(NAMES)) and m.extra["label_encoding"] == "name"
    index = {name: i for i, name in enumerate(sorted(NAMES))}
    expected = [index[names[k]] for k in sorted(names)]  # eval reads the shards' samples in order
    assert m.splits["train"].class_counts == tuple(expected.count(i) for i in range(len(NAMES)))
    assert labels_of(tmp_path / "s", backend) == expected
    assert fastdata.sample_labels(tmp_path / "s").tolist() == expected  # what sample_weights="balanced" weighs
    assert verify_dataset(tmp_path / "s") == []
    again = read_manifest(tmp_path / "s")
    assert again.label_names == {name.encode(): i for i, name in enumerate(sorted(NAMES))}


def test_the_classes_file_gives_the_order_and_a_name_it_lacks_is_rejected(tmp_path: Path):
    names = named_shards(tmp_path / "s", count=8)
    order = ["goldfish", "tench", NAMES[2], "koi"]  # no café; koi held by no sample
    (tmp_path / "classes.txt").write_text("\n".join(order) + "\n")
    assert cli(["index", str(tmp_path / "s"), "--classes", str(tmp_path / "classes.txt"), "-j", "1",
                "--no-progress"]) == 0
    m = read_manifest(tmp_path / "s")
    assert m.classes == tuple(order)
    cafe = sorted(k for k, n in names.items() if n == "café")
    assert sorted(r["source"].split(":")[1] for r in m.rejected) == cafe
    assert {r["reason"] for r in m.rejected} == {"label 'café' is not among the classes --classes names"}
    kept = [order.index(names[k]) for k in sorted(names) if names[k] != "café"]
    assert labels_of(tmp_path / "s", "kornia") == kept
    assert m.splits["train"].class_counts == (2, 2, 2, 0)


def test_integer_labels_stay_indices_and_a_name_among_them_is_rejected_with_the_option_to_pass(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.cls", b"2"), ("b.jpg", jpg), ("b.cls", b" 10\n"),
                                       ("c.jpg", jpg), ("c.cls", b"cat")])
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert len(m.classes) == 11 and "label_encoding" not in m.extra and m.label_names is None
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("a.tar:c", "label b'cat' is not an integer (index with --label-names if the labels are class names)")]
    assert labels_of(tmp_path / "s", "kornia") == [2, 10]
    assert cli(["index", str(tmp_path / "s"), "--label-names", "-j", "1", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "s")
    assert m.classes == ("10", "2", "cat") and m.rejected == () and m.extra["label_encoding"] == "name"
    assert labels_of(tmp_path / "s", "kornia") == [1, 0, 2]


@pytest.mark.parametrize(("label", "reason"), [
    (b"", "an empty label member"),
    (b" \n", "an empty label member"),
    (b"\xffcat", "label b'\\xffcat' is not UTF-8 text"),
    (b"ca\x1bt", "label b'ca\\x1bt' holds control or blank characters (a class name is printed as text)"),
    ("\u00a0cat".encode(), "label b'\\xc2\\xa0cat' holds control or blank characters (a class name is printed as "
                           "text)"),
    ("cat\u2003".encode(), "label b'cat\\xe2\\x80\\x83' holds control or blank characters (a class name is "
                            "printed as text)"),
    (b"x" * 257, "a label member of 257 bytes or more (a label holds at most 256)"),
    (b"\xff" + b"y" * 59, "label b'\\xff" + "y" * 39 + "' is not UTF-8 text"),  # shown to 40 bytes
    (b"\x1b" + b"y" * 59, "label b'\\x1b" + "y" * 39 + "' holds control or blank characters (a class name is "
                          "printed as text)"),
])
def test_a_label_member_that_is_no_name_rejects_its_sample(tmp_path: Path, label: bytes, reason: str):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.cls", label), ("b.jpg", jpg), ("b.cls", b"dog"),
                                       ("c.jpg", jpg), ("c.cls", b"x" * 256)])
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [("a.tar:a", reason)]
    assert m.classes == ("dog", "x" * 256)
    assert labels_of(tmp_path / "s", "kornia") == [0, 1]


def test_one_name_in_two_unicode_normalisations_is_refused(tmp_path: Path):
    jpg = encoded("JPEG")
    nfc, nfd = (unicodedata.normalize(f, "café").encode() for f in ("NFC", "NFD"))
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.cls", nfc), ("b.jpg", jpg), ("b.cls", nfd)])
    with pytest.raises(ConvertError, match="is named again"):
        adopt(tmp_path / "s", options=AdoptOptions(jobs=1))


def test_a_label_changed_in_the_tar_fails_the_loader_and_verify(tmp_path: Path):
    named_shards(tmp_path / "s", count=4)
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    tar = tmp_path / "s" / "train-000000.tar"
    data = tar.read_bytes()
    assert data.count(b"goldfish") == 1
    tar.write_bytes(data.replace(b"goldfish", b"goldfisk"))  # same size: only the name differs
    with pytest.raises(ShardError, match=r"sample s00001 in .* has a bad class label b'goldfisk'; a label member "
                                         "holds a class name the manifest lists"):
        labels_of(tmp_path / "s", "kornia")
    problems = verify_dataset(tmp_path / "s")
    assert f"{tar}: sample s00001 has a label that is not among the manifest's classes b'goldfisk'" in problems


def test_the_manifest_refuses_an_unknown_label_encoding_and_names_given_twice(tmp_path: Path):
    named_shards(tmp_path / "s", count=4)
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    path = tmp_path / "s" / "manifest.json"
    good = json.loads(path.read_text())
    for edit, message in [({"extra": {**good["extra"], "label_encoding": "names"}},
                           r"extra\.label_encoding is 'names', it must be 'index' or 'name'"),
                          ({"classes": ["tench", "tench", "café", "goldfish"]},
                           r"classes is .*, it must be distinct names \(label members hold the names\)")]:
        path.write_text(json.dumps({**good, **edit}))
        with pytest.raises(ManifestError, match=message):
            read_manifest(tmp_path / "s")
    path.write_text(json.dumps({**good, "extra": {**good["extra"], "label_encoding": "index"}}))
    assert read_manifest(tmp_path / "s").label_names is None


def test_the_cli_says_the_labels_are_names(tmp_path: Path, capsys):
    named_shards(tmp_path / "s", count=4)
    assert cli(["index", str(tmp_path / "s"), "-j", "1", "--no-progress"]) == 0
    assert "labeled by class name, 4 classes" in capsys.readouterr().out
    assert cli(["info", str(tmp_path / "s")]) == 0  # a name holding commas is quoted, and so is every other one
    assert f"classes (4): 'café', 'goldfish', '{NAMES[2]}', 'tench'\n" in capsys.readouterr().out


def test_a_long_name_changed_in_the_tar_is_shown_to_forty_bytes(tmp_path: Path):
    named_shards(tmp_path / "s", count=4)
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    tar = tmp_path / "s" / "train-000000.tar"
    tar.write_bytes(tar.read_bytes().replace(b"man-eating shark", b"man-eating sharc"))
    shown = repr(NAMES[2].encode()[:40])
    with pytest.raises(ShardError, match=rf"sample s00002 in .* has a bad class label {re.escape(shown)}; a label"):
        labels_of(tmp_path / "s", "kornia")
