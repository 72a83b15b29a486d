"""Names for class ids (`fastdata convert SRC --labels train.txt --classes classes.txt`): a labels file of ids
(OpenMMLab's `ann_file`, Places365's lists, a CSV of `0`..`K-1`) gives classes "0".."K-1"; the names file, one a
line as `fastdata index --classes` reads it, names them in that order."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from converters.class_folders import has_control_characters, same_name
from converters.kind import Discovery
from fastdata.errors import ConvertError


def read_names(path: Path) -> tuple[str, ...]:
    """The non-empty lines of `path`, stripped; ConvertError for a file that cannot be read, a name with control
    characters, or a name given twice (in either Unicode normalisation)."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise ConvertError(f"classes file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConvertError(f"cannot read classes file {path}: {exc}; save it as UTF-8 text") from exc
    names = class_names([(f"{path}:{n}", line) for n, line in enumerate(lines, 1) if line.strip()])
    if not names:
        raise ConvertError(f"classes file {path} names no class")
    return names


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


def name_ids(d: Discovery, path: Path | None) -> Discovery:
    """`d` with its class ids "0".."K-1" named by the file at `path` (None: `d` as it is). ValueError when its
    classes are names already; ConvertError when the file names fewer classes than there are ids. Names past the
    largest id are kept: a val list without the last classes gets train's label space."""
    if path is None:
        return d
    if not d.classes or d.classes != tuple(str(i) for i in range(len(d.classes))):
        shown = ", ".join(d.classes[:3]) or "none"
        raise ValueError(f"--classes names class ids 0..K-1; this source's classes are not ids ({shown})")
    names = read_names(path)
    if len(names) < len(d.classes):
        raise ConvertError(f"classes file {path} names {len(names)} classes; the labels go up to "
                           f"{len(d.classes) - 1}")
    return replace(d, classes=names, identity=[*d.identity, ["classes", list(names)]])
