"""The DALI backend of the image loader: fastdata's plan and reader feed a DALI graph that does the pixel work.

The epoch plan, the reading of the bytes (from local shards or the node-local cache of remote ones),
each sample's augmentation draws, the resumable position and the skipping of bad samples are the ones
every backend shares (`planned.py`, `samples.py`). DALI decodes only each crop window (nvJPEG with the
hardware decoder on GPU, libjpeg-turbo on CPU), resizes, jitters, mirrors and normalises into the final
dtype and layout (`dali_graph.py`); the dense batch reaches torch without a copy on CPU (DLPack) and in
one device copy on GPU. Both backends therefore yield the same samples in the same order, with the
same crop boxes and flips, and resume from each other's `state_dict()`.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from fastdata.dataset import DatasetView
from fastdata.errors import ShardError, require
from fastdata.images.dali_graph import build_pipeline, feeds, graph_args
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import PAD_LABEL, derive_seed
from fastdata.images.pixels import decode_problem
from fastdata.images.planned import PlannedBackend
from fastdata.images.samples import BadSamples, Prepared

log = logging.getLogger(__name__)

_TORCH_DTYPES = {"uint8": torch.uint8, "float16": torch.float16, "float32": torch.float32,
                 "bfloat16": torch.bfloat16}


class DaliBackend(PlannedBackend):
    name = "dali"

    def __init__(self, view: DatasetView, opts: ImageLoaderOptions) -> None:
        require("nvidia.dali", "dali")
        super().__init__(view, opts)
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
        graph decodes: there is no destination)."""
        return self._prepare(index, row)

    def _assemble(self, entries: list[Prepared | None], cuda_stream: Any,
                  at: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor, Any]:
        real = [e for e in entries if e is not None]
        rows = len(entries)
        o = self._opts
        images = self._run(real, at[0]) if real else None
        hooked = o.augment is not None  # the graph then yields float [0, 1] for the hook stage
        fmt = torch.channels_last if o.channels_last else torch.contiguous_format
        if images is None or len(real) < rows:  # eval padding rows (all-zero images, label -100)
            out = torch.zeros((rows, 3, o.image_size, o.image_size),
                              dtype=torch.float32 if hooked else _TORCH_DTYPES[o.dtype],
                              device=self._device).contiguous(memory_format=fmt)
            where = [i for i, e in enumerate(entries) if e is not None]
            if images is not None:
                out[torch.tensor(where, device=self._device)] = images
            images = out
        labels = torch.tensor([PAD_LABEL if e is None else e.label for e in entries], dtype=torch.int64)
        return images, labels.to(self._device, non_blocking=True), None

    def _run(self, batch: list[Prepared], epoch: int) -> torch.Tensor:
        """The graph's output for these samples, as a torch tensor [n, 3, S, S] on the loader's device."""
        pipe = self._pipeline()
        o = self._opts
        try:
            for name, arrays in zip(self._args.inputs, feeds(self._args, batch, resize_short=o.resize_short,
                                                             size=o.image_size, seed=o.seed, epoch=epoch)):
                pipe.feed_input(name, arrays)
            (out,) = pipe.run()
        except RuntimeError as exc:
            self._pipe = None  # a failed pipeline is not reused
            raise self._diagnose(batch, exc) from exc
        return self._convert(out)

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
        dense = out.as_tensor()  # the batch is one contiguous buffer: a view, no copy
        if self._device.type == "cpu":
            # Zero copy: with the dynamic executor every output batch owns its buffer, which DALI does not
            # reuse while a reference to it is alive; the DLPack capsule keeps it alive in torch.
            arr = torch.from_dlpack(dense)
        else:
            from nvidia.dali.plugin.pytorch import feed_ndarray

            arr = torch.empty(dense.shape(), dtype=_TORCH_DTYPES[args.out_dtype], device=self._device)
            feed_ndarray(dense, arr, cuda_stream=torch.cuda.current_stream(self._device))
        if args.layout == "HWC":
            arr = arr.permute(0, 3, 1, 2)  # NHWC storage, NCHW shape: channels_last without a copy
        if o.augment is not None:
            return arr  # float [0, 1] NCHW for the hook; normalised after it
        want = _TORCH_DTYPES[o.dtype]
        if arr.dtype != want:  # bfloat16, which DALI does not produce: one conversion pass
            fmt = torch.channels_last if o.channels_last else torch.contiguous_format
            arr = arr.to(want, memory_format=fmt)
        return arr

    def close(self) -> None:
        self.stop_ahead()  # before the pipeline goes: the producer may be running it for the next epoch
        self._pipe = None
        super().close()
