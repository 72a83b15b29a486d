"""Per-pair work: the image exactly as the images kind prepares it (pre-resized baseline JPEG), its captions
as text (`txt`: one per line) and, with a tokenizer, as token ids (`ids.npy`: int32 [captions, longest],
-1 after each caption's end)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from converters.image_text.discover import Captions
from converters.images.encode import ImageOptions, process_image
from converters.sample import Rejection, Sample, WorkItem
from converters.text.tokenize import cached_tokenizer
from fastdata.manifest import check_split_name

IDS_FILL = -1  # ids.npy: the value after the end of a shorter caption


@dataclass(frozen=True)
class ImageTextOptions:
    captions: str | None = None  # captions file; None: same-stem .txt sidecars
    tokenizer: str | None = None  # tokenizer.json: also store token ids
    max_length: int | None = None  # truncate ids to this many tokens (special tokens included)
    short_side: int = 256
    quality: int = 90
    max_pixels: int = ImageOptions.max_pixels
    split: str = "train"
    keep_metadata: bool = False
    image_field: str | None = None  # a table source's image column (tables.py; default: the one there is)
    caption_field: str | None = None  # a table source's caption column (default: caption, text, ...)

    def __post_init__(self) -> None:
        self.image_options()  # validates the image fields
        check_split_name(self.split)
        if self.max_length is not None and (not isinstance(self.max_length, int) or self.max_length < 2):
            raise ValueError(f"--max-length must be an integer >= 2, got {self.max_length!r}")
        if self.max_length is not None and self.tokenizer is None:
            raise ValueError("--max-length truncates token ids: it needs --tokenizer")

    def image_options(self) -> ImageOptions:
        return ImageOptions(short_side=self.short_side, quality=self.quality, max_pixels=self.max_pixels,
                            split=self.split, unlabeled=True, keep_metadata=self.keep_metadata)


def ids_array(rows: list[list[int]]) -> np.ndarray:
    """Token-id rows as one int32 [n, longest] array, IDS_FILL after each row's end."""
    out = np.full((len(rows), max(len(r) for r in rows)), IDS_FILL, dtype=np.int32)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


class PairProcessor:
    """One pair -> a Sample with members jpg, txt, json (and ids.npy with a tokenizer). Picklable and small:
    a worker builds the tokenizer once from the file whose sha256 was fixed when the run was planned."""

    def __init__(self, options: ImageTextOptions, *, sha256: str | None) -> None:
        self.options, self.sha256 = options, sha256
        self._image = options.image_options()

    def __call__(self, item: WorkItem) -> Sample | Rejection:
        captions = item.payload.texts if isinstance(item.payload, Captions) else ()
        if not captions:
            return Rejection(item.split, item.rel, "no caption")
        image = process_image(replace(item, label=None, payload=item.payload.image), opts=self._image)
        if isinstance(image, Rejection):
            return image
        meta = json.loads(image.members["json"])
        meta.pop("label", None)
        meta["captions"] = len(captions)
        stats: dict[str, Any] = {**image.stats, "captions": len(captions),
                                 "captions_per_image": {str(len(captions)): 1}}
        members = {"jpg": image.members["jpg"], "txt": "\n".join(captions).encode("utf-8")}
        if self.options.tokenizer is not None:
            tok = cached_tokenizer(self.options.tokenizer, self.sha256 or "", self.options.max_length)
            encodings = tok.encode_batch(list(captions), add_special_tokens=True)
            rows = [enc.ids for enc in encodings]
            truncated = sum(1 for enc in encodings if enc.overflowing)
            members["ids.npy"] = npy_bytes(ids_array(rows))
            meta["tokens"] = [len(r) for r in rows]
            stats.update(tokens=sum(len(r) for r in rows), truncated_captions=truncated)
        members["json"] = json.dumps(meta, sort_keys=True).encode()
        return Sample(key=image.key, label=None, members=members, stats=stats)
