"""The labels CSV of an image source (`fastdata convert SRC --labels labels.csv`): which file has which class.

- `read_labels`: the `filename,class` rows (split by tabs, semicolons or bars when the first line holds no
  comma; CelebA's count line, names line and rows split by spaces, `_counted_rows`), a first row of column names
  skipped (the usual names, or a row whose file is not in the source and whose class labels no other row:
  Kaggle's `id,label`), or a table of one-hot columns, one per class. A spreadsheet's
  UTF-8 BOM and CRLF line ends are read right; a file listed twice, a class with control characters, a class
  written in two Unicode normalisations and a row of a one-hot table that marks no class or several are refused,
  naming the line. A `split` column gives each file its split. Kaggle's `ImageId,PredictionString` (ImageNet's
  `LOC_val_solution.csv`: each image's boxes, `n01751748 66 9 441 334 ...`) gives each image the one class of its
  boxes. (These shapes are read by labels_columns.py.)
- `listed_names`: the row of each file under the source: its path whole, in the other normalisation, or without its
  extension (Kaggle's ids).
- `label_order`: the classes in label order (class ids stay the labels they are).
"""

from __future__ import annotations

import csv
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from converters.class_folders import has_control_characters, same_name
from converters.images.labels_columns import (
    LABEL_HEADERS,
    boxes,
    image_labels,
    named_columns,
    one_hot,
    read_split_column,
)
from converters.tree import under_source
from fastdata.errors import ConvertError

log = logging.getLogger(__name__)
# the image files of a source (decoded by Pillow; a GIF's first frame; Netpbm's as GTSRB ships its signs)
EXTENSIONS = (".jpg", ".jpeg", ".jfif", ".jpe", ".png", ".webp", ".bmp", ".tif", ".tiff", ".gif", ".avif", ".ppm",
              ".pgm", ".pbm", ".pnm")

_HEADER_FILE = {"filename", "file", "file_name", "path", "image", "name"}
COUNT = re.compile(r"[0-9]{1,12}")  # a first line that counts the rows (CelebA's attribute lists): `_counted_rows`


def _is_header(row: list[str], rows: list[tuple[int, list[str]]], files: set[str] | None) -> bool:
    """Whether a first row names the columns rather than labels a file: `filename,class`, `image,label` and the
    like; or, given the source's `files`, a row whose file is none of them and whose class labels no other row
    (Kaggle's `id,label` or `image_id,breed`, which would otherwise add a class of that name)."""
    cells = [c.strip() for c in row[:2]]
    if len(cells) != 2:
        return False
    if cells[0].lower() in _HEADER_FILE and cells[1].lower() in LABEL_HEADERS:
        return True
    if files is None or same_name(cells[0]) in files:
        return False
    return not any(len(r) > 1 and r[1].strip() == cells[1] for _, r in rows[1:])


def _delimiter(head: str) -> str:
    """A comma, unless the first line holds none and a tab, a semicolon (a European spreadsheet's CSV), a bar or
    (a `path label` list) a space splits it."""
    if "," in head:
        return ","
    return next((d for d in ("\t", ";", "|") if d in head), " " if " " in head.strip() else ",")


def _path_label_rows(f) -> list[tuple[int, list[str]]]:
    """The `path label` lines of Caffe's and OpenMMLab's annotation files (`n01440764/a.JPEG 0`, Places365's
    `/a/airfield/00000001.jpg 0`): the label is the last word, the path all before it."""
    return [(n, line.rsplit(None, 1)) for n, line in enumerate(f.read().splitlines(), 1) if line.strip()]


def _label_after_file(row: list[str], src: Path | None, known: set[str]) -> list[str]:
    """A `path label` line whose label holds spaces, as FGVC-Aircraft's `1025794 Cessna 172` (torchvision reads it
    as the id and the rest): the first word and the rest, where the first word names a file of the source and the
    words before the last do not."""
    if len(row) != 2 or same_name(source_path(row[0], src)) in known:
        return row
    first, rest = f"{row[0]} {row[1]}".split(None, 1)
    return [first, rest] if same_name(source_path(first, src)) in known else row


