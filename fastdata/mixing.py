"""Several datasets opened as one mixture: `fastdata.loader(["web/", "code/"], weights=[0.7, 0.3])`.

Each entry is a dataset folder, a shard glob of one dataset, or a URL, opened like a single source. All
entries must be of one kind (dicom and nifti volumes count as one; for text, tokenized by the same tokenizer);
class names are united, sorted, and every dataset's labels are mapped into that union (the volume loader keeps
its masks' own, fastdata/volumes/masks.py). Which items an epoch takes is the planning
layer's business (fastdata/planning/mixture.py); the loaders read a `MixedView` through the same seams as
one dataset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fastdata.coerce import as_lists
from fastdata.dataset import SHARD_SUFFIXES, DatasetView, RemoteOptions, open_dataset
from fastdata.errors import ManifestError
from fastdata.option_rules import refused
from fastdata.planning.mixture import Mixture, Permute, check_weights
from fastdata.sources import is_pattern
from fastdata.storage.url import split as split_url

MIX_OPTIONS = ("weights", "weight_by", "samples_per_epoch", "tokens_per_epoch", "return_dataset")


@dataclass(frozen=True)
class MixSpec:
    """What the user asked of a mixture, besides its datasets."""

    weights: tuple[float, ...] | None = None
    weight_by: str | None = None  # None: "tokens" for text, "samples" otherwise
    per_epoch: int | None = None
    return_dataset: bool = False


@dataclass(frozen=True)
class MixedView:
    """The datasets of a mixture (one split each), their united classes and how to mix them."""

    views: tuple[DatasetView, ...]
    names: tuple[str, ...]
    spec: MixSpec
    classes: tuple[str, ...]
    label_maps: tuple[np.ndarray, ...]  # per dataset: its label -> the label in `classes`

    def __repr__(self) -> str:
        return f"MixedView({list(self.names)}, split={self.split!r}, weights={self.spec.weights})"

    @property
    def manifest(self) -> Any:
        """The first dataset's manifest (the kind and the tokenizer are checked equal across the mixture)."""
        return self.views[0].manifest

    @property
    def split(self) -> str:
        return self.views[0].split

    @property
    def root(self) -> str:
        return " + ".join(self.names)

    @property
    def kind(self) -> str:
        return self.manifest.kind

    @property
    def remote(self) -> None:
        return None  # each dataset's reader fetches its own shards (see MixedReader)

    @property
    def shards(self) -> tuple:
        return tuple(ref for v in self.views for ref in v.shards)

    def weight_by(self) -> str:
        return self.spec.weight_by or ("tokens" if self.kind == "text" else "samples")

    def mixture(self, sizes: Sequence[int], measures: Sequence[np.ndarray | None] | None = None) -> Mixture:
        """The planning layer's mixture of these datasets holding `sizes` items (text: `measures`, token counts;
        `open_mixture` refused weight_by='tokens' for any other kind)."""
        by = self.weight_by()
        return Mixture(sizes=tuple(int(n) for n in sizes), weights=self.spec.weights, per_epoch=self.spec.per_epoch,
                       weight_by=by, measures=tuple(measures) if by == "tokens" and measures is not None else None)

    def check_train(self, train: bool) -> None:
        """Weights shape what training sees; an evaluation reads every sample once (the union)."""
        if not train and self.spec.weights is not None:
            raise ValueError("weights apply to training (train=True); an evaluation reads every sample of every "
                             "dataset once: pass the list without weights")

    def describe(self, mixture: Mixture) -> dict[str, Any]:
        """The mixture as saved in a state_dict (paths are not compared: data may move between runs)."""
        return {"datasets": list(self.names), **mixture.describe()}

    def close(self) -> None:
        for v in self.views:
            v.close()


def check_mixture_state(saved: Any, here: dict[str, Any]) -> None:
    """Refuse a state saved with another mixture (or none), naming what differs."""
    if saved is None and here is None:
        return
    if saved is None or here is None:
        raise ValueError("cannot resume: the state was saved by a loader " + ("without" if saved is None else "with")
                         + " a mixture of datasets, this loader " + ("has one" if saved is None else "has none"))
    if not isinstance(saved, dict):
        raise ValueError(f"state_dict field 'mixture' must be a dict, got {type(saved).__name__}")
    differ = [k for k in here if k != "datasets" and as_lists(saved.get(k)) != here[k]]
    if differ:
        shown = ", ".join(f"{k}: saved {saved.get(k)!r}, now {here[k]!r}" for k in differ)
        raise ValueError(f"cannot resume: the state was saved with another mixture ({shown}); saved datasets "
                         f"{saved.get('datasets')}, now {here['datasets']}")


def is_mixture(source: Any, options: Mapping[str, Any]) -> bool:
    """A dict; or a list/tuple given with mixing options, naming a dataset folder (a path or a URL), or whose shard
    patterns lie in more than one folder. A list of shard files, shard URLs or patterns of one folder is one
    dataset, as it always was locally."""
    if isinstance(source, Mapping):
        return True
    if isinstance(source, str | Path) or not isinstance(source, Sequence):
        return False
    if any(options.get(k) not in (None, False) for k in MIX_OPTIONS):
        return True
    items = [str(item) for item in source if isinstance(item, str | Path)]
    if any(_names_a_dataset(text) for text in items):
        return True
    folders = {split_url(text)[0] if "://" in text else Path(text).expanduser().parent
               for text in items if is_pattern(text)}
    return len(folders) > 1


def _names_a_dataset(text: str) -> bool:
    """A dataset folder, local or a URL; not a shard or a pattern of shards (a URL is a shard when it ends in one's
    suffix: fastdata never lists remote storage)."""
    if "://" in text:
        return not (is_pattern(text) or text.rstrip("/").endswith(SHARD_SUFFIXES))
    return Path(text).expanduser().is_dir()


