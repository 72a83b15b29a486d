"""The layout an array of images must have to be read as one (NumPy's `.npz`/`.npy` files, npz_files.py; PCam's
HDF5 datasets, pcam.py): uint8 [images, rows, columns] or [images, rows, columns, 1 or 3 channels], sides up to
4,096. Images of another type are refused, never scaled: values of floats may be 0 ... 1 or 0 ... 255, and which
cannot be told for certain from the values, so the refusal says how to save them as uint8."""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_SIDE = 4096  # rows or columns of one image


def layout_problem(name: str, dtype: Any, shape: tuple[int, ...]) -> str | None:
    """Why the array `name` of `dtype` and `shape` holds no images (None: it does). Floats are said first, and
    short: the error of a source with nothing else to convert shows a reason's first 160 characters."""
    if np.dtype(dtype).kind == "f":
        return (f"no images: {name!r} holds floats ({dtype} {list(shape)}), not scaled by guess: save uint8 0 ... 255, "
                "`np.round(x * 255).astype(np.uint8)` for 0 ... 1")
    if (dtype == np.uint8 and len(shape) in (3, 4) and (len(shape) == 3 or shape[3] in (1, 3))
            and all(0 < s <= MAX_SIDE for s in shape[1:3])):
        return None
    return (f"no images: {name!r} is no uint8 array of [images, rows, columns, 1 or 3 channels] "
            f"({dtype} {list(shape)})")
