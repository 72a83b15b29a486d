"""The text members of an image-text sample, read and checked by one rule wherever they are read: the loader,
`fastdata index` (adopted img2dataset shards) and `verify`. A sample that one of them refuses is refused by all,
so a dataset that indexes and verifies clean never stops a training run at a caption.

A caption member (`txt`) holds one caption per line in UTF-8; blank lines are not captions, and a member with
none is refused. An ids member (`ids.npy`, converted with a tokenizer) holds an integer array [captions, length],
`fill` after each caption's end, every other id within the tokenizer's vocabulary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fastdata.npy import load_npy
from fastdata.text.tokenizer import outside_vocabulary

if TYPE_CHECKING:
    from fastdata.manifest import Manifest

MAX_CAPTION_BYTES = 1 << 20  # `fastdata index` and `verify` read at most this much of a caption member


def caption_lines(data: bytes) -> tuple[list[str], str | None]:
    """(the captions of a caption member, None) or ([], why it holds none)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [], f"its caption is not UTF-8 text ({exc})"
    lines = [c for c in text.splitlines() if c.strip()]
    return lines, (None if lines else "its caption is empty")


def caption_ids(data: bytes, captions: int, *, fill: int, vocab_size: int) -> tuple[np.ndarray | None, str | None]:
    """(the ids array of a sample with `captions` captions, None) or (None, why it cannot be used)."""
    try:
        arr = load_npy(data)
    except ValueError as exc:
        return None, f"its token ids are not a readable .npy ({exc})"
    if arr.ndim != 2 or arr.dtype.kind not in "iu" or arr.shape[0] < captions:
        return None, (f"token ids of shape {arr.shape} and dtype {arr.dtype} do not match its captions ({captions}; "
                      "an int array [captions, length])")
    bad = outside_vocabulary(arr[arr != fill], vocab_size)
    if bad is not None:  # it would index past the model's embedding table (or overflow int64)
        return None, f"token id {bad} lies outside the tokenizer's vocabulary (0..{vocab_size - 1})"
    return arr, None


def ids_rule(manifest: Manifest) -> tuple[int, int]:
    """(fill, vocabulary size) for a manifest's stored ids: the tokenizer's size, else ids that fit an int64."""
    fill = manifest.extra.get("ids_fill")  # checked when the manifest was read: an int64, or absent (null)
    return (-1 if fill is None else fill), manifest.vocab_size or 2**63
