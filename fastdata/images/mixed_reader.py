"""The samples of a mixture of image datasets behind one global index (dataset offset + local index), each
label mapped into the mixture's united classes; each dataset is read by its own SplitReader."""

from __future__ import annotations

import bisect
import dataclasses

from fastdata.errors import ShardError
from fastdata.images.reader import UNLABELED, RawSample, SplitReader
from fastdata.images.shard_memory import MemoryBudget
from fastdata.label_members import label_classes
from fastdata.mixing import MixedView


class MixedReader:
    """SplitReader's interface (len, starts, read, close) over the datasets of a MixedView. A mixture's remote
    datasets keep the shards they have read in the node cache (no `forget`: MixedView has no follower)."""

    def __init__(self, view: MixedView, budget: MemoryBudget | None = None) -> None:
        self._readers = [SplitReader(v, budget) for v in view.views]  # one memory budget for the whole mixture
        self._maps = view.label_maps
        self._offsets: list[int] = []
        self._starts: list[int] = []
        total = 0
        for reader in self._readers:
            self._offsets.append(total)
            self._starts.extend(total + s for s in reader.starts)
            total += len(reader)
        self._len = total

    def __len__(self) -> int:
        return self._len

    @property
    def starts(self) -> list[int]:
        """Global index of the first sample of every shard (the datasets' shards one after the other)."""
        return self._starts

    def read(self, index: int, /) -> RawSample:
        """Sample `index % len(self)`: a mixture numbers the repeats of a sample within an epoch apart
        (Mixture.epoch_items(distinct=True)) so that each draws its own crop and flip."""
        if index < 0:
            raise IndexError(f"sample index {index} is negative")
        index %= self._len
        d = bisect.bisect_right(self._offsets, index) - 1
        raw = self._readers[d].read(index - self._offsets[d])
        label = raw.label
        if label != UNLABELED:
            table = self._maps[d]
            if not all(0 <= c < len(table) for c in label_classes(label)):
                raise ShardError(f"sample {raw.key} in {raw.shard} has label {label}, its manifest lists "
                                 f"{len(table)} classes")
            label = tuple(sorted(int(table[c]) for c in label)) if isinstance(label, tuple) else int(table[label])
        return dataclasses.replace(raw, label=label, index=index)

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
