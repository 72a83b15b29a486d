"""What a tar shard's label member holds, read one way by `fastdata index`, the loaders and `fastdata verify`.

A label member holds a class index in ASCII digits (`fastdata convert`'s `cls`, WebDataset's convention). Shards
written by another tool may hold the class's name instead (`{"cls": "tench"}` through webdataset's encoder): an
adopted dataset whose manifest says `"label_encoding": "name"` maps each name, as its UTF-8 bytes, to its place in
the manifest's classes. Either way the bytes are stripped of ASCII whitespace first. Or the label is a field of a
sample's `json` member (`{"label": 3}`, `{"label": "tench"}`; the manifest's `extra.label_field`): its integer or its
text is then read as a label member's bytes would be. An image converted `--multi-label` has several classes, a
list of class indices in its json member's `labels` field (`{"labels": [0, 3]}`; the manifest's `extra.multi_label`),
read by `field_classes`. `LabelRule` is the one reading, as a manifest describes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fastdata.errors import ShardError
from fastdata.numerals import parse_int

MAX_LABEL_BYTES = 256  # a label member larger than this is not a label (ImageNet's longest class name has 121)
MAX_JSON_BYTES = 1 << 16  # a json member read for its label field (img2dataset's, with EXIF, take a few KiB)
NAME_ENCODING = "name"  # the manifest's extra.label_encoding of labels that are class names
JSON_LABEL_FIELDS = ("label", "cls", "class")  # a json member's fields `fastdata index` reads as a label by itself


def label_classes(label: int | tuple[int, ...] | list[int] | None) -> tuple[int, ...]:
    """The classes a label names: none (unlabeled), its one class, or each class of a --multi-label image's."""
    if label is None:
        return ()
    return tuple(label) if isinstance(label, tuple | list) else (label,)


def name_table(classes: Sequence[str]) -> dict[bytes, int]:
    """Each class name's UTF-8 bytes -> its index."""
    return {name.encode("utf-8"): i for i, name in enumerate(classes)}


def label_value(data: bytes, names: Mapping[bytes, int] | None) -> int | None:
    """The class index `data` holds (None: not one): its integer, or with `names` its name's index."""
    data = data.strip()
    return names.get(data) if names is not None else parse_int(data, signed=True)


def json_record(data: bytes) -> tuple[dict | None, str | None]:
    """(the JSON object a json member holds, None) or (None, why it holds none)."""
    if len(data) > MAX_JSON_BYTES:
        return None, f"its json member has {len(data)} bytes or more (read for a label up to {MAX_JSON_BYTES})"
    try:
        record = json.loads(data)
    except ValueError as exc:  # UnicodeDecodeError included: not JSON text
        return None, f"its json member is not JSON ({type(exc).__name__}: {str(exc)[:80]})"
    except RecursionError:
        return None, "its json member nests too deeply to be read"
    if not isinstance(record, dict):
        return None, f"its json member holds a {type(record).__name__}, not an object"
    return record, None


def field_label(record: dict, field: str) -> tuple[str | None, str | None]:
    """(the text of the label `record[field]` holds, None) or (None, why it holds none): an integer is read as its
    digits, a string as it is; a missing field and any other value hold none."""
    if field not in record:
        return None, f"its json member has no {field!r} field"
    value = record[field]
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), None
    if isinstance(value, str):
        return value, None
    return None, (f"its json member's {field!r} is {json.dumps(value)[:40]}, not a class index (an integer) or a "
                  "class name (a string)")


def field_texts(record: dict, field: str) -> tuple[list[str] | None, str | None]:
    """(the text of each class a multi-label `record[field]` lists, None) or (None, why it lists none): a list of
    integers and strings (each read as a single label's would be), empty included (an image of none of the
    classes), no class twice."""
    if field not in record:
        return None, f"its json member has no {field!r} field"
    value = record[field]
    if not isinstance(value, list) or not all(isinstance(v, int | str) and not isinstance(v, bool) for v in value):
        return None, (f"its json member's {field!r} is {json.dumps(value)[:40]}, not a list of classes (class "
                      "indices or class names)")
    if len(set(value)) != len(value):
        return None, f"its json member's {field!r} names a class twice: {json.dumps(value)[:40]}"
    return [str(v) for v in value], None


def field_classes(record: dict, field: str, names: Mapping[bytes, int] | None = None
                  ) -> tuple[tuple[int, ...] | None, str | None]:
    """(the sorted class indices of a multi-label `record[field]`, None) or (None, why it holds none): each class as
    `field_texts` reads it, an index (or with `names`, a class name the manifest lists), no index twice."""
    texts, problem = field_texts(record, field)
    if texts is None:
        return None, problem
    found = [label_value(t.encode("utf-8", "surrogatepass"), names) for t in texts]
    if None in found:
        what = "a class name the manifest lists" if names is not None else "a class index (an integer)"
        return None, f"its json member's {field!r} holds {json.dumps(texts[found.index(None)])[:40]}, not {what}"
    if len(set(found)) != len(found):
        return None, f"its json member's {field!r} names a class twice: {json.dumps(record[field])[:40]}"
    return tuple(sorted(found)), None  # type: ignore[arg-type]


def json_label(data: bytes, field: str) -> tuple[str | None, str | None]:
    """(the text of the label a json member's `field` holds, None) or (None, why it holds none)."""
    record, problem = json_record(data)
    return (None, problem) if record is None else field_label(record, field)


@dataclass(frozen=True, eq=False)
class LabelRule:
    """How a labeled dataset's samples hold their labels: the `member` (extension) read, with `field` the field of
    that json member that holds the label, and with `names` the index of each class name (labels that are names)."""

    member: str
    field: str | None = None
    names: Mapping[bytes, int] | None = None
    multi: bool = False  # --multi-label: the json member's `field` lists the classes (`field_classes`)

    @property
    def max_bytes(self) -> int:
        """The largest member read for a label."""
        return MAX_JSON_BYTES if self.field is not None else MAX_LABEL_BYTES

    def text(self, data: bytes) -> tuple[bytes | None, str | None]:
        """(the label's bytes, as a label member holds them, None) or (None, why the member holds no label)."""
        if self.field is None:
            return data, None
        text, problem = json_label(data, self.field)
        return (None, problem) if text is None else (text.encode("utf-8", "surrogatepass"), None)

    def parse(self, data: bytes, *, key: str, shard: Path) -> int | tuple[int, ...]:
        """The class index of a sample's label (multi: the tuple of its class indices); ShardError naming the sample
        when its member holds none."""
        if self.multi:
            return self.classes(data, key=key, shard=shard)
        raw, problem = self.text(data)
        if raw is None:
            raise ShardError(f"sample {key} in {shard} has no class label: {problem}")
        return parse_label(raw, key=key, shard=shard, names=self.names)


    def classes(self, data: bytes, *, key: str, shard: Path) -> tuple[int, ...]:
        """The class indices of a --multi-label sample; ShardError naming the sample when its member holds none."""
        record, problem = json_record(data)
        found, problem = (None, problem) if record is None else field_classes(record, self.field or "", self.names)
        if found is None:
            raise ShardError(f"sample {key} in {shard} has no class labels: {problem}")
        return found


def parse_label(data: bytes, *, key: str, shard: Path, names: Mapping[bytes, int] | None = None) -> int:
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
