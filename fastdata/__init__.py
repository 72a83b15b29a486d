"""fastdata: keep GPUs fed. Offline converters write shards; `fastdata.loader()` streams them."""

from __future__ import annotations

__version__ = "0.1.0"

from fastdata.errors import FastdataError, ManifestError, MissingDependencyError, ShardError  # noqa: E402
from fastdata.loader import loader  # noqa: E402

__all__ = ["FastdataError", "ManifestError", "MissingDependencyError", "ShardError", "__version__", "loader",
           "sample_labels"]


def __getattr__(name: str):
    """`fastdata.sample_labels` (fastdata/images/labels.py), imported when first used: `import fastdata` stays light."""
    if name == "sample_labels":
        from fastdata.images.labels import sample_labels

        return sample_labels
    raise AttributeError(f"module 'fastdata' has no attribute {name!r}")
