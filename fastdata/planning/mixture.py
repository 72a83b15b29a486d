"""Weighted mixing: which items of each dataset an epoch of a mixture takes, as a pure function of
(seed, epoch) and the mixture.

Every dataset d has a measure per item (1 per sample, or its token count when weights are shares of
tokens) and a total S_d. An epoch carries `per_epoch` units, dealt to the datasets by weight with the
largest-remainder rule, so the quotas Q_d are integers that sum to `per_epoch` exactly. Dataset d then
takes `Q_d // S_d` whole passes (each a fresh permutation) and `R_d = Q_d mod S_d` more units:

- a dataset asked for less than it holds (no whole pass) takes them from its *remainder stream*, an endless
  run of permutations whose epoch e covers the items starting in [e * R_d, (e + 1) * R_d): it continues its
  own permutation across epochs, so every item is seen once before any item repeats (the cursor e * R_d is
  computed, not stored, so a resume needs nothing more), and an epoch that straddles two passes holds no
  item twice (see `_rest_pass`);
- a dataset asked for more repeats whole passes and takes the R_d extra units from the start of one more
  fresh permutation, so within one epoch item counts differ by at most 1;
- counted in samples a quota is exact; counted in tokens an epoch's share is exact up to the last sequence,
  and the error never accumulates (epoch e ends at token (e + 1) * R_d of the stream, whatever came before).

The datasets' items are interleaved evenly (item k of a dataset taking m items sits at (k + 0.5) / m), so
any stretch of the epoch holds the datasets in their shares; each kind's planner shuffles from there.
Without weights a mixture is the union: one whole pass of every dataset per epoch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from fastdata.memory_fit import check_epoch_memory

WEIGHT_BY = ("samples", "tokens")
_FULL, _REST = 0, 1  # the two permutation streams of a dataset
_MIX_STREAM = 0x313
Permute = Callable[[int, int, int], np.ndarray]  # (dataset, stream, pass) -> a permutation of its items


def largest_remainder(total: int, weights: Sequence[float]) -> list[int]:
    """Integers proportional to `weights` that sum to `total` exactly (Hamilton's method; ties to the
    earlier dataset)."""
    w = np.asarray(weights, dtype=np.float64)
    try:
        whole = math.fsum(w)
    except OverflowError:  # weights near the largest float: their ratios, from weights scaled to at most 1
        w = w / w.max()
        whole = math.fsum(w)
    share = w / whole * total
    base = np.floor(share).astype(np.int64)
    left = total - int(base.sum())
    order = sorted(range(len(base)), key=lambda d: (-(share[d] - base[d]), d))
    for d in order[:left]:
        base[d] += 1
    return [int(b) for b in base]


def check_weights(weights: Any, count: int) -> tuple[float, ...] | None:
    """`weights` as floats (one positive finite number per dataset), or None."""
    if weights is None:
        return None
    if isinstance(weights, str | bytes) or not isinstance(weights, Sequence) or len(weights) != count:
        raise ValueError(f"weights must be a list of {count} numbers, one per dataset, got {weights!r}")
    out = []
    for w in weights:
        if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w <= 0:
            raise ValueError(f"every weight must be a finite number > 0, got {w!r} in {list(weights)}")
        out.append(float(w))
    return tuple(out)


@dataclass(frozen=True)
class Mixture:
    """Datasets and their weights: `sizes` items each, `measures[d]` the units of each item (None: 1)."""

    sizes: tuple[int, ...]
    weights: tuple[float, ...] | None = None  # None: the union, every item once an epoch
    per_epoch: int | None = None  # units an epoch carries; None: the sum over the datasets
    weight_by: str = "samples"
    measures: tuple[np.ndarray | None, ...] | None = None
    _passes: dict = field(default_factory=dict, compare=False, repr=False, hash=False)  # remainder passes, by dataset

    def __post_init__(self) -> None:
        if self.weight_by not in WEIGHT_BY:
            raise ValueError(f"weight_by={self.weight_by!r} is not allowed; weight_by must be one of {list(WEIGHT_BY)}")
        if not self.sizes or any(n < 1 for n in self.sizes):
            raise ValueError(f"every dataset of a mixture needs at least one item, the sizes are {list(self.sizes)}")
        if self.per_epoch is not None and (not isinstance(self.per_epoch, int) or isinstance(self.per_epoch, bool)
                                           or self.per_epoch < 1):
            raise ValueError(f"the epoch size must be an integer >= 1, got {self.per_epoch!r}")
        if self.per_epoch is not None and self.weights is None:
            raise ValueError("samples_per_epoch / tokens_per_epoch need weights (without them a list is the union, "
                             "every item once an epoch)")
        if any(t < 1 for t in self.totals):
            raise ValueError(f"every dataset of a mixture needs at least one unit of {self.weight_by}, the totals are "
                             f"{list(self.totals)}")
        if self.per_epoch is not None:  # the plan holds every item an epoch draws
            check_epoch_memory(f"{self.weight_by}_per_epoch", self.per_epoch,
                               items_per_unit=1.0 if self.weight_by == "samples" else self.items_per_token())

    def items_per_token(self) -> float:
        """The sequences an epoch draws per token it carries, on average over the datasets' shares."""
        w = np.asarray(self.weights, dtype=np.float64)
        w = w / w.max()
        return float(sum(wd / w.sum() * n / t for wd, n, t in zip(w, self.sizes, self.totals)))

    @property
    def totals(self) -> tuple[int, ...]:
        """S_d: the units each dataset holds."""
        if self.measures is None:
            return self.sizes
        return tuple(n if m is None else int(m.sum()) for n, m in zip(self.sizes, self.measures))

    @cached_property
    def offsets(self) -> np.ndarray:
        """Global id of each dataset's first item (ids are dataset offset + local index)."""
        return np.concatenate([[0], np.cumsum(self.sizes, dtype=np.int64)])

    def quotas(self) -> list[int]:
        """Q_d: the units each dataset contributes to every epoch."""
        if self.weights is None:
            return list(self.totals)
        total = self.per_epoch if self.per_epoch is not None else sum(self.totals)
        return largest_remainder(total, self.weights)

    def describe(self) -> dict[str, Any]:
        """What the order depends on (saved in a loader's state and compared on load)."""
        return {"sizes": list(self.sizes), "weights": None if self.weights is None else list(self.weights),
                "per_epoch": self.per_epoch, "weight_by": self.weight_by, "totals": list(self.totals)}

    def take(self, d: int, epoch: int, permute: Permute) -> np.ndarray:
        """The local indices dataset `d` contributes to `epoch`, in stream order."""
        total, quota = self.totals[d], self.quotas()[d]
        full, rest = divmod(quota, total)
        parts = [permute(d, _FULL, epoch * (full + 1) + j) for j in range(full)]
        if rest and full:  # the extra units: the first ones of one more pass, so no item comes 2 more times
            parts.append(self._prefix(d, permute(d, _FULL, epoch * (full + 1) + full), rest))
        elif rest:
            parts.append(self._remainder(d, epoch, rest, permute))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def _prefix(self, d: int, order: np.ndarray, units: int) -> np.ndarray:
        """The items of `order` starting within its first `units` units."""
        return order[self._starts(d, order) < units]

    def _remainder(self, d: int, epoch: int, rest: int, permute: Permute) -> np.ndarray:
        """The items of the remainder stream starting in [epoch * rest, (epoch + 1) * rest) units."""
        total = self.totals[d]
        lo, hi = epoch * rest, (epoch + 1) * rest
        parts = []
        for p in range(lo // total, (hi - 1) // total + 1):
            order = self._rest_pass(d, p, rest, permute)
            starts = p * total + self._starts(d, order)
            parts.append(order[(starts >= lo) & (starts < hi)])
        return np.concatenate(parts)

    def _rest_pass(self, d: int, p: int, rest: int, permute: Permute) -> np.ndarray:
        """Pass `p` of dataset `d`'s remainder stream. An epoch that straddles two passes takes the tail of one
        and the head of the next; so that it holds no item twice, each pass puts the items of its predecessor's
        straddling tail last (in its own random order otherwise). A pass thus depends on the one before it:
        they are computed in order, the last two kept (a resume far into training computes the passes its
        dataset has gone through, about as much work as planning those epochs)."""
        cache = self._passes.setdefault(d, {})
        if p not in cache:
            below = [q for q in cache if q < p]
            q = max(below) if below else 0
            order = cache[q] if below else permute(d, _REST, 0)
            while q < p:
                q += 1
                order = self._next_pass(d, q, order, rest, permute)
            for old in [k for k in cache if k < p - 1]:
                del cache[old]
            cache[p] = order
        return cache[p]

    def _next_pass(self, d: int, p: int, previous: np.ndarray, rest: int, permute: Permute) -> np.ndarray:
        order = permute(d, _REST, p)
        total = self.totals[d]
        begin = p * total
        window = begin // rest * rest  # the first position of the epoch that holds the pass's first item
        if window == begin:
            return order
        tail = previous[(p - 1) * total + self._starts(d, previous) >= window]
        late = np.isin(order, tail)
        return np.concatenate([order[~late], order[late]])

    def _starts(self, d: int, order: np.ndarray) -> np.ndarray:
        """Where each item of a pass in `order` starts, in units from the pass's start."""
        if self.measures is None or self.measures[d] is None:
            return np.arange(len(order), dtype=np.int64)
        return np.concatenate([[0], np.cumsum(self.measures[d][order], dtype=np.int64)[:-1]])

    def epoch_items(self, epoch: int, permute: Permute, *, distinct: bool = False) -> np.ndarray:
        """Global ids of every item of `epoch`, the datasets interleaved evenly. With `distinct`, the k-th
        occurrence of an item in the epoch (a dataset asked for more than it holds) is numbered
        `k * total + id` (total: the items of all datasets), so that per-sample random draws differ between
        repeats; `id % total` is the item."""
        offsets, n = self.offsets, int(self.offsets[-1])
        ids, keys = [], []
        for d in range(len(self.sizes)):
            local = self.take(d, epoch, permute).astype(np.int64) + offsets[d]
            if distinct and len(local) > self.sizes[d]:
                local = local + self._occurrences(local) * n
            ids.append(local)
            keys.append((np.arange(len(local)) + 0.5) / max(len(local), 1))
        key = np.concatenate(keys)
        owner = np.concatenate([np.full(len(x), d) for d, x in enumerate(ids)])
        return np.concatenate(ids)[np.lexsort((owner, key))]

    @staticmethod
    def _occurrences(ids: np.ndarray) -> np.ndarray:
        """For each position, how many times its id came before it (0 for a first occurrence)."""
        order = np.argsort(ids, kind="stable")
        ranked = ids[order]
        first = np.flatnonzero(np.concatenate([[True], ranked[1:] != ranked[:-1]]))
        run_start = np.repeat(first, np.diff(np.concatenate([first, [len(ids)]])))
        out = np.empty(len(ids), dtype=np.int64)
        out[order] = np.arange(len(ids)) - run_start
        return out

    def dataset_of(self, ids: np.ndarray) -> np.ndarray:
        """The dataset each global id belongs to (-1 stays -1: a padding row; distinct ids are reduced). Called
        for every batch: one searchsorted when every id is a plain one."""
        ids = np.asarray(ids, dtype=np.int64)
        total = int(self.offsets[-1])
        if ids.size and (ids.min() < 0 or ids.max() >= total):
            ids = np.where(ids < 0, ids, ids % total)
            return np.where(ids < 0, -1, np.searchsorted(self.offsets, ids, side="right") - 1)
        return np.searchsorted(self.offsets, ids, side="right") - 1


def random_permute(seed: int, sizes: Sequence[int]) -> Permute:
    """The default permutation of a dataset's items: numpy's, seeded by (seed, dataset, stream, pass)."""
    sizes = tuple(sizes)

    @lru_cache(maxsize=4)  # a permutation is as large as its dataset: keep few
    def permute(d: int, stream: int, p: int) -> np.ndarray:
        return np.random.default_rng([seed, d, stream, p, _MIX_STREAM]).permutation(sizes[d])

    return permute
