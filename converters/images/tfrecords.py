"""Image datasets as TFRecord files of `tf.train.Example` records, as TensorFlow's ImageNet script writes them
(`build_imagenet_data.py`: `train-00000-of-01024`, features `image/encoded`, `image/class/synset`, `image/class/label`)
and TensorFlow Datasets does (`imagenet2012-train.tfrecord-00000-of-01024`: `image`, `label`).

- A file is a TFRecord file when its first frame's length passes its CRC: a TFRecord frame is the record's length
  (8 bytes, little-endian), the masked CRC-32C of those 8 bytes, the record, and the masked CRC-32C of the record
  (the crc32c package computes them). A gzip-compressed file (`TFRecordOptions(compression_type="GZIP")`) is read
  through gzip.
- Records are read one at a time and their CRCs checked: the length's before any of the record is read (a forged
  length allocates nothing), the record's before it is parsed, as an Example, by protobuf (tf_example.py declares
  TensorFlow's `example.proto`). A record over `limit` bytes is skipped unread. A record that fails
  its CRC is rejected and the next one read; a length that fails its CRC, or a file cut short, ends the file's
  rows there (`Damage`), the rows before it kept.
- The image is the `--image-field` feature, else the first of IMAGE_FEATURES a file's first Example has; the label
  the `--label-field` feature, else the first of LABEL_FEATURES (the synset first: sorted, the synsets give
  torchvision's ImageFolder order, which TensorFlow's 1-based `image/class/label` is plus one); none: unlabeled.
  Labels become classes as a labels CSV's do (table_labels.py): ids stay labels, names are sorted; a file whose
  features differ from the first file's is rejected whole. Each image goes to a spill file and is converted like
  an image file (tables.py).
- With --multi-label a record's label feature lists its classes, any number of them: the `--label-field` feature,
  else the first of MULTI_LABEL_FEATURES (TensorFlow Datasets' `labels` of VOC, the object detection API's
  `image/object/class/text` names before its `image/object/class/label` ids, TensorFlow Datasets' `objects/label`).
  A class listed twice (two objects of one class) is one class; an empty list is an image of no class. Without
  --multi-label, records of such a feature and none of LABEL_FEATURES are refused (not read as unlabeled).
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from converters.images.labels_csv import EXTENSIONS
from converters.images.table_columns import Columns, TableOptions, split_of_table
from converters.images.tables import ImageRows, collected
from converters.kind import Discovery
from converters.sample import Rejection
from converters.table_files import Damage, TableError
from converters.walk import first_files
from fastdata.errors import ConvertError

IMAGE_FEATURES = ("image/encoded", "image")
LABEL_FEATURES = ("image/class/synset", "image/class/label", "label")
MULTI_LABEL_FEATURES = ("labels", "image/object/class/text", "image/object/class/label", "objects/label")
LOOK_AT = 8  # files whose first frame `has_tfrecords` reads
FRAME = struct.Struct("<QI")  # a record's length and the masked CRC-32C of the length
CRC = struct.Struct("<I")
MASK_DELTA = 0xA282EAD8
GZIP_MAGIC = b"\x1f\x8b"
OTHER_FEATURES = 1 << 20  # bytes a record may hold besides its image (file names, boxes, class texts)
INSTALL = "TFRecord files are read with the protobuf and crc32c packages: pip install 'fastdata[tfrecord]'"
NAMED_LIKE_TFRECORD = re.compile(r"\.tfrec|-\d+-of-\d+$", re.IGNORECASE)


def masked_crc(data: bytes | memoryview) -> int:
    """TFRecord's masked CRC-32C of `data`."""
    try:
        import crc32c
    except ImportError as exc:
        raise ConvertError(f"{INSTALL}: {exc}") from exc
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[IO[bytes]]:
    """The file's bytes, decompressed when it is gzip."""
    with open(path, "rb") as raw:
        if raw.read(2) != GZIP_MAGIC:
            raw.seek(0)
            yield raw
            return
        raw.seek(0)
        with gzip.GzipFile(fileobj=raw, mode="rb") as unpacked:
            yield unpacked


def is_tfrecord(path: Path) -> bool:
    """Whether the file at `path` begins with a TFRecord frame whose length passes its CRC."""
    try:
        with _opened(path) as f:
            head = f.read(FRAME.size)
    except (OSError, EOFError, zlib.error):
        return False
    return len(head) == FRAME.size and masked_crc(head[:8]) == FRAME.unpack(head)[1]


