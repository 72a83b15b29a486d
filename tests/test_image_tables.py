"""Image datasets as Hugging Face ships them: Parquet tables from the Hub (`data/train-00000-of-00001.parquet`) and
Arrow tables written by `save_to_disk` (`train/data-00000-of-00001.arrow`), converted by converters/images/tables.py.

The tables are written here with pyarrow in the layout `datasets` 5.2.0 writes (checked against its `to_parquet`,
`embed_table_storage` and `save_to_disk`): an `image` column `struct<bytes: binary, path: string>`, an int64 `label`
column, and the schema metadata `huggingface` = {"info": {"features": {"image": {"_type": "Image"}, "label":
{"names": [...], "_type": "ClassLabel"}}}}. The images are the real photos of tests/data."""

from __future__ import annotations

import io
import json
import logging
import tarfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import PHOTOS, convert_images
from PIL import Image

from converters.images.discover import discover_images
from converters.images.table_columns import split_of_table
from converters.images.tables import has_image_tables
from fastdata.errors import ConvertError

NAMES = ["cat", "dog", "bird"]
PHOTO_FILES = sorted(PHOTOS.glob("*.jpg"))


def _features(names=NAMES, image="image", label="label") -> dict:
    features = {image: {"_type": "Image"}}
    if names is not None:
        features[label] = {"names": list(names), "_type": "ClassLabel"}
    return features


def _table(photos: list[Path | bytes | None], labels: list | None, *, features: dict | None = None,
           paths: list[str | None] | None = None) -> pa.Table:
    """A table of `photos` (files, raw bytes, or None: a row without bytes) and `labels`, with Hugging Face
    features in its metadata (`features`; {}: no metadata)."""
    data = [p.read_bytes() if isinstance(p, Path) else p for p in photos]
    names = paths or [p.name if isinstance(p, Path) else None for p in photos]
    image = pa.array([{"bytes": d, "path": n} for d, n in zip(data, names, strict=True)],
                     type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    columns = {"image": image} if labels is None else {"image": image, "label": pa.array(labels, type=pa.int64())}
    features = _features() if features is None else features
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()} if features else None
    return pa.table(columns).replace_schema_metadata(meta)


def _write(path: Path, table: pa.Table) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        pq.write_table(table, path, row_group_size=4)
    else:  # what save_to_disk writes: an Arrow IPC stream
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=3)
    return path


def _samples(dst: Path, split: str) -> dict[str, tuple[int | None, bytes, dict]]:
    """source row -> (label, jpg bytes, json) of the shards of `split`."""
    out: dict[str, tuple[int | None, bytes, dict]] = {}
    for shard in sorted(dst.glob(f"{split}-*.tar")):
        with tarfile.open(shard) as tar:
            members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
        for name, data in members.items():
            if name.endswith(".json"):
                key = name[:-5]
                info = json.loads(data)
                cls = members.get(f"{key}.cls")
                out[info["source"]] = (int(cls) if cls else None, members[f"{key}.jpg"], info)
    return out


def _reasons(result) -> dict[str, str]:
    return {r["source"]: r["reason"] for r in result.rejected}


@pytest.fixture
def hub(tmp_path: Path) -> Path:
    """A dataset as `huggingface-cli download` leaves it: a card and Parquet shards named by split."""
    src = tmp_path / "hub"
    _write(src / "data" / "train-00000-of-00002.parquet", _table(PHOTO_FILES[:6], [0, 1, 2, 0, 1, 2]))
    _write(src / "data" / "train-00001-of-00002.parquet", _table(PHOTO_FILES[6:9], [2, 2, 1]))
    _write(src / "data" / "validation-00000-of-00001.parquet", _table(PHOTO_FILES[9:12], [1, 0, 0]))
    (src / "README.md").write_text("---\nlicense: cc-by-4.0\n---\n# a dataset card\n")
    return src


