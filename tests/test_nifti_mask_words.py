"""`--mask-word WORD`: a mask is found by a word of its file name (seg, label, mask, gt and their kin); datasets that
name their masks otherwise (LA-2018's `laendo.nrrd` beside `lgemri.nrrd`, FreeSurfer's `aseg.mgz`) had each mask
converted as an image of its own, a case without labels. The user's words join the built-in ones
(converters/nifti/case_folders.py MaskWords)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
sys.path.insert(0, str(Path(__file__).parent))
from conftest_dicom import reasons_by_path  # noqa: E402
from conftest_nifti import AFFINE, case, convert_nifti, save, volumes_by_source  # noqa: E402

from converters.nifti.options import NiftiOptions  # noqa: E402
from fastdata.cli import main as cli  # noqa: E402


def _masks_by_image(dst: Path, result) -> dict[str, np.ndarray | None]:
    """{folder/file: its mask or None} of a converted split."""
    return {"/".join(Path(name).parts[-2:]): mask for name, (_, mask, _) in volumes_by_source(dst, result).items()}


def test_a_case_folder_whose_mask_has_another_name_is_one_case_with_mask_word(tmp_path: Path):
    image, mask = case(0)
    for n in range(2):  # LA-2018: each case folder holds lgemri.nrrd and its mask laendo.nrrd
        save(tmp_path / "src" / f"case{n}" / "lgemri.nii.gz", image)
        save(tmp_path / "src" / f"case{n}" / "laendo.nii.gz", mask)
    plain = convert_nifti(tmp_path / "src", tmp_path / "plain")
    assert sorted(_masks_by_image(tmp_path / "plain", plain)) == [f"case{n}/{name}" for n in range(2) for name in
                                                                  ("laendo.nii.gz", "lgemri.nii.gz")]
    assert not any(m is not None for m in _masks_by_image(tmp_path / "plain", plain).values())
    result = convert_nifti(tmp_path / "src", tmp_path / "out", mask_words=("LAendo",))  # any case
    assert result.rejected == []
    masks = _masks_by_image(tmp_path / "out", result)
    assert sorted(masks) == ["case0/lgemri.nii.gz", "case1/lgemri.nii.gz"]
    for got in masks.values():
        np.testing.assert_array_equal(got, mask.transpose(2, 1, 0))
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["preprocessing"]["mask_words"] == ["LAendo"]


def test_a_freesurfer_folder_with_aseg_as_its_mask_and_brain_as_its_channel(tmp_path: Path):
    image, mask = case(1)
    subject = tmp_path / "src" / "subj01"
    subject.mkdir(parents=True)
    for name, voxels in (("brain", image), ("T1", image // 2), ("aseg", mask)):
        nib.save(nib.MGHImage(voxels.astype(np.int32), AFFINE), str(subject / f"{name}.mgz"))
    result = convert_nifti(tmp_path / "src", tmp_path / "out", mask_words=("aseg",), channel="brain")
    ((arr, got, meta),) = volumes_by_source(tmp_path / "out", result).values()
    np.testing.assert_array_equal(arr, image.transpose(2, 1, 0))
    np.testing.assert_array_equal(got, mask.transpose(2, 1, 0))
    assert meta["channel"] == "brain"
    without = convert_nifti(tmp_path / "src", tmp_path / "without", channel="brain")  # no mask: brain alone
    ((_, got, _),) = volumes_by_source(tmp_path / "without", without).values()
    assert got is None


def test_masks_of_a_mask_word_pair_with_their_images_by_name(tmp_path: Path):
    src = tmp_path / "src"
    made = {}
    for n, organ in enumerate(("liver", "kidney")):
        image, mask = case(n + 2)
        made[organ] = mask
        save(src / f"{organ}.nii.gz", image)
        save(src / f"{organ}-manual.nii.gz", mask)
    save(src / "spleen-manual.nii.gz", case(4)[1])  # a mask no image answers to
    result = convert_nifti(src, tmp_path / "out", mask_words=("manual",))
    assert list(reasons_by_path(result)) == ["spleen-manual.nii.gz"]
    masks = _masks_by_image(tmp_path / "out", result)
    assert sorted(masks) == ["kidney.nii.gz", "liver.nii.gz"]
    for organ, mask in made.items():
        np.testing.assert_array_equal(masks[f"{organ}.nii.gz"], mask.transpose(2, 1, 0))


def test_a_structure_folder_named_by_a_mask_word(tmp_path: Path):
    image, mask = case(5)
    save(tmp_path / "src" / "s01" / "ct.nii.gz", image)
    for value, name in ((1, "a"), (2, "b")):
        save(tmp_path / "src" / "s01" / "organs" / f"{name}.nii.gz", (mask == value).astype(np.uint8))
    save(tmp_path / "src" / "s01" / "organs" / "deeper" / "c.nii.gz", mask)  # a mask folder's folder: no images
    result = convert_nifti(tmp_path / "src", tmp_path / "out", mask_words=("organs",))
    assert {k: v.split(":")[0] for k, v in reasons_by_path(result).items()} == {
        "s01/organs/deeper/c.nii.gz": "inside a folder whose name says it holds masks, not images"}
    ((_, got, meta),) = volumes_by_source(tmp_path / "out", result).values()
    np.testing.assert_array_equal(got, mask.transpose(2, 1, 0))
    assert meta["structures"] == 2


@pytest.mark.parametrize("words", [("a_b",), ("",), ("x" * 33,), ("two words",), ("a.b",), ["aseg"], (3,)])
def test_a_mask_word_that_is_no_word_of_a_name_is_refused(words):
    with pytest.raises(ValueError, match="--mask-word must be one word of a file name"):
        NiftiOptions(mask_words=words)


def test_the_cli_takes_mask_word_more_than_once(tmp_path: Path):
    image, mask = case(6)
    save(tmp_path / "src" / "c1" / "img.nii.gz", image)
    save(tmp_path / "src" / "c1" / "aseg.nii.gz", mask)
    save(tmp_path / "src" / "c2" / "img.nii.gz", image)
    save(tmp_path / "src" / "c2" / "laendo.nii.gz", mask)
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "out"), "--kind", "nifti", "--mask-word", "aseg",
                "--mask-word", "laendo", "--salt", "s", "--no-progress"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["preprocessing"]["mask_words"] == ["aseg", "laendo"]
    assert manifest["splits"]["train"]["samples"] == 2 and manifest["rejected"] == []
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "bad"), "--kind", "nifti", "--mask-word", "a_b",
                "--no-progress"]) == 2
