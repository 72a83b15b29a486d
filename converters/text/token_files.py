"""Token shards as llm.c and modded-nanogpt write them (`fineweb_train_000001.bin`): a header of 256 little-endian
int32 (a magic number, a version, the number of tokens), then the tokens, uint16 (GPT-2's, magic 20240520, version
1) or uint32 (Llama 3's, magic 20240801, version 7). Documents lie one after the other, each starting with the
tokenizer's document token (GPT-2's `<|endoftext|>`, Llama 3's `<|begin_of_text|>`); a shard cut inside a document
starts with the rest of it.

Each document becomes a `TokenSpan`: where its tokens lie in the file. Nothing is copied at discovery; the worker
reads the span (tokenize.py) and checks it against the tokenizer's vocabulary, as for `--ids-field`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converters.text.ids import ID_BYTES
from converters.text.records import Reject, too_large

HEADER_INTS = 256
HEADER_BYTES = HEADER_INTS * 4
FORMATS = {(20240520, 1): "<u2", (20240801, 7): "<u4"}  # (magic, version) -> token dtype
EVAL_MAGIC = 20240522  # llm.c's multiple-choice eval files (HellaSwag, MMLU): examples, not a token stream


@dataclass(frozen=True, slots=True)
class TokenSpan:
    """`count` tokens of dtype `dtype` at byte `offset` of the file at `path`: one document."""

    path: str
    offset: int
    count: int
    dtype: str

    def ids(self) -> np.ndarray:
        """The document's ids as int64; OSError when the file no longer holds them."""
        ids = np.fromfile(self.path, dtype=self.dtype, count=self.count, offset=self.offset)
        if len(ids) != self.count:
            raise OSError(f"{self.path} holds fewer tokens than when it was read ({len(ids)} of {self.count} at byte "
                          f"{self.offset})")
        return ids.astype(np.int64)


def _header(path: Path) -> tuple[str, int] | Reject:
    """(token dtype, token count) of the token shard at `path`, or why it is none."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        data = f.read(HEADER_BYTES)
    if len(data) < HEADER_BYTES:
        return Reject(f"not an llm.c token shard: {size} bytes, shorter than its header ({HEADER_BYTES})")
    magic, version, count = (int(v) for v in np.frombuffer(data, dtype="<i4")[:3])
    if magic == EVAL_MAGIC:
        return Reject("an llm.c eval file (multiple-choice examples), not a token shard")
    dtype = FORMATS.get((magic, version))
    if dtype is None:
        return Reject(f"not an llm.c token shard: magic {magic}, version {version} (known: 20240520 version 1, "
                      "20240801 version 7)")
    expected = HEADER_BYTES + count * np.dtype(dtype).itemsize
    if count < 0 or size != expected:
        return Reject(f"truncated or damaged token shard: its header says {count} tokens ({expected} bytes), the "
                      f"file has {size} bytes")
    return dtype, count


def token_documents(path: Path, *, delimiter: int | None, cap: int) -> Iterator[tuple[str, TokenSpan | Reject]]:
    """(where, span or rejection) for each document of the token shard at `path`, `where` being `#N`: a document
    begins at each `delimiter` token (None: the file is one document). A document over `cap` bytes at ID_BYTES a
    token is rejected."""
    head = _header(path)
    if isinstance(head, Reject):
        yield "", head
        return
    dtype, count = head
    if count == 0:
        yield "", Reject("empty token shard (0 tokens)")
        return
    tokens = np.memmap(path, dtype=dtype, mode="r", offset=HEADER_BYTES, shape=(count,))
    starts = [] if delimiter is None or delimiter > np.iinfo(dtype).max else np.flatnonzero(tokens == delimiter)
    bounds = np.unique(np.concatenate([[0], starts, [count]]).astype(np.int64))
    itemsize = np.dtype(dtype).itemsize
    for n, (start, end) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        if (end - start) * ID_BYTES > cap:
            yield f"#{n}", too_large(cap)
        else:
            yield f"#{n}", TokenSpan(str(path), HEADER_BYTES + start * itemsize, end - start, dtype)
    del tokens
