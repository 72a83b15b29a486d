"""What both image backends do before decoding: read a planned sample, check its label and header, and
decide its augmentation; then fill a batch from the sample stream, skipping bad samples when asked.

`prepare` runs in worker threads. Every random decision of a sample comes from its row of draws
(`draws.py`: computed for a batch of samples at once, a function of (seed, epoch, index) only), so a
batch depends only on which samples it holds (exact resume, and the same crops on both backends). A
kornia batch is decoded on the host from these; a DALI batch hands the encoded bytes and the decided
parameters to the graph.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from fastdata.errors import ShardError
from fastdata.images.decode import check_header
from fastdata.images.draws import CROP, TrainParams, sample_draws, train_params
from fastdata.images.geometry import Box, center_crop_offsets, random_resized_crop_box, resize_short_size
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import EpochPlan
from fastdata.images.orientation import Upright
from fastdata.images.reader import UNLABELED, RawSample, SplitReader
from fastdata.images.stream import SampleStream, Slot
from fastdata.label_members import label_classes

log = logging.getLogger(__name__)


class Prepared(NamedTuple):
    """A sample ready for decoding: its bytes, label, full size, and what its augmentation decided."""

    index: int  # global index of the sample in the split
    raw: RawSample
    label: int
    height: int
    width: int
    box: Box | None  # train: the random-resized-crop box in full-resolution pixels; eval: None
    params: TrainParams | None  # train: flip and colour-jitter factors

    def eval_geometry(self, resize_short: int, size: int) -> tuple[int, int, int, int]:
        """Eval: (new_h, new_w, top, left) of torchvision Resize(resize_short) + CenterCrop(size)."""
        new_h, new_w = resize_short_size(self.height, self.width, resize_short)
        return (new_h, new_w, *center_crop_offsets(new_h, new_w, size))


class Preparer:
    """`prepare(index, epoch)` for one loader: the label check, the pixel limit and the draws of its options."""

    def __init__(self, reader: SplitReader, opts: ImageLoaderOptions, num_classes: int, *,
                 look_at_jpegs: bool = False) -> None:
        self.reader, self.opts, self.num_classes = reader, opts, num_classes
        self._upright = Upright(len(reader), look_at_jpegs=look_at_jpegs)  # EXIF orientation (orientation.py)
        self._rejected: dict[int, ShardError] = {}  # samples a decoder failed on (on_error="skip")
        # (height << 32) | width of every sample whose header passed `check_header` (0: not yet): later epochs
        # skip the header parse, 3 us of a decode thread's time a sample, half of it waiting for the GIL again
        # after libjpeg-turbo released it. One int64 a sample, written in one store, so a thread never reads
        # half of an entry; shards do not change under an open loader (their sizes are checked at open).
        self._sizes = np.zeros(len(reader), dtype=np.int64)

    def reject(self, indices: set[int], error: ShardError) -> None:
        """From now on, these samples fail as bad samples (with `error` for the first of them)."""
        for i in indices:
            self._rejected.setdefault(i, error)

    def draws(self, epoch: int) -> Callable[[np.ndarray], list[list[float]]] | None:
        """Train: the rows of draws of a batch of sample indices, in one call (`SampleStream` asks for them
        as it submits samples); eval draws nothing (None)."""
        if not self.opts.train:
            return None
        seed = self.opts.seed
        return lambda indices: sample_draws(seed, epoch, indices).tolist()

    def __call__(self, index: int, row: list[float] | None) -> Prepared:
        """Sample `index`, read and checked; in train with its crop and params from `row`, its draws."""
        o = self.opts
        if index in self._rejected:
            raise self._rejected[index]
        raw = self.reader.read(index)
        if raw.index != index:  # a repeat within the epoch (planning/weights.py, a mixture's): it keeps its own id
            raw = dataclasses.replace(raw, drawn=index)
        if self.num_classes and not all(0 <= c < self.num_classes for c in label_classes(raw.label)):
            raise ShardError(f"sample {raw.key} in {raw.shard} has label {raw.label}, the manifest lists "
                             f"{self.num_classes} classes")
        if not self.num_classes and raw.label != UNLABELED:
            raise ShardError(f"sample {raw.key} in {raw.shard} has label {raw.label} in an unlabeled dataset")
        height, width = self._size(raw)
        raw, height, width = self._upright(raw, height, width)
        if not o.train:
            new_h, new_w = resize_short_size(height, width, o.resize_short)
            if new_h * new_w > o.max_pixels:  # a 1 x 50000 strip would become 256 x 12.8 M pixels
                raise ShardError(f"image in {raw.shard}, key {raw.key}: {width}x{height} with its shorter side "
                                 f"resized to {o.resize_short} for eval would be {new_w}x{new_h} pixels, more than "
                                 f"max_pixels={o.max_pixels} (an extreme aspect ratio)")
            return Prepared(index, raw, raw.label, height, width, None, None)
        params = train_params(row, o.color_jitter, o.hflip)
        box = random_resized_crop_box(row[CROP:], height, width, scale=o.scale, ratio=o.ratio)
        return Prepared(index, raw, raw.label, height, width, box, params)

    def _size(self, raw: RawSample) -> tuple[int, int]:
        """(height, width) of the sample's image: its header checked once (pixel limit included), then cached."""
        known = int(self._sizes[raw.index]) if 0 <= raw.index < len(self._sizes) else -1
        if known > 0:
            return known >> 32, known & 0xFFFFFFFF
        height, width = check_header(raw, self.opts.max_pixels)
        if known == 0:
            self._sizes[raw.index] = (height << 32) | width
        return height, width


