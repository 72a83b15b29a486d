"""The CLI's formatting helpers (fastdata/cli/format.py): sizes in and out, the grouped summary of rejection
reasons, and text from shards or manifests made safe for a terminal."""

from __future__ import annotations

import pytest

from fastdata.cli.format import human_bytes, parse_size, printable, reason_summary


@pytest.mark.parametrize(("n", "text"), [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (1024 ** 2 - 1, "1024.0 KiB"),
    (10 ** 6, "976.6 KiB"), (5 * 2 ** 30, "5.0 GiB"), (3 * 2 ** 40 + 2 ** 39, "3.5 TiB"), (2 ** 50, "1024.0 TiB"),
    (7 * 2 ** 20, "7.0 MiB"),
])
def test_human_bytes(n: int, text: str) -> None:
    assert human_bytes(n) == text


@pytest.mark.parametrize(("text", "n"), [("5000", 5000), ("64MB", 64 * 10 ** 6), ("256MiB", 256 * 2 ** 20),
                                         (" 1.5 gb ", 15 * 10 ** 8), ("2k", 2000), ("3KiB", 3072), ("7b", 7)])
def test_parse_size(text: str, n: int) -> None:
    assert parse_size(text) == n


def test_parse_size_refusal() -> None:
    with pytest.raises(ValueError) as caught:
        parse_size("12 parsecs")
    assert str(caught.value) == "cannot read size '12 parsecs'; use bytes or a unit: 500000, 64MB, 256MiB, 1GB"


def test_reasons_are_grouped_by_their_first_words_most_common_first() -> None:
    rejected = [{"reason": "corrupt or truncated JPEG: premature end"}] * 3 + \
        [{"reason": "empty file (0 bytes)"}] * 5 + [{"reason": "corrupt or truncated JPEG: bad Huffman"}] + \
        [{"source": "x"}] + [{"reason": "escape \x1b[31m: red"}]
    assert reason_summary(rejected) == ["     5  empty file (0 bytes)", "     4  corrupt or truncated JPEG",
                                        "     1  ", "     1  escape \\x1b[31m"]
    many = [{"reason": f"reason {i}"} for i in range(12) for _ in range(12 - i)]
    summary = reason_summary(many)
    assert summary == [f"{12 - i:6d}  reason {i}" for i in range(8)]  # the 8 most common
    assert len(reason_summary(many, limit=3)) == 3 and reason_summary([]) == []


def test_reasons_that_start_with_their_file_are_grouped_by_what_follows() -> None:
    """A dicom or nifti reason names its file first; grouped by it, every file was a group of one."""
    rejected = [{"reason": f"file-{i:020x}: mask value 4, but dataset.json names 3 labels (0..2)"} for i in range(3)]
    rejected += [{"reason": "scans/a.dcm frame 2: RescaleSlope nan is not a finite number"},
                 {"reason": "p/b.dcm: RescaleSlope nan is not a finite number"},
                 {"reason": "c.dcm: RescaleSlope nan is not a finite number"},
                 {"reason": "unreadable: Permission denied"}, {"reason": "a.nii.gz: "}]
    assert reason_summary(rejected) == ["     3  mask value 4, but dataset.json names 3 labels (0..2)",
                                        "     3  RescaleSlope nan is not a finite number",
                                        "     1  unreadable", "     1  a.nii.gz"]


def test_printable_escapes_control_characters_only() -> None:
    assert printable("class_1/été.jpg") == "class_1/été.jpg"
    assert printable("a\nb\x1b[2Jc\td\u202e") == "a\\nb\\x1b[2Jc\\td\\u202e"
    assert printable(42) == "42"
    assert printable("é\n") == "é\\n"  # printable characters stay as they are beside an escaped one