def pop_spec(source: Any, options: dict[str, Any]) -> tuple[list[Any], MixSpec]:
    """The mixture's entries and its MixSpec, taken out of a loader's `options`."""
    given = {k: options.pop(k) for k in MIX_OPTIONS if k in options}
    weights = given.get("weights")
    if isinstance(source, Mapping):
        if weights is not None:
            raise ValueError("give the weights either as the values of the dict or as weights=, not both")
        entries, weights = list(source.keys()), list(source.values())
    else:
        entries = list(source)
    if not entries:
        raise ValueError("a mixture needs at least one dataset")
    names = [str(e) for e in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"a dataset appears twice in the mixture {names}; give each once (raise its weight instead)")
    weight_by = given.get("weight_by")
    if weight_by is not None and weight_by not in ("samples", "tokens"):
        raise ValueError(f"weight_by={weight_by!r} is not allowed; weight_by must be 'samples' or 'tokens'")
    per = [(k, given[k]) for k in ("samples_per_epoch", "tokens_per_epoch") if given.get(k) is not None]
    if len(per) > 1:
        raise ValueError("give samples_per_epoch or tokens_per_epoch, not both")
    per_epoch = None
    if per:
        name, per_epoch = per[0]
        if isinstance(per_epoch, bool) or not isinstance(per_epoch, int) or per_epoch < 1:
            raise refused(name, per_epoch, f"an integer >= 1 (the {name.split('_')[0]} an epoch of the mixture draws)")
        implied = "samples" if name == "samples_per_epoch" else "tokens"
        if weight_by is not None and weight_by != implied:
            raise ValueError(f"{name} counts {implied}, but weight_by={weight_by!r}")
        weight_by = implied
    ret = given.get("return_dataset", False)
    if not isinstance(ret, bool):
        raise ValueError(f"return_dataset must be True or False, got {ret!r}")
    spec = MixSpec(weights=check_weights(weights, len(entries)), weight_by=weight_by,
                   per_epoch=per_epoch,
                   return_dataset=ret)
    return entries, spec


ONE_LOADER = {"nifti": "dicom"}  # kinds whose samples are alike (volumes: npy + json) and mix in one loader


def open_mixture(entries: list[Any], spec: MixSpec, *, split: str | None, remote: RemoteOptions) -> MixedView:
    """Open every entry and check that they mix: one kind, one tokenizer, labels all present or all absent."""
    views = tuple(open_dataset(e, split=split, remote=remote) for e in entries)
    names = tuple(str(e) for e in entries)
    kinds = {ONE_LOADER.get(v.manifest.kind, v.manifest.kind) for v in views}
    if len(kinds) > 1:
        shown = ", ".join(f"{n}: {v.manifest.kind}" for n, v in zip(names, views))
        raise ManifestError(f"the datasets of a mixture must be of one kind, these are {shown}")
    kind = views[0].manifest.kind
    if kind in ("text", "image_text"):
        _same_tokenizer(names, views)
    if kind == "image_text":
        layouts = {(v.manifest.text_member, v.manifest.ids_member) for v in views}
        if len(layouts) > 1:
            raise ManifestError(f"the image-text datasets {list(names)} store captions differently ({sorted(layouts)});"
                                " convert them with the same options")
    labeled = [bool(v.manifest.classes) for v in views]
    if any(labeled) and not all(labeled):
        shown = ", ".join(n for n, has in zip(names, labeled) if not has)
        raise ManifestError(f"{shown} has no classes while the other datasets of the mixture do; labels would mean "
                            "nothing for its samples: mix labeled datasets with labeled ones")
    multi = [v.manifest.multi_label for v in views]
    if any(multi) and not all(multi):
        shown = ", ".join(n for n, has in zip(names, multi) if not has)
        raise ManifestError(f"{shown} has one class a sample while the other datasets of the mixture are multi-label "
                            "(--multi-label): batches would mix class indices and multi-hot rows; convert them alike")
    classes = tuple(sorted({c for v in views for c in v.manifest.classes}))
    where = {c: i for i, c in enumerate(classes)}
    maps = tuple(np.array([where[c] for c in v.manifest.classes], dtype=np.int64) for v in views)
    mixed = MixedView(views=views, names=names, spec=spec, classes=classes, label_maps=maps)
    if spec.weight_by == "tokens" and kind != "text":
        raise ValueError(f"weight_by='tokens' applies to text datasets; a {kind!r} mixture is weighted by samples")
    return mixed


def _same_tokenizer(names: tuple[str, ...], views: tuple[DatasetView, ...]) -> None:
    def sha(view: DatasetView) -> str | None:
        return view.manifest.tokenizer.get("sha256")

    first = sha(views[0])
    for name, view in zip(names[1:], views[1:]):
        if sha(view) != first:
            raise ManifestError(f"{names[0]} and {name} were tokenized differently (tokenizer sha256 {first} and "
                                f"{sha(view)}); token ids of one mixture must mean the same: convert both with one "
                                "tokenizer")


def shard_permute(seed: int, shard_sizes: Sequence[Sequence[int]]) -> Permute:
    """Images: a pass of a dataset reads its shards in a random order, each in one stretch (what a node-local
    shard cache needs); the loader's shuffle window mixes them afterwards, as for one dataset."""
    from fastdata.images.order import derive_seed, shard_sequence

    def permute(d: int, stream: int, p: int) -> np.ndarray:
        return shard_sequence(tuple(shard_sizes[d]), seed=derive_seed(seed, d, stream), epoch=p)

    return permute
