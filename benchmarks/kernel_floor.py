"""Candidate (m) of images_per_sec.py: the kernel floor. fastdata's own per-image kernels, and nothing of a loader.

It delivers the tensors the loader contract fixes (random-resized crop + flip to 224, or resize + centre crop in
eval, normalised float32 in the asked memory format), from shard bytes read into memory before timing, as (f) reads
them. Every sample's size, crop box and flip are decided before timing too, by the kornia backend's own Preparer,
so the crops are the backend's. What is timed is only the work that cannot be skipped:
- libjpeg-turbo decode (DCT-downscaled when the crop allows), crop and antialiased resize into the sample's row of a
  uint8 batch, and the flip, on `threads` threads (tasks of 8 samples; torch kept serial per thread: intraop.py);
- the uint8 -> normalised float32 pass over each batch, on the thread that iterates.
Every epoch's batches are submitted as one stream, 3 batches ahead, so no epoch boundary costs anything.

A loader that runs these kernels on these threads does at least this work, and more: a sample plan, file reads,
header checks, resume state, per-batch bookkeeping. A target above this candidate's images/s, measured in the same
run, is out of reach for such a loader within the spread of the machine (docs/benchmarks.md). CPU only: with
`--device cuda` it refuses to run (its kernels are the host path's).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

GROUP = 8  # samples per pool task, as the kornia backend's stream groups them
AHEAD = 3  # batches submitted ahead of the one being normalised (the loader's default prefetch + 1)


def kernel_floor_setup(spec: Any) -> tuple[list[list[Any]], Any]:
    """Every epoch's samples as the kornia backend prepares them (`samples.Preparer`: size, crop box, flip), in
    shard order as (f) reads them, and the backend's options. Each sample's bytes are read once and shared by
    every epoch's entry."""
    import fastdata

    if spec.cuda:
        raise ValueError("the kernel floor (m) times the host kernels of the kornia backend; run it without "
                         "--device cuda")
    loader = fastdata.loader(spec.shards, split=spec.split, batch_size=spec.batch_size, backend="kornia",
                             train=spec.train, image_size=spec.image_size, num_threads=spec.threads, device="cpu",
                             dtype="float32", channels_last=spec.channels_last, seed=spec.seed)
    backend = loader._backend
    prepare, count = backend._prepare, len(backend._reader)
    raws = [backend._reader.read(i) for i in range(count)]
    epochs = []
    for epoch in range(spec.epochs):
        draw = prepare.draws(epoch)  # None in eval
        rows = draw(np.arange(count)) if draw is not None else [None] * count
        epochs.append([prepare(i, row)._replace(raw=raws[i]) for i, row in zip(range(count), rows)])
    return epochs, backend._opts


def _batches(jobs: list[Any], batch: int, train: bool) -> list[list[Any]]:
    """Train drops the last partial batch, eval keeps it (as every candidate does)."""
    full = len(jobs) // batch * batch if train else len(jobs)
    return [jobs[i:i + batch] for i in range(0, full, batch)]


def _kernels(opts: Any):
    """What one task runs: its samples decoded, cropped, resized (and flipped) into their rows of `out`."""
    from fastdata.images.decode import decode_eval, decode_train

    size, resize_short = opts.image_size, opts.resize_short

    def run(jobs: list[Any], out: np.ndarray) -> None:
        for job, row in zip(jobs, out):  # each job a samples.Prepared
            if job.box is None:
                decode_eval(job.raw, resize_short=resize_short, size=size, out=row)
            else:
                decode_train(job.raw, job.box, job.height, job.width, size, flip=job.params.flip, out=row)

    return run


def kernel_floor(spec: Any, state: tuple[list[list[Any]], Any]) -> Iterator[Any]:
    """(m) fastdata's kernels alone: the batches of every epoch, one stream, normalised on this thread."""
    import torch

    from fastdata.images.device_aug import DeviceAugment
    from fastdata.images.intraop import serial_torch

    serial_torch()  # the normalise runs on this thread alone, as on the loader's producer thread
    epochs, opts = state
    size = opts.image_size
    batches = [b for jobs in epochs for b in _batches(jobs, spec.batch_size, opts.train)]
    buffers = [np.empty((spec.batch_size, size, size, 3), dtype=np.uint8) for _ in range(AHEAD)]
    normalizer = DeviceAugment(opts, torch.device("cpu"))
    run = _kernels(opts)
    pending: deque[tuple[list[Any], np.ndarray, list[Any]]] = deque()
    with ThreadPoolExecutor(spec.threads, thread_name_prefix="kernel-floor", initializer=serial_torch) as pool:

        def submit(b: int) -> None:
            jobs, out = batches[b], buffers[b % AHEAD][:len(batches[b])]
            pending.append(([pool.submit(run, jobs[g:g + GROUP], out[g:g + GROUP])
                             for g in range(0, len(jobs), GROUP)], out, jobs))

        for b in range(min(AHEAD, len(batches))):
            submit(b)
        for b in range(len(batches)):
            futures, out, jobs = pending.popleft()
            for fut in futures:
                fut.result()
            images = normalizer(torch.from_numpy(out))  # read out before its buffer is handed to batch b + AHEAD
            labels = torch.tensor([job.raw.label for job in jobs], dtype=torch.int64)
            if b + AHEAD < len(batches):
                submit(b + AHEAD)
            yield images, labels
