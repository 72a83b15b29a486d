"""Several classes an image (`fastdata convert SRC --labels FILE --multi-label`): ChestX-ray14's `Finding Labels`
(`Effusion|Mass`, `No Finding` one class), Planet's space-separated tags, one-hot columns marking several classes.
The json member lists each sample's classes, the loaders deliver float32 multi-hot rows, `sample_labels` a uint8
matrix, `verify` checks and counts every class. The photos are the real ones of tests/data."""

from __future__ import annotations

import json
import logging
import re
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_images import loader
from helpers import PHOTOS, convert_images

import fastdata
from converters.images.labels_csv import class_separator, read_labels, split_classes
from fastdata.errors import ConvertError, ManifestError, ShardError
from fastdata.images.batch_labels import batch_labels
from fastdata.verify import verify_dataset

FINDINGS = ["Effusion|Mass", "No Finding", "Atelectasis", "Mass|Atelectasis|Effusion", "No Finding", "Effusion",
            "Mass", "Atelectasis|Atelectasis", "No Finding", "Effusion|No Finding", "Mass", "Atelectasis"]
CLASSES = ("Atelectasis", "Effusion", "Mass", "No Finding")  # sorted


def _source(root: Path, findings: list[str] = FINDINGS) -> tuple[Path, Path, dict[str, set[str]]]:
    """Real photos as ChestX-ray14 names its images, and its Data_Entry CSV (more columns than two, as it has)."""
    src = root / "images"
    src.mkdir(parents=True)
    rows, wanted = ["Image Index,Finding Labels,Follow-up #,Patient ID"], {}
    for i, (photo, finding) in enumerate(zip(sorted(PHOTOS.glob("*.jpg")), findings)):
        name = f"{i:08d}_000.png" if i % 3 == 0 else f"{i:08d}_000.jpg"
        if name.endswith(".png"):
            from PIL import Image

            Image.open(photo).convert("RGB").save(src / name)
        else:
            shutil.copyfile(photo, src / name)
        rows.append(f"{name},{finding},0,{i}")
        wanted[name] = set(finding.split("|"))
    table = root / "Data_Entry_2017.csv"
    table.write_text("\n".join(rows) + "\n")
    return src, table, wanted


@pytest.fixture(scope="module")
def chest(tmp_path_factory) -> tuple[Path, dict[str, set[str]]]:
    root = tmp_path_factory.mktemp("chest")
    src, table, wanted = _source(root)
    convert_images(src, root / "out", labels=str(table), multi_label=True, short_side=64)
    return root / "out", wanted


