"""How an image backend makes batches, in a background thread (`Production`, a base of `PlannedBackend`,
planned.py): the samples of an epoch plan are loaded on the loader's decode threads (`_load`, stream.py), put
together a batch at a time (`fill_batch`, samples.py), turned into tensors by the backend (`_submit`, then
`_collect`, up to `_lag` batches later), and handed to the consumer side with where they end in the plan. A batch
holding samples the backend cannot use (`BadSamples`) is made again without them. The producer goes on into the
epoch after (`_chain`, overlap.py), its decode threads primed for that epoch once this one's are all submitted.
"""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

from fastdata.dataset import DatasetView
from fastdata.images.intraop import serial_torch
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import EpochPlan
from fastdata.images.overlap import EPOCH_END, follow_on
from fastdata.images.reader import RawSample
from fastdata.images.resume import ResumePoint
from fastdata.images.samples import BadSamples, Preparer, SkipBudget, fill_batch, resolve_futures
from fastdata.images.schedule import shard_follower
from fastdata.images.stream import SampleStream, Slot
from fastdata.planning.elastic import Step
from fastdata.storage.fetcher import stop_waits_when


@dataclass
class _InFlight:
    """A batch between `_submit` and its delivery: where its samples start and end in the stream."""

    batch: int
    cursor: int
    position: int
    entries: list[Any]
    skipped: int
    handle: Any = None


def _decode_thread(stop: threading.Event) -> None:
    """What each decode thread does first: run torch ops serially (intraop.py), and give up waiting for a remote
    shard once its producer is told to stop, so that a `break` or Ctrl-C never waits for a slow server."""
    serial_torch()
    stop_waits_when(stop)


