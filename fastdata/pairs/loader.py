"""`pair_loader(source, ...)`: `(images, text)` batches of an image_text dataset.

The images come from the image backends unchanged (same plan, crops, ranks, resume and `on_error`); the
text of the very samples in each batch is built beside them in the prefetch stage (`captions.py`), so a
pair can never come apart: shuffling, rank splitting, resume and skipping move whole samples.
"""

from __future__ import annotations

from typing import Any

from fastdata.dataset import DatasetView, RemoteOptions, open_dataset
from fastdata.errors import ManifestError
from fastdata.images.loader import Loader, build_options, make_backend
from fastdata.images.options import ImageLoaderOptions
from fastdata.mixing import MixedView
from fastdata.pairs.captions import CaptionBatcher, CaptionOptions
from fastdata.sources import Spec


class PairLoader(Loader):
    """Iterable of `(images, text)`: images as the image loader yields them; `text` a dict with `input_ids`
    and `attention_mask` (int64 [B, L]) and, when asked or when nothing is tokenized, `captions`."""

    def __init__(self, view: DatasetView, options: ImageLoaderOptions, backend: Any, text: CaptionBatcher) -> None:
        super().__init__(view, options, backend)
        self._text = text

    def _backend_of(self, options: ImageLoaderOptions) -> Any:
        backend = super()._backend_of(options)
        backend.targets = self._text  # the text of each batch's samples, as the first backend's
        return backend

    @property
    def pad_id(self) -> int:
        """The id padding positions of `input_ids` hold (their `attention_mask` is 0)."""
        return self._text.pad_id

    @property
    def tokenized(self) -> bool:
        """Whether batches carry token ids (stored in the shards, or from `tokenizer=`)."""
        return self._text.tokenized

    def __repr__(self) -> str:
        return "Pair" + super().__repr__()


def pair_loader(source: Spec | DatasetView, /, *, split: str | None = None, tokenizer: str | None = None,
                max_length: int | None = None, return_captions: bool = False, **kwargs: Any) -> PairLoader:
    """A `PairLoader` over the image_text dataset at `source`. Image options are the image loader's
    (batch_size, train, image_size, backend, device, seed, rank, world_size, on_error, ...); text options:
    `tokenizer` (tokenizer.json; default: the ids stored at conversion), `max_length` (pad and cut to it;
    default: each batch's longest, rounded up to 8), `return_captions` (add the chosen strings)."""
    remote = RemoteOptions.pop(kwargs)
    text = CaptionOptions(tokenizer=tokenizer, max_length=max_length, return_captions=return_captions)
    opts = build_options(**kwargs)
    view = source if isinstance(source, DatasetView | MixedView) else open_dataset(source, split=split, remote=remote)
    if view.manifest.kind != "image_text":
        raise ManifestError(f"{view.root} holds a dataset of kind {view.manifest.kind!r}; pair_loader reads kind "
                            "'image_text' (use fastdata.loader() to pick the loader by kind)")
    backend = make_backend(view, opts)
    batcher = CaptionBatcher(view.manifest, text, train=opts.train, seed=opts.seed, device=backend._device)
    backend.targets = batcher
    return PairLoader(view, opts, backend, batcher)
