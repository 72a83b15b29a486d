"""What the machine's memory cannot hold is refused when a loader is made, with the sizes named.

On Linux an allocation larger than the memory left succeeds and fails later, as its pages are touched: the process
is killed, or the machine swaps until it stops answering. Two options reach such sizes:

- a batch size: an eval loader pads its last batch to `batch_size` rows, so `batch_size=100_000` on 1,536 images
  asks for 60 GB of float32 images at 224 px. A loader holds `prefetch` batches in its queue and makes one more, so
  `prefetch + 1` batches of output are the least it needs at once; more than the memory of the device they are
  delivered on (for the CPU the machine's physical memory, or the cgroup's limit where lower: a container's, a pod's,
  a Slurm job's; the GPU's for CUDA) cannot work.
- the samples an epoch draws (`samples_per_epoch` of weighted sampling or of a mixture, or the sequences a
  mixture's `tokens_per_epoch` comes to): an epoch's plan holds every sample it draws, and planning one took 64
  bytes a sample at its peak with `sample_weights` and 102 in a mixture of two datasets (measured with 20,000,000
  draws); an epoch of 2**31 draws would need 137 GB at least.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastdata.cgroup import MOUNT, SELF, folders, read_int
from fastdata.option_rules import refused

_GIB = 1024 ** 3
PLAN_BYTES_PER_SAMPLE = 64  # the least of the measured peaks (above): a plan refused with it cannot fit


NO_LIMIT = 1 << 62  # cgroup v1 writes "no limit" as the largest count of pages (9,223,372,036,854,771,712 bytes)


def host_memory() -> int | None:
    """Bytes of memory this process may use: the machine's physical memory, or its cgroup's limit where that is
    lower (a container's `--memory`, a Kubernetes pod's limit, a Slurm job's `--mem`, past which the kernel kills the
    process); None where neither can be told."""
    known = [m for m in (physical_memory(), memory_limit()) if m is not None]
    return min(known) if known else None


def physical_memory() -> int | None:
    """Bytes of physical memory of this machine; None where it cannot be told."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):  # not a POSIX system, or a name it does not know
        return None


def memory_limit(*, mount: Path = MOUNT, membership: Path = SELF) -> int | None:
    """The smallest memory limit of this process's cgroup and its parents (v2 `memory.max`, v1
    `memory.limit_in_bytes`); None when none is set or none can be read."""
    limits = [read_int(folder / ("memory.max" if version == 2 else "memory.limit_in_bytes"))
              for version, folder in folders("memory", mount=mount, membership=membership)]
    found = [v for v in limits if v is not None and 0 < v < NO_LIMIT]
    return min(found) if found else None


def memory_of(device: Any) -> int | None:
    """Bytes of memory on `device` (a `torch.device`): what this process may use for the CPU (`host_memory`), the
    GPU's total for CUDA; None where it cannot be told."""
    if device.type == "cpu":
        return host_memory()
    if device.type == "cuda":
        import torch

        if not torch.cuda.is_available():
            return None
        return int(torch.cuda.get_device_properties(device).total_memory)
    return None


def check_batch_memory(batch_bytes: int, in_flight: int, device: Any, *, what: str, lower: str) -> None:
    """Refuse `in_flight` batches of `batch_bytes` each (prefetch + 1) that the memory of `device` cannot hold;
    `what` says what a batch is made of, `lower` which options make it smaller."""
    total = memory_of(device)
    need = batch_bytes * in_flight
    if total is None or need <= total:
        return
    raise ValueError(f"batches of {what} take {batch_bytes / _GIB:.1f} GiB each, {need / _GIB:.1f} GiB for the "
                     f"{in_flight} a loader holds at once (prefetch + 1), more than the {total / _GIB:.1f} GiB of "
                     f"memory on {device}: lower {lower}")


def check_epoch_memory(name: str, value: int, *, items_per_unit: float = 1.0) -> None:
    """Refuse option `name`'s epoch of `value` units (samples; or tokens, drawing `items_per_unit` sequences a token
    on average) when its plan cannot fit in this machine's memory."""
    total = host_memory()
    if total is None or value * items_per_unit * PLAN_BYTES_PER_SAMPLE <= total:
        return
    unit = "sample" if items_per_unit == 1.0 else "sequence"
    raise refused(name, value, f"at most {int(total / PLAN_BYTES_PER_SAMPLE / items_per_unit):,} on this machine: an "
                  f"epoch's plan holds every {unit} it draws, at least {PLAN_BYTES_PER_SAMPLE} bytes each, and this "
                  f"process may use {total / _GIB:.1f} GiB of memory")
