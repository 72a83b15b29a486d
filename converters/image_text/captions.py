"""Reading a captions file: CSV, TSV, JSON Lines or Parquet with a file column and a caption column (several
rows per file allowed; a table's delimiter is found from its header: Flickr8k's `captions.txt`, Flickr30k's
`results.csv`), a COCO `captions_*.json` (its `images` + `annotations`), or Karpathy's split file
(`dataset_coco.json`: `images` with `sentences` and a `split`). Every row becomes `CaptionRow(path, caption, where,
split)`; `where` names the file and line for the rejections."""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from converters.metadata_files import column_rows, header_names
from converters.tree import split_of_folder
from fastdata.errors import ConvertError
from fastdata.json_text import BadJSON, parse_json

FILE_COLUMNS = ("file", "filename", "file_name", "filepath", "path", "image", "url_path", "image_name")
CAPTION_COLUMNS = ("caption", "text", "txt", "title", "comment")
FORMATS = (".csv", ".tsv", ".txt", ".jsonl", ".parquet", ".json")
DELIMITERS = (",", "\t", "|", ";")  # what a header row may be split by (Flickr30k's "| ", a European Excel's ";")


@dataclass(frozen=True)
class CaptionRow:
    path: str  # as the file gives it: relative to the source folder
    caption: str
    where: str  # "captions.csv:12": for rejection reasons
    split: str | None = None  # the split the file gives the image (Karpathy's), None: from its path


def normalize_caption(text: str) -> str:
    """A caption as stored: surrounding whitespace removed, line breaks made spaces (a `.txt` member holds one
    caption per line). Nothing else changes: the tokenizer sees what the user wrote."""
    return " ".join(text.strip().splitlines())


def _column(names: list[str], wanted: tuple[str, ...], what: str, where: Path) -> str:
    lower = {n.strip().lower(): n for n in names}
    for w in wanted:
        if w in lower:
            return lower[w]
    raise ConvertError(f"captions file {where} has columns {names}; it needs a {what} column named one of "
                       f"{list(wanted)}")


Fields = tuple[str | None, str | None]  # the file and caption columns --image-field and --caption-field name
NO_FIELDS: Fields = (None, None)


