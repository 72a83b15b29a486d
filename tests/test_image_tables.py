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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import PHOTOS, convert_images, with_features
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
    d = discover_images(src)
    assert all(it.split == split for split, items in d.splits.items() for it in items) and set(d.splits) == {
        "train", "val"}
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
    d = discover_images(src)
    assert d.identity == [["train", "train.parquet", None, (src / "train.parquet").stat().st_size, 2]]
    result = convert_images(src, tmp_path / "out")
    assert {r["split"] for r in result.rejected} == {"train"}
    assert _reasons(result) == {
        "train.parquet#1": "image stored as a path only, not its bytes; save the dataset with its images embedded "
                           "(`push_to_hub`, `save_to_disk`, or `embed_table_storage` before `to_parquet`): "
                           "'/home/me/cats/b.jpg'",
        "train.parquet#2": "no label (-1 in ClassLabel column 'label': the split has no labels)",
        "train.parquet#3": "label is no class of column 'label' (3 classes): 3",
        "train.parquet#4": "no label (null in column 'label')",
        "train.parquet#6": "label is no class of column 'label' (3 classes): -2",
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
    _write(src / "train.parquet", with_features(table, features))
    d = discover_images(src)
    assert not d.splits and [r.reason for r in d.rejected] == [
        "several ClassLabel columns (fine_label, coarse_label): choose one with --label-field"]
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
    with pytest.raises(ConvertError, match="holds control characters .*: not a name to print$"):
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
    assert (damage.split, damage.source) == ("train", "train.parquet#4") and damage.reason.startswith(
        "corrupt Parquet data, rows 4 to 7 of the file not read: ")
    at = data.index(bytes([1]) * 40)  # row 1, in the first row group (read as one batch): the second group is kept
    path.write_bytes(data[:at - 6] + b"\xff\xff\xff\x7f" + data[at - 2:])
    d = discover_images(src)
    assert sorted(it.rel for it in d.splits["train"]) == [f"train.parquet#{i}" for i in (4, 5, 6, 7)]
    assert [r.source for r in d.rejected] == ["train.parquet#0"] and d.identity[0][-1] == 4

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
    assert "2 classes have no images: 'dog', 'bird'\n" in caplog.text  # ten or fewer: all named, no "and more"


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
    table = with_features(pa.table({"image": image}), {"image": {"_type": "Image"}})
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
        (f"train{suffix}#1", f"image larger than --max-pixels lets any be ({8 * 1000 + (1 << 20)} bytes: 8 a pixel, "
                             f"and 1 MiB): {len(big)} bytes")]


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
    _write(tmp_path / "train.parquet", with_features(table, {"image": {"_type": "Image"}, "label": feature}))
    d = discover_images(tmp_path)
    assert not d.splits and [r.reason for r in d.rejected] == [why]


def test_an_image_feature_on_a_column_without_bytes_is_not_the_image_column(tmp_path: Path) -> None:
    """The metadata calls a column of paths `Image`: the struct column of bytes beside it is the image column."""
    table = _table(PHOTO_FILES[:2], [0, 1]).rename_columns(["img", "label"])
    table = table.append_column("image", pa.array(["a.jpg", "b.jpg"]))
    _write(tmp_path / "train.parquet", with_features(table, _features()))
    d = discover_images(tmp_path)
    assert not d.rejected and sorted(it.label for it in d.splits["train"]) == [0, 1]
    assert d.splits["train"][0].payload.read_bytes() in {p.read_bytes() for p in PHOTO_FILES[:2]}


def test_table_rows_come_in_batches_of_the_columns_asked_for(tmp_path: Path) -> None:
    """`Table.rows`: each batch holds `batch_rows` rows of the columns asked for, numbered from the file's first row
    across row groups (Parquet) and record batches (Arrow stream and Arrow IPC file); `keep_dictionary` reads a
    Parquet column as its dictionary."""
    from converters.table_files import Table

    table = _table(PHOTO_FILES[:7], [0, 1, 2, 0, 1, 2, 0])
    arrow_file = tmp_path / "t.arrow"
    with pa.OSFile(str(arrow_file), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=4)
    for path in (_write(tmp_path / "t.parquet", table), _write(tmp_path / "s" / "t.arrow", table), arrow_file):
        got = list(Table(path).rows(["label"], batch_rows=2, values=lambda b: [b.schema.names, b.num_rows]))
        firsts = [first for first, _ in got]
        assert all(names == ["label"] for _, (names, _) in got), path
        assert sum(n for _, (_, n) in got) == 7, path
        # row groups of 4 (Parquet) and record batches of 3 (stream) or 4 (file), cut in batches of 2
        assert firsts == ([0, 2, 3, 5, 6] if path.parent.name == "s" else [0, 2, 4, 6]), (path, firsts)
    parquet = Table(tmp_path / "t.parquet")
    parquet.keep_dictionary("image.bytes")
    (_, kinds), *_ = parquet.rows(["image"], values=lambda b: [str(b.column(0).type)])
    assert kinds == ["struct<bytes: dictionary<values=binary, indices=int32, ordered=0>, path: string>"]


