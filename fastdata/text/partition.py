"""The least padding for a window of sequences sorted by length: an exact partition into as few batches as
the greedy cut makes.

Cutting a sorted window greedily (fill each batch until the next sequence would break the budget) gives the
fewest batches, but not the least padding: its batches end where the budget runs out, not where the lengths
jump. Among all ways to cut the same sorted window into that same number of consecutive batches, each under
the budget (count * padded(longest) <= max_tokens, count <= batch_size), `exact_cut` returns one with the
fewest padded slots, by dynamic programming over the batch boundaries.

The search is small because the number of batches is the minimum: the k-th boundary of any such partition
lies between where a greedy cut from the right puts it and where the greedy cut from the left does, a
window no wider than one batch. Each step is one vectorised (previous boundary x next boundary) table.
"""

from __future__ import annotations

import numpy as np

from fastdata.text.plan import cut, padded

_TABLE = 1 << 22  # table cells per numpy step (~32 MiB of float64); larger steps are cut in column chunks


def _max_counts(slots: np.ndarray, *, max_tokens: int | None, batch_size: int | None) -> np.ndarray:
    """counts[j]: the most sequences a batch ending at sequence j (its longest) may hold (at least 1)."""
    n = len(slots)
    counts = np.full(n, n if batch_size is None else batch_size, dtype=np.int64)
    if max_tokens is not None:  # empty sequences take no slots: only batch_size bounds them, as in cut()
        counts = np.minimum(counts, np.where(slots > 0, max_tokens // np.maximum(slots, 1), n))
    return np.maximum(counts, 1)


def _leftmost_bounds(counts: np.ndarray, batches: int) -> np.ndarray:
    """Boundary k (0..batches) as far left as it can be: a greedy cut from the right end."""
    bounds = np.zeros(batches + 1, dtype=np.int64)
    j = len(counts)
    for k in range(batches, 0, -1):
        bounds[k] = j
        j = max(j - int(counts[j - 1]), 0)
    bounds[0] = 0
    return bounds


def exact_cut(window: np.ndarray, lengths: np.ndarray, *, max_tokens: int | None, batch_size: int | None,
              multiple: int) -> list[np.ndarray]:
    """`window` (sequence indices sorted by length, ascending) cut into as many consecutive batches as
    `cut` makes, with the fewest padded slots; ties go to the earliest boundary, so the result is a pure
    function of the window."""
    greedy = cut(window, lengths, max_tokens=max_tokens, batch_size=batch_size, multiple=multiple)
    batches = len(greedy)
    if batches <= 1:
        return greedy
    slots = padded(lengths[window].astype(np.int64), multiple)
    counts = _max_counts(slots, max_tokens=max_tokens, batch_size=batch_size)
    hi = np.concatenate([[0], np.cumsum([len(b) for b in greedy])])
    lo = np.maximum(_leftmost_bounds(counts, batches), np.arange(batches + 1))
    best = np.zeros(1)  # best[i]: least slots to cover the window up to boundary lo[k-1] + i in k-1 batches
    choice: list[np.ndarray] = []
    for k in range(1, batches + 1):
        prev = np.arange(lo[k - 1], hi[k - 1] + 1)
        ends = np.arange(lo[k], hi[k] + 1)
        here = np.empty(len(ends))
        came = np.empty(len(ends), dtype=np.int64)
        step = max(1, _TABLE // len(prev))
        for c in range(0, len(ends), step):
            j = ends[c:c + step]
            size = j[None, :] - prev[:, None]
            cost = best[:, None] + size * slots[j - 1][None, :]
            cost[(size < 1) | (size > counts[j - 1][None, :])] = np.inf
            arg = np.argmin(cost, axis=0)
            here[c:c + step] = cost[arg, np.arange(len(j))]
            came[c:c + step] = prev[arg]
        best = here
        choice.append(came)
    bounds = [len(window)]
    for k in range(batches, 0, -1):
        bounds.append(int(choice[k - 1][bounds[-1] - lo[k]]))
    bounds.reverse()
    return [window[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