def _members(ds: Path) -> dict[str, dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {}
    for shard in sorted(ds.glob("*.tar")):
        with tarfile.open(shard) as tar:
            for m in tar.getmembers():
                key, ext = m.name.split(".", 1)
                out.setdefault(f"{shard.name}:{key}", {})[ext] = tar.extractfile(m).read()
    return out


def _expected_rows(ds: Path, wanted: dict[str, set[str]]) -> dict[str, list[float]]:
    """"shard:key" -> the multi-hot row its source's CSV row gives."""
    return {k: [float(c in wanted[json.loads(m["json"])["source"]]) for c in CLASSES]
            for k, m in _members(ds).items()}


# ---- reading the labels file ----

def test_a_bar_separates_classes_and_a_class_keeps_its_spaces(tmp_path):
    src, table, _ = _source(tmp_path)
    labels = read_labels(table, [p.name for p in src.iterdir()], src, multi=True)
    assert labels.classes == CLASSES
    assert labels.rows["00000000_000.png"] == ("Effusion", "Mass")
    assert labels.rows["00000001_000.jpg"] == ("No Finding",)
    assert labels.rows["00000007_000.jpg"] == ("Atelectasis",)  # named twice in its cell: once


def test_spaces_separate_tags_when_no_cell_holds_a_bar(tmp_path):
    table = tmp_path / "train_v2.csv"
    table.write_text("image_name,tags\ntrain_0,haze primary\ntrain_1,agriculture clear primary water\n"
                     "train_2,clear primary\n")
    labels = read_labels(table, ["train_0.jpg", "train_1.jpg", "train_2.jpg"], tmp_path, multi=True)
    assert labels.classes == ("agriculture", "clear", "haze", "primary", "water")
    assert labels.rows["train_1"] == ("agriculture", "clear", "primary", "water")


@pytest.mark.parametrize(("cells", "separator"), [(["a|b", "c d"], "|"), (["a;b", "c,d"], ";"), (["a,b"], ","),
                                                  (["a b", "c"], None)])
def test_the_separator_is_the_first_a_cell_holds(cells, separator):
    assert class_separator(cells) == separator
    assert split_classes(" x | y |", "|") == ["x", "y"]


def test_class_ids_stay_the_labels_they_are(tmp_path):
    table = tmp_path / "labels.csv"
    table.write_text("a.jpg,0|3\nb.jpg,1\n")
    labels = read_labels(table, ["a.jpg", "b.jpg"], tmp_path, multi=True)
    assert labels.classes == ("0", "1", "2", "3")
    assert labels.rows["a.jpg"] == ("0", "3")


def test_one_hot_rows_may_mark_several_classes_or_none(tmp_path, caplog):
    table = tmp_path / "labels.csv"
    table.write_text("image,MEL,NV,BCC\na,1.0,0.0,1.0\nb,0,0,0\nc,0,1,0\n")
    with caplog.at_level(logging.WARNING):
        labels = read_labels(table, ["a.jpg", "b.jpg", "c.jpg"], tmp_path, multi=True)
    assert not caplog.records  # its class columns are read, not "more than two columns" left unread
    assert labels.classes == ("MEL", "NV", "BCC")  # column order
    assert labels.rows == {"a": ("MEL", "BCC"), "b": (), "c": ("NV",)}
    with pytest.raises(ConvertError, match="marked with 2 classes.*converts with --multi-label"):
        read_labels(table, ["a.jpg", "b.jpg", "c.jpg"], tmp_path)


def test_a_cell_of_separators_only_is_refused_naming_its_line(tmp_path):
    table = tmp_path / "labels.csv"
    table.write_text("a.jpg,x|y\nb.jpg,|\n")
    with pytest.raises(ConvertError, match=r"labels.csv:2: '\|' names no class"):
        read_labels(table, ["a.jpg", "b.jpg"], tmp_path, multi=True)


def test_joined_classes_without_the_option_are_warned_of(tmp_path, caplog):
    src, table, _ = _source(tmp_path)
    with caplog.at_level(logging.WARNING):
        labels = read_labels(table, [p.name for p in src.iterdir()], src)
    assert "Effusion|Mass" in labels.classes
    assert "4 of its classes are other classes joined ('Atelectasis|Atelectasis', 'Effusion|Mass'" in caplog.text
    assert "--multi-label" in caplog.text
    caplog.clear()
    plain = tmp_path / "plain.csv"
    plain.write_text("a.jpg,No Finding\nb.jpg,Finding\nc.jpg,New York\n")  # spaces join classes only when all are
    with caplog.at_level(logging.WARNING):
        read_labels(plain, ["a.jpg", "b.jpg", "c.jpg"], tmp_path)
    assert "joined" not in caplog.text
    barred = tmp_path / "barred.csv"
    barred.write_text("a.jpg,Effusion\nb.jpg,Effusion|Hernia\n")  # a bar joins a class to one that has no row
    with caplog.at_level(logging.WARNING):
        read_labels(barred, ["a.jpg", "b.jpg"], tmp_path)
    assert "1 of its classes are other classes joined ('Effusion|Hernia')" in caplog.text


def test_a_val_fraction_names_each_class_left_without_a_val_image(caplog):
    from converters.kind import Discovery
    from converters.sample import WorkItem
    from converters.val_fraction import apply_val_fraction, held_out

    names = [f"{i}.png" for i in range(40)]
    val = next(n for n in names if held_out(n, 0.5))
    train = [n for n in names if not held_out(n, 0.5)][:2]
    items = [WorkItem("train", val, val, (0,)), WorkItem("train", train[0], train[0], (0, 1)),
             WorkItem("train", train[1], train[1], ())]
    with caplog.at_level(logging.WARNING):
        found = apply_val_fraction(Discovery({"train": items}, ("x", "y"), [], "flat+labels"), 0.5, "train",
                                   layouts=("flat+labels",))
    assert [it.rel for it in found.splits["val"]] == [val]
    assert "left 1 classes with no val image: 'y'" in caplog.text


# ---- converting ----

def test_a_dry_run_counts_each_class_of_an_image(tmp_path, capsys):
    from fastdata.cli import main as cli

    src, table, _ = _source(tmp_path)
    assert cli(["convert", str(src), "--dry-run", "--labels", str(table), "--multi-label"]) == 0
    out = capsys.readouterr().out
    assert "classes (4): Atelectasis, Effusion, Mass, No Finding" in out
    assert "inputs per class: 4 (Atelectasis) to 4 (No Finding)" in out  # each finding is 4 images'

def test_the_json_member_lists_the_classes_and_there_is_no_cls(chest):
    ds, wanted = chest
    manifest = json.loads((ds / "manifest.json").read_text())
    assert manifest["classes"] == list(CLASSES)
    assert manifest["extra"]["multi_label"] is True
    assert (manifest["extra"]["label_member"], manifest["extra"]["label_field"]) == ("json", "labels")
    members = _members(ds)
    assert len(members) == len(FINDINGS)
    for m in members.values():
        assert set(m) == {"jpg", "json"}
        info = json.loads(m["json"])
        assert [CLASSES[c] for c in info["labels"]] == sorted(wanted[info["source"]])
        assert "label" not in info
    counts = [sum(c in w for w in wanted.values()) for c in CLASSES]
    assert manifest["splits"]["train"]["class_counts"] == counts  # each class of an image counted


def test_webdataset_decodes_the_classes(chest):
    import webdataset as wds

    ds, wanted = chest
    shards = [str(p) for p in sorted(ds.glob("*.tar"))]
    found = {s["json"]["source"]: s["json"]["labels"] for s in wds.WebDataset(shards, shardshuffle=False).decode()}
    assert {k: {CLASSES[c] for c in v} for k, v in found.items()} == wanted


@pytest.mark.parametrize("labels", [None, "val={}"])
def test_the_option_without_a_labels_file_of_the_whole_source_is_refused(tmp_path, labels):
    src, table, _ = _source(tmp_path)
    given = {} if labels is None else {"labels": labels.format(table)}
    with pytest.raises(ValueError, match=r"--multi-label reads the classes of each image from a labels CSV of the "
                                         r"whole source \(--labels FILE\), from a column of Parquet or Arrow tables"):
        convert_images(src, tmp_path / "out", multi_label=True, **given)
    assert not (tmp_path / "out" / "manifest.json").exists()


# ---- Arrow shards ----

@pytest.fixture(scope="module")
def chest_arrow(tmp_path_factory) -> tuple[Path, dict[str, set[str]]]:
    root = tmp_path_factory.mktemp("chest-arrow")
    src, table, wanted = _source(root)
    convert_images(src, root / "out", labels=str(table), multi_label=True, short_side=64, format="arrow")
    return root / "out", wanted


def _arrow_rows(ds: Path, wanted: dict[str, set[str]]) -> dict[str, list[float]]:
    """"shard:key" -> the multi-hot row of its source, from the Arrow shards' key and json columns."""
    import pyarrow as pa

    out = {}
    for shard in sorted(ds.glob("*.arrow")):
        table = pa.ipc.open_stream(shard.read_bytes()).read_all()
        for key, info in zip(table.column("key").to_pylist(), table.column("json").to_pylist()):
            out[f"{shard.name}:{key}"] = [float(c in wanted[json.loads(info)["source"]]) for c in CLASSES]
    return out


def test_an_arrow_shard_holds_a_list_of_class_labels_that_datasets_reads(chest_arrow):
    import datasets

    ds, wanted = chest_arrow
    rows = [r for shard in sorted(ds.glob("*.arrow")) for r in datasets.Dataset.from_file(str(shard))]
    feature = datasets.Dataset.from_file(str(sorted(ds.glob("*.arrow"))[0])).features["labels"]
    assert feature.feature.names == list(CLASSES)  # a list of ClassLabel, its names the classes
    assert {json.loads(r["json"])["source"]: {CLASSES[c] for c in r["labels"]} for r in rows} == wanted
    assert "label" not in rows[0]
    assert verify_dataset(ds) == []


def test_verify_counts_every_class_of_an_arrow_row(chest_arrow, tmp_path):
    ds = tmp_path / "ds"
    shutil.copytree(chest_arrow[0], ds)
    m = json.loads((ds / "manifest.json").read_text())
    assert m["splits"]["train"]["class_counts"] == [sum(c in w for w in chest_arrow[1].values()) for c in CLASSES]
    m["splits"]["train"]["class_counts"][2] += 1
    (ds / "manifest.json").write_text(json.dumps(m))
    assert any("class counts" in p for p in verify_dataset(ds))


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_arrow_batches_carry_the_multi_hot_rows_of_their_samples(chest_arrow, backend):
    ds, wanted = chest_arrow
    expected = _arrow_rows(ds, wanted)
    _check_eval_rows(ds, backend, expected)
    assert fastdata.sample_labels(ds).tolist() == [[int(v) for v in row] for _, row in sorted(expected.items())]


@pytest.mark.parametrize(("change", "problem"), [
    (lambda rows: [rows[0], [0, 4], *rows[2:]], "row 1 has labels [4], outside 0..3"),
    (lambda rows: [rows[0], [2, 2], *rows[2:]], "row 1 names a class twice in its labels [2, 2]"),
    (lambda rows: [None, *rows[1:]], "column labels holds 1 null value(s), the first in row 0"),
    (lambda rows: [[str(c) for c in row] for row in rows], "labels: list<item: string>; want key text"),
])
def test_a_forged_arrow_labels_column_is_refused(chest_arrow, tmp_path, change, problem):
    import pyarrow as pa
    from helpers import rewrite_arrow_shard

    ds = tmp_path / "ds"
    shutil.copytree(chest_arrow[0], ds)
    name = sorted(p.name for p in ds.glob("*.arrow"))[0]

    def forged(table: pa.Table) -> pa.Table:
        i = table.schema.get_field_index("labels")
        return table.set_column(i, "labels", pa.array(change(table.column("labels").to_pylist())))

    rewrite_arrow_shard(ds, name, forged)
    assert any(problem in p for p in verify_dataset(ds)), verify_dataset(ds)
    with pytest.raises(ShardError, match=re.escape(problem)):
        list(loader(ds, train=False))


def test_an_arrow_shard_of_one_class_a_row_in_a_multi_label_dataset_is_refused(chest_arrow, tmp_path):
    import pyarrow as pa
    from helpers import rewrite_arrow_shard

    ds = tmp_path / "ds"
    shutil.copytree(chest_arrow[0], ds)
    name = sorted(p.name for p in ds.glob("*.arrow"))[0]
    rewrite_arrow_shard(ds, name, lambda t: t.append_column("label", pa.array([0] * t.num_rows, type=pa.int64())))
    with pytest.raises(ShardError, match="label: a column in a multi-label dataset"):
        list(loader(ds, train=False))
    rewrite_arrow_shard(ds, name, lambda t: t.drop_columns(["labels", "label"]))
    with pytest.raises(ShardError, match=r"labels: missing or given twice \(the manifest says multi-label\)"):
        list(loader(ds, train=False))


# ---- loading ----

@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_batches_carry_the_multi_hot_rows_of_their_samples(chest, backend):
    ds, wanted = chest
    _check_eval_rows(ds, backend, _expected_rows(ds, wanted))


def _check_eval_rows(ds: Path, backend: str, expected: dict[str, list[float]]) -> None:
    """Every eval batch holds float32 multi-hot rows, each its sample's expected row ("shard:key" -> row), then
    padding rows of -100; every sample once."""
    ld = loader(ds, backend=backend, train=False, batch_size=5)
    seen = 0
    for _, y in ld:
        assert y.dtype == torch.float32 and y.shape == (5, len(CLASSES))
        keys = ld._backend.last_keys  # "shard:key" of the batch's real rows
        assert y[:len(keys)].tolist() == [expected[k] for k in keys]
        assert (y[len(keys):] == -100).all()  # eval's padding rows
        seen += len(keys)
    assert seen == len(FINDINGS)


def test_train_batches_of_both_backends_agree(chest):
    ds, _ = chest
    labels = {b: torch.cat([y for _, y in loader(ds, backend=b, train=True, seed=3)]) for b in ("kornia", "dali")}
    assert torch.equal(labels["kornia"], labels["dali"])
    assert labels["kornia"].sum(1).min() >= 1  # every image of this table has a class


def test_sample_labels_is_a_multi_hot_matrix_and_balanced_weights_are_refused(chest):
    ds, wanted = chest
    matrix = fastdata.sample_labels(ds)
    assert matrix.dtype == np.uint8 and matrix.shape == (len(FINDINGS), len(CLASSES))
    rows = sorted(_expected_rows(ds, wanted).items())  # shard:key order is the global index order
    assert matrix.tolist() == [[int(v) for v in row] for _, row in rows]
    with pytest.raises(ValueError, match="multi-label dataset have several"):
        loader(ds, sample_weights="balanced")


def test_batch_labels_of_classes_and_of_padding():
    assert batch_labels([2, None, 0]).tolist() == [2, -100, 0]
    assert batch_labels([(0, 2), None, (), (1,)], 3).tolist() == [[1, 0, 1], [-100] * 3, [0, 0, 0], [0, 1, 0]]


def _rewrite_labels(ds: Path, labels) -> str:
    """Give the first sample of the first shard `labels` in its json member (same length, so the shard keeps its
    size; the manifest's sha256 is not what these checks read)."""
    shard = sorted(ds.glob("*.tar"))[0]
    data = bytearray(shard.read_bytes())
    with tarfile.open(shard) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".json"))
    info = json.loads(data[member.offset_data:member.offset_data + member.size])
    new = json.dumps({**info, "labels": labels}, sort_keys=True, separators=(",", ":")).encode()
    new = new[:-1] + b" " * (member.size - len(new)) + b"}"
    assert len(new) == member.size
    data[member.offset_data:member.offset_data + member.size] = new
    shard.write_bytes(bytes(data))
    return member.name.split(".")[0]


