"""WikiText-2 / -103 as it is handed out (`wiki.train.raw`, `wiki.valid.raw`, `wiki.test.raw`, or `.tokens`):
before, `fastdata convert` rejected every file as an unsupported type. Each file now goes to the split its name
names, one document per article: an article starts at its ` = Title = ` line and holds its sections
(` = = Section = = `)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest_text import TOKENIZER, bert, convert_text

import fastdata
from converters.text import KIND as TEXT
from converters.text.options import TextOptions
from converters.text.records import Reject, is_article_title, read_documents


def article(title: str, paragraphs: list[str]) -> list[str]:
    """An article's lines as WikiText writes them: a space before every line, a blank line after each block."""
    lines = [f" = {title} = ", " "]
    for i, text in enumerate(paragraphs):
        if i == 1:
            lines += [" = = Reception = = ", " "]
        lines += [f" {text} ", " "]
    return lines


def wikitext(articles: list[tuple[str, list[str]]], preamble: tuple[str, ...] = (" ",)) -> str:
    return "\n".join([*preamble, *(line for t, ps in articles for line in article(t, ps))]) + "\n"


def read(path: Path, **options) -> list[tuple[str, str]]:
    opts = TextOptions(tokenizer=str(TOKENIZER), **options)
    return [(w, f"! {d.reason}" if isinstance(d, Reject) else d) for w, d in read_documents(path, opts)]


TRAIN = [("Valkyria Chronicles III", ["Senjō no Valkyria 3 is a tactical role @-@ playing game .",
                                      "The game was well received in Japan ."]),
         ("Tower Building of the Little Rock Arsenal", ["The Tower Building is a historic building ."]),
         ("Cicely Mary Barker", ["Cicely Mary Barker was an English illustrator .", "Her work sold well ."])]


@pytest.mark.parametrize("line, title", [
    (" = Valkyria Chronicles III = ", True), ("= E = mc2 =", True), (" = = Reception = = ", False),
    (" = = = Sub = = = ", False), (" = = ", False), (" = x", False), ("x = ", False), (" =  = ", False),
    (" The = sign = ", False), (" = A =", True), (" = A", False)])
def test_an_article_starts_at_a_title_with_one_equals_sign_either_side(line: str, title: bool):
    assert is_article_title(line) is title


def test_each_article_is_a_document_with_its_title_and_sections(tmp_path: Path):
    path = tmp_path / "wiki.train.raw"
    path.write_text(wikitext(TRAIN), encoding="utf-8")
    docs = read(path)
    assert [w for w, _ in docs] == ["#0", "#1", "#2"]
    assert docs[0][1] == "\n".join(article(*TRAIN[0]))  # the blank line before the first title is no document
    assert docs[1][1].startswith(" = Tower Building of the Little Rock Arsenal = \n")
    assert " = = Reception = = " in docs[2][1] and docs[2][1].endswith(" Her work sold well . \n ")
    assert [d for _, d in read(path, per_line=True)][:3] == [
        " = Valkyria Chronicles III = ", " Senjō no Valkyria 3 is a tactical role @-@ playing game . ",
        " = = Reception = = "]


def test_text_before_the_first_title_is_a_document_and_a_separator_overrides_the_articles(tmp_path: Path):
    path = tmp_path / "wiki.test.tokens"
    path.write_text(wikitext(TRAIN[:2], preamble=(" An <unk> preamble . ", " ")), encoding="utf-8")
    assert [d[:22] for _, d in read(path)] == [
        " An <unk> preamble . \n", " = Valkyria Chronicles", " = Tower Building of t"]
    path.write_text("a\n = T = \nb\n%\nc\n", encoding="utf-8")
    assert read(path, separator="%") == [("#0", "a\n = T = \nb"), ("#1", "c")]
    assert read(path) == [("#0", "a"), ("#1", " = T = \nb\n%\nc")]


def test_an_article_past_the_cap_or_with_an_undecodable_byte_is_rejected_and_the_next_kept(tmp_path: Path):
    path = tmp_path / "wiki.valid.raw"
    path.write_bytes(b" = A = \n" + b"x" * 30 + b"\n = B = \nb\xe9\n = C = \nc\n")
    assert read(path, max_document_bytes=20) == [
        ("#0", "! document larger than --max-document-bytes (20 bytes)"),
        ("#1", "! not UTF-8 text: undecodable byte 0xe9 at offset 48"), ("#2", " = C = \nc")]
    assert read(path, max_document_bytes=39) == [  # " = A = \n" + 30 x: 38 bytes, 39 with its newline
        ("#0", " = A = \n" + "x" * 30), ("#1", "! not UTF-8 text: undecodable byte 0xe9 at offset 48"),
        ("#2", " = C = \nc")]
    assert read(path, max_document_bytes=38)[0] == ("#0", "! document larger than --max-document-bytes (38 bytes)")


def test_wikitext_converts_into_its_three_splits_one_sequence_per_article(tmp_path: Path):
    src = tmp_path / "wikitext-103-raw"
    src.mkdir()
    (src / "wiki.train.raw").write_text(wikitext(TRAIN), encoding="utf-8")
    (src / "wiki.valid.raw").write_text(wikitext(TRAIN[1:2]), encoding="utf-8")
    with gzip.open(src / "wiki.test.raw.gz", "wt", encoding="utf-8") as f:  # compressed as a mirror may hand it out
        f.write(wikitext(TRAIN[:2]))
    assert TEXT.detect(src)
    m = convert_text(src, tmp_path / "out").manifest
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 3, "val": 1, "test": 2}
    assert not m.rejected
    tok = bert()
    want = sorted(len(tok.encode("\n".join(article(*a))).ids) for a in TRAIN)
    ld = fastdata.loader(tmp_path / "out", split="train", max_tokens=1 << 14, shuffle=False)
    assert sorted(n for batch in ld for n in batch["lengths"].tolist()) == want


def test_binary_raw_files_are_no_text_corpus(tmp_path: Path):
    """MetaImage volumes (`.mhd` beside a `.raw` of voxels) are not taken for WikiText."""
    src = tmp_path / "volumes"
    src.mkdir()
    (src / "ct.mhd").write_text("ObjectType = Image\nElementDataFile = ct.raw\n")
    (src / "ct.raw").write_bytes(bytes(range(256)) * 64)
    assert not TEXT.detect(src)
    (src / "ct.raw").write_bytes(b"\x80" + b"a" * 10)
    assert read(src / "ct.raw") == [("#0", "! not UTF-8 text: undecodable byte 0x80 at offset 0")]


def test_what_a_wikitext_file_is_not_read_as_is_said_whole(tmp_path: Path):
    path = tmp_path / "wiki.train.raw"
    path.write_text(" = A = \n a \n")
    assert read(path, ids_field="input_ids") == [
        ("", "! --ids-field reads token ids from Parquet, Arrow, JSON Lines or JSON files; this is a WikiText file")]
    (tmp_path / "notes.doc").write_text("x")
    assert read(tmp_path / "notes.doc") == [
        ("", "! unsupported file type; allowed: .txt, .text, .raw, .tokens, .jsonl, .ndjson, .json, .csv, .tsv, "
             ".parquet, .arrow, .bin, no extension, or + .gz or .zst")]
    assert read(tmp_path / "wiki.test.raw") == [
        ("", "! unreadable: [Errno 2] No such file or directory: " + repr(str(tmp_path / "wiki.test.raw")))]
