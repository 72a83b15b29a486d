"""The DALI backend of the image loader: fastdata's plan and reader feed a DALI graph that does the pixel work.

The epoch plan, the reading of the bytes (from local shards or the node-local cache of remote ones),
each sample's augmentation draws, the resumable position and the skipping of bad samples are the ones
every backend shares (`planned.py`, `production.py`, `samples.py`). DALI decodes only each crop window (nvJPEG
with the hardware decoder on GPU, libjpeg-turbo on CPU), resizes, jitters, mirrors and normalises into the final
dtype and layout (`dali_graph.py`); the dense batch reaches torch without a copy on CPU (DLPack) and in
one device copy on GPU. A non-JPEG image whose alpha channel or bit depth DALI's decoders would read otherwise
than the kornia backend is decoded on the host and handed to the graph as RGB (`decode.host_rgb`). Both
backends therefore yield the same samples in the same order, with the same crop boxes and flips, and resume
from each other's `state_dict()`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch

from fastdata.dataset import DatasetView
from fastdata.errors import ShardError, require
from fastdata.images.batch_labels import batch_labels
from fastdata.images.dali_graph import build_pipeline, feeds, graph_args
from fastdata.images.decode import host_rgb
from fastdata.images.device_aug import TORCH_DTYPES
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import derive_seed
from fastdata.images.pixels import decode_problem
from fastdata.images.planned import PlannedBackend
from fastdata.images.samples import BadSamples, Prepared

log = logging.getLogger(__name__)


@dataclass
class _Submitted:
    """A batch fed to the graph: its entries (None: eval padding), the real ones, and the pipeline running them
    (None: nothing to run)."""

    entries: list[Prepared | None]
    real: list[Prepared]
    pipe: Any


class DaliBackend(PlannedBackend):
    name = "dali"

    def __init__(self, view: DatasetView, opts: ImageLoaderOptions, reader: Any = None) -> None:
        require("nvidia.dali", "dali")
        super().__init__(view, opts, reader)
        self._args = graph_args(opts)
        self._pipe: Any = None

    def _pipeline(self) -> Any:
        if self._pipe is None:  # built once: the graph holds no order or random state of its own
            o = self._opts
            self._pipe = build_pipeline(self._args, batch_size=o.batch_size, num_threads=o.num_threads,
                                        seed=derive_seed(o.seed, o.rank, o.world_size))
        return self._pipe

    def _load(self, index: int, row: list[float] | None, dest: None = None) -> Prepared:
        """Thread work for one sample: its bytes read, label and header checked, augmentation decided (the
        graph decodes: there is no destination). A non-JPEG image is decoded here, to the pixels the kornia
        backend decodes (`host_rgb`)."""
        prepared = self._prepare(index, row)
        raw = host_rgb(prepared.raw)
        return prepared if raw is prepared.raw else prepared._replace(raw=raw)

    _lag = 1  # the graph runs batch b while this thread prepares and feeds batch b + 1 (production.py, `_produce`)

    def _submit(self, entries: list[Prepared | None], cuda_stream: Any, at: tuple[int, int]) -> _Submitted:
        """Feed one batch's samples to the graph and schedule its run, without waiting for it."""
        real = [e for e in entries if e is not None]
        if not real:  # an eval batch of padding rows only: nothing for the graph
            return _Submitted(entries, real, None)
        pipe = self._pipeline()
        o = self._opts
        try:
            for name, arrays in zip(self._args.inputs, feeds(self._args, real, resize_short=o.resize_short,
                                                             size=o.image_size, seed=o.seed, epoch=at[0])):
                pipe.feed_input(name, arrays)
            pipe.schedule_run()
        except RuntimeError as exc:
            self._pipe = None  # a failed pipeline is not reused
            raise self._diagnose(real, exc) from exc
        return _Submitted(entries, real, pipe)

    def _collect(self, handle: _Submitted) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """The graph's output of the oldest scheduled batch, padded back to the batch's rows, and on CUDA the event
        that marks the end of the work queued for it on this thread's stream (None on the CPU)."""
        entries, real = handle.entries, handle.real
        images = None
        if handle.pipe is not None:
            pipe, handle.pipe = handle.pipe, None  # taken: `_abandon` must not take an output in its place
            try:
                (out,) = pipe.outputs()
            except RuntimeError as exc:
                self._pipe = None
                raise self._diagnose(real, exc) from exc
            images = self._convert(out)
        rows = len(entries)
        o = self._opts
        hooked = o.augment is not None  # the graph then yields float [0, 1] for the hook stage
        fmt = torch.channels_last if o.channels_last else torch.contiguous_format
        if images is None or len(real) < rows:  # eval padding rows (all-zero images, label -100)
            out = torch.zeros((rows, 3, o.image_size, o.image_size),
                              dtype=torch.float32 if hooked else TORCH_DTYPES[o.dtype],
                              device=self._device).contiguous(memory_format=fmt)
            where = [i for i, e in enumerate(entries) if e is not None]
            if images is not None:
                out[torch.tensor(where, device=self._device)] = images
            images = out
        labels = batch_labels([None if e is None else e.label for e in entries], self._multi_hot)
        labels = labels.to(self._device, non_blocking=True)
        return images, labels, self._ready()  # the copy, padding and labels are queued on this thread's stream

    def _abandon(self, handles: list[_Submitted]) -> None:
        """Take and drop the outputs of scheduled runs that will not be delivered, so that the next batch fed to
        the pipeline (this epoch's restart, or the next epoch's) is the next one it returns. A run whose output
        `_collect` took (and then failed, or whose batch failed after it) has none left to take."""
        for handle in handles:
            if handle is None or handle.pipe is None or handle.pipe is not self._pipe:
                continue  # nothing scheduled, its output taken, or a pipeline already dropped after a failure
            try:
                handle.pipe.outputs()
            except RuntimeError:
                self._pipe = None

    def _diagnose(self, batch: list[Prepared], exc: RuntimeError) -> Exception:
        """Name the samples behind a DALI failure by decoding each of the batch with libjpeg-turbo/Pillow."""
        bad = {}
        for p in batch:
            reason = decode_problem(bytes(p.raw.data))
            if reason is not None:
                bad[p.index] = ShardError(f"corrupt JPEG in {p.raw.shard}, key "
                                                                   f"{p.raw.key}: {reason}")
        if bad:
            first = next(iter(bad.values()))
            hint = "" if self._opts.on_error == "skip" else "; pass on_error='skip' to leave corrupt samples out"
            return BadSamples(set(bad), ShardError(f"{first}{hint}"))
        shards = sorted({str(p.raw.shard) for p in batch})
        return ShardError(f"DALI failed on a batch of {len(batch)} samples from {shards[:4]}"
                          f"{' ...' if len(shards) > 4 else ''}: {' '.join(str(exc).split())[:600]}")

    def _convert(self, out: Any) -> torch.Tensor:
        o, args = self._opts, self._args
        arr = self._to_torch(out.as_tensor())  # the batch is one contiguous buffer: a view, no copy
        if args.layout == "HWC":
            arr = arr.permute(0, 3, 1, 2)  # NHWC storage, NCHW shape: channels_last without a copy
        if o.augment is not None:
            return arr  # float [0, 1] NCHW for the hook; normalised after it
        want = TORCH_DTYPES[o.dtype]
        if arr.dtype != want:  # bfloat16, which DALI does not produce: one conversion pass
            fmt = torch.channels_last if o.channels_last else torch.contiguous_format
            arr = arr.to(want, memory_format=fmt)
        return arr

    def _to_torch(self, dense: Any) -> torch.Tensor:
        """The graph's dense output batch as a torch tensor on the loader's device."""
        if self._device.type == "cpu":
            # Zero copy: with the dynamic executor every output batch owns its buffer, which DALI does not
            # reuse while a reference to it is alive; the DLPack capsule keeps it alive in torch.
            return torch.from_dlpack(dense)
        # On the GPU, one device copy on torch's current stream, so torch's allocator owns the batch's memory.
        # Handing torch DALI's buffer through DLPack saved 0.2 ms a batch and no images/s in three interleaved
        # eval runs on an H100 (benchmarks/dali_stages.py, docs/benchmarks.md), and nothing would order the
        # buffer's return to DALI after the work torch queued on it.
        from nvidia.dali.plugin.pytorch import feed_ndarray

        arr = torch.empty(dense.shape(), dtype=TORCH_DTYPES[self._args.out_dtype], device=self._device)
        feed_ndarray(dense, arr, cuda_stream=torch.cuda.current_stream(self._device))
        return arr

    def close(self) -> None:
        self.stop_ahead()  # before the pipeline goes: the producer may be running it for the next epoch
        self._pipe = None
        super().close()
