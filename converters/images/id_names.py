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
    names: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(lines, 1):
        name = line.strip()
        if not name:
            continue
        if has_control_characters(name):
            raise ConvertError(f"{path}:{lineno}: the class {name!r} holds control characters (an escape sequence, "
                               "a tab, a bidi override); class names are printed as text")
        first = seen.setdefault(same_name(name), lineno)
        if first != lineno:
            raise ConvertError(f"{path}:{lineno}: the class {name!r} is named again (first on line {first}): "
                               "two ids would have one name")
        names.append(name)
    if not names:
        raise ConvertError(f"classes file {path} names no class")
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
