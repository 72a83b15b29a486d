"""The shapes a labels table can have beyond `filename,class` rows, each read into such rows: a `split` column
(`read_split_column`), one-hot class columns (`one_hot`), and Kaggle's boxes (`boxes`). Used by labels_csv.py."""

from __future__ import annotations

from pathlib import Path

from fastdata.errors import ConvertError
from fastdata.manifest import check_split_name

LABEL_HEADERS = {"class", "label", "category", "target"}  # a class column's usual names
VALID = {"true": "val", "1": "val", "false": "train", "0": "train"}  # fastai's `is_valid` column, read as splits


def read_split_column(csv_path: Path, rows: list[tuple[int, list[str]]]
                      ) -> tuple[list[tuple[int, list[str]]], dict[int, str]] | None:
    """(the rows without it, each data row's split by line) when the first row names a `split` column, third or
    later (`filename,class,split`: one conversion of a listed source makes every split, with one class list), or
    fastai's `is_valid` (True: val, False: train). None when it names neither. A data row without a valid split name
    is refused, naming its line."""
    if not rows:
        return None
    header = [c.strip().lower() for c in rows[0][1]]
    k = next((j for j, name in enumerate(header) if j >= 2 and name in ("split", "is_valid")), None)
    if k is None:
        return None
    out, splits = [(rows[0][0], rows[0][1][:k] + rows[0][1][k + 1:])], {}
    for lineno, row in rows[1:]:
        value = row[k].strip() if k < len(row) else ""
        if header[k] == "is_valid":
            if value.lower() not in VALID:
                raise ConvertError(f"{csv_path}:{lineno}: is_valid {value!r} is neither True nor False")
            value = VALID[value.lower()]
        try:
            splits[lineno] = check_split_name(value, option="split")
        except ValueError as exc:
            raise ConvertError(f"{csv_path}:{lineno}: {exc}") from None
        out.append((lineno, row[:k] + row[k + 1:]))
    return out, splits


def named_columns(csv_path: Path, rows: list[tuple[int, list[str]]], file_column: str | None,
                  label_column: str | None) -> list[tuple[int, list[str]]]:
    """The rows with the columns `--image-field` and `--label-field` name first (HAM10000's
    `lesion_id,image_id,dx,...`: image_id and dx), the others after them in their order; the first row names the
    columns, matched exactly, else whatever their case. Without one of the two, the file is the first column and
    the label the first other. ConvertError for a name the first row lacks, or one column named for both."""
    header = [c.strip() for c in rows[0][1]] if rows else []

    def index(name: str | None, default: int, option: str) -> int:
        if name is None:
            return default
        exact = [j for j, c in enumerate(header) if c == name] or [j for j, c in enumerate(header)
                                                                    if c.lower() == name.lower()]
        if len(exact) != 1:
            raise ConvertError(f"{csv_path}: {option} {name}: {'no' if not exact else 'more than one'} column of that "
                               f"name (its first row: {', '.join(header) or 'none'})")
        return exact[0]

    file = index(file_column, 0, "--image-field")
    label = index(label_column, 1 if file == 0 else 0, "--label-field")
    if file == label:
        raise ConvertError(f"{csv_path}: --image-field and --label-field name one column, {header[file]!r}")
    order = [file, label, *(j for j in range(len(header)) if j not in (file, label))]
    return [(n, [row[j] if j < len(row) else "" for j in order]) for n, row in rows]


HOT, COLD = ("1", "1.0"), ("0", "0.0")
SIGNED_COLD = ("-1", "-1.0")  # CelebA's attributes are 1 or -1: -1 is cold where no cell is 0


def _cold(rows: list[tuple[int, list[str]]]) -> tuple[str, ...] | None:
    """The cold values of a table of one-hot cells, 0 or (none being 0) -1; None when a cell is neither hot nor
    cold, or the table holds both 0 and -1."""
    cells = {c.strip() for _, r in rows[1:] for c in r[1:]}
    cold = SIGNED_COLD if cells & set(SIGNED_COLD) else COLD
    return cold if cells <= set(HOT + cold) else None


