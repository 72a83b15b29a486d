"""TotalSegmentator's meta.csv gives each case folder its split (image_id, split); its other columns (age, sex,
institute) are never read into anything written."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("nibabel")
pytest.importorskip("scipy")

from conftest_dicom import load_volume, read_samples  # noqa: E402
from conftest_nifti import case, convert_nifti, save  # noqa: E402

from fastdata.errors import ConvertError  # noqa: E402

META = "image_id;age;gender;institute;split\n{rows}"


def _cases(root, names):
    for n, name in enumerate(names):
        image, mask = case(n)
        save(root / name / "ct.nii.gz", image)
        for value, structure in ((1, "liver"), (2, "spleen")):
            save(root / name / "segmentations" / f"{structure}.nii.gz", (mask == value).astype(np.uint8))


def _sources(dst, split):
    return sorted(load_volume(s)[1]["source"] for s in read_samples(dst, split).values())


def test_each_case_goes_to_the_split_meta_csv_gives_it_and_unlisted_cases_are_rejected(tmp_path):
    _cases(tmp_path / "src", ["s0000", "s0001", "s0002", "s0003", "s0004"])
    save(tmp_path / "src" / "loose.nii.gz", case(9)[0])  # listed nowhere either
    commas = ", x" * 30  # more commas than semicolons in the whole file: the header alone says `;`
    (tmp_path / "src" / "meta.csv").write_text(META.format(rows=f"s0000;63;m;Institute of Smith{commas};train\n"
                                                                "s0001;55;f;Institute of Smith;train\n"
                                                                "s0002;71;f;Institute of Smith;val\n\n"
                                                                "s0003;44;m;Institute of Smith;test\n"))
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True, split="other")
    assert {r["split"] for r in result.rejected} == {"other"}  # an unlisted case is rejected in --split
    assert (_sources(tmp_path / "out", "train"), _sources(tmp_path / "out", "val"),
            _sources(tmp_path / "out", "test")) == (["s0000/ct.nii.gz", "s0001/ct.nii.gz"], ["s0002/ct.nii.gz"],
                                                    ["s0003/ct.nii.gz"])
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        "loose.nii.gz": "its case is not listed in meta.csv (image_id column)",
        "s0004/ct.nii.gz": "its case is not listed in meta.csv (image_id column)",
        "s0004/segmentations/liver.nii.gz": "the mask of a case that was rejected",
        "s0004/segmentations/spleen.nii.gz": "the mask of a case that was rejected"}
    written = (tmp_path / "out" / "manifest.json").read_text() + "".join(
        s["json"].decode() for split in ("train", "val", "test")
        for s in read_samples(tmp_path / "out", split).values())
    assert "Smith" not in written and "gender" not in written and '"age"' not in written
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == ["background", "liver", "spleen"]


def test_commas_case_folders_with_one_mask_and_loose_files_take_their_split_too(tmp_path):
    image, mask = case(0)
    save(tmp_path / "src" / "case_00000" / "imaging.nii.gz", image)
    save(tmp_path / "src" / "case_00000" / "segmentation.nii.gz", mask)
    save(tmp_path / "src" / "loose.nii.gz", image)
    (tmp_path / "src" / "meta.csv").write_text("\ufeffImage_ID,Split\ncase_00000,test\nloose,val\n")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert result.rejected == []
    assert _sources(tmp_path / "out", "test") == ["case_00000/imaging.nii.gz"]
    assert _sources(tmp_path / "out", "val") == ["loose.nii.gz"]


def test_a_meta_csv_without_the_two_columns_is_a_file_like_any_other(tmp_path):
    save(tmp_path / "src" / "a.nii.gz", case(0)[0])
    (tmp_path / "src" / "meta.csv").write_text("image_id;age\na;50\n")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        "meta.csv": ("not a NIfTI, Analyze, MGH, MINC, AFNI, PAR/REC, MetaImage or NRRD file (.nii, .nii.gz, .hdr + "
                     ".img, .mgz, .mgh, .mnc, .HEAD + .BRIK, .PAR + .REC, .mhd, .mha, .nrrd, .nhdr)")}
    assert _sources(tmp_path / "out", "train") == ["a.nii.gz"]


@pytest.mark.parametrize(("rows", "problem"), [
    ("a;1;m;x;train\na;1;m;x;test\n", "meta.csv line 3: a case listed before with split 'train' is listed with "
                                      "'test'"),
    ("a;1;m;x;tr/ain\n", "meta.csv line 2"),
    ("a;1;m\n", "meta.csv line 2: 3 fields; the header names 5"),
    ("a;1;m;x\n", "meta.csv line 2: 4 fields; the header names 5"),
])
def test_a_meta_csv_that_says_something_impossible_stops_the_conversion(tmp_path, rows, problem):
    save(tmp_path / "src" / "a.nii.gz", case(0)[0])
    (tmp_path / "src" / "meta.csv").write_text(META.format(rows=rows))
    with pytest.raises(ConvertError, match=problem):
        convert_nifti(tmp_path / "src", tmp_path / "out")


def test_a_meta_csv_that_is_not_text_stops_the_conversion(tmp_path):
    save(tmp_path / "src" / "a.nii.gz", case(0)[0])
    (tmp_path / "src" / "meta.csv").write_bytes(b"image_id;split\na;\xff\n")
    with pytest.raises(ConvertError, match=r"meta.csv is not UTF-8 text \(byte 17\)"):
        convert_nifti(tmp_path / "src", tmp_path / "out")


def test_split_folders_win_and_their_meta_csv_is_no_input(tmp_path):
    save(tmp_path / "src" / "train" / "a.nii.gz", case(0)[0])
    (tmp_path / "src" / "meta.csv").write_text(META.format(rows="a;1;m;x;test\n"))
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert _sources(tmp_path / "out", "train") == ["train/a.nii.gz"]
    assert [r["source"] for r in result.rejected] == ["meta.csv"]


def test_a_val_fraction_beside_a_meta_csv_with_val_is_refused(tmp_path):
    from converters import get_kind
    from converters.nifti import NiftiOptions

    _cases(tmp_path / "src", ["s0000", "s0001"])
    (tmp_path / "src" / "meta.csv").write_text(META.format(rows="s0000;1;m;x;train\ns0001;1;m;x;val\n"))
    with pytest.raises(ValueError, match="has a val split or split folders of its own"):
        get_kind("nifti").discover(tmp_path / "src", options=NiftiOptions(val_fraction=0.2))


def test_cases_in_deeper_folders_are_named_by_their_own_folder_and_loose_files_by_their_name(tmp_path):
    _cases(tmp_path / "src" / "part1", ["s0000", "s0001"])
    save(tmp_path / "src" / "scans" / "x.nii.gz", case(0)[0])
    (tmp_path / "src" / "meta.csv").write_text(META.format(rows="s0000;1;m;a;val\ns0001;1;m;a;train\n"
                                                                "x;1;m;a;test\n"))
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert result.rejected == []
    assert (_sources(tmp_path / "out", "train"), _sources(tmp_path / "out", "val"),
            _sources(tmp_path / "out", "test")) == (["part1/s0001/ct.nii.gz"], ["part1/s0000/ct.nii.gz"],
                                                    ["scans/x.nii.gz"])


def test_an_empty_meta_csv_is_a_file_like_any_other_and_a_huge_one_is_refused(tmp_path, monkeypatch):
    import converters.nifti.meta_csv as meta_csv

    save(tmp_path / "src" / "a.nii.gz", case(0)[0])
    (tmp_path / "src" / "meta.csv").write_text("")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert [r["source"] for r in result.rejected] == ["meta.csv"]
    (tmp_path / "src" / "meta.csv").write_text(META.format(rows="a;1;m;x;test\n"))
    monkeypatch.setattr(meta_csv, "MAX_BYTES", 10)
    with pytest.raises(ConvertError, match=r"meta.csv is larger than 10 bytes: not a list of cases"):
        convert_nifti(tmp_path / "src", tmp_path / "out2")