def test_hub_parquet_shards_become_splits_with_the_classlabel_names(hub: Path, tmp_path: Path) -> None:
    result = convert_images(hub, tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == NAMES
    assert {s: v["samples"] for s, v in manifest["splits"].items()} == {"train": 9, "val": 3}
    train, val = _samples(tmp_path / "out", "train"), _samples(tmp_path / "out", "val")
    want = {"data/train-00000-of-00002.parquet#3": 0, "data/train-00001-of-00002.parquet#0": 2,
            "data/train-00001-of-00002.parquet#2": 1}
    assert {k: train[k][0] for k in want} == want
    assert sorted(v[0] for v in val.values()) == [0, 0, 1]
    source = Image.open(PHOTO_FILES[7])
    label, jpg, info = train["data/train-00001-of-00002.parquet#1"]
    assert label == 2 and (info["orig_width"], info["orig_height"]) == source.size
    assert min(Image.open(io.BytesIO(jpg)).size) == min(256, *source.size)
    assert _reasons(result) == {"README.md": "not a Parquet or Arrow table (this source is read as tables of "
                                             "images): Hugging Face metadata, not data"}


def test_save_to_disk_arrow_folders_are_splits(tmp_path: Path) -> None:
    src = tmp_path / "saved"
    _write(src / "train" / "data-00000-of-00001.arrow", _table(PHOTO_FILES[:7], [0, 1, 2, 0, 1, 2, 0]))
    _write(src / "validation" / "data-00000-of-00001.arrow", _table(PHOTO_FILES[7:9], [2, 1]))
    for split in ("train", "validation"):
        (src / split / "state.json").write_text("{}")
    (src / "dataset_dict.json").write_text('{"splits": ["train", "validation"]}')
    result = convert_images(src, tmp_path / "out")
    train, val = _samples(tmp_path / "out", "train"), _samples(tmp_path / "out", "val")
    assert len(train) == 7 and {k: v[0] for k, v in val.items()} == {
        "validation/data-00000-of-00001.arrow#0": 2, "validation/data-00000-of-00001.arrow#1": 1}
    assert train["train/data-00000-of-00001.arrow#5"][0] == 2  # past the first record batch of 3 rows
    assert sorted(_reasons(result)) == ["dataset_dict.json", "train/state.json", "validation/state.json"]


def test_the_split_is_the_file_names_first_word_or_the_folder_above() -> None:
    assert split_of_table("data/train-00000-of-00004.parquet", "train") == "train"
    assert split_of_table("data/validation-00000-of-00001-5a1b.parquet", "train") == "val"
    assert split_of_table("test.parquet", "train") == "test"
    assert split_of_table("default/Validation/0000.parquet", "train") == "val"  # the parquet converter's layout
    assert split_of_table("valid/part/data-00000-of-00001.arrow", "train") == "val"
    assert split_of_table("train/validation/0000.parquet", "x") == "val"  # the nearest split folder
    assert split_of_table("data/shard-0.parquet", "extra") == "extra"
    assert split_of_table("trainee-0.parquet", "x") == "x"


def test_rows_without_an_image_or_a_label_are_recorded_rejections(tmp_path: Path) -> None:
    src = tmp_path / "src"
    photo = PHOTO_FILES[0]
    _write(src / "train.parquet", _table([photo, None, photo, photo, photo, photo, b"not an image"],
                                         [0, 1, -1, 3, None, 2, -2],
                                         paths=["a.jpg", "/home/me/cats/b.jpg", "c", "d", "e", "f", "g"]))
    result = convert_images(src, tmp_path / "out")
    assert _reasons(result) == {
        "train.parquet#1": "stored as a path only ('/home/me/cats/b.jpg'), not its bytes: save the dataset with its "
                           "images embedded (`push_to_hub`, `save_to_disk`, or `embed_table_storage` before "
                           "`to_parquet`)",
        "train.parquet#2": "no label (-1 in ClassLabel column 'label': the split has no labels)",
        "train.parquet#3": "label 3 is no class of column 'label' (3 classes)",
        "train.parquet#4": "no label (null in column 'label')",
        "train.parquet#6": "label -2 is no class of column 'label' (3 classes)",
    }
    assert {k: v[0] for k, v in _samples(tmp_path / "out", "train").items()} == {
        "train.parquet#0": 0, "train.parquet#5": 2}
    _write(src / "train.parquet", _table([photo, b"not an image"], [0, 1]))
    result = convert_images(src, tmp_path / "out2")
    assert _reasons(result) == {"train.parquet#1": "not an image (no known image format signature)"}


def test_an_image_that_is_null_says_so_whatever_its_fields_hold(tmp_path: Path) -> None:
    """A null image struct whose `bytes` field still holds bytes (an Arrow file can hold that; what a null struct's
    children hold is not data): no image, as a null struct and a null `bytes` are."""
    data = pa.array([p.read_bytes() for p in PHOTO_FILES[:3]], type=pa.binary())
    image = pa.StructArray.from_arrays([data, pa.array(["a.jpg", "b.jpg", "c.jpg"])], names=["bytes", "path"],
                                       mask=pa.array([False, True, False]))
    src = _write(tmp_path / "arrow" / "train.arrow", _table(PHOTO_FILES[:3], [0, 1, 2]).set_column(0, "image", image))
    d = discover_images(src.parent)
    assert [it.rel for it in d.splits["train"]] == ["train.arrow#0", "train.arrow#2"]
    assert [(r.source, r.reason.split(",")[0]) for r in d.rejected] == [("train.arrow#1", "no image (null)")]
    nulls = pa.array([{"bytes": data[0].as_py(), "path": "a.jpg"}, None, {"bytes": None, "path": None}],
                     type=image.type)
    table = _table(PHOTO_FILES[:3], [0, 1, 2]).set_column(0, "image", nulls)
    src = _write(tmp_path / "parquet" / "train.parquet", table)
    d = discover_images(src.parent)
    assert [r.reason.split(",")[0] for r in d.rejected] == ["no image (null)", "no image (null)"]


def test_labels_without_a_classlabel_keep_their_ids_or_sort_their_names(tmp_path: Path) -> None:
    """No ClassLabel in the metadata: a whole-number `label` column's ids stay the labels they are (classes "0" to
    the largest), a string column's names are sorted, as for a labels CSV."""
    ids = tmp_path / "ids"
    _write(ids / "train.parquet", _table(PHOTO_FILES[:3], [4, 0, 4], features={}))
    d = discover_images(ids)
    assert d.classes == ("0", "1", "2", "3", "4")
    assert sorted((it.rel, it.label) for it in d.splits["train"]) == [
        ("train.parquet#0", 4), ("train.parquet#1", 0), ("train.parquet#2", 4)]
    names = tmp_path / "names"
    table = _table(PHOTO_FILES[:3], None, features={}).append_column("labels", pa.array(["zebra", "ant", "zebra"]))
    _write(names / "train.parquet", table)
    d = discover_images(names)
    assert d.classes == ("ant", "zebra")
    assert sorted((it.rel, it.label) for it in d.splits["train"]) == [
        ("train.parquet#0", 1), ("train.parquet#1", 0), ("train.parquet#2", 1)]


def test_two_classlabel_columns_need_label_field(tmp_path: Path) -> None:
    """CIFAR-100's `fine_label` and `coarse_label`: which one would be meant?"""
    src = tmp_path / "src"
    features = {"img": {"_type": "Image"}, "fine_label": {"names": ["a", "b", "c"], "_type": "ClassLabel"},
                "coarse_label": {"names": ["x", "y"], "_type": "ClassLabel"}}
    table = _table(PHOTO_FILES[:2], None, features={}).rename_columns(["img"])
    table = table.append_column("fine_label", pa.array([2, 0])).append_column("coarse_label", pa.array([1, 1]))
    _write(src / "train.parquet", table.replace_schema_metadata(
        {b"huggingface": json.dumps({"info": {"features": features}}).encode()}))
    d = discover_images(src)
    assert not d.splits and [r.reason for r in d.rejected] == [
        "several ClassLabel columns (fine_label, coarse_label): choose one with --label-field, or --unlabeled"]
    d = discover_images(src, label_field="coarse_label")
    assert d.classes == ("x", "y") and sorted(it.label for it in d.splits["train"]) == [1, 1]
    d = discover_images(src, unlabeled=True)
    assert d.classes == () and [it.label for it in d.splits["train"]] == [None, None]
    with pytest.raises(ConvertError, match="no images input.*several ClassLabel columns"):
        convert_images(src, tmp_path / "out")


def test_image_field_names_the_column_and_a_plain_binary_one(tmp_path: Path) -> None:
    src = tmp_path / "src"
    table = pa.table({"jpg": pa.array([p.read_bytes() for p in PHOTO_FILES[:2]], type=pa.large_binary()),
                      "thumb": pa.array([b"x", b"y"]), "label": pa.array(["b", "a"])})
    _write(src / "train.parquet", table)
    assert not has_image_tables(src, limit=10)  # no struct column, no Image feature: not known for images
    d = discover_images(src, image_field="jpg")
    assert d.layout == "tables" and sorted((it.rel, it.label) for it in d.splits["train"]) == [
        ("train.parquet#0", 1), ("train.parquet#1", 0)]
    assert d.splits["train"][0].payload.read_bytes() in {p.read_bytes() for p in PHOTO_FILES[:2]}
    d = discover_images(src, image_field="nothing")
    assert not d.splits and [r.reason for r in d.rejected] == [
        "no column 'nothing' (--image-field; columns: jpg, thumb, label)"]
    d = discover_images(src, image_field="thumb", label_field="jpg")
    assert [r.reason for r in d.rejected] == ["label column 'jpg' has type large_binary, not whole numbers or strings"]
    with pytest.raises(ValueError, match="--image-field and --label-field"):
        discover_images(PHOTOS, label_field="label")


def test_a_table_whose_labels_differ_from_the_first_is_rejected(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src / "train-0.parquet", _table(PHOTO_FILES[:2], [0, 1]))
    _write(src / "train-1.parquet", _table(PHOTO_FILES[2:4], [0, 1], features=_features(names=["x", "y"])))
    _write(src / "train-2.parquet", _table(PHOTO_FILES[4:6], None))
    d = discover_images(src)
    assert d.classes == tuple(NAMES) and len(d.splits["train"]) == 2
    why = "its labels are not those of train-0.parquet (label column 'label' with 3 classes): convert them apart"
    assert sorted((r.source, r.reason) for r in d.rejected) == [("train-1.parquet", why), ("train-2.parquet", why)]
    plain = tmp_path / "plain"  # no ClassLabel: a label column of ids, then a table without one
    _write(plain / "train-0.parquet", _table(PHOTO_FILES[:2], [0, 1], features={}))
    _write(plain / "train-1.parquet", _table(PHOTO_FILES[2:4], None, features={}))
    d = discover_images(plain)
    assert d.classes == ("0", "1") and [r.reason for r in d.rejected] == [
        "its labels are not those of train-0.parquet (label column 'label'): convert them apart"]


def test_class_names_with_control_characters_are_refused(tmp_path: Path) -> None:
    _write(tmp_path / "src" / "train.parquet", _table(PHOTO_FILES[:1], [0], features=_features(names=["a\x1b[2J"])))
    with pytest.raises(ConvertError, match="holds control characters"):
        discover_images(tmp_path / "src")


def test_damaged_tables_keep_the_rows_before_the_damage(tmp_path: Path) -> None:
    """A Parquet row group damaged in its image bytes loses its own rows; an Arrow stream whose offsets were
    forged loses the rows from the damaged batch on (its batch is validated before a value is read)."""
    src = tmp_path / "src"
    photos = [b"\xff\xd8" + bytes([i]) * 40 for i in range(8)]  # bytes to find in the file, not images
    src.mkdir()
    path = src / "train.parquet"
    pq.write_table(_table(photos, [0] * 8, paths=[f"p{i}" for i in range(8)]), path, row_group_size=4,
                   compression="none", use_dictionary=False, write_statistics=False)
    data = path.read_bytes()
    at = data.index(bytes([5]) * 40)
    path.write_bytes(data[:at - 6] + b"\xff\xff\xff\x7f" + data[at - 2:])  # row 5's length, far past its page
    d = discover_images(src)
    assert sorted(it.rel for it in d.splits["train"]) == [f"train.parquet#{i}" for i in range(4)]
    (damage,) = d.rejected
    assert damage.source == "train.parquet#4" and damage.reason.startswith(
        "corrupt Parquet data, rows 4 to 7 of the file not read: ")

    arrow = _write(tmp_path / "arrow" / "train.arrow", _table(photos, [0] * 8, paths=[f"p{i}" for i in range(8)]))
    data = bytearray(arrow.read_bytes())
    at = data.index(bytes([4]) * 40)  # row 4 is in the second batch (3 rows each): forge its offsets' buffer
    offsets = data.rindex((42 * 1).to_bytes(4, "little") + (42 * 2).to_bytes(4, "little"), 0, at)
    data[offsets:offsets + 4] = (10 ** 6).to_bytes(4, "little")
    arrow.write_bytes(bytes(data))
    d = discover_images(arrow.parent)
    assert sorted(it.rel for it in d.splits["train"]) == [f"train.arrow#{i}" for i in range(3)]
    (damage,) = d.rejected
    assert damage.source == "train.arrow#3" and damage.reason.startswith(
        "corrupt Arrow data, the rows from 3 on not read: ")


def test_detection_takes_image_tables_for_images_and_text_tables_for_text(tmp_path: Path) -> None:
    from converters.images import KIND as IMAGES

    _write(tmp_path / "images" / "train.parquet", _table(PHOTO_FILES[:1], [0]))
    (tmp_path / "text").mkdir()
    pq.write_table(pa.table({"text": ["a document"]}), tmp_path / "text" / "train.parquet")
    assert IMAGES.detect(tmp_path / "images") and not IMAGES.detect(tmp_path / "text")
    assert has_image_tables(tmp_path / "images", limit=10)
    mixed = tmp_path / "images"
    (mixed / "extra.jpg").write_bytes(PHOTO_FILES[0].read_bytes())  # an image file: the folder layout wins
    assert not has_image_tables(mixed, limit=10)
    d = discover_images(mixed)
    assert d.layout == "unlabeled" and [it.rel for it in d.splits["train"]] == ["extra.jpg"]
    assert [r.reason[:25] for r in d.rejected] == ["unsupported extension '.p"]
    text = discover_images(tmp_path / "text")  # --kind images on text tables: each table says what it lacks
    assert [r.reason for r in text.rejected] == [
        "no image column (text): name the one to convert with --image-field"]


def test_the_spill_file_is_gone_after_the_conversion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    import tempfile

    spills = tmp_path / "tmp"
    spills.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spills))
    _write(tmp_path / "src" / "train.parquet", _table(PHOTO_FILES[:3], [0, 0, 0]))
    with caplog.at_level(logging.WARNING):
        convert_images(tmp_path / "src", tmp_path / "out")
    assert list(spills.iterdir()) == []
    assert "class 'dog' has no images" in caplog.text