def _counted_rows(f, csv_path: Path) -> list[tuple[int, list[str]]]:
    """CelebA's `list_attr_celeba.txt`: a first line of the row count, a second of the column names without the
    file's, then `000001.jpg -1  1  1 ...` rows split by runs of spaces; read as a table whose first row names an
    `image` column and then those. A count other than the rows' is warned of (a file cut short, or a subset)."""
    lines = f.read().splitlines()
    count = int(lines[0])
    rows = [(n, line.split()) for n, line in enumerate(lines[1:], 2) if line.strip()]
    if not rows:
        raise ConvertError(f"{csv_path}: a count of {count} rows and no line of column names after it")
    if count != len(rows) - 1:
        log.warning("%s: line 1 counts %d rows, the file holds %d (cut short, or a subset?)", csv_path, count,
                    len(rows) - 1)
    return [(rows[0][0], ["image", *rows[0][1]]), *rows[1:]]


def source_path(name: str, src: Path | None, known: set[str] | None = None) -> str:
    """A row's file as a path under `src`: `as_path`, a full path under `src` made relative, and a path written
    from a root that names one of the `known` files under `src` (`/a/airfield/1.jpg`, as Places365 lists its
    files) read under `src`. Any other full path stays as it is written, to be reported so."""
    name = as_path(name)
    if src is not None:
        name = under_source(name, src)
    if name.startswith("/") and known is not None and same_name(name.lstrip("/")) in known:
        return name.lstrip("/")
    return name


def as_path(name: str) -> str:
    """A file's name as a row writes it, as a path under the source: a table made on Windows separates folders by
    backslashes (`part_1\\a.jpg`; a name that also holds a slash is left as it is), and `./a.jpg` is `a.jpg`."""
    name = name.strip()
    if "\\" in name and "/" not in name:
        name = name.replace("\\", "/")
    while name.startswith("./"):
        name = name[2:]
    return name


def _trimmed(row: list[str]) -> list[str]:
    """A row without its trailing empty cells (a spreadsheet's trailing commas; a cell of spaces is not empty)."""
    end = len(row)
    while end and not row[end - 1]:
        end -= 1
    return row[:end]


class Labels(NamedTuple):
    rows: dict[str, Any]  # the name each row gives its file -> its class (--multi-label: a tuple of classes)
    classes: tuple[str, ...]  # in label order
    splits: dict[str, str] | None = None  # the name each row gives its file -> its split, from a `split` column


MANY_CLASSES = 20  # rows from which a table whose rows have classes of their own is warned about


def warn_if_a_class_each(source: str, labels: list[str], inputs: str, hint: str) -> None:
    """Log a warning when most `labels` are a class no other input has (a column of ids, captions or boxes read as
    the class; a pattern whose group takes the whole name): a classifier of one image per class is rarely what was
    meant."""
    classes = len(set(labels))
    if len(labels) >= MANY_CLASSES and classes > len(labels) // 2:
        log.warning("%s: its %d %s name %d classes, most of them a class of one image: %s", source, len(labels),
                    inputs, classes, hint)


