"""`fastdata index` of shards whose only label is a field of each sample's `json` member (`{"label": 3}` through
webdataset's encoder): the field found, the loaders' labels, `verify`, `--label-field`, and every way a json member
holds no label."""

from __future__ import annotations

import json
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


def json_shards(folder: Path, label_of, count: int = 10) -> dict[str, object]:
    """Shards of real photos written by `webdataset.ShardWriter`, each sample's metadata in `json` with the label
    `label_of(i)` in its "label" field among others (as a dict: its fields); key -> that label."""
    import webdataset as wds

    folder.mkdir(parents=True, exist_ok=True)
    labels = {}
    with wds.ShardWriter(str(folder / "train-%06d.tar"), maxcount=4, verbose=0) as sink:
        for i, (stem, data) in enumerate(photo_bytes(count)):
            key = f"s{i:05d}"
            fields = label_of(i)
            fields = fields if isinstance(fields, dict) else {"label": fields}
            labels[key] = next(iter(fields.values()), None)
            sink.write({"__key__": key, "jpg": data, "json": {"file": f"{stem}.jpg", "width": 640, **fields}})
    return labels


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_a_json_label_field_labels_the_samples_in_both_loaders(tmp_path: Path, backend: str):
    if backend == "dali":
        pytest.importorskip("nvidia.dali")
    labels = json_shards(tmp_path / "s", lambda i: (i * 7) % 4)
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    m = result.manifest
    assert result.rejected == []
    assert m.classes == ("0", "1", "2", "3") and m.extra["label_member"] == "json"
    assert m.extra["label_field"] == "label" and "label_encoding" not in m.extra
    expected = [labels[k] for k in sorted(labels)]
    assert m.splits["train"].class_counts == tuple(expected.count(i) for i in range(4))
    assert labels_of(tmp_path / "s", backend) == expected
    assert fastdata.sample_labels(tmp_path / "s").tolist() == expected  # what sample_weights="balanced" weighs
    assert verify_dataset(tmp_path / "s") == []
    again = read_manifest(tmp_path / "s")
    assert again.label_field == "label" and again.label_rule.field == "label" and again.label_member == "json"


def test_class_names_in_a_json_field_become_sorted_classes(tmp_path: Path, capsys):
    names = ["tench", "goldfish", "café"]
    labels = json_shards(tmp_path / "s", lambda i: {"class": names[i % 3]}, count=7)
    assert cli(["index", str(tmp_path / "s"), "-j", "1", "--no-progress"]) == 0
    assert "labeled in json field 'class' by class name, 3 classes" in capsys.readouterr().out
    m = read_manifest(tmp_path / "s")
    assert m.classes == ("café", "goldfish", "tench") and m.extra["label_encoding"] == "name"
    assert m.label_field == "class"
    assert labels_of(tmp_path / "s", "kornia") == [sorted(names).index(labels[k]) for k in sorted(labels)]
    assert verify_dataset(tmp_path / "s") == []


def test_the_first_of_label_cls_class_is_the_label_and_digits_in_a_string_are_an_index(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.json", b'{"class": "x", "cls": "2", "label": 1}'),
                                       ("b.jpg", jpg), ("b.json", b'{"class": "y", "cls": 0, "label": "0"}')])
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert m.label_field == "label" and m.classes == ("0", "1") and m.rejected == ()
    assert labels_of(tmp_path / "s", "kornia") == [1, 0]


def test_a_label_member_wins_over_a_json_label_unless_label_field_is_given(tmp_path: Path, capsys):
    """timm's imagenet-1k-wds holds both a cls member and a json member with the label in it."""
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.cls", b"1"), ("a.jpg", jpg), ("a.json", b'{"label": 0, "id": 5}'),
                                       ("b.cls", b"0"), ("b.jpg", jpg), ("b.json", b'{"label": 2, "id": 7}')])
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert m.label_member == "cls" and m.label_field is None and "label_field" not in m.extra
    assert labels_of(tmp_path / "s", "kornia") == [1, 0]
    assert cli(["index", str(tmp_path / "s"), "--label-field", "id", "-j", "1", "--no-progress"]) == 0
    assert "labeled in json field 'id', 8 classes" in capsys.readouterr().out  # the saved scans were not reused
    m = read_manifest(tmp_path / "s")
    assert (m.label_member, m.label_field, len(m.classes)) == ("json", "id", 8)
    assert labels_of(tmp_path / "s", "kornia") == [5, 7]
    assert verify_dataset(tmp_path / "s") == []