def _discover_in_a_child(src: Path) -> tuple[int, int, list[str], int]:
    """(images found, spill bytes, rejection reasons, MiB the discovery grew a fresh process by: pyarrow decodes
    into its own memory, which only the child's peak RSS shows)."""
    import subprocess
    import sys

    code = f"""
import resource
from pathlib import Path
from converters.images.discover import discover_images
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
d = discover_images(Path({str(src)!r}))
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(sum(map(len, d.splits.values())), d.keep.size, [r.reason for r in d.rejected], grown // 1024, sep="\\n")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parent.parent).stdout.split("\n")
    return int(out[0]), int(out[1]), eval(out[2]), int(out[3])  # noqa: S307 (our own repr of a list of str)


def test_a_value_repeated_in_every_row_is_read_and_spilled_once(tmp_path: Path) -> None:
    """A dictionary bomb: 64 rows of one 16 MiB value, 1 KiB of zstd Parquet whose schema says binary. Read as plain
    values, a batch of 64 rows grew the process by 1.7 GiB and the spill file by 1 GiB; read as the dictionary it is
    stored as, and spilled once, both stay near the one value."""
    value = b"\xff\xd8" + bytes(16 << 20)
    image = pa.StructArray.from_arrays(
        [pa.DictionaryArray.from_arrays(pa.array([0] * 64, pa.int32()), pa.array([value])), pa.array(["x"] * 64)],
        names=["bytes", "path"])
    table = pa.table({"image": image}).replace_schema_metadata(
        {b"huggingface": json.dumps({"info": {"features": {"image": {"_type": "Image"}}}}).encode()})
    (tmp_path / "src").mkdir()
    pq.write_table(table, tmp_path / "src" / "train.parquet", compression="zstd", store_schema=False)  # binary, read
    assert (tmp_path / "src" / "train.parquet").stat().st_size < 8 * 1024
    found, spilled, reasons, grown = _discover_in_a_child(tmp_path / "src")
    assert (found, spilled, reasons) == (64, len(value), [])
    assert grown < 200, f"reading 64 rows of one 16 MiB value grew the process by {grown} MiB"


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_an_image_larger_than_any_the_pixel_limit_allows_is_rejected_unread(tmp_path: Path, suffix: str) -> None:
    src = tmp_path / "src"
    big = b"\xff\xd8" + bytes((1 << 20) + 8000)
    _write(src / f"train{suffix}", _table([PHOTO_FILES[0], big, PHOTO_FILES[1]], [0, 1, 2]))
    d = discover_images(src, max_pixels=1000)
    assert [it.rel for it in d.splits["train"]] == [f"train{suffix}#0", f"train{suffix}#2"]
    assert [(r.source, r.reason) for r in d.rejected] == [
        (f"train{suffix}#1", f"image of {len(big)} bytes, more than {8 * 1000 + (1 << 20)} (8 bytes a pixel of "
                            "--max-pixels, and 1 MiB): not an image this conversion could decode")]


def test_metadata_that_is_not_what_datasets_writes_is_not_read(tmp_path: Path) -> None:
    """Features that are a list, or an `info` that is null: no features (the struct column is still the image
    column, the `label` column still the labels, by its name); a struct field whose name is not UTF-8 makes the
    table unreadable, said so."""
    for i, meta in enumerate([{"info": {"features": ["image"]}}, {"info": None}, "not json"]):
        table = _table(PHOTO_FILES[:2], [1, 0], features={}).replace_schema_metadata(
            {b"huggingface": meta.encode() if isinstance(meta, str) else json.dumps(meta).encode()})
        _write(tmp_path / f"s{i}" / "train.parquet", table)
        d = discover_images(tmp_path / f"s{i}")
        assert d.classes == ("0", "1") and not d.rejected, meta
    path = _write(tmp_path / "bad" / "train.arrow", _table(PHOTO_FILES[:1], [0]))
    path.write_bytes(path.read_bytes().replace(b"bytes", b"by\xffes"))
    (rejected,) = discover_images(path.parent).rejected
    assert rejected.reason.startswith("a column name is not UTF-8")


@pytest.mark.parametrize(("feature", "why"), [
    ({"names": "cat,dog", "_type": "ClassLabel"}, "the ClassLabel of column 'label' has no list of class names"),
    ({"names": [], "_type": "ClassLabel"}, "the ClassLabel of column 'label' has no list of class names"),
    ({"names": ["cat", 2], "_type": "ClassLabel"}, "the ClassLabel of column 'label' has no list of class names"),
    ({"names": ["cat", "dog"], "_type": "ClassLabel", "string": True},
     "ClassLabel column 'label' has type string, not whole numbers"),
])
def test_a_classlabel_that_is_not_one_rejects_its_table(tmp_path: Path, feature: dict, why: str) -> None:
    labels = ["cat", "dog"] if feature.pop("string", False) else [0, 1]
    table = _table(PHOTO_FILES[:2], None, features={}).append_column("label", pa.array(labels))
    _write(tmp_path / "train.parquet", table.replace_schema_metadata({b"huggingface": json.dumps(
        {"info": {"features": {"image": {"_type": "Image"}, "label": feature}}}).encode()}))
    d = discover_images(tmp_path)
    assert not d.splits and [r.reason for r in d.rejected] == [why]


def test_an_image_feature_on_a_column_without_bytes_is_not_the_image_column(tmp_path: Path) -> None:
    """The metadata calls a column of paths `Image`: the struct column of bytes beside it is the image column."""
    table = _table(PHOTO_FILES[:2], [0, 1]).rename_columns(["img", "label"])
    table = table.append_column("image", pa.array(["a.jpg", "b.jpg"]))
    _write(tmp_path / "train.parquet", table.replace_schema_metadata({b"huggingface": json.dumps(
        {"info": {"features": _features()}}).encode()}))
    d = discover_images(tmp_path)
    assert not d.rejected and sorted(it.label for it in d.splits["train"]) == [0, 1]
    assert d.splits["train"][0].payload.read_bytes() in {p.read_bytes() for p in PHOTO_FILES[:2]}