def read_labels(csv_path: Path, files: list[str] | None = None, src: Path | None = None, *,
                multi: bool = False, columns: tuple[str | None, str | None] = (None, None),
                rows: list[tuple[Any, list[Any]]] | None = None) -> Labels:
    """`filename,class` rows (a header row of column names is skipped; `files`, the source's file names, tell
    column names the list does not know; a full path under `src` names its file), or a table of one-hot columns
    (`one_hot`: the classes are its columns, in their order), or of boxes (`boxes`), any of them with a `split`
    column (`read_split_column`); a spreadsheet's UTF-8 BOM and CRLF line ends are read right, a file listed twice is
    refused (which label would be meant?). Columns after the second of any other table are not read: a warning
    says so. `multi` (--multi-label): a row's cell names several classes (`class_separator`), a one-hot row marks
    any number, and a file may have several rows (a class a row: a long table; in one split), or Open Images'
    (`image_labels`); each file's row is then the tuple of its classes, in the rows' order, none twice. `columns`
    (--image-field, --label-field): the file's and the label's columns by the names the first row gives them
    (`named_columns`); the others are then not read and draw no warning, a split column aside. `rows`: the rows of
    a table read already (a JSON Lines or Parquet metadata file: folder_labels.py), its first the names of `columns`;
    a --multi-label row's classes may be a tuple (a list value), which may be empty."""
    labels: dict[str, Any] = {}
    where: dict[str, Any] = {}
    class_lines: dict[str, tuple[str, Any]] = {}  # same_name(class) -> (the class as first written, its line)
    head = delimiter = ""
    if rows is None:
        head, delimiter, rows = _read_rows(csv_path)
    named = columns != (None, None)
    if named:
        rows = named_columns(csv_path, rows, *columns)
    known = None if files is None else known_names(files)
    if delimiter == " " and not COUNT.fullmatch(head.strip()) and known is not None:
        rows = [(lineno, _label_after_file(row, src, known)) for lineno, row in rows]
    rows = [(lineno, [source_path(row[0], src, known), *row[1:]]) for lineno, row in rows]
    split_column = read_split_column(csv_path, rows)
    if split_column is not None:
        rows = split_column[0]
    columns = None if named else one_hot(csv_path, rows, multi=multi) or image_labels(csv_path, rows, multi=multi)
    box_rows = None if columns is not None or named else boxes(csv_path, rows)
    if columns is not None:
        log.info("%s: one-hot columns or Open Images' labels; %d classes: %s", csv_path, len(columns[0]),
                 ", ".join(columns[0][:10]))
        rows = columns[1]
    elif box_rows is not None:
        log.info("%s: a PredictionString column; each image's class is the class of its boxes", csv_path)
        rows = box_rows
    elif split_column is not None or named:  # its first row names the columns
        rows = rows[1:]
    elif rows and rows[0][0] == 1 and _is_header(rows[0][1], rows, known):
        log.info("%s: its first row %s is read as column names", csv_path, rows[0][1][:2])
        rows = rows[1:]
    one_hot_rows = multi and columns is not None  # `filename` and then each class the row marks, none included
    if not one_hot_rows and not named and any(c.strip() for _, row in rows for c in row[2:]):
        log.warning("%s: its rows have more than two columns; the file is the first and the class the second, the "
                    "others are not read", csv_path)
    separator = class_separator([row[1] for _, row in rows if len(row) > 1 and isinstance(row[1], str)]) \
        if multi and not one_hot_rows else None
    if multi and not one_hot_rows:
        log.info("%s: --multi-label: a row's classes are separated by %s", csv_path, repr(separator or "whitespace"))
    for lineno, row in rows:
        listed = len(row) > 1 and isinstance(row[1], tuple)  # a list of classes, none perhaps
        if not row[0].strip() or not one_hot_rows and not listed and (len(row) < 2 or not row[1].strip()):
            raise ConvertError(f"{csv_path}:{lineno}: expected 'filename,class', got {row!r}")
        name = row[0].strip()
        again = name in labels  # --multi-label: a row a class (a long table), the file's classes all its rows'
        if again and (not multi or one_hot_rows or split_column is not None and
                      split_column[1][lineno] != split_column[1][where[name]]):
            raise ConvertError(f"{csv_path}:{lineno}: {name!r} is listed again (first on line "
                               f"{where[name]}); each file has one label: remove the duplicate row"
                               + (" (its split differs)" if multi and not one_hot_rows else ""))
        cells = row[1:] if one_hot_rows else [c.strip() for c in row[1] if c.strip()] if listed else \
            split_classes(row[1], separator) if multi else [row[1].strip()]
        if not cells and not one_hot_rows and not listed:
            raise ConvertError(f"{csv_path}:{lineno}: {row[1]!r} names no class between its separators")
        for cls in cells:
            if has_control_characters(cls):
                raise ConvertError(f"{csv_path}:{lineno}: the class {cls!r} holds control characters "
                                   "(an escape sequence, a tab, a newline, a bidi override); class names are "
                                   "printed as text")
            first, first_line = class_lines.setdefault(same_name(cls), (cls, lineno))
            if first != cls:
                raise ConvertError(f"{csv_path}:{lineno}: the class {ascii(cls)} differs from {ascii(first)} (line "
                                   f"{first_line}) only in Unicode normalisation (NFC/NFD): the same name written "
                                   "two ways; write it one way")
        if again:
            labels[name] = tuple(dict.fromkeys((*labels[name], *cells)))
            continue
        labels[name], where[name] = tuple(dict.fromkeys(cells)) if multi else cells[0], lineno
    if not labels:
        raise ConvertError(f"labels file {csv_path} lists no 'filename,class' rows")
    named = {c for cells in labels.values() for c in cells} if multi else set(labels.values())
    if not multi:
        warn_if_a_class_each(str(csv_path), list(labels.values()), "rows", "is the second column the class?")
        _warn_if_combined(csv_path, named)
    splits = None if split_column is None else {name: split_column[1][line] for name, line in where.items()}
    return Labels(labels, tuple(columns[0]) if columns is not None else label_order(named), splits)


