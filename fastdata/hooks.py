"""User hooks, the same for every loader: how they are checked, seeded and called.

A hook runs with torch's default generators (the CPU one, and the loader's CUDA device's) seeded from
(seed, epoch, rank, batch index) and restored afterwards (`seeded`), so kornia modules and torchvision v2
transforms, which draw from those generators, give the same batches in two runs with one seed and after a
mid-epoch resume. torch's default generators belong to the whole process: the seeded windows of all loaders
take one lock, and a training step that draws random numbers (dropout) *while* a hook runs on the prefetch
thread shares the generator with it (see docs/augment.md for the guarantee and how to keep it).

An exception in a hook becomes a `HookError` naming the hook and the batch, with the original chained.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from fastdata.errors import FastdataError

_RNG_LOCK = threading.Lock()  # one seeded window at a time in the process
_HOOK_STREAM = 0x484F4F4B  # "HOOK": keeps hook seeds apart from every other seeded stream


class HookError(FastdataError):
    """A user hook raised; `hook`, `epoch` and `batch` say which and where (the original is `__cause__`)."""

    def __init__(self, message: str, *, hook: str, epoch: int, batch: int) -> None:
        super().__init__(message)
        self.hook, self.epoch, self.batch = hook, epoch, batch


def check_hook(name: str, fn: Any) -> Any:
    """`fn` when it is None or callable, else ValueError naming the option."""
    if fn is not None and not callable(fn):
        raise ValueError(f"{name}={fn!r} is not allowed; {name} must be a callable (a function or a module) or None")
    return fn


def hook_seed(seed: int, epoch: int, rank: int, batch: int) -> int:
    """The seed of torch's generators while the hooks of one batch run."""
    state = np.random.SeedSequence([seed, epoch, rank, batch, _HOOK_STREAM]).generate_state(1, dtype=np.uint64)
    return int(state[0]) % (2**63 - 1)  # Python ints: numpy 1.x made uint64 % int a float64 (NEP 50)


@contextlib.contextmanager
def seeded(seed: int, epoch: int, rank: int, batch: int, device: Any) -> Iterator[None]:
    """torch's CPU generator (and `device`'s, when it is CUDA) seeded for one batch's hooks, then restored."""
    import torch  # not at module level: the converters import the options that check hooks

    device = torch.device(device)
    devices = []
    if device.type == "cuda":
        devices = [device.index if device.index is not None else torch.cuda.current_device()]
    value = hook_seed(seed, epoch, rank, batch)
    with _RNG_LOCK, torch.random.fork_rng(devices=devices):
        torch.default_generator.manual_seed(value)
        for d in devices:
            torch.cuda.default_generators[d].manual_seed(value)
        yield


def call_hook(name: str, fn: Callable[..., Any], *args: Any, epoch: int, batch: int) -> Any:
    """`fn(*args)`, with any exception it raises re-raised as a HookError naming `name` and the batch."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - a user's code: any exception is reported with where it happened
        raise HookError(f"the {name} hook {_name(fn)} raised on epoch {epoch}, batch {batch}: "
                        f"{type(exc).__name__}: {exc}", hook=name, epoch=epoch, batch=batch) from exc


def pair(name: str, out: Any, *, epoch: int, batch: int) -> tuple[Any, Any]:
    """The (x, y) a two-argument hook must return, or a HookError saying what it returned instead."""
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise HookError(f"the {name} hook must return a pair (like its two arguments), it returned "
                        f"{type(out).__name__} on epoch {epoch}, batch {batch}", hook=name, epoch=epoch, batch=batch)
    return out[0], out[1]


def augmented(out: Any, x: Any, *, epoch: int, batch: int) -> Any:
    """What the augment hook returned for the float batch `x`, when it is a floating-point tensor of `x`'s shape on
    `x`'s device, else a HookError saying what it returned. An integer batch (`(x * 255).byte()`) would otherwise
    be normalised as if it held [0, 1] values, and a batch moved to another device would be copied back."""
    import torch  # not at module level: the converters import the options that check hooks

    if isinstance(out, torch.Tensor) and out.shape == x.shape and out.is_floating_point() and out.device == x.device:
        return out
    what = (f"a {out.dtype} tensor of shape {tuple(out.shape)} on {out.device}" if isinstance(out, torch.Tensor)
            else type(out).__name__)
    raise HookError(f"the augment hook must return a floating-point tensor of shape {tuple(x.shape)} on {x.device} "
                    f"(like its argument), it returned {what} on epoch {epoch}, batch {batch}",
                    hook="augment", epoch=epoch, batch=batch)


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
