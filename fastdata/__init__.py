"""fastdata: keep GPUs fed. Offline converters write shards; `fastdata.loader()` streams them."""

from __future__ import annotations

__version__ = "0.1.0"

from fastdata.errors import FastdataError, ManifestError, MissingDependencyError, ShardError  # noqa: E402
from fastdata.loader import loader  # noqa: E402

__all__ = ["FastdataError", "ManifestError", "MissingDependencyError", "ShardError", "__version__", "loader"]
