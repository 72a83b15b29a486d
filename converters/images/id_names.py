"""Names for classes given as ids or codes, and the classes of the labels for classes that are names
(`fastdata convert SRC --labels train.txt --classes classes.txt`).

- Ids: a labels file of ids (OpenMMLab's `ann_file`, Places365's lists, a CSV of `0`..`K-1`) gives classes
  "0".."K-1"; the names file names them, one a line in that order as `fastdata index --classes` reads it, or by
  `name id` lines (Places365's `categories_places365.txt`: `/a/airfield 0`).
- Codes: classes that are codes (Open Images' MIDs `/m/01g317`, WordNet ids `n01440764`) are named by a file of
  `code,name` lines (Open Images' `oidv7-class-descriptions.csv`; `code<TAB>name`, as Tiny ImageNet's `words.txt`;
  `code name`, as ImageNet's `LOC_synset_mapping.txt`); lines of other codes are not read. The labels stay as they
  are; only their names change.
- Names: classes that are names (class folders) take their places among the classes the file lists, a name a line,
  as their labels (ImageNet-R's 200 folders among ImageNet's 1000 WordNet ids: a label is the ImageNet index); the
  classes are the file's, those of no input included. A file that lists some of them only is refused.
"""

from __future__ import annotations

import csv
import logging
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from converters.class_folders import has_control_characters, same_name
from converters.images.class_order import relabeled
from converters.kind import Discovery
from fastdata.errors import ConvertError

log = logging.getLogger(__name__)
INTEGER = re.compile(r"0|[1-9][0-9]{0,6}")  # a class id at the end of a `name id` line


