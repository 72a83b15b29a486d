"""`fastdata.loader("volumes/", batch_size=4, patch_size=(128, 128, 128), window=(-1000, 400))`:
batches of 3D patches from a converted dicom or nifti dataset.

Train: each epoch shuffles the volumes (a pure function of seed and epoch), deals them to ranks,
cuts `patches_per_volume` random patches from each (uniform or foreground-biased), moves the batch
to the device, normalises intensity and augments there. Eval: deterministic sliding windows that
cover every volume, with their coordinates, so predictions can be stitched back.
Yields `(patches [B, 1, D, H, W] on the device, meta)`; where the volumes have masks (nifti kind),
`meta["labels"]` holds the masks' patches, cut, augmented and placed like the patches (int64, [B, 1, D, H, W]).
"""

from __future__ import annotations

import itertools
import logging
import numbers
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from fastdata.closing import MOVED, Closable
from fastdata.coerce import as_lists, torch_options
from fastdata.data_digest import data_digest
from fastdata.dataset import DatasetView, RemoteOptions, open_dataset
from fastdata.distributed import MAX_WORLD_SIZE, resolve_rank, valid_world_size
from fastdata.hooks import augmented, call_hook, pair, seeded
from fastdata.loader_state import check_shared, kind_of, shared_fields
from fastdata.mixing import MixedView
from fastdata.planning.elastic import Step, check_lineage, replay, resumed_lineage
from fastdata.planning.epochs import MAX_EPOCH, epoch_to_set, valid_epoch
from fastdata.planning.mixture import Mixture, random_permute
from fastdata.planning.selection import selection
from fastdata.sources import Spec
from fastdata.volumes.augment import VolumeAugment, normalise
from fastdata.volumes.channel_values import check_channel_counts
from fastdata.volumes.intensity import dataset_foreground
from fastdata.volumes.masks import mask_batch, mask_classes
from fastdata.volumes.options import MIN_SPREAD, VolumeLoaderOptions, warn_on_orientations, warn_on_units
from fastdata.volumes.patches import PatchSpec, crop, eval_plan, random_start, redeal_patches, train_plan
from fastdata.volumes.store import VolumeStore

log = logging.getLogger(__name__)

VOLUME_KINDS = ("dicom", "nifti")  # the kinds whose samples are volumes (npy + json)
STATE_VERSION = 1  # the form of state_dict() (fastdata/loader_state.py)
Patch = tuple[np.ndarray, PatchSpec, tuple[int, int, int], bool, np.ndarray | None]  # patch, plan, start, centred, mask


def _no_classes() -> np.ndarray:
    raise ValueError("sample_weights='balanced' weighs samples by a class each, and volumes carry masks, not a class "
                     "each: give one weight per volume instead (by the voxels of a rare structure, say)")