@pytest.mark.parametrize(("labels", "problem"), [([0, 4], "labels [4] outside 0..3"),
                                                 ("Mass", "is \"Mass\", not a list of classes"),
                                                 (3, "is 3, not a list of classes"),
                                                 ([True], "is [true], not a list of classes"),
                                                 (["x"], "holds \"x\", not a class index (an integer)"),
                                                 ([1, 1], "names a class twice")])
def test_verify_and_the_loaders_refuse_a_forged_label_list(chest, tmp_path, labels, problem):
    ds = tmp_path / "ds"
    shutil.copytree(chest[0], ds)
    key = _rewrite_labels(ds, labels)
    found = verify_dataset(ds)
    assert any(f"sample {key}" in p and problem in p for p in found), found
    shard = sorted(ds.glob("*.tar"))[0]
    with pytest.raises(ShardError, match=f"sample {key} in {re.escape(str(shard))}"):
        list(loader(ds, train=False))
    with pytest.raises(ShardError, match=f"sample {key} in {re.escape(str(shard))}"):
        fastdata.sample_labels(ds)
    skipped = list(loader(ds, train=False, on_error="skip"))
    assert sum(len(y) - int((y == -100).all(1).sum()) for _, y in skipped) == len(FINDINGS) - 1


def test_a_json_member_that_is_no_json_is_refused_naming_the_sample(chest, tmp_path):
    ds = tmp_path / "ds"
    shutil.copytree(chest[0], ds)
    shard = sorted(ds.glob("*.tar"))[0]
    data = bytearray(shard.read_bytes())
    with tarfile.open(shard) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".json"))
    data[member.offset_data:member.offset_data + member.size] = b"\xff" * member.size
    shard.write_bytes(bytes(data))
    key = member.name.split(".")[0]
    assert any(f"sample {key} has no class labels: its json member is not JSON" in p for p in verify_dataset(ds))
    with pytest.raises(ShardError, match=f"sample {key} in .* has no class labels: its json member is not JSON"):
        list(loader(ds, train=False))


