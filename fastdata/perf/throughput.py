"""Time how fast an iterable of batches delivers images: end to end (from construction) and steady state."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fastdata.images.order import PAD_LABEL


@dataclass(frozen=True)
class Throughput:
    """One timed pass. `seconds` runs from the start (construction, unless warm-up batches were
    skipped) to the arrival of the last counted batch; `first_batch_s` is the latency of the first."""

    images: int
    batches: int
    seconds: float
    first_batch_s: float
    first_batch_images: int

    @property
    def images_per_s(self) -> float:
        return self.images / self.seconds if self.seconds > 0 else 0.0

    @property
    def steady_images_per_s(self) -> float:
        """Images after the first batch divided by the time after it (startup excluded)."""
        rest = self.seconds - self.first_batch_s
        n = self.images - self.first_batch_images
        return n / rest if rest > 0 and n > 0 else self.images_per_s


def batch_images(batch: Any) -> int:
    """Number of images in a batch: `(images, labels)`, a tensor/array, or a list of decoded images."""
    if isinstance(batch, tuple) and batch:
        return batch_images(batch[0])
    if hasattr(batch, "shape"):
        return int(batch.shape[0])
    return len(batch)


def real_images(batch: Any) -> int:
    """Like `batch_images`, but eval padding rows (label -100; a multi-hot row of -100 throughout) are not counted
    (unlabeled rows, -1, are)."""
    if isinstance(batch, tuple) and len(batch) == 2 and hasattr(batch[1], "shape") and hasattr(batch[1], "sum"):
        labels = batch[1]
        if labels.ndim == 2:  # --multi-label: a row of classes an image
            return int((labels != PAD_LABEL).any(1).sum())
        return int((labels != PAD_LABEL).sum()) if labels.ndim == 1 else int(labels.shape[0])
    return batch_images(batch)


def epochs(loader: Any, *, start_epoch: int = 0) -> Iterator[Any]:
    """Batches of epoch after epoch (calling `set_epoch` when the loader has it), without end."""
    for epoch in itertools.count(start_epoch):
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        got = False
        for batch in loader:
            got = True
            yield batch
        if not got:
            raise ValueError("the loader yielded no batch in a whole epoch; is the dataset smaller than one batch "
                             "(train drops the last partial batch)?")


def time_batches(make: Callable[[], Iterable[Any]], /, *, max_batches: int | None = None,
                 warmup_batches: int = 0, on_batch: Callable[[Any], None] | None = None,
                 count: Callable[[Any], int] = real_images,
                 on_start: Callable[[], None] | None = None) -> Throughput:
    """Call `make()` and iterate what it returns, timing it.

    With `warmup_batches=0` the clock starts before `make()` (end to end, construction included);
    otherwise it restarts after the warm-up batches (steady state). Stops after `max_batches`
    counted batches, or when the iterable ends. `on_batch` sees every counted batch (e.g. to check
    shapes or to consume it like a training step would). `count` says how many images a batch holds
    (default: real images, padding rows with a negative label left out). `on_start`, with warm-up batches,
    is called just before the clock restarts (e.g. to read the CPU time the warm-up spent).
    """
    if max_batches is not None and max_batches < 1:
        raise ValueError(f"max_batches must be >= 1 or None, got {max_batches}")
    if warmup_batches < 0:
        raise ValueError(f"warmup_batches must be >= 0, got {warmup_batches}")
    start = time.perf_counter()
    it = iter(make())
    for _ in range(warmup_batches):
        next(it)
    if warmup_batches:
        if on_start is not None:
            on_start()
        start = time.perf_counter()
    images = batches = first_images = 0
    first = end = 0.0
    for batch in it:
        if on_batch is not None:
            on_batch(batch)  # counted in the time: e.g. a CUDA synchronize, or a consumer's work
        end = time.perf_counter()
        n = count(batch)
        if batches == 0:
            first, first_images = end - start, n
        images += n
        batches += 1
        if max_batches is not None and batches >= max_batches:
            break
    if batches == 0:
        raise ValueError("the iterable yielded no batch to time")
    close = getattr(it, "close", None)
    if callable(close):
        close()
    return Throughput(images=images, batches=batches, seconds=end - start, first_batch_s=first,
                      first_batch_images=first_images)
