"""What every image backend shares: the epoch plan (order.py, rank_plans.py), the resumable position
(resume.py), and the consumer side of the producer loop (production.py), which fills batches from the plan in a
background thread, skipping bad samples when asked, and goes on into the next epoch (overlap.py).

A backend supplies two things: `_load(index, row, dest)`, the per-sample work run in `num_threads`
threads (kornia: prepare + decode, into its batch row when `_rows` gave one; DALI: prepare only), and
`_submit(entries)`, which starts turning one batch of results into `(images, labels, ready_event)`; `_collect`
finishes it (kornia: `_submit` does the batch and the device augment; DALI: `_submit` feeds the graph and
schedules its run, `_collect` takes the output, one batch later, so the graph runs while the next is fed).
Either may raise `BadSamples` when it finds samples it cannot use (DALI learns that a JPEG is
corrupt only when its decoder fails); the loop then refills the batch without them, exactly as a
sample that failed in `_load` is replaced (train: by the following samples; eval: by a padding row).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from fastdata.data_digest import data_digest
from fastdata.dataset import DatasetView
from fastdata.images.device_aug import DeviceAugment
from fastdata.images.hook_stage import HookStage
from fastdata.images.mixed_reader import MixedReader
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import EpochPlan
from fastdata.images.orientation import turned_images
from fastdata.images.overlap import EPOCH_END, Overlap
from fastdata.images.prefetch import prefetch
from fastdata.images.production import Production
from fastdata.images.rank_plans import RankPlans
from fastdata.images.reader import SplitReader
from fastdata.images.resume import ResumePoint, check_state, make_state
from fastdata.images.samples import Preparer
from fastdata.images.schedule import check_cache
from fastdata.images.shard_memory import MemoryBudget
from fastdata.loader_state import kind_of
from fastdata.mixing import MixedView, shard_permute
from fastdata.planning.elastic import Step
from fastdata.planning.epochs import epoch_to_set
from fastdata.planning.selection import selection
from fastdata.planning.subset import subset_mask

log = logging.getLogger(__name__)


class PlannedBackend(Production):
    """Backend protocol (len, set_epoch, iter, state_dict/load_state_dict) over one epoch plan. A backend
    says how one sample is loaded (`_load`) and how a batch of them becomes tensors (`_submit`, `_collect`):
    production.py runs them."""

    name = "planned"

    def __init__(self, view: DatasetView, opts: ImageLoaderOptions, reader: Any = None) -> None:
        self._view, self._opts = view, opts
        self._kind = kind_of(view)  # likewise (loader_state.py)
        # `reader`: another backend's of this view (progressive resizing: the shards it keeps in memory carry over);
        # the view and the reader are closed by the backend that owns them (`take_over`), the one that made them
        self._owner = reader is None
        if reader is None:
            budget = MemoryBudget(opts.memory_cache) if opts.memory_cache > 0 else None  # shared by every shard read
            reader = SplitReader(view, budget) if not isinstance(view, MixedView) else MixedReader(view, budget)
        self._reader = reader
        self._prepare = Preparer(self._reader, opts, len(view.classes), look_at_jpegs=turned_images(view) > 0)
        # a --multi-label dataset's class count: its batches' labels are multi-hot rows (batch_labels.py); else 0
        self._multi_hot = len(view.classes) if view.manifest.multi_label else 0
        self._mixture = permute = None
        if isinstance(view, MixedView):
            view.check_train(opts.train)
            per_dataset = [tuple(ref.info.samples for ref in v.shards) for v in view.views]
            self._mixture = view.mixture([sum(sizes) for sizes in per_dataset])
            permute = shard_permute(opts.seed, per_dataset)
        chosen = selection(opts, len(self._reader), train=opts.train, mixture=self._mixture is not None,
                           labels=self._labels, data=data_digest(view))
        # the samples planned an epoch; the data digest in every state, checked on load (data_digest.py)
        self._count, self._data = chosen.count, chosen.digest
        keep = subset_mask(opts.indices, len(self._reader))
        self._plans = RankPlans(opts, tuple(ref.info.samples for ref in view.shards), self._count,
                                mixture=self._mixture, permute=permute, keep=keep, weights=chosen.weights)
        self._return_dataset = isinstance(view, MixedView) and view.spec.return_dataset
        self._device = torch.device(opts.device)
        self._epoch = 0
        self._resume: ResumePoint | None = None
        self._point = ResumePoint(epoch=0, batch=0, cursor=0)  # what the consumer has received so far
        self._said_again = False  # whether a training epoch read again was warned of (once a loader)
        self._skipped = 0
        self._normalizer = DeviceAugment(opts, self._device)  # uint8 or float [0, 1] -> the output tensor
        self._hooks = HookStage(opts, self._device, self._normalizer) \
            if opts.augment is not None or opts.batch_transform is not None else None
        self._overlap = Overlap(opts.overlap_epochs and self._hooks is None)  # hooks never run ahead
        self.targets: Any = None  # None, or `targets(raws, epoch)` -> what a batch yields instead of its labels
        self.last_keys: list[str] = []  # "shard:key" of the real rows of the last batch delivered (debugging)
        self.last_rows: list[int] = []  # their global indices (a mixture's: dataset offset + index in it)
        check_cache(self._view, self._reader, self.plan().sequence, opts)

    def _labels(self) -> np.ndarray:
        """Every sample's label, for sample_weights='balanced' (the label members alone are read)."""
        if self._multi_hot:
            raise ValueError("sample_weights='balanced' weighs each sample by its one class; the samples of this "
                             "multi-label dataset have several: pass a weight a sample (fastdata.sample_labels "
                             "gives each sample's multi-hot row)")
        if self._view.remote is not None:
            raise ValueError("sample_weights='balanced' reads the label of every sample, which on a remote dataset "
                             "fetches every shard before the first batch; give one weight per sample instead "
                             "(fastdata.sample_labels on a local copy gives the labels)")
        return self._reader.labels()

    # ------------------------------------------------------------------ plan and state
    def plan(self, epoch: int | None = None, lineage: tuple[Step, ...] | None = None) -> EpochPlan:
        """This rank's plan of `epoch` (default: the current one, interrupted where the resume point says)."""
        epoch = self._epoch if epoch is None else epoch
        if lineage is None:
            point = self._resume or self._point
            lineage = point.lineage if point.epoch == epoch else ()
        return self._plans.get(epoch, lineage)

    def __len__(self) -> int:
        return self.plan().num_batches

    @property
    def num_samples(self) -> int:
        plan = self.plan()
        return min(len(plan.sequence), plan.num_batches * plan.batch_size)

    @property
    def skipped(self) -> int:
        return self._skipped

    def set_epoch(self, epoch: int) -> None:
        epoch = epoch_to_set(epoch)
        if self._resume is not None and self._resume.epoch != epoch:
            self._resume = None
        self._overlap.set_epoch(epoch)
        if self._point.epoch != epoch:  # state_dict() now describes the start of the new epoch
            self._point = ResumePoint(epoch=epoch, batch=0, cursor=0)
        self._epoch = epoch

    def _mixture_state(self) -> dict[str, Any] | None:
        return None if self._mixture is None else self._view.describe(self._mixture)

    def state_dict(self) -> dict[str, Any]:
        point = self._resume or self._point
        return make_state(point, self._opts, num_samples=self._count, skipped=self._skipped,
                          mixture=self._mixture_state(), data=self._data, kind=self._kind)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        point = check_state(state, self._opts, num_samples=self._count, mixture=self._mixture_state(),
                            data=self._data, kind=self._kind)
        plan = self.plan(point.epoch, point.lineage)
        if point.batch > plan.num_batches:
            raise ValueError(f"state_dict is at batch {point.batch}, but epoch {point.epoch} has "
                             f"{plan.num_batches} batches on this rank")
        if point.cursor > plan.num_batches * plan.batch_size + len(plan.sequence):
            raise ValueError(f"state_dict cursor {point.cursor} is past the end of epoch {point.epoch}")
        self.stop_ahead()
        self._epoch, self._resume, self._point = point.epoch, point, point
        self._skipped = int(state["skipped"])

    # ------------------------------------------------------------------ iteration (consumer side)
    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        epoch = self._epoch
        start = self._resume if self._resume is not None else ResumePoint(epoch=epoch, batch=0, cursor=0)
        if self._resume is None and self._point.epoch == epoch:
            self._say_if_trained_again(epoch)
            start = ResumePoint(epoch=epoch, batch=0, cursor=0, lineage=self._point.lineage)  # iterated again
        self._resume = None
        self._point = start
        step = self._overlap.step(epoch)
        batches = self._overlap.take(start)  # produced ahead at the end of the last epoch, when it began here
        if batches is None:
            plan = self.plan(epoch, start.lineage)
            batches = prefetch(lambda stop: self._chain(plan, start, step, stop), depth=self._opts.prefetch,
                               name=f"fastdata-{self.name}-prefetch")
            if self._hooks is not None:  # a second thread: the hooks overlap the next batch's production
                inner, hooks = batches, self._hooks
                batches = prefetch(lambda stop: hooks.run(inner, stop), depth=self._opts.prefetch,
                                   name=f"fastdata-{self.name}-hooks")
        ended: list[ResumePoint] = []
        try:
            yield from self._deliver(batches, epoch, ended)
        finally:
            if ended:  # the producer goes on with the epoch it expects next (overlap.py)
                self._overlap.park(ended[0], batches)
            else:
                batches.close()  # stops and joins the prefetch thread, also on an early `break`

    def _say_if_trained_again(self, epoch: int) -> None:
        """Once a loader: log a warning when a training epoch is read again after a whole pass. Without
        `set_epoch(e)` before each epoch every epoch repeats the first's order, crops and flips (as
        `DistributedSampler` repeats its order), and augmentation loses most of its variety, silently."""
        done = self._point.batch
        if not self._opts.train or self._said_again or done == 0 or done < self.plan(epoch).num_batches:
            return  # (an epoch of no batch repeats nothing)
        self._said_again = True
        log.warning("epoch %d is read again after a whole pass, in the same order with the same crops and flips: "
                    "call loader.set_epoch(epoch) before each epoch (as DistributedSampler needs) for new ones",
                    epoch)

    def _deliver(self, batches: Iterator[tuple], epoch: int,
                 ended: list[ResumePoint]) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for item in batches:
            if item[0] is EPOCH_END:  # this epoch is over; the items after it belong to the next one
                ended.append(item[1])
                return
            images, labels, cursor, skipped, ready, keys, _, _, rows = item
            if ready is not None:  # produced on the prefetch thread's CUDA stream
                current = torch.cuda.current_stream(self._device)
                current.wait_event(ready)
                images.record_stream(current)
                for t in labels.values() if isinstance(labels, dict) else (labels,):
                    if isinstance(t, torch.Tensor) and t.device.type == "cuda":
                        t.record_stream(current)
            self._point = ResumePoint(epoch=epoch, batch=self._point.batch + 1, cursor=cursor,
                                      lineage=self._point.lineage)
            self._skipped += skipped
            self.last_keys = keys
            self.last_rows = [r for r in rows if r >= 0]
            if self._return_dataset:
                yield images, labels, self._datasets(rows, images.device)
            else:
                yield images, labels

    def stop_ahead(self, wait: bool = True) -> None:
        """Stop the production of the next epoch's batches, if it goes on (`Overlap.stop`)."""
        self._overlap.stop(wait)

    def _datasets(self, rows: list[int], device: torch.device) -> torch.Tensor:
        """return_dataset: the index in the mixture of each row's dataset (-1: an eval padding row)."""
        found = self._mixture.dataset_of(np.asarray(rows, dtype=np.int64))
        return torch.from_numpy(found).to(device, non_blocking=True)

    @property
    def reader(self) -> Any:
        """The reader of this backend's shards, for a further backend of the same view (`take_over`)."""
        return self._reader

    def take_over(self, old: PlannedBackend) -> None:
        """Become the owner of the view and reader `old` owned and shares with this backend: `old` (retired, left to
        finish a pass) no longer closes them; this backend does, when it is closed."""
        self._owner, old._owner = old._owner, False

    def close(self) -> None:
        self.stop_ahead()
        if self._owner:
            self._reader.close()
            self._view.close()
