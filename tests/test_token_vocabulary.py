"""Stored token ids outside the tokenizer's vocabulary (a damaged or forged shard): before, they went into the
batches as they were (a negative id, or one past the embedding table, fails inside the user's model: a device-side
assert on CUDA), and a uint64 id past int64 raised OverflowError out of the image-text loader. Now the sequence
loader checks every batch (one reduction), the image-text loader every sample's ids, and `verify` both, each
naming the shard."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest_pairs import TOKENIZER, convert_pairs, make_pair_tree
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)
from helpers import rewrite_arrow_shard

import fastdata
from fastdata.errors import ShardError
from fastdata.text.tokenizer import outside_vocabulary
from fastdata.verify import verify_dataset

VOCAB = 30522  # bert-base-uncased, the tokenizer of the fortunes fixture and of the pairs below


@pytest.mark.parametrize(("ids", "vocab", "first"), [
    (np.array([0, 5, VOCAB - 1], dtype=np.uint16), VOCAB, None),
    (np.array([0, VOCAB, 7, 65535], dtype=np.uint16), VOCAB, VOCAB),
    (np.array([3, -2, 40000], dtype=np.int32), VOCAB, -2),
    (np.array([[1, 2], [3, 99]], dtype=">i4"), 50, 99),  # big-endian, two dimensions
    (np.array([2**24, 2**25], dtype=">i4"), 50, 2**24),  # big-endian, read as little-endian: 1 and 2
    (np.array([2**64 - 1], dtype=np.uint64), 2**63, 2**64 - 1),
    (np.array([-1], dtype=np.int8), 100, -1),
    (np.array([], dtype=np.int32), 1, None),
    (np.array([10**6], dtype=np.int64), None, None),  # no size known: nothing to check against
])
def test_outside_vocabulary_names_the_first_id_outside(ids, vocab, first):
    assert outside_vocabulary(ids, vocab) == first


def test_the_ids_rule_of_a_manifest_reads_its_fill_and_vocabulary():
    from fastdata.manifest import Manifest
    from fastdata.pairs.members import ids_rule

    def manifest(**extra):
        return Manifest(kind="image_text", shard_format="wds", classes=(), splits={}, preprocessing={}, rejected=(),
                        extra={"text_member": "txt", **extra}, fingerprint="0" * 64, tool_version="0")

    assert ids_rule(manifest()) == (-1, 2**63)
    assert ids_rule(manifest(ids_fill=7, tokenizer={"vocab_size": 100})) == (7, 100)
    assert ids_rule(manifest(tokenizer={"pad_id": 0})) == (-1, 2**63)
    assert manifest(tokenizer={"vocab_size": 100}).vocab_size == 100 and manifest().vocab_size is None


def _forge_id(root: Path, row: int, value: int) -> Path:
    """Token `value` as the first id of `row` of the first shard (its type kept, so the id may wrap)."""
    shard = sorted(root.glob("*.arrow"))[0]

    def change(t: pa.Table) -> pa.Table:
        rows = t.column("input_ids").to_pylist()
        rows[row] = [value] + rows[row][1:]
        i = t.schema.get_field_index("input_ids")
        return t.set_column(i, "input_ids", pa.array(rows, t.schema.field(i).type))

    rewrite_arrow_shard(root, shard.name, change)
    return shard


@pytest.mark.parametrize("bucketing", ["length", "pack"])
def test_a_token_id_past_the_vocabulary_stops_the_sequence_loader_naming_the_shard(fortunes_tokens, tmp_path,
                                                                                     bucketing):
    root = Path(shutil.copytree(fortunes_tokens, tmp_path / "tokens"))
    shard = _forge_id(root, 3, VOCAB)  # uint16: 30522 is stored as it is
    options = {"max_tokens": 512} if bucketing == "length" else {"block_size": 128, "batch_size": 8}
    with pytest.raises(ShardError) as info:
        for _ in fastdata.loader(root, bucketing=bucketing, **options):
            pass
    assert str(info.value) == (f"shard {shard}: a sequence holds token id {VOCAB}, outside the tokenizer's vocabulary "
                               f"(0..{VOCAB - 1}) in the manifest; re-run `fastdata convert`")
    assert verify_dataset(root) == [f"{shard}: token id {VOCAB} in the record batch from row 0 lies outside the "
                                    f"tokenizer's vocabulary (0..{VOCAB - 1})"]


def test_a_pad_id_outside_the_vocabulary_is_the_users_choice_not_an_error(fortunes_tokens):
    """The whole batch (padding included) is checked first; only when that finds an id outside are the sequences
    themselves looked at, so a pad id past the vocabulary costs time, not an error."""
    batches = list(fastdata.loader(fortunes_tokens, max_tokens=512, pad_id=VOCAB + 5))
    assert batches and any((b["input_ids"] == VOCAB + 5).any() for b in batches)
    assert all(int(b["input_ids"][b["attention_mask"].bool()].max()) < VOCAB for b in batches)


def _pairs(tmp_path: Path) -> Path:
    make_pair_tree(tmp_path / "src", 10, captions=2)
    convert_pairs(tmp_path / "src", tmp_path / "pairs", tokenizer=str(TOKENIZER))
    return tmp_path / "pairs"


def _replace_ids(root: Path, change) -> str:
    """The first sample's ids.npy rewritten in place as change(array), the same number of bytes; its key."""
    idx = sorted(root.glob("*.idx"))[0]
    fields = idx.read_text().splitlines()[1].split()
    at = fields.index("ids.npy")
    offset, size, name = int(fields[at + 1]), int(fields[at + 2]), fields[at + 3]
    tar = idx.with_suffix(".tar")
    data = bytearray(tar.read_bytes())
    buf = io.BytesIO()
    np.save(buf, change(np.load(io.BytesIO(bytes(data[offset:offset + size])))))
    assert len(buf.getvalue()) == size
    data[offset:offset + size] = buf.getvalue()
    tar.write_bytes(bytes(data))
    return name.partition(".")[0]