class BadSamples(Exception):
    """Raised by a backend's `_submit` or `_collect` (production.py): these sample indices cannot be used; `error`
    names the first one."""

    def __init__(self, indices: set[int], error: ShardError) -> None:
        super().__init__(str(error))
        self.indices, self.error = indices, error


class SkipBudget:
    """Counts the bad samples met while producing one epoch; gives up when the failures reach the epoch's
    sample count: in eval, every sample failed (an epoch of nothing but padding rows is an error, not a
    result); in train, where replacements wrap around the epoch, as many failed reads as samples."""

    def __init__(self, plan: EpochPlan) -> None:
        self.limit = max(len(plan.sequence), 1)
        self.failures = 0

    def spend(self, exc: ShardError) -> None:
        self.failures += 1
        if self.failures >= self.limit:
            raise ShardError(f"every sample of this rank's epoch failed; last error: {exc}") from exc


def fill_batch(stream: SampleStream, rows: int, plan: EpochPlan, *, on_error: str, budget: SkipBudget,
               resolve: Callable[[list[Slot | None]], list[object]]) -> tuple[list[object | None], int]:
    """`rows` entries for one batch from `stream`: each a resolved result, or None for a padding row.

    `resolve` turns the stream's futures into results in order (a ShardError for a bad sample). Bad
    samples raise, or with on_error='skip' are logged and replaced: by the following samples in train,
    by a padding row in eval. Returns (entries, samples skipped)."""
    entries: list[object | None] = []
    skipped = 0
    while len(entries) < rows:
        for res in resolve([stream.next() for _ in range(rows - len(entries))]):
            if not isinstance(res, ShardError):
                entries.append(res)
                continue
            if on_error == "raise":
                raise res
            skipped += 1
            budget.spend(res)
            log.warning("skipping a corrupt sample (on_error='skip'): %s", res)
            if plan.padded:
                entries.append(None)
    return entries, skipped


def resolve_futures(futures: list[Slot | None]) -> list[object]:
    """Results in order: the slot's value, its ShardError, or None for a padding row."""
    out: list[object] = []
    for fut in futures:
        try:
            out.append(None if fut is None else fut.result())
        except ShardError as exc:
            out.append(exc)
    return out
