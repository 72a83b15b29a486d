"""CheXpert as it unpacks (`CheXpert-v1.0-small/train.csv`, `valid.csv`, `train/patient00001/study1/
view1_frontal.jpg`): `fastdata convert CheXpert-v1.0-small/ DST --multi-label --uncertain ones` makes the 14
observations the classes, -1.0 (uncertain) read as the option says (converters/images/chexpert.py). The X-rays are
the real photos of tests/data; the CSVs are written in CheXpert's shape."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from conftest_images import loader
from helpers import PHOTOS, class_lists, convert_images

from converters.images import chexpert
from fastdata.cli import main as cli
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest

OBSERVATIONS = ("No Finding", "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity", "Lung Lesion", "Edema",
                "Consolidation", "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion", "Pleural Other",
                "Fracture", "Support Devices")
HEADER = ["Path", "Sex", "Age", "Frontal/Lateral", "AP/PA", *OBSERVATIONS]
TRAIN = {  # path under the dataset folder -> its marked observations (the rest blank)
    "train/patient00001/study1/view1_frontal.jpg": {"No Finding": "1.0", "Support Devices": "1.0"},
    "train/patient00002/study1/view1_frontal.jpg": {"Cardiomegaly": "1.0", "Edema": "-1.0", "Pleural Effusion": "0.0"},
    "train/patient00002/study1/view2_lateral.jpg": {"Cardiomegaly": "1.0", "Edema": "-1.0", "Pleural Effusion": "0.0"},
    "train/patient00003/study1/view1_frontal.jpg": {"Lung Opacity": "-1.0", "Atelectasis": "-1.0", "Pneumonia": "0.0"},
    "train/patient00004/study2/view1_frontal.jpg": {},
}
VALID = {"valid/patient64541/study1/view1_frontal.jpg": {"Cardiomegaly": "1.0", "No Finding": "0.0",
                                                         "Edema": "0.0", "Pneumonia": "0.0"},
         "valid/patient64542/study1/view1_frontal.jpg": {"No Finding": "1.0", "Cardiomegaly": "0.0"}}


def _csv(rows: dict[str, dict[str, str]], prefix: str, header=HEADER) -> str:
    lines = [",".join(header)]
    for path, marks in rows.items():
        description = ["Female", "68", "Lateral" if "lateral" in path else "Frontal", "" if "lateral" in path else "AP"]
        lines.append(",".join([prefix + path, *description, *(marks.get(o, "") for o in header[5:])]))
    return "\n".join(lines) + "\n"


def _chexpert(root: Path, train=TRAIN, prefix: str = "CheXpert-v1.0-small/") -> Path:
    """The small download's folder: both CSVs (paths written from the folder above it), the X-rays, and one X-ray
    no CSV lists."""
    src = root / "CheXpert-v1.0-small"
    photos = iter(sorted(PHOTOS.glob("*.jpg")))
    for path in [*train, *VALID, "train/patient00009/study1/view1_frontal.jpg"]:
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(next(photos), src / path)
    (src / "train.csv").write_text(_csv(train, prefix))
    (src / "valid.csv").write_text(_csv(VALID, prefix))
    return src


def _classes(marks: dict[str, str], uncertain: str) -> list[int]:
    present = {"1.0", "-1.0"} if uncertain == "ones" else {"1.0"}
    return [j for j, o in enumerate(OBSERVATIONS) if marks.get(o) in present]


@pytest.mark.parametrize("uncertain", ["ones", "zeros"])
def test_the_observations_are_the_classes_and_uncertain_ones_follow_the_option(tmp_path, uncertain):
    src = _chexpert(tmp_path)
    assert cli(["convert", str(src), str(tmp_path / "dst"), "--multi-label", "--uncertain", uncertain, "-j", "1",
                "--no-progress"]) == 0
    m = read_manifest(tmp_path / "dst")
    assert m.classes == OBSERVATIONS and m.extra["layout"] == "chexpert" and m.extra["multi_label"] is True
    assert {s: m.split(s).samples for s in m.splits} == {"train": 5, "val": 2}
    want = {p: ("train", _classes(marks, uncertain)) for p, marks in TRAIN.items()}
    want.update({p: ("val", _classes(marks, uncertain)) for p, marks in VALID.items()})
    assert class_lists(tmp_path / "dst") == want
    assert [(r["split"], r["source"], r["reason"]) for r in m.rejected] == [
        ("train", "train/patient00009/study1/view1_frontal.jpg", "not listed in labels file train.csv and valid.csv")]


def test_an_uncertain_finding_without_the_option_stops_the_run_naming_it(tmp_path):
    src = _chexpert(tmp_path)
    with pytest.raises(ConvertError, match=r"train.csv:3: 'Edema' is -1.0 \(uncertain\): --uncertain ones counts an "
                                           r"uncertain finding as present, --uncertain zeros as absent"):
        convert_images(src, tmp_path / "dst", multi_label=True)
    certain = {p: {o: v for o, v in marks.items() if v != "-1.0"} for p, marks in TRAIN.items()}
    src = _chexpert(tmp_path / "certain", certain, prefix="")  # paths from the folder itself: read as they are
    m = convert_images(src, tmp_path / "certain-dst", multi_label=True).manifest
    assert m.split("train").samples == 5 and class_lists(tmp_path / "certain-dst")[
        "train/patient00001/study1/view1_frontal.jpg"] == ("train", [0, 13])


def test_without_the_option_the_folder_is_refused_and_the_option_elsewhere_too(tmp_path):
    src = _chexpert(tmp_path)
    with pytest.raises(ConvertError, match=r"is laid out as CheXpert \(train.csv of a Path column and observations "
                                           r"beside train/\): .* --multi-label converts them so"):
        convert_images(src, tmp_path / "dst", uncertain="ones")
    assert convert_images(src, tmp_path / "xrays", unlabeled=True).manifest.classes == ()
    with pytest.raises(ValueError, match=r"--uncertain reads the uncertain findings of CheXpert's or "
                                         r"MIMIC-CXR-JPG's own files"):
        convert_images(src, tmp_path / "both", unlabeled=True, uncertain="zeros")
    with pytest.raises(ValueError, match=r"--uncertain reads .* is laid out as neither"):
        convert_images(src / "train", tmp_path / "tree", uncertain="ones")
    with pytest.raises(ValueError, match=r"--uncertain must be ones or zeros, got 'maybe'"):
        convert_images(src, tmp_path / "bad", uncertain="maybe")


@pytest.mark.parametrize(("change", "problem"), [
    (lambda t: t.replace("Female,68,Frontal,AP,,,", "Female,68,Frontal,AP,,", 1),
     r"train.csv:3: 18 cells, where the first row names 19 columns"),
    (lambda t: t.replace("Female,68,Frontal,AP,1.0", "Female,68,Frontal,AP", 1),
     r"train.csv:2: 18 cells, where the first row names 19 columns"),  # the first row after the header too
    (lambda t: t + t.splitlines()[1] + "\n", r"train.csv:7: 'CheXpert-v1.0-small/train/patient00001/study1/"
                                            r"view1_frontal.jpg' is listed again"),
    (lambda t: t + ",Male,50,Frontal,AP" + "," * 14 + "\n", r"train.csv:7: a row without a path"),
    (lambda t: "Path,Sex,No Finding\n" + "".join(line.split(",")[0] + ",Male,yes\n" for line in t.splitlines()[1:]),
     r"train.csv: no column of observations \(1.0, 0.0, -1.0 or blank in every row\)"),
    (lambda t: t.replace(",Support Devices", ",Devices"), r"valid.csv: its observations are not those of train.csv"),
])
def test_a_labels_file_that_is_not_chexperts_stops_the_run(tmp_path, change, problem):
    src = _chexpert(tmp_path)
    (src / "train.csv").write_text(change((src / "train.csv").read_text()))
    with pytest.raises(ConvertError, match=problem):
        convert_images(src, tmp_path / "dst", multi_label=True, uncertain="ones")
    assert not (tmp_path / "dst" / "manifest.json").exists()


def test_which_folders_are_chexperts(tmp_path):
    src = _chexpert(tmp_path)
    assert chexpert.found(src) == [("train", src / "train.csv"), ("val", src / "valid.csv")]
    (src / "valid.csv").write_text("Image,Label\n")
    assert chexpert.found(src) == [("train", src / "train.csv")]  # a valid.csv of other columns: not read
    (src / "valid.csv").write_text("Path,label\nvalid/a.jpg,cat\n")  # a table of paths, but not CheXpert's
    assert chexpert.found(src) == [("train", src / "train.csv")]
    (src / "valid.csv").write_bytes(b"\xff\xfe")
    assert chexpert.found(src) == [("train", src / "train.csv")]
    (src / "train.csv").write_text("Image,Label\n")
    assert chexpert.found(src) == []
    assert chexpert.found(src / "train") == [] and chexpert.found(tmp_path) == []
    lone = tmp_path / "lone"  # CheXpert's files without its train/ folder, or valid.csv alone: not CheXpert
    lone.mkdir()
    (lone / "valid.csv").write_text(_csv(VALID, ""))
    (lone / "train").mkdir()
    assert chexpert.found(lone) == []
    (lone / "train").rmdir()
    (lone / "train.csv").write_text(_csv(VALID, ""))
    assert chexpert.found(lone) == []


def test_an_empty_valid_csv_is_not_read_and_damage_after_the_header_is_said(tmp_path):
    src = _chexpert(tmp_path)
    (src / "valid.csv").write_bytes(b"")
    assert chexpert.found(src) == [("train", src / "train.csv")]
    (src / "train.csv").write_bytes((src / "train.csv").read_bytes() + b"\n" * 20000 + b"\xff,,\n")  # past the
    # part of the file its header is read from
    with pytest.raises(ConvertError, match=r"cannot read .*train.csv: 'utf-8' codec can't decode"):
        convert_images(src, tmp_path / "dst", multi_label=True, uncertain="ones")


def test_observations_may_follow_the_path_at_once(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "train.csv").write_text("Path,No Finding,Edema\ntrain/a.jpg,1.0,\ntrain/b.jpg,,-1.0\n")
    labels = chexpert.read_chexpert(tmp_path, chexpert.found(tmp_path), "ones")
    assert labels.classes == ("No Finding", "Edema")
    assert labels.rows == {"train/a.jpg": ("No Finding",), "train/b.jpg": ("Edema",)}


def test_an_xray_in_both_files_stops_the_run(tmp_path):
    src = _chexpert(tmp_path)
    (src / "valid.csv").write_text(_csv({**VALID, **dict([next(iter(TRAIN.items()))])}, "CheXpert-v1.0-small/"))
    with pytest.raises(ConvertError, match=r"valid.csv: 'CheXpert-v1.0-small/train/patient00001/study1/"
                                           r"view1_frontal.jpg' is listed again \(in train.csv too\)"):
        convert_images(src, tmp_path / "dst", multi_label=True, uncertain="ones")


def test_batches_carry_the_findings_as_multi_hot_rows(tmp_path):
    src = _chexpert(tmp_path)
    convert_images(src, tmp_path / "dst", multi_label=True, uncertain="zeros", short_side=48)
    rows = []
    for split in ("train", "val"):
        for _, y in loader(tmp_path / "dst", split=split, train=False, batch_size=4):
            assert y.dtype == torch.float32 and y.shape == (4, len(OBSERVATIONS))
            rows += [tuple(r) for r in y.tolist() if r[0] != -100]
    wanted = [tuple(float(j in _classes(m, "zeros")) for j in range(len(OBSERVATIONS)))
              for m in [*TRAIN.values(), *VALID.values()]]
    assert sorted(rows) == sorted(wanted)
