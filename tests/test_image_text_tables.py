"""Image-caption pairs from Hugging Face tables (converters/image_text/tables.py): Flickr30k as the Hub has it (an
`Image` column, a list of captions, a `split` column), Flickr8k's `caption_0` to `caption_4`, a `text` column; the
columns picked, the splits, the rejections, and the stored members. Tables are written with pyarrow in the layout
`datasets` 5.2.0 writes (tests/test_image_tables.py); the images are the real photos of tests/data."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest_pairs import TOKENIZER, convert_pairs, stored_pairs
from helpers import PHOTOS, with_features

from converters.image_text.tables import caption_columns, discover_caption_tables
from converters.images.table_columns import bytes_limit
from fastdata.errors import ConvertError

PHOTO_FILES = sorted(PHOTOS.glob("*.jpg"))
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _write(path: Path, columns: dict, features: dict | None = None) -> Path:
    """A table of `columns` (the `image` column: files, bytes or None) with Hugging Face features."""
    images = columns.pop("image")
    image = pa.array([None if p is None else {"bytes": p.read_bytes() if isinstance(p, Path) else p,
                                              "path": getattr(p, "name", "x.jpg")} for p in images], IMAGE)
    table = pa.table({"image": image, **columns})
    features = features or {"image": {"_type": "Image"}}
    table = with_features(table, features)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        pq.write_table(table, path, row_group_size=4)
    else:
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=3)
    return path


def _discover(src: Path, **options):
    return discover_caption_tables(src, image_field=options.get("image_field"),
                                   caption_field=options.get("caption_field"), split=options.get("split", "train"),
                                   max_bytes=bytes_limit(89_478_485))


def test_flickr30k_as_the_hub_has_it_keeps_every_caption_in_its_split(tmp_path: Path) -> None:
    src = tmp_path / "flickr30k"
    _write(src / "data" / "test-00000-of-00001.parquet", {
        "image": PHOTO_FILES[:6],
        "caption": pa.array([[f"a photo {i}", f" picture\nnumber {i} ", ""] for i in range(5)] + [[None, " "]],
                            pa.list_(pa.string())),
        "split": ["train", "restval", "val", "test", "holdout", "train"],
        "filename": [p.name for p in PHOTO_FILES[:6]]})
    result = convert_pairs(src, tmp_path / "out", tokenizer=str(TOKENIZER))
    pairs = stored_pairs(tmp_path / "out")
    rel = "data/test-00000-of-00001.parquet"
    assert {k: (v[0], v[1]) for k, v in pairs.items()} == {
        f"{rel}#0": ("train", ["a photo 0", "picture number 0"]),
        f"{rel}#1": ("train", ["a photo 1", "picture number 1"]),  # Karpathy's restval: train
        f"{rel}#2": ("val", ["a photo 2", "picture number 2"]),
        f"{rel}#3": ("test", ["a photo 3", "picture number 3"])}
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        f"{rel}#4": "the split column names no split (train, val, test, "
                    "or an alias of theirs such as training, valid, validation, "
                    "testing): 'holdout'",
        f"{rel}#5": "no caption (every caption empty or null)"}
    ids = np.load(io.BytesIO(pairs[f"{rel}#0"][2]["ids.npy"]))
    assert ids.shape[0] == 2 and ids.dtype == np.int32
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["preprocessing"]["captions"] == "a caption column of the Parquet/Arrow tables"


def test_numbered_caption_columns_are_read_in_their_numbers_order(tmp_path: Path) -> None:
    """Flickr8k on the Hub: `caption_0` to `caption_4`; `caption_10` comes after `caption_2`."""
    columns = {"image": PHOTO_FILES[:2]}
    for n in (10, 0, 2, 1):
        columns[f"caption_{n}"] = [f"caption {n} of {i}" for i in range(2)]
    _write(tmp_path / "train.arrow", columns)
    d = _discover(tmp_path)
    assert [it.payload.texts for it in d.splits["train"]] == [
        tuple(f"caption {n} of {i}" for n in (0, 1, 2, 10)) for i in range(2)]
    assert d.splits["train"][1].payload.image.read_bytes() == PHOTO_FILES[1].read_bytes()


def test_the_caption_column_is_named_or_the_first_known_name() -> None:
    schema = pa.schema([("image", IMAGE), ("text", pa.string()), ("Caption", pa.large_string()),
                        ("id", pa.int64()), ("caption_0", pa.string())])
    assert caption_columns(schema, None) == ["Caption"]  # `caption` before `text`, whatever the case
    assert caption_columns(schema, "text") == ["text"]
    assert caption_columns(pa.schema([("image", IMAGE), ("sentences", pa.list_(pa.string()))]), None) == ["sentences"]
    with pytest.raises(Exception, match="caption column .id. has type int64, not strings or lists of strings$"):
        caption_columns(schema, "id")
    with pytest.raises(Exception, match=r"no column 'nope' \(--caption-field; columns: image, text, Caption, id, "
                                        r"caption_0\)$"):
        caption_columns(schema, "nope")
    with pytest.raises(Exception, match="no caption column \\(columns: image, id\\): name it with --caption-field"):
        caption_columns(pa.schema([("image", IMAGE), ("id", pa.int64())]), None)


def test_rows_and_tables_without_what_a_pair_needs_are_recorded_rejections(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src / "train-0.parquet", {"image": [PHOTO_FILES[0], None, PHOTO_FILES[1]], "text": ["a", "b", "c"]})
    _write(src / "train-1.parquet", {"image": [PHOTO_FILES[2]], "label": [3]})
    (src / "README.md").write_text("# card")
    d = _discover(src, split="val")
    assert [(it.rel, it.payload.texts) for it in d.splits["train"]] == [("train-0.parquet#0", ("a",)),
                                                                         ("train-0.parquet#2", ("c",))]
    assert [r.split for r in sorted(d.rejected, key=lambda r: r.source)] == ["val", "train", "train"]
    assert [row[-1] for row in d.identity] == [2, 0]  # pairs found in each table
    assert sorted((r.source, r.reason) for r in d.rejected) == [
        ("README.md", "not a Parquet or Arrow table (this source is read as tables of images): Hugging Face "
                      "metadata, not data"),
        ("train-0.parquet#1", "no image (null)"),
        ("train-1.parquet", "no caption column (columns: image, label): name it with --caption-field")]


def test_auto_detection_takes_caption_tables_for_pairs_and_label_tables_for_images(tmp_path: Path) -> None:
    from converters.image_text import KIND as PAIRS
    from fastdata.cli.convert import _detect

    _write(tmp_path / "pairs" / "train.parquet", {"image": PHOTO_FILES[:1], "caption": ["a cat"]})
    _write(tmp_path / "labels" / "train.parquet", {"image": PHOTO_FILES[:1], "label": [0]})
    assert PAIRS.detect(tmp_path / "pairs") and not PAIRS.detect(tmp_path / "labels")
    assert _detect(tmp_path / "pairs") == "image_text" and _detect(tmp_path / "labels") == "images"


def test_the_columns_are_named_for_tables_only(tmp_path: Path) -> None:
    _write(tmp_path / "t" / "train.parquet", {"image": PHOTO_FILES[:1], "alt": ["a cat"]})
    with pytest.raises(ConvertError, match="no image_text input.*no caption column"):
        convert_pairs(tmp_path / "t", tmp_path / "out")
    convert_pairs(tmp_path / "t", tmp_path / "out2", caption_field="alt")
    assert [v[1] for v in stored_pairs(tmp_path / "out2").values()] == [["a cat"]]
    with pytest.raises(ValueError, match="--image-field and --caption-field name the columns"):
        convert_pairs(PHOTOS, tmp_path / "out3", caption_field="alt")


def test_a_caption_table_that_repeats_one_large_image_is_read_within_a_bound(tmp_path: Path) -> None:
    """The dictionary bomb of tests/test_image_tables.py (64 rows of one 16 MiB value, 1 KiB of zstd Parquet), with
    captions: discovery in a fresh process grows by far less than the 1 GiB the rows decode to, and spills the
    value once."""
    import subprocess
    import sys

    value = b"\xff\xd8" + bytes(16 << 20)
    image = pa.StructArray.from_arrays(
        [pa.DictionaryArray.from_arrays(pa.array([0] * 64, pa.int32()), pa.array([value])), pa.array(["x"] * 64)],
        names=["bytes", "path"])
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"image": image, "caption": ["a caption"] * 64}), tmp_path / "src" / "train.parquet",
                   compression="zstd", store_schema=False)
    code = f"""
