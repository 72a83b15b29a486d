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
    store.check_vocabulary(ids, index.tolist())
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
    t = rows.astype(np.int64)[:, None] * block_size + np.arange(block_size)[None, :]  # stream offsets
    valid = t < stream.total
    t = np.where(valid, t, 0)
    k = np.searchsorted(stream.begins, t, side="right") - 1  # which document (position in stream order)
    k0, k1 = int(k[valid].min()), int(k[valid].max()) + 1
    eos = np.array([stream.eos_id], dtype=np.int64)
    parts: list[np.ndarray] = []
    for j in range(k0, k1):
        parts.append(store.ids(int(stream.order[j])))
        if stream.append_eos[j]:
            parts.append(eos)
    flat = np.concatenate(parts).astype(np.int64)
    store.check_vocabulary(flat, (int(stream.order[j]) for j in range(k0, k1)))
    ids = np.where(valid, flat[np.where(valid, t - stream.begins[k0], 0)], pad_id)
    pos = np.where(valid, t - stream.begins[k], 0)
    new = np.ones_like(valid)
    new[:, 1:] = k[:, 1:] != k[:, :-1]
    new &= valid
    doc = np.where(valid, new.astype(np.int64).cumsum(axis=1), 0)
    cu = np.concatenate([np.flatnonzero(new.ravel()), [int(valid.sum())]]).astype(np.int64)
    return {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(valid.astype(np.int64)),
            "position_ids": torch.from_numpy(pos.astype(np.int64)), "document_ids": torch.from_numpy(doc),
            "lengths": torch.from_numpy(valid.sum(1).astype(np.int64)), "cu_seqlens": torch.from_numpy(cu)}
