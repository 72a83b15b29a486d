"""The hook stage of the image loader: its own thread between the batch producer and the consumer.

The producer (`production.py`) hands over batches already decoded and cropped: float [0, 1] images when an
`augment` hook is set, final images otherwise. This stage runs the `augment` hook, normalises in place
(`DeviceAugment.finish`), then the `batch_transform` hook, with torch's generators seeded for the batch
(fastdata/hooks.py). In its own thread it overlaps the producer's next batch (DALI's graph or the decode
threads) as well as the training step. On CUDA it works on its own stream, ordered after the producer's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import torch

from fastdata.hooks import augmented, call_hook, pair, seeded
from fastdata.images.device_aug import DeviceAugment
from fastdata.images.options import ImageLoaderOptions

Item = tuple  # (images, labels, cursor, skipped, ready, keys, pad, at, rows): what the producer yields


class HookStage:
    def __init__(self, opts: ImageLoaderOptions, device: torch.device, normalizer: DeviceAugment) -> None:
        self._opts, self._device, self._normalizer = opts, device, normalizer

    def run(self, items: Iterator[Item], stop: threading.Event) -> Iterator[Item]:
        """The producer's items with the hooks applied (runs in the stage's prefetch thread)."""
        stream = torch.cuda.Stream(self._device) if self._device.type == "cuda" else None
        try:
            for images, labels, cursor, skipped, ready, keys, pad, at, rows in items:
                if stop.is_set():
                    return
                if stream is not None:
                    with torch.cuda.stream(stream):
                        if ready is not None:
                            stream.wait_event(ready)
                        images.record_stream(stream)
                        images, labels = self.apply(images, labels, pad, at)
                        ready = torch.cuda.Event()
                        ready.record(stream)
                else:
                    images, labels = self.apply(images, labels, pad, at)
                yield images, labels, cursor, skipped, ready, keys, pad, at, rows
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # stops and joins the producer's thread

    def apply(self, images: torch.Tensor, labels: Any, pad: list[int], at: tuple[int, int]) -> tuple[Any, Any]:
        o = self._opts
        with seeded(o.seed, at[0], o.rank, at[1], self._device):
            if o.augment is not None:
                x = self._augment(images, pad, at)
                images = self._normalizer.finish(x, inplace=x is images)
                if pad:  # eval padding rows: all-zero images in the output dtype, as without hooks
                    images[torch.as_tensor(pad, device=images.device)] = 0
            if o.batch_transform is not None:
                out = call_hook("batch_transform", o.batch_transform, images, labels, epoch=at[0], batch=at[1])
                images, labels = pair("batch_transform", out, epoch=at[0], batch=at[1])
        return images, labels

    def _augment(self, x: torch.Tensor, pad: list[int], at: tuple[int, int]) -> torch.Tensor:
        """The `augment` hook on a float [0, 1] NCHW batch; eval padding rows go in black."""
        if pad:
            x[torch.as_tensor(pad, device=x.device)] = 0
        out = call_hook("augment", self._opts.augment, x, epoch=at[0], batch=at[1])
        return augmented(out, x, epoch=at[0], batch=at[1])