class Production(ABC):
    """The producer side of a planned backend. A backend says how one sample is loaded (`_load`) and how a batch
    of them becomes tensors (`_submit`, `_collect`); `PlannedBackend` sets what this side reads."""

    name: str
    _view: DatasetView
    _opts: ImageLoaderOptions
    _reader: Any  # SplitReader or MixedReader
    _prepare: Preparer
    _device: torch.device
    targets: Any  # None, or `targets(raws, epoch)` -> what a batch yields instead of its labels

    @abstractmethod
    def plan(self, epoch: int | None = None, lineage: tuple[Step, ...] | None = None) -> EpochPlan:
        """This rank's plan of `epoch` (planned.py)."""

    @abstractmethod
    def _load(self, index: int, row: list[float] | None, dest: Any) -> Any:
        """Sample `index`, read and prepared for `_submit` with its row of draws (train; None in eval), its
        image written to `dest` when `_rows` gave it one (runs on the loader's threads)."""

    def _rows(self, cursor: int) -> Any:
        """The destinations of a stream starting at `cursor` (`rows.BatchRows`), or None: loads return their
        results."""
        return None

    def _resolve(self, futures: list[Slot | None]) -> list[object]:
        return resolve_futures(futures)

    _lag = 0  # batches submitted ahead of the one being collected (`_produce`)

    @abstractmethod
    def _submit(self, entries: list[Any], cuda_stream: Any, at: tuple[int, int]) -> Any:
        """Start one batch of loaded entries; `at` is (epoch, batch index). Returns what `_collect` takes; a
        backend that does all the work here (kornia) returns `(images, labels, ready event or None)` itself.
        With an `augment` hook the images are float [0, 1] NCHW, for the hook stage (`hook_stage.py`)."""

    def _collect(self, handle: Any) -> tuple[torch.Tensor, Any, Any]:
        """(images, labels, ready event) of the oldest submitted batch, which `handle` is; may raise BadSamples."""
        return handle

    def _ready(self, stream: Any = None) -> Any:
        """On CUDA, an event recorded on `stream` (None: this thread's current stream) once the work queued there for
        a batch is: the hook stage's stream and the stream the user iterates on wait for it before they read the
        batch (hook_stage.py, `_deliver`), since nothing else orders streams of their own after this one. None on
        the CPU."""
        if self._device.type != "cuda":
            return None
        ready = torch.cuda.Event()
        ready.record(stream if stream is not None else torch.cuda.current_stream(self._device))
        return ready

    def _abandon(self, handles: list[Any]) -> None:
        """Submitted batches, oldest first, that will not be collected (a restart or a stop): by default `_submit`
        did all their work, so nothing is left to release."""
        return None

    def _raw_of(self, entry: Any) -> RawSample:
        """The raw sample behind one batch entry."""
        return entry.raw

    def _key_of(self, entry: Any) -> str:
        """'shard:key' of one batch entry (for `last_keys`)."""
        raw = self._raw_of(entry)
        return f"{raw.shard.name}:{raw.key}"

    def _cuda_stream(self) -> Any:
        """The side stream batches are assembled on (None: the current stream)."""
        return None

    def _chain(self, plan: EpochPlan, start: ResumePoint, step: int | None, stop: threading.Event) -> Iterator[tuple]:
        """The batches of `plan` from `start`; then, unless `step` is None, an `EPOCH_END` item and the batches of
        the epoch `step` after, and so on, as far as the queue lets the producer go (overlap.py). One pool of
        decode threads serves every epoch, and the next epoch's first samples are submitted to it once this
        epoch's last ones are (a local dataset's: a remote one's shard cache follows one epoch at a time)."""
        serial_torch()  # this producer thread and the decode threads run torch ops serially (intraop.py)
        pool = ThreadPoolExecutor(self._opts.num_threads, thread_name_prefix=f"fastdata-{self.name}",
                                  initializer=_decode_thread, initargs=(stop,))
        stream = None
        try:
            while True:
                after = None if step is None else follow_on(start, step)
                primed: list[SampleStream] = []
                yield from self._produce(plan, start, stop, pool, stream,
                                         after if self._view.remote is None else None, primed)
                if after is None or stop.is_set() or plan.num_batches == 0:
                    return  # an epoch without batches (a split smaller than a batch) has nothing to overlap
                yield EPOCH_END, after
                start, plan, stream = after, self.plan(after.epoch, after.lineage), (primed or [None])[0]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _stream(self, pool: ThreadPoolExecutor, plan: EpochPlan, epoch: int, cursor: int) -> SampleStream:
        o = self._opts
        limit = len(plan.sequence) if not plan.padded else plan.num_batches * plan.batch_size
        return SampleStream(pool, self._load, plan.sequence, start=cursor, limit=limit,
                            ahead=(o.prefetch + 1) * o.batch_size, padded=plan.padded, chunk=o.batch_size,
                            draw=self._prepare.draws(epoch), place=self._rows(cursor))

    def _produce(self, plan: EpochPlan, start: ResumePoint, stop: threading.Event, pool: ThreadPoolExecutor,
                 stream: SampleStream | None, after: ResumePoint | None, primed: list[SampleStream]) -> Iterator[tuple]:
        """The batches of `plan` from `start` (from `stream` when one was primed for it). When `after` is given,
        the stream of the epoch that begins there is primed into `primed` once this one has submitted all.

        Up to `_lag` batches are submitted (`_submit`) before the oldest is collected (`_collect`), so that a
        backend whose work runs elsewhere (DALI's executor) has the next batch while this thread finishes one.
        When a batch turns out to hold samples the backend cannot use (`BadSamples`), production restarts at the
        oldest batch not yet delivered, without them: the batches are the ones a lag of 0 makes."""
        o = self._opts
        if stream is None:
            stream = self._stream(pool, plan, start.epoch, start.cursor)
        cuda_stream = self._cuda_stream()
        budget = SkipBudget(plan)
        follow = shard_follower(self._view, self._reader, plan.sequence, start.cursor)
        pending: deque[_InFlight] = deque()
        b = start.batch
        try:
            while b < plan.num_batches or pending:
                if stop.is_set():
                    return
                try:
                    with torch.cuda.stream(cuda_stream) if cuda_stream is not None else contextlib.nullcontext():
                        if b < plan.num_batches:
                            cursor = stream.position
                            follow(cursor)
                            entries, skipped = fill_batch(stream, plan.rows(b), plan, on_error=o.on_error,
                                                          budget=budget, resolve=self._resolve)
                            pending.append(_InFlight(b, cursor, stream.position, entries, skipped))
                            pending[-1].handle = self._submit(entries, cuda_stream, (start.epoch, b))
                            b += 1
                            if len(pending) <= self._lag and b < plan.num_batches:
                                continue
                        done = pending[0]
                        images, labels, ready = self._collect(done.handle)
                        if self.targets is not None:  # e.g. the captions of image-text pairs
                            labels = self.targets([None if e is None else self._raw_of(e) for e in done.entries],
                                                  start.epoch)
                except BadSamples as bad:
                    if o.on_error == "raise":
                        raise bad.error from None
                    self._prepare.reject(bad.indices, bad.error)
                    oldest = pending[0]
                    self._abandon([p.handle for p in pending])
                    pending.clear()
                    stream.cancel()
                    stream = self._stream(pool, plan, start.epoch, oldest.cursor)  # refill from there without them
                    b = oldest.batch
                    continue
                pending.popleft()
                if after is not None and not primed and stream.submitted_all:  # the threads go on with the next
                    primed.append(self._stream(pool, self.plan(after.epoch, after.lineage), after.epoch, after.cursor))
                    primed[0].prime()
                keys = [self._key_of(e) for e in done.entries if e is not None]
                pad = [i for i, e in enumerate(done.entries) if e is None]
                rows = [-1 if e is None else self._raw_of(e).index for e in done.entries]
                yield images, labels, done.position, done.skipped, ready, keys, pad, (start.epoch, done.batch), rows
        finally:
            self._abandon([p.handle for p in pending])  # stopped early: what was submitted is not delivered
            stream.cancel()  # a primed next stream is cancelled with the pool when the chain stops (`_chain`)
            follow(None)
