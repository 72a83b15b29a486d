"""Per-structure mask folders (TotalSegmentator's `s0011/ct.nii.gz` + `s0011/segmentations/liver.nii.gz`, ...):
the classes they name, the merge into one label volume, and every case that is rejected instead, with its files."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("nibabel")
pytest.importorskip("scipy")

from conftest_dicom import load_volume, read_samples, reasons_by_path  # noqa: E402
from conftest_nifti import case, convert_nifti, load_mask, save, zyx  # noqa: E402

from fastdata.errors import ConvertError  # noqa: E402

STRUCTURES = {"liver": 1, "spleen": 2}  # case()'s mask values


def _totalsegmentator(root, cases=3, *, names=STRUCTURES, prefix=""):
    """{case name: (image, mask)}: each case's image and one binary file per structure of `names`."""
    made = {}
    for n in range(cases):
        image, mask = case(n)
        folder = root / f"{prefix}s{n:04d}"
        save(folder / "ct.nii.gz", image)
        for name, value in names.items():
            save(folder / "segmentations" / f"{name}.nii.gz", (mask == value).astype(np.uint8))
        made[folder.name] = (image, mask)
    return made


def _by_source(dst):
    return {load_volume(s)[1]["source"]: s for s in read_samples(dst).values()}


def test_structures_merge_into_one_label_volume_in_sorted_class_order(tmp_path):
    made = _totalsegmentator(tmp_path / "src")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == ["background", "liver", "spleen"] and result.rejected == []
    assert manifest["splits"]["train"]["stats"]["masks"] == 3
    samples = _by_source(tmp_path / "out")
    assert sorted(samples) == ["s0000/ct.nii.gz", "s0001/ct.nii.gz", "s0002/ct.nii.gz"]
    for name, (image, mask) in made.items():
        sample = samples[f"{name}/ct.nii.gz"]
        arr, meta = load_volume(sample)
        np.testing.assert_array_equal(arr, zyx(image))
        np.testing.assert_array_equal(load_mask(sample), zyx(mask))  # liver 1, spleen 2: the sorted order
        assert meta["structures"] == 2 and "label" not in meta and meta["label_max"] == 2
        assert load_mask(sample).dtype == np.uint8


def test_dataset_json_labels_give_the_values_their_order(tmp_path):
    made = _totalsegmentator(tmp_path / "src", cases=1)
    (tmp_path / "src" / "dataset.json").write_text(json.dumps({"labels": {"0": "background", "1": "spleen",
                                                                          "2": "liver"}}))
    convert_nifti(tmp_path / "src", tmp_path / "out")
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["classes"] == ["background", "spleen",
                                                                                       "liver"]
    ((sample),) = read_samples(tmp_path / "out").values()
    mask = zyx(made["s0000"][1])
    np.testing.assert_array_equal(load_mask(sample), np.select([mask == 1, mask == 2], [2, 1], 0))


def test_a_case_that_lacks_a_class_or_holds_another_is_rejected_with_every_file(tmp_path):
    _totalsegmentator(tmp_path / "src", cases=3)
    image, mask = case(7)
    save(tmp_path / "src" / "s0007" / "ct.nii.gz", image)
    save(tmp_path / "src" / "s0007" / "segmentations" / "liver.nii.gz", (mask == 1).astype(np.uint8))
    save(tmp_path / "src" / "s0007" / "segmentations" / "Smith_John.nii.gz", (mask == 2).astype(np.uint8))
    result = convert_nifti(tmp_path / "src", tmp_path / "out")
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["classes"] == ["background", "liver",
                                                                                       "spleen"]
    assert reasons_by_path(result) == {
        "s0007/ct.nii.gz": "a case of per-structure masks that lacks 1 of the classes (spleen) and holds 1 mask(s) "
                           "of no class; its masks must be the classes, exactly: the structures of more than half "
                           "of the cases",
        "s0007/segmentations/Smith_John.nii.gz": "a structure mask that names no class",
        "s0007/segmentations/liver.nii.gz": "the structure mask of a case that was rejected"}
    written = (tmp_path / "out" / "manifest.json").read_text() + "".join(
        s["json"].decode() for s in read_samples(tmp_path / "out").values())
    assert "Smith" not in written and len(read_samples(tmp_path / "out")) == 3
    kept = convert_nifti(tmp_path / "src", tmp_path / "kept", keep_phi=True)
    assert {r["source"]: r["reason"] for r in kept.rejected}["s0007/ct.nii.gz"].startswith(
        "a case of per-structure masks that lacks 1 of the classes (spleen) and holds 1 mask(s) of no class "
        "(Smith_John); ")


