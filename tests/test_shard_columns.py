"""Arrow shards whose columns or values are not what `fastdata convert` writes (fastdata/shard_columns.py): the
loaders refuse them at open with a ShardError naming the column, and `verify` names the same problem; what convert
writes, and the wider types a writer may choose, still load."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from conftest_images import make_datasets
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)
from helpers import rewrite_arrow_shard

import fastdata
from fastdata.errors import ShardError
from fastdata.shard_columns import check_image_columns, check_token_columns, value_problems
from fastdata.verify import verify_dataset


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_datasets(tmp_path_factory.mktemp("columns"))["arrow"]


def _copy(src: Path, dst: Path, change, shards: slice = slice(None)) -> Path:
    shutil.copytree(src, dst)
    for shard in sorted(dst.glob("*.arrow"))[shards]:
        rewrite_arrow_shard(dst, shard.name, change)
    return dst


def rename(old: str, new: str):
    return lambda t: t.rename_columns([new if n == old else n for n in t.column_names])


def twice(name: str):
    return lambda t: t.append_column(name, t.column(name))


def retype(name: str, values, type_: pa.DataType | None = None):
    return lambda t: t.set_column(t.schema.get_field_index(name), name,
                                  pa.array([values(v) for v in t.column(name).to_pylist()], type_))


def _struct(*fields: tuple[str, pa.DataType]) -> pa.DataType:
    return pa.struct(list(fields))


IMAGE_CASES = {
    "key missing": (rename("key", "name"), "(key: missing or given twice;"),
    "key twice": (twice("key"), "(key: missing or given twice;"),
    "key a number": (retype("key", lambda k: int(k)), "(key: int64;"),
    "image missing": (rename("image", "img"), "(image: missing or given twice;"),
    "image twice": (twice("image"), "(image: missing or given twice;"),
    "image plain bytes": (retype("image", lambda v: v["bytes"]), "(image: binary;"),
    "image without bytes": (retype("image", lambda v: {"path": v["path"]}), "(image: struct<path: string>;"),
    "image bytes as text": (retype("image", lambda v: {"bytes": "x", "path": v["path"]}),
                            "(image: struct<bytes: string, path: string>;"),
    "label twice": (twice("label"), "(label: missing or given twice (the manifest lists classes);"),
    "label missing": (lambda t: t.drop_columns(["label"]), "(label: missing or given twice"),
    "label as text": (retype("label", str), "(label: string;"),
    "label as float": (retype("label", float), "(label: double;"),
}


@pytest.mark.parametrize("case", list(IMAGE_CASES))
def test_an_image_shard_with_wrong_columns_is_refused_by_the_loader_and_verify(images, tmp_path, case):
    change, named = IMAGE_CASES[case]
    root = _copy(images, tmp_path / "arrow", change)
    first = root / "train-000000.arrow"
    with pytest.raises(ShardError) as info:
        list(fastdata.loader(root, batch_size=4, backend="kornia", device="cpu", image_size=32))
    message = str(info.value)
    assert "is not an image shard fastdata can read " + named in message and "re-run `fastdata convert`" in message
    assert message.startswith(f"shard {root}{os.sep}")  # the loader names the shard it opened
    assert f"shard {first} is not an image shard fastdata can read {named}" in "\n".join(verify_dataset(root))


IMAGE = _struct(("bytes", pa.binary()), ("path", pa.string()))
VALUE_CASES = {  # the first shard (5 rows) rewritten: (change, the problem named, how many problems)
    "null image": (retype("image", lambda v: None, IMAGE),
                   "column image.bytes holds 5 null value(s), the first in row 0", 1),
    "null bytes": (retype("image", lambda v: {"bytes": None, "path": v["path"]}, IMAGE),
                   "column image.bytes holds 5 null value(s), the first in row 0", 1),
    "null key": (retype("key", lambda v: None, pa.string()), "column key holds 5 null value(s), the first in row 0", 1),
    "null label": (retype("label", lambda v: None, pa.int64()),
                   "column label holds 5 null value(s), the first in row 0", 1),
    "label past the classes": (retype("label", lambda v: 3), "row 0 has label 3, outside 0..2", 5),
    "negative label": (retype("label", lambda v: -1), "row 0 has label -1, outside 0..2", 5),
    "two labels past the classes": (
        lambda t: t.set_column(t.schema.get_field_index("label"), "label", pa.array([9, 0, 9, 0, 0])),
        "row 0 has label 9, outside 0..2", 2),
}


@pytest.mark.parametrize("case", list(VALUE_CASES))
def test_an_image_shard_with_nulls_or_foreign_labels_is_refused_by_the_loader_and_verify(images, tmp_path, case):
    change, named, count = VALUE_CASES[case]
    root = _copy(images, tmp_path / "arrow", change, slice(0, 1))
    first = root / "train-000000.arrow"
    with pytest.raises(ShardError) as info:  # eval reads the shards in order: the first is opened first
        list(fastdata.loader(root, batch_size=4, backend="kornia", device="cpu", image_size=32, train=False))
    more = f" (and {count - 1} more)" if count > 1 else ""
    assert str(info.value) == f"shard {first}: {named}{more}, which `fastdata convert` never writes; re-run " \
                              "`fastdata convert`"
    assert f"{first}: {named}" in verify_dataset(root)


def test_a_label_column_in_a_dataset_without_classes_is_refused(images, tmp_path):
    root = _copy(images, tmp_path / "arrow", lambda t: t)
    manifest = (root / "manifest.json").read_text()
    (root / "manifest.json").write_text(manifest.replace('"classes": ["class_0", "class_1", "class_2"]',
                                                         '"classes": []'))
    assert '"classes": []' in (root / "manifest.json").read_text()
    with pytest.raises(ShardError, match=r"\(label: a column in a dataset without classes;"):
        list(fastdata.loader(root, batch_size=4, backend="kornia", device="cpu", image_size=32))


@pytest.mark.parametrize("change", [
    retype("label", int, pa.int8()),
    retype("key", str, pa.large_string()),
    retype("image", dict, _struct(("path", pa.string()), ("bytes", pa.large_binary()))),  # bytes not first
], ids=["int8 labels", "large_string keys", "large_binary bytes after path"])
def test_the_types_another_writer_may_choose_still_load_the_same_samples(images, tmp_path, change):
    root = _copy(images, tmp_path / "arrow", change)
    assert verify_dataset(root, decode=True) == []
    opts = dict(batch_size=4, backend="kornia", device="cpu", image_size=32, train=False)
    got = [(x.clone(), y.clone()) for x, y in fastdata.loader(root, **opts)]
    want = [(x.clone(), y.clone()) for x, y in fastdata.loader(images, **opts)]
    assert len(got) == len(want) and all((a == c).all() and (b == d).all() for (a, b), (c, d) in zip(got, want))


TOKEN_CASES = {
    "label past the classes": (retype("label", lambda v: 5), "row 0 has label 5, outside 0..4"),
    "null label": (retype("label", lambda v: None, pa.int64()), "column label holds 256 null value(s)"),
    "null length": (retype("length", lambda v: None, pa.int32()), "column length holds 256 null value(s)"),
    "null ids": (lambda t: t.set_column(t.schema.get_field_index("input_ids"), "input_ids",
                                        pa.array([None] * len(t), t.schema.field("input_ids").type)),
                 "column input_ids holds 256 null value(s)"),
    "a null id inside a list": (lambda t: t.set_column(
        t.schema.get_field_index("input_ids"), "input_ids",
        pa.array([v[:-1] + [None] if i == 3 else v for i, v in enumerate(t.column("input_ids").to_pylist())],
                 t.schema.field("input_ids").type)),
        "column input_ids holds 1 null id(s) inside its lists"),
}


@pytest.mark.parametrize("case", list(TOKEN_CASES))
def test_a_token_shard_with_nulls_or_foreign_labels_is_refused_by_the_loader_and_verify(fortunes_tokens, tmp_path,
                                                                                         case):
    """Before: a label past the classes or a null label (read as -2**63) reached the batches; a null length or
    id list read offsets from whatever bytes the slot held."""
    change, named = TOKEN_CASES[case]
    root = _copy(fortunes_tokens, tmp_path / "tokens", change, slice(0, 1))
    with pytest.raises(ShardError, match="which `fastdata convert` never writes") as info:
        fastdata.loader(root, max_tokens=512)
    assert named in str(info.value)
    assert f"{root / 'train-000000.arrow'}: {named}" in "\n".join(verify_dataset(root))


def test_one_token_shard_without_labels_is_refused_not_shifting_every_later_label(fortunes_tokens, tmp_path):
    """The labels of the other shards were concatenated without the first's: every later sequence took the label
    of one 700 places on (or an IndexError past the end)."""
    root = _copy(fortunes_tokens, tmp_path / "tokens", lambda t: t.drop_columns(["label"]), slice(0, 1))
    with pytest.raises(ShardError, match=r"is not a token shard fastdata can read \(label: missing or given twice"):
        fastdata.loader(root, max_tokens=512)
    assert any("(label: missing or given twice" in p for p in verify_dataset(root))


def test_the_checks_accept_what_convert_writes_and_name_every_wrong_column_at_once():
    ok_tokens = pa.schema([("key", pa.string()), ("input_ids", pa.large_list(pa.uint16())), ("length", pa.int32())])
    check_token_columns(ok_tokens, "t", labelled=False)
    check_token_columns(ok_tokens.append(pa.field("label", pa.int64())), "t", labelled=True)
    with pytest.raises(ShardError, match=r"\(input_ids: missing or given twice; length: missing or given twice;"):
        check_token_columns(pa.schema([("ids", pa.list_(pa.int32())), ("size", pa.int32())]), "t", labelled=False)
    with pytest.raises(ShardError) as info:
        check_token_columns(pa.schema([("input_ids", pa.list_(pa.float32())), ("label", pa.int64())]), "t",
                            labelled=False)
    assert str(info.value) == (
        "shard t is not a token shard fastdata can read (input_ids: list<item: float>; length: missing or given "
        "twice; label: a column in a dataset without classes; want input_ids a list of integers, length and label "
        "integers, each once); re-run `fastdata convert`")
    ok_images = pa.schema([("key", pa.string()), ("image", _struct(("bytes", pa.binary()), ("path", pa.string())))])
    check_image_columns(ok_images, "i", labelled=False)
    with pytest.raises(ShardError) as info:
        check_image_columns(pa.schema([("image", _struct(("bytes", pa.binary()), ("bytes", pa.binary())))]), "i",
                            labelled=True)
    assert str(info.value) == (
        "shard i is not an image shard fastdata can read (key: missing or given twice; image: struct<bytes: binary, "
        "bytes: binary>; label: missing or given twice (the manifest lists classes); want key text, image a struct "
        "with a binary field bytes, label integers, each once); re-run `fastdata convert`")


def test_value_problems_count_rows_from_the_batch_start_and_list_every_label_outside():
    batch = pa.RecordBatch.from_pydict({"key": ["a", "b", None, "d"], "label": [0, 2, 1, -1],
                                        "length": pa.array([1, 2, 3, 4], pa.int32())})
    assert value_problems(batch, classes=2, first_row=10) == [
        "column key holds 1 null value(s), the first in row 12",
        "row 11 has label 2, outside 0..1",
        "row 13 has label -1, outside 0..1",
    ]
    assert value_problems(batch, classes=3, first_row=0) == ["column key holds 1 null value(s), the first in row 2",
                                                             "row 3 has label -1, outside 0..2"]
    assert value_problems(batch, classes=0, first_row=0) == ["column key holds 1 null value(s), the first in row 2"]
    nulls = pa.RecordBatch.from_pydict({"label": pa.array([0, None, 2], pa.int64())})  # a null is not also a label
    assert value_problems(nulls, classes=1, first_row=0) == ["column label holds 1 null value(s), the first in row 1",
                                                             "row 2 has label 2, outside 0..0"]


def test_rows_are_counted_across_record_batches(fortunes_tokens, tmp_path):
    """A token shard holds record batches of 256 rows: a bad label in the second batch is named by its row in the
    shard (a mutation round of verify.py found the count unchecked)."""
    def change(t):
        labels = t.column("label").to_pylist()
        labels[600] = 9  # in the third batch (rows 512-699)
        return t.set_column(t.schema.get_field_index("label"), "label", pa.array(labels, pa.int64()))

    root = _copy(fortunes_tokens, tmp_path / "tokens", change, slice(0, 1))
    assert pa.ipc.open_stream((root / "train-000000.arrow").read_bytes()).read_all().column("label").num_chunks > 1
    assert f"{root / 'train-000000.arrow'}: row 600 has label 9, outside 0..4" in verify_dataset(root)
    with pytest.raises(ShardError, match="row 600 has label 9, outside 0..4"):
        fastdata.loader(root, max_tokens=512)
