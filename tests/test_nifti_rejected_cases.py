"""Every file of a rejected NIfTI case is listed (converters/nifti/rejected_cases.py): the file that names the case
with the reason, then its other channel files, its mask and its structure masks, each with a reason pointing to the
case. Before, a case's files other than its first channel file could be in no list at all."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("nibabel")

from conftest_nifti import case, convert_nifti, save  # noqa: E402

from converters.nifti.rejected_cases import CHANNEL, MASK, STRUCTURE, case_rejections, others  # noqa: E402


def _reasons(result) -> dict[str, str]:
    return {r["source"]: r["reason"] for r in result.rejected}


def test_others_lists_each_other_file_once_in_order():
    assert others("a", channels=["a", "b", "c", "b"], masks=["m", "c"], structures=["s1", "s2"]) == (
        ("b", CHANNEL), ("c", CHANNEL), ("m", MASK), ("s1", STRUCTURE), ("s2", STRUCTURE))
    assert [(r.split, r.source, r.reason) for r in case_rejections("val", "a", "why", channels=["a", "b"])] == [
        ("val", "a", "why"), ("val", "b", CHANNEL)]


def test_a_case_of_channel_files_meta_csv_does_not_list_is_rejected_with_all_its_files(tmp_path):
    src = tmp_path / "src"
    for n, name in enumerate(("BraTS_000", "BraTS_001")):
        image, mask = case(n)
        for channel in ("flair", "t1"):
            save(src / name / f"{name}_{channel}.nii.gz", image)
        save(src / name / f"{name}_seg.nii.gz", mask)
    (src / "meta.csv").write_text("image_id;split\nBraTS_000;train\n")
    result = convert_nifti(src, tmp_path / "out", channel="all", keep_phi=True)
    assert _reasons(result) == {"BraTS_001/BraTS_001_flair.nii.gz": "its case is not listed in meta.csv (image_id "
                                                                    "column)",
                                "BraTS_001/BraTS_001_t1.nii.gz": CHANNEL, "BraTS_001/BraTS_001_seg.nii.gz": MASK}


def test_an_nnunet_case_of_channel_files_without_its_mask_lists_each_channel_file(tmp_path):
    src = tmp_path / "task"
    for n in range(3):
        image, mask = case(n)
        for c in range(2):
            save(src / "imagesTr" / f"BRATS_{n:03d}_{c:04d}.nii.gz", image)
        if n:
            save(src / "labelsTr" / f"BRATS_{n:03d}.nii.gz", mask)
    (src / "dataset.json").write_text(json.dumps({"modality": {"0": "FLAIR", "1": "T1w"}}))
    result = convert_nifti(src, tmp_path / "out", channel="all", keep_phi=True)
    assert _reasons(result) == {"imagesTr/BRATS_000_0000.nii.gz": "no mask of the same name in labelsTr "
                                                                  "(labelsTr/BRATS_000.nii.gz)",
                                "imagesTr/BRATS_000_0001.nii.gz": CHANNEL}