def _wanted(fields: Fields) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names a file column and a caption column may have (lower case): those `fields` give, else the usual."""
    return ((fields[0].strip().lower(),) if fields[0] else FILE_COLUMNS,
            (fields[1].strip().lower(),) if fields[1] else CAPTION_COLUMNS)


def _delimiter(path: Path, default: str, fields: Fields = NO_FIELDS) -> str:
    """The first of DELIMITERS that splits the header row into a file column and a caption column (Flickr30k's
    `results.csv` is split by "|", Flickr8k's `captions.txt` by commas), else `default`, a `.csv`'s comma or a
    `.tsv`'s tab (whose error then names the columns it found)."""
    files, captions = _wanted(fields)
    with open(path, newline="", encoding="utf-8-sig") as f:
        head = f.readline(1 << 16).rstrip("\r\n")
    for d in DELIMITERS:
        names = [n.strip().lower() for n in head.split(d)]
        if any(n in files for n in names) and any(n in captions for n in names):
            return d
    return default


def _table_rows(path: Path, delimiter: str, fields: Fields) -> list[CaptionRow]:
    delimiter = _delimiter(path, delimiter, fields)
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        file_col, cap_col = _pick(path, fields)(list(reader.fieldnames or []))
        return [CaptionRow(str(row.get(file_col) or ""), str(row.get(cap_col) or ""), f"{path.name}:{reader.line_num}")
                for row in reader]


def _pick(path: Path, fields: Fields) -> Callable[[list[str]], list[str]]:
    """What a captions table is read by: its file column and its caption column."""
    files, captions = _wanted(fields)
    return lambda names: [_column(names, files, "file", path), _column(names, captions, "caption", path)]


def _named_rows(path: Path, fields: Fields) -> list[CaptionRow]:
    """The rows of a JSON Lines or Parquet captions table (metadata_files.py)."""
    return [CaptionRow(_text(f), _text(c), f"{path.name}:{where}")
            for where, (f, c) in column_rows(path, _pick(path, fields), "captions file")]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _coco_rows(path: Path, data: dict[str, Any]) -> list[CaptionRow]:
    """COCO captions: `images` [{id, file_name}], `annotations` [{image_id, caption}]; rows in annotation order."""
    images = data.get("images")
    annotations = data.get("annotations")
    if not isinstance(images, list) or not isinstance(annotations, list):
        raise ConvertError(f"{path} is JSON but not a COCO captions file (it needs 'images' and 'annotations' "
                           "lists); for a table of captions use CSV, TSV, JSON Lines or Parquet")
    names: dict[int | str, str] = {}  # an id of another JSON type (a list, an object) names no image
    for im in images:
        if isinstance(im, dict) and isinstance(im.get("file_name"), str) and isinstance(im.get("id"), int | str):
            names[im["id"]] = im["file_name"]
    rows = []
    for i, ann in enumerate(annotations):
        ann = ann if isinstance(ann, dict) else {}
        image_id = ann.get("image_id")
        where = f"{path.name}:annotation {i} (image_id {repr(image_id)[:40]})"
        name = names.get(image_id, "") if isinstance(image_id, int | str) else ""
        rows.append(CaptionRow(name, _text(ann.get("caption")), where))
    return rows


# Karpathy's restval: train2014 and val2014 images his split put in neither val nor test; "the Karpathy train split"
# (113,287 COCO images) is train + restval
KARPATHY_SPLITS = {"restval": "train"}


def split_named(value: str) -> str | None:
    """The split a captions file or table names: a split folder's name (tree.py), or Karpathy's `restval` (train);
    None for any other value."""
    return split_of_folder(value) or KARPATHY_SPLITS.get(value)


def _is_karpathy(data: dict[str, Any]) -> bool:
    """Karpathy's split files (`dataset_coco.json`, `dataset_flickr8k.json`, `dataset_flickr30k.json`): `images`
    of `filename`s with `sentences`, and no `annotations`."""
    images = data.get("images")
    return "annotations" not in data and isinstance(images, list) and any(
        isinstance(im, dict) and "sentences" in im for im in images[:10])


def _karpathy_rows(path: Path, data: dict[str, Any]) -> list[CaptionRow]:
    """A row per sentence (`raw`) of each image, in file order, with the image's `split`; the path is
    `filepath/filename` (COCO's `val2014/COCO_val2014_...jpg`) or `filename` (Flickr's). An image without
    sentences is one row without caption (an empty caption, rejected)."""
    rows = []
    for i, im in enumerate(data["images"]):
        im = im if isinstance(im, dict) else {}
        name, folder = _text(im.get("filename")), _text(im.get("filepath"))
        where = f"{path.name}:image {i} ({name[:60]})"
        split = im.get("split") if isinstance(im.get("split"), str) else None  # none: the path's split
        sentences = im.get("sentences") if isinstance(im.get("sentences"), list) else []
        for sentence in sentences or [{}]:
            raw = sentence.get("raw") if isinstance(sentence, dict) else None
            rows.append(CaptionRow(f"{folder}/{name}" if folder and name else name, _text(raw), where, split))
    return rows


def _first_names(path: Path, fields: Fields) -> list[str]:
    """The column names of a table as its first line or footer gives them (`header_names`), a CSV/TSV header split by
    the first of DELIMITERS that finds both columns (what `read_captions` reads them from)."""
    suffix = path.suffix.lower()
    return header_names(path, "" if suffix in (".parquet", ".jsonl") else
                        _delimiter(path, "\t" if suffix == ".tsv" else ",", fields))


def names_files_and_captions(path: Path, fields: Fields = NO_FIELDS) -> bool:
    """Whether the table at `path` (CSV, TSV, JSON Lines, Parquet) has a file column and a caption column (those
    `fields` name, else the usual), judged from its first line or footer only (what `--kind auto` may read)."""
    files, captions = _wanted(fields)
    try:
        names = [n.strip().lower() for n in _first_names(path, fields)]
    except Exception:  # noqa: BLE001 - detection only: what csv, JSON or pyarrow cannot read is said when it is read
        return False
    return any(n in files for n in names) and any(n in captions for n in names)


def read_captions(path: Path | str, fields: Fields = NO_FIELDS) -> list[CaptionRow]:
    """Every row of a captions file, in file order; ConvertError for a file that cannot be read as one. `fields`:
    the file and caption columns of a table by name (--image-field, --caption-field; a COCO or Karpathy JSON file
    has none to name)."""
    path = Path(path)
    if not path.is_file():
        raise ConvertError(f"captions file {path} does not exist")
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".txt"):  # Flickr8k's captions.txt is a CSV
            return _table_rows(path, ",", fields)
        if suffix == ".tsv":
            return _table_rows(path, "\t", fields)
        if suffix in (".jsonl", ".parquet"):
            return _named_rows(path, fields)
        if suffix == ".json" and fields != NO_FIELDS:
            raise ConvertError(f"--image-field and --caption-field name the columns of a captions table; {path} is "
                               "JSON (COCO's or Karpathy's), whose fields are fixed")
        if suffix == ".json":
            try:
                data = parse_json(path.read_text(encoding="utf-8-sig"))
            except BadJSON as exc:
                raise ConvertError(f"captions file {path} is not valid JSON: {exc}") from exc
            if not isinstance(data, dict):
                raise ConvertError(f"{path} is JSON but not a COCO captions file (an object with 'images' and "
                                   "'annotations')")
            return _karpathy_rows(path, data) if _is_karpathy(data) else _coco_rows(path, data)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConvertError(f"cannot read captions file {path}: {exc}") from exc
    raise ConvertError(f"captions file {path} has extension {suffix!r}; use one of {list(FORMATS)}")
