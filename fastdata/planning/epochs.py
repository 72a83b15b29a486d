"""The epochs a loader may be set to or resumed at. A mixture plans an epoch from the passes of its datasets'
remainder streams that come before it (planning/mixture.py), so resuming at epoch e costs about e passes: an epoch
past MAX_EPOCH (a forged or damaged state's 10**18 ran for ever) is refused, in every loader alike."""

from __future__ import annotations

from typing import Any

MAX_EPOCH = 1_000_000  # no training run goes near it; resuming a mixture there takes seconds per small dataset


def valid_epoch(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_EPOCH
