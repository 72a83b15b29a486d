"""Epoch planning: pure functions of the stored lengths and (seed, epoch, rank, world_size).

The whole epoch's batches are planned from the lengths alone (no token is read), then evened out
so that their number divides by the world size, then dealt round robin to ranks. A batch is an
array of sequence indices (or of packed-row indices for packing).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from fastdata.text.options import SequenceLoaderOptions


def padded(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def cut(order: np.ndarray, lengths: np.ndarray, *, max_tokens: int | None, batch_size: int | None,
        multiple: int) -> list[np.ndarray]:
    """Cut `order` (kept as is) into consecutive batches: each under the token budget counting padding
    (count * padded(longest) <= max_tokens) and at most `batch_size` long."""
    cuts: list[int] = []
    begin, longest = 0, 0
    cap = batch_size if batch_size is not None else len(order) + 1
    budget = max_tokens if max_tokens is not None else float("inf")
    for j, n in enumerate(lengths[order].tolist()):
        grown = n if n > longest else longest
        count = j - begin + 1
        if count > 1 and (count > cap or count * (-(-grown // multiple) * multiple) > budget):
            cuts.append(j)
            begin, grown = j, n
        longest = grown
    return [b for b in np.split(order, cuts) if len(b)]


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    return np.random.default_rng([seed, epoch, 0x7E47])


def epoch_order(n: int | np.ndarray, opts: SequenceLoaderOptions, *,
                epoch: int) -> tuple[np.ndarray, np.random.Generator]:
    """The epoch's order of the `n` sequences (or of the sequence ids `n`: a mixture's epoch), shuffled unless
    shuffle=False, and the generator that `shuffle_batches` goes on with, so that every bucketing draws from
    one stream per (seed, epoch)."""
    rng = epoch_rng(opts.seed, epoch)
    items = np.arange(n) if isinstance(n, int) else n
    return (rng.permutation(items) if opts.shuffle else items), rng


def shuffle_batches(batches: list[np.ndarray], rng: np.random.Generator,
                    opts: SequenceLoaderOptions) -> list[np.ndarray]:
    """The batches in random order (as they are when shuffle=False)."""
    return [batches[k] for k in rng.permutation(len(batches))] if opts.shuffle else batches


def sorted_windows(order: np.ndarray, lengths: np.ndarray, window: int) -> Iterator[np.ndarray]:
    """Each run of `window` sequences of `order`, sorted by length (stable: ties keep the shuffled order)."""
    for w in range(0, len(order), window):
        part = order[w:w + window]
        yield part[np.argsort(lengths[part], kind="stable")]


def plan_sequences(lengths: np.ndarray, opts: SequenceLoaderOptions, *, epoch: int,
                   items: np.ndarray | None = None) -> list[np.ndarray]:
    """Every batch of the epoch (all ranks), for bucketing 'length' or 'none'; `items`: the sequences of the
    epoch when they are not all of them once (a mixture)."""
    from fastdata.text.partition import exact_cut  # it builds on cut() above

    order, rng = epoch_order(len(lengths) if items is None else items, opts, epoch=epoch)
    kw = {"max_tokens": opts.max_tokens, "batch_size": opts.batch_size, "multiple": opts.pad_to_multiple_of}
    if opts.bucketing == "none":
        return cut(order, lengths, **kw)
    batches = [b for window in sorted_windows(order, lengths, opts.window) for b in exact_cut(window, lengths, **kw)]
    return shuffle_batches(batches, rng, opts)


def plan_pack(total_tokens: int, opts: SequenceLoaderOptions) -> list[np.ndarray]:
    """Every batch of packed-row indices of the epoch (rows are consecutive pieces of the token stream)."""
    rows = padded(total_tokens, opts.block_size) // opts.block_size
    per = opts.rows_per_batch
    return [np.arange(r, min(r + per, rows)) for r in range(0, rows, per)]


def even_out(batches: list[np.ndarray], world_size: int) -> list[np.ndarray]:
    """Make the number of batches a multiple of `world_size`: split the largest batches in two (every
    sequence is still seen exactly once, budgets still hold); only when every batch holds a single
    sequence, repeat batches from the start (as torch's DistributedSampler pads)."""
    out = list(batches)
    while len(out) % world_size:
        k = max(range(len(out)), key=lambda i: (len(out[i]), -i))
        if len(out[k]) < 2:
            need = world_size - len(out) % world_size
            return out + [out[i % len(out)] for i in range(need)]
        half = len(out[k]) // 2
        out[k:k + 1] = [out[k][:half], out[k][half:]]
    return out


def deal_all(batches: list[np.ndarray], world_size: int) -> list[list[np.ndarray]]:
    """Every rank's batches: rank r takes every world_size-th one, starting at r (equal counts after even_out)."""
    evened = even_out(batches, world_size)
    return [evened[r::world_size] for r in range(world_size)]


def deal(batches: list[np.ndarray], *, rank: int, world_size: int) -> list[np.ndarray]:
    """This rank's batches of `deal_all`."""
    return deal_all(batches, world_size)[rank]


def redeal(rests: list[list[np.ndarray]], world_size: int) -> list[list[np.ndarray]]:
    """The batches the old ranks had not delivered (in the order they would have come: batch position, then
    rank), dealt to `world_size` ranks after evening out: an interrupted epoch resumed on other ranks."""
    merged = [rest[k] for k in range(max((len(r) for r in rests), default=0)) for rest in rests if k < len(rest)]
    return deal_all(merged, world_size)