class VolumeLoader(Closable):
    """Iterable of `(patches, meta)`; `len()` is the number of batches per epoch on this rank. `close()` or `with`
    lets its dataset's files go (closing.py)."""

    def __init__(self, view: DatasetView | MixedView, opts: VolumeLoaderOptions) -> None:
        self.view = view
        self.opts = opts
        self._kind = kind_of(view)  # likewise (loader_state.py)
        self.mixture: Mixture | None = None
        self._mixture_state: dict[str, Any] | None = None
        if isinstance(view, MixedView):
            view.check_train(opts.train)
            stores = [VolumeStore(v) for v in view.views]
            self.store = VolumeStore.merged(stores, [str(v.root) for v in view.views])
            self.mixture = view.mixture([len(s) for s in stores])
            self._mixture_state = view.describe(self.mixture)
            self._permute = random_permute(opts.seed, self.mixture.sizes)
            self._return_dataset = view.spec.return_dataset
        else:
            self.store = VolumeStore(view)
            self._return_dataset = False
        chosen = selection(opts, len(self.store), train=opts.train, mixture=self.mixture is not None,
                           labels=_no_classes, data=data_digest(view))
        # the volumes read an epoch, their draws when weighted, and the data digest in every state
        self._volumes, self._weights, self._data = chosen.count, chosen.weights, chosen.digest
        self.classes: tuple[str, ...] = view.classes
        self.channels: tuple[str, ...] = self.store.channels  # names of the C of [B, C, D, H, W]; () for one
        check_channel_counts(opts, self.channels)
        self._epoch = 0
        self._batch = 0  # batches of the current epoch already yielded
        self._lineage: tuple[Step, ...] = ()  # where this epoch was interrupted on other world sizes
        self.last_patches: list[PatchSpec] = []  # the plan entries of the last batch (debugging)
        self._plan_cache: tuple[tuple[int, tuple[Step, ...]], list[PatchSpec]] | None = None
        self._augment = VolumeAugment(opts) if (opts.train and opts.augment) else None
        self._shapes = [e.shape for e in self.store.entries]
        self.masked = self.store.masked  # the volumes have masks (nifti kind): meta["labels"] holds their patches
        if self.masked and isinstance(view, MixedView):
            self.classes = mask_classes(view)
        if len(self) == 0:
            log.warning("this loader yields no batch: %d patch(es) per epoch on rank %d, batch_size %d, drop_last; "
                        "lower batch_size or raise patches_per_volume", self._num_patches(), opts.rank,
                        opts.batch_size)

    @property
    def intensity(self) -> dict[str, Any]:
        """The intensity normalisation as options (zscore='foreground' resolved to its numbers): pass them to the
        loader of another split or dataset, `fastdata.loader("test/", train=False, **train.intensity)`."""
        return {"window": self.opts.window, "zscore": self.opts.zscore, "clip": self.opts.clip}

    # ---- the contract -------------------------------------------------------------------------
    def plan(self, epoch: int | None = None) -> list[PatchSpec]:
        """The patches this rank yields in `epoch` (default: the current one, as interrupted), in order."""
        epoch = self._epoch if epoch is None else epoch
        lineage = self._lineage if epoch == self._epoch else ()
        key = (epoch, lineage)
        if self._plan_cache is None or self._plan_cache[0] != key:
            self._plan_cache = (key, self._ranks(epoch, lineage, self.opts.world_size, only=self.opts.rank))
        return self._plan_cache[1]

    def _ranks(self, epoch: int, lineage: tuple[Step, ...], world_size: int, *, only: int | None = None) -> Any:
        """Every rank's patches of `epoch` interrupted at `lineage` (planning/elastic.py); with `only` and no
        lineage, just that rank's."""
        o = self.opts
        items = o.indices if self.mixture is None or not o.train else self.mixture.epoch_items(epoch, self._permute)
        if self._weights is not None:  # train only (weights_for refuses them in eval)
            items = self._weights.items(seed=o.seed, epoch=epoch)

        def fresh(rank: int, world: int) -> list[PatchSpec]:
            if o.train:
                return train_plan(len(self.store), per_volume=o.patches_per_volume, seed=o.seed, epoch=epoch,
                                  rank=rank, world_size=world, items=items)
            return eval_plan(self._shapes, patch=o.patch_size, overlap=o.overlap, rank=rank, world_size=world,
                             volumes=o.indices)

        if not lineage and only is not None:
            return fresh(only, world_size)
        ranks = replay(lineage, world_size, plans=lambda w: [fresh(r, w) for r in range(w)],
                       rest=lambda plan, done: plan[done * o.batch_size:],
                       redeal=lambda rests, w: redeal_patches(rests, w, train=o.train))
        return ranks if only is None else ranks[only]

    def _num_patches(self) -> int:
        return len(self.plan())

    def __len__(self) -> int:
        return self._batches(self._num_patches())

    def _batches(self, patches: int) -> int:
        b = self.opts.batch_size
        return -(-patches // b) if self.opts.keep_last else patches // b

    def set_epoch(self, epoch: int) -> None:
        epoch = epoch_to_set(epoch)
        if epoch != self._epoch:  # the same epoch keeps a resume point, as in every fastdata loader
            self._end_open_pass(MOVED)  # it would go on from the new position (closing.py)
            self._epoch, self._batch, self._lineage = epoch, 0, ()

    def _settings(self) -> dict[str, Any]:
        """What the plan depends on besides the epoch: saved in the state and checked equal on load."""
        o = self.opts
        return {"seed": o.seed, "train": o.train, "num_volumes": self._volumes, "batch_size": o.batch_size,
                "patches_per_volume": o.patches_per_volume,
                "patch_size": list(o.patch_size), "overlap": list(o.overlap), "drop_last": not o.keep_last}

    def state_dict(self) -> dict[str, Any]:
        o = self.opts
        return {**shared_fields(STATE_VERSION, kind=self._kind, epoch=self._epoch, lineage=self._lineage,
                                mixture=self._mixture_state, data=self._data),
                "batch": self._batch, "rank": o.rank, "world_size": o.world_size, **self._settings()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        check_shared(state, STATE_VERSION, kind=self._kind, unversioned=1, mixture=self._mixture_state, data=self._data)
        for key, value in self._settings().items():
            saved = as_lists(state.get(key))
            if saved != value or type(saved) is not type(value):
                raise ValueError(f"cannot resume: the state was saved with {key}={state.get(key)!r}, this loader "
                                 f"has {key}={value!r}; build the loader with the same arguments and dataset")
        epoch, batch, world = state.get("epoch"), state.get("batch"), state.get("world_size")
        if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in (epoch, batch, world)) \
                or not valid_epoch(int(epoch)) or not valid_world_size(int(world)):
            raise ValueError(f"state must hold an integer 'epoch' in 0..{MAX_EPOCH}, an integer 'batch' and an "
                             f"integer 'world_size' in 1..{MAX_WORLD_SIZE}, got {epoch!r}, {batch!r}, {world!r}")
        lineage = check_lineage(state.get("elastic"))
        saved = self._batches(len(self._ranks(int(epoch), lineage, int(world))[0]))
        if not 0 <= batch <= saved:
            raise ValueError(f"cannot resume at batch {batch}: an epoch has {saved} batches on {world} rank(s)")
        self._end_open_pass(MOVED)
        self._epoch = int(epoch)
        self._lineage, self._batch = resumed_lineage(lineage, saved_world=int(world), saved_batch=int(batch),
                                                     world_size=self.opts.world_size)

    # ---- iteration ----------------------------------------------------------------------------
    def _cut(self, specs: list[PatchSpec]) -> list[Patch]:
        """Read one volume and cut the patches `specs` (all of that volume) from it (reader thread)."""
        o = self.opts
        volume = self.store.read(specs[0].volume)
        mask = self.store.read_mask(specs[0].volume) if self.masked else None
        size = o.cut_size
        out = []
        for spec in specs:
            centred = False
            start = spec.start
            if start is None:
                rng = np.random.default_rng(list(spec.stream))
                use_fg = o.sampling == "foreground" and rng.random() < o.foreground_prob
                # with masks, the foreground is the labelled voxels (nnU-Net's oversampling), else voxels above HU
                where = mask if mask is not None else volume[0] if volume.ndim == 4 else volume  # channels: the first
                start, centred = random_start(where, size, rng, foreground=use_fg,
                                              threshold=o.foreground_hu if mask is None else 0, exact=mask is not None)
            out.append((crop(volume, start, size, pad_value=o.pad_value), spec, start, centred,
                        None if mask is None else crop(mask, start, size, pad_value=0)))
        return out

    def _patches(self, specs: list[PatchSpec]) -> Iterator[Patch]:
        groups = [list(g) for _, g in itertools.groupby(specs, key=lambda s: s.volume)]
        if not groups:
            return
        workers = self.opts.num_workers
        with ThreadPoolExecutor(workers, thread_name_prefix="fastdata-volumes") as pool:
            pending: deque = deque()
            it = iter(groups)
            for group in itertools.islice(it, workers * self.opts.prefetch):
                pending.append(pool.submit(self._cut, group))
            while pending:
                done = pending.popleft().result()
                nxt = next(it, None)
                if nxt is not None:
                    pending.append(pool.submit(self._cut, nxt))
                yield from done

    def _batch_out(self, patches: list[Patch], batch_index: int) -> tuple[torch.Tensor, dict[str, Any]]:
        o = self.opts
        self.last_patches = [p[1] for p in patches]
        device = torch.device(o.device)
        stacked = np.stack([p[0] for p in patches])
        host = torch.from_numpy(stacked if stacked.ndim == 5 else stacked[:, None])  # [B, C, D, H, W]
        if device.type == "cuda":
            host = host.pin_memory()
        x = host.to(device, non_blocking=True).float()
        x = normalise(x, o)
        masks = mask_batch([p[4] for p in patches], device) if self.masked else None
        hook = None if isinstance(o.augment, bool) else o.augment
        if self._augment is not None or hook is not None or o.batch_transform is not None:
            with seeded(o.seed, self._epoch, o.rank, batch_index, device):
                return self._hooked(x, masks, patches, batch_index, hook)
        return self._cast(x), self._meta(patches, masks)

    def _hooked(self, x: torch.Tensor, masks: torch.Tensor | None, patches: list[Patch], batch_index: int,
                hook: Any) -> tuple[torch.Tensor, dict[str, Any]]:
        """The built-in augmentation, the augment hook, the cast, the batch_transform hook (seeded by the caller)."""
        o = self.opts
        if self._augment is not None:
            x, masks = self._augment(x, masks)
            if o.window is not None:
                x = x.clamp_(0.0, 1.0)  # interpolation may overshoot by a rounding error
        if hook is not None:  # it sees the patches only: a spatial transform there would leave the masks behind
            out = call_hook("augment", hook, x, epoch=self._epoch, batch=batch_index)
            x = augmented(out, x, epoch=self._epoch, batch=batch_index)
        x, meta = self._cast(x), self._meta(patches, masks)
        if o.batch_transform is not None:
            out = call_hook("batch_transform", o.batch_transform, x, meta, epoch=self._epoch, batch=batch_index)
            x, meta = pair("batch_transform", out, epoch=self._epoch, batch=batch_index)
        return x, meta

    def _cast(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(getattr(torch, self.opts.dtype)).contiguous()

    def _meta(self, patches: list[Patch], masks: torch.Tensor | None) -> dict[str, Any]:
        entries = [self.store.entries[p[1].volume] for p in patches]
        return {
            "keys": [e.key for e in entries],
            "volume": torch.tensor([p[1].volume for p in patches], dtype=torch.long),
            "start": torch.tensor([p[2] for p in patches], dtype=torch.long),
            "volume_shape": torch.tensor([e.shape for e in entries], dtype=torch.long),
            "spacing": torch.tensor([e.spacing for e in entries], dtype=torch.float64),
            "duplicate": torch.tensor([p[1].duplicate for p in patches], dtype=torch.bool),
            "foreground": torch.tensor([p[3] for p in patches], dtype=torch.bool),
            **({"dataset": torch.from_numpy(self.mixture.dataset_of(np.array([p[1].volume for p in patches])))}
               if self._return_dataset else {}),
            **({"labels": masks.round().long()} if masks is not None else {}),
        }

    def _release(self) -> None:
        self.view.close()

    def _iterate(self) -> Iterator[tuple[torch.Tensor, dict[str, Any]]]:
        b, total = self.opts.batch_size, len(self)
        specs = self.plan()[self._batch * b: total * b]
        batch: list[Patch] = []
        for patch in self._patches(specs):
            batch.append(patch)
            if len(batch) == b:
                out = self._batch_out(batch, self._batch)
                batch = []
                self._batch += 1
                yield out
        if batch and self._batch < total:
            out = self._batch_out(batch, self._batch)
            self._batch += 1
            yield out
        self._epoch, self._batch, self._lineage = self._epoch + 1, 0, ()


def volume_loader(source: Spec | DatasetView, /, *, split: str | None = None, rank: int | None = None,
                  world_size: int | None = None, **options: Any) -> VolumeLoader:
    """Build the loader of a dicom dataset; keyword options are the fields of VolumeLoaderOptions."""
    remote = RemoteOptions.pop(options)
    rank, world_size = resolve_rank(rank, world_size)
    view = source if isinstance(source, DatasetView | MixedView) else open_dataset(source, split=split, remote=remote)
    if view.manifest.kind not in VOLUME_KINDS:
        raise ValueError(f"{source} holds a {view.manifest.kind!r} dataset; the volume loader reads "
                         f"{' and '.join(map(repr, VOLUME_KINDS))} datasets")
    allowed = set(VolumeLoaderOptions.__dataclass_fields__) - {"rank", "world_size"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(f"unknown option(s) {unknown} for the volume loader; allowed: {sorted(allowed)}")
    for key in ("patch_size", "overlap", "window", "scale", "zscore", "clip"):
        if isinstance(options.get(key), list):
            options[key] = tuple(options[key])
    opts = VolumeLoaderOptions(**torch_options(options), rank=rank, world_size=world_size)
    if opts.zscore == "foreground":  # nnU-Net's CT normalisation from the train split's histogram (intensity.py)
        found = dataset_foreground(view)
        # a foreground of one value (std 0, its percentiles equal) widened to the narrowest window the options take
        opts = replace(opts, clip=(found.low, max(found.high, found.low + MIN_SPREAD)),
                       zscore=(found.mean, max(found.std, MIN_SPREAD)))
        log.info("zscore='foreground': clip=%s, zscore=%s from %d foreground voxels", opts.clip, opts.zscore,
                 found.voxels)
    loader = VolumeLoader(view, opts)
    warn_on_units(view, opts, masked=loader.masked)
    warn_on_orientations(view)
    return loader