@pytest.mark.parametrize(("member", "reason"), [
    (b'{"label": 1.0}', "its json member's 'label' is 1.0, not a class index (an integer) or a class name "
                        "(a string)"),
    (b'{"label": true}', "its json member's 'label' is true, not a class index (an integer) or a class name "
                         "(a string)"),
    (b'{"label": null}', "its json member's 'label' is null, not a class index (an integer) or a class name "
                         "(a string)"),
    (b'{"label": [1, 2]}', "its json member's 'label' is [1, 2], not a class index (an integer) or a class name "
                           "(a string)"),
    (b'{"label": ""}', "an empty label member"),
    (b'{"label": "a\\u0000b"}', "label b'a\\x00b' holds control or blank characters (a class name is printed as "
                                "text)"),
    (b'{"label": "\\ud800"}', "label b'\\xed\\xa0\\x80' is not UTF-8 text"),
    (b'{"id": 3}', "its json member has none of the fields label, cls, class"),
    (b'[1]', "its json member holds a list, not an object"),
    (b'{"label": 1', "its json member is not JSON (JSONDecodeError: Expecting ',' delimiter: line 1 column 12 "
                     "(char 11))"),
    (b'\xff{}', "its json member is not JSON (UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position "
                "0: invalid start byte)"),
    (b"[" * 100000 + b"]" * 100000, "its json member has 65537 bytes or more (read for a label up to 65536)"),
    (b"[" * 30000 + b"]" * 30000, "its json member nests too deeply to be read"),
    (b" " * 65536 + b"{}", "its json member has 65537 bytes or more (read for a label up to 65536)"),
    (b'{"x": "' + b"y" * 64993 + b'\xc3(', "its json member is not JSON (UnicodeDecodeError: 'utf-8' codec can't "
                                            "decode byte 0xc3 in position 65000: invalid continuation byt)"),
    (b'{"label": [' + b"1, " * 30 + b'1]}',  # shown to 40 characters
     "its json member's 'label' is [" + "1, " * 13 + ", not a class index (an integer) or a class name (a string)"),
])
def test_a_json_member_that_holds_no_label_rejects_its_sample_in_a_labeled_dataset(tmp_path: Path, member: bytes,
                                                                                    reason: str):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.json", member), ("b.jpg", jpg),
                                       ("b.json", b'{"label": 1}'), ("c.jpg", jpg), ("c.json", b'{"label": 0}')])
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [("a.tar:a", f"{reason} (read for its label)")]
    assert m.classes == ("0", "1")
    assert labels_of(tmp_path / "s", "kornia") == [1, 0]


def test_a_json_member_of_the_largest_size_read_is_read(tmp_path: Path):
    jpg = encoded("JPEG")
    member = b'{"label": 1, "pad": "' + b"x" * (65536 - 23) + b'"}'
    assert len(member) == 65536
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.json", member), ("b.jpg", jpg), ("b.json", b'{"label": 0}')])
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert m.rejected == () and labels_of(tmp_path / "s", "kornia") == [1, 0]


def test_json_members_without_a_label_field_leave_the_dataset_unlabeled(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.json", b'{"url": "http://x/a.jpg"}'), ("b.jpg", jpg),
                                       ("b.json", b"not json"), ("c.jpg", jpg)])
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert not m.labeled and m.rejected == () and m.label_rule is None and m.extra["label_member"] is None
    assert labels_of(tmp_path / "s", "kornia") == [-1, -1, -1]


def test_a_label_field_no_sample_holds_stops_the_run(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.json", b'{"label": 1}'), ("b.jpg", jpg)])
    with pytest.raises(ConvertError, match=r"^--label-field class_id: no sample's json member holds a label in that "
                                           r"field \(its json member has no 'class_id' field \(read for its "
                                           r"label\)\)$"):
        adopt(tmp_path / "s", options=AdoptOptions(jobs=1, label_field="class_id"))
    raw_tar(tmp_path / "t" / "a.tar", [("a.jpg", jpg), ("a.cls", b"1")])
    with pytest.raises(ConvertError, match=r"\(no sample has a json member\)$"):
        adopt(tmp_path / "t", options=AdoptOptions(jobs=1, label_field="label"))
    with pytest.raises(ValueError, match="label_field must be the name of a json field, got ''"):
        AdoptOptions(label_field="")


def test_labels_in_two_fields_or_a_member_and_a_field_are_refused_with_the_option(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.json", b'{"label": 1}'), ("b.jpg", jpg),
                                       ("b.json", b'{"cls": 0}'), ("c.cls", b"0"), ("c.jpg", jpg)])
    with pytest.raises(ConvertError, match=r"^the shards hold their labels in several places \(cls, json field "
                                           r"'cls', json field 'label'\); one dataset uses one; --label-field FIELD "
                                           "reads every label from that field of the json members$"):
        adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1, label_field="label")).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("a.tar:b", "its json member has no 'label' field (read for its label)"),
        ("a.tar:c", "no label member while the rest of the dataset is labeled")]


