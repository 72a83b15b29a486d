"""Tokenization with the Hugging Face `tokenizers` library: load and describe a tokenizer.json,
and the picklable processor that turns documents into token-id rows, one batch per worker chunk."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from converters.sample import Rejection, Sample, WorkItem
from converters.text.ids import spilled_ids
from converters.text.options import TextOptions
from converters.text.token_files import TokenSpan
from fastdata.errors import ConvertError
from fastdata.text.tokenizer import BOS_TOKENS, EOS_TOKENS, first_id, pad_id
from fastdata.text.tokenizer import build_tokenizer as _build

BATCH = 256  # documents tokenized per `encode_batch` call (one worker task)
UINT16_VOCAB = 2**16  # ids are stored as uint16 when every id fits, else int32


def _tokenizer_file(path: str) -> Path:
    p = Path(path)
    if p.is_dir() and (p / "tokenizer.json").is_file():  # a Hugging Face model folder
        p = p / "tokenizer.json"
    if not p.is_file():
        raise ConvertError(f"tokenizer file {path} does not exist; pass --tokenizer PATH/tokenizer.json "
                           "(a Hugging Face `tokenizers` file, e.g. saved with tokenizer.save())")
    return p


def read_tokenizer_json(path: str) -> str:
    """The tokenizer file's text, or ConvertError saying what is wrong with it."""
    p = _tokenizer_file(path)
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConvertError(f"cannot read tokenizer file {path}: {exc}") from exc


def build_tokenizer(text: str, *, where: str, max_length: int | None = None) -> Any:
    """A `tokenizers.Tokenizer` from JSON text, without padding, truncated only to `max_length`."""
    return _build(text, where=where, max_length=max_length, error=ConvertError)


def tokenizer_info(path: str) -> dict[str, Any]:
    """What the manifest records about the tokenizer: file hash, vocabulary size, special ids.
    Built once per version (size, mtime) of the file: the text kind asks at discovery, planning,
    layout and description, and a large tokenizer.json takes a while to load."""
    st = _tokenizer_file(path).stat()
    return dict(_tokenizer_info(path, st.st_size, st.st_mtime_ns))


def tokenizer_identity(path: str | None) -> list[list[object]]:
    """The tokenizer's part of a conversion's source identity: its file's sha256, so that a destination
    converted with another tokenizer.json of the same name is not taken for this one. Empty without one.
    Fails (ConvertError) on a bad tokenizer: the kinds call it at discovery, before anything is written."""
    return [["tokenizer", tokenizer_info(path)["sha256"]]] if path else []


@functools.lru_cache(maxsize=8)
def _tokenizer_info(path: str, size: int, mtime_ns: int) -> dict[str, Any]:
    text = read_tokenizer_json(path)
    tok = build_tokenizer(text, where=path)
    vocab = tok.get_vocab_size(with_added_tokens=True)
    return {
        "file": Path(path).name,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "vocab_size": vocab,
        "pad_id": pad_id(tok, text),
        "bos_id": first_id(tok, BOS_TOKENS),
        "eos_id": first_id(tok, EOS_TOKENS),
        "ids_dtype": "uint16" if vocab <= UINT16_VOCAB else "int32",
    }


def length_bucket(n: int) -> str:
    """Histogram bucket of a sequence length: '1-8', '9-16', '17-32', ... (powers of two)."""
    hi = 8
    while hi < n:
        hi *= 2
    return f"{1 if hi == 8 else hi // 2 + 1}-{hi}"


_CACHE: dict[tuple[str, str, int | None], Any] = {}  # per process: (path, sha256, max_length) -> Tokenizer


def cached_tokenizer(path: str, sha256: str, max_length: int | None) -> Any:
    """The tokenizer of `path`, built once per process (worker) and checked against the planned hash."""
    key = (path, sha256, max_length)
    if key not in _CACHE:
        text = read_tokenizer_json(path)
        found = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if found != sha256:
            raise ConvertError(f"tokenizer file {path} changed during the conversion (sha256 {found[:12]}, "
                               f"planned {sha256[:12]}); restore it or start over in an empty directory")
        _CACHE[key] = build_tokenizer(text, where=path, max_length=max_length)
    return _CACHE[key]


