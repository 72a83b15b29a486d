"""Options of the image loader: one frozen dataclass, validated eagerly, shared by every backend."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fastdata.coerce import DEVICES, is_device_name, plain_number
from fastdata.cpus import cpus_per_process
from fastdata.distributed import WORLD_SIZES, valid_world_size
from fastdata.hooks import check_hook
from fastdata.images.order import SHUFFLE_WINDOW
from fastdata.option_rules import check_flag, check_seed, refused
from fastdata.planning.epochs import MAX_EPOCH, valid_epoch
from fastdata.planning.selection import check_selection

BACKENDS = ("dali", "kornia")
MIN_STD = 1e-4  # 1 / MIN_STD = 10,000: the largest normalised value stays well within float16 (65,504)
MAX_JITTER = 1000.0  # a colour factor of up to 1,001: past any use, still far from float32's overflow
DTYPES = ("float32", "float16", "bfloat16", "uint8")
ON_ERROR = ("raise", "skip")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
EVAL_CROP_FRACTION = 0.875  # eval: resize shorter side to image_size / 0.875, then centre crop
DEFAULT_MAX_PIXELS = 89_478_485  # Pillow's decompression-bomb limit
MAX_THREADS = 256  # more decode threads than this only thrash (and DALI aborts the interpreter at ~10**6)
MAX_PREFETCH = 64  # batches kept ready; each one holds a whole batch in memory
DEFAULT_MEMORY_CACHE = 512 * 2**20  # bytes of tar shards a loader keeps in its own memory once read


def finite(*values: object) -> bool:
    """Every value a real, finite number (not NaN, not inf, not a bool)."""
    return all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def numbers(value: object, count: int) -> bool:
    """`value` is a tuple or list of `count` real, finite numbers."""
    return isinstance(value, tuple | list) and len(value) == count and finite(*value)


MAX_IMAGE_SIZE = 16384  # a float32 image of 3 x 16384^2 takes 3.2 GB: past it a batch cannot be allocated


def _size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 8 <= value <= MAX_IMAGE_SIZE


def size_steps(schedule: Mapping[Any, Any]) -> tuple[tuple[int, int], ...]:
    """{first epoch: image size} as sorted (epoch, size) steps; ValueError unless the epochs are integers in
    0..MAX_EPOCH, epoch 0 among them, and the sizes integers >= 8 (numpy integers count as the ints they are)."""
    steps = {plain_number(epoch): plain_number(size) for epoch, size in schedule.items()}
    if not steps or 0 not in steps or not all(valid_epoch(e) and _size(v) for e, v in steps.items()):
        raise refused("image_size", dict(schedule), f"{{first epoch: size}} with epoch 0 among the epochs, every "
                      f"epoch an integer in 0..{MAX_EPOCH} and every size an integer in 8..{MAX_IMAGE_SIZE}")
    return tuple(sorted(steps.items()))


@dataclass(frozen=True)
class ImageLoaderOptions:
    """Everything that decides which tensors a loader yields, and how fast.

    Order of samples is a pure function of (seed, epoch, rank, world_size).
    """

    batch_size: int = 256
    train: bool = True
    image_size: int = 224  # or {first epoch: size, ...}: progressive resizing (`image_sizes`, below)
    backend: str = "dali"
    device: str = "cpu"
    dtype: str = "float32"
    channels_last: bool = True
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    hflip: bool = True
    color_jitter: tuple[float, float, float, float] | None = None  # brightness, contrast, saturation, hue
    seed: int = 0
    drop_last: bool | None = None  # None: True for train, False for eval
    num_threads: int = field(default_factory=lambda: min(cpus_per_process(), MAX_THREADS))
    prefetch: int = 2
    rank: int = 0
    world_size: int = 1
    on_error: str = "raise"
    max_pixels: int = DEFAULT_MAX_PIXELS  # larger images are refused before decoding (decompression bombs)
    shuffle_window: int | None = SHUFFLE_WINDOW  # train: samples shuffled together (None: a rank's whole block)
    hw_decoder_load: float = 0.65  # DALI mixed decode: share of images sent to the hardware JPEG decoder
    device_decode: bool = False  # kornia: decode with torchvision.io.decode_jpeg on `device` (nvJPEG on CUDA)
    overlap_epochs: bool = True  # start the next epoch's first batches while this one's last are consumed
    memory_cache: int | str = DEFAULT_MEMORY_CACHE  # bytes (or "2GB"): tar shards kept in memory once read; 0: off
    # user hooks (docs/augment.md): float [0, 1] batches on the device before normalisation; the final batch;
    # DALI graph nodes after decode and crop/resize (DALI backend only)
    augment: Any = None
    batch_transform: Any = None
    dali_augment: Any = None
    # progressive resizing: (first epoch, image_size) steps, from `image_size={0: 160, 10: 192}`; (): one size. The
    # Loader gives each epoch's backend `image_size=size_at(epoch)` (loader.py); the field is not an option name
    image_sizes: tuple[tuple[int, int], ...] = ()
    # a subset: the split's samples to read (global indices, manifest order), held sorted as a read-only int64 array
    indices: Any = field(default=None, compare=False, repr=False)
    # weighted sampling (train): a weight per sample of the split, held as a read-only float64 array, or "balanced"
    # (planning/weights.py); each epoch draws samples_per_epoch samples (the split's size by default), with replacement
    sample_weights: Any = field(default=None, compare=False, repr=False)
    samples_per_epoch: int | None = None  # with sample_weights: the samples an epoch draws (None: the split's)

    def __post_init__(self) -> None:
        if not isinstance(self.batch_size, int) or isinstance(self.batch_size, bool) or self.batch_size < 1:
            raise refused("batch_size", self.batch_size, "an integer >= 1")
        if isinstance(self.image_size, Mapping):
            object.__setattr__(self, "image_sizes", size_steps(self.image_size))
            object.__setattr__(self, "image_size", self.image_sizes[0][1])
        elif self.image_sizes:
            object.__setattr__(self, "image_sizes", size_steps(dict(self.image_sizes)))
        if not _size(self.image_size):
            raise refused("image_size", self.image_size, f"an integer in 8..{MAX_IMAGE_SIZE}, or {{first epoch: size}} "
                          "with epoch 0")
        check_selection(self)  # indices, sample_weights, samples_per_epoch
        if self.backend not in BACKENDS:
            raise refused("backend", self.backend, f"one of {list(BACKENDS)}")
        if self.dtype not in DTYPES:
            raise refused("dtype", self.dtype, f"one of {list(DTYPES)}")
        if not is_device_name(self.device):
            raise refused("device", self.device, DEVICES)
        if not numbers(self.mean, 3) or not numbers(self.std, 3) or any(s < MIN_STD for s in self.std):
            raise refused("mean/std", (self.mean, self.std), f"three finite values each, std >= {MIN_STD} (a smaller "
                          "std makes (x - mean) / std overflow float16, and below float32's range, divide by zero)")
        if any(not 0 <= m <= 1 for m in self.mean) or any(s > 1 for s in self.std):
            raise refused("mean/std", (self.mean, self.std),
                          "on the [0, 1] scale of the images they normalise, as torchvision's Normalize takes them "
                          "(ImageNet: (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)); divide the 0-255 values of "
                          "DALI's crop_mirror_normalize or FFCV's NormalizeImage by 255")
        if not numbers(self.scale, 2) or not 0 < self.scale[0] <= self.scale[1] <= 1:
            raise refused("scale", self.scale, "(lo, hi) with 0 < lo <= hi <= 1")
        if not numbers(self.ratio, 2) or not 0 < self.ratio[0] <= self.ratio[1]:
            raise refused("ratio", self.ratio, "(lo, hi) with 0 < lo <= hi, finite")
        if self.color_jitter is not None and (not numbers(self.color_jitter, 4)
                                              or any(v < 0 for v in self.color_jitter)):
            raise refused("color_jitter", self.color_jitter, "None or four non-negative values "
                          "(brightness, contrast, saturation, hue)")
        if self.color_jitter is not None and self.color_jitter[3] > 0.5:
            raise refused("color_jitter", self.color_jitter, "with hue <= 0.5 (hue is a fraction of the colour circle)")
        if self.color_jitter is not None and max(self.color_jitter[:3]) > MAX_JITTER:
            raise refused("color_jitter", self.color_jitter, f"with brightness, contrast and saturation <= "
                          f"{MAX_JITTER} (factors drawn in [max(0, 1 - v), 1 + v]; far larger ones overflow float32)")
        check_seed(self.seed)
        for flag in ("train", "channels_last", "hflip", "device_decode", "overlap_epochs"):
            check_flag(flag, getattr(self, flag))
        check_flag("drop_last", self.drop_last, none="train drops, eval keeps")
        if not isinstance(self.num_threads, int) or isinstance(self.num_threads, bool) \
                or not 1 <= self.num_threads <= MAX_THREADS:
            raise refused("num_threads", self.num_threads, f"an integer in 1..{MAX_THREADS}")
        if not isinstance(self.prefetch, int) or isinstance(self.prefetch, bool) \
                or not 1 <= self.prefetch <= MAX_PREFETCH:
            raise refused("prefetch", self.prefetch, f"an integer in 1..{MAX_PREFETCH} (batches kept ready)")
        if not valid_world_size(self.world_size):
            raise refused("world_size", self.world_size, WORLD_SIZES)
        if not isinstance(self.rank, int) or not 0 <= self.rank < self.world_size:
            raise refused("rank", self.rank, f"in 0..world_size-1 (world_size={self.world_size})")
        if self.on_error not in ON_ERROR:
            raise refused("on_error", self.on_error, f"one of {list(ON_ERROR)}")
        if not isinstance(self.max_pixels, int) or isinstance(self.max_pixels, bool) or self.max_pixels < 1:
            raise refused("max_pixels", self.max_pixels,
                          "an integer >= 1 (pixels per image; larger images are refused)")
        if self.shuffle_window is not None and (not isinstance(self.shuffle_window, int)
                                                or isinstance(self.shuffle_window, bool) or self.shuffle_window < 1):
            raise refused("shuffle_window", self.shuffle_window, "None or an integer >= 1 (samples shuffled together)")
        if isinstance(self.memory_cache, str):
            from fastdata.cli.format import parse_size

            try:
                object.__setattr__(self, "memory_cache", parse_size(self.memory_cache))
            except ValueError as exc:
                raise refused("memory_cache", self.memory_cache, f"bytes or a size such as '2GB' ({exc})") from None
        if not isinstance(self.memory_cache, int) or isinstance(self.memory_cache, bool) or self.memory_cache < 0:
            raise refused("memory_cache", self.memory_cache,
                          "bytes >= 0 (0: read every sample from its file) or a size such as '2GB'")
        if not finite(self.hw_decoder_load) or not 0.0 <= self.hw_decoder_load <= 1.0:
            raise refused("hw_decoder_load", self.hw_decoder_load, "in [0, 1]")
        for name in ("augment", "batch_transform", "dali_augment"):
            check_hook(name, getattr(self, name))
        if self.dali_augment is not None and self.backend != "dali":
            raise refused("dali_augment", self.dali_augment, "None on the kornia backend (it adds operators to the "
                          "DALI graph); use augment= for batched torch/kornia augmentation on either backend")

    def size_at(self, epoch: int) -> int:
        """The image size of `epoch`: the last step of `image_sizes` that began at or before it, else image_size."""
        return next((size for first, size in reversed(self.image_sizes) if first <= epoch), self.image_size)

    @property
    def keep_last(self) -> bool:
        """Whether a final partial batch is yielded (eval default) rather than dropped (train default)."""
        return not (self.train if self.drop_last is None else self.drop_last)

    @property
    def resize_short(self) -> int:
        """Eval: the shorter side is resized to this before the centre crop."""
        return round(self.image_size / EVAL_CROP_FRACTION)
