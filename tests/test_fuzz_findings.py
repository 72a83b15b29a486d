"""Inputs the mutation fuzz suite (tests/mutation_fuzz.py) found escaping as a raw exception, each pinned
to the clear error or recorded rejection it gets now."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_images import make_datasets
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)
from helpers import rewrite_arrow_shard, with_features

import fastdata
from fastdata.errors import ManifestError, ShardError
from fastdata.manifest import read_manifest
from fastdata.verify import verify_dataset


@pytest.fixture
def ds(tmp_path: Path) -> dict[str, Path]:
    return make_datasets(tmp_path)


def edit_manifest(root: Path, change) -> None:
    path = root / "manifest.json"
    m = json.loads(path.read_text())
    change(m)
    path.write_text(json.dumps(m))


@pytest.mark.parametrize("key, value, message", [
    ("members", 5, "extra.members.*list of names"),
    ("members", ["jpg", 3], "extra.members.*list of names"),
    ("label_member", ["cls"], "extra.label_member.*string"),
    ("tokenizer", "gpt2", "extra.tokenizer.*object"),
    ("ids_fill", "x", "extra.ids_fill.*integer"),  # these four were a TypeError, a raw ValueError, or read as 1
    ("ids_fill", 1.5, "extra.ids_fill.*integer"),
    ("ids_fill", True, "extra.ids_fill.*integer"),
    ("ids_fill", 2**63, "extra.ids_fill.*int64"),
])
def test_manifest_extra_fields_of_the_wrong_type_are_refused(ds, key, value, message):
    edit_manifest(ds["wds"], lambda m: m["extra"].__setitem__(key, value))
    with pytest.raises(ManifestError, match=message):
        read_manifest(ds["wds"])


@pytest.mark.parametrize("field, value", [("pad_id", -1), ("vocab_size", 0), ("ids_dtype", "float64")])
def test_a_forged_tokenizer_description_is_refused(fortunes_tokens, tmp_path, field, value):
    copy = tmp_path / "tokens"
    shutil.copytree(fortunes_tokens, copy)
    edit_manifest(copy, lambda m: m["extra"]["tokenizer"].__setitem__(field, value))
    with pytest.raises(ManifestError, match=f"extra.tokenizer.{field}"):
        fastdata.loader(copy, max_tokens=64)


def test_a_sample_count_the_shard_cannot_hold_is_refused_before_any_plan(ds):
    # a plan holds one entry per sample: 10**12 samples would allocate terabytes before any shard is read
    edit_manifest(ds["wds"], lambda m: m["splits"]["train"]["shards"][0].__setitem__("samples", 10**12))
    with pytest.raises(ManifestError, match="at most one per 16 bytes"):
        read_manifest(ds["wds"])


def test_a_manifest_nested_past_the_recursion_limit_is_a_manifest_error(ds):
    (ds["wds"] / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ManifestError, match="JSON nested too deeply to read"):
        read_manifest(ds["wds"])


def test_an_unknown_kind_is_a_manifest_error_from_the_loader(ds):
    edit_manifest(ds["wds"], lambda m: m.__setitem__("kind", "audio"))
    with pytest.raises(ManifestError, match="no loader for datasets of kind 'audio'"):
        fastdata.loader(ds["wds"], batch_size=2)


def _rename_field(path: Path, name: bytes) -> None:
    raw = path.read_bytes()
    assert raw.count(name) >= 1
    path.write_bytes(raw.replace(name, b"\xff" + name[1:]))  # same length: the stream stays well formed


def test_an_arrow_field_name_that_is_not_utf8_is_a_shard_error(fortunes_tokens, tmp_path, ds):
    copy = tmp_path / "tokens"
    shutil.copytree(fortunes_tokens, copy)
    _rename_field(next(copy.glob("*.arrow")), b"input_ids")
    with pytest.raises(ShardError, match="damaged or not an Arrow IPC stream"):
        fastdata.loader(copy, max_tokens=64)
    shard = ds["arrow"] / "train-000000.arrow"
    _rename_field(shard, b"label")
    with pytest.raises(ShardError, match="damaged or not an Arrow IPC stream"):
        list(fastdata.loader(ds["arrow"], batch_size=4, backend="kornia", device="cpu", image_size=32))
    # pyarrow 26 fails on the name (UnicodeDecodeError), pyarrow 14 on reading the renamed column (ArrowInvalid)
    assert any(re.search(r"unreadable Arrow stream: (UnicodeDecodeError|ArrowInvalid)", p)
               for p in verify_dataset(ds["arrow"]))


def test_an_npy_header_that_does_not_tokenize_is_a_shard_error(tmp_path):
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, write_phantom
    from test_volume_forged import _rewrite

    write_phantom(tmp_path / "src" / "a", Phantom(slices=6), seed=0)
    convert_dicom(tmp_path / "src", tmp_path / "out")
    header = b"{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3, '"  # the tokenizer's TokenError

    def forge(name, data):
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header if name.endswith(".npy") else data

    _rewrite(tmp_path / "out" / "train-000000.tar", forge)
    with pytest.raises(ShardError, match="unreadable npy header"):
        fastdata.loader(tmp_path / "out", batch_size=1, patch_size=(4, 8, 8), num_workers=1)


def _bad_us_length(path: Path, tag: bytes) -> None:
    """Give the US element `tag` (group, element as little-endian bytes) a 3-byte value: pydicom fails when
    the value is first read, not when the file is opened."""
    raw = path.read_bytes()
    at = raw.index(tag + b"US\x02\x00")
    path.write_bytes(raw[:at] + tag + b"US\x03\x00" + raw[at + 8:at + 10] + b"\x00" + raw[at + 10:])


@pytest.mark.parametrize("tag, where", [
    (b"\x28\x00\x10\x00", "discovery"),  # Rows: read while files are sorted into series
    (b"\x28\x00\x02\x00", "series"),  # SamplesPerPixel: read while the series is converted
])
def test_a_dicom_value_pydicom_cannot_parse_is_a_recorded_rejection(tmp_path, tag, where):
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, reasons_by_path, write_phantom

    files = write_phantom(tmp_path / "src" / "a", Phantom(slices=4), seed=0)
    write_phantom(tmp_path / "src" / "b", Phantom(slices=4, series_uid="1.2.3.4"), seed=1)  # a good series
    _bad_us_length(files[1], tag)
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    reasons = reasons_by_path(result)
    bad = files[1].relative_to(tmp_path / "src").as_posix()
    if where == "discovery":
        assert "BytesLengthException" in reasons[bad]
    else:  # the series is rejected as a whole, naming the file
        assert any("malformed attribute value: BytesLengthException" in r and bad in r for r in reasons.values())


def test_a_dicom_image_of_zero_rows_is_rejected(tmp_path):
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, make_slice, reasons_by_path, write_phantom

    write_phantom(tmp_path / "src" / "good", Phantom(slices=4), seed=0)
    for k in range(3):
        make_slice(tmp_path / "src" / "s" / f"{k}.dcm", np.zeros((0, 5), np.uint16), series_uid="1.2.3",
                   position=(0.0, 0.0, float(k)), instance=k + 1)
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    assert any("an image of [0, 5] pixels" in r for r in reasons_by_path(result).values())


def _tables():
    import pyarrow as pa

    def rename(old, new):
        return lambda t: t.rename_columns([new if n == old else n for n in t.column_names])

    def retype(name, values):
        return lambda t: t.set_column(t.schema.get_field_index(name), name, values(t.column(name)))

    return {
        "length renamed": (rename("length", "lengtx"), "length: missing or given twice"),
        "length twice": (lambda t: t.append_column("length", t.column("length")), "length: missing or given twice"),
        "length as text": (retype("length", lambda c: pa.array([str(v) for v in c.to_pylist()])), "length: string"),
        "ids as bytes": (retype("input_ids", lambda c: pa.array([bytes(len(v)) for v in c.to_pylist()])),
                         "input_ids: binary"),
        "ids as floats": (retype("input_ids", lambda c: pa.array([[float(x) for x in v] for v in c.to_pylist()])),
                          "input_ids: list<item: double>"),
        "label as text": (retype("label", lambda c: pa.array([str(v) for v in c.to_pylist()])), "label: string"),
        "label twice": (lambda t: t.append_column("label", t.column("label")), "label: missing or given twice"),
    }


@pytest.mark.parametrize("case", list(_tables()))
def test_a_token_shard_whose_columns_are_not_what_convert_writes_is_a_shard_error(fortunes_tokens, tmp_path, case):
    change, named = _tables()[case]
    copy = tmp_path / "tokens"
    shutil.copytree(fortunes_tokens, copy)
    rewrite_arrow_shard(copy, sorted(copy.glob("*.arrow"))[0].name, change)
    with pytest.raises(ShardError) as info:
        fastdata.loader(copy, max_tokens=64)
    assert "is not a token shard fastdata can read (" in str(info.value) and named in str(info.value)
    assert verify_dataset(copy)  # a list of problems, not an exception


def test_a_modality_of_an_unknown_value_representation_is_a_recorded_rejection(tmp_path):
    """pydicom parses Modality when the series' metadata is written, after the pixels: an unknown VR there
    raised NotImplementedError out of the converter."""
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, reasons_by_path, write_phantom

    files = write_phantom(tmp_path / "src" / "a", Phantom(slices=4), seed=0)
    write_phantom(tmp_path / "src" / "b", Phantom(slices=4, series_uid="1.2.3.4"), seed=1)  # a good series
    raw = files[0].read_bytes()
    at = raw.index(b"\x08\x00\x60\x00CS")  # (0008,0060) Modality, explicit VR
    files[0].write_bytes(raw[:at + 4] + b"C\xd3" + raw[at + 6:])
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    reasons = list(reasons_by_path(result).values())
    bad = files[0].relative_to(tmp_path / "src").as_posix()
    assert reasons == [f"{bad}: malformed Modality attribute (NotImplementedError)"]


@pytest.mark.parametrize("data", [
    b"filename,class\na.jpg,cat\nb.jpg,d\xffog\n",  # not UTF-8 (a spreadsheet saved as Latin-1)
    b"a.jpg," + b"x" * 200_000 + b"\n",  # a field past csv's size limit
])
def test_a_labels_csv_that_is_not_utf8_csv_is_a_convert_error(tmp_path, data):
    """Found by the `tables` target of `make fuzz` (seed 5): UnicodeDecodeError / csv.Error escaped convert."""
    from converters.images.labels_csv import read_labels
    from fastdata.errors import ConvertError

    (tmp_path / "labels.csv").write_bytes(data)
    with pytest.raises(ConvertError, match=f"cannot read labels file {tmp_path / 'labels.csv'}: .*; save it as UTF-8 "
                                           "CSV$"):
        read_labels(tmp_path / "labels.csv")


@pytest.mark.parametrize("change", [
    lambda doc: doc["annotations"][0].__setitem__("image_id", [1]),
    lambda doc: doc["annotations"][0].__setitem__("image_id", {"id": 1}),
    lambda doc: doc["images"][0].__setitem__("id", [1]),
])
def test_coco_ids_of_another_json_type_name_no_image(tmp_path, change):
    """Found by the `tables` target of `make fuzz` (seed 5): a list or object id raised TypeError (unhashable)."""
    from converters.image_text.captions import read_captions

    doc = {"images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "b.jpg"}],
           "annotations": [{"image_id": 1, "caption": "a cat"}, {"image_id": 2, "caption": "a dog"}]}
    change(doc)
    (tmp_path / "c.json").write_text(json.dumps(doc))
    rows = read_captions(tmp_path / "c.json")
    assert [(r.path, r.caption) for r in rows] == [("", "a cat"), ("b.jpg", "a dog")]


def test_a_mixture_state_far_past_any_epoch_is_refused_at_once(ds):
    """Found by the `state` target of `make fuzz` given a mixture (seeds 1 and 2): a mixture plans an epoch from
    the remainder passes before it, so a state at epoch 10**18 resumed for ever."""
    import time

    from fastdata.planning.epochs import MAX_EPOCH

    kw = dict(batch_size=2, image_size=32, backend="kornia", device="cpu", num_threads=1)
    mixture = {str(ds["wds"]): 1.0, str(ds["arrow"]): 2.0}
    loader = fastdata.loader(mixture, **kw)
    next(iter(loader))
    state = json.loads(json.dumps(loader.state_dict()))
    start = time.perf_counter()
    with pytest.raises(ValueError, match=f"'epoch' must be at most {MAX_EPOCH}, got {10**18}"):
        fastdata.loader(mixture, **kw).load_state_dict({**state, "epoch": 10**18})
    with pytest.raises(ValueError, match=f"epoch must be an integer in 0..{MAX_EPOCH}, got {MAX_EPOCH + 1}"):
        fastdata.loader(mixture, **kw).set_epoch(MAX_EPOCH + 1)
    assert time.perf_counter() - start < 5
    plain = fastdata.loader(ds["wds"], **kw)
    plain.set_epoch(MAX_EPOCH)  # the last epoch allowed is allowed
    assert len(list(plain)) == len(plain)


def test_text_and_volume_loaders_refuse_epochs_past_the_limit_alike(fortunes_tokens, tmp_path):
    from fastdata.planning.epochs import MAX_EPOCH

    text = fastdata.loader(fortunes_tokens, max_tokens=2048)
    state = json.loads(json.dumps(text.state_dict()))
    with pytest.raises(ValueError, match=f"epoch must be an integer in 0..{MAX_EPOCH}"):
        text.set_epoch(MAX_EPOCH + 1)
    with pytest.raises(ValueError, match=f"'epoch' in 0..{MAX_EPOCH}"):
        fastdata.loader(fortunes_tokens, max_tokens=2048).load_state_dict({**state, "epoch": 10**18})
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, write_phantom

    write_phantom(tmp_path / "src" / "a", Phantom(slices=4), seed=0)
    convert_dicom(tmp_path / "src", tmp_path / "vols")
    kw = dict(batch_size=1, patch_size=(4, 8, 8), num_workers=1)
    volumes = fastdata.loader(tmp_path / "vols", **kw)
    vstate = json.loads(json.dumps(volumes.state_dict()))
    with pytest.raises(ValueError, match=f"epoch must be an integer in 0..{MAX_EPOCH}"):
        volumes.set_epoch(MAX_EPOCH + 1)
    with pytest.raises(ValueError, match=f"'epoch' in 0..{MAX_EPOCH}"):
        fastdata.loader(tmp_path / "vols", **kw).load_state_dict({**vstate, "epoch": 10**18})


def test_a_null_tokenizer_description_reads_as_none(fortunes_tokens, tmp_path):
    """Found by `make fuzz` (seed 31337, manifest case 3384): `"tokenizer": null` passed the manifest check, meant
    for an absent description, and then the text loader called `.get` on None (AttributeError)."""
    copy = tmp_path / "tokens"
    shutil.copytree(fortunes_tokens, copy)
    edit_manifest(copy, lambda m: m["extra"].__setitem__("tokenizer", None))
    assert read_manifest(copy).tokenizer == {} and read_manifest(copy).vocab_size is None
    loader = fastdata.loader(copy, max_tokens=2048)
    assert loader.pad_id == 0 and len(list(loader)) == len(loader) > 0  # as without the key: pad 0, no EOS
    with pytest.raises(ValueError, match="tokenizer in the manifest has no EOS token"):
        fastdata.loader(copy, bucketing="pack", block_size=256, batch_size=4)
    fastdata.loader({str(copy): 1.0, str(copy): 1.0}, max_tokens=2048)  # a mixture compares their tokenizers


def test_a_null_ids_fill_reads_as_the_default(ds):
    from fastdata.pairs.members import ids_rule

    edit_manifest(ds["wds"], lambda m: m["extra"].__setitem__("ids_fill", None))
    assert ids_rule(read_manifest(ds["wds"]))[0] == -1
    edit_manifest(ds["wds"], lambda m: m["extra"].__setitem__("ids_fill", -(2**63)))
    assert ids_rule(read_manifest(ds["wds"]))[0] == -(2**63)


def _image_struct_with_field(table, name: str, bad_key: str):
    """`table` with a string field `name` added to its image struct, and the bytes of sample `bad_key` garbage."""
    import pyarrow as pa

    images = table.column("image").combine_chunks()
    data = [b"not a jpeg" if k == bad_key else b for k, b in
            zip(table.column("key").to_pylist(), images.field("bytes").to_pylist())]
    image = pa.StructArray.from_arrays([pa.array(data, pa.binary()), pa.array(["x"] * len(data))],
                                       names=["bytes", name])
    return table.set_column(table.column_names.index("image"), "image", image)


def test_verify_decodes_an_image_struct_with_a_field_name_that_is_not_utf8(ds):
    """verify --decode turned each image struct into a dict, decoding every field's name: a forged field name
    escaped as UnicodeDecodeError (fuzz seed 8675309). It reads the bytes field alone, and still decodes it."""
    import hashlib

    import pyarrow as pa

    root = ds["arrow"]
    shard = root / "train-000000.arrow"
    bad_key = pa.ipc.open_stream(shard.read_bytes()).read_all().column("key")[0].as_py()
    rewrite_arrow_shard(root, shard.name, lambda t: _image_struct_with_field(t, "zq", bad_key))
    raw = shard.read_bytes()
    assert raw.count(b"zq") == 1
    shard.write_bytes(raw.replace(b"zq", b"\xff\xfe"))
    edit_manifest(root, lambda m: [e.update(sha256=hashlib.sha256(shard.read_bytes()).hexdigest())
                                   for s in m["splits"].values() for e in s["shards"] if e["name"] == shard.name])
    problems = verify_dataset(root, decode=True)
    assert len(problems) == 1 and problems[0].startswith(f"{shard}: sample {bad_key} does not decode: ")


def test_a_captions_parquet_column_with_a_field_name_that_is_not_utf8_is_a_convert_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from converters.image_text.captions import read_captions
    from fastdata.errors import ConvertError

    path = tmp_path / "captions.parquet"
    pq.write_table(pa.table({"file": pa.array([{"zq": "a.jpg"}]), "caption": ["a cat"]}), path, store_schema=False)
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"zq", b"\xff\xfe"))
    with pytest.raises(ConvertError, match=r"^cannot read captions file .*captions\.parquet: a column's name, or the "
                                           r"name of a field of one, is not UTF-8"):
        read_captions(path)


def _lengthen_offsets_buffer(path: Path, column: str, extra: int) -> None:
    """Add `extra` bytes to the length the stream's metadata gives the offsets buffer of `column` (a binary or list
    column, or an image struct's bytes) in its first record batch. The buffer then reaches into the next one:
    still valid Arrow (offsets need only fit), but no longer a whole number of offsets."""
    import pyarrow as pa

    from fastdata.arrow_file import ArrowFile
    from fastdata.shard_columns import image_bytes_field

    f = ArrowFile(path)
    batch = f.batches[0]
    arr = batch.column(column)
    if pa.types.is_struct(arr.type):
        arr = arr.flatten()[image_bytes_field(arr.type)]
    body = min(f.file_offset(b) for col in batch.columns for b in col.buffers() if b is not None and b.size)
    offsets = arr.buffers()[1]
    entry = struct.pack("<qq", f.file_offset(offsets) - body, offsets.size)  # flatbuffers' Buffer {offset, length}
    f.close()
    raw = path.read_bytes()
    assert entry in raw  # the first batch's metadata comes first (later batches of one layout repeat the entry)
    path.write_bytes(raw.replace(entry, struct.pack("<qq", f.file_offset(offsets) - body, offsets.size + extra), 1))


@pytest.mark.parametrize("extra", [2, 4])
def test_an_offsets_buffer_longer_than_its_offsets_reads_the_offsets_it_holds(ds, fortunes_tokens, tmp_path, extra):
    """Found by `mutation_fuzz.py --seed 424242` (case 17979): an image shard whose bytes offsets buffer had a
    length that is no multiple of 4 raised numpy's raw "buffer size must be a multiple of element size"."""
    kw = dict(batch_size=2, image_size=16, backend="kornia", device="cpu", dtype="uint8", train=False)
    before = [x for x, _ in fastdata.loader(ds["arrow"], **kw)]
    _lengthen_offsets_buffer(ds["arrow"] / "train-000000.arrow", "image", extra)
    after = [x for x, _ in fastdata.loader(ds["arrow"], **kw)]
    assert len(after) == len(before) and all(torch.equal(a, b) for a, b in zip(after, before))
    copy = tmp_path / "tokens"
    shutil.copytree(fortunes_tokens, copy)
    plain = [b["input_ids"] for b in fastdata.loader(fortunes_tokens, max_tokens=2048, shuffle=False)]
    _lengthen_offsets_buffer(sorted(copy.glob("*.arrow"))[0], "input_ids", extra)
    forged = [b["input_ids"] for b in fastdata.loader(copy, max_tokens=2048, shuffle=False)]
    assert len(forged) == len(plain) and all(torch.equal(a, b) for a, b in zip(forged, plain))



