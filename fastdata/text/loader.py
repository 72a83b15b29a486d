"""`fastdata.loader("tokens/", max_tokens=..., bucketing=...)`: token batches under a budget.

The epoch's batches are planned from the stored lengths, evened out and dealt to ranks (equal
counts, disjoint, complete); iteration state (epoch, batches done) is explicit so a run resumes in
the middle of an epoch exactly where it stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

import numpy as np
import torch

from fastdata.closing import MOVED, Closable
from fastdata.coerce import torch_options
from fastdata.data_digest import data_digest
from fastdata.dataset import DatasetView, RemoteOptions, open_dataset
from fastdata.distributed import MAX_WORLD_SIZE, resolve_rank, valid_world_size
from fastdata.hooks import HookError, call_hook, seeded
from fastdata.loader_state import check_shared, kind_of, shared_fields
from fastdata.mixing import MixedView
from fastdata.planning.elastic import Step, check_lineage, replay, resumed_lineage
from fastdata.planning.epochs import MAX_EPOCH, epoch_to_set, valid_epoch
from fastdata.planning.mixture import Mixture, random_permute
from fastdata.planning.selection import selection
from fastdata.sources import Spec
from fastdata.text.collate import PackedStream, collate_packed, collate_padded
from fastdata.text.options import SequenceLoaderOptions
from fastdata.text.plan import deal_all, epoch_order, padded, plan_pack, plan_sequences, redeal, shuffle_batches
from fastdata.text.store import TokenStore, merge_stores, open_store

log = logging.getLogger(__name__)

STATE_KEYS = ("seed", "bucketing", "max_tokens", "batch_size", "block_size", "pad_to_multiple_of", "window",
              "shuffle")
STATE_VERSION = 1  # the form of state_dict() (fastdata/loader_state.py)


class SequenceLoader(Closable):
    """Iterable of batch dicts (int64 tensors). See `sequence_loader` for the options. `close()` or `with` lets
    its dataset's files go (closing.py)."""

    def __init__(self, store: TokenStore, options: SequenceLoaderOptions, *, classes: tuple[str, ...],
                 eos_id: int | None, pad_id: int, mixture: Mixture | None = None,
                 mixture_state: dict[str, Any] | None = None, view: DatasetView | MixedView | None = None) -> None:
        self.store, self.options, self.classes = store, options, classes
        self._view = view  # closed with the loader
        self._kind = kind_of(view)  # likewise (loader_state.py)
        self.eos_id, self.pad_id = eos_id, pad_id
        self.mixture, self._mixture_state = mixture, mixture_state
        self._permute = random_permute(options.seed, mixture.sizes) if mixture is not None else None
        self._epoch, self._done = 0, 0
        self.last_index: np.ndarray | None = None  # sequence ids (packed-row ids) of the last batch (debugging)
        self._lineage: tuple[Step, ...] = ()  # where this epoch was interrupted on other world sizes
        self._cache: tuple[tuple[int, tuple[Step, ...]], list[np.ndarray], PackedStream | None] | None = None
        self._last_ids = store.last_ids() if options.bucketing == "pack" else None
        chosen = selection(options, len(store), train=options.shuffle, mixture=mixture is not None,
                           labels=store.class_labels, data=data_digest(view))
        # the sequences read an epoch, their draws when weighted, and the data digest in every state
        self._count, self._weights, self._data = chosen.count, chosen.weights, chosen.digest
        self._items = options.indices  # the sequences of every epoch (None: all of them)
        longest = int(store.lengths.max() if self._items is None else store.lengths[self._items].max())
        if options.bucketing != "pack" and options.max_tokens is not None \
                and padded(longest, options.pad_to_multiple_of) > options.max_tokens:
            raise ValueError(
                f"max_tokens={options.max_tokens} cannot hold the longest sequence ({longest} tokens, "
                f"{padded(longest, options.pad_to_multiple_of)} padded to a multiple of "
                f"{options.pad_to_multiple_of}); raise max_tokens or convert with --max-length")

    # -- planning ------------------------------------------------------------------------------
    def _plan(self) -> tuple[list[np.ndarray], PackedStream | None]:
        key = (self._epoch, self._lineage)
        if self._cache is None or self._cache[0] != key:
            o = self.options
            batches, stream = self._epoch_batches()
            self._cache = (key, self._ranks(batches, self._lineage, o.world_size)[o.rank], stream)
        return self._cache[1], self._cache[2]

    def _epoch_batches(self) -> tuple[list[np.ndarray], PackedStream | None]:
        """Every batch of the current epoch (all ranks), and the packed stream they cut (bucketing='pack')."""
        o = self.options
        stream = None
        items = self._items if self.mixture is None else self.mixture.epoch_items(self._epoch, self._permute)
        if self._weights is not None:
            items = self._weights.items(seed=o.seed, epoch=self._epoch)
        if o.bucketing == "pack":
            order, rng = epoch_order(len(self.store) if items is None else items, o, epoch=self._epoch)
            stream = PackedStream.build(self.store, order, eos_id=self.eos_id, last_ids=self._last_ids)
            return shuffle_batches(plan_pack(stream.total, o), rng, o), stream
        return plan_sequences(self.store.lengths, o, epoch=self._epoch, items=items), None

    @staticmethod
    def _ranks(batches: list[np.ndarray], lineage: tuple[Step, ...], world_size: int) -> list[list[np.ndarray]]:
        """Every rank's batches of an epoch of `batches`, interrupted at `lineage` (planning/elastic.py)."""
        return replay(lineage, world_size, plans=lambda w: deal_all(batches, w), rest=lambda plan, done: plan[done:],
                      redeal=redeal)

    def batch_indices(self) -> list[np.ndarray]:
        """This rank's batches of the current epoch as sequence indices (packed-row indices for 'pack')."""
        return self._plan()[0]

    # -- the Loader contract ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._plan()[0])

    @property
    def epoch(self) -> int:
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        epoch = epoch_to_set(epoch)
        if epoch != self._epoch:
            self._end_open_pass(MOVED)  # it would go on from the new position (closing.py)
            self._epoch, self._done, self._lineage = epoch, 0, ()

    def _settings(self) -> dict[str, Any]:
        """What the plan depends on besides the epoch: saved in the state and checked on load."""
        return {**{k: getattr(self.options, k) for k in STATE_KEYS}, "num_sequences": self._count}

    def state_dict(self) -> dict[str, Any]:
        o = self.options
        return {**shared_fields(STATE_VERSION, kind=self._kind, epoch=self._epoch, lineage=self._lineage,
                                mixture=self._mixture_state, data=self._data),
                "batches_done": self._done, "rank": o.rank, "world_size": o.world_size, **self._settings()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume where `state` (a `state_dict()`) stood; every field is checked: present, typed, in range."""
        check_shared(state, STATE_VERSION, kind=self._kind, unversioned=1, mixture=self._mixture_state, data=self._data)
        mine = self._settings()
        missing = sorted({"epoch", "batches_done", "world_size", *mine} - set(state))
        if missing:
            raise ValueError(f"cannot resume: the state lacks {missing}; pass what state_dict() returned")
        differ = [k for k in mine if state[k] != mine[k] or type(state[k]) is not type(mine[k])]
        if differ:
            shown = ", ".join(f"{k}: saved {state[k]!r}, now {mine[k]!r}" for k in differ)
            raise ValueError(f"cannot resume: the loader was built with other options or data ({shown}); "
                             "build it with the saved options and dataset to resume exactly")
        epoch, done, world = state["epoch"], state["batches_done"], state["world_size"]
        if not valid_epoch(epoch) or not isinstance(done, int) or isinstance(done, bool) or done < 0 \
                or not valid_world_size(world):
            raise ValueError(f"state must hold an integer 'epoch' in 0..{MAX_EPOCH}, 'batches_done' >= 0 and "
                             f"'world_size' in 1..{MAX_WORLD_SIZE}, got {epoch!r}, {done!r}, {world!r}")
        previous = (self._epoch, self._done, self._lineage, self._cache)
        saved_lineage = check_lineage(state.get("elastic"))
        self._epoch, self._done, self._lineage = epoch, 0, saved_lineage
        total = len(self._ranks(self._epoch_batches()[0], saved_lineage, world)[0])  # the saved world's count
        if done > total:
            self._epoch, self._done, self._lineage, self._cache = previous
            raise ValueError(f"cannot resume at batch {done}: epoch {epoch} has {total} batches a rank "
                             f"on {world} rank(s)")
        self._end_open_pass(MOVED)
        self._lineage, self._done = resumed_lineage(saved_lineage, saved_world=world, saved_batch=done,
                                                    world_size=self.options.world_size)

    def _to_device(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        o = self.options
        if o.pin:
            batch = {k: v.pin_memory() for k, v in batch.items()}
        if o.device != "cpu":
            batch = {k: v.to(o.device, non_blocking=True) for k, v in batch.items()}
        return batch

    def _datasets(self, index: np.ndarray, stream: PackedStream | None) -> torch.Tensor:
        """`dataset` of a mixture's batch: per sequence [B], or per token [B, block_size] for packed rows (-1:
        padding), since a packed row may join documents of several datasets."""
        if stream is None:
            return torch.from_numpy(self.mixture.dataset_of(index))
        o = self.options
        t = index.astype(np.int64)[:, None] * o.block_size + np.arange(o.block_size)[None, :]
        valid = t < stream.total
        k = np.searchsorted(stream.begins, np.where(valid, t, 0), side="right") - 1
        return torch.from_numpy(np.where(valid, self.mixture.dataset_of(stream.order[k]), -1))

    def _transform(self, batch: dict[str, torch.Tensor], index: int) -> dict[str, Any]:
        """The batch_transform hook, with torch's generators seeded for this batch (fastdata/hooks.py)."""
        o = self.options
        with seeded(o.seed, self._epoch, o.rank, index, o.device):
            out = call_hook("batch_transform", o.batch_transform, batch, epoch=self._epoch, batch=index)
        if not isinstance(out, dict):
            raise HookError(f"the batch_transform hook of a text loader must return the batch dict, it returned "
                            f"{type(out).__name__} on epoch {self._epoch}, batch {index}", hook="batch_transform",
                            epoch=self._epoch, batch=index)
        return out

    def _release(self) -> None:
        if self._view is not None:
            self._view.close()

    def _iterate(self) -> Iterator[dict[str, torch.Tensor]]:
        batches, stream = self._plan()
        o = self.options
        while self._done < len(batches):
            index = batches[self._done]
            if stream is not None:
                batch = collate_packed(self.store, stream, index, block_size=o.block_size, pad_id=self.pad_id)
            else:
                batch = collate_padded(self.store, index, pad_id=self.pad_id, multiple=o.pad_to_multiple_of)
            if self.mixture is not None:
                batch["dataset"] = self._datasets(index, stream)
            batch = self._to_device(batch)
            if o.batch_transform is not None:
                batch = self._transform(batch, self._done)
            self._done += 1
            self.last_index = index
            yield batch
        self._epoch, self._done, self._lineage = self._epoch + 1, 0, ()


