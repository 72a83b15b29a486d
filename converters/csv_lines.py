"""The lines of a CSV file for Python's csv reader, read so that damage stops the table where it is: each line is
decoded alone (a byte that is not UTF-8 stops the file at its own line, the rows before it kept), and a line
longer than a bound stops it too (memory stays bounded whatever the file holds). Used by the text kind's tables
(converters/text/tables.py) and the images kind's tables of pixels (converters/images/pixel_tables.py)."""

from __future__ import annotations

import codecs
import csv
from collections.abc import Iterator
from typing import BinaryIO


def csv_lines(f: BinaryIO, bound: int) -> Iterator[str]:
    """The lines of `f` decoded one by one (line endings kept, for csv's quoted newlines; the UTF-8 BOM of the first
    dropped). UnicodeDecodeError at a line that is not UTF-8, csv.Error at one longer than `bound` bytes."""
    first = True
    while line := f.readline(bound + 1):
        if len(line) > bound:
            raise csv.Error(f"a line longer than {bound} bytes")
        if first:
            line = line.removeprefix(codecs.BOM_UTF8)
        first = False
        yield line.decode("utf-8")