def test_a_name_in_half_the_cases_is_no_class(tmp_path):
    """Two cases of liver + spleen, two of liver only: spleen is in half, not more, so liver alone is a class and
    the two cases with a spleen are rejected."""
    _totalsegmentator(tmp_path / "src", cases=2)
    _totalsegmentator(tmp_path / "src", cases=2, names={"liver": 1}, prefix="b")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["classes"] == ["background", "liver"]
    assert sorted(r["source"] for r in result.rejected if r["source"].endswith("ct.nii.gz")) == [
        "s0000/ct.nii.gz", "s0001/ct.nii.gz"]
    assert sorted(_by_source(tmp_path / "out")) == ["bs0000/ct.nii.gz", "bs0001/ct.nii.gz"]


def test_cases_that_do_not_hold_dataset_json_labels_are_rejected_naming_them(tmp_path):
    _totalsegmentator(tmp_path / "src", cases=1)
    _totalsegmentator(tmp_path / "src", cases=1, names={"liver": 1, "kidney": 2}, prefix="k")
    (tmp_path / "src" / "dataset.json").write_text(json.dumps({"labels": {"0": "background", "1": "liver",
                                                                          "2": "kidney"}}))
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert {r["source"]: r["reason"] for r in result.rejected}["s0000/ct.nii.gz"] == (
        "a case of per-structure masks that lacks 1 of the classes (kidney) and holds 1 mask(s) of no class "
        "(spleen); its masks must be the classes, exactly: dataset.json's labels")
    assert sorted(_by_source(tmp_path / "out")) == ["ks0000/ct.nii.gz"]


SPLEEN = "s0000/segmentations/spleen.nii.gz: "


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda m: np.where(m == 2, 255, 0).astype(np.uint8), None),  # 0 / 255 masks are binary too
    (lambda m: m.astype(np.uint8), SPLEEN + "a structure mask marks its voxels with one whole positive value (1, or "
                                            "255); found 1 .. 2"),
    (lambda m: (m > 0).astype(np.uint8), "s0000/ct.nii.gz: structure 'spleen' overlaps 'liver' in {n} voxels, and a "
                                         "label volume holds one class per voxel; --overlap later gives a shared "
                                         "voxel to the later class"),
    (lambda m: np.where(m == 2, 0.5, 0).astype(np.float32), SPLEEN + "a structure mask marks its voxels with one "
                                                                     "whole positive value (1, or 255); found 0.5 .. "
                                                                     "0.5"),
    (lambda m: np.where(m == 2, -1, 0).astype(np.int16), SPLEEN + "a structure mask marks its voxels with one whole "
                                                                  "positive value (1, or 255); found -1 .. -1"),
])
def test_a_structure_mask_that_is_not_binary_or_overlaps_another_rejects_its_case(tmp_path, edit, reason):
    made = _totalsegmentator(tmp_path / "src", cases=2)
    mask = made["s0000"][1]
    save(tmp_path / "src" / "s0000" / "segmentations" / "spleen.nii.gz", edit(mask))
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    if reason is None:
        assert result.rejected == []
        np.testing.assert_array_equal(load_mask(_by_source(tmp_path / "out")["s0000/ct.nii.gz"]), zyx(mask))
        return
    assert result.rejected == [{"split": "train", "source": "s0000/ct.nii.gz",
                                "reason": reason.format(n=int(np.count_nonzero(mask == 1)))},
                               *({"split": "train", "source": f"s0000/segmentations/{s}.nii.gz",
                                  "reason": "the structure mask of a case that was rejected"}
                                 for s in ("liver", "spleen"))]