def has_tfrecords(src: Path, *, limit: int) -> bool:
    """Whether a TFRecord file is among the first files of `src` named like one (`.tfrecord`, `-00000-of-01024`, or
    no extension), and no image file is among the first `limit` files."""
    candidates = []
    for path in first_files(src, limit):
        if path.suffix.lower() in EXTENSIONS:
            return False
        if NAMED_LIKE_TFRECORD.search(path.name) or not path.suffix:
            candidates.append(path)
    if importlib.util.find_spec("crc32c") is not None:
        candidates = candidates[:LOOK_AT]  # each one's first frame is read
    return any(looks_like_tfrecord(p) for p in candidates)


def damaged_tfrecord(src: Path, *, limit: int) -> Path | None:
    """The first of the first `limit` files of `src` named like a TFRecord file (`.tfrecord`, `-00000-of-01024`)
    whose first frame fails its CRC (None: none is, or crc32c is not installed to tell): a message that says
    `src` holds no TFRecord file names it."""
    if importlib.util.find_spec("crc32c") is None:
        return None
    return next((p for p in first_files(src, limit) if NAMED_LIKE_TFRECORD.search(p.name) and not is_tfrecord(p)),
                None)


def looks_like_tfrecord(path: Path) -> bool:
    """Whether `path` is a TFRecord file by its first frame (`is_tfrecord`), or, without the crc32c package to check
    one, by its name (discovery then says what to install)."""
    if importlib.util.find_spec("crc32c") is None:
        return bool(NAMED_LIKE_TFRECORD.search(path.name))
    return is_tfrecord(path)


def records(path: Path, limit: int) -> Iterator[tuple[int, bytes | str] | Damage]:
    """(i, record i's bytes or why it is unusable) for each record of the TFRecord file at `path`, then a Damage
    where its frames stop being readable (see the module docstring)."""
    i = 0
    try:
        with _opened(path) as f:
            while True:
                head = f.read(FRAME.size)
                if not head:
                    return
                if len(head) < FRAME.size:
                    yield Damage(i, f"the file is cut short: record {i}'s frame has {len(head)} of its "
                                    f"{FRAME.size} bytes")
                    return
                length, crc = FRAME.unpack(head)
                if masked_crc(head[:8]) != crc:
                    yield Damage(i, f"damaged: record {i}'s length fails its CRC, so no record from it on can be "
                                    "found")
                    return
                if length > limit:  # read past, a block at a time: a gzip stream cannot seek far
                    if _skip(f, length + CRC.size) < length + CRC.size:
                        yield Damage(i, f"the file is cut short inside record {i}")
                        return
                    yield i, (f"a record of {length} bytes, more than an image under --max-pixels and its features "
                              f"take ({limit})")
                    i += 1
                    continue
                data = f.read(length)
                tail = f.read(CRC.size)
                if len(data) < length or len(tail) < CRC.size:
                    yield Damage(i, f"the file is cut short inside record {i}")
                    return
                yield i, (data if masked_crc(data) == CRC.unpack(tail)[0] else "damaged: the record fails its CRC")
                i += 1
    except (OSError, EOFError, zlib.error) as exc:  # a damaged gzip stream
        yield Damage(i, f"unreadable from record {i} on: {type(exc).__name__}: {exc}")


def _skip(f: IO[bytes], n: int) -> int:
    """Read `n` bytes of `f` and drop them; how many there were."""
    done = 0
    while done < n:
        block = f.read(min(n - done, 1 << 20))
        if not block:
            break
        done += len(block)
    return done


def parse_example(data: bytes) -> Any:
    """The tf.train.Example `data` holds, or why it holds none (a str)."""
    try:
        from google.protobuf.message import DecodeError

        from converters.images.tf_example import example_class
    except ImportError as exc:
        raise ConvertError(f"{INSTALL}: {exc}") from exc

    try:
        return example_class().FromString(data)
    except (DecodeError, RecursionError) as exc:
        return f"not a tf.train.Example: {str(exc)[:80] or type(exc).__name__}"


def feature_values(example: Any, name: str) -> tuple[list[bytes] | list[int], str | None]:
    """(the values of feature `name`, None) or ([], why it has none): a bytes or int64 list."""
    feature = example.features.feature
    if name not in feature:
        return [], f"no feature {name!r}"
    kind = feature[name].WhichOneof("kind")
    if kind == "float_list":
        return [], f"feature {name!r} holds floats, not image bytes or a label"
    return (list(getattr(feature[name], kind).value) if kind else []), None


def feature_value(example: Any, name: str) -> tuple[bytes | int | None, str | None]:
    """(the one value of feature `name`, None) or (None, why it has none): a bytes or int64 list of one value."""
    values, problem = feature_values(example, name)
    if problem is not None:
        return None, problem
    if len(values) != 1:
        return None, f"feature {name!r} holds {len(values)} values, not one"
    return values[0], None


