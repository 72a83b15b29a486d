"""`image_loader(source, ...)`: the image `Loader`, a drop-in PyTorch iterable over converted shards.

Rank, world size, device and backend are resolved once here, at the edge, and passed explicitly to
the backend as one frozen `ImageLoaderOptions`. Backends are looked up in `BACKENDS` (name ->
"module:Class") and imported only when chosen, so DALI and kornia stay optional.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import logging
import weakref
from collections.abc import Iterator
from typing import Any, Protocol

from fastdata.closing import Closable
from fastdata.coerce import torch_options
from fastdata.dataset import DatasetView, RemoteOptions, open_dataset
from fastdata.distributed import resolve_rank
from fastdata.errors import ManifestError, require, require_torchvision
from fastdata.images.options import ImageLoaderOptions
from fastdata.images.orientation import say_if_turned
from fastdata.memory_fit import check_batch_memory
from fastdata.mixing import MixedView
from fastdata.planning.epochs import epoch_to_set, valid_epoch
from fastdata.sources import Spec

BACKENDS: dict[str, str] = {
    "kornia": "fastdata.images.kornia_backend:KorniaBackend",
    "dali": "fastdata.images.dali_backend:DaliBackend",
}
_EXTRAS = {"kornia": ("kornia", "kornia"), "dali": ("nvidia.dali", "dali")}
_OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ImageLoaderOptions) if f.name != "image_sizes")
log = logging.getLogger(__name__)


class Backend(Protocol):
    """What a backend class provides; built as `Backend(view, options, reader)` (reader: None, or an earlier
    backend's `reader` to share, whose ownership `take_over` moves)."""

    def __iter__(self) -> Iterator[tuple[Any, Any]]: ...
    def __len__(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
    @property
    def num_samples(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def reader(self) -> Any: ...
    def take_over(self, old: Any) -> None: ...


class Loader(Closable):
    """Iterable of `(images, labels)` batches; see docs/loading.md for the output contract. `close()` or `with`
    lets its threads and files go (closing.py)."""

    _keeps_threads = True  # the backend's decode threads, and the producer of the next epoch (overlap.py)

    def __init__(self, view: DatasetView, options: ImageLoaderOptions, backend: Backend) -> None:
        self._view, self._options, self._backend = view, options, backend
        self._retired: list[Backend] = []  # backends of an earlier image size (progressive resizing), closed later
        self._stop_ahead_when_gone(backend)

    def _stop_ahead_when_gone(self, backend: Backend) -> None:
        """The thread producing the next epoch ahead holds the backend, not this loader: stop it when the loader
        goes. Only the current backend's: a retired one is closed, and the finalizer would keep it alive."""
        old = getattr(self, "_ahead", None)
        if old is not None:
            old.detach()
        stop = getattr(backend, "stop_ahead", None)
        self._ahead = weakref.finalize(self, stop, False) if stop is not None else None

    def _iterate(self) -> Iterator[tuple[Any, Any]]:
        # a generator, so that the pass holds this loader to its end: in `for x, y in fastdata.loader(...)` the
        # loader then dies when the loop ends, and its finalizer stops the producer gone on into the next epoch
        # (dying at `iter()`, before the producer went on, it left that producer and its pool running for good)
        self._close_retired()  # a new pass ends the one still open (docs/loading.md), on a retired backend too
        yield from self._backend

    def _close_retired(self) -> None:
        while self._retired:
            _close(self._retired.pop())

    def _release(self) -> None:
        """Its threads stopped, open shards closed, its dataset's files let go (closing.py)."""
        self._close_retired()
        _close(self._backend)

    def _resized(self, epoch: int, state: dict[str, Any] | None = None) -> None:
        """Progressive resizing: the backend of `epoch`'s image size, when it differs from this one's. The new
        backend takes over the position (with `state`, that state; else this backend's, so the skipped count and an
        elastic lineage carry on); this one is retired, left to finish a pass still open, and closed when the next
        pass begins. A state the new backend refuses changes nothing."""
        size = self._options.size_at(epoch)
        if size == self._options.image_size:
            if state is not None:
                self._backend.load_state_dict(state)
            return
        options = dataclasses.replace(self._options, image_size=size)
        backend = self._backend_of(options)  # it reads through this backend's reader, which it owns once it is kept
        try:
            backend.load_state_dict(self._backend.state_dict() if state is None else state)
        except BaseException:
            _close(backend)
            raise
        stop = getattr(self._backend, "stop_ahead", None)
        if stop is not None:  # what it made ahead was for its own size
            stop(False)
        backend.take_over(self._backend)  # closing the retired backend leaves the view and reader open
        self._retired.append(self._backend)
        self._options, self._backend = options, backend
        self._stop_ahead_when_gone(backend)

    def __len__(self) -> int:
        """Batches per epoch on this rank (equal on every rank)."""
        return len(self._backend)

    def _backend_of(self, options: ImageLoaderOptions) -> Backend:
        """A further backend of this loader's dataset, of other options (an image size), reading through the current
        backend's reader."""
        return make_backend(self._view, options, first=False, reader=self._backend.reader)

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order the next iteration follows (call it before every epoch)."""
        epoch = epoch_to_set(epoch)
        self._resized(epoch)
        self._backend.set_epoch(epoch)

    def state_dict(self) -> dict[str, Any]:
        """Where the iteration stands: load it into a fresh loader to get the rest of the epoch."""
        return self._backend.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        epoch = state.get("epoch") if isinstance(state, dict) else None
        if self._options.image_sizes and valid_epoch(epoch):
            self._resized(epoch, state)
        else:  # one size, or a state the backend refuses with its reason
            self._backend.load_state_dict(state)

    @property
    def classes(self) -> tuple[str, ...]:
        return self._view.classes

    @property
    def num_samples(self) -> int:
        """Real samples this rank yields per epoch (padding rows excluded)."""
        return self._backend.num_samples

    @property
    def skipped(self) -> int:
        """Corrupt samples skipped so far with on_error='skip'."""
        return self._backend.skipped

    @property
    def options(self) -> ImageLoaderOptions:
        """The options of the current epoch (with progressive resizing, its `image_size`)."""
        return self._options

    @property
    def split(self) -> str:
        return self._view.split

    @property
    def backend(self) -> Backend:
        return self._backend

    def __repr__(self) -> str:
        o = self._options
        return (f"Loader({str(self._view.root)!r}, split={self.split!r}, backend={o.backend!r}, "
                f"batch_size={o.batch_size}, train={o.train}, rank={o.rank}/{o.world_size}, batches={len(self)})")


def _close(backend: Backend) -> None:
    close = getattr(backend, "close", None)
    if close is not None:
        close()


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def dali_installed() -> bool:
    try:
        return importlib.util.find_spec("nvidia.dali") is not None
    except (ImportError, ValueError):
        return False


def default_backend(device: str, *, dali_augment: Any = None, device_decode: bool = False) -> str:
    """The backend a loader on `device` gets when none is named: the faster one there, measured side by side
    (docs/loading.md, "Which backend"). On a CUDA device DALI when it imports (nvJPEG and GPU resize); on the CPU
    the kornia backend, which outran DALI's CPU operators in train and matched them in eval. A `dali_augment`
    hook needs DALI, `device_decode` is the kornia backend's."""
    if dali_augment is not None:
        return "dali"
    if device_decode:
        return "kornia"
    return "dali" if str(device).startswith("cuda") and dali_installed() else "kornia"


def build_options(**kwargs: Any) -> ImageLoaderOptions:
    """ImageLoaderOptions with rank/world, device and backend defaults resolved; unknown names refused."""
    unknown = sorted(set(kwargs) - set(_OPTION_NAMES))
    if unknown:
        raise TypeError(f"unknown image loader option(s) {unknown}; allowed: split, {', '.join(_OPTION_NAMES)}")
    kwargs = torch_options(kwargs)
    kwargs["rank"], kwargs["world_size"] = resolve_rank(kwargs.get("rank"), kwargs.get("world_size"))
    if kwargs.get("device") is None:
        kwargs["device"] = default_device()
    if kwargs.get("backend") is None:
        kwargs["backend"] = default_backend(kwargs["device"], dali_augment=kwargs.get("dali_augment"),
                                            device_decode=bool(kwargs.get("device_decode")))
    for name in ("mean", "std", "scale", "ratio", "color_jitter"):
        if isinstance(kwargs.get(name), list):
            kwargs[name] = tuple(kwargs[name])
    opts = ImageLoaderOptions(**kwargs)
    if opts.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"device={opts.device!r} but torch.cuda.is_available() is False; use device='cpu'")
    return opts


def image_loader(source: Spec | DatasetView, /, *, split: str | None = None, **kwargs: Any) -> Loader:
    """A `Loader` over the images dataset at `source` (a directory, or a glob of its shards).

    Keyword options are the fields of `ImageLoaderOptions` (batch_size, train, image_size, backend,
    device, dtype, channels_last, mean, std, scale, ratio, hflip, color_jitter, seed, drop_last,
    num_threads, prefetch, rank, world_size, on_error, max_pixels, hw_decoder_load, device_decode, indices,
    sample_weights, samples_per_epoch; docs/loading.md has them all).
    `dtype` may be a torch.dtype and `device` a torch.device.
    """
    remote = RemoteOptions.pop(kwargs)
    opts = build_options(**kwargs)
    view = source if isinstance(source, DatasetView | MixedView) else open_dataset(source, split=split, remote=remote)
    if view.manifest.kind != "images":
        raise ManifestError(f"{view.root} holds a dataset of kind {view.manifest.kind!r}; image_loader reads "
                            "kind 'images' (use fastdata.loader() to pick the loader by kind)")
    return Loader(view, opts, make_backend(view, opts))


def make_backend(view: DatasetView, opts: ImageLoaderOptions, *, first: bool = True, reader: Any = None) -> Any:
    """The backend `opts.backend` names over `view` (its optional dependency checked first); `first`: the loader's
    first backend (later ones, of another image size, do not say again what the dataset holds, and read through
    `reader`, the earlier backend's)."""
    warn_if_upsampled(view, opts)
    if first:
        say_if_turned(view)
        check_batches_fit(opts)
    module_name, class_name = BACKENDS[opts.backend].split(":")
    require(*_EXTRAS[opts.backend])
    if opts.device_decode:
        require_torchvision("torchvision.io", "device_decode=True (torchvision.io.decode_jpeg)")
    backend_cls = getattr(importlib.import_module(module_name), class_name)
    return backend_cls(view, opts, reader)


def check_batches_fit(opts: ImageLoaderOptions) -> None:
    """Refuse batches of the largest image size that the delivery device's memory cannot hold (memory_fit.py):
    an eval loader pads its last batch to `batch_size` rows, so a huge batch size is allocated even on a small
    split."""
    import torch

    from fastdata.images.device_aug import TORCH_DTYPES

    side = max([opts.image_size, *(size for _, size in opts.image_sizes)])
    batch = opts.batch_size * 3 * side * side * TORCH_DTYPES[opts.dtype].itemsize
    check_batch_memory(batch, opts.prefetch + 1, torch.device(opts.device),
                       what=f"{opts.batch_size} {opts.dtype} images of {side}x{side}",
                       lower="batch_size (or image_size, or prefetch)")


def warn_if_upsampled(view: DatasetView | MixedView, opts: ImageLoaderOptions) -> None:
    """Log a warning when `image_size` asks for more pixels than the conversion kept. Shards converted with
    `--short-side S` hold images whose shorter side is at most S; a train crop to `image_size` > S, or an eval
    resize of the shorter side to `image_size / 0.875` > S, then upsamples (blurs) the images, silently."""
    need = opts.image_size if opts.train else opts.resize_short
    for member in view.views:
        side = member.manifest.preprocessing.get("short_side")
        if isinstance(side, int) and not isinstance(side, bool) and 0 < side < need:
            log.warning("%s was converted with --short-side %d; image_size=%d (%s) needs a shorter side of %d, so "
                        "its images are upsampled (blurred): convert again with --short-side %d (or 0 to keep the "
                        "original sizes)", member.root, side, opts.image_size, "train" if opts.train else
                        "eval: resized to image_size / 0.875, then centre-cropped", need, need)
