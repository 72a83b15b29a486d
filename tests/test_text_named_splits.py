"""A text corpus whose files name their splits (the Hub's `train-00000-of-00001.parquet` beside
`test-00000-of-00001.parquet`, `train.jsonl` beside `validation.jsonl`, PTB's `ptb.valid.txt`) converts into those
splits; before, a folder without split folders put every file into train, the test documents with the training
ones, silently."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from conftest_text import convert_text

import fastdata


def texts_of(dst: Path, split: str) -> list[int]:
    """The lengths of the sequences of `split`, sorted (each document below has its own length)."""
    ld = fastdata.loader(dst, split=split, max_tokens=1 << 14, shuffle=False)
    return sorted(n for batch in ld for n in batch["lengths"].tolist())


def words(n: int) -> str:
    return " ".join(["word"] * n)


def test_tables_named_by_split_convert_into_their_splits(tmp_path: Path):
    src = tmp_path / "imdb" / "plain_text"
    src.mkdir(parents=True)
    for split, sizes in (("train", [1, 2, 3]), ("test", [10, 11]), ("validation", [20])):
        table = pa.table({"text": [words(n) for n in sizes], "label": [n % 2 for n in sizes]})
        pq.write_table(table, src / f"{split}-00000-of-00001.parquet")
    m = convert_text(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 3, "test": 2, "val": 1}
    assert texts_of(tmp_path / "out", "test") == [12, 13]  # [CLS] + words + [SEP]
    assert texts_of(tmp_path / "out", "val") == [22]


def test_json_lines_and_line_corpora_named_by_split(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.jsonl").write_text("".join(f'{{"text": "{words(n)}"}}\n' for n in (1, 2)))
    (src / "validation.jsonl").write_text(f'{{"text": "{words(5)}"}}\n')
    m = convert_text(src, tmp_path / "jsonl").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 2, "val": 1}
    ptb = tmp_path / "ptb"
    ptb.mkdir()
    for split, sizes in (("train", [1, 2]), ("valid", [7]), ("test", [9, 4])):
        (ptb / f"ptb.{split}.txt").write_text("".join(words(n) + "\n" for n in sizes))
    m = convert_text(ptb, tmp_path / "ptb-out", per_line=True).manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 2, "val": 1, "test": 2}
    assert texts_of(tmp_path / "ptb-out", "test") == [6, 11]


def test_a_document_file_keeps_its_split_whatever_its_name_and_two_splits_in_a_name_are_rejected(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "test-plan.txt").write_text(words(3))  # one document (a whole file): its title, not a split
    (src / "notes.txt").write_text(words(4))
    (src / "train-test.jsonl").write_text(f'{{"text": "{words(2)}"}}\n')
    m = convert_text(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 2}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("train-test.jsonl", "the name names the splits test, train; rename it, or move it into a split folder")]


def test_split_and_class_folders_decide_over_a_files_name(tmp_path: Path):
    src = tmp_path / "src"
    for folder in ("train", "val"):
        (src / folder).mkdir(parents=True)
    (src / "train" / "test.jsonl").write_text(f'{{"text": "{words(1)}"}}\n')
    (src / "val" / "train.jsonl").write_text(f'{{"text": "{words(2)}"}}\n')
    m = convert_text(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 1, "val": 1}
    assert texts_of(tmp_path / "out", "val") == [4]
    classes = tmp_path / "classes"
    for name in ("neg", "pos"):
        (classes / name).mkdir(parents=True)
        (classes / name / "test.jsonl").write_text(f'{{"text": "{words(3)}"}}\n')
    m = convert_text(classes, tmp_path / "class-out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 2}


def test_a_single_file_records_file_and_an_unlabeled_source_take_the_split_their_names_name(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(pa.table({"text": [words(2), words(3)]}), src / "test-00000-of-00001.parquet")
    m = convert_text(src / "test-00000-of-00001.parquet", tmp_path / "one").manifest  # a file, not a folder
    assert {k: s.samples for k, s in m.splits.items()} == {"test": 2}
    (src / "fortunes.valid.txt").write_text(f"{words(1)}\n%\n{words(2)}\n")  # records between '%' lines
    m = convert_text(src / "fortunes.valid.txt", tmp_path / "records", separator="%").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"val": 2}
    (src / "sub").mkdir()
    (src / "sub" / "train.jsonl").write_text(f'{{"text": "{words(5)}"}}\n')
    (src / "fortunes.valid.txt").unlink()
    m = convert_text(src, tmp_path / "unlabeled", unlabeled=True).manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"test": 2, "train": 1}
