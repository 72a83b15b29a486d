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
    cached_tokenizer,
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


@pytest.mark.parametrize("max_length, overflow, lengths, truncated, dropped, split", [
    (29, "truncate", [29], 0, 0, 0),  # fits: 27 words and [CLS] [SEP]
    (28, "truncate", [28], 1, 1, 0),  # one token over
    (16, "split", [16, 15], 0, 0, 1),  # two windows
    (29, "split", [29], 0, 0, 0)])
def test_the_statistics_at_their_edges(max_length, overflow, lengths, truncated, dropped, split):
    """One token dropped is a truncated document; two windows are a split one; a document that fits is neither."""
    item = WorkItem("train", "a.txt", "a.txt", label=0, position=0, payload=LONG)
    processor = _processor(max_length=max_length, overflow=overflow)
    out = processor.process_batch([item])[0]
    samples = out if isinstance(out, list) else [out]
    assert [s.row["length"] for s in samples] == lengths
    assert {k: samples[0].stats[k] for k in ("truncated_documents", "truncated_tokens", "split_documents")} == {
        "truncated_documents": truncated, "truncated_tokens": dropped, "split_documents": split}
    assert processor(item) == out  # one item alone: what its batch gave it


def test_a_document_of_special_tokens_only_is_rejected_saying_so():
    item = WorkItem("train", "a.txt", "a.txt", label=0, position=0, payload=" ")
    rejected = _processor().process_batch([item])[0]
    assert (rejected.split, rejected.source, rejected.reason) == (
        "train", "a.txt", "empty document: no tokens besides the tokenizer's special tokens")


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
    with pytest.raises(ConvertError) as err:
        tokenizer_identity(str(tmp_path / "missing.json"))
    assert str(err.value) == (f"tokenizer file {tmp_path / 'missing.json'} does not exist; pass --tokenizer "
                              "PATH/tokenizer.json (a Hugging Face `tokenizers` file, e.g. saved with "
                              "tokenizer.save())")


def test_a_tokenizer_file_changed_after_planning_stops_the_worker_saying_so(tmp_path):
    """Workers build the tokenizer from the file the run planned with: one edited since is refused, not used."""
    path = tmp_path / "tok.json"
    shutil.copy(TOKENIZER, path)
    planned = hashlib.sha256(path.read_bytes()).hexdigest()
    assert cached_tokenizer(str(path), planned, 16) is cached_tokenizer(str(path), planned, 16)  # once per process
    path.write_text(path.read_text() + "\n")
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(ConvertError) as err:
        cached_tokenizer(str(path), planned, 12)
    assert str(err.value) == (f"tokenizer file {path} changed during the conversion (sha256 {found[:12]}, planned "
                              f"{planned[:12]}); restore it or start over in an empty directory")
