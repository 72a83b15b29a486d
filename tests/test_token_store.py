"""The token store (`fastdata/text/store.py`): a shard whose length column or row count disagrees is refused at open,
naming it; a text mixture's store (`merge_stores`) reads three labelled datasets of several shards each as one, every
sequence's ids and its label mapped into the mixture's classes; and what the store tells the packing and weighting
code (`last_ids`, `class_labels`)."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest_text import convert_text
from helpers import with_features

from fastdata.dataset import open_dataset
from fastdata.errors import ShardError
from fastdata.text.store import TokenStore, merge_stores, open_store

CORPORA = {  # name -> (class names, (text, label) rows)
    "reviews": (["neg", "pos"], [("a dull film", 0), ("a fine film indeed", 1), ("bad", 0), ("good good good", 1),
                                 ("the plot was thin", 0)]),
    "news": (["art", "sport"], [("the match ended late", 1), ("a new gallery opened", 0), ("goal", 1)]),
    "mixed": (["pos", "zebra"], [("zebras run", 1), ("stripes", 1), ("a happy ending", 0), ("more zebras", 1),
                                 ("fine", 0), ("the end", 0)]),
}


def _convert(root: Path, name: str) -> Path:
    names, rows = CORPORA[name]
    table = pa.table({"text": pa.array([t for t, _ in rows], pa.string()), "label": pa.array([c for _, c in rows])})
    table = with_features(table, {"text": {"dtype": "string", "_type": "Value"},
                                  "label": {"names": names, "_type": "ClassLabel"}})
    (root / name / "src").mkdir(parents=True)
    pq.write_table(table, root / name / "src" / "train.parquet")
    convert_text(root / name / "src", root / name / "out", samples_per_shard=2)
    return root / name / "out"


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> list[TokenStore]:
    root = tmp_path_factory.mktemp("merge")
    return [open_store(open_dataset(_convert(root, name), split="train")) for name in CORPORA]


def _maps(stores: list[TokenStore]) -> tuple[np.ndarray, ...]:
    """Each dataset's label -> its class in the sorted union of the classes, as `mixing.py` builds them."""
    classes = sorted({c for names, _ in CORPORA.values() for c in names})
    return tuple(np.array([classes.index(c) for c in names], dtype=np.int64) for names, _ in CORPORA.values())


def test_three_datasets_of_several_shards_read_as_one(stores: list[TokenStore]) -> None:
    assert [len(s.columns) for s in stores] == [3, 2, 3]  # two sequences a shard: the third's columns follow two
    maps = _maps(stores)
    merged = merge_stores(stores, maps)
    where = [(d, j) for d, s in enumerate(stores) for j in range(len(s))]
    assert len(merged) == len(where) == 14
    for k, (d, j) in enumerate(where):
        assert merged.ids(k).tolist() == stores[d].ids(j).tolist()
        assert merged.labels[k] == maps[d][stores[d].labels[j]]
    # the union of the classes is art, neg, pos, sport, zebra: reviews' pos and mixed's pos are one class (the
    # converter shuffled each dataset's rows, so each dataset's part is compared sorted)
    parts = np.split(merged.labels, [5, 8])
    assert [sorted(p.tolist()) for p in parts] == [[1, 1, 1, 2, 2], [0, 3, 3], [2, 2, 2, 4, 4, 4]]
    assert merged.files == tuple(f for s in stores for f in s.files)
    assert merged.vocab_size == stores[0].vocab_size is not None


def test_a_dataset_without_labels_leaves_the_mixture_unlabelled(stores: list[TokenStore]) -> None:
    unlabelled = [stores[0], dataclasses.replace(stores[1], labels=None), stores[2]]
    merged = merge_stores(unlabelled, _maps(stores))
    assert merged.labels is None
    assert merged.class_labels().tolist() == [-1] * 14 and merged.class_labels().dtype == np.int64


def test_a_label_outside_its_datasets_classes_is_refused_naming_the_shard(stores: list[TokenStore]) -> None:
    maps = _maps(stores)
    news = stores[1]
    for bad in (2, -1):  # news has two classes
        forged = dataclasses.replace(news, labels=np.array([0, bad, 1]))
        with pytest.raises(ShardError) as err:
            merge_stores([stores[0], forged, stores[2]], maps)
        assert str(err.value) == f"a label of {news.files[0].path} lies outside its manifest's 2 classes"
    edge = dataclasses.replace(news, labels=np.array([1, 1, 1]))  # the last class: accepted
    assert merge_stores([stores[0], edge], maps[:2]).labels.tolist()[-3:] == [3, 3, 3]


