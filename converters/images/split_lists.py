"""Splits given to a source of one split from list files (`fastdata convert SRC --split-list test=meta/test.txt`);
a fraction held out as val (`--val-fraction 0.1`) is converters/val_fraction.py's. Food-101's `meta/train.txt`
and `meta/test.txt` (`apple_pie/1005649`), Oxford-IIIT Pet's `annotations/trainval.txt` and `test.txt`
(`Abyssinian_100 1 1 1`), Pascal VOC's `ImageSets/Main/val.txt`. A line's first word names a file under SRC, whole
or without its extension, as a labels CSV's rows do. Files no list names stay in `--split`, unless a list
gives that split: then they are rejected as listed in none. A file two lists name is refused: one image in two
splits is a leak from train into its evaluation."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from converters.class_folders import same_name
from converters.images.labels_csv import by_base_name, image_stem, known_names, source_path
from converters.kind import Discovery
from converters.sample import Rejection
from fastdata.errors import ConvertError
from fastdata.manifest import check_split_name

log = logging.getLogger(__name__)
# the layouts of image files in one split
ONE_SPLIT = ("class", "flat+labels", "unlabeled", "name", "sun397", "caltech101", "omniglot")


def parse_split_lists(values: list[str] | tuple[str, ...]) -> tuple[tuple[str, Path], ...]:
    """(split, file) of each `SPLIT=FILE`; ValueError for a value without a split or a file, a split given twice."""
    out: list[tuple[str, Path]] = []
    for value in values:
        split, eq, path = value.partition("=")
        if not eq or not path:
            raise ValueError(f"--split-list {value!r}: expected SPLIT=FILE, as in test=meta/test.txt")
        split = check_split_name(split, option="--split-list")
        if any(s == split for s, _ in out):
            raise ValueError(f"--split-list names the split {split!r} twice: list its files in one file")
        out.append((split, Path(path).expanduser()))  # a shell leaves `~` after `=` as it is (zsh, dash)
    return tuple(out)


def _entries(path: Path, src: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line number, first word, as a path under `src`) of each line of a list file that is not empty or a `#`
    comment."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConvertError(f"split list {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConvertError(f"cannot read split list {path}: {exc}; save it as UTF-8 text") from exc
    return [(n, source_path(line.split()[0], src, known)) for n, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")]


def _resolver(names: list[str]):
    """A function from a list's entry to (the one file of `names` it names, or None and the several it could
    name): the name whole, in the other Unicode normalisation, or without its image extension; else, for a name
    without a folder, the one file of that name in a folder (Kaggle's NIH ChestX-ray14 lists `00000003_000.png` in
    `test_list.txt` for `images_001/images/00000003_000.png`)."""
    exact = set(names)
    bases = by_base_name(names)
    same: dict[str, list[str]] = {}
    stems: dict[str, list[str]] = {}
    for n in names:
        same.setdefault(same_name(n), []).append(n)
        if (stem := image_stem(n)) is not None:
            stems.setdefault(same_name(stem), []).append(n)

    def resolve(entry: str) -> tuple[str | None, list[str]]:
        if entry in exact:
            return entry, []
        found = same.get(same_name(entry), [])
        if len(found) != 1 and image_stem(entry) is None:  # a name with an image extension names its file whole
            found = stems.get(same_name(entry), [])
        if not found:  # (a name with a folder is no key: `bases` holds names alone)
            found = bases.get(same_name(entry), [])
        return (found[0], []) if len(found) == 1 else (None, sorted(found))

    return resolve


def apply_split_lists(d: Discovery, lists: tuple[tuple[str, Path], ...], default: str, src: Path) -> Discovery:
    """`d` with each listed file moved to its list's split (its identity row too), a row naming no file of the
    source rejected, and (when a list gives `default`) every file no list names rejected."""
    if not lists:
        return d
    _one_split(d, default, "--split-list")
    items = {it.rel: it for its in d.splits.values() for it in its}
    names = [*items, *(r.source for r in d.rejected)]
    resolve = _resolver(names)
    known = known_names(names)
    split_of: dict[str, str] = {}  # a file's name under SRC -> its split
    where: dict[str, str] = {}  # -> the list file and line that gave it
    rejected = list(d.rejected)
    for split, path in lists:
        for line, entry in _entries(path, src, known):
            name, several = resolve(entry)
            if name is None:
                why = (f"names several files ({', '.join(several)}): name the file whole" if several
                       else "no such file in the source")
                rejected.append(Rejection(split, entry, f"listed in split list {path.name}: {why}"))
            elif split_of.setdefault(name, split) != split:
                raise ConvertError(f"{path}:{line}: {name!r} is in the split {split!r} and, by {where[name]}, in "
                                   f"{split_of[name]!r}: an image in two splits leaks one into the other")
            else:
                where.setdefault(name, f"{path}:{line}")
    closed = any(split == default for split, _ in lists)
    splits: dict[str, list] = {}
    for rel, it in items.items():
        split = split_of.get(rel)
        if split is None and closed:
            rejected.append(Rejection(default, rel, "listed in no --split-list"))
            continue
        splits.setdefault(split or default, []).append(replace(it, split=split or default))
    rejected = [r if r.source not in split_of else replace(r, split=split_of[r.source]) for r in rejected]
    return _moved(d, splits, rejected)


def _one_split(d: Discovery, default: str, option: str) -> None:
    if d.layout not in ONE_SPLIT or set(d.splits) - {default}:
        raise ValueError(f"{option} gives splits to image files of one split; this source ({d.layout} layout) "
                         "has splits of its own")


def _moved(d: Discovery, splits: dict[str, list], rejected: list[Rejection]) -> Discovery:
    """`d` with the inputs of `splits` (each in its split) and their identity rows, and `rejected`."""
    taken = {it.rel: it.split for its in splits.values() for it in its}
    identity = [[taken[row[1]], *row[1:]] for row in d.identity if row[1] in taken]
    return replace(d, splits=splits, rejected=rejected, identity=identity)
