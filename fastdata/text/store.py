"""Memory-mapped reading of the Arrow token shards of one split: the stored lengths and labels as
arrays, and each sequence's ids as a zero-copy view into the mapped file."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from fastdata.dataset import DatasetView
from fastdata.errors import ShardError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenStore:
    """All sequences of a split. `lengths[i]` is sequence i's token count; `ids(i)` its token ids."""

    lengths: np.ndarray  # int64 [N]
    labels: np.ndarray | None  # int64 [N], None when the corpus has no classes
    segment: np.ndarray  # int32 [N]: which record batch holds sequence i
    start: np.ndarray  # int64 [N]: offset of sequence i in that batch's values
    values: tuple[np.ndarray, ...]  # per record batch: the flat ids (a view into the mapped file)
    tables: tuple[pa.Table, ...]  # keep the mapped tables alive as long as the views

    def __len__(self) -> int:
        return len(self.lengths)

    def ids(self, i: int) -> np.ndarray:
        s = self.start[i]
        return self.values[self.segment[i]][s:s + self.lengths[i]]

    def last_ids(self) -> np.ndarray:
        """The last token of every sequence (-1 for an empty one)."""
        out = np.full(len(self), -1, dtype=np.int64)
        bounds = [0, *(np.flatnonzero(np.diff(self.segment)) + 1).tolist(), len(self)]  # segments are contiguous
        for a, b in zip(bounds, bounds[1:]):
            rows = a + np.flatnonzero(self.lengths[a:b] > 0)
            out[rows] = self.values[self.segment[a]][self.start[rows] + self.lengths[rows] - 1]
        return out


def _read_shard(path: str) -> pa.Table:
    try:
        with pa.ipc.open_stream(pa.memory_map(path, "r")) as reader:
            return reader.read_all()
    except (OSError, pa.ArrowInvalid) as exc:
        raise ShardError(f"cannot read Arrow shard {path}: {exc}; re-run `fastdata convert`") from exc


def open_store(view: DatasetView) -> TokenStore:
    """Map every shard of `view` (opened by `open_dataset`, which has checked the files' presence and size)."""
    lengths, labels, segment, start, values, tables = [], [], [], [], [], []
    view.require_whole_split()
    for ref in view.shards:
        ref = view.local(ref)  # a remote shard is downloaded into the node cache and held there
        table = _read_shard(str(ref.path))
        if table.num_rows != ref.info.samples or "input_ids" not in table.column_names:
            raise ShardError(f"shard {ref.path} holds {table.num_rows} rows with columns {table.column_names}, "
                             f"the manifest says {ref.info.samples} token sequences; re-run `fastdata convert`")
        tables.append(table)
        for batch in table.to_batches():
            ids = batch.column("input_ids")
            offsets = ids.offsets.to_numpy()
            n = len(batch)
            stored = batch.column("length").to_numpy().astype(np.int64)
            if not np.array_equal(np.diff(offsets), stored):
                raise ShardError(f"shard {ref.path}: the length column disagrees with the stored ids")
            lengths.append(stored)
            start.append(offsets[:-1].astype(np.int64))
            segment.append(np.full(n, len(values), dtype=np.int32))
            values.append(ids.values.to_numpy(zero_copy_only=True))
            if "label" in batch.schema.names:
                labels.append(batch.column("label").to_numpy().astype(np.int64))
    if not lengths:
        raise ShardError(f"split {view.split!r} of {view.root} holds no token sequences")
    log.debug("mapped %d shard(s), %d record batches", len(tables), len(values))
    return TokenStore(
        lengths=np.concatenate(lengths), labels=np.concatenate(labels) if labels else None,
        segment=np.concatenate(segment), start=np.concatenate(start), values=tuple(values), tables=tuple(tables),
    )
