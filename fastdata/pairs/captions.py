"""The text half of an image-text batch, built in the loader's prefetch stage (off the training step).

Each sample holds one or more captions (its `txt` member, one per line) and, when converted with a tokenizer,
their token ids (`ids.npy`). Train picks one caption a sample per epoch with a generator seeded from
(seed, epoch, sample index): the choice depends on nothing else, so resume and rank splitting stay exact.
Eval takes the first caption. Token ids come from the shards, or from `tokenizer` in one `encode_batch` per
batch when the shards hold none (adopted img2dataset shards) or were tokenized with another tokenizer.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fastdata.errors import ShardError
from fastdata.images.draws import CAPTION_STREAM, integer_below, uniforms
from fastdata.images.reader import RawSample
from fastdata.manifest import Manifest
from fastdata.pairs.members import caption_ids, caption_lines, ids_rule
from fastdata.text.tokenizer import load_tokenizer

log = logging.getLogger(__name__)

PAD_TO = 8  # without max_length, a batch's text is padded to its longest caption rounded up to this
MAX_LENGTH = 1 << 24  # tokens a caption row may be padded to, as a packed block of the sequence loader


@dataclass(frozen=True)
class CaptionOptions:
    """How captions become tensors: `tokenizer` (a tokenizer.json; default: the ids stored in the shards),
    `max_length` (pad and cut every row to this; default: the batch's longest rounded up to 8),
    `return_captions` (add the chosen strings under "captions")."""

    tokenizer: str | None = None
    max_length: int | None = None
    return_captions: bool = False

    def __post_init__(self) -> None:
        if self.tokenizer is not None and not isinstance(self.tokenizer, str | os.PathLike):
            raise ValueError(f"tokenizer={self.tokenizer!r} is not allowed; it must be None (the ids stored in the "
                             "shards) or the path of a tokenizer.json")
        if self.max_length is not None and (not isinstance(self.max_length, int) or isinstance(self.max_length, bool)
                                            or not 1 <= self.max_length <= MAX_LENGTH):
            raise ValueError(f"max_length={self.max_length!r} is not allowed; it must be None or an integer from 1 to "
                             f"{MAX_LENGTH:,} (a batch holds max_length tokens a row)")
        if not isinstance(self.return_captions, bool):
            raise ValueError(f"return_captions={self.return_captions!r} is not allowed; it must be True or False")


def choose(num_captions: int, *, train: bool, seed: int, epoch: int, index: int) -> int:
    """Which caption of a sample an epoch uses: a seeded draw in train, the first in eval."""
    if not train or num_captions == 1:
        return 0
    u = uniforms(seed, epoch, np.array([index]), count=1, stream=CAPTION_STREAM)
    return integer_below(float(u[0, 0]), num_captions)


def _captions(raw: RawSample) -> list[str]:
    lines, problem = caption_lines(bytes(raw.extra[0]))
    if problem is not None:
        raise ShardError(f"sample {raw.key} in {raw.shard}: {problem}")
    return lines


def _stored_ids(raw: RawSample, captions: int, choice: int, fill: int, vocab_size: int) -> list[int]:
    """The ids of caption `choice` of a sample with `captions` captions (members.py checks them all)."""
    arr, problem = caption_ids(bytes(raw.extra[1]), captions, fill=fill, vocab_size=vocab_size)
    if arr is None:
        raise ShardError(f"sample {raw.key} in {raw.shard}: {problem}")
    row = arr[choice]
    return row[row != fill].tolist()


def cut_ids(row: list[int], length: int | None, eos_id: int | None) -> list[int]:
    """Stored ids cut to `length` as the tokenizer's own truncation cuts a caption: words go from the end, the end
    token it appends (`eos_id`, [SEP] or <|endoftext|>) stays last, so stored ids and ids tokenized at load agree."""
    if length is None or len(row) <= length:
        return row
    if eos_id is not None and length >= 2 and row[-1] == eos_id:
        return [*row[:length - 1], eos_id]
    return row[:length]


class CaptionBatcher:
    """`batcher(raws, epoch) -> dict` for one batch: `input_ids` and `attention_mask` (int64 [B, L]) on the
    loader's device, `captions` (list of str) when asked or when there are no ids; `None` rows (eval padding)
    are all padding with an empty caption."""

    def __init__(self, manifest: Manifest, options: CaptionOptions, *, train: bool, seed: int,
                 device: torch.device) -> None:
        self.options, self.train, self.seed, self.device = options, train, seed, device
        info = manifest.tokenizer
        self._fill, self._vocab = ids_rule(manifest)
        self._tokenizer = None
        self._stored = manifest.ids_member is not None
        self.pad_id = int(info.get("pad_id") or 0)
        self._eos = info.get("eos_id")  # the stored ids' end token, kept when max_length cuts them
        if options.tokenizer is not None:
            tok, sha, pad = load_tokenizer(options.tokenizer, max_length=options.max_length)
            if not (self._stored and sha == info.get("sha256")):  # else the stored ids are this tokenizer's
                if self._stored:
                    log.info("the shards hold ids of another tokenizer (sha256 %s); tokenizing with %s instead",
                             str(info.get("sha256"))[:12], options.tokenizer)
                self._tokenizer, self._stored, self.pad_id = tok, False, int(pad or 0)

    @property
    def tokenized(self) -> bool:
        """Whether batches carry token ids (stored ones, or from `tokenizer`)."""
        return self._stored or self._tokenizer is not None

    def __call__(self, raws: list[RawSample | None], epoch: int) -> dict[str, Any]:
        texts, rows = [], []
        for raw in raws:
            if raw is None:
                texts.append("")
                rows.append([])
                continue
            captions = _captions(raw)
            c = choose(len(captions), train=self.train, seed=self.seed, epoch=epoch,
                       index=raw.index if raw.drawn < 0 else raw.drawn)  # each repeat in an epoch its own choice
            texts.append(captions[c])
            rows.append(cut_ids(_stored_ids(raw, len(captions), c, self._fill, self._vocab), self.options.max_length,
                                self._eos) if self._stored else [])
        out: dict[str, Any] = {}
        if self._tokenizer is not None:
            real = [i for i, raw in enumerate(raws) if raw is not None]
            for i, enc in zip(real, self._tokenizer.encode_batch([texts[i] for i in real], add_special_tokens=True)):
                rows[i] = enc.ids
        if self.tokenized:
            out["input_ids"], out["attention_mask"] = self._pad(rows)
        if self.options.return_captions or not self.tokenized:
            out["captions"] = texts
        return out

    def _pad(self, rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        length = self.options.max_length
        if length is None:
            longest = max((len(r) for r in rows), default=0)
            length = max(PAD_TO, -(-longest // PAD_TO) * PAD_TO)
        ids = np.full((len(rows), length), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int64)
        for i, r in enumerate(rows):
            n = min(len(r), length)
            ids[i, :n] = r[:n]
            mask[i, :n] = 1
        return torch.from_numpy(ids).to(self.device), torch.from_numpy(mask).to(self.device)
