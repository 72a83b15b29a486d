"""`--val-fraction F` (images, nifti, dicom): about F of the inputs of a source's one split held out as val
(Keras' `validation_split`, fastai's `valid_pct`), each input by its path's hash (a DICOM series by its patient's
ID: converters/dicom/discover.py), so that the same inputs go to val on every run and machine, and adding or
removing inputs never moves another."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace

from converters.kind import Discovery
from fastdata.label_members import label_classes

log = logging.getLogger(__name__)


def held_out(rel: str, fraction: float) -> bool:
    """Whether the input `rel` is in the val part: its path's hash, as a number in [0, 1), is below `fraction`."""
    digest = hashlib.blake2b(f"fastdata-val\0{rel}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < fraction


def check_divisible(layout: str, splits: list[str], default: str, layouts: tuple[str, ...]) -> None:
    """ValueError unless a source of `layout` with `splits` has its one split `default` to hold val out of."""
    if layout not in layouts or "val" in splits or default == "val":
        raise ValueError(f"--val-fraction holds out part of --split as val; this source ({layout} layout, splits "
                         f"{', '.join(sorted(splits))}) has a val split or split folders of its own")


def apply_val_fraction(d: Discovery, fraction: float, default: str, *, layouts: tuple[str, ...]) -> Discovery:
    """`d` with about `fraction` of the inputs of `default` (each chosen by `held_out`) moved to val; a warning
    names the classes of labelled inputs left with no val input. Other splits (a split list's test, a Decathlon
    task's imagesTs) stay as they are. `layouts`: the kind's layouts whose `default` split may be divided."""
    if not fraction:
        return d
    check_divisible(d.layout, list(d.splits), default, layouts)
    splits: dict[str, list] = {}
    for name, items in d.splits.items():
        for it in items:
            split = "val" if name == default and held_out(it.rel, fraction) else name
            splits.setdefault(split, []).append(replace(it, split=split))
    labelled = {c for it in splits.get(default, []) for c in label_classes(it.label)}
    missing = sorted(labelled - {c for it in splits.get("val", []) for c in label_classes(it.label)})
    if d.classes and missing:
        names = ", ".join(repr(d.classes[i]) for i in missing[:10])
        log.warning("--val-fraction %g left %d classes with no val image: %s%s", fraction, len(missing), names,
                    f" and {len(missing) - 10} more" if len(missing) > 10 else "")
    taken = {it.rel: it.split for its in splits.values() for it in its}
    identity = [[taken[row[1]], *row[1:]] for row in d.identity if row[1] in taken]
    return replace(d, splits=splits, identity=identity)
