"""Loading a Hugging Face `tokenizers` file the same way at conversion and at load time: no padding, truncated
only to `max_length`, and the special-token ids found by their usual names; and the check that stored ids are ids
the tokenizer can have made (within its vocabulary)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from fastdata.errors import FastdataError, require

PAD_TOKENS = ("[PAD]", "<pad>", "<|pad|>", "<|padding|>")
BOS_TOKENS = ("[CLS]", "<s>", "<bos>", "<|begin_of_text|>", "<|startoftext|>", "<|endoftext|>")
EOS_TOKENS = ("[SEP]", "</s>", "<eos>", "<|end_of_text|>", "<|endoftext|>")


def build_tokenizer(text: str, *, where: str, max_length: int | None = None,
                    error: type[Exception] = FastdataError) -> Any:
    """A `tokenizers.Tokenizer` from JSON text, without padding, truncated only to `max_length`."""
    tokenizers = require("tokenizers", "text")
    try:
        tok = tokenizers.Tokenizer.from_str(text)
    except Exception as exc:  # tokenizers raises a bare Exception for malformed files
        raise error(f"{where} is not a valid Hugging Face tokenizer.json: {exc}") from exc
    tok.no_padding()
    tok.no_truncation()
    if max_length is not None:
        tok.enable_truncation(max_length, stride=0, strategy="longest_first", direction="right")
    return tok


def first_id(tok: Any, candidates: tuple[str, ...]) -> int | None:
    """The id of the first of `candidates` the tokenizer knows, else None."""
    for token in candidates:
        found = tok.token_to_id(token)
        if found is not None:
            return int(found)
    return None


def pad_id(tok: Any, text: str) -> int | None:
    """The padding id the file declares, else that of a usual padding token, else None."""
    padding = (json.loads(text).get("padding") or {}) if text.lstrip().startswith("{") else {}
    return padding.get("pad_id") if isinstance(padding.get("pad_id"), int) else first_id(tok, PAD_TOKENS)


def load_tokenizer(path: str | Path, *, max_length: int | None = None) -> tuple[Any, str, int | None]:
    """(tokenizer, sha256 of the file's text, padding id) of a tokenizer.json (or a folder holding one)."""
    p = Path(path)
    try:
        if p.is_dir() and (p / "tokenizer.json").is_file():
            p = p / "tokenizer.json"
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FastdataError(f"cannot read tokenizer file {path}: {exc}") from exc
    tok = build_tokenizer(text, where=str(path), max_length=max_length)
    return tok, hashlib.sha256(text.encode("utf-8")).hexdigest(), pad_id(tok, text)


def outside_vocabulary(ids: np.ndarray, vocab_size: int | None) -> int | None:
    """The first of `ids` (integers) outside 0..vocab_size-1, None when all lie inside or no size is known.

    One reduction in the common case: viewed as unsigned, a negative id is larger than any vocabulary."""
    if vocab_size is None or not ids.size:
        return None
    if not ids.dtype.isnative:  # a forged .npy may be big-endian
        ids = ids.astype(ids.dtype.newbyteorder("="))
    if int(ids.view(f"u{ids.dtype.itemsize}").max()) < vocab_size:
        return None
    return int(ids.flat[np.flatnonzero((ids < 0) | (ids >= vocab_size))[0]])