def _eval(root: Path) -> list:
    return list(fastdata.loader(root, batch_size=4, image_size=32, backend="kornia", device="cpu", train=False))


@pytest.mark.parametrize("value", [VOCAB, -7, 2**31 - 1])
def test_a_stored_caption_id_outside_the_vocabulary_stops_the_image_text_loader(tmp_path, value):
    root = _pairs(tmp_path)
    assert all(int(b[1]["input_ids"].max()) < VOCAB for b in _eval(root))

    def change(ids):
        ids[0, 1] = value
        return ids

    key = _replace_ids(root, change)
    with pytest.raises(ShardError) as info:
        _eval(root)
    assert str(info.value) == (f"sample {key} in {root / 'train-000000.tar'}: token id {value} lies outside the "
                               f"tokenizer's vocabulary (0..{VOCAB - 1})")
    assert f"{root / 'train-000000.tar'}: sample {key}: token id {value} lies outside the tokenizer's vocabulary " \
           f"(0..{VOCAB - 1})" in verify_dataset(root)


def test_without_a_vocabulary_size_an_id_past_int64_is_a_shard_error_not_overflow(tmp_path):
    root = _pairs(tmp_path)
    manifest = json.loads((root / "manifest.json").read_text())
    del manifest["extra"]["tokenizer"]["vocab_size"]
    (root / "manifest.json").write_text(json.dumps(manifest))
    # sample 0's two captions: int32 [2, 9] and uint64 [3, 3] take the same bytes, header included
    key = _replace_ids(root, lambda ids: np.full((3, 3), 2**64 - 1, dtype=np.uint64))
    with pytest.raises(ShardError, match=f"sample {key} in .*: token id {2**64 - 1} lies outside the tokenizer's "
                                         rf"vocabulary \(0..{2**63 - 1}\)"):
        _eval(root)
