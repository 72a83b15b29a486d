"""Build batches from a TokenStore: padded sequences, or packed rows with document boundaries.

Collation is numpy slicing into a preallocated array (no per-token Python work); the result is a
dict of int64 tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fastdata.text.plan import padded
from fastdata.text.store import TokenStore


def collate_padded(store: TokenStore, index: np.ndarray, *, pad_id: int, multiple: int) -> dict[str, torch.Tensor]:
    """input_ids [B, L] (pad_id after each sequence), attention_mask [B, L], lengths [B] (+ labels [B]);
    L is the longest length rounded up to `multiple`."""
    lengths = store.lengths[index]
    width = padded(int(lengths.max()), multiple)
    ids = np.full((len(index), width), pad_id, dtype=np.int64)
    for row, i in enumerate(index.tolist()):
        n = store.lengths[i]
        ids[row, :n] = store.ids(i)
    mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
    out = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask),
           "lengths": torch.from_numpy(lengths.astype(np.int64))}
    if store.labels is not None:
        out["labels"] = torch.from_numpy(store.labels[index])
    return out


@dataclass(frozen=True)
class PackedStream:
    """One epoch's documents in order, each followed by EOS unless it already ends with it,
    as one virtual token stream cut into rows of `block_size`."""

    order: np.ndarray  # document indices in stream order
    sizes: np.ndarray  # tokens each contributes (length + appended EOS)
    begins: np.ndarray  # stream offset where each starts (len(order) + 1 entries, last = total)
    append_eos: np.ndarray  # bool per position in `order`
    eos_id: int

    @classmethod
    def build(cls, store: TokenStore, order: np.ndarray, *, eos_id: int, last_ids: np.ndarray) -> PackedStream:
        append = last_ids[order] != eos_id
        sizes = store.lengths[order] + append
        begins = np.concatenate([[0], np.cumsum(sizes)])
        return cls(order=order, sizes=sizes, begins=begins, append_eos=append, eos_id=eos_id)

    @property
    def total(self) -> int:
        return int(self.begins[-1])


def collate_packed(store: TokenStore, stream: PackedStream, rows: np.ndarray, *, block_size: int,
                   pad_id: int) -> dict[str, torch.Tensor]:
    """input_ids / attention_mask / position_ids / document_ids [B, block_size], lengths [B] and
    cu_seqlens [D + 1] (flattened document boundaries, padding excluded; padding only ever ends a
    batch). position_ids count from 0 at each document start; document_ids number the pieces of
    documents within a row from 1 (0 = padding)."""
    b = len(rows)
    ids = np.full((b, block_size), pad_id, dtype=np.int64)
    pos = np.zeros((b, block_size), dtype=np.int64)
    doc = np.zeros((b, block_size), dtype=np.int64)
    used = np.zeros(b, dtype=np.int64)
    pieces: list[int] = []
    for r, row in enumerate(rows.tolist()):
        lo, hi = row * block_size, min((row + 1) * block_size, stream.total)
        k = int(np.searchsorted(stream.begins, lo, side="right")) - 1
        at, piece = lo, 0
        while at < hi:
            d = int(stream.order[k])
            begin = int(stream.begins[k])
            stop = min(hi, int(stream.begins[k + 1]))
            a, z = at - begin, stop - begin  # [a, z) within this document (+ its EOS)
            n = int(store.lengths[d])
            c0 = at - lo
            real = store.ids(d)[a:min(z, n)]
            ids[r, c0:c0 + len(real)] = real
            if z > n:  # the appended EOS falls in this row
                ids[r, c0 + len(real)] = stream.eos_id
            pos[r, c0:c0 + z - a] = np.arange(a, z)
            piece += 1
            doc[r, c0:c0 + z - a] = piece
            pieces.append(z - a)
            at, k = stop, k + 1
        used[r] = hi - lo
    mask = (np.arange(block_size)[None, :] < used[:, None]).astype(np.int64)
    cu = np.concatenate([[0], np.cumsum(pieces)]).astype(np.int64)
    return {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask),
            "position_ids": torch.from_numpy(pos), "document_ids": torch.from_numpy(doc),
            "lengths": torch.from_numpy(used), "cu_seqlens": torch.from_numpy(cu)}