def test_overlap_later_gives_a_shared_voxel_to_the_later_class_and_counts_it(tmp_path):
    """--overlap later: the spleen's file marks the liver's voxels too, and the spleen, later in class order, takes
    them; the case's json says how many it took from which, and the split's stats sum them. The manifest names the
    rule."""
    made = _totalsegmentator(tmp_path / "src", cases=2)
    mask = made["s0000"][1]
    save(tmp_path / "src" / "s0000" / "segmentations" / "spleen.nii.gz", (mask > 0).astype(np.uint8))
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True, overlap="later")
    assert result.rejected == []
    samples = _by_source(tmp_path / "out")
    np.testing.assert_array_equal(load_mask(samples["s0000/ct.nii.gz"]), zyx(np.where(mask > 0, 2, 0)))
    np.testing.assert_array_equal(load_mask(samples["s0001/ct.nii.gz"]), zyx(made["s0001"][1]))
    shared = int(np.count_nonzero(mask == 1))
    assert load_volume(samples["s0000/ct.nii.gz"])[1]["overlaps"] == [
        {"class": "spleen", "from": "liver", "voxels": shared}]
    assert "overlaps" not in load_volume(samples["s0001/ct.nii.gz"])[1]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["stats"]["overlap_voxels"] == shared
    assert manifest["preprocessing"]["overlap"].startswith("later: a voxel two structures claim takes the later")


def test_a_structure_off_its_images_grid_rejects_its_case(tmp_path):
    made = _totalsegmentator(tmp_path / "src", cases=2)
    save(tmp_path / "src" / "s0000" / "segmentations" / "liver.nii.gz", (made["s0000"][1] == 1).astype(np.uint8),
         np.eye(4))
    rejection, *masks = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True).rejected
    assert [(m["source"], m["reason"]) for m in masks] == [(f"s0000/segmentations/{s}.nii.gz", "the structure mask "
                                                            "of a case that was rejected") for s in ("liver", "spleen")]
    assert rejection["reason"].startswith("s0000/segmentations/liver.nii.gz: the mask's grid (shape [8, 18, 20], "
                                       "spacing [1.0, 1.0, 1.0] mm")


@pytest.mark.parametrize(("beside", "reason"), [
    (["ct.nii.gz", "mr.nii.gz"], "a folder of per-structure masks beside 2 images: its masks are the structures of "
                                 "the one image beside it"),
    ([], "a folder of per-structure masks beside 0 images: its masks are the structures of the one image beside it"),
    (["ct.nii.gz", "ct_seg.nii.gz"], "a mask beside a folder of per-structure masks: a case has one or the other"),
])
def test_a_structure_folder_beside_anything_but_one_image_is_rejected_file_by_file(tmp_path, beside, reason):
    image, mask = case(0)
    for name in beside:
        save(tmp_path / "src" / "s0000" / name, image)
    save(tmp_path / "src" / "s0000" / "segmentations" / "liver.nii.gz", (mask == 1).astype(np.uint8))
    save(tmp_path / "src" / "other.nii.gz", image)
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        **{f"s0000/{name}": reason for name in beside}, "s0000/segmentations/liver.nii.gz": reason}
    assert sorted(_by_source(tmp_path / "out")) == ["other.nii.gz"]


def test_a_channel_name_refuses_structure_folders(tmp_path):
    _totalsegmentator(tmp_path / "src", cases=1)
    for modality in ("t1", "flair"):
        save(tmp_path / "src" / "P1" / f"P1_{modality}.nii.gz", case(1)[0])
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True, channel="t1")
    assert {r["source"]: r["reason"] for r in result.rejected}["s0000/ct.nii.gz"] == (
        "a case of per-structure masks, but --channel t1 takes the channels of cases with one mask")
    assert len(result.rejected) == 3 and sorted(_by_source(tmp_path / "out")) == ["P1/P1_t1.nii.gz"]


def test_cases_of_one_label_mask_are_rejected_beside_structure_folders(tmp_path):
    _totalsegmentator(tmp_path / "src", cases=1)
    image, mask = case(5)
    save(tmp_path / "src" / "case_5" / "imaging.nii.gz", image)
    save(tmp_path / "src" / "case_5" / "segmentation.nii.gz", mask)
    save(tmp_path / "src" / "loose.nii.gz", image)  # no mask: converted
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        "case_5/imaging.nii.gz": "a case whose mask holds label values, in a dataset of per-structure mask folders: "
                                 "convert them apart",
        "case_5/segmentation.nii.gz": "the mask of a case that was rejected"}
    assert sorted(_by_source(tmp_path / "out")) == ["loose.nii.gz", "s0000/ct.nii.gz"]


def test_a_structure_named_background_is_refused(tmp_path):
    _totalsegmentator(tmp_path / "src", cases=1, names={"background": 1, "liver": 2})
    with pytest.raises(ConvertError, match="^a structure mask is named 'background' in most cases: value 0 is "
                                           "background, so no structure may take that name; rename those files$"):
        convert_nifti(tmp_path / "src", tmp_path / "out")


