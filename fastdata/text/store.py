"""Memory-mapped reading of the Arrow token shards of one split: the stored lengths and labels as
arrays, and each sequence's ids as a zero-copy view into the mapped file."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from fastdata.arrow_file import ArrowFile, BinaryColumn
from fastdata.dataset import DatasetView
from fastdata.errors import ShardError
from fastdata.shard_columns import check_shard, check_token_columns
from fastdata.text.tokenizer import outside_vocabulary

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenStore:
    """All sequences of a split. `lengths[i]` is sequence i's token count; `ids(i)` its token ids, read with
    pread from the validated shard (arrow_file.py), so a shard changed under the loader is an error, never a
    signal, and a forged offset never reads outside its buffer."""

    lengths: np.ndarray  # int64 [N]
    labels: np.ndarray | None  # int64 [N], None when the corpus has no classes
    segment: np.ndarray  # int32 [N]: which record batch holds sequence i
    start: np.ndarray  # int64 [N]: position of sequence i in that batch's ids
    columns: tuple[BinaryColumn, ...]  # per record batch: where its ids lie in the shard file
    dtypes: tuple[np.dtype, ...]  # per record batch: the dtype of its ids
    files: tuple[ArrowFile, ...]  # keep the shards open as long as the store
    vocab_size: int | None = None  # the tokenizer's, from the manifest: each batch's ids are checked against it

    def __len__(self) -> int:
        return len(self.lengths)

    def ids(self, i: int) -> np.ndarray:
        col = self.columns[self.segment[i]]
        start, n = int(self.start[i]), int(self.lengths[i])
        data = col.file.read(col.data_offset + start * col.itemsize, n * col.itemsize)
        return np.frombuffer(data, dtype=self.dtypes[self.segment[i]])

    def check_vocabulary(self, batch: np.ndarray, sequences: Iterable[int]) -> None:
        """A ShardError naming the shard of the first of `sequences` that holds an id outside the tokenizer's
        vocabulary, when `batch` (their ids, padding included) holds one: one reduction per batch, not per sequence
        (a forged or damaged shard's id would otherwise index past the model's embedding table)."""
        if outside_vocabulary(batch, self.vocab_size) is None:
            return
        for i in sequences:
            bad = outside_vocabulary(self.ids(i), self.vocab_size)
            if bad is not None:
                path = self.columns[self.segment[i]].file.path
                raise ShardError(f"shard {path}: a sequence holds token id {bad}, outside the tokenizer's vocabulary "
                                 f"(0..{self.vocab_size - 1}) in the manifest; re-run `fastdata convert`")

    def class_labels(self) -> np.ndarray:
        """Every sequence's class, -1 each for a corpus without classes (sample_weights='balanced',
        fastdata.sample_labels)."""
        return self.labels if self.labels is not None else np.full(len(self), -1, dtype=np.int64)

    def last_ids(self) -> np.ndarray:
        """The last token of every sequence (-1 for an empty one)."""
        out = np.full(len(self), -1, dtype=np.int64)
        for i in np.flatnonzero(self.lengths > 0):
            out[i] = int(self.ids(int(i))[-1])
        return out


def open_store(view: DatasetView) -> TokenStore:
    """Open every shard of `view` (opened by `open_dataset`, which has checked the files' presence and size)."""
    lengths, labels, segment, start, columns, dtypes, files = [], [], [], [], [], [], []
    view.require_whole_split()
    classes = len(view.manifest.classes)
    for ref in view.shards:
        ref = view.local(ref)  # a remote shard is downloaded into the node cache and held there
        file = ArrowFile(ref.path)
        files.append(file)
        rows = sum(b.num_rows for b in file.batches)
        names = file.batches[0].schema.names if file.batches else []
        if rows != ref.info.samples:
            raise ShardError(f"shard {ref.path} holds {rows} rows with columns {names}, the manifest says "
                             f"{ref.info.samples} token sequences; re-run `fastdata convert`")
        check_shard(file.batches, ref.path, check=check_token_columns, classes=classes)
        for batch in file.batches:
            ids = batch.column("input_ids")
            col = BinaryColumn(file, ids)
            n = len(batch)
            stored = batch.column("length").to_numpy(zero_copy_only=False).astype(np.int64)
            if not np.array_equal(np.diff(col.offsets), stored) or (stored < 0).any():
                raise ShardError(f"shard {ref.path}: the length column disagrees with the stored ids")
            lengths.append(stored)
            start.append(col.offsets[:-1].copy())
            segment.append(np.full(n, len(columns), dtype=np.int32))
            columns.append(col)
            dtypes.append(_numpy_dtype(ids.type.value_type))
            if "label" in batch.schema.names:
                labels.append(batch.column("label").to_numpy(zero_copy_only=False).astype(np.int64))
    if not lengths:
        raise ShardError(f"split {view.split!r} of {view.root} holds no token sequences")
    log.debug("opened %d shard(s), %d record batches", len(files), len(columns))
    return TokenStore(
        lengths=np.concatenate(lengths), labels=np.concatenate(labels) if labels else None,
        segment=np.concatenate(segment), start=np.concatenate(start), columns=tuple(columns), dtypes=tuple(dtypes),
        files=tuple(files), vocab_size=view.manifest.vocab_size,
    )


def merge_stores(stores: list[TokenStore], label_maps: tuple[np.ndarray, ...]) -> TokenStore:
    """The stores of a mixture's datasets as one (sequence ids: dataset offset + index), each label mapped into
    the mixture's united classes."""
    labels = None
    if all(s.labels is not None for s in stores):
        parts = []
        for s, table in zip(stores, label_maps):
            if len(s.labels) and (s.labels.min() < 0 or s.labels.max() >= len(table)):
                raise ShardError(f"a label of {s.files[0].path} lies outside its manifest's {len(table)} classes")
            parts.append(table[s.labels])
        labels = np.concatenate(parts)
    segments, base = [], 0
    for s in stores:
        segments.append(s.segment + base)
        base += len(s.columns)
    return TokenStore(lengths=np.concatenate([s.lengths for s in stores]), labels=labels,
                      segment=np.concatenate(segments).astype(np.int32),
                      start=np.concatenate([s.start for s in stores]),
                      columns=tuple(c for s in stores for c in s.columns),
                      dtypes=tuple(d for s in stores for d in s.dtypes),
                      files=tuple(f for s in stores for f in s.files),
                      vocab_size=min((s.vocab_size for s in stores if s.vocab_size is not None), default=None))


def _numpy_dtype(arrow_type: pa.DataType) -> np.dtype:
    """The numpy dtype of an integer Arrow type. Not `to_pandas_dtype()`: older pyarrow (14, tested) imports pandas
    for it, which fastdata does not need (a token loader without pandas failed there)."""
    return pa.array([], type=arrow_type).to_numpy().dtype
