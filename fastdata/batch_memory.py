"""Batches the memory they are delivered to cannot hold are refused when the loader is made.

A batch size is bounded only by memory: an eval loader pads its last batch to `batch_size` rows, so
`batch_size=100_000` on 1,536 images asks for 60 GB of float32 images at 224 px. On Linux such an allocation
succeeds and fails later, as pages are touched: the process is killed, or the machine swaps until it stops
answering. A loader holds `prefetch` batches in its queue and makes one more, so `prefetch + 1` batches of output
are the least it needs at once; more than the memory of the device they are delivered on (the machine's
physical memory for the CPU, the GPU's for CUDA) cannot work, and is refused with the sizes named.
"""

from __future__ import annotations

import os
from typing import Any

_GIB = 1024 ** 3


def memory_of(device: Any) -> int | None:
    """Bytes of memory on `device` (a `torch.device`): physical memory for the CPU, the GPU's total for CUDA;
    None where it cannot be told."""
    if device.type == "cpu":
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (OSError, ValueError, AttributeError):  # not a POSIX system, or a name it does not know
            return None
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