def _read_rows(csv_path: Path) -> tuple[str, str, list[tuple[int, list[str]]]]:
    """(the first line, the delimiter, the rows with their line numbers) of a labels file (`read_labels`)."""
    if not csv_path.is_file():
        raise ConvertError(f"labels file {csv_path} does not exist")
    try:
        with open(csv_path, newline="", encoding="utf-8-sig") as f:
            head = f.readline(1 << 16)
            delimiter = _delimiter(head)
            f.seek(0)
            rows = _counted_rows(f, csv_path) if COUNT.fullmatch(head.strip()) else _path_label_rows(f) \
                if delimiter == " " else [(lineno, row) for lineno, row in
                                          enumerate(map(_trimmed, csv.reader(f, delimiter=delimiter)), 1) if row]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:  # not UTF-8 text, a field past csv's size limit
        raise ConvertError(f"cannot read labels file {csv_path}: {exc}; save it as UTF-8 CSV") from exc
    return head, delimiter, rows


def _warn_if_combined(csv_path: Path, classes: set[str]) -> None:
    """Log a warning when a class is other classes joined (`Effusion|Mass` beside `Effusion`; `haze primary` beside
    `haze` and `primary`): a multi-label table read as one class a row, each combination a class of its own."""
    def joined(name: str, separator: str | None) -> bool:  # by a bar, semicolon or comma, or by spaces only
        parts = split_classes(name, separator)  # between classes that have a row of their own
        return len(parts) > 1 and (set(parts) <= classes if separator is None else bool(set(parts) & classes))

    combined = sorted(c for c in classes if any(joined(c, s) for s in ("|", ";", ",", None)))
    if combined:
        log.warning("%s: %d of its classes are other classes joined (%s): rows that name several classes, each "
                    "combination converted as a class of its own; convert with --multi-label for a class each",
                    csv_path, len(combined), ", ".join(repr(c) for c in combined[:3]))


def class_separator(cells: list[str]) -> str | None:
    """--multi-label: what separates the classes of a labels cell: a bar (ChestX-ray14's `Effusion|Mass`, its
    `No Finding` one class), a semicolon or a comma, the first of them any cell holds; else whitespace (None:
    Planet's `haze primary water`)."""
    return next((s for s in "|;," if any(s in c for c in cells)), None)


def split_classes(cell: str, separator: str | None) -> list[str]:
    """The classes a --multi-label cell names, in its order (none empty)."""
    return [c.strip() for c in (cell.split(separator) if separator else cell.split()) if c.strip()]


def image_stem(name: str) -> str | None:
    """An image file's path without its extension (`img1.jpg` -> `img1`, `part_1/img1.jpg` -> `part_1/img1`), None
    for any other name."""
    suffix = Path(name).suffix
    return name[:-len(suffix)] if suffix.lower() in EXTENSIONS else None