def test_the_smallest_vocabulary_of_the_mixture_checks_its_ids(stores: list[TokenStore]) -> None:
    sized = [dataclasses.replace(s, vocab_size=v) for s, v in zip(stores, (300, None, 200))]
    assert merge_stores(sized, _maps(stores)).vocab_size == 200
    unsized = [dataclasses.replace(s, vocab_size=None) for s in stores]
    assert merge_stores(unsized, _maps(stores)).vocab_size is None


def test_last_ids_are_each_sequences_last_token_and_minus_one_for_an_empty_one(stores: list[TokenStore]) -> None:
    store = stores[0]
    assert store.last_ids().tolist() == [int(store.ids(i)[-1]) for i in range(len(store))]
    assert store.last_ids().dtype == np.int64
    short = dataclasses.replace(store, lengths=np.array([0, 1, *store.lengths[2:]]))
    assert short.ids(1).tolist() == store.ids(1).tolist()[:1]
    assert short.last_ids().tolist()[:2] == [-1, int(store.ids(1)[0])]


def _add_to_first_length(shard: Path, delta: int) -> None:
    """Add `delta` to the first value of the first batch's `length` column, in place (the file keeps its size, so
    the presence and size check at open passes; the ids and their offsets are untouched)."""
    mm = pa.memory_map(str(shard))
    base = mm.read_buffer(1).address
    mm.seek(0)
    lengths = next(iter(pa.ipc.open_stream(mm))).column("length")
    at, value = lengths.buffers()[1].address - base, lengths[0].as_py()
    mm.close()
    raw = bytearray(shard.read_bytes())
    assert struct.unpack_from("<i", raw, at) == (value,)
    struct.pack_into("<i", raw, at, value + delta)
    shard.write_bytes(bytes(raw))


def test_a_length_column_that_disagrees_with_the_ids_is_refused(tmp_path: Path) -> None:
    out = _convert(tmp_path, "reviews")  # a copy of its own, to damage
    shard = sorted(out.glob("*.arrow"))[1]
    _add_to_first_length(shard, 1)  # still positive, one more than the ids it stands for
    with pytest.raises(ShardError) as err:
        open_store(open_dataset(out, split="train"))
    assert str(err.value) == f"shard {shard}: the length column disagrees with the stored ids"


def test_a_shard_with_more_rows_than_the_manifest_says_is_refused_naming_its_columns(tmp_path: Path) -> None:
    import json

    out = _convert(tmp_path, "reviews")  # a copy of its own, to damage
    manifest = json.loads((out / "manifest.json").read_text())
    shard = manifest["splits"]["train"]["shards"][0]
    shard["samples"] -= 1
    (out / "manifest.json").write_text(json.dumps(manifest))
    path = out / shard["name"]
    with pytest.raises(ShardError) as err:
        open_store(open_dataset(out, split="train"))
    assert str(err.value).startswith(f"shard {path} holds 2 rows with columns ['")
    assert str(err.value).endswith("'], the manifest says 1 token sequences; re-run `fastdata convert`")
    assert "'input_ids'" in str(err.value) and "'length'" in str(err.value)


def test_shards_without_record_batches_are_refused_naming_the_first(tmp_path: Path) -> None:
    import json

    out = _convert(tmp_path, "reviews")  # a copy of its own, to damage
    manifest = json.loads((out / "manifest.json").read_text())
    split = manifest["splits"]["train"]
    first = out / split["shards"][0]["name"]
    with pa.ipc.open_stream(pa.memory_map(str(first))) as reader:
        schema = reader.schema
    for shard in split["shards"]:  # every shard rewritten as its schema alone
        with pa.OSFile(str(out / shard["name"]), "wb") as sink, pa.ipc.new_stream(sink, schema):
            pass
        shard["bytes"] = (out / shard["name"]).stat().st_size
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ShardError) as err:  # the manifest still counts the sequences (it refuses a count of 0)
        open_store(open_dataset(out, split="train"))
    assert str(err.value) == (f"shard {first} holds 0 rows with columns [], the manifest says 2 token sequences; "
                              "re-run `fastdata convert`")