def test_verify_counts_every_class_of_an_image(chest):
    ds, _ = chest
    assert verify_dataset(ds) == []
    path = ds / "manifest.json"
    kept = path.read_text()
    try:
        m = json.loads(kept)
        m["splits"]["train"]["class_counts"][1] -= 1
        path.write_text(json.dumps(m))
        assert any("class counts" in p for p in verify_dataset(ds))
    finally:
        path.write_text(kept)


@pytest.mark.parametrize(("extra", "error"), [({"multi_label": "yes"}, "true or false"),
                                              ({"multi_label": True, "label_member": "cls"}, "label_member is 'json'")])
def test_a_forged_multi_label_field_is_refused(chest, tmp_path, extra, error):
    ds = tmp_path / "ds"
    shutil.copytree(chest[0], ds)
    m = json.loads((ds / "manifest.json").read_text())
    m["extra"].update(extra)
    (ds / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ManifestError, match=error):
        fastdata.loader(ds)


def test_a_mixture_unites_the_classes_and_refuses_one_class_datasets(chest, tmp_path):
    ds, wanted = chest
    src, table, _ = _source(tmp_path / "b", ["Hernia|Mass", "Mass", "Hernia", "No Finding"])
    convert_images(src, tmp_path / "b-out", labels=str(table), multi_label=True)
    mixed = fastdata.loader([str(ds), str(tmp_path / "b-out")], weights=[1, 1], batch_size=4, image_size=32,
                            backend="kornia", device="cpu", train=True, samples_per_epoch=8)
    assert mixed.classes == ("Atelectasis", "Effusion", "Hernia", "Mass", "No Finding")
    rows = torch.cat([y for _, y in mixed])
    assert rows.shape == (8, 5) and set(rows.flatten().tolist()) <= {0.0, 1.0} and rows.sum(1).min() >= 1
    # evaluation reads the union in list order: each row is its dataset's own, its classes mapped into the union
    def mapped(root: Path) -> list[list[float]]:  # a dataset's multi-hot rows, their classes in the union's places
        names = json.loads((root / "manifest.json").read_text())["classes"]
        return [[float(any(on and names[c] == u for c, on in enumerate(row))) for u in mixed.classes]
                for row in fastdata.sample_labels(root).tolist()]

    expected = mapped(ds) + mapped(tmp_path / "b-out")
    ev = fastdata.loader([str(ds), str(tmp_path / "b-out")], batch_size=4, image_size=32, backend="kornia",
                         device="cpu", train=False)
    got = {}
    for _, y in ev:
        got.update(zip(ev._backend.last_rows, y.tolist()))
    assert [got[i] for i in range(len(got))] == expected
    convert_images(src, tmp_path / "single", labels=str(table))
    with pytest.raises(ManifestError, match="one class a sample while the other datasets of the mixture are multi"):
        fastdata.loader([str(ds), str(tmp_path / "single")], weights=[1, 1], batch_size=4, device="cpu")