def test_an_arrow_ipc_file_is_read_and_garbage_is_said_to_be_no_arrow(tmp_path: Path) -> None:
    table = _table(PHOTO_FILES[:2], [0, 1])
    with pa.OSFile(str(tmp_path / "train.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    d = discover_images(tmp_path)
    assert sorted(it.label for it in d.splits["train"]) == [0, 1] and not d.rejected
    (tmp_path / "train.arrow").write_bytes(b"ARROW1 but nothing else")
    d = discover_images(tmp_path)
    assert [(r.split, r.source, r.reason[:31]) for r in d.rejected] == [
        ("train", "train.arrow", "not a readable Arrow file: Not ")]


def test_an_arrow_string_that_is_not_utf8_is_found_by_the_batch_check(tmp_path: Path) -> None:
    """The batch is validated in full before a value is read: a label that is not UTF-8 is damage named by
    pyarrow's check, not a UnicodeDecodeError of the first value read."""
    labels = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 1, 2], np.int32).tobytes()),
                                                    pa.py_buffer(b"a\xff")])
    table = _table(PHOTO_FILES[:2], None, features={}).append_column("label", labels)
    _write(tmp_path / "train.arrow", table)
    (damage,) = discover_images(tmp_path).rejected
    assert damage.source == "train.arrow#0" and damage.reason.startswith(
        "corrupt Arrow data, the rows from 0 on not read: ArrowInvalid: ") and "UTF8" in damage.reason


def test_the_image_feature_picks_one_of_two_image_structs(tmp_path: Path) -> None:
    """A segmentation table: `image` and `mask` are both structs of bytes; the features say `image` is the Image
    (and when they say both are, `--image-field` must pick)."""
    table = _table(PHOTO_FILES[:2], [0, 1])
    table = table.append_column("mask", table.column("image"))
    _write(tmp_path / "a" / "train.parquet", table)
    d = discover_images(tmp_path / "a")
    assert not d.rejected and d.splits["train"][0].payload.read_bytes() in {p.read_bytes() for p in PHOTO_FILES}
    both = {**_features(), "mask": {"_type": "Image"}}
    _write(tmp_path / "b" / "train.parquet", with_features(table, both))
    assert [r.reason for r in discover_images(tmp_path / "b").rejected] == [
        "several image columns (image, mask): name the one to convert with --image-field"]
    assert len(discover_images(tmp_path / "b", image_field="mask").splits["train"]) == 2
    _write(tmp_path / "c" / "train.parquet", table.drop_columns(["label"]))
    assert [r.reason for r in discover_images(tmp_path / "c", label_field="nope").rejected] == [
        "no column 'nope' (--label-field; columns: image, mask)"]
    _write(tmp_path / "d" / "train.parquet", pa.table({"image": pa.array(["a.jpg"])}))
    assert [r.reason for r in discover_images(tmp_path / "d", image_field="image").rejected] == [
        "column 'image' has type string, not image bytes (a binary column, or a struct of bytes and path)"]


def test_a_struct_with_its_path_first_still_names_the_path(tmp_path: Path) -> None:
    image = pa.array([{"path": "/data/cat.jpg", "bytes": None}], pa.struct([("path", pa.string()),
                                                                            ("bytes", pa.binary())]))
    _write(tmp_path / "train.parquet", pa.table({"image": image}))
    (rejected,) = discover_images(tmp_path).rejected
    assert rejected.reason.startswith("image stored as a path only") and rejected.reason.endswith(": '/data/cat.jpg'")


def test_an_image_of_exactly_the_limit_is_taken(tmp_path: Path) -> None:
    limit = 8 * 1000 + (1 << 20)
    for suffix in (".parquet", ".arrow"):
        _write(tmp_path / suffix / f"train{suffix}", _table([b"\xff\xd8" + bytes(limit - 2)], [0]))
        d = discover_images(tmp_path / suffix, max_pixels=1000)
        assert len(d.splits["train"]) == 1 and not d.rejected, suffix


def test_dictionary_encoded_labels_and_a_split_of_the_source(tmp_path: Path) -> None:
    """pandas' categoricals are dictionary-encoded strings; a table without a split name takes `--split`."""
    table = _table(PHOTO_FILES[:3], None, features={}).append_column(
        "label", pa.array(["dog", "cat", "dog"]).dictionary_encode())
    _write(tmp_path / "part-0.parquet", table)
    d = discover_images(tmp_path, split="val")
    assert d.classes == ("cat", "dog") and sorted(it.label for it in d.splits["val"]) == [0, 1, 1]
    assert d.identity == [["val", "part-0.parquet", None, (tmp_path / "part-0.parquet").stat().st_size, 3]]