class TextProcessor:
    """Documents -> token-id rows. Picklable and small (sent with every task): each worker process
    builds the tokenizer once from the file, whose sha256 was fixed when the run was planned."""

    chunk_size = BATCH

    def __init__(self, options: TextOptions, *, sha256: str, with_labels: bool) -> None:
        self.options = options
        self.sha256 = sha256
        self.with_labels = with_labels

    @property
    def tokenizer(self) -> Any:
        return cached_tokenizer(self.options.tokenizer, self.sha256, self.options.max_length)

    def __call__(self, item: WorkItem) -> Sample | Rejection | list[Sample]:
        return self.process_batch([item])[0]

    def process_batch(self, items: list[WorkItem]) -> list[Sample | Rejection | list[Sample]]:
        given = [self.options.ids_field is not None or isinstance(it.payload, TokenSpan) for it in items]
        texts = [it.payload if isinstance(it.payload, str) else it.payload.read()  # SpillRef
                 for it, ids in zip(items, given) if not ids]
        encodings = iter(self.tokenizer.encode_batch(texts, add_special_tokens=True) if texts else [])
        return [self._given_ids(it) if ids else self._encoded(it, next(encodings)) for it, ids in zip(items, given)]

    def _encoded(self, item: WorkItem, enc: Any) -> Sample | Rejection | list[Sample]:
        if all(enc.special_tokens_mask):
            return Rejection(item.split, item.rel, "empty document: no tokens besides the tokenizer's special tokens")
        if self.options.overflow == "split":
            return self._samples(item, [w.ids for w in (enc, *enc.overflowing)], dropped=0)
        dropped = sum(len(o.ids) - sum(o.special_tokens_mask) for o in enc.overflowing)
        return self._samples(item, [enc.ids], dropped=dropped)

    def _given_ids(self, item: WorkItem) -> Sample | Rejection | list[Sample]:
        """A row of `--ids-field` or a token shard's document: its ids as they are, cut into windows of `max_length`
        (no special token added)."""
        payload = item.payload  # a token shard's span, read in place, or a SpillRef of the row's ids
        ids = payload.ids() if isinstance(payload, TokenSpan) else spilled_ids(payload.read_bytes())
        vocab = self.tokenizer.get_vocab_size(with_added_tokens=True)
        if int(ids.max()) >= vocab:
            return Rejection(item.split, item.rel, f"token id {int(ids.max())} is outside the tokenizer's vocabulary "
                                                   f"(ids 0..{vocab - 1}): the ids were made by another tokenizer")
        size = self.options.max_length or len(ids)
        if self.options.overflow == "split":
            return self._samples(item, [ids[i:i + size].tolist() for i in range(0, len(ids), size)], dropped=0)
        return self._samples(item, [ids[:size].tolist()], dropped=max(len(ids) - size, 0))

    def _samples(self, item: WorkItem, windows: list[list[int]], *, dropped: int) -> Sample | list[Sample]:
        """One row of token ids a window (its key `{key}-{w}` past the first); `dropped` tokens truncated away."""
        samples = []
        for w, ids in enumerate(windows):
            key = item.key if w == 0 else f"{item.key}-{w}"
            row: dict[str, Any] = {"key": key, "input_ids": ids, "length": len(ids), "source": item.rel}
            if self.with_labels:
                row["label"] = item.label
            stats: dict[str, Any] = {"sequences": 1, "tokens": len(ids),
                                     "length_histogram": {length_bucket(len(ids)): 1}}
            if w == 0:
                stats.update(documents=1, truncated_documents=int(dropped > 0), truncated_tokens=dropped,
                             split_documents=int(len(windows) > 1))
            samples.append(Sample(key=key, label=item.label, members={},
                                  row=row, stats=stats))
        return samples[0] if len(samples) == 1 else samples
