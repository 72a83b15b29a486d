"""Is a training step waiting for data? The measurement and the verdict behind `fastdata doctor`.

Method: run `steps` training steps (forward, loss, backward, optimizer step) fed by the loader and
time, per step, how long `next(batches)` blocks (the wait) and the whole step; the PyTorch
profiler records the same wait as the "DataLoader" range. Then run the same number of steps on one
batch that already sits on the device: that is the step time with free data. On CUDA every step
ends with a synchronize, so the time of queued GPU work is not hidden from the wall clock.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fastdata.images.order import PAD_LABEL
from fastdata.images.reader import UNLABELED
from fastdata.perf.throughput import real_images

log = logging.getLogger(__name__)

FED_BELOW = 0.10  # wait share under which the loader keeps up
INPUT_BOUND_ABOVE = 0.30  # wait share over which the step is input-bound
CONTENTION = 1.15  # fed/resident step ratio, with little waiting, that signals CPU contention


@dataclass(frozen=True)
class StepTimes:
    wait_s: tuple[float, ...]  # per step: blocked in next(batches)
    step_s: tuple[float, ...]  # per step: wait + compute
    images: int  # real images (labels >= 0) over the measured steps

    @property
    def wait_fraction(self) -> float:
        total = sum(self.step_s)
        return sum(self.wait_s) / total if total > 0 else 0.0

    @property
    def median_step_s(self) -> float:
        return statistics.median(self.step_s)

    @property
    def images_per_s(self) -> float:
        total = sum(self.step_s)
        return self.images / total if total > 0 else 0.0


@dataclass(frozen=True)
class Diagnosis:
    fed: StepTimes
    resident: StepTimes
    profiler_wait_fraction: float | None  # "DataLoader" range / profiled steps; None without the profiler

    @property
    def slowdown(self) -> float:
        """Fed step time over the step time with the batch already on the device."""
        r = self.resident.median_step_s
        return self.fed.median_step_s / r if r > 0 else 1.0


@dataclass(frozen=True)
class Verdict:
    level: str  # "fed", "contended", "partly input-bound", "input-bound"
    summary: str
    advice: tuple[str, ...]


def run_steps(step: Callable[[Any, Any], None], batches: Iterator[Any], /, *, steps: int, warmup: int,
              sync: Callable[[], None] = lambda: None, label: str = "DataLoader") -> StepTimes:
    """Time `warmup + steps` calls of `step(images, labels)`, each fed by `next(batches)`."""
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be >= 1 and warmup >= 0, got steps={steps}, warmup={warmup}")
    from torch.profiler import record_function

    waits, totals, images = [], [], 0
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        with record_function(label):
            try:
                x, y = next(batches)
            except StopIteration:
                raise ValueError(f"the loader ran out of batches after {i} step(s); use fewer --steps or a "
                                 "larger dataset") from None
        t1 = time.perf_counter()
        with record_function("train_step"):
            step(x, y)
            sync()
        t2 = time.perf_counter()
        if i >= warmup:
            waits.append(t1 - t0)
            totals.append(t2 - t0)
            images += real_images((x, y))
    return StepTimes(wait_s=tuple(waits), step_s=tuple(totals), images=images)


def profiler_share(profile: Any, label: str = "DataLoader") -> float | None:
    """Share of the profiled steps' time spent in the `label` range, from the profiler's own events."""
    waited = stepped = 0.0
    for event in profile.events():
        if "CPU" not in str(getattr(event, "device_type", "CPU")):
            continue  # the GPU copy of a user range
        if event.name == label:
            waited += event.cpu_time_total
        if event.name in (label, "train_step"):
            stepped += event.cpu_time_total
    return waited / stepped if stepped > 0 else None


def verdict(d: Diagnosis, /, *, batch_size: int, device: str, backend: str, num_threads: int,
            prefetch: int) -> Verdict:
    """Plain-language conclusion and what to change, from the measured shares."""
    w = d.fed.wait_fraction
    fed_rate, free_rate = d.fed.images_per_s, d.resident.images_per_s
    advice: list[str] = []
    if w < FED_BELOW and d.slowdown >= CONTENTION:
        level = "contended"
        summary = (f"The step rarely waits for data ({w:.0%} of step time), but fed steps take {d.slowdown:.2f}x as "
                   f"long as steps on a batch already on the device ({fed_rate:.0f} vs {free_rate:.0f} images/s): "
                   "the loader's work takes CPU time that the training step needs.")
        advice.append(f"Try fewer loader threads (num_threads={max(1, num_threads // 2)}, now {num_threads}) and "
                      "compare with `fastdata doctor` again.")
        if device == "cpu":
            advice.append("On a CPU-only machine decoding and training share the cores; a GPU (device='cuda', "
                          "backend='dali') moves decode and augmentation off them.")
        else:
            advice.append("Move more of the input work to the GPU: backend='dali' (GPU decode), dtype='uint8' with "
                          "normalisation in the model.")
    elif w < FED_BELOW:
        level = "fed"
        summary = (f"The loader keeps up: {w:.0%} of step time waits for data and fed steps run as fast as steps "
                   "on a batch already on the device. Faster data loading will not speed this training up; the "
                   "model step is the bottleneck.")
        advice.append("Speed up the step itself: mixed precision (bfloat16), channels_last, torch.compile, or a "
                      "larger batch per device.")
    else:
        level = "input-bound" if w >= INPUT_BOUND_ABOVE else "partly input-bound"
        need = (f"the loader would need to be {free_rate / fed_rate:.1f}x faster" if fed_rate > 0 else
                "no image reached the step while it was timed")
        summary = (f"{'Input-bound' if level == 'input-bound' else 'Partly input-bound'}: {w:.0%} of step time "
                   f"waits for data. With the data already on the device the step runs at {free_rate:.0f} images/s; "
                   f"fed by the loader it gets {fed_rate:.0f} images/s ({need}).")
        advice.append(f"Run `fastdata bench DATASET --batch-size {batch_size} --backend {backend}` to find the "
                      f"best num_threads/prefetch (now num_threads={num_threads}, prefetch={prefetch}).")
        if max(d.fed.wait_s) > 4 * max(statistics.median(d.fed.wait_s), 1e-4):
            advice.append(f"Waits come in bursts: a deeper queue (prefetch={prefetch * 2}) absorbs them.")
        if device == "cpu":
            advice.append("Decoding and the model share the same CPU cores here; on a machine with a GPU use "
                          "device='cuda' with backend='dali' (GPU JPEG decode and augmentation).")
            if backend == "dali":
                advice.append("On the CPU the kornia backend was faster than DALI's CPU operators (docs/loading.md, "
                              "'Which backend'): compare with --backend kornia.")
        elif backend != "dali":
            advice.append("Use backend='dali': JPEG decode and augmentation on the GPU take the load off the CPU.")
        advice.append("Store smaller images: convert with a --short-side close to the training size (decode cost "
                      "grows with stored pixels).")
        advice.append("Ask the loader for dtype='uint8' or 'bfloat16' if the model can take it (fewer bytes moved).")
    return Verdict(level=level, summary=summary, advice=tuple(advice))


def make_step(model: Any, /, *, lr: float = 0.01) -> Callable[[Any, Any], None]:
    """One SGD training step (forward, cross-entropy, backward, update); padding labels -100 are ignored.
    Unlabeled samples (label -1) are trained towards class 0: the step costs what a labeled one does. The multi-hot
    rows of a --multi-label dataset are trained with BCEWithLogitsLoss, its padding rows (-100 throughout) left out."""
    import torch

    loss_fn = torch.nn.CrossEntropyLoss()
    multi_loss = torch.nn.BCEWithLogitsLoss()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    def step(images: Any, labels: Any) -> None:
        if images.dtype == torch.uint8:
            images = images.float().div_(255.0)
        if labels.ndim == 2:  # multi-hot rows
            real = labels[:, 0] != PAD_LABEL
            loss = multi_loss(model(images)[real], labels[real])
        else:
            loss = loss_fn(model(images), torch.where(labels == UNLABELED, 0, labels))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def diagnose(loader: Any, model: Any, /, *, device: str, steps: int = 10, warmup: int = 2, profile: bool = True,
             trace: str | None = None, channels_last: bool = True) -> Diagnosis:
    """Fed steps (timed and profiled), then the same steps on one batch already on the device.

    The loader is released before the resident phase so its threads do not compete with it.
    """
    import gc
    import itertools

    import torch

    from fastdata.perf.throughput import epochs

    model = model.to(device).train()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    step = make_step(model)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    batches = epochs(loader)
    if warmup:
        run_steps(step, batches, steps=warmup, warmup=0, sync=sync)
    share = None
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    if profile:
        with torch.profiler.profile(activities=activities) as prof:
            fed = run_steps(step, batches, steps=steps, warmup=0, sync=sync)
        share = profiler_share(prof)
        if trace:
            prof.export_chrome_trace(trace)
            log.info("wrote profiler trace %s", trace)
    else:
        fed = run_steps(step, batches, steps=steps, warmup=0, sync=sync)
    x, y = next(batches)
    x, y = x.clone(), y.clone()
    batches.close()
    del batches, loader
    gc.collect()
    resident_batches = itertools.repeat((x, y))
    run_steps(step, resident_batches, steps=max(warmup, 1), warmup=0, sync=sync)
    if profile:  # same profiler overhead in both phases, so their step times compare
        with torch.profiler.profile(activities=activities):
            resident = run_steps(step, resident_batches, steps=steps, warmup=0, sync=sync)
    else:
        resident = run_steps(step, resident_batches, steps=steps, warmup=0, sync=sync)
    return Diagnosis(fed=fed, resident=resident, profiler_wait_fraction=share)
