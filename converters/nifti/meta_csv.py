"""TotalSegmentator's `meta.csv`: the split of each case. It lies at the top of SRC and has (among others) an
`image_id` column naming the case folder (`s0011`, or a loose file's name without extension) and a `split` column
(train, val, test), separated by `;` (or `,`). Only those two columns are read: the others hold the patients' age,
sex and institute, and are never copied anywhere."""

from __future__ import annotations

import csv
import io
import os
import posixpath
from dataclasses import replace
from pathlib import Path

from converters.nifti.case_folders import StructureCase, stem
from converters.nifti.rejected_cases import case_rejections, files_of
from converters.sample import Rejection, WorkItem
from fastdata.errors import ConvertError
from fastdata.manifest import check_split_name

NAME = "meta.csv"
MAX_BYTES = 64 * 2**20  # TotalSegmentator's lists 1,228 cases in about 100 kB
COLUMNS = ("image_id", "split")


def read_case_splits(src: Path) -> dict[str, str] | None:
    """{case folder: split} of `SRC/meta.csv`, or None where there is none, or it has no image_id and split
    columns (it is then a file like any other). ConvertError, naming the line, for a split that is no split name,
    or a case listed twice with two splits."""
    path = src / NAME
    if not path.is_file():
        return None
    where = os.fsdecode(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ConvertError(f"{where} is larger than {MAX_BYTES} bytes: not a list of cases")
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise ConvertError(f"cannot read {where}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConvertError(f"{where} is not UTF-8 text (byte {exc.start})") from exc
    first = text.split("\n", 1)[0]
    rows = csv.reader(io.StringIO(text), delimiter=";" if first.count(";") > first.count(",") else ",")
    header = [h.strip().lower() for h in next(rows, [])]
    if not all(c in header for c in COLUMNS):
        return None
    at = [header.index(c) for c in COLUMNS]
    splits: dict[str, str] = {}
    for line, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(at):
            raise ConvertError(f"{where} line {line}: {len(row)} fields; the header names {len(header)}")
        case, split = (row[i].strip() for i in at)
        try:
            split = check_split_name(split, option=f"{where} line {line}")
        except ValueError as exc:
            raise ConvertError(str(exc)) from None
        if splits.setdefault(case, split) != split:
            raise ConvertError(f"{where} line {line}: a case listed before with split {splits[case]!r} is listed "
                               f"with {split!r}")
    return splits


def _split_of(cases: dict[str, str], rel: str) -> str | None:
    """The split meta.csv gives the case of the input `rel`: named by the folder that holds it (`s0011` of
    `s0011/ct.nii.gz`, of `part1/s0011/ct.nii.gz`), or by its own name (`x` of `scans/x.nii.gz`)."""
    folder = posixpath.basename(posixpath.dirname(rel))
    return cases.get(folder) if folder in cases else cases.get(stem(posixpath.basename(rel)))


def apply_case_splits(splits: dict[str, list[WorkItem]], structured: list[StructureCase], cases: dict[str, str],
                      rejected: list[Rejection]) -> tuple[dict[str, list[WorkItem]], list[StructureCase]]:
    """The work items, and the cases of per-structure masks, moved to the split meta.csv gives their case; an
    input of a case it does not list is rejected, with its masks."""
    def unlisted(split: str, image: str, masks: list[str], channels: tuple[str, ...] | list[str] = ()) -> None:
        rejected.extend(case_rejections(split, image, f"its case is not listed in {NAME} (image_id column)",
                                        channels=channels, masks=masks))

    out: dict[str, list[WorkItem]] = {}
    for split, items in splits.items():
        for it in items:
            target = _split_of(cases, it.rel)
            if target is None:
                files = files_of(it.payload)
                unlisted(split, it.rel, files["masks"] + files["structures"], files["channels"])
            else:
                out.setdefault(target, []).append(replace(it, split=target))
    moved = []
    for case in structured:
        target = _split_of(cases, case.image[1])
        if target is None:
            unlisted(case.split, case.image[1], sorted(rel for _, rel in case.masks.values()))
        else:
            moved.append(replace(case, split=target))
    return out, moved
