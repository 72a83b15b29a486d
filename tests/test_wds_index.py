"""The one parser and writer of member names and DALI `.idx` files (`fastdata.wds_index`): names split as
WebDataset splits them, an index read back as written, and every malformed index a ShardError that names
the file, the line and what is wrong."""

from __future__ import annotations

import pytest
from webdataset.tariterators import base_plus_ext

from fastdata.errors import ShardError
from fastdata.wds_index import Member, format_index, parse_index, parse_line, sample_key, split_name

WHERE = "shards/s-000.idx"

# a dot in a folder name, two folders with dots, a hidden-file style name, a multi-part extension
DOTTED = ["k.jpg", "dir.v1/abc.seg.jpg", "x.y/z.w/k.jpg", "a/.hidden.jpg", "n01440764/n0.1.JPEG", "a/b/c.cls"]


@pytest.mark.parametrize("name", DOTTED)
def test_names_split_where_webdataset_splits_them(name):
    assert split_name(name) == base_plus_ext(name)


@pytest.mark.parametrize(("name", "want"), [("abc", ("abc", "")), ("a/b", ("a/b", "")), ("d.x/k", ("d.x/k", ""))])
def test_a_name_without_a_dot_after_its_last_slash_has_no_extension(name, want):
    assert split_name(name) == want


def test_a_leading_dot_starts_the_extension_of_an_empty_key():
    """The rule (first dot after the last slash) applied as written; of the peers, DALI's wds2idx leaves a member
    named like `d/.jpg` out of its index and webdataset's regex finds no key in it."""
    assert split_name(".jpg") == ("", "jpg") and split_name("d/.jpg") == ("d/", "jpg")


def test_a_sample_is_keyed_by_its_first_member():
    assert sample_key([Member("jpg", 512, 10, "d.1/k.jpg")]) == "d.1/k"
    assert sample_key([Member("jpg", 512, 10, "k.jpg"), Member("cls", 1536, 1, "other.cls")]) == "k"


SAMPLES = [(Member("jpg", 512, 1000, "a.jpg"), Member("cls", 2048, 1, "a.cls")),
           (Member("seg.png", 3072, 7, "d.1/b.seg.png"),)]


def test_an_index_is_written_as_wds2idx_writes_it_and_read_back():
    text = format_index(SAMPLES)
    assert text == b"v1.2 2\njpg 512 1000 a.jpg cls 2048 1 a.cls\nseg.png 3072 7 d.1/b.seg.png\n"
    assert parse_index(text.decode(), where=WHERE) == SAMPLES
    assert SAMPLES[0][0].end == 1512


def test_blank_lines_are_skipped_and_line_numbers_count_them():
    text = "v1.2 2\n\njpg 0 5 a.jpg\n  \njpg 10 5 b.jpg\n"
    assert [m[0].name for m in parse_index(text, where=WHERE)] == ["a.jpg", "b.jpg"]
    with pytest.raises(ShardError) as info:
        parse_index("v1.2 2\n\njpg 0 5 a.jpg\njpg x 5 b.jpg\n", where=WHERE)
    assert str(info.value).startswith(f"{WHERE} line 4 has an offset or size that is not a number")


@pytest.mark.parametrize("line", ["jpg 0 10", "jpg 0 10 a.jpg cls", "jpg 0 10 a.jpg cls 1 2"])
def test_a_line_that_is_not_groups_of_four_fields_is_malformed(line):
    with pytest.raises(ShardError) as info:
        parse_line(line, where=WHERE, lineno=7)
    assert str(info.value) == (f"{WHERE} line 7 is malformed (want 'ext offset size name' groups): {line!r}")


def test_the_line_shown_is_cut_to_80_characters():
    line = "jpg 0 x " + "n" * 200
    with pytest.raises(ShardError) as info:
        parse_line(line, where=WHERE, lineno=3)
    assert str(info.value) == (f"{WHERE} line 3 has an offset or size that is not a number of at most 18 ASCII "
                               f"digits: {line[:80]!r}")
    with pytest.raises(ShardError) as info:
        parse_line("jpg " + "1" * 200, where=WHERE, lineno=3)
    assert str(info.value).endswith(f"groups): {('jpg ' + '1' * 200)[:80]!r}")


@pytest.mark.parametrize(("text", "shown"), [
    ("", ""), ("v1.2\njpg 0 1 a.jpg\n", "v1.2"), ("x1.2 1\njpg 0 1 a.jpg\n", "x1.2 1"),
    ("v1.2 one\n", "v1.2 one"), ("v1.2 1 2\n", "v1.2 1 2"), ("v1.2 " + "9" * 60 + "\n", ("v1.2 " + "9" * 60)[:40]),
])
def test_a_file_without_the_version_and_count_line_is_not_an_index(text, shown):
    with pytest.raises(ShardError) as info:
        parse_index(text, where=WHERE)
    assert str(info.value) == (f"{WHERE} is not a DALI webdataset index (first line {shown!r}, want 'v1.2 N')")


def test_a_count_that_disagrees_with_the_lines_is_refused():
    with pytest.raises(ShardError) as info:
        parse_index("v1.2 3\njpg 0 1 a.jpg\njpg 512 1 b.jpg\n", where=WHERE)
    assert str(info.value) == f"{WHERE} declares 3 samples and lists 2"
