"""The spill file (converters/spill.py): what discovery reads out of container files (text documents, the images of
a table) waits there for the workers, each input once."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from converters.spill import SAME_FROM, Spill, spilled, spilling_only


def test_inputs_read_back_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spill = Spill("images")
    text, data = spill.add("naïve café"), spill.add(b"\xff\xd8\x00")
    spill.flush()
    assert re.fullmatch(r"fastdata-images-.+\.spill", Path(spill.path).name) and Path(spill.path).parent == tmp_path
    assert text.read() == "naïve café" and data.read_bytes() == b"\xff\xd8\x00"
    assert (text.offset, text.length, data.offset) == (0, len("naïve café".encode()), text.length)
    assert spill.size == text.length + 3
    spill.close()
    assert not os.path.exists(spill.path)


def test_a_large_input_added_again_lies_where_it_was_written_first(tmp_path: Path) -> None:
    """From SAME_FROM bytes on, an input that was added before is not written again (a table that repeats one
    large value in every row); a smaller one is, and so is a large one that differs in one byte."""
    spill = Spill("images")
    large, small = bytes(SAME_FROM), bytes(SAME_FROM - 1)
    first, again = spill.add(large), spill.add(bytes(SAME_FROM))
    other = spill.add(b"\x01" + bytes(SAME_FROM - 1))
    assert (again.offset, again.length, again.ordinal) == (first.offset, first.length, 1) and other.offset == SAME_FROM
    a, b = spill.add(small), spill.add(small)
    assert b.offset == a.offset + a.length
    spill.flush()
    assert spill.size == 2 * SAME_FROM + 2 * (SAME_FROM - 1) == os.path.getsize(spill.path)
    assert again.read_bytes() == large and other.read_bytes()[:1] == b"\x01"


def test_a_spill_file_cut_short_says_what_it_lost(tmp_path: Path) -> None:
    spill = Spill("text")
    ref = spill.add("a document")
    spill.flush()
    os.truncate(spill.path, 4)
    with pytest.raises(OSError, match=rf"spill file .*{re.escape(Path(spill.path).name)} lost its data \(wanted 10 "
                                      r"bytes at 0\)"):
        ref.read()


def test_inside_spilling_only_the_other_inputs_are_counted_not_written(tmp_path: Path) -> None:
    """A part of a conversion in parts spills only the inputs it converts: the others' refs know their place and
    size, and reading one says it was not written."""
    with spilling_only({1, 3}):
        spill = Spill("text")
    outside = Spill("text")  # made after the block: writes every input
    refs = [spill.add(doc) for doc in ("zero", "one", "two", "three!")]
    spill.flush()
    assert [(r.ordinal, r.offset, r.length) for r in refs] == [(0, -1, 4), (1, 0, 3), (2, -1, 3), (3, 3, 6)]
    assert refs[1].read() == "one" and refs[3].read() == "three!" and spill.size == 9 == os.path.getsize(spill.path)
    with pytest.raises(OSError, match=rf"^input 2 of spill file {re.escape(spill.path)} was not written: this process "
                                      r"spilled only the inputs it converts$"):
        refs[2].read()
    assert outside.only is None and outside.add("x").offset == 0 and spill.only == frozenset({1, 3})
    with spilling_only(()):
        none = Spill("text")
    assert none.add("zero").offset == -1 and none.size == 0


def test_a_large_input_first_added_unwritten_is_written_where_it_is_wanted(tmp_path: Path) -> None:
    with spilling_only({1, 2}):
        spill = Spill("images")
    skipped, wanted, again = (spill.add(bytes(SAME_FROM)) for _ in range(3))
    spill.flush()
    assert skipped.offset == -1 and (wanted.offset, again.offset, again.ordinal) == (0, 0, 2)
    assert spill.size == SAME_FROM and again.read_bytes() == bytes(SAME_FROM)


def test_the_refs_of_a_payload_are_itself_or_its_fields() -> None:
    from converters.image_text.discover import Captions

    spill = Spill("pairs")
    ref = spill.add(b"jpeg")
    assert list(spilled(ref)) == [ref] and list(spilled(Captions(("a cat",), ref))) == [ref]
    assert list(spilled(Captions(("a cat",)))) == [] and list(spilled("a document")) == []
    assert list(spilled(Captions)) == []  # a dataclass itself is no payload
