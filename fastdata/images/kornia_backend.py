"""The kornia backend: threaded libjpeg-turbo decode on the host, batched augmentation on the device.

Pipeline per batch: the rank's epoch plan (`order.py`) -> samples read from the shards (`reader.py`)
-> decode + crop + resize to S x S in `num_threads` threads (`decode.py`, GIL released), each image
already in the byte order of its batch row -> one uint8 NHWC batch, filled with plain memcpys
(numpy, no torch intra-op threads; pinned memory when the device is CUDA) ->
`.to(device, non_blocking=True)` -> colour jitter, normalise, dtype and memory format on the
device, batched (`device_aug.py`). The horizontal flip is applied per sample to the S x S result in
the decode thread (on the device with device_decode). A background thread keeps `prefetch` batches
ready (`prefetch.py`).

Every random decision of a sample comes from `sample_rng(seed, epoch, index)`, so a batch's tensors
depend only on which samples it holds: resuming from `state_dict()` is bitwise exact.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from fastdata.dataset import DatasetView
from fastdata.errors import ShardError
from fastdata.images.decode import (
    TrainParams,
    check_header,
    decode_eval,
    decode_train,
    draw_train_params,
    is_jpeg,
    train_crop_box,
)
from fastdata.images.device_aug import DeviceAugment
from fastdata.images.device_decode import Encoded, decode_on_device
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
        self._max_pixels = opts.max_pixels  # the loader's own limit, never a number the dataset supplies
        self._device = torch.device(opts.device)
        self._pin = self._device.type == "cuda"
        self._augment = DeviceAugment(opts, self._device)
        self._epoch = 0
        self._plans: dict[int, EpochPlan] = {}
        self._resume: ResumePoint | None = None
        self._point = ResumePoint(epoch=0, batch=0, cursor=0)  # what the consumer has received so far
        self._skipped = 0
        self._failures = 0  # corrupt samples met in the epoch being produced (guards against all-corrupt)

    # ------------------------------------------------------------------ plan and state
    def _plan(self, epoch: int) -> EpochPlan:
        if epoch not in self._plans:
            o = self._opts
            self._plans = {epoch: epoch_plan(len(self._reader), train=o.train, batch_size=o.batch_size,
                                             keep_last=o.keep_last, seed=o.seed, epoch=epoch, rank=o.rank,
                                             world_size=o.world_size)}
            if self._plans[epoch].num_batches == 0:
                log.warning("epoch %d yields no batch on rank %d: %d samples over %d ranks with batch_size %d "
                            "(drop_last=%s)", epoch, o.rank, len(self._reader), o.world_size, o.batch_size,
                            not o.keep_last)
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
        try:
            yield from self._deliver(batches, epoch)
        finally:
            batches.close()  # stops and joins the prefetch thread, also on an early `break`

    def _deliver(self, batches: Iterator[tuple], epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
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
    def _load(self, index: int, epoch: int) -> tuple[torch.Tensor | Encoded, int, TrainParams | None]:
        """Decode-thread work for one sample: an S x S uint8 HWC image (or, with device_decode, the bytes)."""
        o = self._opts
        raw = self._reader.read(index)
        if self._num_classes and not 0 <= raw.label < self._num_classes:
            raise ShardError(f"sample {raw.key} in {raw.shard} has label {raw.label}, the manifest lists "
                             f"{self._num_classes} classes")
        params, box = None, None
        if o.train:
            rng = sample_rng(o.seed, epoch, index)
            params = draw_train_params(rng, o.color_jitter, o.hflip)
            box, height, width = train_crop_box(raw, rng, scale=o.scale, ratio=o.ratio, max_pixels=self._max_pixels)
        if o.device_decode and is_jpeg(raw.data):  # other formats (adopted shards) decode on the host
            if box is None:
                check_header(raw, self._max_pixels)
            data = torch.frombuffer(bytearray(raw.data), dtype=torch.uint8)
            return Encoded(data=data, key=raw.key, shard=str(raw.shard), box=box,
                           flip=params is not None and params.flip), raw.label, params
        if box is None:
            return decode_eval(raw, resize_short=o.resize_short, size=o.image_size,
                               max_pixels=self._max_pixels), raw.label, None
        return decode_train(raw, box, height, width, o.image_size, flip=params.flip), raw.label, params

    def _resolve(self, futures: list[Future | None]) -> list[tuple | ShardError | None]:
        """Results in order: (image, label, params), the sample's ShardError, or None for a padding row."""
        out: list[tuple | ShardError | None] = []
        for fut in futures:
            try:
                out.append(None if fut is None else fut.result())
            except ShardError as exc:
                out.append(exc)
        if self._opts.device_decode:
            todo = [i for i, r in enumerate(out) if isinstance(r, tuple) and isinstance(r[0], Encoded)]
            images = decode_on_device([out[i][0] for i in todo], self._device, size=self._opts.image_size,
                                      resize_short=self._opts.resize_short)
            for i, image in zip(todo, images):
                out[i] = image if isinstance(image, ShardError) else (image, *out[i][1:])
        return out

    def _fill(self, stream: SampleStream, rows: int, plan: EpochPlan) -> tuple[list[tuple | None], int]:
        """`rows` entries for one batch; corrupt samples raise, or with on_error='skip' are logged and
        replaced: by the following samples in train, by a padding row in eval."""
        entries: list[tuple | None] = []
        skipped = 0
        while len(entries) < rows:
            for res in self._resolve([stream.next() for _ in range(rows - len(entries))]):
                if not isinstance(res, ShardError):
                    entries.append(res)
                    continue
                if self._opts.on_error == "raise":
                    raise res
                skipped += 1
                self._failures += 1
                log.warning("skipping a corrupt sample (on_error='skip'): %s", res)
                if self._failures > max(len(plan.sequence), 1):
                    raise ShardError(f"every sample of this rank's epoch failed; last error: {res}") from res
                if plan.padded:
                    entries.append(None)
        return entries, skipped

    def _produce(self, plan: EpochPlan, start: ResumePoint, stop: threading.Event) -> Iterator[tuple]:
        o, size = self._opts, self._opts.image_size
        limit = len(plan.sequence) if not plan.padded else plan.num_batches * plan.batch_size
        pool = ThreadPoolExecutor(o.num_threads, thread_name_prefix="fastdata-decode")
        stream = SampleStream(pool, lambda i: self._load(i, start.epoch), plan.sequence, start=start.cursor,
                              limit=limit, ahead=(o.prefetch + 1) * o.batch_size, padded=plan.padded)
        cuda_stream = torch.cuda.Stream(self._device) if self._device.type == "cuda" else None
        self._failures = 0
        try:
            for b in range(start.batch, plan.num_batches):
                if stop.is_set():
                    return
                with torch.cuda.stream(cuda_stream) if cuda_stream is not None else contextlib.nullcontext():
                    entries, skipped = self._fill(stream, plan.rows(b), plan)
                    images, labels, ready = self._assemble(entries, size, cuda_stream)
                yield images, labels, stream.position, skipped, ready
        finally:
            stream.cancel()
            pool.shutdown(wait=True, cancel_futures=True)

    def _assemble(self, entries: list[tuple | None], size: int, cuda_stream: Any) -> tuple:
        """One uint8 NHWC batch (pinned host memory, or on the device with device_decode), moved with
        non_blocking=True, then jittered and normalised on the device.

        Host images arrive dense in the NHWC row layout (`resize_hwc`), so filling a row is a memcpy,
        done by numpy: single-threaded, so it starts no torch intra-op thread team that would compete
        with the decode threads for the cores."""
        rows = len(entries)
        on_device = self._opts.device_decode
        where = {"device": self._device} if on_device else {"pin_memory": self._pin}
        images = torch.empty((rows, size, size, 3), dtype=torch.uint8, **where)  # padding rows zeroed below
        labels = torch.full((rows,), PAD_LABEL, dtype=torch.int64, pin_memory=self._pin)
        host, label_rows = (None if on_device else images.numpy()), labels.numpy()
        jitter = np.zeros((rows, 4), dtype=np.float32) if self._opts.train and self._opts.color_jitter else None
        for r, entry in enumerate(entries):
            if entry is None:  # padding row
                continue
            image, label, params = entry
            if host is None:
                images[r].copy_(image)
            else:
                host[r] = image.numpy()
            label_rows[r] = label
            if jitter is not None and params is not None and params.jitter is not None:
                jitter[r] = params.jitter
        pad = np.flatnonzero(label_rows == PAD_LABEL)
        x = images.to(self._device, non_blocking=True)
        y = labels.to(self._device, non_blocking=True)
        out = self._zero_padding(self._augment(x, jitter), pad)
        ready = None
        if cuda_stream is not None:
            ready = torch.cuda.Event()
            ready.record(cuda_stream)
        return out, y, ready

    def _zero_padding(self, images: torch.Tensor, pad: np.ndarray | None) -> torch.Tensor:
        """Padding rows are all-zero images in the output dtype (after normalisation), label -100."""
        if pad is not None and len(pad):
            images[torch.from_numpy(pad).to(images.device)] = 0
        return images

    def close(self) -> None:
        self._reader.close()
