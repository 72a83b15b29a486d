"""`fastdata.sample_labels(source)`: the class of every sample of an image or token dataset's split, in the manifest's
order, the order of `indices=` and `sample_weights=` (docs/loading.md). Only the labels are read, not the images or
the tokens."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastdata.dataset import open_dataset
from fastdata.errors import ManifestError
from fastdata.images.reader import SplitReader


def sample_labels(source: Any, /, *, split: str | None = None) -> np.ndarray:
    """The class id of every sample of `split` (default: train) of the local image, image-text or token dataset at
    `source`, as an int64 array in global index order; -1 for every sample of a dataset without classes. Of an image
    dataset converted --multi-label: a uint8 [samples, classes] array, 1 for each class of a sample."""
    if isinstance(source, str) and "://" in source:
        raise ValueError(f"{source}: sample_labels reads every shard of a split, so it takes a local dataset; run it "
                         "on a local copy, or keep the labels when you convert")
    view = open_dataset(source, split=split)
    if view.manifest.kind == "text":
        return _token_labels(view)
    if view.manifest.kind not in ("images", "image_text"):
        raise ManifestError(f"{view.root}: sample_labels reads image and token datasets, this one is of kind "
                            f"{view.manifest.kind!r} (volumes carry masks, not a class each)")
    reader = SplitReader(view)
    try:
        return reader.labels()
    finally:
        reader.close()


def _token_labels(view: Any) -> np.ndarray:
    from fastdata.text.store import open_store

    store = open_store(view)
    try:
        return store.class_labels().copy()
    finally:
        for file in store.files:
            file.close()
