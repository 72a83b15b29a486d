"""The spill file (converters/spill.py): what discovery reads out of container files (text documents, the images of
a table) waits there for the workers, each input once."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from converters.spill import SAME_FROM, Spill


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
    assert again == first and other.offset == SAME_FROM
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