def known_names(files: list[str]) -> set[str]:
    """The names a row may give `files` by: each whole, and an image file's without its extension (NFC); the same of
    its name alone, without its folders."""
    names = {*files, *(n.rsplit("/", 1)[1] for n in files if "/" in n)}
    return {same_name(n) for n in names} | {same_name(s) for n in names if (s := image_stem(n)) is not None}


def listed_names(labels: dict[str, str], names: list[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The labels file's name for each file of `names` it lists: the same string; else the one name it lists that
    differs only in Unicode normalisation (a CSV typed on one system for files named on macOS), when no other file
    of the folder has that name too; else a name without extension (Kaggle's `id` column: `img1` for `img1.jpg`)
    when exactly one image file has that name; else, for a name without a folder, the one file in a folder of that
    name, whole or without its extension (Kaggle's NIH ChestX-ray14 keeps `images_001/images/00000001_000.png` for
    the CSV's `00000001_000.png`; HAM10000 two part folders for its `ISIC_0027419`). Also: each listed name that
    several files have (`img1.jpg` and `img1.png`; `a/x.jpg` and `b/x.jpg`), with those files: which one would be
    meant?"""
    listed = {n: n for n in names if n in labels}
    unmatched: dict[str, list[str]] = {}
    for n in labels:
        if n not in listed:
            unmatched.setdefault(same_name(n), []).append(n)
    if unmatched:
        files = Counter(same_name(n) for n in names)
        for n in names:
            twins = unmatched.get(same_name(n), ())
            if n not in listed and len(twins) == 1 and files[same_name(n)] == 1:
                listed[n] = twins[0]
    by_stem: dict[str, list[str]] = {}
    for n in names:
        stem = image_stem(n)
        if n not in listed and stem is not None:
            by_stem.setdefault(same_name(stem), []).append(n)
    ambiguous: dict[str, list[str]] = {}
    # a name with an image extension names its file whole
    _match([n for n in labels if image_stem(n) is None], by_stem, listed, ambiguous)
    # last: a name alone, the one file of that name in a folder (a name with a folder is no key of `by_base_name`)
    taken = set(listed.values())
    _match([n for n in labels if n not in taken and n not in ambiguous],
           by_base_name([n for n in names if n not in listed]), listed, ambiguous)
    return listed, ambiguous


def _match(rows: list[str], files: dict[str, list[str]], listed: dict[str, str],
           ambiguous: dict[str, list[str]]) -> None:
    """Each of `rows` takes the one file `files` holds under its name (NFC); several make the row ambiguous."""
    for n in rows:
        found = files.get(same_name(n), [])
        if len(found) == 1:
            listed[found[0]] = n
        elif found:
            ambiguous[n] = sorted(found)


def by_base_name(names: list[str]) -> dict[str, list[str]]:
    """The names of files in folders by the names a list may give them alone: the file's name whole and without
    its image extension (NFC)."""
    out: dict[str, list[str]] = {}
    for n in names:
        if "/" in n:
            base = n.rsplit("/", 1)[1]
            stem = image_stem(base)
            for key in {same_name(base), *(() if stem is None else (same_name(stem),))}:
                out.setdefault(key, []).append(n)
    return out


INTEGER = re.compile(r"-?(0|[1-9][0-9]{0,18})")  # up to 19 digits (int64's); a longer number is a name
MAX_CLASS_ID = 2**20  # class ids kept as labels up to this; larger ones are ordered by value instead


def label_order(names: set[str]) -> tuple[str, ...]:
    """The classes of a labels file, in label order. Class ids (every name a whole number from 0 to MAX_CLASS_ID)
    stay the labels they are: the classes are "0".."max", an id no row uses included, so "10" is label 10 (not the
    3rd name in string order) and a train and a val CSV converted apart agree even when val lacks an id. Other
    integers (up to 19 digits) are ordered by value; any other names are sorted as strings."""
    if names and all(INTEGER.fullmatch(n) for n in names):
        values = sorted(int(n) for n in names)
        if values[0] >= 0 and values[-1] <= MAX_CLASS_ID:
            return tuple(str(i) for i in range(values[-1] + 1))
        return tuple(str(v) for v in values)
    return tuple(sorted(names))
