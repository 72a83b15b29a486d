"""llm.c / modded-nanogpt token shards (`fineweb_train_000001.bin`: a 256-int32 header, then uint16 or uint32
tokens, each document starting with the tokenizer's document token) convert into sequences, one a document, read
in place; every file or document that cannot be is a recorded rejection. Before, `.bin` was an unsupported file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest_text import FORTUNES, bert, convert_text, fortune_records

import fastdata
from converters.text.token_files import HEADER_BYTES, TokenSpan

CLS = 101  # BERT's [CLS]: the document token the tests' shards use, as GPT-2's <|endoftext|> in llm.c's


def token_shard(path: Path, tokens: list[int], *, magic: int = 20240520, version: int = 1, dtype=np.uint16,
                count: int | None = None) -> Path:
    """A token shard in llm.c's layout: 256 little-endian int32 (magic, version, token count, zeros), the tokens."""
    header = np.zeros(256, dtype="<i4")
    header[:3] = (magic, version, len(tokens) if count is None else count)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header.tobytes() + np.asarray(tokens, dtype=dtype).tobytes())
    return path


def documents(n: int) -> list[list[int]]:
    """Real fortunes as BERT ids, each after the document token."""
    return [[CLS, *e.ids[1:-1]] for e in bert().encode_batch(fortune_records(FORTUNES / "science")[:n])]


def sequences(dst: Path, split: str = "train") -> list[list[int]]:
    ld = fastdata.loader(dst, split=split, max_tokens=1 << 15, shuffle=False)
    return sorted(ids[:n].tolist() for b in ld for ids, n in zip(b["input_ids"], b["lengths"]))


def test_shards_split_by_name_and_cut_inside_a_document_give_one_sequence_a_document(tmp_path: Path):
    docs = documents(30)
    stream = [t for d in docs for t in d]
    cut = len(stream) // 2 + 3  # inside a document: the train shard starts with its rest
    token_shard(tmp_path / "src" / "fineweb_val_000000.bin", stream[:cut])
    token_shard(tmp_path / "src" / "fineweb_train_000001.bin", stream[cut:])
    m = convert_text(tmp_path / "src", tmp_path / "out", jobs=2).manifest
    assert m.rejected == ()
    starts = [i for i, t in enumerate(stream) if t == CLS]

    def pieces(lo: int, hi: int) -> list[list[int]]:
        bounds = sorted({lo, hi, *(s for s in starts if lo < s < hi)})
        return sorted(stream[a:b] for a, b in zip(bounds, bounds[1:]))

    assert sequences(tmp_path / "out", "val") == pieces(0, cut)
    assert sequences(tmp_path / "out", "train") == pieces(cut, len(stream))
    assert m.split("train").stats["tokens"] + m.split("val").stats["tokens"] == len(stream)


def test_a_llama_3_shard_of_uint32_tokens_converts(tmp_path: Path):
    docs = documents(5)
    token_shard(tmp_path / "src" / "a.bin", [t for d in docs for t in d], magic=20240801, version=7, dtype=np.uint32)
    convert_text(tmp_path / "src", tmp_path / "out")
    assert sequences(tmp_path / "out") == sorted(docs)


def test_files_and_documents_that_are_no_tokens_are_rejected_and_the_rest_kept(tmp_path: Path):
    docs = documents(3)
    cap = 8 * max(map(len, docs))  # bytes: 8 a token
    src = tmp_path / "src"
    token_shard(src / "good.bin", [t for d in docs for t in d] + [CLS, 5, 30522, 7] + [CLS] + [9] * (cap // 8))
    token_shard(src / "eval.bin", [1, 2, 3], magic=20240522)
    token_shard(src / "other.bin", [1, 2, 3], magic=12345)
    token_shard(src / "cut.bin", [CLS, 1, 2, 3], count=9)
    token_shard(src / "empty.bin", [])
    (src / "short.bin").write_bytes(b"\x01\x02")
    m = convert_text(src, tmp_path / "out", max_document_bytes=cap).manifest
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("cut.bin", f"truncated or damaged token shard: its header says 9 tokens ({HEADER_BYTES + 18} bytes), the "
                    f"file has {HEADER_BYTES + 8} bytes"),
        ("empty.bin", "empty token shard (0 tokens)"),
        ("eval.bin", "an llm.c eval file (multiple-choice examples), not a token shard"),
        ("good.bin#3", "token id 30522 is outside the tokenizer's vocabulary (ids 0..30521): the ids were made by "
                       "another tokenizer"),
        ("good.bin#4", f"document larger than --max-document-bytes ({cap} bytes)"),  # one token more than fits
        ("other.bin", "not an llm.c token shard: magic 12345, version 1 (known: 20240520 version 1, 20240801 "
                      "version 7)"),
        ("short.bin", f"not an llm.c token shard: 2 bytes, shorter than its header ({HEADER_BYTES})"),
    ]
    assert sequences(tmp_path / "out") == sorted(docs)


def test_a_token_shard_beside_text_converts_both_in_one_run(tmp_path: Path):
    docs = documents(4)
    token_shard(tmp_path / "src" / "a.bin", [t for d in docs for t in d])
    (tmp_path / "src" / "b.jsonl").write_text('{"text": "word word"}\n')
    convert_text(tmp_path / "src", tmp_path / "out")
    word = bert().encode("word word").ids  # tokenized, its special tokens added
    assert sequences(tmp_path / "out") == sorted([*docs, word])


def test_a_span_of_a_file_that_shrank_since_is_an_oserror(tmp_path: Path):
    path = token_shard(tmp_path / "a.bin", [CLS, 1, 2, 3])
    assert TokenSpan(str(path), HEADER_BYTES, 4, "<u2").ids().tolist() == [CLS, 1, 2, 3]
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(OSError, match="holds fewer tokens than when it was read"):
        TokenSpan(str(path), HEADER_BYTES, 4, "<u2").ids()


def test_a_compressed_token_shard_is_an_unsupported_file(tmp_path: Path):
    import gzip

    docs = documents(2)
    raw = token_shard(tmp_path / "a.bin", [t for d in docs for t in d]).read_bytes()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.bin.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "src" / "b.bin").write_bytes(raw)
    m = convert_text(tmp_path / "src", tmp_path / "out").manifest
    assert [(r["source"], r["reason"].split(";")[0]) for r in m.rejected] == [("a.bin.gz", "unsupported file type")]
