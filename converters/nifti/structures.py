"""Cases whose mask comes as one binary file per structure, TotalSegmentator's layout: `s0011/ct.nii.gz` beside
`s0011/segmentations/liver.nii.gz`, `spleen.nii.gz`, ... The structures' file names are the dataset's classes;
each case's masks are merged into one label volume at conversion (converters/nifti/case.py), structure N of the
class list taking value N.

The class list is `dataset.json`'s labels where the source has one (its order then gives the values: write
TotalSegmentator's own class map there to keep its numbering), else background and the structures found in more
than half of the cases, sorted by name. A name in half the cases or fewer never becomes a class: a stray file (and
a file name may be a patient's) is not written into the manifest. A case must hold exactly the classes' masks; a
case that lacks one or holds another is rejected, with all its files, saying which.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from converters.dicom.options import named_classes, structure_values, unheld_structures
from converters.dicom.segmentation import BACKGROUND
from converters.nifti.case_folders import StructureCase
from converters.nifti.rejected_cases import case_rejections, files_of
from converters.sample import Rejection, WorkItem
from fastdata.errors import ConvertError
from fastdata.reasons import shown_names

SHOWN = 5  # structure names a reason lists before "..."


def structure_classes(cases: list[StructureCase], declared: tuple[str, ...],
                      structures: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The class names, value 0 first: `--structures`' (`structures`), else dataset.json's (`declared`), else
    background and the structures found in more than half of the cases. A --structures class no case holds is an
    error that lists the structures of more than half of the cases (a rarer file name may be a patient's)."""
    counts = Counter(name for case in cases for name in case.masks)
    found = sorted(name for name, n in counts.items() if 2 * n > len(cases))
    if structures:
        missing = unheld_structures(structures, counts)
        if missing:
            raise ConvertError(f"--structures names {missing}, which no case's structure masks hold; the structures "
                               f"of most cases are {found}")
        return (BACKGROUND, *named_classes(structures))
    if declared:
        return declared
    if "background" in found:
        raise ConvertError("a structure mask is named 'background' in most cases: value 0 is background, so no "
                           "structure may take that name; rename those files")
    return ("background", *found)


def _listed(names: set[str]) -> str:
    return shown_names(sorted(names), SHOWN)


def structure_items(cases: list[StructureCase], classes: tuple[str, ...], make_item: Callable[..., WorkItem],
                    rejected: list[Rejection], *, private: bool, declared: bool,
                    structures: tuple[str, ...] = ()) -> dict[str, list[WorkItem]]:
    """{split: work items} of the cases that hold exactly the classes' masks; the others are rejected, each file
    with its reason. Names that are not classes are said only with --keep-phi (a stray file may be named after a
    patient); missing names are class names, already in the manifest. With `structures` (--structures), a case
    must hold one mask of each class, by any of its names, and its other masks are not read."""
    wanted = set(classes[1:])
    where = "dataset.json's labels" if declared else "the structures of more than half of the cases"
    out: dict[str, list[WorkItem]] = {}
    for case in sorted(cases, key=lambda c: c.image[1]):
        items = out.setdefault(case.split, [])
        if structures:
            _picked(case, classes, structures, items, rejected, make_item)
            continue
        missing, extra = wanted - set(case.masks), set(case.masks) - wanted
        if not missing and not extra:
            items.append(make_item(case.split, case.image, tuple(case.masks[name] for name in classes[1:])))
            continue
        problems = []
        if missing:
            problems.append(f"lacks {len(missing)} of the classes ({_listed(missing)})")
        if extra:
            problems.append(f"holds {len(extra)} mask(s) of no class" + ("" if private else f" ({_listed(extra)})"))
        rejected.append(Rejection(case.split, case.image[1], "a case of per-structure masks that " +
                                  " and ".join(problems) + f"; its masks must be the classes, exactly: {where}"))
        for name, (_, rel) in sorted(case.masks.items()):
            reason = ("a structure mask that names no class" if name in extra
                      else "the structure mask of a case that was rejected")
            rejected.append(Rejection(case.split, rel, reason))
    return out


def _picked(case: StructureCase, classes: tuple[str, ...], structures: tuple[str, ...], items: list[WorkItem],
            rejected: list[Rejection], make_item: Callable[..., WorkItem]) -> None:
    """The work item of a case with --structures (its masks of each class, in class order), or its rejection: a
    class it holds no mask of, or two masks of (names --structures matches alike)."""
    values = structure_values(structures)
    files: dict[int, list[str]] = {}
    for name in sorted(case.masks):
        if name.casefold() in values:
            files.setdefault(values[name.casefold()], []).append(name)
    missing = [classes[n] for n in range(1, len(classes)) if n not in files]
    twice = [f"{classes[n]} ({', '.join(names)})" for n, names in sorted(files.items()) if len(names) > 1]
    if not missing and not twice:
        items.append(make_item(case.split, case.image, tuple(case.masks[files[n][0]] for n in range(1, len(classes)))))
        return
    problems = ([f"lacks {len(missing)} of the classes ({_listed(set(missing))})"] if missing else []) + (
        [f"holds two masks of one class: {'; '.join(twice)}"] if twice else [])
    rejected.append(Rejection(case.split, case.image[1], "a case of per-structure masks that " +
                              " and ".join(problems) + "; it needs one mask of each --structures class"))
    for name in sorted(n for names in files.values() for n in names):
        rejected.append(Rejection(case.split, case.masks[name][1], "the structure mask of a case that was rejected"))


def with_structures(splits: dict[str, list[WorkItem]], made: dict[str, list[WorkItem]],
                    rejected: list[Rejection]) -> dict[str, list[WorkItem]]:
    """The other cases of each split and the cases of per-structure masks (`made`), one kind of mask per dataset:
    a case whose mask holds label values is rejected beside them (its values would mean other classes)."""
    out: dict[str, list[WorkItem]] = {}
    for split in dict.fromkeys([*splits, *made]):
        kept = []
        for it in splits.get(split, []):
            if it.payload.label is None:
                kept.append(it)
                continue
            rejected.extend(case_rejections(split, it.rel, "a case whose mask holds label values, in a dataset of "
                                                           "per-structure mask folders: convert them apart",
                                            **files_of(it.payload)))
        out[split] = kept + made.get(split, [])
    return out