@pytest.mark.parametrize("broken", ["not utf-8", "twice"])
def test_an_arrow_table_whose_column_names_are_not_utf8_or_repeat_is_a_rejection(tmp_path, broken):
    """An Arrow stream opens with a schema whose names are not UTF-8, and `schema.names` then raised
    UnicodeDecodeError out of the text kind's `.arrow` reading and the image tables' detection (the `hf_tables`
    target, seed 777, its first minute); two columns of one name made `schema.field` raise KeyError. Both are now
    the one rejection of the file."""
    import pyarrow as pa

    from converters.images.discover import discover_images
    from converters.text.options import TextOptions
    from converters.text.records import Reject, read_documents

    image = pa.array([{"bytes": b"\xff\xd8", "path": "a.jpg"}],
                     pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    table = pa.table([pa.array(["a doc"]), image], names=["text", "image" if broken == "not utf-8" else "text"])
    path = tmp_path / "train.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    if broken == "not utf-8":
        path.write_bytes(path.read_bytes().replace(b"image", b"im\xffge"))
    why = "a column name is not UTF-8" if broken == "not utf-8" else "the column name 'text' is used twice"
    (where, reject), = read_documents(path, TextOptions(tokenizer="t"))
    assert where == "" and isinstance(reject, Reject) and reject.reason.startswith(why)
    d = discover_images(tmp_path)
    assert not d.splits and [(r.source, r.reason[:len(why)]) for r in d.rejected] == [("train.arrow", why)]


def test_every_byte_of_a_parquet_image_column_changed_gives_rows_or_rejections(tmp_path):
    """A dictionary index past the end of its dictionary (the image column is read as its dictionary) raised
    IndexError out of discovery: the `hf_tables` target, seed 778, cases 93041 and 96621. Every batch is now
    validated before a value is read. Here each byte of the image column's pages (dictionary and data pages of the
    first row group) is changed four ways; discovery must give rows or recorded rejections, never raise."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from converters.images.discover import discover_images

    photos = [b"\xff\xd8" + bytes([i]) * 30 for i in range(3)]
    features = {"image": {"_type": "Image"}, "label": {"names": ["a", "b"], "_type": "ClassLabel"}}
    table = pa.table({"image": [{"bytes": photos[i % 3], "path": f"{i}.jpg"} for i in range(6)],
                      "label": pa.array([i % 2 for i in range(6)], pa.int64())})
    table = with_features(table, features)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=3, compression="none")
    data = sink.getvalue().to_pybytes()
    chunk = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0).column(0)
    assert chunk.path_in_schema == "image.bytes" and chunk.has_dictionary_page
    start = chunk.dictionary_page_offset
    path = tmp_path / "train.parquet"
    damaged = 0
    for at in range(start, start + chunk.total_compressed_size):
        for value in {0x00, 0xFF, data[at] ^ 0x01, data[at] ^ 0x80} - {data[at]}:
            path.write_bytes(data[:at] + bytes([value]) + data[at + 1:])
            d = discover_images(tmp_path)
            damaged += any(r.reason.startswith("corrupt Parquet data") for r in d.rejected)
    assert damaged > 100  # the changes reached the reading of rows, not only the opening of the file


def test_a_folder_beside_split_folders_whose_name_is_not_utf8_is_rejected_not_a_crash(tmp_path):
    """A folder outside the split folders was rejected under a split of its own name; a name that is not UTF-8
    (`caf\\xe9`, Latin-1) then stopped the conversion with UnicodeEncodeError when the plan was written. Found by
    the `tree` target's class/split layout, seed 1720 (a class folder named `val` made its tree a split tree)."""
    from helpers import convert_images, make_image_tree

    src = make_image_tree(tmp_path / "src", classes=1, per_class=2, splits=("train",))
    odd = os.path.join(os.fsencode(str(src)), b"caf\xe9")
    os.makedirs(odd)
    with open(os.path.join(odd, b"a.jpg"), "wb") as f:
        f.write((src / "train" / "class_0" / "img_0.jpg").read_bytes())
    result = convert_images(src, tmp_path / "out")
    assert [(r["split"], r["source"]) for r in result.rejected] == [("caf\\xe9", "caf\\xe9/a.jpg")]
    assert result.manifest.num_samples == 2


def test_a_class_id_of_thousands_of_digits_is_a_name_not_a_crash(tmp_path):
    """A labels file whose class is a number of 5,000 digits raised ValueError out of `int()` (Python's limit on
    the digits of a string it converts): the `tables` target, `path label` lists, seed 1740. Numbers of up to 19
    digits (int64's) are ordered by value; longer ones are names."""
    from converters.images.labels_csv import label_order, read_labels

    huge = "7" * 5000
    assert label_order({huge, "12"}) == ("12", huge)  # as strings: "1" < "7"
    widest = "-" + "9" * 19
    assert label_order({widest, "5", "300"}) == (widest, "5", "300")  # by value, the widest int64-sized number too
    (tmp_path / "l.txt").write_text(f"a.jpg {huge}\nb.jpg 3\n")
    assert read_labels(tmp_path / "l.txt").classes == ("3", huge)


# A MATLAB 5 file of Stanford Dogs' shape (a cell array `file_list`), damaged by the fuzz's `lists` target (seed 80):
# scipy's `loadmat` died of a segmentation fault on it, and the conversion with it.
SEGFAULTING_MAT = bytes.fromhex(
    "4d41544c414220352e30204d41542d66696c6520506c6174666f726d3a20706f7369782c2043726561746564206f6e3a224d"
    "6f6e204e6f762033302032333a32313a35342032303236000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000001494d0e000000100100000600000008000000010000000000"
    "000005000000080000000300000001000000010000000900000066696c655f6c697374000000000000000e00000040000000"
    "062000000800000004000000000000000500000008000000010000000d0000000100000000000000100000000d0000006e30"
    "382d7075672f612e6a70670000000e0000004000000006000000080000000400000000000000050000000800000001000000"
    "0e0000000100000000000000100000000e0000006e30312d63686f772f622e6a706700000e00000040000000060000010800"
    "000004000000000000000500000008000000010000000d0000000100000000000000100100000d0000006e30302d7075672f"
    "632e6a70670000000e000000500000000600000008000000060080000000000005000018000000000000000000f03f000000"
    "000000f03f00000000f03f")


def test_a_matlab_file_scipy_dies_on_is_refused_and_the_conversion_lives(tmp_path):
    from converters.mat_files import load_mat
    from converters.table_files import TableError

    (tmp_path / "train_list.mat").write_bytes(SEGFAULTING_MAT)
    try:
        load_mat(tmp_path / "train_list.mat", ["file_list"], limit=1 << 20, what="a list")
    except TableError as exc:  # (a scipy that no longer crashes refuses it, or reads it: either way the run lives)
        assert str(exc).startswith("not a MATLAB 5 file")