# ---- Hugging Face tables ----

def _hub_table(path: Path, labels: list, *, feature: str | dict | None = "Sequence", names=CLASSES,
               value=None) -> Path:
    """A Parquet table as the Hub ships an image dataset of several classes an image (NIH ChestX-ray14's `labels:
    Sequence(ClassLabel)`): an Image column of real photos and a column of lists."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    photos = sorted(PHOTOS.glob("*.jpg"))[:len(labels)]
    image = pa.array([{"bytes": p.read_bytes(), "path": p.name} for p in photos],
                     type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    features = {"image": {"_type": "Image"}}
    if isinstance(feature, dict):
        features["labels"] = feature
    elif feature is not None:
        features["labels"] = {"feature": {"names": list(names), "_type": "ClassLabel"}, "_type": feature}
    table = pa.table({"image": image, "labels": pa.array(labels, type=value or pa.list_(pa.int64()))})
    table = table.replace_schema_metadata({b"huggingface": json.dumps({"info": {"features": features}}).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize("feature", ["Sequence", "List"])
def test_a_hub_table_of_class_label_lists_converts_with_its_names(tmp_path, feature):
    _hub_table(tmp_path / "src" / "data" / "train-00000-of-00001.parquet",
               [[1, 2], [3], [], [0, 1, 2], [2, 2], None, [7]], feature=feature)
    result = convert_images(tmp_path / "src", tmp_path / "out", multi_label=True)
    assert result.manifest.classes == CLASSES
    labels = sorted(tuple(json.loads(m["json"])["labels"]) for m in _members(tmp_path / "out").values())
    assert labels == [(), (0, 1, 2), (1, 2), (2,), (3,)]  # [2, 2] is class 2 once
    reasons = sorted(r["reason"] for r in result.manifest.rejected)
    assert reasons == ["label is no class of column 'labels' (4 classes): 7", "no labels (null in column 'labels')"]


@pytest.mark.parametrize("feature", [None, {"feature": {"dtype": "string", "_type": "Value"}, "_type": "Sequence"}])
def test_a_table_of_lists_of_names_gets_its_classes_sorted(tmp_path, feature):
    import pyarrow as pa

    _hub_table(tmp_path / "src" / "train.parquet", [["haze", "primary"], ["clear", "primary", "water"]],
               feature=feature, value=pa.list_(pa.string()))
    result = convert_images(tmp_path / "src", tmp_path / "out", multi_label=True)
    assert result.manifest.classes == ("clear", "haze", "primary", "water")
    labels = sorted(tuple(json.loads(m["json"])["labels"]) for m in _members(tmp_path / "out").values())
    assert labels == [(0, 2, 3), (1, 2)]
    y = torch.cat([y for _, y in loader(tmp_path / "out", train=False)])
    assert sorted(map(tuple, y[(y >= 0).all(1)].tolist())) == [(0.0, 1.0, 1.0, 0.0), (1.0, 0.0, 1.0, 1.0)]


def test_a_column_of_lists_without_the_option_or_of_numbers_with_it_is_refused_naming_why(tmp_path):
    import pyarrow as pa

    _hub_table(tmp_path / "lists" / "train.parquet", [[0, 1], [2]])
    with pytest.raises(ConvertError, match=r"label column 'labels' has type list<\w+: int64>, not whole numbers or "
                                           r"strings \(a list of classes a row: convert with --multi-label\)"):
        convert_images(tmp_path / "lists", tmp_path / "a")
    _hub_table(tmp_path / "plain" / "train.parquet", [0, 1], feature=None, value=pa.int64())
    with pytest.raises(ConvertError, match=r"label column 'labels' has type int64, not lists of whole numbers or "
                                           r"strings \(--multi-label reads a list of classes a row\)"):
        convert_images(tmp_path / "plain", tmp_path / "b", multi_label=True)
    _hub_table(tmp_path / "floats" / "train.parquet", [[0.5], [1.0]], feature=None, value=pa.list_(pa.float64()))
    with pytest.raises(ConvertError, match=r"label column 'labels' has type list<\w+: double>, not lists of whole"):
        convert_images(tmp_path / "floats", tmp_path / "c", multi_label=True)


def test_a_table_whose_every_list_is_empty_is_refused_not_converted_without_classes(tmp_path):
    _hub_table(tmp_path / "empty" / "train.parquet", [[], [], None], feature=None)
    with pytest.raises(ConvertError, match=r"--multi-label: the column 'labels' of every row lists no class \(every "
                                           r"list is empty\), so there is no class to learn; --unlabeled converts"):
        convert_images(tmp_path / "empty", tmp_path / "out", multi_label=True)
    assert not (tmp_path / "out" / "manifest.json").exists()
    _hub_table(tmp_path / "named" / "train.parquet", [[], []])  # a ClassLabel names the classes: no list needs to
    assert convert_images(tmp_path / "named", tmp_path / "ok", multi_label=True).manifest.classes == CLASSES


def test_the_option_on_a_table_of_pixels_is_refused(tmp_path):
    src = tmp_path / "digits"
    src.mkdir()
    (src / "train.csv").write_text("label," + ",".join(f"pixel{i}" for i in range(784)) + "\n"
                                   + "".join(f"{d}," + ",".join(["0"] * 784) + "\n" for d in (3, 7)))
    with pytest.raises(ValueError, match=r"from a feature of TFRecord files that lists them, from a split folder's "
                                         r"Hugging Face metadata or Roboflow _classes.csv, from the lists of "
                                         r"CelebA, Pascal VOC, COCO, "
                                         r"CheXpert and MIMIC-CXR-JPG, or from the rows of flags of NumPy .npz files "
                                         r".*; .* holds image "
                                         "datasets kept as arrays"):
        convert_images(src, tmp_path / "out", multi_label=True)


def test_the_option_contradicts_unlabeled_and_a_label_pattern(tmp_path):
    src, table, _ = _source(tmp_path)
    with pytest.raises(ValueError, match="--multi-label and --unlabeled contradict each other"):
        convert_images(src, tmp_path / "out", multi_label=True, unlabeled=True)
    with pytest.raises(ValueError, match="--multi-label and --label-pattern contradict each other"):
        convert_images(src, tmp_path / "out", multi_label=True, label_pattern="(.)")


# ---- adopting WebDataset shards (`fastdata index --multi-label`) ----

TAGS = [["haze", "primary"], ["clear", "primary", "water"], [], ["cloudy"], ["haze", "primary"], ["clear"]]


def _tagged_shards(folder: Path, tags: list, field: str = "tags") -> dict[str, list]:
    """Shards of real photos written by `webdataset.ShardWriter`, each sample's json listing its classes in
    `field` beside other metadata; key -> its list."""
    import webdataset as wds
    from conftest_adopt import photo_bytes

    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    with wds.ShardWriter(str(folder / "train-%06d.tar"), maxcount=4, verbose=0) as sink:
        for i, ((stem, data), labels) in enumerate(zip(photo_bytes(len(tags)), tags)):
            out[f"s{i:05d}"] = labels
            sink.write({"__key__": f"s{i:05d}", "jpg": data, "json": {"file": f"{stem}.jpg", field: labels}})
    return out


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_adopted_shards_listing_class_names_load_as_multi_hot_rows(tmp_path, backend):
    from converters.adopt import AdoptOptions, adopt

    tags = _tagged_shards(tmp_path / "s", TAGS)
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1, multi_label=True, label_field="tags")).manifest
    names = ("clear", "cloudy", "haze", "primary", "water")
    assert (m.classes, m.multi_label, m.label_names is not None, m.label_field) == (names, True, True, "tags")
    assert list(m.splits["train"].class_counts) == [sum(c in t for t in TAGS) for c in names]
    assert verify_dataset(tmp_path / "s") == []
    want = {k: [float(c in t) for c in names] for k, t in tags.items()}
    ld = loader(tmp_path / "s", backend=backend, train=False, batch_size=4)
    got = {}
    for _, y in ld:
        got.update(zip((k.split(":")[1] for k in ld._backend.last_keys), y.tolist()))
    assert got == want
    assert fastdata.sample_labels(tmp_path / "s").tolist() == [[int(v) for v in want[k]] for k in sorted(want)]


def test_adopted_shards_whose_every_list_is_empty_are_refused_unless_classes_are_named(tmp_path):
    from converters.adopt import AdoptOptions, adopt

    _tagged_shards(tmp_path / "s", [[], [], []])
    with pytest.raises(ConvertError, match=r"--multi-label: every sample's json member lists no class \(every list "
                                           r"is empty\), so there is no class to learn; --classes FILE names"):
        adopt(tmp_path / "s", options=AdoptOptions(jobs=1, multi_label=True, label_field="tags"))
    assert not (tmp_path / "s" / "manifest.json").exists()
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1, multi_label=True, label_field="tags",
                                                   classes=("cat", "dog"), label_names=True)).manifest
    assert (m.classes, m.multi_label, list(m.splits["train"].class_counts)) == (("cat", "dog"), True, [0, 0])


def test_adopted_class_indices_in_the_labels_field_are_named_by_classes(tmp_path, capsys):
    from fastdata.cli import main as cli

    _tagged_shards(tmp_path / "s", [[0, 3], [1], [], [3, 0, 2]], field="labels")
    (tmp_path / "classes.txt").write_text("a\nb\nc\nd\n")
    assert cli(["index", str(tmp_path / "s"), "--multi-label", "--classes", str(tmp_path / "classes.txt"), "-j",
                "1", "--no-progress"]) == 0
    assert "labeled in json field 'labels', several a sample, 4 classes" in capsys.readouterr().out
    m = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert (m["classes"], m["extra"]["multi_label"], m["splits"]["train"]["class_counts"]) == (
        ["a", "b", "c", "d"], True, [2, 1, 1, 2])
    assert "label_encoding" not in m["extra"]  # indices, not names
    assert fastdata.sample_labels(tmp_path / "s").tolist() == [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 0, 0],
                                                               [1, 0, 1, 1]]


def test_an_adopted_sample_whose_list_is_no_list_of_classes_is_rejected_and_the_rest_kept(tmp_path):
    from converters.adopt import AdoptOptions, adopt

    _tagged_shards(tmp_path / "s", [["haze"], "haze", ["haze", "haze"], [1.5], ["clear"]])
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1, multi_label=True, label_field="tags")).manifest
    assert {r["source"]: r["reason"] for r in m.rejected} == {
        "train-000000.tar:s00001": "its json member's 'tags' is \"haze\", not a list of classes (class indices or "
                                   "class names) (read for its labels)",
        "train-000000.tar:s00002": "its json member's 'tags' names a class twice: [\"haze\", \"haze\"] (read for its "
                                   "labels)",
        "train-000000.tar:s00003": "its json member's 'tags' is [1.5], not a list of classes (class indices or class "
                                   "names) (read for its labels)"}
    assert m.classes == ("clear", "haze") and sum(sh.samples for sh in m.splits["train"].shards) == 2


@pytest.mark.parametrize(("labels", "problem"), [
    (["fog"], "holds \"fog\", not a class name the manifest lists"),
    (["haze", "haze "], "names a class twice: [\"haze\", \"haze \"]"),  # two texts, one class once stripped
    (["\ud800"], "holds \"\\ud800\", not a class name the manifest lists"),  # a lone surrogate: no crash
])
def test_a_forged_list_of_an_adopted_dataset_of_names_is_refused(tmp_path, labels, problem):
    from converters.adopt import AdoptOptions, adopt

    _tagged_shards(tmp_path / "s", TAGS)
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1, multi_label=True, label_field="tags"))
    shard = sorted((tmp_path / "s").glob("*.tar"))[0]
    data = bytearray(shard.read_bytes())
    with tarfile.open(shard) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".json"))
    old = json.loads(data[member.offset_data:member.offset_data + member.size])
    new = json.dumps({**old, "tags": labels}, separators=(",", ":")).encode()
    data[member.offset_data:member.offset_data + member.size] = new[:-1] + b" " * (member.size - len(new)) + b"}"
    shard.write_bytes(bytes(data))
    key = member.name.split(".")[0]
    assert any(f"sample {key} has no class labels: its json member's 'tags' {problem}" in p
               for p in verify_dataset(tmp_path / "s")), verify_dataset(tmp_path / "s")
    with pytest.raises(ShardError, match=f"sample {key} in .* has no class labels"):
        list(loader(tmp_path / "s", train=False))


def test_an_adopted_sample_without_a_json_member_is_rejected_among_listed_ones(tmp_path):
    from conftest_adopt import photo_bytes, raw_tar

    from converters.adopt import AdoptOptions, adopt

    (stem, jpg), = photo_bytes(1)
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.json", b'{"labels": [1]}'), ("b.jpg", jpg),
                                       ("c.jpg", jpg), ("c.json", b'{"labels": []}')])
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1, multi_label=True)).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("a.tar:b", "no label member while the rest of the dataset is labeled")]
    assert fastdata.sample_labels(tmp_path / "s").tolist() == [[0, 1], [0, 0]]


def test_an_adopted_class_that_is_no_index_among_indices_is_rejected(tmp_path):
    from converters.adopt import AdoptOptions, adopt

    _tagged_shards(tmp_path / "s", [[0], [1, "x"], [1]], field="labels")
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1, multi_label=True)).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("train-000000.tar:s00001", "label b'x' is not an integer (index with --label-names if the labels are class "
                                    "names)")]
    assert m.classes == ("0", "1")


def test_index_without_a_list_of_classes_is_refused_and_a_saved_scan_is_not_reused_across_the_option(tmp_path):
    from converters.adopt import AdoptOptions, adopt

    _tagged_shards(tmp_path / "s", TAGS[:4], field="labels")
    with pytest.raises(ConvertError, match="--label-field labels: no sample's json member holds a label"):
        adopt(tmp_path / "s", options=AdoptOptions(jobs=1, label_field="labels"))  # scans saved, one class each
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1, multi_label=True, label_field="labels")).manifest
    # (rescanned for lists: a scan saved without the option holds no list)
    assert m.multi_label and m.classes == ("clear", "cloudy", "haze", "primary", "water")
    with pytest.raises(ConvertError, match=r"--label-field file: no sample's json member holds a label in that field "
                                           r"\(its json member's 'file' is .*, not a list of classes"):
        adopt(tmp_path / "s", tmp_path / "other", options=AdoptOptions(jobs=1, multi_label=True, label_field="file"))
    _tagged_shards(tmp_path / "t", TAGS[:2])  # lists in a field of another name, and none named
    with pytest.raises(ConvertError, match=r"--multi-label: no sample's json member lists its classes \(its json "
                                           r"member has none of the fields labels, label"):
        adopt(tmp_path / "t", options=AdoptOptions(jobs=1, multi_label=True))


def test_a_split_column_class_names_and_split_lists_work_with_the_option(tmp_path):
    from helpers import make_image

    src = tmp_path / "src"
    for i in range(4):
        make_image(src / f"img{i}.jpg", seed=i)
    (tmp_path / "labels.csv").write_text("file,labels,split\nimg0.jpg,0|2,train\nimg1.jpg,1,val\nimg2.jpg,2|1,train\n"
                                         "img3.jpg,0,train\n")
    (tmp_path / "classes.txt").write_text("cat\ndog\nbird\n")
    (tmp_path / "test.txt").write_text("img3.jpg\n")
    result = convert_images(src, tmp_path / "out", labels=str(tmp_path / "labels.csv"), multi_label=True,
                            classes=str(tmp_path / "classes.txt"))
    assert result.manifest.classes == ("cat", "dog", "bird")

    def split_labels(out: Path) -> dict[str, dict[str, list[int]]]:
        return {split: {json.loads(m["json"])["source"]: json.loads(m["json"])["labels"]
                        for k, m in _members(out).items() if k.startswith(split)} for split in ("train", "val", "test")}

    assert split_labels(tmp_path / "out") == {"train": {"img0.jpg": [0, 2], "img2.jpg": [1, 2], "img3.jpg": [0]},
                                              "val": {"img1.jpg": [1]}, "test": {}}
    (tmp_path / "plain.csv").write_text("".join(line.rsplit(",", 1)[0] + "\n" for line in
                                                (tmp_path / "labels.csv").read_text().splitlines()))
    convert_images(src, tmp_path / "listed", labels=str(tmp_path / "plain.csv"), multi_label=True,
                   split_lists=(f"test={tmp_path / 'test.txt'}",))
    assert split_labels(tmp_path / "listed") == {"train": {"img0.jpg": [0, 2], "img1.jpg": [1], "img2.jpg": [1, 2]},
                                                 "val": {}, "test": {"img3.jpg": [0]}}
