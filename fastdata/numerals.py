"""Integers written as text in what fastdata reads (index files, label members, HTTP headers, file names).

`int()` is not a parser for untrusted text: `str.isdigit()` accepts digits that `int()` refuses ('²', from a
Latin-1 header byte or a UTF-8 index file), `int()` refuses more than 4,300 digits, and a label b'--3' passes
`lstrip(b'-').isdigit()` yet fails `int()`. `parse_int` takes ASCII digits only, at most `max_digits` of
them, so a forged number is refused (None) where `int()` would have raised a ValueError.
"""

from __future__ import annotations

MAX_DIGITS = 18  # every value of up to 18 digits fits an int64


def parse_int(text: str | bytes, *, signed: bool = False, max_digits: int = MAX_DIGITS) -> int | None:
    """The value of `text` when it is 1..`max_digits` ASCII digits (after one '-' when `signed`), else None.
    No whitespace, sign '+', underscore or other digit is accepted."""
    if isinstance(text, bytes | bytearray):
        if not text.isascii():
            return None
        text = text.decode("ascii")
    digits = text[1:] if signed and text.startswith("-") else text
    if not 0 < len(digits) <= max_digits or not digits.isascii() or not digits.isdigit():
        return None
    return int(text)
