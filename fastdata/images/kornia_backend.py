"""The kornia backend: threaded libjpeg-turbo decode on the host, batched augmentation on the device.

Pipeline per batch: the rank's epoch plan (`order.py`) -> samples read from the shards (`reader.py`)
-> decode + crop + resize to S x S in `num_threads` threads (`decode.py`, GIL released), each image
written straight into its row of the uint8 NHWC batch on a CPU-only loader (`rows.py`; for a CUDA
device the rows are copied into a pinned batch by numpy memcpys, no torch intra-op threads) ->
`.to(device, non_blocking=True)` -> colour jitter, normalise, dtype and memory format on the
device, batched (`device_aug.py`). The horizontal flip is applied per sample to the S x S result in
the decode thread (on the device with device_decode). A background thread keeps `prefetch` batches
ready (`prefetch.py`).

Every random decision of a sample comes from its row of draws (`draws.py`, a function of (seed, epoch,
index) only), so a batch's tensors depend only on which samples it holds: resuming from `state_dict()`
is bitwise exact.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from fastdata.dataset import DatasetView
from fastdata.errors import ShardError
from fastdata.images.batch_labels import batch_labels
from fastdata.images.buffers import BufferPool
from fastdata.images.decode import decode_eval, decode_train, is_jpeg
from fastdata.images.device_aug import pool_size
from fastdata.images.device_decode import Encoded, decode_on_device
from fastdata.images.draws import TrainParams
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.planned import PlannedBackend
from fastdata.images.reader import RawSample
from fastdata.images.rows import BatchRows, Row
from fastdata.images.samples import resolve_futures
from fastdata.images.stream import Slot

log = logging.getLogger(__name__)


class KorniaBackend(PlannedBackend):
    name = "kornia"

    def __init__(self, view: DatasetView, opts: ImageLoaderOptions, reader: Any = None) -> None:
        super().__init__(view, opts, reader)
        self._pin = self._device.type == "cuda"
        self._hosts = BufferPool(keep=pool_size(opts))  # uint8 batches on a CPU-only loader

    def _cuda_stream(self) -> Any:
        return torch.cuda.Stream(self._device) if self._device.type == "cuda" else None

    def _rows(self, cursor: int) -> BatchRows | None:
        """Host batches of a CPU-only loader are written row by row by the decode threads (`rows.py`)."""
        if self._opts.device_decode or self._pin:
            return None
        size, batch = self._opts.image_size, self._opts.batch_size
        return BatchRows(lambda: self._hosts.take((batch, size, size, 3), np.uint8), batch, cursor)

    def _load(self, index: int, row: list[float] | None, dest: Row | None) -> tuple[torch.Tensor | Encoded | Row, int,
                                                                                   TrainParams | None, RawSample]:
        """Decode-thread work for one sample: (an S x S uint8 HWC image, `dest` once the image is written there,
        or with device_decode the bytes; label; augmentation parameters; the raw sample)."""
        o = self._opts
        p = self._prepare(index, row)
        if o.device_decode and is_jpeg(p.raw.data):  # other formats (adopted shards) decode on the host
            data = torch.frombuffer(bytearray(p.raw.data), dtype=torch.uint8)
            return Encoded(data=data, key=p.raw.key, shard=str(p.raw.shard), box=p.box,
                           flip=p.params is not None and p.params.flip), p.label, p.params, p.raw
        out = None if dest is None else dest.array
        if p.box is None:
            image = decode_eval(p.raw, resize_short=o.resize_short, size=o.image_size, out=out)
        else:
            image = decode_train(p.raw, p.box, p.height, p.width, o.image_size, flip=p.params.flip, out=out)
        return image if dest is None else dest, p.label, p.params, p.raw

    def _raw_of(self, entry: tuple) -> RawSample:
        return entry[3]

    def _resolve(self, futures: list[Slot | None]) -> list[object]:
        """Results in order: (image, label, params), the sample's ShardError, or None for a padding row."""
        out = resolve_futures(futures)
        if self._opts.device_decode:
            todo = [i for i, r in enumerate(out) if isinstance(r, tuple) and isinstance(r[0], Encoded)]
            images = decode_on_device([out[i][0] for i in todo], self._device, size=self._opts.image_size,
                                      resize_short=self._opts.resize_short)
            for i, image in zip(todo, images):
                out[i] = image if isinstance(image, ShardError) else (image, *out[i][1:])
        return out

    def _submit(self, entries: list[Any], cuda_stream: Any, at: tuple[int, int]) -> tuple:
        """One uint8 NHWC batch (the rows the decode threads wrote, pinned host memory, or on the device with
        device_decode), moved with non_blocking=True, then jittered and normalised on the device.

        On a CPU-only loader the batch is the block its first sample was written to (`rows.py`): only rows
        that a skipped sample moved are copied. Other host images arrive dense in the NHWC row layout
        (`resize_hwc`), so filling a row is a memcpy, done by numpy: single-threaded, so it starts no torch
        intra-op thread team that would compete with the decode threads for the cores."""
        rows, size = len(entries), self._opts.image_size
        on_device = self._opts.device_decode
        where = {"device": self._device} if on_device else {"pin_memory": self._pin}
        first = next((e[0] for e in entries if e is not None and isinstance(e[0], Row)), None)
        if on_device or self._pin:
            images = torch.empty((rows, size, size, 3), dtype=torch.uint8, **where)  # padding rows zeroed below
        elif first is not None:  # written in place by the decode threads
            images = torch.from_numpy(first.owner.batch(first, rows))
        else:  # a pooled host buffer: already mapped (buffers.py)
            images = torch.from_numpy(self._hosts.take((rows, size, size, 3), np.uint8))
        host, label_rows = (None if on_device else images.numpy()), [None] * rows
        jitter = np.zeros((rows, 4), dtype=np.float32) if self._opts.train and self._opts.color_jitter else None
        for r, entry in enumerate(entries):
            if entry is None:  # padding row
                continue
            image, label, params, _ = entry
            if isinstance(image, Row):
                if image.buffer is not first.buffer or image.row != r:  # moved by a skipped sample
                    host[r] = image.array
            elif host is None:
                images[r].copy_(image)
            else:
                host[r] = image.numpy()
            label_rows[r] = label
            if jitter is not None and params is not None and params.jitter is not None:
                jitter[r] = params.jitter
        pad = np.array([r for r, entry in enumerate(entries) if entry is None], dtype=np.int64)
        labels = batch_labels(label_rows, self._multi_hot)
        labels = labels.pin_memory() if self._pin else labels
        x = images.to(self._device, non_blocking=True)
        y = labels.to(self._device, non_blocking=True)
        if self._opts.augment is None:
            out = self._zero_padding(self._normalizer(x, jitter), pad)
        else:  # float [0, 1] for the hook stage, which normalises after the user's augment hook
            out = self._normalizer.unit(x, jitter)
        return out, y, self._ready(cuda_stream)

    def _zero_padding(self, images: torch.Tensor, pad: np.ndarray | None) -> torch.Tensor:
        """Padding rows are all-zero images in the output dtype (after normalisation), label -100."""
        if pad is not None and len(pad):
            images[torch.from_numpy(pad).to(images.device)] = 0
        return images