def test_classes_span_the_split_folders(tmp_path):
    _totalsegmentator(tmp_path / "src" / "train", cases=2)
    _totalsegmentator(tmp_path / "src" / "val", cases=1, prefix="v")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == ["background", "liver", "spleen"] and result.rejected == []
    assert {s: manifest["splits"][s]["samples"] for s in manifest["splits"]} == {"train": 2, "val": 1}


def test_a_structure_gone_since_discovery_rejects_its_case(tmp_path, monkeypatch):
    from converters import get_kind
    from converters.nifti import NiftiOptions
    from converters.nifti.case import process_case

    _totalsegmentator(tmp_path / "src", cases=1)
    kind = get_kind("nifti")
    options = NiftiOptions(keep_phi=True)
    ((item,),) = kind.discover(tmp_path / "src", options=options).splits.values()
    assert [rel for _, rel in item.payload.structures] == ["s0000/segmentations/liver.nii.gz",
                                                           "s0000/segmentations/spleen.nii.gz"]
    (tmp_path / "src" / "s0000" / "segmentations" / "spleen.nii.gz").unlink()
    assert process_case(item, opts=options).reason == (
        "file vanished since discovery: s0000/segmentations/spleen.nii.gz")


def test_pseudonyms_name_the_structures_and_a_resume_sees_them_change(tmp_path):
    from converters import get_kind
    from converters.nifti import NiftiOptions

    _totalsegmentator(tmp_path / "src", cases=1)
    kind = get_kind("nifti")
    options = NiftiOptions(salt="s")
    discovery, paths = kind.pseudonymize(kind.discover(tmp_path / "src", options=options), options)
    ((item,),) = discovery.splits.values()
    assert [paths[name] for _, name in item.payload.structures] == ["s0000/segmentations/liver.nii.gz",
                                                                    "s0000/segmentations/spleen.nii.gz"]
    before = discovery.identity
    save(tmp_path / "src" / "s0000" / "segmentations" / "spleen.nii.gz", np.zeros((20, 18, 8), np.uint8))
    assert kind.discover(tmp_path / "src", options=options).identity != before


def test_past_255_structures_the_label_volume_is_uint16(tmp_path):
    """256 structures of one voxel each: values 1..256 need uint16 (sorted names give voxel n value n + 1)."""
    image = np.arange(256, dtype=np.int16).reshape(8, 8, 4)
    save(tmp_path / "src" / "s0" / "ct.nii.gz", image)
    for n in range(256):
        save(tmp_path / "src" / "s0" / "segmentations" / f"part{n:03d}.nii.gz",
             (image == n).astype(np.uint8))
    convert_nifti(tmp_path / "src", tmp_path / "out")
    ((sample),) = read_samples(tmp_path / "out").values()
    mask = load_mask(sample)
    assert mask.dtype == np.uint16
    np.testing.assert_array_equal(mask, zyx(image) + 1)


def test_masks_in_a_folder_below_a_structure_folder_are_rejected_and_the_image_is_unlabeled(tmp_path):
    image, mask = case(0)
    save(tmp_path / "src" / "s0" / "ct.nii.gz", image)
    save(tmp_path / "src" / "s0" / "segmentations" / "organs" / "liver.nii.gz", (mask == 1).astype(np.uint8))
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        "s0/segmentations/organs/liver.nii.gz": "inside a folder whose name says it holds masks, not images: masks "
                                                "are paired with images in one case per folder, or the "
                                                "imagesTr/labelsTr layout (docs/volumes.md)"}
    ((sample),) = read_samples(tmp_path / "out").values()
    assert list(sample) == ["npy", "json"]


def test_a_reason_lists_five_structure_names_then_counts_the_rest():
    from converters.nifti.structures import _listed

    assert _listed({"b", "a"}) == "a, b"
    assert _listed({f"s{n}" for n in range(5)}) == "s0, s1, s2, s3, s4"
    assert _listed({f"s{n}" for n in range(8)}) == "s0, s1, s2, s3, s4 and 3 more"


