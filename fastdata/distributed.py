"""Rank and world size, detected once at the edge (the `loader()` call) and passed explicitly inside."""

from __future__ import annotations


def resolve_rank(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """Explicit arguments win; otherwise `torch.distributed` when initialised; otherwise (0, 1)."""
    if rank is None or world_size is None:
        detected = (0, 1)
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                detected = (dist.get_rank(), dist.get_world_size())
        except ImportError:
            pass
        rank = detected[0] if rank is None else rank
        world_size = detected[1] if world_size is None else world_size
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}")
    if not isinstance(rank, int) or not 0 <= rank < world_size:
        raise ValueError(f"rank must be an integer in 0..{world_size - 1}, got {rank!r}")
    return rank, world_size