def sequence_loader(source: Spec | DatasetView, /, *, split: str | None = None, rank: int | None = None,
                    world_size: int | None = None, **options: Any) -> SequenceLoader:
    """Token batches from a `fastdata convert --kind text` dataset.

    Options (keyword-only): max_tokens, batch_size, bucketing ("length" | "none" | "pack"),
    pad_to_multiple_of (default 8), block_size (pack), window, shuffle, seed, device, pin_memory,
    pad_id, indices (a subset of the sequences), sample_weights (a weight per sequence, or "balanced") and
    samples_per_epoch (the sequences they draw an epoch). Rank and world size come from torch.distributed when
    initialised, or the arguments.
    """
    remote = RemoteOptions.pop(options)
    known = {f.name for f in fields(SequenceLoaderOptions)} - {"rank", "world_size"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown option(s) {unknown} for a text dataset; allowed: {sorted(known)}")
    rank, world_size = resolve_rank(rank, world_size)
    opts = SequenceLoaderOptions(**torch_options(options, dtypes=()), rank=rank, world_size=world_size)
    if (opts.device != "cpu" or opts.pin) and not torch.cuda.is_available():
        raise ValueError(f"device={opts.device!r}, pin_memory={opts.pin_memory!r} need CUDA, but "
                         "torch.cuda.is_available() is False; use device='cpu' (and pin_memory=None or False)")
    view = source if isinstance(source, DatasetView | MixedView) else open_dataset(source, split=split, remote=remote)
    if view.manifest.kind != "text":
        raise ValueError(f"{source} holds a {view.manifest.kind!r} dataset; the sequence loader reads 'text'")
    tok = view.manifest.tokenizer
    pad_id = opts.pad_id if opts.pad_id is not None else (tok.get("pad_id") or 0)
    eos_id = tok.get("eos_id")
    if opts.bucketing == "pack" and eos_id is None:
        raise ValueError("bucketing='pack' separates documents with EOS, but the tokenizer in the manifest "
                         "has no EOS token; use bucketing='length'")
    if isinstance(view, MixedView):
        stores = [open_store(v) for v in view.views]
        store = merge_stores(stores, view.label_maps)
        mixture = view.mixture([len(s) for s in stores], [s.lengths for s in stores])
        log.info("%s: %d sequences, %d tokens, rank %d/%d", view, len(store), int(store.lengths.sum()), rank,
                 world_size)
        return SequenceLoader(store, opts, classes=view.classes, eos_id=eos_id, pad_id=pad_id, mixture=mixture,
                              mixture_state=view.describe(mixture), view=view)
    store = open_store(view)
    log.info("%s: %d sequences, %d tokens, rank %d/%d", source, len(store), int(store.lengths.sum()),
             rank, world_size)
    return SequenceLoader(store, opts, classes=view.manifest.classes, eos_id=eos_id, pad_id=pad_id, view=view)