def test_structures_picks_masks_by_any_of_their_names_and_leaves_the_others_unread(tmp_path):
    """--structures over TotalSegmentator's folders: the classes are the named ones, in that order, each matched by
    any of its names in any case ("spleen|Milz"), and a case's other masks (the liver here) are not read. A case
    without one of the classes, or with two masks of one, is rejected with the files it was picked from."""
    made = _totalsegmentator(tmp_path / "src", cases=2)
    made |= _totalsegmentator(tmp_path / "src", cases=1, names={"liver": 1, "MILZ": 2}, prefix="de")
    _totalsegmentator(tmp_path / "src", cases=1, names={"liver": 1}, prefix="no")
    _totalsegmentator(tmp_path / "src", cases=1, names={"spleen": 2, "milz": 2}, prefix="two")
    (tmp_path / "src" / "s0000" / "segmentations" / "liver.nii.gz").write_bytes(b"not read")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True, structures=("spleen|Milz",))
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == ["background", "spleen"]
    assert manifest["preprocessing"]["structures"] == ["spleen|Milz"]
    samples = _by_source(tmp_path / "out")
    assert sorted(samples) == ["des0000/ct.nii.gz", "s0000/ct.nii.gz", "s0001/ct.nii.gz"]
    for name in ("s0000", "des0000"):
        np.testing.assert_array_equal(load_mask(samples[f"{name}/ct.nii.gz"]), zyx(made[name][1] == 2))
    assert {r["source"]: r["reason"] for r in result.rejected} == {
        "nos0000/ct.nii.gz": "a case of per-structure masks that lacks 1 of the classes (spleen); it needs one mask "
                             "of each --structures class",
        "twos0000/ct.nii.gz": "a case of per-structure masks that holds two masks of one class: spleen (milz, "
                              "spleen); it needs one mask of each --structures class",
        "twos0000/segmentations/milz.nii.gz": "the structure mask of a case that was rejected",
        "twos0000/segmentations/spleen.nii.gz": "the structure mask of a case that was rejected"}


def test_a_picked_case_is_rejected_with_every_problem_it_has(tmp_path):
    """Two classes held twice each, and a class missing beside one held twice: each reason lists them all."""
    _totalsegmentator(tmp_path / "src", cases=1)
    _totalsegmentator(tmp_path / "src", cases=1, names={"liver": 1, "LEBER": 1, "spleen": 2, "milz": 2}, prefix="a")
    _totalsegmentator(tmp_path / "src", cases=1, names={"spleen": 2, "milz": 2}, prefix="b")
    result = convert_nifti(tmp_path / "src", tmp_path / "out", keep_phi=True, structures=("liver|leber", "spleen|milz"))
    reasons = {r["source"]: r["reason"] for r in result.rejected if r["source"].endswith("ct.nii.gz")}
    assert reasons == {
        "as0000/ct.nii.gz": "a case of per-structure masks that holds two masks of one class: liver (LEBER, liver); "
                            "spleen (milz, spleen); it needs one mask of each --structures class",
        "bs0000/ct.nii.gz": "a case of per-structure masks that lacks 1 of the classes (liver) and holds two masks of "
                            "one class: spleen (milz, spleen); it needs one mask of each --structures class"}
    assert sorted(_by_source(tmp_path / "out")) == ["s0000/ct.nii.gz"]


def test_structures_no_case_holds_or_a_source_without_structure_folders_stop_the_conversion(tmp_path):
    """A --structures class that no case holds stops the conversion, listing the structures of most cases (never
    a rarer file name, which may be a patient's); so does --structures over masks of label values."""
    _totalsegmentator(tmp_path / "src", cases=2)
    _totalsegmentator(tmp_path / "src", cases=1, names={"liver": 1, "Smith_John": 2}, prefix="x")
    with pytest.raises(ConvertError, match=r"--structures names \['kidney\|niere'\], which no case's structure "
                                           r"masks hold; the structures of most cases are \['liver', 'spleen'\]$"):
        convert_nifti(tmp_path / "src", tmp_path / "out", structures=("liver", "kidney|niere"))
    image, mask = case(0)
    save(tmp_path / "plain" / "ct.nii.gz", image)
    save(tmp_path / "plain" / "ct_seg.nii.gz", mask)
    with pytest.raises(ConvertError, match=r"--structures liver, but no case of the source has a folder of "
                                           "per-structure masks"):
        convert_nifti(tmp_path / "plain", tmp_path / "plain_out", structures=("liver",))
    save(tmp_path / "msd" / "imagesTr" / "a_000_0000.nii.gz", image)
    save(tmp_path / "msd" / "labelsTr" / "a_000.nii.gz", mask)
    with pytest.raises(ConvertError, match="--structures liver: the imagesTr layout's masks hold label values"):
        convert_nifti(tmp_path / "msd", tmp_path / "msd_out", structures=("liver",))
