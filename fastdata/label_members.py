"""What a tar shard's label member holds, read one way by `fastdata index`, the loaders and `fastdata verify`.

A label member holds a class index in ASCII digits (`fastdata convert`'s `cls`, WebDataset's convention). Shards
written by another tool may hold the class's name instead (`{"cls": "tench"}` through webdataset's encoder): an
adopted dataset whose manifest says `"label_encoding": "name"` maps each name, as its UTF-8 bytes, to its place in
the manifest's classes. Either way the bytes are stripped of ASCII whitespace first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastdata.errors import ShardError
from fastdata.numerals import parse_int

MAX_LABEL_BYTES = 256  # a label member larger than this is not a label (ImageNet's longest class name has 121)
NAME_ENCODING = "name"  # the manifest's extra.label_encoding of labels that are class names


def name_table(classes: Sequence[str]) -> dict[bytes, int]:
    """Each class name's UTF-8 bytes -> its index."""
    return {name.encode("utf-8"): i for i, name in enumerate(classes)}


def label_value(data: bytes, names: dict[bytes, int] | None) -> int | None:
    """The class index `data` holds (None: not one): its integer, or with `names` its name's index."""
    data = data.strip()
    return names.get(data) if names is not None else parse_int(data, signed=True)


def parse_label(data: bytes, *, key: str, shard: Path, names: dict[bytes, int] | None = None) -> int:
    """The class index of a sample's label member; ShardError naming the sample when it holds none."""
    label = label_value(data, names)
    if label is None:
        what = "a class name the manifest lists" if names is not None else "an integer such as b'3'"
        raise ShardError(f"sample {key} in {shard} has a bad class label {data[:40]!r}; a label member holds {what}")
    return label


def label_text(data: bytes) -> tuple[str | None, str | None]:
    """(the text of a label member as an index or a name, None) or (None, why it is neither): at most
    MAX_LABEL_BYTES; once stripped of ASCII whitespace, UTF-8, not empty, no control character, no blank but the
    space."""
    if len(data) > MAX_LABEL_BYTES:
        return None, f"a label member of {len(data)} bytes or more (a label holds at most {MAX_LABEL_BYTES})"
    raw = data.strip()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"label {raw[:40]!r} is not UTF-8 text"
    if not text:
        return None, "an empty label member"
    if not text.isprintable():  # control characters, and every blank but the space (bytes.strip took those at the ends)
        return None, f"label {raw[:40]!r} holds control or blank characters (a class name is printed as text)"
    return text, None
