"""Rank and world size, detected once at the edge (the `loader()` call) and passed explicitly inside."""

from __future__ import annotations

import os
from typing import Any

from fastdata.coerce import plain_number

# The most ranks a loader plans for. An elastic replay plans every rank of each world size it passes through, so
# a world size is also an amount of work: a state naming 10**18 ranks planned for ever. Resuming the image loader
# from a state of 131,072 ranks took 0.9 s of one core (`load_state_dict` alone, measured 2026-11-25).
MAX_WORLD_SIZE = 1 << 17


WORLD_SIZES = f"an integer in 1..{MAX_WORLD_SIZE}"  # what an option's error says it must be


def valid_world_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_WORLD_SIZE


def check_world_size(value: Any, what: str = "world_size") -> int:
    """`value` if it is an int in 1..MAX_WORLD_SIZE, else ValueError naming `what` (an option or a state field)."""
    if not valid_world_size(value):
        raise ValueError(f"{what} must be {WORLD_SIZES}, got {value!r}")
    return value


def resolve_rank(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """Explicit arguments win; otherwise `torch.distributed` when initialised; otherwise (0, 1), unless a launcher
    says the job has several processes (`launched_world_size`): then each would read the whole epoch, and that is
    refused. Numpy integers count as ints (`plain_number`)."""
    rank, world_size = plain_number(rank), plain_number(world_size)
    if rank is None or world_size is None:
        detected = None
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                detected = (dist.get_rank(), dist.get_world_size())
        except ImportError:
            pass
        if detected is None:
            launched = launched_world_size()
            if launched > 1:
                raise ValueError(
                    f"WORLD_SIZE={launched} in the environment (torchrun or another launcher started "
                    f"{launched} processes), but torch.distributed is not initialised, so this loader would read "
                    f"every sample in each of them: call torch.distributed.init_process_group() before "
                    f"fastdata.loader(...), or pass rank= and world_size= (rank=0, world_size=1 to read the whole "
                    f"dataset in this process); with PyTorch Lightning, make the loader in train_dataloader() of the "
                    f"LightningModule or DataModule, which runs once the group is initialised")
            detected = (0, 1)
        rank = detected[0] if rank is None else rank
        world_size = detected[1] if world_size is None else world_size
    check_world_size(world_size)
    if not isinstance(rank, int) or not 0 <= rank < world_size:
        raise ValueError(f"rank must be an integer in 0..{world_size - 1}, got {rank!r}")
    return rank, world_size


def launched_world_size() -> int:
    """The number of processes a launcher says the job has: the `WORLD_SIZE` variable torchrun (and
    `torch.distributed.launch`, Lightning, Accelerate) set for `init_process_group`; 1 when unset or not a whole
    number."""
    return _launcher_count("WORLD_SIZE")


def launched_local_processes() -> int:
    """The number of processes a launcher started on this machine: the `LOCAL_WORLD_SIZE` variable torchrun sets;
    1 when unset or not a whole number."""
    return _launcher_count("LOCAL_WORLD_SIZE")


def _launcher_count(name: str) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdecimal() else 1
