"""The epochs a loader may be set to or resumed at. A mixture plans an epoch from the passes of its datasets'
remainder streams that come before it (planning/mixture.py), so resuming at epoch e costs about e passes: an epoch
past MAX_EPOCH (a forged or damaged state's 10**18 ran for ever) is refused, in every loader alike."""

from __future__ import annotations

from typing import Any

from fastdata.coerce import plain_number

MAX_EPOCH = 1_000_000  # no training run goes near it; resuming a mixture there takes seconds per small dataset


def valid_epoch(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_EPOCH


def epoch_to_set(value: Any) -> int:
    """What `set_epoch(value)` sets, in every loader: an int in 0..MAX_EPOCH (a numpy integer, from `np.arange`,
    counts as the int it is), or ValueError."""
    epoch = plain_number(value)
    if not valid_epoch(epoch):
        raise ValueError(f"epoch must be an integer in 0..{MAX_EPOCH}, got {epoch!r}")
    return epoch
