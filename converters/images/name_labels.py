"""Classes from file names (`fastdata convert SRC --label-pattern REGEX`, fastai's `from_name_re`): Oxford-IIIT
Pet's `Abyssinian_100.jpg` (`^(.+)_\\d+\\.jpg$`), Kaggle's dogs-vs-cats `cat.0.jpg` (`^(\\w+)\\.`). The class is
the text of the pattern's group named `label`, else of its first group, searched for in the file's name."""

from __future__ import annotations

import re
import unicodedata

from converters.class_folders import has_control_characters
from converters.walk import display

NO_MATCH = "file name does not match --label-pattern"


def compile_label_pattern(pattern: str) -> re.Pattern[str]:
    """The pattern, compiled; ValueError when it is no regular expression or has no group."""
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"--label-pattern {pattern!r} is no regular expression: {exc}") from None
    if rx.groups == 0:
        raise ValueError(f"--label-pattern {pattern!r} has no group: the class is the text of its first group (or "
                         r"of the group named label), as in '^(.+)_\d+\.jpg$'")
    return rx


def class_of_name(rx: re.Pattern[str], name: str) -> tuple[str | None, str | None]:
    """(the class, None) of a file named `name`, or (None, why it has none): the name does not match, the group
    matched nothing, or its text cannot be a class name (bytes that are not UTF-8, control characters). The class
    is in NFC: a name macOS wrote decomposed gives the class a name typed elsewhere does."""
    m = rx.search(name)
    if m is None:
        return None, NO_MATCH
    cls = m.group("label") if "label" in rx.groupindex else m.group(1)
    if not cls:
        return None, "no class in the file name: the group of --label-pattern matched nothing"
    if cls != display(cls):
        return None, "class from the file name is not valid UTF-8: rename the file"
    if has_control_characters(cls):
        return None, ("class from the file name holds control characters (an escape sequence, a tab, a newline, a "
                      "bidi override): rename the file")
    return unicodedata.normalize("NFC", cls), None
