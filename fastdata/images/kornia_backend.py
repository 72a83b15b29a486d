"""The kornia backend: threaded libjpeg-turbo decode on the host, batched augmentation on the device.

Pipeline per batch: the rank's epoch plan (`order.py`) -> samples read from the shards (`reader.py`)
-> decode + crop + resize to S x S in `num_threads` threads (`decode.py`, GIL released) -> one uint8
NHWC batch (pinned memory when the device is CUDA) -> `.to(device, non_blocking=True)` -> flip,
colour jitter, normalise, dtype and memory format on the device (`device_aug.py`). A background thread
keeps `prefetch` batches ready (`prefetch.py`).

Every random decision of a sample comes from `sample_rng(seed, epoch, index)`, so a batch's tensors
depend only on which samples it holds: resuming from `state_dict()` is bitwise exact.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from fastdata.dataset import DatasetView
from fastdata.errors import ShardError
from fastdata.images.decode import (
    DEFAULT_MAX_PIXELS,
    TrainParams,
    decode_eval,
    decode_train,
    draw_train_params,
    train_crop_box,
)
from fastdata.images.device_aug import DeviceAugment
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import PAD_LABEL, EpochPlan, epoch_plan, sample_rng
from fastdata.images.prefetch import prefetch
from fastdata.images.reader import SplitReader
from fastdata.images.resume import ResumePoint, check_state, make_state
from fastdata.images.stream import SampleStream

log = logging.getLogger(__name__)


class KorniaBackend:
    name = "kornia"

    def __init__(self, view: DatasetView, opts: ImageLoaderOptions) -> None:
        self._view, self._opts = view, opts
        self._reader = SplitReader(view)
        self._num_classes = len(view.classes)
        self._max_pixels = int(view.manifest.preprocessing.get("max_pixels") or DEFAULT_MAX_PIXELS)
        self._device = torch.device(opts.device)
        self._pin = self._device.type == "cuda"
        self._augment = DeviceAugment(opts, self._device)
        self._epoch = 0
        self._plans: dict[int, EpochPlan] = {}
        self._resume: ResumePoint | None = None
        self._point = ResumePoint(epoch=0, batch=0, cursor=0)  # what the consumer has received so far
        self._skipped = 0

    # ------------------------------------------------------------------ plan and state
    def _plan(self, epoch: int) -> EpochPlan:
        if epoch not in self._plans:
            o = self._opts
            self._plans = {epoch: epoch_plan(len(self._reader), train=o.train, batch_size=o.batch_size,
                                             keep_last=o.keep_last, seed=o.seed, epoch=epoch, rank=o.rank,
                                             world_size=o.world_size)}
        return self._plans[epoch]

    def __len__(self) -> int:
        return self._plan(self._epoch).num_batches

    @property
    def num_samples(self) -> int:
        plan = self._plan(self._epoch)
        return min(len(plan.sequence), plan.num_batches * plan.batch_size)

    @property
    def skipped(self) -> int:
        return self._skipped

    def set_epoch(self, epoch: int) -> None:
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
            raise ValueError(f"epoch must be an integer >= 0, got {epoch!r}")
        if self._resume is not None and self._resume.epoch != epoch:
            self._resume = None
        self._epoch = epoch

    def state_dict(self) -> dict[str, Any]:
        point = self._resume or self._point
        return make_state(self.name, point, self._opts, num_samples=len(self._reader), skipped=self._skipped)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        point = check_state(state, self.name, self._opts, num_samples=len(self._reader))
        if point.batch > self._plan(point.epoch).num_batches:
            raise ValueError(f"state_dict is at batch {point.batch}, but the epoch has "
                             f"{self._plan(point.epoch).num_batches} batches")
        self._epoch, self._resume, self._point = point.epoch, point, point
        self._skipped = int(state.get("skipped", 0))

    # ------------------------------------------------------------------ iteration (consumer side)
    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        epoch = self._epoch
        start = self._resume if self._resume is not None else ResumePoint(epoch=epoch, batch=0, cursor=0)
        self._resume = None
        self._point = start
        plan = self._plan(epoch)
        batches = prefetch(lambda stop: self._produce(plan, start, stop), depth=self._opts.prefetch,
                           name="fastdata-kornia-prefetch")
        for images, labels, cursor, skipped, ready in batches:
            if ready is not None:  # produced on the prefetch thread's CUDA stream
                current = torch.cuda.current_stream(self._device)
                current.wait_event(ready)
                images.record_stream(current)
                labels.record_stream(current)
            self._point = ResumePoint(epoch=epoch, batch=self._point.batch + 1, cursor=cursor)
            self._skipped += skipped
            yield images, labels

    # ------------------------------------------------------------------ production (background thread)
    def _load(self, index: int, epoch: int) -> tuple[torch.Tensor, int, TrainParams | None]:
        o = self._opts
        raw = self._reader.read(index)
        if not 0 <= raw.label < self._num_classes:
            raise ShardError(f"sample {raw.key} in {raw.shard} has label {raw.label}, the manifest lists "
                             f"{self._num_classes} classes")
        if not o.train:
            return decode_eval(raw, resize_short=o.resize_short, size=o.image_size,
                               max_pixels=self._max_pixels), raw.label, None
        rng = sample_rng(o.seed, epoch, index)
        params = draw_train_params(rng, o.color_jitter, o.hflip)
        box, height, width = train_crop_box(raw, rng, scale=o.scale, ratio=o.ratio, max_pixels=self._max_pixels)
        return decode_train(raw, box, height, width, o.image_size), raw.label, params

    def _produce(self, plan: EpochPlan, start: ResumePoint, stop: threading.Event) -> Iterator[tuple]:
        o, size = self._opts, self._opts.image_size
        limit = len(plan.sequence) if not plan.padded else plan.num_batches * plan.batch_size
        pool = ThreadPoolExecutor(o.num_threads, thread_name_prefix="fastdata-decode")
        stream = SampleStream(pool, lambda i: self._load(i, start.epoch), plan.sequence, start=start.cursor,
                              limit=limit, ahead=(o.prefetch + 1) * o.batch_size, padded=plan.padded)
        cuda_stream = torch.cuda.Stream(self._device) if self._pin else None
        failures = 0
        try:
            for b in range(start.batch, plan.num_batches):
                if stop.is_set():
                    return
                rows = plan.rows(b)
                images = torch.zeros((rows, size, size, 3), dtype=torch.uint8, pin_memory=self._pin)
                labels = torch.full((rows,), PAD_LABEL, dtype=torch.int64, pin_memory=self._pin)
                flips = np.zeros(rows, dtype=bool)
                jitter = np.zeros((rows, 4), dtype=np.float32) if o.train and o.color_jitter else None
                skipped, r = 0, 0
                while r < rows:
                    fut = stream.next()
                    if fut is None:  # eval padding row
                        r += 1
                        continue
                    try:
                        image, label, params = fut.result()
                    except ShardError as exc:
                        if o.on_error == "raise":
                            raise
                        skipped += 1
                        failures += 1
                        log.warning("skipping a corrupt sample (on_error='skip'): %s", exc)
                        if failures > max(len(plan.sequence), 1):
                            raise ShardError(f"every sample of this rank's epoch failed; last error: {exc}") from exc
                        if plan.padded:
                            r += 1  # eval: the sample's row becomes a padding row (label -100)
                        continue  # train: the row is filled from the following samples
                    images[r].copy_(image)
                    labels[r] = label
                    if params is not None:
                        flips[r] = params.flip
                        if jitter is not None and params.jitter is not None:
                            jitter[r] = params.jitter
                    r += 1
                pad = np.flatnonzero(labels.numpy() == PAD_LABEL) if plan.padded else None
                out, ready = self._to_device(images, labels, flips, jitter, pad, cuda_stream)
                yield out[0], out[1], stream.position, skipped, ready
        finally:
            stream.cancel()
            pool.shutdown(wait=True, cancel_futures=True)

    def _to_device(self, images: torch.Tensor, labels: torch.Tensor, flips: np.ndarray,
                   jitter: np.ndarray | None, pad: np.ndarray | None,
                   cuda_stream: Any) -> tuple[tuple[torch.Tensor, torch.Tensor], Any]:
        if cuda_stream is None:
            return (self._zero_padding(self._augment(images, flips, jitter), pad), labels), None
        with torch.cuda.stream(cuda_stream):
            x = images.to(self._device, non_blocking=True)
            y = labels.to(self._device, non_blocking=True)
            out = self._zero_padding(self._augment(x, flips, jitter), pad)
            ready = torch.cuda.Event()
            ready.record(cuda_stream)
        return (out, y), ready

    def _zero_padding(self, images: torch.Tensor, pad: np.ndarray | None) -> torch.Tensor:
        """Padding rows are all-zero images in the output dtype (after normalisation), label -100."""
        if pad is not None and len(pad):
            images[torch.from_numpy(pad).to(images.device)] = 0
        return images

    def close(self) -> None:
        self._reader.close()