def one_hot(csv_path: Path, rows: list[tuple[int, list[str]]], *, multi: bool
            ) -> tuple[list[str], list[tuple[int, list[str]]]] | None:
    """(the class columns, the rows as `filename,class`) of a table of one-hot columns: a first row naming the
    file column and then two or more class columns, and rows holding a 1 in the column of their class and 0
    elsewhere (Kaggle's `image_id,healthy,multiple_diseases,rust,scab`; -1 for 0 in a table of no 0, as CelebA's
    attributes are 1 or -1). None for any other table. A row that marks
    no class or several (a multi-label table), or whose cells are not one a column, is refused, naming its line: an
    image has one class here. With `multi` (--multi-label) a row may mark any number of classes, none included: its
    row is `filename` and then each class it marks."""
    if not rows or len(rows[0][1]) < 3:
        return None
    header = [c.strip() for c in rows[0][1]]
    if header[1].lower() in LABEL_HEADERS or any(c in HOT + COLD + SIGNED_COLD for c in header[1:]) or \
            _cold(rows) is None:
        return None
    out = []
    for lineno, row in rows[1:]:
        if len(row) != len(header):
            raise ConvertError(f"{csv_path}:{lineno}: {len(row)} cells, where the first row names {len(header)} "
                               "columns (a file and one-hot class columns)")
        hot = [header[j] for j, c in enumerate(row) if j > 0 and c.strip() in HOT]
        if multi:
            out.append((lineno, [row[0], *hot]))
            continue
        if len(hot) != 1:
            raise ConvertError(f"{csv_path}:{lineno}: {row[0].strip()!r} is marked with {len(hot)} classes in the "
                               f"one-hot columns {hot or header[1:]}: an image has one class (a multi-label table "
                               "converts with --multi-label)")
        out.append((lineno, [row[0], hot[0]]))
    return header[1:], out


OPEN_IMAGES = ("imageid", "labelname", "confidence")  # oidv6-train-annotations-human-imagelabels.csv's columns


def image_labels(csv_path: Path, rows: list[tuple[int, list[str]]], *, multi: bool
                 ) -> tuple[list[str], list[tuple[int, list[str]]]] | None:
    """(the classes, a row an image: its file and then each class it has) of Open Images' image-level labels:
    `ImageID,Source,LabelName,Confidence`, a row an image and class; Confidence 1 says the class is there, 0 that
    it was checked and is not (such an image is still one of the source's, perhaps of no class). None for any other
    table. The classes are the labels (MIDs such as /m/01g317), sorted; a table without --multi-label is refused,
    naming the option, as a Confidence that is neither 0 nor 1 is, naming its line."""
    if not rows:
        return None
    header = [c.strip().lower() for c in rows[0][1]]
    if not all(name in header for name in OPEN_IMAGES):
        return None
    if not multi:
        raise ConvertError(f"{csv_path}: Open Images' image-level labels (ImageID, LabelName, Confidence): several "
                           "classes an image; convert with --multi-label")
    image, label, confidence = (header.index(name) for name in OPEN_IMAGES)
    found: dict[str, tuple[int, list[str]]] = {}
    for lineno, row in rows[1:]:
        if len(row) != len(header) or row[confidence].strip() not in HOT + COLD:
            raise ConvertError(f"{csv_path}:{lineno}: expected {len(header)} cells and a Confidence of 0 or 1, got "
                               f"{row!r}")
        _, classes = found.setdefault(row[image].strip(), (lineno, []))
        if row[confidence].strip() in HOT:  # (a class twice is one: read_labels keeps each once)
            classes.append(row[label].strip())
    names = sorted({c for _, classes in found.values() for c in classes})
    return names, [(lineno, [name, *classes]) for name, (lineno, classes) in found.items()]


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def boxes(csv_path: Path, rows: list[tuple[int, list[str]]]) -> list[tuple[int, list[str]]] | None:
    """The rows as `filename,class` of a table whose first row names a `PredictionString` column (Kaggle's
    detection answers: ImageNet's `LOC_val_solution.csv` has `n01751748 66 9 441 334 n01751748 ...`, a class and a
    box per object), each row's class the one word of its cell that is not a number; None for any other table.
    Read as classes, each cell was a class of its own: 50,000 of them. A row whose boxes have several classes, or
    none, is refused, naming its line: an image has one class here."""
    if not rows or len(rows[0][1]) < 2 or rows[0][1][1].strip().lower() != "predictionstring":
        return None
    out = []
    for lineno, row in rows[1:]:
        words = row[1].split() if len(row) > 1 else []
        classes = sorted({w for w in words if not _is_number(w)})
        if len(classes) != 1:
            raise ConvertError(f"{csv_path}:{lineno}: {row[0].strip()!r} has boxes of {len(classes)} classes "
                               f"{classes}: an image has one class here (a detection table of several classes "
                               "per image cannot be converted as classes)")
        out.append((lineno, [row[0], classes[0]]))
    return out