import resource
from pathlib import Path
from converters.image_text.tables import discover_caption_tables
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
d = discover_caption_tables(Path({str(tmp_path / "src")!r}), image_field=None, caption_field=None, split="train",
                            max_bytes=1 << 30)
print(len(d.splits["train"]), d.keep.size, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parent.parent).stdout.split()
    found, spilled, grown = map(int, out)
    assert (found, spilled) == (64, len(value))
    assert grown < 200, f"reading 64 rows of one 16 MiB value grew the process by {grown} MiB"


def test_the_source_and_its_tables_say_where_each_problem_is(tmp_path: Path) -> None:
    """Damaged rows (row group 2 of 2), a link not followed, an image column named (two structs), the split of a
    table named by no word (`--split`), and the identity a resume compares."""
    from converters.walk import NOT_FOLLOWED

    src = tmp_path / "src"
    path = _write(src / "part-0.parquet", {"image": PHOTO_FILES[:6], "text": [f"c{i}" for i in range(6)]})
    data = bytearray(path.read_bytes())
    row_group_0 = pq.ParquetFile(path).metadata.row_group(0).column(0)
    at = row_group_0.dictionary_page_offset  # the header of its first page: rows 0 to 3 lost, 4 and 5 kept
    data[at:at + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    (tmp_path / "other.parquet").symlink_to(path)
    (src / "z-link.parquet").symlink_to(tmp_path / "other.parquet")
    d = _discover(src, split="val")
    assert [it.rel for it in d.splits["val"]] == ["part-0.parquet#4", "part-0.parquet#5"]
    assert [it.split for it in d.splits["val"]] == ["val"] * 2
    damage = next(r for r in d.rejected if r.source.startswith("part-0"))
    assert (damage.split, damage.source) == ("val", "part-0.parquet#0")
    assert damage.reason.startswith("corrupt Parquet data, rows 0 to 3 of the file not read: ")
    assert d.identity == [["val", "part-0.parquet", None, path.stat().st_size, 2]]
    (same,) = [r.reason for r in d.rejected if r.source == "z-link.parquet"]
    assert same == f"the same file as {path} (reached through a link): taken once"
    d = discover_caption_tables(src, image_field=None, caption_field=None, split="val", max_bytes=1 << 30,
                                follow_symlinks=False)
    assert ("val", "z-link.parquet", NOT_FOLLOWED) in [(r.split, r.source, r.reason) for r in d.rejected]
    with pytest.raises(ConvertError, match="is not a directory"):
        _discover(path)


def test_image_field_picks_one_of_two_images_and_a_plain_binary_column(tmp_path: Path) -> None:
    table = {"image": PHOTO_FILES[:2], "caption": ["a", "b"]}
    _write(tmp_path / "a" / "train.parquet", table, features={"image": {"_type": "Image"},
                                                              "thumb": {"_type": "Image"}})
    t = pq.read_table(tmp_path / "a" / "train.parquet")
    pq.write_table(t.append_column("thumb", t.column("image")).replace_schema_metadata(t.schema.metadata),
                   tmp_path / "a" / "train.parquet")
    assert [r.reason for r in _discover(tmp_path / "a").rejected] == [
        "several image columns (image, thumb): name the one to convert with --image-field"]
    assert [it.payload.texts for it in _discover(tmp_path / "a", image_field="thumb").splits["train"]] == [
        ("a",), ("b",)]
    jpg = pa.table({"jpg": pa.array([PHOTO_FILES[0].read_bytes()]), "txt": ["a photo"],
                    "split": pa.array(["test"]).dictionary_encode()})
    (tmp_path / "c").mkdir()
    large = jpg.set_column(2, "split", pa.array(["Validation"], pa.large_string()))
    pq.write_table(large, tmp_path / "c" / "x.parquet")
    assert list(_discover(tmp_path / "c", image_field="jpg").splits) == ["val"]
    (tmp_path / "b").mkdir()
    pq.write_table(jpg, tmp_path / "b" / "shard.parquet")
    d = _discover(tmp_path / "b", image_field="jpg")  # (the spill file lives as long as the discovery)
    (item,) = d.splits["test"]  # the split column, dictionary-encoded
    assert item.payload.texts == ("a photo",) and item.payload.image.read_bytes() == PHOTO_FILES[0].read_bytes()


def test_a_table_that_is_no_pair_does_not_stop_detection(tmp_path: Path) -> None:
    from converters.image_text.tables import has_caption_tables

    (tmp_path / "a.parquet").write_bytes(b"PAR1 broken")
    _write(tmp_path / "b.parquet", {"image": PHOTO_FILES[:1], "caption": ["a cat"]})
    assert has_caption_tables(tmp_path, limit=10)
    assert not has_caption_tables(tmp_path, limit=1)
