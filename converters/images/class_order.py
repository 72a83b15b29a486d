"""The order of classes that are whole numbers (`--class-order`). Class folders are ordered as text, as torchvision's
ImageFolder and DALI's file reader order them, so that a checkpoint trained on the folders keeps its labels; for
folders named `0` ... `999` (ImageNetV2) that puts `10` before `2`, and folder 10's label is 2. `--class-order number`
orders such classes by value: a folder's label is its number, and `--classes` can then name the ids. Without it, a
warning says when the two orders differ."""

from __future__ import annotations

import logging
import re
from dataclasses import replace

from converters.kind import Discovery

log = logging.getLogger(__name__)
ORDERS = ("name", "number")
WHOLE = re.compile(r"0|[1-9][0-9]{0,17}")  # a whole number as a class id: no sign, no leading zero


def order_classes(d: Discovery, order: str) -> Discovery:
    """`d` with its classes by value (`number`) or as they are (`name`); ValueError for `number` and classes that are
    not all whole numbers."""
    numbers = bool(d.classes) and all(WHOLE.fullmatch(c) for c in d.classes)
    by_value = sorted(d.classes, key=int) if numbers else []
    if order == "name":
        if by_value and list(d.classes) != by_value:
            log.warning("the classes are numbers, ordered as text as ImageFolder and DALI order folder names (%s: the "
                        "label of %s is %d); if the numbers are the labels (ImageNetV2's folders 0 ... 999), convert "
                        "with --class-order number", ", ".join(d.classes[:4]), by_value[-1],
                        d.classes.index(by_value[-1]))
        return d
    if not numbers:
        shown = next((c for c in d.classes if not WHOLE.fullmatch(c)), None)
        has = f"'s class {shown!r} is not" if shown is not None else " has no class"
        raise ValueError(f"--class-order number orders classes that are whole numbers (0, 1, ... 999, without leading "
                         f"zeros); this source{has}")
    missing = next((i for i, c in enumerate(by_value) if c != str(i)), None)
    if missing is not None:
        log.warning("the classes are numbers, but not 0 ... %d (no class %d): each label is its class's rank among "
                    "them, not its number", len(by_value) - 1, missing)
    return relabeled(d, tuple(by_value), ["class_order", order])


def relabeled(d: Discovery, classes: tuple[str, ...], note: list[object]) -> Discovery:
    """`d` with `classes`, which hold each of its classes (in another order, or among more), each input's label
    the place of its class there; `note` is added to the identity a resumed run checks."""
    new = [classes.index(c) for c in d.classes]  # old label -> new

    def relabel(label):
        if isinstance(label, tuple | list):  # --multi-label: the sorted indices of its classes
            return tuple(sorted(new[i] for i in label))
        return new[label] if isinstance(label, int) else label

    splits = {s: [replace(it, label=relabel(it.label)) for it in items] for s, items in d.splits.items()}
    return replace(d, splits=splits, classes=classes, identity=[*d.identity, note])
