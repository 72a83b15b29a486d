"""MIMIC-CXR-JPG as PhysioNet hands it out (`mimic-cxr-jpg/2.0.0/`): the X-rays at
`files/p10/p10000032/s50414267/<dicom_id>.jpg`, the labels a study in `mimic-cxr-2.0.0-chexpert.csv.gz`
(`subject_id,study_id` and 14 observations, each 1.0, 0.0, -1.0 or blank, as CheXpert's: chexpert.py), and each
X-ray's split in `mimic-cxr-2.0.0-split.csv.gz` (`dicom_id,study_id,subject_id,split`: train, validate, test). The
CSVs are read gzip-compressed as they come, or decompressed.

- An X-ray's classes are its study's positives (-1.0 as `--uncertain` says; without it a -1.0 stops the run, naming
  the file, line and observation). The classes are the observation columns, in the file's order.
- The split is the split file's (validate: val), which also ties each X-ray to its study: without it the run
  stops. An X-ray the split file names but whose study has no labels row is rejected, saying so; so is an image the
  split file does not name.
- A study twice in the labels, an X-ray twice in the split file, a split other than those three, or a row of
  another number of cells stops the run, saying where.
"""

from __future__ import annotations

from pathlib import Path

from converters.images import chexpert
from converters.images.labels_csv import Labels
from fastdata.errors import ConvertError

FOLDER = "files"
SPLITS = {"train": "train", "validate": "val", "test": "test"}
NEEDS_OPTION = ("{src} is laid out as MIMIC-CXR-JPG (files/ beside {labels}): an X-ray has several findings; "
                "--multi-label converts them so, --unlabeled converts the X-rays without labels")


def _one(src: Path, kind: str) -> Path | None:
    """The dataset's CSV of `kind` (`mimic-cxr-2.0.0-chexpert.csv.gz`, or decompressed), the newest version first."""
    found = sorted((p for p in src.glob(f"mimic-cxr-*-{kind}.csv*") if p.name.endswith((".csv", ".csv.gz"))),
                   reverse=True)
    return found[0] if found else None


def found(src: Path) -> tuple[Path, Path | None] | None:
    """(the labels file, the split file or None) where `src` is laid out as MIMIC-CXR-JPG, else None."""
    labels = _one(src, "chexpert")
    return (labels, _one(src, "split")) if labels is not None and (src / FOLDER).is_dir() else None


def image_path(subject: str, study: str, dicom: str) -> str:
    """Where MIMIC-CXR-JPG keeps an X-ray: `files/p10/p10000032/s50414267/<dicom_id>.jpg`."""
    return f"{FOLDER}/p{subject[:2]}/p{subject}/s{study}/{dicom}.jpg"


def _studies(path: Path, uncertain: str | None) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """(the observations, each study id -> its classes) of the labels file."""
    header, rows = chexpert.read_table(path)
    if header[:2] != ["subject_id", "study_id"]:
        raise ConvertError(f"{path}: its first columns are {header[:2]}, not subject_id and study_id")
    kept = chexpert.observations(path, header, rows, first=2)
    out: dict[str, tuple[str, ...]] = {}
    for n, row in rows:
        study = row[1].strip()
        if study in out:
            raise ConvertError(f"{path}:{n}: study {study} is listed again: a study has one row of labels")
        out[study] = chexpert.findings(path, n, header, row, kept, uncertain)
    return tuple(header[j] for j in kept), out


def _images(path: Path) -> dict[str, tuple[str, str]]:
    """Each X-ray's path under the dataset -> (its split, its study id), from the split file."""
    header, rows = chexpert.read_table(path)
    if header != ["dicom_id", "study_id", "subject_id", "split"]:
        raise ConvertError(f"{path}: its columns are {header}, not dicom_id, study_id, subject_id and split")
    out: dict[str, tuple[str, str]] = {}
    for n, (dicom, study, subject, split) in rows:
        if split.strip() not in SPLITS:
            raise ConvertError(f"{path}:{n}: the split {split!r} is none of train, validate and test")
        name = image_path(subject.strip(), study.strip(), dicom.strip())
        if name in out:
            raise ConvertError(f"{path}:{n}: X-ray {dicom.strip()} is listed again: an image has one split")
        out[name] = (SPLITS[split.strip()], study.strip())
    return out


def read_mimic(src: Path, labels: Path, splits: Path | None, uncertain: str | None
               ) -> tuple[Labels, dict[str, tuple[str, str]]]:
    """(the classes of the X-rays of labelled studies, by their path under `files/`, with their splits; the X-rays
    the split file names whose study has no labels -> (split, why))."""
    if splits is None:
        raise ConvertError(f"{src}: no mimic-cxr-2.0.0-split.csv.gz beside {labels.name}: it names each X-ray's "
                           "study and split (PhysioNet's download holds it)")
    classes, studies = _studies(labels, uncertain)
    images = _images(splits)
    under = len(FOLDER) + 1  # the names of the files under files/
    rows = {name[under:]: studies[study] for name, (_, study) in images.items() if study in studies}
    unlabelled = {name[under:]: (split, f"its study s{study} has no row in {labels.name}")
                  for name, (split, study) in images.items() if study not in studies}
    return Labels(rows, classes, {name: images[FOLDER + "/" + name][0] for name in rows}), unlabelled
