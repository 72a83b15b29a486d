"""Random access to the samples of one split: `.tar` shards through their `.idx`, Arrow shards validated at open.

Tar shards are read with `os.pread` at the offsets the DALI index records (no tar parsing, nothing
extracted to disk, no shared file position, so reads from many threads share one descriptor). The
descriptors of recently read shards are kept open (`file_handles.py`, a few dozen at most) so a sample
does not cost an open/close (cheap on a local disk, a metadata round trip on network filesystems). Arrow IPC
stream shards are validated at open and their sample bytes read with `pread` as well (`arrow_file.py`). No
shard is read through a memory map of its file: a file truncated in place gives a ShardError, not SIGBUS. With
a memory budget (`memory_cache`), tar shards that fit keep the bytes of each sample read once in the loader's own
memory, and later epochs read them there (`shard_memory.py`).
Nothing is ever unpickled or executed. A sample is addressed by its global index in the split (shards in
manifest order, samples in shard order).
"""

from __future__ import annotations

import bisect
import functools
import os
import threading
from dataclasses import dataclass
from operator import add
from pathlib import Path

import numpy as np

from fastdata.arrow_file import ArrowFile, BinaryColumn
from fastdata.dataset import DatasetView, ShardRef
from fastdata.errors import ShardError
from fastdata.gc_paused import gc_paused
from fastdata.images.file_handles import FileHandles
from fastdata.images.shard_memory import MemoryBudget, ShardMemory
from fastdata.label_members import LabelRule
from fastdata.shard_columns import check_image_columns, check_shard, image_bytes_field
from fastdata.wds_index import Member, parse_index, sample_key

UNLABELED = -1  # the label of every sample of a dataset without classes
CLS_LABELS = LabelRule("cls")  # a converted dataset's labels: a class index in each sample's cls member


@dataclass(frozen=True)
class RawSample:
    """The encoded image of one sample and where it came from (for error messages)."""

    data: bytes | memoryview
    label: int
    key: str
    shard: Path
    extra: tuple[bytes, ...] = ()  # the dataset's extra members (image_text: the captions, token ids), in order
    index: int = -1  # global index in the split (set by SplitReader)
    # the plan's id of this read where it is not `index`: k * N + index for the k-th repeat of a sample in an epoch
    # (weighted sampling, a mixture's repeats), set by the Preparer; a repeat draws its own caption with it
    drawn: int = -1


