"""What a class name may be, and the class folders of a source tree: names are text in the manifest that training
scripts print, so bytes that are not UTF-8, control characters and bidi overrides are refused (`class_folder_problem`,
`has_control_characters`), and two folders that show as one name (NFC and NFD, `same_name`) are refused both
(`ClassFolders`). Used by every kind with class folders, and by the labels CSV for its class names."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

from converters.walk import display, is_folder, listed

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")  # reorder how text shows


def has_control_characters(text: str) -> bool:
    """Whether `text` holds a control character (an escape sequence, a tab, a newline) or a bidi embedding,
    override or isolate: not for a name that is printed as text."""
    return any(unicodedata.category(ch) == "Cc" or ch in BIDI_CONTROLS for ch in text)


def class_folder_problem(name: str) -> str | None:
    """Why a folder named `name` cannot be a class (None: it can). Class names go into the manifest as text and
    are printed by training scripts: bytes that are not UTF-8 (they stopped the conversion with a UnicodeEncodeError
    when the manifest was written), control characters (a terminal escape sequence, a newline) and the bidi
    embeddings, overrides and isolates (a name shown in another order than it is) are refused. Other format
    characters stay: a zero-width non-joiner is part of Persian words."""
    if name != display(name):
        return "class folder name is not valid UTF-8: rename the folder"
    if has_control_characters(name):
        return ("class folder name holds control characters (an escape sequence, a tab, a newline, a bidi override): "
                "rename the folder")
    return None


def same_name(name: str) -> str:
    """The key under which two names are the same text: their NFC form. macOS writes names decomposed (NFD: `u`
    and a combining diaeresis), most other systems composed (NFC: `ü`); both show as the same word."""
    return unicodedata.normalize("NFC", name)


@dataclass(frozen=True)
class ClassFolders:
    """The class folder names of a source and which of them can be classes. A name is refused for what
    `class_folder_problem` says, or when another class folder differs from it only in Unicode normalisation (two
    folders that show as the same name: which one would a label mean?)."""

    found: tuple[str, ...]
    problems: dict[str, str]

    @classmethod
    def of(cls, names: list[str] | tuple[str, ...]) -> ClassFolders:
        problems = {n: p for n in names if (p := class_folder_problem(n)) is not None}
        twins: dict[str, list[str]] = {}
        for n in names:
            if n not in problems:
                twins.setdefault(same_name(n), []).append(n)
        for group in twins.values():
            for n in group if len(group) > 1 else ():
                others = ", ".join(ascii(o) for o in group if o != n)
                problems[n] = (f"class folder name {ascii(n)} differs from {others} only in Unicode normalisation "
                               "(NFC/NFD): the same name twice; merge or rename the folders")
        return cls(tuple(names), problems)

    @property
    def classes(self) -> tuple[str, ...]:
        """The names that can be classes, in their order; the others are rejected by the walk that meets them."""
        return tuple(n for n in self.found if n not in self.problems)

    def why_not(self, name: str) -> str:
        """Why the files of a class folder named `name`, outside the classes, are rejected: its name cannot be a
        class, or (val/test) train lacks it."""
        problem = self.problems.get(name) or class_folder_problem(name)
        if problem is not None:
            return problem
        twin = next((c for c in self.classes if same_name(c) == same_name(name)), None)
        if twin is not None:
            return (f"class folder {ascii(name)} is not among train's classes; {ascii(twin)} is, the same name in "
                    "another Unicode normalisation (NFC/NFD): rename the folder")
        return f"class folder {name!r} is not among train's classes"


def class_names(folders: list[Path], *, follow: bool) -> tuple[str, ...]:
    """Sorted names of the visible subfolders of `folders` (ImageFolder-style class folders; with `follow=False`,
    links to folders are not among them); `ClassFolders` says which can be classes."""
    return tuple(sorted({c for f in folders for c in listed(f) if is_folder(f / c, follow=follow)}))


def split_classes(src: Path, splits: dict[str, str], *, follow: bool) -> tuple[str, ...]:
    """The classes of a `SRC/<split>/<class>/` tree (`splits`: folder -> split): train's class folders, or every
    split's without train."""
    train = [f for f, s in splits.items() if s == "train"]
    return class_names([src / f for f in (train or list(splits))], follow=follow)
