"""`fastdata.loader(source, ...)`: open a converted dataset and return the loader for its kind.

The manifest's `kind` picks the loader; each kind's loader module is imported only when used.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from fastdata.coerce import plain_numbers
from fastdata.dataset import RemoteOptions, open_dataset
from fastdata.errors import ManifestError
from fastdata.mixing import MIX_OPTIONS, is_mixture, open_mixture, pop_spec
from fastdata.sources import Spec, plain, split_joined

log = logging.getLogger(__name__)

# manifest kind -> "module:function" building that kind's Loader
LOADERS: dict[str, str] = {
    "images": "fastdata.images.loader:image_loader",
    "dicom": "fastdata.volumes.loader:volume_loader",
    "nifti": "fastdata.volumes.loader:volume_loader",
    "text": "fastdata.text.loader:sequence_loader",
    "image_text": "fastdata.pairs.loader:pair_loader",
}


def loader(source: Spec | dict, /, **options: Any) -> Any:
    """A drop-in PyTorch iterable over the dataset at `source`: its folder, one shard, a glob or brace
    pattern of shards, or a list of shards; local, or a URL (s3://, gs://, az://, https://) read through a
    node-local cache (options `cache_dir`, `cache_limit`, `storage_options`; see docs/remote.md).

    Several datasets mix: a list of dataset folders, globs or URLs (the union), with `weights=[...]`, or a
    dict `{source: weight}`; see docs/mixing.md (options weight_by, samples_per_epoch, tokens_per_epoch,
    return_dataset).

    Keyword options depend on the dataset's kind; see docs/loading.md. Every loader has `len()`,
    `set_epoch()`, `state_dict()` / `load_state_dict()` and `classes`.
    """
    source = split_joined(plain(source))
    remote = RemoteOptions.pop(options)
    split = options.pop("split", None)
    options.update({k: plain_numbers(options[k]) for k in MIX_OPTIONS if k in options})  # weights from numpy
    if isinstance(source, Mapping):
        source = {k: plain_numbers(v) for k, v in source.items()}
    if is_mixture(source, options):
        entries, spec = pop_spec(source, options)
        view = open_mixture(entries, spec, split=split, remote=remote)
    else:
        given = [k for k in MIX_OPTIONS if options.get(k) not in (None, False)]
        if given == ["samples_per_epoch"]:
            given = []  # the samples a weighted epoch draws (planning/weights.py): the loader's own option
        if given:
            raise ValueError(f"{given} apply to a mixture of datasets: pass a list of dataset folders, globs or URLs "
                             f"(or a dict {{source: weight}}), not {source!r}")
        for k in MIX_OPTIONS:
            if k != "samples_per_epoch" or options.get(k) is None:
                options.pop(k, None)
        view = open_dataset(source, split=split, remote=remote)
    train = options.get("train", True)
    if isinstance(train, bool | np.bool_) and not train:  # any other value is refused by the loader's options
        warn_if_evaluating_train(view)
    kind = view.manifest.kind
    if kind not in LOADERS:
        raise ManifestError(f"{source}: no loader for datasets of kind {kind!r} (its manifest says so); known "
                            f"kinds: {sorted(LOADERS)}")
    module, func = LOADERS[kind].split(":")
    return getattr(importlib.import_module(module), func)(view, **options)


def warn_if_evaluating_train(view: Any) -> None:
    """Log a warning when an evaluation (train=False) reads the train split only because split= defaults to it
    while the dataset holds others: `fastdata.loader("shards/", train=False)` evaluates on training data."""
    if getattr(view, "split_by_default", False) and view.split == "train" and len(view.manifest.splits) > 1:
        others = sorted(s for s in view.manifest.splits if s != "train")
        log.warning("%s: evaluating (train=False) its train split, which split= defaults to; it also has %s: pass "
                    "split=%r to evaluate on held-out data (or split='train' to silence this)", view.root,
                    others, "val" if "val" in others else others[0])
