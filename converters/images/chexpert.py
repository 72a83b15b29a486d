"""CheXpert as Stanford hands it out (`CheXpert-v1.0-small/` or `CheXpert-v1.0/`): `train.csv` and `valid.csv`
beside `train/` and `valid/`, a row an X-ray: `Path` (`CheXpert-v1.0-small/train/patient00001/study1/
view1_frontal.jpg`, from the folder above), `Sex`, `Age`, `Frontal/Lateral`, `AP/PA`, then 14 observations, each
1.0 (positive), 0.0 (negative), -1.0 (uncertain) or blank (not mentioned).

- The classes are the columns every value of which is one of those (the 14 observations: `No Finding` ...
  `Support Devices`), in the file's order; the other columns are the X-ray's description, not classes. An image's
  classes are its positives; blank and 0.0 are absent; -1.0 follows `--uncertain`: `ones` present, `zeros` absent
  (the CheXpert paper's U-Ones and U-Zeros). A -1.0 without `--uncertain` stops the conversion, naming the option.
- `train.csv` is the train split, `valid.csv` the val split; both must have the same observation columns. A path
  written from the folder above (its first part no folder of SRC) is read without that part.
- A row without a path, a path twice, a row of another number of cells, or a file without a `Path` column stops the
  conversion, saying where.
"""

from __future__ import annotations

import csv
import gzip
import zlib
from pathlib import Path

from converters.images.labels_csv import Labels
from fastdata.errors import ConvertError

FILES = {"train.csv": "train", "valid.csv": "val"}
PATH = "Path"
NO_FINDING = "No Finding"  # an observation every CheXpert file has
MARKS = {"1.0": True, "1": True, "0.0": False, "0": False, "": False, "-1.0": None, "-1": None}  # None: uncertain
UNCERTAIN = ("ones", "zeros")
NEEDS_OPTION = ("{src} is laid out as CheXpert (train.csv of a Path column and observations beside train/): an "
                "X-ray has several findings; --multi-label converts them so, --unlabeled converts the X-rays without "
                "labels")


def found(src: Path) -> list[tuple[str, Path]]:
    """(split, labels file) of each of CheXpert's files under `src` whose first column is `Path` and which has a
    `No Finding` column; [] when `src` is not laid out as CheXpert (`train.csv` of that header beside `train/`)."""
    if not (src / "train").is_dir():
        return []
    out = []
    for name, split in FILES.items():
        try:
            with open(src / name, newline="", encoding="utf-8-sig") as f:
                head = next(csv.reader(f), [])
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
        if head[:1] == [PATH] and NO_FINDING in head:  # CheXpert's columns, not any table of paths
            out.append((split, src / name))
    return out if any(split == "train" for split, _ in out) else []


def read_table(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(the header, the numbered rows) of a CSV, gzip-compressed where its name ends in `.gz`; ConvertError for one
    that cannot be read, is empty, or has a row of another number of cells than its header."""
    try:
        with (gzip.open(path, "rt", newline="", encoding="utf-8-sig") if path.name.endswith(".gz") else
              open(path, newline="", encoding="utf-8-sig")) as f:
            rows = [(n, row) for n, row in enumerate(csv.reader(f), 1) if row]
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, csv.Error) as exc:
        raise ConvertError(f"cannot read {path}: {exc}") from exc
    if not rows:
        raise ConvertError(f"{path}: an empty file")
    header = rows[0][1]
    for n, row in rows[1:]:
        if len(row) != len(header):
            raise ConvertError(f"{path}:{n}: {len(row)} cells, where the first row names {len(header)} columns")
    return header, rows[1:]


def observations(path: Path, header: list[str], rows: list[tuple[int, list[str]]], first: int) -> list[int]:
    """The columns from `first` on whose every value is 1.0, 0.0, -1.0 or blank: the observations."""
    kept = [j for j in range(first, len(header)) if all(row[j].strip() in MARKS for _, row in rows)]
    if not kept:
        raise ConvertError(f"{path}: no column of observations (1.0, 0.0, -1.0 or blank in every row)")
    return kept


def findings(path: Path, n: int, header: list[str], row: list[str], kept: list[int],
             uncertain: str | None) -> tuple[str, ...]:
    """The observations row `n` finds: its positives, and its uncertain ones with `--uncertain ones`; ConvertError
    for an uncertain one without `--uncertain`."""
    classes = []
    for j in kept:
        mark = MARKS[row[j].strip()]
        if mark is None and uncertain is None:
            raise ConvertError(f"{path}:{n}: {header[j]!r} is {row[j].strip()} (uncertain): --uncertain ones "
                               "counts an uncertain finding as present, --uncertain zeros as absent")
        if mark or mark is None and uncertain == "ones":
            classes.append(header[j])
    return tuple(classes)


def _read(path: Path, uncertain: str | None) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """(the observation columns, each row's path -> its classes) of one of CheXpert's labels files."""
    header, rows = read_table(path)
    kept = observations(path, header, rows, first=1)
    out: dict[str, tuple[str, ...]] = {}
    for n, row in rows:
        name = row[0].strip()
        if not name:
            raise ConvertError(f"{path}:{n}: a row without a path")
        if name in out:
            raise ConvertError(f"{path}:{n}: {name!r} is listed again: each X-ray has one row")
        out[name] = findings(path, n, header, row, kept, uncertain)
    return tuple(header[j] for j in kept), out


def _under(src: Path, name: str, folders: dict[str, bool]) -> str:
    """A row's path as a path under `src`: without its first part where that names no folder of `src` (the
    dataset's own folder, as CheXpert's paths are written). `folders`: whether each first part is one, as found."""
    first, _, rest = name.partition("/")
    if first not in folders:
        folders[first] = (src / first).is_dir()
    return rest if rest and not folders[first] else name


def read_chexpert(src: Path, files: list[tuple[str, Path]], uncertain: str | None) -> Labels:
    """The classes of the X-rays each labels file lists, by their path under `src`, with their splits."""
    classes: tuple[str, ...] | None = None
    rows: dict[str, tuple[str, ...]] = {}
    splits: dict[str, str] = {}
    folders: dict[str, bool] = {}
    for split, path in files:
        own, found_rows = _read(path, uncertain)
        if classes is not None and own != classes:
            raise ConvertError(f"{path.name}: its observations are not those of {files[0][1].name}: convert them "
                               "apart")
        classes = own
        for name, its in found_rows.items():
            under = _under(src, name, folders)
            if under in rows:
                raise ConvertError(f"{path.name}: {name!r} is listed again (in {files[0][1].name} too)")
            rows[under], splits[under] = its, split
    return Labels(rows, classes or (), splits)
