"""MIMIC-CXR-JPG as PhysioNet hands it out (`files/p10/p10000032/s50414267/<dicom_id>.jpg`,
`mimic-cxr-2.0.0-chexpert.csv.gz` a row a study, `mimic-cxr-2.0.0-split.csv.gz` a row an X-ray):
`fastdata convert mimic-cxr-jpg/2.0.0/ DST --multi-label --uncertain zeros` (converters/images/mimic_cxr.py). The
X-rays are the real photos of tests/data; the CSVs are written in MIMIC's shape, gzip-compressed as they come."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from helpers import PHOTOS, class_lists, convert_images

from converters.images import mimic_cxr
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

OBSERVATIONS = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Enlarged Cardiomediastinum", "Fracture",
                "Lung Lesion", "Lung Opacity", "No Finding", "Pleural Effusion", "Pleural Other", "Pneumonia",
                "Pneumothorax", "Support Devices")
STUDIES = {  # study -> (subject, its marked observations; the rest blank)
    "50414267": ("10000032", {"No Finding": "1.0"}),
    "53189527": ("10000032", {"Cardiomegaly": "1.0", "Edema": "-1.0", "Atelectasis": "0.0"}),
    "57375967": ("10000764", {"Pneumonia": "-1.0", "Pleural Effusion": "1.0", "Support Devices": "1.0"}),
}
XRAYS = [  # (dicom_id, study, subject, split)
    ("02aa804e-bde0afdd-112c0b34-7bc16630-4e384014", "50414267", "10000032", "train"),
    ("174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962", "50414267", "10000032", "train"),
    ("2a2277a9-b0ded155-c0de8eb9-c124d10e-82c5caab", "53189527", "10000032", "validate"),
    ("096052b7-d256dc40-453a102b-fa7d01c6-1b22c6b4", "57375967", "10000764", "test"),
    ("12345678-aaaaaaaa-bbbbbbbb-cccccccc-dddddddd", "51029426", "11000011", "train"),  # its study has no labels
]


def _write(path: Path, text: str) -> None:
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        path.write_text(text)


def _mimic(root: Path, gz: bool = True, studies=STUDIES) -> Path:
    """`mimic-cxr-jpg/2.0.0/`: the X-rays, the labels, split and metadata CSVs, and one X-ray no split row names."""
    src = root / "mimic-cxr-jpg" / "2.0.0"
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for dicom, study, subject, _ in [*XRAYS, ("0fffffff-00000000-00000000-00000000-00000000", "50771383",
                                              "10000898", "")]:
        path = src / mimic_cxr.image_path(subject, study, dicom)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), path)
    ext = ".csv.gz" if gz else ".csv"
    _write(src / f"mimic-cxr-2.0.0-chexpert{ext}", "subject_id,study_id," + ",".join(OBSERVATIONS) + "\n" + "".join(
        f"{subject},{study}," + ",".join(marks.get(o, "") for o in OBSERVATIONS) + "\n"
        for study, (subject, marks) in studies.items()))
    _write(src / f"mimic-cxr-2.0.0-split{ext}", "dicom_id,study_id,subject_id,split\n" + "".join(
        f"{d},{st},{su},{sp}\n" for d, st, su, sp in XRAYS))
    _write(src / f"mimic-cxr-2.0.0-metadata{ext}", "dicom_id,subject_id,study_id,ViewPosition\n")
    return src


def _expected(uncertain: str) -> dict[str, tuple[str, list[int]]]:
    present = {"1.0", "-1.0"} if uncertain == "ones" else {"1.0"}
    splits = {"train": "train", "validate": "val", "test": "test"}
    return {mimic_cxr.image_path(su, st, d): (splits[sp], [j for j, o in enumerate(OBSERVATIONS)
                                                            if STUDIES[st][1].get(o) in present])
            for d, st, su, sp in XRAYS if st in STUDIES}


@pytest.mark.parametrize(("uncertain", "gz"), [("zeros", True), ("ones", False)])
def test_each_xray_gets_its_studys_findings_in_its_split(tmp_path, uncertain, gz):
    src = _mimic(tmp_path, gz)
    assert cli(["convert", str(src), str(tmp_path / "dst"), "--multi-label", "--uncertain", uncertain, "-j", "1",
                "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == OBSERVATIONS and m.extra["layout"] == "mimic_cxr" and m.extra["multi_label"] is True
    assert {s: m.split(s).samples for s in m.splits} == {"train": 2, "val": 1, "test": 1}
    assert class_lists(tmp_path / "dst") == _expected(uncertain)
    ext = ".csv.gz" if gz else ".csv"
    assert sorted((r["split"], r["source"], r["reason"]) for r in m.rejected) == [
        ("train", "files/p10/p10000898/s50771383/0fffffff-00000000-00000000-00000000-00000000.jpg",
         f"not listed in labels file mimic-cxr-2.0.0-split{ext}"),
        ("train", "files/p11/p11000011/s51029426/12345678-aaaaaaaa-bbbbbbbb-cccccccc-dddddddd.jpg",
         f"its study s51029426 has no row in mimic-cxr-2.0.0-chexpert{ext}")]


def test_without_the_options_or_the_split_file_the_run_stops_saying_why(tmp_path):
    src = _mimic(tmp_path)
    with pytest.raises(ConvertError, match=r"is laid out as MIMIC-CXR-JPG \(files/ beside "
                                           r"mimic-cxr-2.0.0-chexpert.csv.gz\): .* --multi-label converts them so"):
        convert_images(src, tmp_path / "a", uncertain="zeros")
    with pytest.raises(ConvertError, match=r"mimic-cxr-2.0.0-chexpert.csv.gz:3: 'Edema' is -1.0 \(uncertain\): "
                                           r"--uncertain ones"):
        convert_images(src, tmp_path / "b", multi_label=True)
    (src / "mimic-cxr-2.0.0-split.csv.gz").unlink()
    with pytest.raises(ConvertError, match=r"no mimic-cxr-2.0.0-split.csv.gz beside mimic-cxr-2.0.0-chexpert.csv.gz"):
        convert_images(src, tmp_path / "c", multi_label=True, uncertain="ones")
    assert convert_images(src, tmp_path / "d", unlabeled=True).manifest.classes == ()


@pytest.mark.parametrize(("name", "change", "problem"), [
    ("chexpert", lambda t: t + t.splitlines()[1] + "\n", r"chexpert.csv.gz:5: study 50414267 is listed again"),
    ("chexpert", lambda t: t.replace("subject_id,study_id", "subject,study"), r"its first columns are \['subject', "
                                                                             r"'study'\], not subject_id and study_id"),
    ("split", lambda t: t.replace(",validate\n", ",dev\n"), r"split.csv.gz:4: the split 'dev' is none of train, "
                                                             r"validate and test"),
    ("split", lambda t: t + t.splitlines()[1] + "\n", r"split.csv.gz:7: X-ray 02aa804e-bde0afdd-112c0b34-7bc16630-"
                                                      r"4e384014 is listed again"),
    ("split", lambda t: t.replace("dicom_id", "image_id"), r"its columns are \['image_id', .*\], not dicom_id"),
    ("split", lambda t: t + "x,y\n", r"split.csv.gz:7: 2 cells, where the first row names 4 columns"),
])
def test_csvs_that_are_not_mimics_stop_the_run(tmp_path, name, change, problem):
    src = _mimic(tmp_path)
    path = src / f"mimic-cxr-2.0.0-{name}.csv.gz"
    _write(path, change(gzip.decompress(path.read_bytes()).decode()))
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst", multi_label=True, uncertain="ones")


def test_a_damaged_gzip_and_which_folders_are_mimics(tmp_path):
    src = _mimic(tmp_path)
    path = src / "mimic-cxr-2.0.0-chexpert.csv.gz"
    path.write_bytes(path.read_bytes()[:-12])  # cut short
    with pytest.raises(ConvertError, match=r"cannot read .*mimic-cxr-2.0.0-chexpert.csv.gz: Compressed file ended"):
        convert_images(src, tmp_path / "dst", multi_label=True, uncertain="ones")
    assert mimic_cxr.found(src) == (path, src / "mimic-cxr-2.0.0-split.csv.gz")
    (src / "mimic-cxr-2.1.0-chexpert.csv").write_text("subject_id,study_id,Edema\n")  # the newest version first
    assert mimic_cxr.found(src)[0].name == "mimic-cxr-2.1.0-chexpert.csv"
    (src / "mimic-cxr-9.0.0-chexpert.csv.bak").write_text("x\n")  # not a CSV of its name: never read
    assert mimic_cxr.found(src)[0].name == "mimic-cxr-2.1.0-chexpert.csv"
    shutil.rmtree(src / "files")
    assert mimic_cxr.found(src) is None and mimic_cxr.found(tmp_path) is None
