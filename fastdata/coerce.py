"""PyTorch-native option values: `torch.float16` for "float16", `torch.device("cuda", 1)` for "cuda:1"; and
numpy's numbers (`np.int64(8)` from `np.arange` or arithmetic on arrays, `np.float32` weights) and arrays for
Python's numbers and tuples.

Options are stored as names (plain data, picklable, comparable in saved states); these helpers turn
what a PyTorch user passes into those names at the edge, before the options dataclass validates them.
"""

from __future__ import annotations

import numbers
import re
from typing import Any

import numpy as np

DEVICES = "'cpu', 'cuda' or 'cuda:N'"  # what a loader's `device` may be, in its error message
_DEVICE = re.compile(r"cpu|cuda(:[0-9]+)?")


def dtype_name(value: Any) -> Any:
    """'float16' for torch.float16 (or the string itself); anything else is returned for validation to refuse."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        return value
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    return value


def device_name(value: Any) -> Any:
    """'cuda:1' for torch.device('cuda', 1), 'cpu' for torch.device('cpu'); strings pass through."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return value
    if isinstance(value, torch.device):
        return str(value)
    return value


def is_device_name(value: Any) -> bool:
    """Whether `value` is a device name the loaders take: 'cpu', 'cuda' or 'cuda:N' (N digits); 'cuda:1:2',
    'cuda:x' or a number are not (the GPU index is read from the name)."""
    return isinstance(value, str) and _DEVICE.fullmatch(value) is not None


def plain_number(value: Any) -> Any:
    """A numpy number as the Python bool, int (any other `numbers.Integral`) or float (any other `numbers.Real`) it
    is; anything else is returned for validation to take or refuse."""
    if isinstance(value, bool | np.bool_):  # numpy's bool (a comparison of numpy numbers) is no numbers.Integral
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def plain_numbers(value: Any) -> Any:
    """`value` through `plain_number`, and so the items of a list or tuple; a numpy array becomes a tuple of
    Python numbers (options hold plain data)."""
    if isinstance(value, np.ndarray):
        value = tuple(value.tolist())
    if isinstance(value, list | tuple):
        return type(value)(plain_number(v) for v in value)
    return plain_number(value)


def as_lists(value: Any) -> Any:
    """A value read back from a saved state with its tuples made lists, as loaders write them: a checkpoint written
    through a config library or by hand may hold tuples where the state held lists."""
    return [as_lists(v) for v in value] if isinstance(value, tuple | list) else value


AS_GIVEN = ("indices", "sample_weights")  # stay as given: a subset's index array, a weight per sample (planning/)


def torch_options(options: dict[str, Any], *, dtypes: tuple[str, ...] = ("dtype",),
                  devices: tuple[str, ...] = ("device",)) -> dict[str, Any]:
    """`options` with torch dtypes and devices replaced by their names, and numpy numbers and arrays by Python's
    numbers and tuples (`plain_numbers`), but for the options of AS_GIVEN."""
    out = {key: value if key in AS_GIVEN else plain_numbers(value) for key, value in options.items()}
    for key in dtypes:
        if key in out:
            out[key] = dtype_name(out[key])
    for key in devices:
        if key in out:
            out[key] = device_name(out[key])
    return out