class TarShard:
    """One WebDataset `.tar` shard, read through the offsets of its `.idx` file.

    The index is kept compact (numpy arrays: 32 bytes per sample plus the key); the descriptor comes
    from `handles` (shared by the shards of a split, so thousands of shards hold a bounded number).
    A sample's image is its first member among `image_members`; its label the member `label_rule` names, read by
    that rule (an integer in ASCII, a class name, a json member's field: label_members.py), or UNLABELED when the
    dataset has none (`label_rule` None); `extra_members` (image_text: the captions
    and token ids) are read with the image, in the same `pread` when they are adjacent. When `budget` has room
    for the whole file, the shard reserves it and keeps each sample read in memory (`shard_memory.py`).
    """

    def __init__(self, ref: ShardRef, handles: FileHandles | None = None, *,
                 image_members: tuple[str, ...] = ("jpg",), label_rule: LabelRule | None = CLS_LABELS,
                 extra_members: tuple[str, ...] = (), budget: MemoryBudget | None = None) -> None:
        self.path, self._remedy = ref.path, ref.remedy
        self._label_rule = label_rule
        self._handles = handles if handles is not None else FileHandles(capacity=1)
        self._image_members = image_members
        self._label_member = label_rule.member if label_rule is not None else None
        self._extra_members = extra_members
        idx = ref.index_path
        if idx is None:
            raise ShardError(f"shard {self.path} has no index in the manifest; {self._remedy}")
        try:
            text = idx.read_text(encoding="utf-8")
            size = os.path.getsize(self.path)
        except FileNotFoundError as exc:
            raise ShardError(f"{exc.filename} is missing (shard {self.path}); {self._remedy}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise ShardError(f"cannot read index {idx} of shard {self.path}: {exc}") from exc
        with gc_paused():  # a tuple or two a sample: the collector would walk every object many times over
            parsed = [self._spans(sample, size) for sample in parse_index(text, where=f"index {idx}")]
            if len(parsed) != ref.info.samples:
                raise ShardError(f"index {idx} lists {len(parsed)} samples, the manifest says "
                                 f"{ref.info.samples} for {self.path}; {self._remedy}")
            self._keys = np.array([p[0] for p in parsed], dtype=str)
            width = 4 + 2 * len(extra_members)
            self._spans_arr = np.array([p[1:] for p in parsed], dtype=np.int64).reshape(-1, width)  # (offset, length)s
        self._budget = budget if budget is not None and budget.take(size) else None
        self._memory = ShardMemory(size, len(parsed)) if self._budget is not None else None

    def _spans(self, sample: tuple[Member, ...], size: int) -> tuple[str | int, ...]:
        """(key, then offset and length of: the image, the label, each extra member)."""
        key = sample_key(sample)
        members = {m.ext: m for m in sample}
        image = next((members[e] for e in self._image_members if e in members), None)
        label = members.get(self._label_member) if self._label_member else None
        extras = [members.get(e) for e in self._extra_members]
        if image is None or (self._label_member and label is None) or None in extras:
            want = ([" or ".join(self._image_members)] + ([self._label_member] if self._label_member else [])
                    + list(self._extra_members))
            raise ShardError(f"sample {key} in {self.path} has members {sorted(members)}; it needs {want}")
        end = max(image.end, label.end if label else 0, *(m.end for m in extras))
        if end > size:
            raise ShardError(f"shard {self.path} is truncated: sample {key} ends at byte {end}, the file "
                             f"has {size} bytes; {self._remedy} or restore the file")
        spans = [key, image.offset, image.size, *((label.offset, label.size) if label else (image.offset, 0))]
        for m in extras:
            spans.extend((m.offset, m.size))
        return tuple(spans)

    def __len__(self) -> int:
        return len(self._keys)

    def key(self, i: int) -> str:
        """Sample `i`'s key."""
        return str(self._keys[i])

    def read(self, i: int, /, index: int = -1) -> RawSample:
        """Sample `i`: its image, label and extra members, in one `pread` when they lie together (as every
        converted or img2dataset shard has them), else one read each."""
        key = str(self._keys[i])
        row = self._spans_arr[i].tolist()  # offset, length of the image, the label, each extra member
        offs, lens = row[0::2], row[1::2]  # a missing label is an empty span at the image: no bytes, no reach
        ends = list(map(add, offs, lens))  # map and slices, no generators: this runs under the GIL that
        lo, hi = min(offs), max(ends)  # the decode threads share, for every sample
        adjacent = hi - lo <= sum(lens) + 4096 * (len(lens) - 1)  # one read for all members
        memory = self._memory if adjacent else None
        if memory is not None and memory.filled[i]:  # read before: no system call
            view = memory.view[lo:hi]
            return self._sample([view[o - lo:e - lo] for o, e in zip(offs, ends)], key, index)
        try:
            fd = self._handles.acquire(self.path)
        except OSError as exc:
            raise ShardError(f"cannot open shard {self.path} (sample {key}): {exc}") from exc
        try:
            if memory is not None:
                short = not memory.fill(fd, lo, hi)
                view = memory.view[lo:hi]
                parts = [view[o - lo:e - lo] for o, e in zip(offs, ends)]
            elif adjacent:
                view = memoryview(os.pread(fd, hi - lo, lo))
                short = len(view) != hi - lo  # every member lies within [lo, hi)
                parts = [view[o - lo:e - lo] for o, e in zip(offs, ends)]
            else:
                parts = [memoryview(os.pread(fd, n, o)) for o, n in zip(offs, lens)]
                short = list(map(len, parts)) != lens
        finally:
            self._handles.release(self.path)
        if short:
            raise ShardError(f"shard {self.path} is truncated at sample {key}; {self._remedy}")
        sample = self._sample(parts, key, index)  # the label checked before the span counts as read
        if memory is not None:
            memory.filled[i] = 1
        return sample

    def _sample(self, parts: list[memoryview], key: str, index: int) -> RawSample:
        label = UNLABELED if self._label_rule is None else self._label_rule.parse(bytes(parts[1]), key=key,
                                                                                  shard=self.path)
        return RawSample(data=parts[0], label=label, key=key, shard=self.path,
                         extra=tuple(map(bytes, parts[2:])) if len(parts) > 2 else (), index=index)

    def labels(self) -> np.ndarray:
        """The label of every sample (UNLABELED without a label member), read from the label members alone; of a
        multi-label dataset, an object array of the tuples of class indices."""
        rule = self._label_rule
        if rule is None:
            return np.full(len(self), UNLABELED, dtype=np.int64)
        out = np.empty(len(self), dtype=object if rule.multi else np.int64)  # multi: a tuple of classes a sample
        try:
            fd = self._handles.acquire(self.path)
        except OSError as exc:
            raise ShardError(f"cannot open shard {self.path}: {exc}") from exc
        try:
            with gc_paused():  # a list of spans and a bytes object a sample
                for i, (offset, size) in enumerate(self._spans_arr[:, 2:4].tolist()):
                    data = os.pread(fd, size, offset)
                    if len(data) != size:
                        raise ShardError(f"shard {self.path} is truncated at sample {self._keys[i]}; "
                                         f"{self._remedy}")
                    out[i] = rule.parse(data, key=str(self._keys[i]), shard=self.path)
        finally:
            self._handles.release(self.path)
        return out

    @property
    def in_memory(self) -> bool:
        """Whether this shard keeps the samples it has read in memory."""
        return self._memory is not None

    def close(self) -> None:
        """Give the shard's memory back to the budget (samples already handed out keep theirs alive); the
        descriptor belongs to `handles`, closed by its owner."""
        budget, memory, self._budget, self._memory = self._budget, self._memory, None, None
        if budget is not None and memory is not None:
            budget.give(memory.size)


class ArrowShard:
    """One Arrow IPC stream shard (columns key, image{bytes, path}, label): its columns and values checked at open
    (shard_columns.py), image bytes read with pread (arrow_file.py), keys and labels copied at open."""

    def __init__(self, ref: ShardRef, *, classes: int, multi: bool = False) -> None:
        self.path = ref.path
        self._file = ArrowFile(self.path)
        self._starts: list[int] = []
        self._images: list[BinaryColumn] = []
        self._labels: list[np.ndarray] = []  # multi (--multi-label): object arrays of tuples of class indices
        self._keys: list[list[str]] = []
        check_shard(self._file.batches, self.path, check=functools.partial(check_image_columns, multi=multi),
                    classes=classes)
        total = 0
        for batch in self._file.batches:
            self._starts.append(total)
            image = batch.column("image")
            self._images.append(BinaryColumn(self._file, image.flatten()[image_bytes_field(image.type)]))
            if multi:
                rows = np.empty(batch.num_rows, dtype=object)
                rows[:] = [tuple(row) for row in batch.column("labels").to_pylist()]
                self._labels.append(rows)
            else:
                self._labels.append(batch.column("label").to_numpy(zero_copy_only=False).astype(np.int64)
                                    if classes else np.full(batch.num_rows, UNLABELED, dtype=np.int64))
            self._keys.append(batch.column("key").to_pylist())
            total += batch.num_rows
        if total != ref.info.samples:
            raise ShardError(f"shard {self.path} holds {total} rows, the manifest says {ref.info.samples}; "
                             "re-run `fastdata convert` or restore the file")
        self._len = total

    def __len__(self) -> int:
        return self._len

    def read(self, i: int, /, index: int = -1) -> RawSample:
        b = bisect.bisect_right(self._starts, i) - 1
        row = i - self._starts[b]
        key = self._keys[b][row]
        data = self._images[b].read(row)
        if not data:
            raise ShardError(f"sample {key} in {self.path} has no image bytes")
        label = self._labels[b][row]
        return RawSample(data=memoryview(data), label=label if isinstance(label, tuple) else int(label), key=key,
                         shard=self.path, index=index)

    def labels(self) -> np.ndarray:
        """The label of every row (UNLABELED without classes; multi: an object array of tuples)."""
        return np.concatenate(self._labels) if self._labels else np.zeros(0, dtype=np.int64)

    def close(self) -> None:
        self._file.close()


class SplitReader:
    """All shards of one split behind one global index; shards are opened lazily and thread-safely.

    For a remote dataset a shard is downloaded into the node cache when first read (`view.local`) and
    given back by `forget(s)` once the plan is past it."""

    def __init__(self, view: DatasetView, budget: MemoryBudget | None = None) -> None:
        self._view = view
        self._budget = budget  # tar shards that fit keep what they read in memory (None: pread every time)
        self._refs = view.shards
        self._shard_type = ArrowShard if view.manifest.shard_format == "arrow" else TarShard
        self._image_members = view.manifest.image_members
        self._label_rule = view.manifest.label_rule
        self._extra_members = view.manifest.extra_members
        self._classes = len(view.manifest.classes)
        self._starts: list[int] = []
        total = 0
        for ref in self._refs:
            self._starts.append(total)
            total += ref.info.samples
        self._len = total
        self._open: dict[int, TarShard | ArrowShard] = {}
        self._lock = threading.Lock()
        self._opening: dict[int, threading.Lock] = {}  # one per shard: shards open (and download) in parallel
        self._handles = FileHandles()

    def __len__(self) -> int:
        return self._len

    @property
    def starts(self) -> list[int]:
        """Global index of the first sample of every shard."""
        return self._starts

    def _shard(self, s: int) -> TarShard | ArrowShard:
        shard = self._open.get(s)
        if shard is not None:
            return shard
        with self._lock:
            opening = self._opening.setdefault(s, threading.Lock())
        with opening:
            shard = self._open.get(s)
            if shard is None:
                ref = self._view.local(self._refs[s])
                shard = (TarShard(ref, self._handles, image_members=self._image_members,
                                  label_rule=self._label_rule, extra_members=self._extra_members,
                                  budget=self._budget)
                         if self._shard_type is TarShard else ArrowShard(ref, classes=self._classes,
                                                                          multi=self._view.manifest.multi_label))
                self._open[s] = shard
        return shard

    def read(self, index: int, /) -> RawSample:
        """Sample `index % len(self)`: weighted sampling numbers the repeats of a sample within an epoch apart
        (planning/weights.py) so that each draws its own crop and flip."""
        if index < 0 or not self._len:
            raise IndexError(f"sample index {index} out of range 0..{self._len - 1}")
        index %= self._len
        s = bisect.bisect_right(self._starts, index) - 1
        return self._shard(s).read(index - self._starts[s], index)

    def labels(self) -> np.ndarray:
        """The label of every sample of the split, in global index order (each shard's label members read; for a
        remote dataset every shard is fetched); ShardError for a label outside the manifest's classes, as the
        loaders' reads give."""
        if self._view.manifest.multi_label:
            return self._multi_hot()
        parts = []
        for s in range(len(self._refs)):
            shard = self._shard(s)
            part = shard.labels()
            bad = np.flatnonzero((part < 0) | (part >= self._classes)) if self._classes else ()
            if len(bad) and isinstance(shard, TarShard):  # an Arrow shard's labels are checked when it opens
                raise ShardError(f"sample {shard.key(int(bad[0]))} in {shard.path} has label {part[bad[0]]}, the "
                                 f"manifest lists {self._classes} classes")
            parts.append(part)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def _multi_hot(self) -> np.ndarray:
        """A multi-label dataset's labels: uint8 [samples, classes], 1 for each class of a sample."""
        out = np.zeros((self._len, self._classes), dtype=np.uint8)
        for s, start in enumerate(self._starts):
            shard = self._shard(s)
            for i, classes in enumerate(shard.labels().tolist()):
                if not all(0 <= c < self._classes for c in classes):
                    raise ShardError(f"sample {shard.key(i)} in {shard.path} has labels {list(classes)}, the "
                                     f"manifest lists {self._classes} classes")
                out[start + i, list(classes)] = 1
        return out

    def forget(self, s: int) -> None:
        """Shard `s` is not needed for now: close it and give it back to the cache (read again: reopened)."""
        with self._lock:
            shard = self._open.pop(s, None)
        if shard is not None:
            shard.close()
            self._handles.drop(shard.path)
            self._view.release(self._refs[s])

    def close(self) -> None:
        with self._lock:
            for shard in self._open.values():
                shard.close()
            self._open.clear()
        self._handles.close()
