"""Options of the sequence loader: one frozen dataclass, validated eagerly."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastdata.coerce import DEVICES, is_device_name
from fastdata.distributed import WORLD_SIZES, valid_world_size
from fastdata.hooks import check_hook
from fastdata.option_rules import check_flag, check_seed, refused
from fastdata.planning.selection import check_selection

BUCKETING = ("length", "none", "pack")


MAX_PAD_MULTIPLE = 1 << 16
MAX_BLOCK = 1 << 24  # 16,777,216 tokens a packed row: past any model's context


@dataclass(frozen=True)
class SequenceLoaderOptions:
    """What decides the batches of a token dataset.

    A batch holds at most `max_tokens` tokens counting padding (B * L <= max_tokens) and at most
    `batch_size` sequences; give either or both. L is rounded up to `pad_to_multiple_of`.
    `bucketing`: "length" sorts each shuffled window of `window` sequences by length and cuts
    batches under the budget, then shuffles the batch order; "none" cuts batches in plain random
    order; "pack" concatenates documents (EOS between them) into rows of `block_size` tokens.
    Order is a pure function of (seed, epoch, rank, world_size).
    """

    max_tokens: int | None = None
    batch_size: int | None = None
    bucketing: str = "length"
    pad_to_multiple_of: int = 8
    block_size: int | None = None
    window: int = 16384
    shuffle: bool = True
    seed: int = 0
    device: str = "cpu"
    pin_memory: bool | None = None  # None: pin when the device is CUDA
    pad_id: int | None = None  # None: the tokenizer's pad id from the manifest (0 if it has none)
    rank: int = 0
    world_size: int = 1
    batch_transform: Any = None  # hook: fn(batch_dict) -> batch_dict on each batch, on the device
    indices: Any = field(default=None, compare=False, repr=False)  # a subset: sorted read-only sequence ids
    # weighted sampling (shuffle=True): a weight per sequence, or "balanced" (planning/weights.py)
    sample_weights: Any = field(default=None, compare=False, repr=False)
    samples_per_epoch: int | None = None  # with sample_weights: the samples an epoch draws (None: the split's)

    def __post_init__(self) -> None:
        def positive(name: str, value: object, *, optional: bool) -> None:
            if value is None and optional:
                return
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise refused(name, value, "an integer >= 1" + (" or None" if optional else ""))

        positive("max_tokens", self.max_tokens, optional=True)
        positive("batch_size", self.batch_size, optional=True)
        positive("pad_to_multiple_of", self.pad_to_multiple_of, optional=False)
        positive("window", self.window, optional=False)
        positive("block_size", self.block_size, optional=True)
        # a row is allocated at these lengths whatever the data: past them one batch would take gigabytes
        if self.pad_to_multiple_of > MAX_PAD_MULTIPLE:
            raise refused("pad_to_multiple_of", self.pad_to_multiple_of, f"at most {MAX_PAD_MULTIPLE} (every row of a "
                          "batch is padded to a multiple of it)")
        if self.block_size is not None and self.block_size > MAX_BLOCK:
            raise refused("block_size", self.block_size, f"at most {MAX_BLOCK} tokens a packed row")
        if self.bucketing not in BUCKETING:
            raise refused("bucketing", self.bucketing, f"one of {list(BUCKETING)}")
        if self.max_tokens is None and self.batch_size is None:
            raise ValueError("give max_tokens (a token budget per batch, padding included) or batch_size, or both")
        if self.bucketing == "pack":
            if self.block_size is None:
                raise ValueError("bucketing='pack' needs block_size (tokens per packed row), e.g. block_size=2048")
            if self.max_tokens is not None and self.max_tokens < self.block_size:
                raise refused("max_tokens", self.max_tokens, f">= block_size ({self.block_size}) with bucketing='pack'")
        elif self.block_size is not None:
            raise ValueError(f"block_size is only used with bucketing='pack', not {self.bucketing!r}")
        check_flag("shuffle", self.shuffle)
        check_flag("pin_memory", self.pin_memory, none="pin when the device is CUDA")
        check_seed(self.seed)
        if not is_device_name(self.device):
            raise refused("device", self.device, DEVICES)
        check_hook("batch_transform", self.batch_transform)
        if self.pad_id is not None and (not isinstance(self.pad_id, int) or not 0 <= self.pad_id < 1 << 63):
            raise refused("pad_id", self.pad_id, "an integer in 0..2**63 - 1 (batches are int64) or None")
        if not valid_world_size(self.world_size):
            raise refused("world_size", self.world_size, WORLD_SIZES)
        if not isinstance(self.rank, int) or not 0 <= self.rank < self.world_size:
            raise refused("rank", self.rank, f"in 0..world_size-1 (world_size={self.world_size})")
        check_selection(self)  # indices, sample_weights, samples_per_epoch

    @property
    def rows_per_batch(self) -> int:
        """Packed rows per batch (bucketing='pack')."""
        if self.block_size is None:
            raise ValueError("rows_per_batch needs block_size (bucketing='pack')")
        by_budget = self.max_tokens // self.block_size if self.max_tokens else None
        return min(v for v in (by_budget, self.batch_size) if v is not None)

    @property
    def pin(self) -> bool:
        return self.device != "cpu" if self.pin_memory is None else self.pin_memory