def _lines(path: Path) -> list[tuple[str, str]]:
    """(where, line) of each non-blank line of `path`; ConvertError for a file that cannot be read."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise ConvertError(f"classes file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConvertError(f"cannot read classes file {path}: {exc}; save it as UTF-8 text") from exc
    return [(f"{path}:{n}", line) for n, line in enumerate(lines, 1) if line.strip()]


def read_names(path: Path) -> tuple[str, ...]:
    """The names of the ids 0, 1, ... that `path` gives: its non-empty lines, stripped, or where every line is
    `name id` and the ids are 0..K-1 (in any order), each line's name at its id. ConvertError for a file that cannot
    be read, a name with control characters, or a name given twice (in either Unicode normalisation)."""
    lines = _lines(path)
    if not lines:
        raise ConvertError(f"classes file {path} names no class")
    ids = [line.rsplit(None, 1) for _, line in lines]
    if all(len(w) == 2 and INTEGER.fullmatch(w[1]) for w in ids) and \
            sorted(int(w[1]) for w in ids) == list(range(len(ids))):
        by_id = sorted(zip(ids, lines), key=lambda x: int(x[0][1]))
        named = [(where, w[0]) for w, (where, _) in by_id]
        if len({same_name(n.strip()) for _, n in named}) == len(named):  # else the numbers belong to the names
            return class_names(named)
    return class_names(lines)


def _code_and_name(line: str, codes: dict[str, str]) -> tuple[str, str] | None:
    """(the class, its name) of a `code,name` line (a CSV row), or of a `code name` line (`code<TAB>name` too) whose
    code is one of `codes` (NFC name -> the class); None for any other line (a header, a class the source does not
    have)."""
    cells = next(csv.reader([line]))  # (a line is not blank)
    words = line.split(None, 1) + [""]
    for code, name in ((cells[0], ",".join(cells[1:])), (words[0], words[1])):
        found = codes.get(same_name(code.strip()))
        if found is not None and name.strip():  # a code alone names nothing (a list of the source's own names)
            return found, name
    return None


def name_codes(classes: tuple[str, ...], path: Path) -> tuple[str, ...] | None:
    """The names `path` gives `classes` (codes) by its `code,name` lines, in the classes' order; None when no line
    names one of them. ConvertError for a class it does not name or names twice; a name two classes share is
    given each with its code after it, with a warning."""
    codes = {same_name(c): c for c in classes}
    named: dict[str, tuple[str, str]] = {}  # class -> (where, name)
    for where, line in _lines(path):
        got = _code_and_name(line, codes)
        if got is None:
            continue
        first = named.setdefault(got[0], (where, got[1]))
        if first[1].strip() != got[1].strip():
            raise ConvertError(f"{where}: {got[0]!r} is named again (first at {first[0]}): which name is meant?")
    if not named:
        return None
    missing = [c for c in classes if c not in named]
    if missing:
        raise ConvertError(f"classes file {path} names {len(named)} of the {len(classes)} classes; not "
                           f"{', '.join(missing[:5])}{f' and {len(missing) - 5} more' if len(missing) > 5 else ''}")
    shared = Counter(same_name(n.strip()) for _, n in named.values())
    twice = [c for c in classes if shared[same_name(named[c][1].strip())] > 1]
    if twice:
        log.warning("%s: %d classes share a name with another (%s): each is named with its code after it", path,
                    len(twice), ", ".join(f"{c} {named[c][1].strip()!r}" for c in twice[:4]))
    return class_names([(named[c][0], f"{named[c][1].strip()} ({c})" if c in twice else named[c][1])
                        for c in classes])


def class_names(named: list[tuple[str, str]]) -> tuple[str, ...]:
    """The names of (where, name) pairs, stripped, in order; ConvertError naming `where` for a blank name, one with
    control characters, or one given twice (in either Unicode normalisation): labels would then be named wrong."""
    names: list[str] = []
    seen: dict[str, str] = {}
    for where, given in named:
        name = given.strip()
        if not name:
            raise ConvertError(f"{where}: a class name is blank")
        if has_control_characters(name):
            raise ConvertError(f"{where}: the class {name!r} holds control characters (an escape sequence, "
                               "a tab, a bidi override); class names are printed as text")
        first = seen.setdefault(same_name(name), where)
        if first != where:
            raise ConvertError(f"{where}: the class {name!r} is named again (first at {first}): "
                               "two ids would have one name")
        names.append(name)
    return tuple(names)


def _label_space(d: Discovery, path: Path) -> Discovery | None:
    """`d` labelled by the places of its classes among those `path` lists, a name a line (ImageNet-R's 200 class
    folders among ImageNet's 1000 classes, so that a label is the class's ImageNet index); None when it lists none
    of them (or `d` has no class). ConvertError when it lists some only."""
    listed = read_names(path)
    named = {same_name(c) for c in listed}
    missing = [c for c in d.classes if same_name(c) not in named]
    if len(missing) == len(d.classes):
        return None
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise ConvertError(f"classes file {path} lists {len(listed)} classes, but not {', '.join(missing[:5])}{more} "
                           "of this source: the labels are the places of its classes there")
    spelled = {same_name(c): c for c in d.classes}  # a name the file writes in the other Unicode normalisation
    classes = tuple(spelled.get(same_name(c), c) for c in listed)
    log.info("--classes %s: each label is its class's place among the %d classes it lists (%d of them not this "
             "source's)", path, len(listed), len(listed) - len(d.classes))
    return relabeled(d, classes, ["classes", list(classes)])


def name_ids(d: Discovery, path: Path | None) -> Discovery:
    """`d` with its classes named by the file at `path` (None: `d` as it is): ids "0".."K-1" by `read_names`, codes
    by `name_codes`; classes that are names, by their places among those the file lists (`_label_space`). ValueError
    when it has no class, or its classes are neither ids nor codes nor names the file names;
    ConvertError when the file names fewer classes than there are ids. Names past the largest id are kept: a val
    list without the last classes gets train's label space."""
    if path is None:
        return d
    ids = bool(d.classes) and d.classes == tuple(str(i) for i in range(len(d.classes)))
    names = None if ids else name_codes(d.classes, path)
    if names is None and not ids:
        space = _label_space(d, path)
        if space is not None:
            return space
        has = f"'s classes are not ids, and {path} names none of them ({', '.join(d.classes[:3])})" if d.classes \
            else " has no class"
        raise ValueError(f"--classes names class ids 0..K-1, codes by lines of `code,name`, or the classes of the "
                         f"labels, a name a line; this source{has}")
    if names is None:
        names = read_names(path)
        if len(names) < len(d.classes):
            raise ConvertError(f"classes file {path} names {len(names)} classes; the labels go up to "
                               f"{len(d.classes) - 1}")
    return replace(d, classes=names, identity=[*d.identity, ["classes", list(names)]])
