"""Intensity options given one value per channel, for volumes of several modalities: a PET/CT stack (`--channel
CT,PT`) pads its CT with air and its PET with no activity, `pad_value=(-1024, 0)`, and windows each in its own
units, `window=((-1000, 400), (0, 15))`; `clip=` and `zscore=(mean, std)` take a pair per channel the same way. One
value (a number, one pair) applies to every channel, as before. The counts are checked against the volumes' channels
when the loader opens them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastdata.option_rules import refused

if TYPE_CHECKING:  # the CLI reads these options; torch is imported where a batch is made
    import torch

PAIRED = ("window", "clip", "zscore")  # options of one (a, b) pair, or one pair per channel


def per_channel(value: Any) -> bool:
    """Whether a pair option (`window`, `clip`, `zscore`) gives one pair per channel rather than one pair."""
    return isinstance(value, tuple | list) and bool(value) and isinstance(value[0], tuple | list)


def as_pairs(value: Any) -> Any:
    """A pair option with its lists as tuples (a loader's options may come from JSON or YAML)."""
    if per_channel(value):
        return tuple(tuple(pair) if isinstance(pair, list) else pair for pair in value)
    return tuple(value) if isinstance(value, list) else value


def as_pad_value(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def pairs(value: Any) -> tuple[Any, ...]:
    """The pairs a pair option gives: one, or one per channel."""
    return tuple(value) if per_channel(value) else (value,)


def pad_values(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, tuple) else (value,)


def check_channel_counts(options: Any, channels: tuple[str, ...]) -> None:
    """ValueError where a per-channel option of `options` (VolumeLoaderOptions) gives another count of values than
    the volumes have channels (one for volumes of one channel)."""
    count = max(1, len(channels))
    held = f"{count} channels ({', '.join(channels)})" if channels else "one channel"
    given = [("pad_value", options.pad_value, isinstance(options.pad_value, tuple), "one number")]
    given += [(name, getattr(options, name), per_channel(getattr(options, name)), "one pair") for name in PAIRED]
    for name, value, per, one in given:
        if per and len(value) != count:
            raise refused(name, value, f"{one} for every channel, or {one} per channel: the volumes have {held}",
                          cut=200)


def bounds(value: Any, x: torch.Tensor) -> tuple[Any, Any]:
    """A pair option's (a, b) to apply to the [B, C, D, H, W] batch `x`: numbers, or [1, C, 1, 1, 1] tensors per
    channel."""
    if not per_channel(value):
        return value
    import torch

    first, second = (torch.tensor([pair[i] for pair in value], dtype=x.dtype, device=x.device).view(1, -1, 1, 1, 1)
                     for i in (0, 1))
    return first, second
