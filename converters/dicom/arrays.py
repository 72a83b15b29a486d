"""The arrays of a volume sample, shared by the dicom and nifti kinds: the int16 cast, the npy bytes, the rounding
of metadata numbers, and the rejection of a volume too large to convert."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from converters.dicom.geometry import RejectSeries

INT16 = np.iinfo(np.int16)
FLOAT32_MAX = float(np.finfo(np.float32).max)  # volumes are stored (and DICOM values computed) in float32


def to_int16(values: np.ndarray) -> tuple[np.ndarray, int]:
    """`values` rounded to int16, and how many voxels lay outside int16 (clipped)."""
    rounded_values = np.rint(values)
    clipped = int(np.count_nonzero((rounded_values < INT16.min) | (rounded_values > INT16.max)))
    return np.clip(rounded_values, INT16.min, INT16.max).astype(np.int16), clipped


def stored_array(values: np.ndarray, whole: bool) -> tuple[np.ndarray, int]:
    """(the array a sample stores: int16 for `whole` values, else float32; the voxels int16 clipped)."""
    return to_int16(values) if whole else (np.ascontiguousarray(values, np.float32), 0)


def integral(arr: np.ndarray, lo: float, hi: float) -> bool:
    """Whether every value is a whole number in [lo, hi] (the array fits an integer type without loss)."""
    if arr.dtype.kind in "iu":  # no rounding to compare: the bounds alone
        return bool(arr.min() >= lo and arr.max() <= hi)
    return bool(np.all(arr == np.rint(arr)) and arr.min() >= lo and arr.max() <= hi)


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def rounded(values: Any) -> Any:
    """Numbers (or nested lists of them) rounded to 6 decimals for the json member; None stays None."""
    if values is None:
        return None
    if isinstance(values, list | tuple):
        return [rounded(v) for v in values]
    return round(float(values), 6)


def too_many(voxels: int, max_voxels: int, what: str) -> RejectSeries:
    return RejectSeries(f"{what} {voxels} voxels, more than --max-voxels {max_voxels} "
                        f"(about {12 * voxels / 2**20:,.0f} MiB of memory to convert)")
