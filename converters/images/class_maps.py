"""The files that name the classes of datasets kept as arrays, read beside their images: EMNIST's
`emnist-NAME-mapping.txt` (torchvision's `EMNIST/raw/`, from EMNIST's `gzip.zip`) and Kuzushiji's
`NAME_classmap.csv` (`kmnist_classmap.csv`, `k49_classmap.csv`, from the KMNIST site). Without them the classes of
these datasets are their ids, `0` ... the largest.

- EMNIST: a line per class, `ID CODE` or `ID UPPER LOWER` (the letters' classes hold both cases: `1 65 97`), the
  codes Unicode (ASCII) code points. A class is named by its last code, as torchvision's `EMNIST.classes` names
  them (`letters`: `a` ... `z`); the one id a mapping may leave out (`letters` starts at 1) is `N/A`, as there.
- Kuzushiji: a CSV of `index,codepoint,char` (`0,U+304A,お`); a class is named by its character, which must be
  the code point the row gives. KMNIST's map names the classes of the IDX files of the KMNIST site's MNIST format
  too (`train-images-idx3-ubyte.gz`, no dataset name of their own), and `k49_classmap.csv` those of
  `k49-train-imgs.npz`, ...
- A map that cannot be read, or gives an id or a name twice, is an error that names the file and line: a class
  named wrong would label every image of it wrong.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from converters.class_folders import has_control_characters, same_name
from converters.table_files import TableError

EMNIST = re.compile(r"^(?P<family>emnist-[a-z]+)-mapping\.txt$", re.IGNORECASE)
KUZUSHIJI = re.compile(r"^(?P<family>[a-z0-9]+)_classmap\.csv$", re.IGNORECASE)
KMNIST = "kmnist"  # the family whose map also names IDX files without a dataset name (the KMNIST site's)
HEADER = ["index", "codepoint", "char"]
MAX_BYTES = 1 << 20  # a map's size (K49's: about 1 KB)
MAX_ID = 9999  # class ids a map may give
GAP = "N/A"  # the name of the one id a map may leave out, as torchvision's EMNIST('letters').classes[0]


def family(path: Path) -> str | None:
    """The dataset a class map at `path` names the classes of (`emnist-letters`, `k49`, lower case), or None for a
    file that is no class map."""
    m = EMNIST.match(path.name) or KUZUSHIJI.match(path.name)
    return m["family"].lower() if m else None


def for_idx(images: Path, stem: str) -> Path | None:
    """The class map beside the IDX images file at `images`, whose name's stem is `stem` (`emnist-letters-train`,
    `train`, `t10k`), or None: EMNIST's mapping of its dataset, or KMNIST's map beside files without a name of
    their own."""
    words = stem.lower().split("-")
    if words[0] == "emnist" and len(words) > 2:
        return _file(images.with_name(f"emnist-{words[1]}-mapping.txt"))
    if len(words) == 1:  # train, t10k
        return _file(images.with_name(f"{KMNIST}_classmap.csv"))
    return None


def for_arrays(images: Path, name: str) -> Path | None:
    """The class map beside the NumPy images file at `images`, whose dataset's name is `name` (`k49` of
    `k49-train-imgs.npz`; "" for none), or None."""
    return _file(images.with_name(f"{name}_classmap.csv")) if name else None


def _file(path: Path) -> Path | None:
    """`path`, or the file beside it named so in other letter cases; None where there is none."""
    if path.is_file():
        return path
    lower = path.name.lower()
    try:
        return next((p for p in path.parent.iterdir() if p.name.lower() == lower and p.is_file()), None)
    except OSError:
        return None


def read(path: Path) -> tuple[str, ...]:
    """The names of the class ids 0, 1, ... that the class map at `path` gives; TableError naming the file (and
    line) where it cannot be read, or would name a class wrong."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise TableError(f"{path.name}: a class map of more than {MAX_BYTES} bytes")
        text = path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TableError(f"{path.name}: cannot be read as UTF-8 text: {exc}") from exc
    named = _emnist(path.name, text) if EMNIST.match(path.name) else _kuzushiji(path.name, text)
    return _names(path.name, named)


def _emnist(file: str, text: str) -> dict[int, tuple[int, str]]:
    """{id: (line, name)} of EMNIST's `ID CODE [CODE]` lines."""
    named = {}
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        if len(words) not in (2, 3) or not all(w.isascii() and w.isdigit() for w in words):
            raise TableError(f"{file}:{number}: not `ID CODE` or `ID UPPER LOWER` (whole numbers): {line[:80]!r}")
        named[_id(file, number, int(words[0]), named)] = (number, _char(file, number, int(words[-1])))
    return named


def _kuzushiji(file: str, text: str) -> dict[int, tuple[int, str]]:
    """{id: (line, name)} of Kuzushiji's `index,codepoint,char` rows."""
    rows = csv.reader(io.StringIO(text))
    if next(rows, None) != HEADER:
        raise TableError(f"{file}: its first line is not the header {','.join(HEADER)}")
    named = {}
    for row in rows:
        number = rows.line_num
        if not row:
            continue
        if len(row) != 3 or not (row[0].isascii() and row[0].isdigit()) or \
                not re.fullmatch(r"U\+[0-9A-Fa-f]{4,6}", row[1]):
            raise TableError(f"{file}:{number}: not `index,U+CODE,character`: {','.join(row)[:80]!r}")
        char = _char(file, number, int(row[1][2:], 16))
        if row[2] != char:
            raise TableError(f"{file}:{number}: the character {row[2]!r} is not {row[1]} ({char!r})")
        named[_id(file, number, int(row[0]), named)] = (number, char)
    return named


def _id(file: str, number: int, value: int, named: dict[int, tuple[int, str]]) -> int:
    if value > MAX_ID:
        raise TableError(f"{file}:{number}: the class id {value} is over {MAX_ID}")
    if value in named:
        raise TableError(f"{file}:{number}: the class id {value} again (first at line {named[value][0]})")
    return value


def _char(file: str, number: int, code: int) -> str:
    """The character of the code point `code`, which must be one that prints."""
    if not 0x20 <= code <= 0x10FFFF or 0xD800 <= code <= 0xDFFF or has_control_characters(chr(code)) or \
            not chr(code).strip():
        raise TableError(f"{file}:{number}: the code {code} is no character that prints")
    return chr(code)


def _names(file: str, named: dict[int, tuple[int, str]]) -> tuple[str, ...]:
    """The names of ids 0 ... the largest; the one id left out (EMNIST's letters start at 1) named GAP."""
    if not named:
        raise TableError(f"{file}: names no class")
    gaps = [i for i in range(max(named) + 1) if i not in named]
    if len(gaps) > 1:
        raise TableError(f"{file}: the ids {', '.join(map(str, gaps[:5]))} have no line: which classes are they?")
    names = tuple(named[i][1] if i in named else GAP for i in range(max(named) + 1))
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        first = seen.setdefault(same_name(name), i)
        if first != i:
            raise TableError(f"{file}: the ids {first} and {i} are both named {name!r}")
    return names
