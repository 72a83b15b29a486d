"""Intensity options given one value per channel, for volumes of several modalities: a PET/CT stack (`--channel
CT,PT`) pads its CT with air and its PET with no activity, `pad_value=(-1024, 0)`, and windows each in its own
units, `window=((-1000, 400), (0, 15))`. One value (a number, one (lo, hi) pair) applies to every channel, as
before. The counts are checked against the volumes' channels when the loader opens them."""

from __future__ import annotations

from typing import Any

import torch

from fastdata.option_rules import refused


def per_channel_window(window: Any) -> bool:
    """Whether `window` gives one (lo, hi) pair per channel rather than one pair."""
    return isinstance(window, tuple | list) and bool(window) and isinstance(window[0], tuple | list)


def as_window(window: Any) -> Any:
    """`window` with its lists as tuples (a loader's options may come from JSON or YAML)."""
    if per_channel_window(window):
        return tuple(tuple(pair) if isinstance(pair, list) else pair for pair in window)
    return tuple(window) if isinstance(window, list) else window


def as_pad_value(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def window_pairs(window: Any) -> tuple[Any, ...]:
    """The (lo, hi) pairs a window gives: one, or one per channel."""
    return tuple(window) if per_channel_window(window) else (window,)


def pad_values(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, tuple) else (value,)


def check_channel_counts(window: Any, pad_value: Any, channels: tuple[str, ...]) -> None:
    """ValueError where a per-channel option gives another count of values than the volumes have channels (one for
    volumes of one channel)."""
    count = max(1, len(channels))
    held = f"{count} channels ({', '.join(channels)})" if channels else "one channel"
    for name, value, per, one in (("pad_value", pad_value, isinstance(pad_value, tuple), "one number"),
                                  ("window", window, per_channel_window(window), "one (lo, hi)")):
        if per and len(value) != count:
            raise refused(name, value, f"{one} for every channel, or {one} per channel: the volumes have {held}",
                          cut=200)


def window_bounds(window: Any, x: torch.Tensor) -> tuple[Any, Any]:
    """(lo, hi) to normalise the [B, C, D, H, W] batch `x` with: numbers, or [1, C, 1, 1, 1] tensors per channel."""
    if not per_channel_window(window):
        return window
    lo, hi = (torch.tensor([pair[i] for pair in window], dtype=x.dtype, device=x.device).view(1, -1, 1, 1, 1)
              for i in (0, 1))
    return lo, hi