def pick_features(example: Any, opts: TableOptions) -> Columns:
    """The image and label features a file's rows are read from (see the module docstring); TableError when it
    has no image feature."""
    present = list(example.features.feature)
    image = opts.image_field or next((n for n in IMAGE_FEATURES if n in present), None)
    if image is None:
        raise TableError(f"no image feature ({', '.join(sorted(present)) or 'none'}): name the one to convert with "
                         "--image-field")
    if opts.multi_label and not opts.label_field:
        label = next((n for n in MULTI_LABEL_FEATURES if n in present), None)
        if label is None:
            listed = ", ".join(sorted(present)) or "none"
            raise TableError(f"no feature of a list of classes (--multi-label; features: {listed}): name the one to "
                             "read with --label-field")
        return Columns(image, label, None)
    label = None if opts.unlabeled else opts.label_field or next((n for n in LABEL_FEATURES if n in present), None)
    listing = next((n for n in MULTI_LABEL_FEATURES if n in present), None)
    if label is None and listing is not None and not opts.unlabeled:  # VOC's records, read as unlabeled otherwise
        raise TableError(f"no label feature, and feature {listing!r} lists classes: convert with --multi-label, or "
                         "with --unlabeled for images without labels")
    return Columns(image, label, None)


class Rejected(str):
    """Why a row has no label (a label that is a str is a class name)."""


def record_values(example: Any, columns: Columns, multi: bool = False) -> tuple[bytes | str, Any]:
    """(the image bytes or why there are none, the label: an int, a str, None without a label feature, or why
    there is none). `multi` (--multi-label): the label is the list of the feature's values, each an int or a str."""
    image, problem = feature_value(example, columns.image)
    if problem is not None or not isinstance(image, bytes):
        image = problem or f"feature {columns.image!r} holds an integer, not image bytes"
    if columns.label is None:
        return image, None
    labels, problem = feature_values(example, columns.label)
    if problem is None and not multi and len(labels) != 1:
        problem = (f"feature {columns.label!r} holds {len(labels)} values, not one"
                   + (" (a list of classes a record: convert with --multi-label)" if labels else ""))
    if problem is not None:
        return image, Rejected(problem)
    named: list[int | str] = []
    for label in labels:
        if label == -1:  # what TensorFlow Datasets writes for a split without labels
            return image, Rejected(f"no label (-1 in feature {columns.label!r}: the split has no labels)")
        if isinstance(label, bytes):
            try:
                label = label.decode("utf-8")
            except UnicodeDecodeError:
                return image, Rejected(f"the label in feature {columns.label!r} is not UTF-8 text: {label[:40]!r}")
        named.append(label)
    return image, named if multi else named[0]


class _Records(ImageRows):
    """The records of every TFRecord file, taken as the rows of a table are."""

    label_field = "feature"
    row = "record"

    def add_file(self, path: Path, split: str, label: int | None) -> None:
        rel = self.rel(path)
        split = split_of_table(rel, self.split)
        found = 0
        size = path.stat().st_size
        if not size or not is_tfrecord(path):
            why = ("an empty file: no records" if not size else
                   "an index of a TFRecord file (DALI's tfrecord2idx writes them), not data"
                   if path.suffix == ".idx" and path.with_suffix("").is_file() else
                   "not a TFRecord file (this source is read as TFRecord files of images)")
            self.rejected.append(Rejection(split, rel, why))
        else:
            try:
                found = self._add_records(path, rel, split)
            except TableError as exc:
                self.rejected.append(Rejection(split, rel, str(exc)))
        self.identity.append([split, rel, None, size, found])

    def _add_records(self, path: Path, rel: str, split: str) -> int:
        columns, found = None, 0
        for item in records(path, self.opts.max_bytes + OTHER_FEATURES):
            if isinstance(item, Damage):
                self.rejected.append(Rejection(split, f"{rel}#{item.first}", item.reason))
                continue
            i, data = item
            example = data if isinstance(data, str) else parse_example(data)
            if isinstance(example, str):
                self.rejected.append(Rejection(split, f"{rel}#{i}", example))
                continue
            if columns is None:
                columns = pick_features(example, self.opts)
                self.labels.agree(rel, columns.label, None)
            image, value = record_values(example, columns, self.opts.multi_label)
            if isinstance(value, Rejected):
                self.rejected.append(Rejection(split, f"{rel}#{i}", str(value)))
                continue
            found += self.add_row(image, value, columns, split, f"{rel}#{i}", str(path))
        return found


def discover_tfrecords(src: Path, opts: TableOptions, *, follow_symlinks: bool = True) -> Discovery:
    """The images of the TFRecord files under `src`."""
    return collected(_Records(src, opts, follow=follow_symlinks), "tfrecords")
