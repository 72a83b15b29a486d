"""The DALI backend of the image loader: a DALI graph over our WebDataset shards and `.idx` files.

The graph (dali_graph.py) reads with `fn.readers.webdataset`, decodes (nvJPEG with the hardware
decoder on GPU; only the crop region for training), resizes, flips and normalises into the final
dtype and layout, and hands the dense batch to torch: on CPU as a view of DALI's output buffer (no
copy), on GPU in one device copy. The epoch plan (dali_plan.py) makes the order a pure function of
(seed, epoch, rank, world_size) and gives every rank the same number of batches; eval pads with
zero images labelled -100. Resume uses DALI's pipeline checkpoints.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Iterator
from typing import Any

import torch

from fastdata.dataset import DatasetView
from fastdata.errors import ShardError, require
from fastdata.images.dali_graph import build_pipeline, dali_dtype, graph_args
from fastdata.images.dali_plan import EpochPlan, ShardSource, plan_epoch, rank_stream
from fastdata.images.dali_scan import SkipFilter, first_bad
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import PAD_LABEL
from fastdata.images.reader import UNLABELED, parse_label

log = logging.getLogger(__name__)

_NAMED_SAMPLE = re.compile(r"(?P<shard>\S+\.tar):\d+:(?P<key>[^.\s]+)\.\w+")
_TORCH_DTYPES = {"uint8": torch.uint8, "float16": torch.float16, "float32": torch.float32,
                 "bfloat16": torch.bfloat16}


class DaliBackend:
    """Backend protocol: len, set_epoch, iter -> (images, labels), state_dict/load_state_dict."""

    name = "dali"

    def __init__(self, view: DatasetView, opts: ImageLoaderOptions) -> None:
        require("nvidia.dali", "dali")
        if view.manifest.shard_format != "wds":
            raise ValueError(f"backend='dali' reads WebDataset tar shards; {view.root} holds "
                             f"{view.manifest.shard_format!r} shards: use backend='kornia', "
                             "or convert again with --format wds")
        sources = []
        for ref in view.shards:
            if ref.index_path is None or not ref.index_path.exists():
                raise ShardError(f"shard {ref.path} has no DALI index (.idx) beside it; re-run `fastdata convert`")
            sources.append(ShardSource(path=ref.path, index_path=ref.index_path, samples=ref.info.samples,
                                       sha256=ref.info.sha256))
        self.view = view
        self.opts = opts
        self._filter = (SkipFilter(tuple(sources), num_threads=opts.num_threads,
                                   image_members=view.manifest.image_members) if opts.on_error == "skip" else None)
        self._shards = self._filter.shards if self._filter else tuple(sources)
        self._device = torch.device(opts.device)
        self._epoch = 0
        self._resume: dict[str, Any] | None = None
        self._pipe: Any = None
        self._pipe_key: tuple[int, int] | None = None  # (epoch, batches pulled) the live pipeline is at
        self._inflight: int | None = None  # iterations scheduled and not handed out; None: nothing scheduled yet
        self._consumed = 0  # batches yielded so far in the current epoch
        self._keys: tuple[Any, int] | None = None  # (source_info TensorList, rows) of the last batch

    # -- protocol -------------------------------------------------------------------------------
    def plan(self, epoch: int | None = None) -> EpochPlan:
        o = self.opts
        return plan_epoch(self._shards, train=o.train, batch_size=o.batch_size, keep_last=o.keep_last, seed=o.seed,
                          epoch=self._epoch if epoch is None else epoch, rank=o.rank, world_size=o.world_size)

    def __len__(self) -> int:
        return self.plan().batches

    @property
    def num_samples(self) -> int:
        return self.plan().num_samples

    @property
    def skipped(self) -> int:
        return len(self._filter.bad) if self._filter else 0

    @property
    def last_keys(self) -> list[str]:
        """"shard.tar:offset:key.jpg" of the last batch's real rows (debugging; decoded on access)."""
        if self._keys is None:
            return []
        info, rows = self._keys
        return [info.at(i).tobytes().decode("utf-8", "replace") for i in range(rows)]

    def set_epoch(self, epoch: int) -> None:
        if not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be an integer >= 0, got {epoch!r}")
        if epoch != self._epoch:
            self._resume = None
            self._consumed = 0  # state_dict() now describes the start of the new epoch
        self._epoch = epoch

    def state_dict(self) -> dict[str, Any]:
        if self._resume is not None:  # loaded and not iterated yet: still that position
            return dict(self._resume)
        plan = self.plan()
        checkpoint = None
        if self._pipe is not None and 0 < self._consumed < plan.dali_batches:
            raw = self._pipe.checkpoint()
            checkpoint = base64.b64encode(raw if isinstance(raw, bytes) else raw.encode("latin-1")).decode("ascii")
        return {"backend": self.name, "epoch": self._epoch, "batches": self._consumed, "checkpoint": checkpoint,
                **self._settings()}

    def _settings(self) -> dict[str, Any]:
        """What the order depends on: saved in the state, and checked equal when it is loaded."""
        o = self.opts
        return {"seed": o.seed, "rank": o.rank, "world_size": o.world_size, "train": o.train,
                "batch_size": o.batch_size, "samples": sum(s.samples for s in self._shards)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("backend") != self.name:
            raise ValueError(f"not a state of the dali backend: {str(state)[:200]}; "
                             "a loader resumes only from its own backend's state_dict()")
        diff = {k: (state.get(k), v) for k, v in self._settings().items() if state.get(k) != v}
        if diff:
            raise ValueError(f"the state was saved by a loader with other settings (saved, now): {diff}; "
                             "resume with the same seed, rank, world_size, train, batch_size and dataset")
        self.set_epoch(int(state["epoch"]))
        self._resume = dict(state)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        plan = self.plan()
        start, checkpoint = 0, None
        if self._resume is not None and self._resume["epoch"] == self._epoch:
            start, checkpoint = int(self._resume["batches"]), self._resume.get("checkpoint")
        self._resume = None
        self._consumed = start
        if start < plan.dali_batches:
            self._prepare(plan, start, checkpoint)
        for b in range(start, plan.batches):
            if b < plan.dali_batches:
                rows = plan.last_rows if b == plan.dali_batches - 1 else self.opts.batch_size
                batch = self._convert(self._run(plan, b), rows)
            else:
                batch = self._padding()
                self._keys = None
            self._consumed = b + 1
            yield batch

    # -- pipeline -------------------------------------------------------------------------------
    def _key(self, pulled: int) -> tuple[int, int]:
        # Eval epochs are identical and the reader wraps to the block start at each epoch end.
        return (0 if not self.opts.train else self._epoch, pulled)

    def _prepare(self, plan: EpochPlan, start: int, checkpoint: str | None) -> None:
        """A pipeline positioned to yield batch `start` of this epoch next."""
        if checkpoint is None and start == 0 and self._pipe is not None and self._pipe_key is not None:
            epoch_key, pulled = self._pipe_key
            fresh = epoch_key == self._key(0)[0] and pulled == 0
            reader_epoch = -(-plan.rank_samples // self.opts.batch_size)  # batches, last one padded by DALI
            wrapped = not self.opts.train and plan.dali_batches == reader_epoch and pulled % reader_epoch == 0
            if fresh or wrapped:
                return  # at the start of this epoch's sequence already: no rebuild
        self._pipe, self._inflight = None, None
        raw = base64.b64decode(checkpoint).decode("latin-1") if checkpoint else None
        m = self.view.manifest
        args = graph_args(self.opts, plan, image_members=m.image_members, label_member=m.label_member)
        self._pipe = build_pipeline(args, plan, batch_size=self.opts.batch_size, num_threads=self.opts.num_threads,
                                    prefetch=self.opts.prefetch, checkpoint=raw)
        self._pipe_key = self._key(start if raw else 0)
        if raw is None:
            for b in range(start):  # no checkpoint: replay (the order is deterministic)
                self._run(plan, b)

    def _run(self, plan: EpochPlan, b: int) -> Any:
        """The outputs of batch `b`, keeping `prefetch` batches in flight but none past the epoch's end.

        `Pipeline.run()` schedules one more iteration per call, so the last call of an epoch would start
        `prefetch - 1` batches that nobody takes (the train pipeline is rebuilt for the next epoch);
        scheduling here stops at `plan.dali_batches`. The first `schedule_run()` of a pipeline fills its
        whole queue (`prefetch` iterations), every later one schedules one.
        """
        try:
            want = max(1, min(self.opts.prefetch, plan.dali_batches - b))
            while (self._inflight or 0) < want:
                self._pipe.schedule_run()
                self._inflight = 1 + self._inflight if self._inflight is not None else self.opts.prefetch
            outputs = self._pipe.outputs()
            self._inflight -= 1
        except RuntimeError as exc:
            self._pipe, self._pipe_key, self._inflight = None, None, None
            raise self._diagnose(plan, b, exc) from exc
        epoch_key, pulled = self._pipe_key or self._key(0)
        self._pipe_key = (epoch_key, pulled + 1)
        return outputs

    def _diagnose(self, plan: EpochPlan, b: int, exc: Exception) -> ShardError:
        """Name the corrupt sample behind a DALI failure: re-decode what the pipeline can have read."""
        hint = "" if self.opts.on_error == "skip" else "; pass on_error='skip' to leave corrupt samples out"
        named = _NAMED_SAMPLE.search(str(exc))  # some decoder errors carry the sample's source_info
        if named:
            return ShardError(f"corrupt JPEG in {named['shard']}, key {named['key']}: DALI could not decode it{hint}")
        bs, ahead = self.opts.batch_size, self.opts.prefetch + 2
        stream = rank_stream(plan)
        window = stream[: plan.initial_fill + (b + ahead) * bs] if plan.shuffle else stream[b * bs:(b + ahead) * bs]
        bad = first_bad(window, self.view.manifest.image_members)
        if bad is None and any(w in str(exc).lower() for w in ("decod", "nvimagecodec", "jpeg")):
            log.warning("the failing sample is not where expected; checking all %d samples of this rank", len(stream))
            bad = first_bad(stream, self.view.manifest.image_members)
        if bad is not None:
            return ShardError(f"corrupt JPEG in {bad.shard}, key {bad.key}: {bad.reason}{hint}")
        names = sorted({str(s.path) for s, _ in window})
        first = str(exc).strip().splitlines()
        return ShardError(f"DALI failed reading shards {names[:4]}{' ...' if len(names) > 4 else ''} "
                          f"(rank {plan.shard_id}, batch {b}): {' '.join(first)[:600]}")

    # -- outputs --------------------------------------------------------------------------------
    def _labels(self, labels: Any, info: Any, count: int) -> torch.Tensor:
        """The batch's labels as int64; every one checked against the classes (as the kornia backend does)."""
        if labels is None:
            return torch.full((count,), UNLABELED, dtype=torch.int64)
        num_classes = len(self.view.classes)
        values = []
        for i in range(len(labels)):
            raw = labels.at(i).tobytes()
            try:
                value = parse_label(raw, key="?", shard=self.view.root)
            except ShardError:
                value = None
            if value is None or not 0 <= value < num_classes:
                where = info.at(i).tobytes().decode("utf-8", "replace")
                raise ShardError(f"sample {where} has label {raw[:20]!r}; the manifest lists {num_classes} classes, "
                                 f"so a label is an integer in 0..{num_classes - 1}")
            values.append(value)
        return torch.tensor(values, dtype=torch.int64)

    def _convert(self, outputs: Any, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels, info = outputs if len(outputs) == 3 else (outputs[0], None, outputs[1])
        dense = images.as_tensor()  # the batch is one contiguous buffer: a view, no copy
        if self._device.type == "cpu" and self._pipe.exec_dynamic:
            # Zero copy: with the dynamic executor (exec_dynamic=True, dali_graph.py) every output batch
            # owns its buffer, which DALI does not reuse while a reference to it is alive (DALI's own
            # DALIGenericIterator hands out such views); the DLPack capsule keeps it alive in torch.
            # The legacy executor recycles output buffers after `prefetch` more runs: no view there.
            arr = torch.from_dlpack(dense)
        else:
            from nvidia.dali.plugin.pytorch import feed_ndarray

            arr = torch.empty(dense.shape(), dtype=_TORCH_DTYPES[dali_dtype(self.opts.dtype)], device=self._device)
            stream = torch.cuda.current_stream(self._device) if self._device.type == "cuda" else None
            feed_ndarray(dense, arr, cuda_stream=stream)
        if self.opts.channels_last:
            arr = arr.permute(0, 3, 1, 2)  # NHWC storage, NCHW shape: channels_last without a copy
        want = _TORCH_DTYPES[self.opts.dtype]
        if arr.dtype != want:  # bfloat16, which DALI does not produce: one conversion pass
            fmt = torch.channels_last if self.opts.channels_last else torch.contiguous_format
            arr = arr.to(want, memory_format=fmt)
        lab = self._labels(labels, info, len(info))
        self._keys = (info, rows)
        if rows < len(lab):
            if self.opts.train:  # train keep_last: a smaller last batch
                arr, lab = arr[:rows], lab[:rows]
            else:  # eval: DALI repeated the last sample to fill the batch; mark those rows as padding
                arr[rows:] = 0
                lab[rows:] = PAD_LABEL
        return arr, lab.to(self._device, non_blocking=True)

    def _padding(self) -> tuple[torch.Tensor, torch.Tensor]:
        s, n = self.opts.image_size, self.opts.batch_size
        fmt = torch.channels_last if self.opts.channels_last else torch.contiguous_format
        images = torch.empty((n, 3, s, s), dtype=_TORCH_DTYPES[self.opts.dtype], device=self._device,
                             memory_format=fmt).zero_()
        return images, torch.full((n,), PAD_LABEL, dtype=torch.int64, device=self._device)
