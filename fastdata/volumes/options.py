"""Options of the volume loader: one frozen dataclass, validated eagerly; and the warnings when options in
Hounsfield units meet volumes that are not CT (`warn_on_units`) and when volumes lie in several orientations
(`warn_on_orientations`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from fastdata.coerce import DEVICES, is_device_name
from fastdata.cpus import cpus_per_process
from fastdata.distributed import WORLD_SIZES, valid_world_size
from fastdata.hooks import check_hook
from fastdata.images.options import MAX_PREFETCH, MAX_THREADS, finite, numbers
from fastdata.option_rules import check_flag, check_seed, refused
from fastdata.planning.selection import check_selection
from fastdata.volumes.channel_values import PAIRED, as_pad_value, as_pairs, pad_values, pairs, per_channel

log = logging.getLogger(__name__)

SAMPLING = ("uniform", "foreground")
# sizes past which memory runs out before a batch: a patch's voxels (1 GB of float32), an epoch's plan of patches, a
# displacement field's grid points cubed
MAX_PATCH_VOXELS = 1 << 28  # 1024 x 1024 x 256
MAX_PATCHES_PER_VOLUME = 1 << 16
MAX_ELASTIC_GRID = 64
# intensities (HU, or an MR scale) that float32 arithmetic keeps finite: beyond any scanner's, and a window or a
# z-score std at least this wide (a narrower one divides by a float32 zero)
MAX_INTENSITY = 1e7
MIN_SPREAD = 1e-3
# kornia's RandomAffine3D takes degrees inside (-360, 360), and +-180 turns a patch every way; an elastic
# displacement's standard deviation past this many voxels moves every voxel out of any patch
MAX_ROTATE_DEGREES = 180.0
MAX_ELASTIC_MAGNITUDE = 1000.0
DTYPES = ("float32", "float16", "bfloat16")


def _triple(name: str, value: object, *, minimum: int) -> tuple[int, int, int]:
    if isinstance(value, int):
        value = (value, value, value)
    if not isinstance(value, tuple | list) or len(value) != 3 or any(
            not isinstance(v, int) or isinstance(v, bool) or v < minimum for v in value):
        raise ValueError(f"{name}={value!r} is not allowed; {name} must be an integer >= {minimum} "
                         "or three of them (D, H, W)")
    return (int(value[0]), int(value[1]), int(value[2]))


@dataclass(frozen=True)
class VolumeLoaderOptions:
    """Everything that decides which patches a volume loader yields.

    Order and patch positions are a pure function of (seed, epoch, rank, world_size); augmentation
    randomness is seeded per batch from the same, so a resumed epoch yields identical tensors.
    """

    batch_size: int = 2
    patch_size: tuple[int, int, int] = (128, 128, 128)
    train: bool = True
    patches_per_volume: int = 1
    sampling: str = "uniform"  # or "foreground": centre on a voxel above foreground_hu with foreground_prob
    foreground_hu: float = -500.0
    foreground_prob: float = 0.5
    window: Any = None  # (lo, hi) HU -> [0, 1]; or one (lo, hi) per channel (channel_values.py)
    zscore: Any = False  # True: per patch; (mean, std): fixed, or one per channel; "foreground" (below)
    clip: Any = None  # (lo, hi): values clipped to it before the z-score; or one (lo, hi) per channel
    pad_value: Any = -1024.0  # HU used where a patch reaches outside its volume (air); or one per channel
    augment: Any = True  # True: the built-in augmentation (train only); a callable: that, then the hook
    flip_prob: float = 0.5  # per axis
    rot90: bool = True  # random multiples of 90 degrees in the (H, W) plane (when H == W)
    rotate_degrees: float = 10.0  # small random rotations about each axis (kornia RandomAffine3D)
    scale: tuple[float, float] | None = (0.9, 1.1)
    affine_prob: float = 0.5
    crop_margin: int = 4  # patches are cut this much larger, then kornia RandomCrop3D crops them back
    elastic_prob: float = 0.3
    elastic_grid: int = 4  # control points per axis of the random displacement field
    elastic_magnitude: float = 2.0  # displacement standard deviation in voxels
    overlap: tuple[int, int, int] | int = 0  # eval sliding window overlap in voxels
    seed: int = 0
    drop_last: bool | None = None  # None: True for train, False for eval
    device: str = "cpu"
    dtype: str = "float32"
    num_workers: int = field(default_factory=lambda: min(4, cpus_per_process()))  # reader threads
    prefetch: int = 2  # volumes in flight per reader thread
    rank: int = 0
    world_size: int = 1
    batch_transform: Any = None  # hook: fn(patches, meta) -> (patches, meta) on the final batch
    indices: Any = field(default=None, compare=False, repr=False)  # a subset: sorted read-only volume ids
    # weighted sampling (train): a weight per volume (planning/weights.py)
    sample_weights: Any = field(default=None, compare=False, repr=False)
    samples_per_epoch: int | None = None  # with sample_weights: the samples an epoch draws (None: the split's)

    def __post_init__(self) -> None:
        check_selection(self)  # indices, sample_weights, samples_per_epoch
        for flag in ("train", "rot90"):
            check_flag(flag, getattr(self, flag))
        check_flag("drop_last", self.drop_last, none="train drops, eval keeps")
        check_seed(self.seed)
        if not isinstance(self.augment, bool):
            check_hook("augment", self.augment)
        check_hook("batch_transform", self.batch_transform)
        object.__setattr__(self, "patch_size", _triple("patch_size", self.patch_size, minimum=1))
        if self.patch_size[0] * self.patch_size[1] * self.patch_size[2] > MAX_PATCH_VOXELS:
            raise refused("patch_size", self.patch_size, f"at most {MAX_PATCH_VOXELS:,} voxels (1 GB of float32 a "
                          "patch: past it a batch cannot be allocated)")
        object.__setattr__(self, "overlap", _triple("overlap", self.overlap, minimum=0))
        if any(o >= p for o, p in zip(self.overlap, self.patch_size)):
            raise refused("overlap", self.overlap, f"smaller than patch_size {self.patch_size} on every axis")
        if not isinstance(self.num_workers, int) or self.num_workers > MAX_THREADS or \
                not isinstance(self.prefetch, int) or self.prefetch > MAX_PREFETCH:
            raise refused("num_workers/prefetch", (self.num_workers, self.prefetch),
                          f"at most {MAX_THREADS} reader threads and {MAX_PREFETCH} volumes in flight per thread")
        for name in ("batch_size", "patches_per_volume", "num_workers", "prefetch", "elastic_grid"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < (2 if name == "elastic_grid" else 1):
                raise refused(name, value, f"an integer >= {2 if name == 'elastic_grid' else 1}")
        # an epoch's plan holds every patch, and a field its grid's points cubed: past these, memory runs out first
        for name, most in (("patches_per_volume", MAX_PATCHES_PER_VOLUME), ("elastic_grid", MAX_ELASTIC_GRID)):
            if getattr(self, name) > most:
                raise refused(name, getattr(self, name), f"at most {most}")
        for name in PAIRED:
            object.__setattr__(self, name, as_pairs(getattr(self, name)))
        object.__setattr__(self, "pad_value", as_pad_value(self.pad_value))
        floats = {"foreground_hu": self.foreground_hu, "foreground_prob": self.foreground_prob,
                  "flip_prob": self.flip_prob, "rotate_degrees": self.rotate_degrees,
                  "affine_prob": self.affine_prob, "elastic_prob": self.elastic_prob,
                  "elastic_magnitude": self.elastic_magnitude}
        for name, value in floats.items():
            if not finite(value):
                raise refused(name, value, "a finite number")
        if not _intensities((self.foreground_hu,)):
            raise refused("foreground_hu", self.foreground_hu, f"an intensity within +-{MAX_INTENSITY:g}")
        pads = pad_values(self.pad_value)
        if not (pads and finite(*pads) and _intensities(pads)):
            raise refused("pad_value", self.pad_value, f"a finite intensity within +-{MAX_INTENSITY:g}, or one per "
                                                       "channel (a tuple)", cut=200)
        if self.sampling not in SAMPLING:
            raise refused("sampling", self.sampling, f"one of {list(SAMPLING)}")
        for name in ("foreground_prob", "flip_prob", "affine_prob", "elastic_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise refused(name, getattr(self, name), "in [0, 1]")
        _check_intensity(self)
        if self.scale is not None and (not numbers(self.scale, 2) or not 0 < self.scale[0] <= self.scale[1]):
            raise refused("scale", self.scale, "None or two finite numbers (lo, hi) with 0 < lo <= hi")
        for name, most in (("rotate_degrees", MAX_ROTATE_DEGREES), ("elastic_magnitude", MAX_ELASTIC_MAGNITUDE)):
            if not 0 <= getattr(self, name) <= most:
                raise refused(name, getattr(self, name), f"in [0, {most:g}]")
        if not isinstance(self.crop_margin, int) or isinstance(self.crop_margin, bool) or self.crop_margin < 0:
            raise refused("crop_margin", self.crop_margin, "an integer >= 0")
        cut = self.cut_size
        if cut[0] * cut[1] * cut[2] > MAX_PATCH_VOXELS:  # the region cut for a patch is allocated whole
            raise refused("crop_margin", self.crop_margin, f"small enough that a patch cut with it (patch_size "
                          f"{self.patch_size} + 2 x crop_margin a side) holds at most {MAX_PATCH_VOXELS:,} voxels")
        if self.dtype not in DTYPES:
            raise refused("dtype", self.dtype, f"one of {list(DTYPES)}")
        if not is_device_name(self.device):
            raise refused("device", self.device, DEVICES)
        if not valid_world_size(self.world_size):
            raise refused("world_size", self.world_size, WORLD_SIZES)
        if not isinstance(self.rank, int) or not 0 <= self.rank < self.world_size:
            raise refused("rank", self.rank, f"in 0..world_size-1 (world_size={self.world_size})")

    @property
    def keep_last(self) -> bool:
        return not (self.train if self.drop_last is None else self.drop_last)

    @property
    def cut_size(self) -> tuple[int, int, int]:
        """Size of the region cut from a volume (the patch plus the random-crop margin when training)."""
        m = self.crop_margin if (self.train and self.augment) else 0
        return (self.patch_size[0] + 2 * m, self.patch_size[1] + 2 * m, self.patch_size[2] + 2 * m)


def warn_on_units(view: Any, opts: VolumeLoaderOptions, *, masked: bool = False) -> None:  # a DatasetView/MixedView
    """Log a warning when options in Hounsfield units meet volumes that are not CT: an MR or radiograph holds
    rescaled stored values, where -1024 is no air and a window in HU cuts at arbitrary intensities. With masks,
    foreground sampling centres on labelled voxels: foreground_hu is not used."""
    for member in view.views:
        counts = member.manifest.splits[member.split].stats.get("modality")
        other = sorted(m for m in counts or {} if m != "CT") if isinstance(counts, dict) else []
        in_hu = [f"{name}={value}" for name, value, used in (
            ("window", opts.window, opts.window is not None and not per_channel(opts.window)),
            ("pad_value", opts.pad_value, opts.pad_value == VolumeLoaderOptions.pad_value),
            ("foreground_hu", opts.foreground_hu, opts.sampling == "foreground" and not masked)) if used]
        if other and in_hu:
            log.warning("%s holds %s volumes, whose values are not Hounsfield units, but %s %s in HU (CT's air, "
                        "window or foreground): pass pad_value= their background (0 for most MR), zscore= instead of "
                        "window=, and a foreground_hu= in their own values", member.root, "/".join(other),
                        ", ".join(in_hu), "is" if len(in_hu) == 1 else "are")


def warn_on_orientations(view: Any) -> None:  # a DatasetView/MixedView
    """Log a warning when the volumes read together lie in more than one orientation (the manifests' counts of
    their axis codes, written by conversions since the --orientation option): an array axis is then one patient
    direction in some volumes and another in the rest, and a network learns each layout apart."""
    counts: dict[str, int] = {}
    for member in view.views:
        stats = member.manifest.splits[member.split].stats.get("orientation")
        for code, n in (stats.items() if isinstance(stats, dict) else ()):
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:  # a manifest is read, not trusted
                counts[code] = counts.get(code, 0) + n
    if len(counts) > 1:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        log.warning("the volumes lie in %d orientations (%s, by where their x, y and z axes point): a patch's axes "
                    "are other patient directions from one volume to the next; convert with --orientation %s to give "
                    "them one", len(ranked), ", ".join(f"{code}: {n}" for code, n in ranked), ranked[0][0])


def _check_intensity(o: VolumeLoaderOptions) -> None:
    """ValueError unless the intensity options (window, zscore, clip) are one normalisation that float32 keeps
    finite: bounds within MAX_INTENSITY, a window's width and a z-score's std at least MIN_SPREAD."""
    if o.window is not None and not all(numbers(w, 2) and w[1] - w[0] >= MIN_SPREAD and _intensities(w)
                                        for w in pairs(o.window)):
        raise refused("window", o.window, f"None or two finite numbers (lo, hi) with hi - lo >= {MIN_SPREAD}, "
                      f"in HU (or the stored scale), within +-{MAX_INTENSITY:g}, or one such pair per channel",
                      cut=200)
    if not isinstance(o.zscore, bool) and o.zscore != "foreground" and not all(
            numbers(z, 2) and z[1] >= MIN_SPREAD and _intensities(z) for z in pairs(o.zscore)):
        raise refused("zscore", o.zscore, "False, True (per patch), two finite numbers (mean, std) with "
                                          f"std >= {MIN_SPREAD}, within +-{MAX_INTENSITY:g}, or one such pair per "
                                          "channel, or 'foreground' (the train split's, clipped as nnU-Net)", cut=200)
    if o.window is not None and o.zscore is not False:
        raise ValueError("window= and zscore= are exclusive: pick one intensity normalisation")
    if o.clip is not None and not all(numbers(c, 2) and c[0] < c[1] and _intensities(c) for c in pairs(o.clip)):
        raise refused("clip", o.clip, f"None or two finite numbers (lo, hi) with lo < hi, within +-{MAX_INTENSITY:g}, "
                                      "or one such pair per channel", cut=200)
    if o.clip is not None and (o.zscore is False or o.zscore == "foreground"):
        raise ValueError("clip= goes with zscore=True or zscore=(mean, std): window= clips already, and "
                         "zscore='foreground' sets its own clip from the dataset")


def _intensities(values: Any) -> bool:
    """Whether every one of `values` is an intensity float32 arithmetic keeps finite (MAX_INTENSITY)."""
    return all(abs(v) <= MAX_INTENSITY for v in values)
