"""`fastdata.loader(source, ...)`: open a converted dataset and return the loader for its kind.

The manifest's `kind` picks the loader; each kind's loader module is imported only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

from fastdata.dataset import RemoteOptions, open_dataset
from fastdata.errors import ManifestError
from fastdata.sources import Spec

# manifest kind -> "module:function" building that kind's Loader
LOADERS: dict[str, str] = {
    "images": "fastdata.images.loader:image_loader",
    "dicom": "fastdata.volumes.loader:volume_loader",
    "text": "fastdata.text.loader:sequence_loader",
    "image_text": "fastdata.pairs.loader:pair_loader",
}


def loader(source: Spec, /, **options: Any) -> Any:
    """A drop-in PyTorch iterable over the dataset at `source`: its folder, one shard, a glob or brace
    pattern of shards, or a list of shards; local, or a URL (s3://, gs://, az://, https://) read through a
    node-local cache (options `cache_dir`, `cache_limit`, `storage_options`; see docs/remote.md).

    Keyword options depend on the dataset's kind; see docs/loading.md. Every loader has `len()`,
    `set_epoch()`, `state_dict()` / `load_state_dict()` and `classes`.
    """
    remote = RemoteOptions.pop(options)
    view = open_dataset(source, split=options.pop("split", None), remote=remote)
    kind = view.manifest.kind
    if kind not in LOADERS:
        raise ManifestError(f"{source}: no loader for datasets of kind {kind!r} (its manifest says so); known "
                            f"kinds: {sorted(LOADERS)}")
    module, func = LOADERS[kind].split(":")
    return getattr(importlib.import_module(module), func)(view, **options)
