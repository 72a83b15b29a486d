"""The tokenization step on its own, in this process: truncation settings, overflow windows and their keys
and statistics, the length histogram's buckets, and the tokenizer facts cached per version of the file."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("tokenizers")

from conftest_text import TOKENIZER  # noqa: E402

from converters.sample import WorkItem  # noqa: E402
from converters.text.options import TextOptions  # noqa: E402
from converters.text.tokenize import (  # noqa: E402
    TextProcessor,
    build_tokenizer,
    length_bucket,
    tokenizer_identity,
    tokenizer_info,
)
from fastdata.errors import ConvertError, MissingDependencyError  # noqa: E402

LONG = "the quick brown fox jumps over the lazy dog " * 3  # 27 words, 27 BERT tokens + [CLS] and [SEP]


def _processor(**options) -> TextProcessor:
    sha = hashlib.sha256(TOKENIZER.read_bytes()).hexdigest()
    return TextProcessor(TextOptions(tokenizer=str(TOKENIZER), **options), sha256=sha, with_labels=True)


def test_truncation_is_right_sided_longest_first_without_stride():
    tok = build_tokenizer(TOKENIZER.read_text(), where="t", max_length=6)
    assert tok.truncation == {"max_length": 6, "stride": 0, "strategy": "longest_first", "direction": "right"}
    enc = tok.encode(LONG)
    assert enc.tokens == ["[CLS]", "the", "quick", "brown", "fox", "[SEP]"] and enc.overflowing
    assert build_tokenizer(TOKENIZER.read_text(), where="t").truncation is None


def test_missing_tokenizers_names_the_text_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'fastdata\[text\]'"):
        build_tokenizer("{}", where="t")


def test_split_windows_keys_labels_and_statistics():
    item = WorkItem("train", "a.txt", "a.txt", label=2, position=5, payload=LONG)
    samples = _processor(max_length=12, overflow="split").process_batch([item])[0]
    assert [s.key for s in samples] == ["00000005", "00000005-1", "00000005-2"]
    assert [s.row["length"] for s in samples] == [12, 12, 9]
    assert all(s.row["input_ids"][0] == 101 and s.row["input_ids"][-1] == 102 for s in samples)  # specials added
    assert all(s.label == 2 and s.row["label"] == 2 and s.row["source"] == "a.txt" for s in samples)
    assert samples[0].stats == {"sequences": 1, "tokens": 12, "length_histogram": {"9-16": 1}, "documents": 1,
                                "truncated_documents": 0, "truncated_tokens": 0, "split_documents": 1}
    assert samples[2].stats == {"sequences": 1, "tokens": 9, "length_histogram": {"9-16": 1}}


def test_truncated_document_is_one_sample_counting_the_dropped_tokens():
    item = WorkItem("train", "a.txt", "a.txt", label=0, position=0, payload=LONG)
    sample = _processor(max_length=12).process_batch([item])[0]
    assert sample.key == "00000000" and sample.row["length"] == 12
    assert sample.stats["truncated_documents"] == 1 and sample.stats["truncated_tokens"] == 17
    assert sample.stats["split_documents"] == 0


@pytest.mark.parametrize("n, bucket", [(1, "1-8"), (8, "1-8"), (9, "9-16"), (16, "9-16"), (17, "17-32"),
                                       (1000, "513-1024")])
def test_length_buckets_are_powers_of_two(n, bucket):
    assert length_bucket(n) == bucket


def test_tokenizer_facts_follow_the_file_when_its_size_or_its_time_changes(tmp_path):
    path = tmp_path / "tok.json"
    shutil.copy(TOKENIZER, path)
    text = path.read_text()
    first = tokenizer_info(str(path))
    stamp = path.stat().st_mtime_ns

    path.write_text(text + " ")  # another size, the same time
    os.utime(path, ns=(stamp, stamp))
    second = tokenizer_info(str(path))
    assert second["sha256"] != first["sha256"]

    path.write_text(text + "\n")  # the same size, another time
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    third = tokenizer_info(str(path))
    assert third["sha256"] not in (first["sha256"], second["sha256"])
    assert third["sha256"] == hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_the_tokenizer_identity_is_its_files_hash_and_nothing_without_one(tmp_path):
    """What the text and image_text kinds add to a destination's source identity."""
    assert tokenizer_identity(str(TOKENIZER)) == [["tokenizer", hashlib.sha256(TOKENIZER.read_bytes()).hexdigest()]]
    assert tokenizer_identity(None) == tokenizer_identity("") == []
    with pytest.raises(ConvertError, match="tokenizer file .*missing.json does not exist"):
        tokenizer_identity(str(tmp_path / "missing.json"))
