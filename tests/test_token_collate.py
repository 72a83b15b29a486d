"""Token batches built by hand-checkable rules (fastdata/text/collate.py): padded rows, and packed rows cut from
one stream of documents, each followed by EOS unless it already ends with it. The store here is a stand-in
holding four documents in memory; reading real shards and the vocabulary check itself are tested in
test_sequence_loader.py and test_token_vocabulary.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from fastdata.text.collate import PackedStream, collate_packed, collate_padded

EOS, PAD = 2, 0
# doc 0 lacks EOS, doc 1 ends with it, doc 2 is empty, doc 3 lacks it. The stream: 5 6 7 2 | 8 2 | 2 | 9 2
DOCS = [[5, 6, 7], [8, EOS], [], [9]]


@dataclass
class Store:
    docs: list[list[int]]
    labels: np.ndarray | None = None
    checked: list[tuple[list[int], list[int]]] = field(default_factory=list)

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(d) for d in self.docs], dtype=np.int64)

    def ids(self, i: int) -> np.ndarray:
        return np.array(self.docs[i], dtype=np.uint16)  # a shard's narrow dtype, widened by the collate

    def check_vocabulary(self, batch: np.ndarray, sequences) -> None:
        self.checked.append((batch.ravel().tolist(), list(sequences)))

    def last_ids(self) -> np.ndarray:
        return np.array([d[-1] if d else -1 for d in self.docs], dtype=np.int64)


def _stream(store: Store, order=(0, 1, 2, 3)) -> PackedStream:
    return PackedStream.build(store, np.array(order), eos_id=EOS, last_ids=store.last_ids())


def _lists(batch: dict[str, torch.Tensor]) -> dict[str, list]:
    assert all(v.dtype == torch.int64 for v in batch.values()), {k: v.dtype for k, v in batch.items()}
    return {k: v.tolist() for k, v in batch.items()}


def test_the_stream_appends_eos_only_where_a_document_lacks_it() -> None:
    s = _stream(Store(DOCS))
    assert s.append_eos.tolist() == [True, False, True, True]
    assert s.sizes.tolist() == [4, 2, 1, 2] and s.begins.tolist() == [0, 4, 6, 7, 9] and s.total == 9
    other = _stream(Store(DOCS), order=(3, 1))
    assert other.sizes.tolist() == [2, 2] and other.begins.tolist() == [0, 2, 4]


def test_packed_rows_restart_positions_and_number_pieces_at_each_document() -> None:
    store = Store(DOCS)
    got = _lists(collate_packed(store, _stream(store), np.array([1, 2]), block_size=4, pad_id=PAD))
    assert got == {
        "input_ids": [[8, 2, 2, 9], [2, PAD, PAD, PAD]],  # row 1: doc 1, doc 2's EOS, doc 3; row 2: doc 3's EOS
        "attention_mask": [[1, 1, 1, 1], [1, 0, 0, 0]],
        "position_ids": [[0, 1, 0, 0], [1, 0, 0, 0]],  # padding at position 0
        "document_ids": [[1, 1, 2, 3], [1, 0, 0, 0]],
        "lengths": [4, 1],
        "cu_seqlens": [0, 2, 3, 4, 5],
    }
    assert store.checked == [([8, 2, 2, 9, 2], [1, 2, 3])]  # the ids of exactly the documents the rows hold


def test_the_first_row_and_a_row_alone() -> None:
    store = Store(DOCS)
    first = _lists(collate_packed(store, _stream(store), np.array([0]), block_size=4, pad_id=PAD))
    assert first["input_ids"] == [[5, 6, 7, 2]] and first["position_ids"] == [[0, 1, 2, 3]]
    assert first["document_ids"] == [[1, 1, 1, 1]] and first["cu_seqlens"] == [0, 4]
    last = _lists(collate_packed(store, _stream(store), np.array([2]), block_size=4, pad_id=PAD))
    assert last["input_ids"] == [[2, PAD, PAD, PAD]] and last["position_ids"] == [[1, 0, 0, 0]]
    assert store.checked == [([5, 6, 7, 2], [0]), ([9, 2], [3])]


def test_a_stream_of_one_token() -> None:
    store = Store([[]])  # one empty document: its EOS is the whole stream
    got = _lists(collate_packed(store, _stream(store, order=(0,)), np.array([0]), block_size=3, pad_id=7))
    assert got["input_ids"] == [[2, 7, 7]] and got["attention_mask"] == [[1, 0, 0]]
    assert got["document_ids"] == [[1, 0, 0]] and got["cu_seqlens"] == [0, 1] and got["lengths"] == [1]


def test_padded_rows_round_the_width_up_and_keep_labels() -> None:
    store = Store(DOCS, labels=np.array([10, 11, 12, 13], dtype=np.int64))
    got = _lists(collate_padded(store, np.array([3, 0, 1]), pad_id=PAD, multiple=4))
    assert got == {
        "input_ids": [[9, 0, 0, 0], [5, 6, 7, 0], [8, 2, 0, 0]],
        "attention_mask": [[1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0]],
        "lengths": [1, 3, 2],
        "labels": [13, 10, 11],
    }
    assert store.checked == [([9, 0, 0, 0, 5, 6, 7, 0, 8, 2, 0, 0], [3, 0, 1])]
    wide = _lists(collate_padded(Store(DOCS), np.array([0]), pad_id=99, multiple=1))
    assert wide == {"input_ids": [[5, 6, 7]], "attention_mask": [[1, 1, 1]], "lengths": [3]}