def test_detection_reads_past_an_unreadable_table_and_only_the_first_files(tmp_path: Path) -> None:
    from converters.images.tables import table_files

    (tmp_path / "a.parquet").write_bytes(b"PAR1 broken")
    _write(tmp_path / "b.parquet", _table(PHOTO_FILES[:1], [0]))
    assert has_image_tables(tmp_path, limit=10)
    (tmp_path / "c.jpg").write_bytes(PHOTO_FILES[0].read_bytes())
    assert table_files(tmp_path, limit=2) == [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    assert table_files(tmp_path, limit=3) == []  # an image file among them: a folder of images


def test_a_table_with_labels_after_one_without_and_files_that_are_no_tables(tmp_path: Path) -> None:
    _write(tmp_path / "train-0.parquet", _table(PHOTO_FILES[:1], None))
    _write(tmp_path / "train-1.parquet", _table(PHOTO_FILES[1:2], [0]))
    (tmp_path / "notes.txt").write_text("mine")
    d = discover_images(tmp_path)
    assert d.classes == () and [it.label for it in d.splits["train"]] == [None]
    assert sorted((r.split, r.source, r.reason) for r in d.rejected) == [
        ("train", "notes.txt", "not a Parquet or Arrow table (this source is read as tables of images)"),
        ("train", "train-1.parquet", "its labels are not those of train-0.parquet (no label column): convert them "
                                     "apart")]


def test_links_are_followed_or_rejected_as_asked(tmp_path: Path) -> None:
    from converters.walk import NOT_FOLLOWED

    _write(tmp_path / "real" / "train.parquet", _table(PHOTO_FILES[:1], [0]))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.parquet").symlink_to(tmp_path / "real" / "train.parquet")
    assert len(discover_images(tmp_path / "src").splits["train"]) == 1
    d = discover_images(tmp_path / "src", follow_symlinks=False)
    assert not d.splits and [(r.split, r.source, r.reason) for r in d.rejected] == [
        ("train", "train.parquet", NOT_FOLLOWED)]


def test_a_struct_of_bytes_alone_and_detection_within_its_first_files(tmp_path: Path) -> None:
    image = pa.array([{"bytes": None}, {"bytes": PHOTO_FILES[0].read_bytes()}], pa.struct([("bytes", pa.binary())]))
    _write(tmp_path / "train.parquet", pa.table({"image": image}))
    d = discover_images(tmp_path)
    assert len(d.splits["train"]) == 1 and [r.reason.split(",")[0] for r in d.rejected] == ["no image (null)"]
    (tmp_path / "README.md").write_text("# card")  # first in name order
    assert has_image_tables(tmp_path, limit=2) and not has_image_tables(tmp_path, limit=1)


def test_images_are_read_eight_rows_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At most BATCH_ROWS images are in memory at once, whatever the row groups hold (20 rows in one here)."""
    import converters.image_text.tables as pair_tables
    import converters.images.tables as image_tables
    from converters.image_text.tables import discover_caption_tables

    seen: list[int] = []
    for module in (image_tables, pair_tables):
        real = module.row_values
        monkeypatch.setattr(module, "row_values", lambda batch, real=real, **kw: seen.append(batch.num_rows) or
                            real(batch, **kw))
    table = _table([PHOTO_FILES[0]] * 20, [0] * 20).append_column("caption", pa.array(["a cat"] * 20))
    (tmp_path / "src").mkdir()
    pq.write_table(table, tmp_path / "src" / "train.parquet")
    assert len(discover_images(tmp_path / "src").splits["train"]) == 20 and seen == [8, 8, 4]
    d = discover_caption_tables(tmp_path / "src", image_field=None, caption_field=None, split="train",
                                max_bytes=1 << 30)
    assert len(d.splits["train"]) == 20 and seen == [8, 8, 4] * 2


def test_classes_without_images_are_one_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Label ids without a ClassLabel make the classes 0 to the largest id: ids 0 and 30 leave 29 classes without an
    image, said in one warning, not 29."""
    _write(tmp_path / "train.parquet", _table(PHOTO_FILES[:2], [0, 30], features={}))
    with caplog.at_level(logging.WARNING):
        d = discover_images(tmp_path)
    assert len(d.classes) == 31
    assert [r.getMessage() for r in caplog.records] == [
        "29 classes have no images: '1', '2', '3', '4', '5', '6', '7', '8', '9', '10' and 19 more"]
    caplog.clear()
    _write(tmp_path / "train.parquet", _table(PHOTO_FILES[:2], [0, 12], features={}))
    with caplog.at_level(logging.WARNING):
        discover_images(tmp_path)
    assert [r.getMessage() for r in caplog.records] == [
        "11 classes have no images: '1', '2', '3', '4', '5', '6', '7', '8', '9', '10' and 1 more"]
    caplog.clear()
    _write(tmp_path / "train.parquet", _table(PHOTO_FILES[:2], [0, 11], features={}))
    with caplog.at_level(logging.WARNING):
        discover_images(tmp_path)
    assert [r.getMessage() for r in caplog.records] == [  # ten: every one named, nothing more
        "10 classes have no images: '1', '2', '3', '4', '5', '6', '7', '8', '9', '10'"]
