"""Exceptions raised by fastdata. Every message says what was received, what is allowed, how to fix it."""

from __future__ import annotations


class FastdataError(Exception):
    """Base class for all fastdata errors."""


class ManifestError(FastdataError):
    """A dataset directory has no manifest, or its manifest is unreadable or of another version."""


class ShardError(FastdataError):
    """A shard is missing, truncated, or holds a sample that cannot be decoded."""


class ConvertError(FastdataError):
    """A conversion cannot start or cannot finish (bad source, bad destination, missing part)."""


class StorageError(FastdataError):
    """Remote storage cannot be read or written: the message names the URL and what to check. `status` is the
    HTTP status the store answered with, when the error is such an answer (None otherwise)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class MissingDependencyError(FastdataError, ImportError):
    """An optional dependency is not installed; the message names the pip command that fixes it."""


def require(module: str, extra: str):
    """Import `module`, or raise MissingDependencyError naming the fastdata extra that provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{module!r} is not installed; install it with: pip install 'fastdata[{extra}]'"
        ) from exc


def torchvision_state(module: str) -> str | None:
    """None when torchvision's `module` imports, else what is wrong with torchvision. torchvision has no fastdata
    extra: each torch release has its own torchvision release, and a pin here would replace the user's torch. A
    torchvision made for another torch is installed but raises RuntimeError on import ("operator torchvision::nms
    does not exist"): that counts as wrong too, with its message."""
    import importlib

    try:
        importlib.import_module(module)
    except (ImportError, RuntimeError, OSError) as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name == "torchvision":
            return "torchvision is not installed"
        return f"torchvision does not import ({type(exc).__name__}: {exc})"
    return None


def require_torchvision(module: str, needed_by: str):
    """Import torchvision's `module`, or raise MissingDependencyError saying that `needed_by` needs it."""
    import importlib

    state = torchvision_state(module)
    if state is not None:
        import torch

        raise MissingDependencyError(f"{needed_by} needs torchvision, and {state}; install the torchvision release "
                                     f"made for your torch {torch.__version__} (fastdata pins none: each torch "
                                     "release has its own)")
    return importlib.import_module(module)
