"""`--val-fraction F`: a val split held out of a source of one split (Keras' `validation_split`, fastai's
`valid_pct`), each file by its path's hash. Before, a folder of class folders converted as train only: a user
made val by moving files by hand."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree, touch

from converters import get_kind
from converters.images import ImageOptions
from converters.val_fraction import held_out
from fastdata.manifest import read_manifest


def _discover(src: Path, **options):
    return get_kind("images").discover(src, options=ImageOptions(**options))


def _tree(root: Path, per_class: int = 200) -> Path:
    return touch(root, *(f"{c}/{i}.jpg" for c in ("cat", "dog") for i in range(per_class)))


def test_about_the_fraction_goes_to_val_chosen_by_each_files_path(tmp_path):
    d = _discover(_tree(tmp_path / "src"), val_fraction=0.25)
    val = {it.rel for it in d.splits["val"]}
    assert val == {f"{c}/{i}.jpg" for c in ("cat", "dog") for i in range(200) if held_out(f"{c}/{i}.jpg", 0.25)}
    assert 70 <= len(val) <= 130 and len(d.splits["train"]) == 400 - len(val)
    assert all(it.split == "val" for it in d.splits["val"]) and {it.label for it in d.splits["val"]} == {0, 1}
    assert sorted(row[:2] for row in d.identity) == sorted(
        [[s, it.rel] for s, items in d.splits.items() for it in items])  # the identity says which split


def test_the_choice_is_pinned_and_adding_files_moves_no_other(tmp_path):
    pinned = [False, False, True, False, True, True, True, False]  # the same files on every version
    assert [held_out(f"cat/{i}.jpg", 0.5) for i in range(8)] == pinned
    before = {it.rel for it in _discover(_tree(tmp_path / "src", 50), val_fraction=0.2).splits["val"]}
    touch(tmp_path / "src", *(f"cat/new_{i}.jpg" for i in range(50)))
    after = {it.rel for it in _discover(tmp_path / "src", val_fraction=0.2).splits["val"]}
    assert before == {rel for rel in after if "new_" not in rel}


def test_a_class_left_without_val_images_is_named(tmp_path, caplog):
    src = touch(tmp_path / "src", *(f"cat/{i}.jpg" for i in range(100)), "rare/0.jpg")
    assert not held_out("rare/0.jpg", 0.1)
    with caplog.at_level(logging.WARNING):
        _discover(src, val_fraction=0.1)
    assert [r.getMessage() for r in caplog.records] == [
        "--val-fraction 0.1 left 1 classes with no val image: 'rare'"]


def test_with_split_lists_val_comes_out_of_train_and_test_stays(tmp_path):
    src = _tree(tmp_path / "src", 40)
    (tmp_path / "test.txt").write_text("".join(f"dog/{i}\n" for i in range(10)))
    d = _discover(src, split_lists=(f"test={tmp_path / 'test.txt'}",), val_fraction=0.3)
    assert {it.rel for it in d.splits["test"]} == {f"dog/{i}.jpg" for i in range(10)}
    test = {it.rel for it in d.splits["test"]}
    assert d.splits["val"] and all(held_out(it.rel, 0.3) and it.rel not in test for it in d.splits["val"])
    assert len(d.splits["val"]) + len(d.splits["train"]) == 70


@pytest.mark.parametrize(("tree", "options"), [(("train/cat/a.jpg", "val/cat/b.jpg"), {}),
                                               (("cat/a.jpg",), {"split": "val"})])
def test_a_source_with_a_val_split_already_is_refused(tmp_path, tree, options):
    with pytest.raises(ValueError, match=r"^--val-fraction holds out part of --split as val; this source "):
        _discover(touch(tmp_path / "src", *tree), val_fraction=0.1, **options)


@pytest.mark.parametrize("value", [1.0, -0.1, 2, "0.1", float("nan")])
def test_a_fraction_outside_0_to_1_is_refused(value):
    with pytest.raises(ValueError, match=r"^--val-fraction must be in \[0, 1\)"):
        ImageOptions(val_fraction=value)


def test_a_held_out_val_converts(tmp_path):
    src = make_image_tree(tmp_path / "src", classes=2, per_class=6)
    convert_images(src, tmp_path / "out", val_fraction=0.5)
    m = read_manifest(tmp_path / "out")
    expected = sum(held_out(f"class_{c}/img_{i}.jpg", 0.5) for c in range(2) for i in range(6))
    assert set(m.splits) == {"train", "val"} and m.splits["val"].samples == expected and not m.rejected


def test_a_decathlon_tasks_train_cases_give_val_and_its_test_stays(tmp_path):
    pytest.importorskip("nibabel")
    from conftest_nifti import convert_nifti, decathlon

    from converters.nifti import NiftiOptions

    decathlon(tmp_path / "task", cases=12, test_cases=2)
    kind = get_kind("nifti")
    found = kind.discover(tmp_path / "task", options=NiftiOptions(val_fraction=0.3, keep_phi=True, split="other"))
    val = {it.rel for it in found.splits["val"]}
    assert val == {f"imagesTr/liver_{n}.nii.gz" for n in range(12) if held_out(f"imagesTr/liver_{n}.nii.gz", 0.3)}
    assert 0 < len(val) < 12 and len(found.splits["train"]) == 12 - len(val) and len(found.splits["test"]) == 2
    assert all(it.payload.label is not None for it in found.splits["val"])  # cases move with their masks
    result = convert_nifti(tmp_path / "task", tmp_path / "out", val_fraction=0.3)
    manifest = read_manifest(tmp_path / "out")
    assert {s: manifest.splits[s].samples for s in manifest.splits} == {"train": 12 - len(val), "val": len(val),
                                                                        "test": 2}
    assert manifest.preprocessing["val_fraction"] == 0.3 and result.rejected == []
    tiny = kind.discover(tmp_path / "task", options=NiftiOptions(val_fraction=1e-9))  # no case held out: no warning
    assert "val" not in tiny.splits and len(tiny.splits["train"]) == 12


def test_a_nifti_source_with_split_folders_refuses_a_val_fraction(tmp_path):
    pytest.importorskip("nibabel")
    from conftest_nifti import case, save

    from converters.nifti import NiftiOptions

    save(tmp_path / "src" / "train" / "a.nii.gz", case(0)[0])
    with pytest.raises(ValueError, match=r"this source \(split/volume layout, splits train\) has a val split"):
        get_kind("nifti").discover(tmp_path / "src", options=NiftiOptions(val_fraction=0.2))
    with pytest.raises(ValueError, match=r"--val-fraction must be in \[0, 1\), got 1.0"):
        NiftiOptions(val_fraction=1.0)


def test_loose_nifti_cases_of_another_split_name_give_val(tmp_path):
    pytest.importorskip("nibabel")
    from conftest_nifti import case, save

    from converters.nifti import NiftiOptions

    for n in range(10):
        save(tmp_path / "src" / f"s{n}.nii.gz", case(n, shape=(4, 4, 4))[0])
    found = get_kind("nifti").discover(tmp_path / "src", options=NiftiOptions(val_fraction=0.5, split="labelled"))
    assert {it.rel for it in found.splits["val"]} == {f"s{n}.nii.gz" for n in range(10)
                                                       if held_out(f"s{n}.nii.gz", 0.5)}
    assert len(found.splits["labelled"]) + len(found.splits["val"]) == 10 and set(found.splits) == {"labelled", "val"}


def test_past_ten_classes_left_without_val_the_warning_counts_the_rest(tmp_path, caplog):
    rare = [f"r{c:02d}/0.jpg" for c in range(40) if not held_out(f"r{c:02d}/0.jpg", 0.05)][:11]  # one past ten
    src = touch(tmp_path / "src", *(f"cat/{i}.jpg" for i in range(100)), *rare)
    with caplog.at_level(logging.WARNING):
        _discover(src, val_fraction=0.05)
    names = ", ".join(repr(r.split("/")[0]) for r in rare[:10])
    assert [r.getMessage() for r in caplog.records] == [
        f"--val-fraction 0.05 left {len(rare)} classes with no val image: {names} and {len(rare) - 10} more"]


def test_the_val_split_itself_is_not_divided(tmp_path):
    with pytest.raises(ValueError, match=r"this source \(class layout, splits val\) has a val split"):
        _discover(_tree(tmp_path / "src", 5), val_fraction=0.2, split="val")


def test_no_warning_when_every_class_has_val_images(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        d = _discover(_tree(tmp_path / "src", 200), val_fraction=0.25)
    assert {it.label for it in d.splits["val"]} == {0, 1} and caplog.records == []


def _dicom_patients(root, patients: int = 8):
    """Two one-slice series per patient P0, P1, ... (folders P<n>/a, P<n>/b), and one series without a PatientID."""
    pytest.importorskip("pydicom")
    import numpy as np
    from conftest_dicom import edit_dicom, make_slice

    plane = np.zeros((4, 4), np.uint16)
    for n in range(patients):
        for s in ("a", "b"):
            path = make_slice(root / f"P{n}" / s / "1.dcm", plane, series_uid=f"1.2.{n}.{ord(s)}",
                              position=(0.0, 0.0, 0.0))
            edit_dicom(path, PatientID=f"P{n}")
    edit_dicom(make_slice(root / "anonymous" / "1.dcm", plane, series_uid="1.2.99", position=(0.0, 0.0, 0.0)),
               PatientID=None)
    # a second file of P0's series a naming another patient: the series goes by its first file's
    edit_dicom(make_slice(root / "P0" / "a" / "2.dcm", plane, series_uid="1.2.0.97", position=(0.0, 0.0, 1.0),
                          instance=2), PatientID="Q")  # Q is not held out at 0.5, P0 is


def test_dicom_series_are_held_out_by_patient(tmp_path):
    from converters.dicom import DicomOptions

    _dicom_patients(tmp_path / "src")
    d = get_kind("dicom").discover(tmp_path / "src", options=DicomOptions(val_fraction=0.5, keep_phi=True))
    sides = {it.payload.files[0][1]: it.split for items in d.splits.values() for it in items}
    assert held_out("patient\0P0", 0.5) and not held_out("patient\0Q", 0.5)
    for n in range(8):
        expected = "val" if held_out(f"patient\0P{n}", 0.5) else "train"
        assert sides[f"P{n}/a/1.dcm"] == sides[f"P{n}/b/1.dcm"] == expected  # a patient's series stay together
    assert sides["anonymous/1.dcm"] == ("val" if held_out("series\x001.2.99", 0.5) else "train")
    assert 0 < len(d.splits["val"]) < 17 and set(d.splits) == {"train", "val"}
    assert sorted(row[0] for row in d.identity) == sorted(it.split for items in d.splits.values() for it in items)


def test_dicom_split_folders_or_a_val_split_refuse_a_val_fraction(tmp_path):
    from converters.dicom import DicomOptions

    _dicom_patients(tmp_path / "src" / "train", patients=1)
    with pytest.raises(ValueError, match=r"this source \(split/series layout, splits train\) has a val split"):
        get_kind("dicom").discover(tmp_path / "src", options=DicomOptions(val_fraction=0.2))
    with pytest.raises(ValueError, match=r"this source \(series layout, splits val\) has a val split"):
        get_kind("dicom").discover(tmp_path / "src" / "train", options=DicomOptions(val_fraction=0.2, split="val"))
    with pytest.raises(ValueError, match=r"--val-fraction must be in \[0, 1\), got -0.1"):
        DicomOptions(val_fraction=-0.1)


def _unreadable_patient_id(path) -> None:
    """Rewrite a file's PatientID as an element pydicom cannot parse (VR US with 3 bytes): reading it raises."""
    from conftest_dicom import PATIENT_ID

    value = PATIENT_ID.encode() + b" " * (len(PATIENT_ID) % 2)  # text values are padded with a space
    old = b"\x10\x00\x20\x00LO" + len(value).to_bytes(2, "little") + value
    data = path.read_bytes()
    assert data.count(old) == 1
    path.write_bytes(data.replace(old, b"\x10\x00\x20\x00US\x03\x00abc"))


def test_dicom_series_whose_patient_id_cannot_be_read_is_held_out_by_its_own_uid(tmp_path):
    pydicom = pytest.importorskip("pydicom")
    import numpy as np
    from conftest_dicom import make_slice
    from pydicom.errors import BytesLengthException

    from converters.dicom import DicomOptions

    plane = np.zeros((4, 4), np.uint16)
    uids = [f"1.2.7.{n}" for n in range(12)]
    for uid in uids:
        _unreadable_patient_id(make_slice(tmp_path / "src" / uid / "1.dcm", plane, series_uid=uid,
                                          position=(0.0, 0.0, 0.0)))
    with pytest.raises(BytesLengthException, match="bytes per value"):  # pydicom cannot parse the value
        _ = pydicom.dcmread(tmp_path / "src" / uids[0] / "1.dcm").PatientID
    d = get_kind("dicom").discover(tmp_path / "src", options=DicomOptions(val_fraction=0.5, keep_phi=True))
    sides = {it.payload.uid: it.split for items in d.splits.values() for it in items}
    assert sides == {uid: "val" if held_out(f"series\0{uid}", 0.5) else "train" for uid in uids}
    assert set(sides.values()) == {"train", "val"} and d.rejected == []