def test_a_label_changed_in_the_tar_fails_the_loader_and_verify(tmp_path: Path):
    json_shards(tmp_path / "s", lambda i: i % 3, count=4)
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    tar = tmp_path / "s" / "train-000000.tar"
    data = tar.read_bytes()
    old = b'"label": 1}'
    assert data.count(old) == 1
    tar.write_bytes(data.replace(old, b'"label": 9}'))
    with pytest.raises(ShardError, match=r"sample s00001 in .*train-000000.tar has label 9, the manifest lists 3 "
                                         "classes"):
        fastdata.sample_labels(tmp_path / "s")
    tar.write_bytes(data.replace(old, b'"label":[]}'))
    with pytest.raises(ShardError, match=r"sample s00001 in .* has no class label: its json member's 'label' is "
                                         r"\[\], not a class index"):
        labels_of(tmp_path / "s", "kornia")
    assert (f"{tar}: sample s00001 has no class label: its json member's 'label' is [], not a class index (an "
            "integer) or a class name (a string)") in verify_dataset(tmp_path / "s")
    tar.write_bytes(data.replace(old, b'"label": 1,'))  # no longer JSON
    with pytest.raises(ShardError, match=r"sample s00001 in .* has no class label: its json member is not JSON "
                                         r"\(JSONDecodeError: "):
        labels_of(tmp_path / "s", "kornia")
    tar.write_bytes(data.replace(old, b'"label": 7}'))
    assert f"{tar}: sample s00001 label 7 outside 0..2" in verify_dataset(tmp_path / "s")


def test_the_manifest_refuses_a_label_field_that_is_no_string(tmp_path: Path):
    json_shards(tmp_path / "s", lambda i: i % 2, count=2)
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    path = tmp_path / "s" / "manifest.json"
    good = json.loads(path.read_text())
    path.write_text(json.dumps({**good, "extra": {**good["extra"], "label_field": 3}}))
    with pytest.raises(ManifestError, match=r"extra\.label_field is '3', it must be a string"):
        read_manifest(tmp_path / "s")


def test_sample_labels_refuses_a_label_member_outside_the_classes(tmp_path: Path):
    """Class-weighted sampling weighs what sample_labels reads: a label past the classes is an error, as the
    loaders' reads of that sample give, not a class of its own."""
    jpg = encoded("JPEG")
    tar = raw_tar(tmp_path / "s" / "a.tar", [("a.cls", b"1"), ("a.jpg", jpg), ("b.cls", b"0"), ("b.jpg", jpg)])
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    assert fastdata.sample_labels(tmp_path / "s").tolist() == [1, 0]
    tar.write_bytes(tar.read_bytes().replace(b"0" + b"\0" * 511, b"2" + b"\0" * 511, 1))
    with pytest.raises(ShardError, match=r"sample b in .*a.tar has label 2, the manifest lists 2 classes$"):
        fastdata.sample_labels(tmp_path / "s")


def test_remote_shards_are_indexed_by_their_json_field_as_a_local_copy_is(tmp_path: Path, s3: str, monkeypatch):
    pytest.importorskip("obstore")
    from fastdata.storage.client import RemoteStore

    monkeypatch.setenv("FASTDATA_CACHE", str(tmp_path / "cache" / "shards"))
    json_shards(tmp_path / "s", lambda i: {"label": 0, "class_id": i % 3}, count=6)
    store = RemoteStore(f"{s3}/wds/")
    for name in ("train-000000.tar", "train-000001.tar"):
        store.upload(name, tmp_path / "s" / name)
    options = AdoptOptions(jobs=1, label_field="class_id")
    remote = adopt(f"{store.url}train-{{000000..000001}}.tar", options=options).manifest
    assert remote.to_dict() == adopt(tmp_path / "s", options=options).manifest.to_dict()
    assert remote.label_field == "class_id" and remote.splits["train"].class_counts == (2, 2, 2)
