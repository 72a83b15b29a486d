"""Analyze 7.5 and NIfTI pairs (`NAME.hdr` + `NAME.img`: OASIS-1's scans, SPM's output) and FreeSurfer's MGH volumes
(`.mgz`, `.mgh`) convert as NIfTI files do, read by nibabel (converters/nifti/pairs.py); before, each file was
rejected as no NIfTI file and a pair's `.img` was a rejection of its own. The files are written by nibabel, and
the same voxels saved as NIfTI with the same affine are the reference for values and geometry."""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
sys.path.insert(0, str(Path(__file__).parent))
from conftest_dicom import reasons_by_path  # noqa: E402
from conftest_nifti import AFFINE, case, convert_nifti, save, volumes_by_source  # noqa: E402

from converters.nifti.discover import NOT_NIFTI, SAME_NAME  # noqa: E402
from fastdata.errors import ConvertError  # noqa: E402

# voxel axes i, j, k along RAS -x, +z, -y with spacings 0.9, 1.1, 2.0 (FreeSurfer's conformed LIA, scaled)
LIA = np.array([[-0.9, 0.0, 0.0, 95.5], [0.0, 0.0, 2.0, -120.25], [0.0, -1.1, 0.0, 130.0], [0.0, 0.0, 0.0, 1.0]])


def _by_name(dst: Path, result) -> dict[str, tuple[np.ndarray, np.ndarray | None, dict]]:
    return {os.path.basename(k): v for k, v in volumes_by_source(dst, result).items()}


def test_pairs_and_mgh_files_convert_with_the_voxels_and_geometry_of_the_same_nifti(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    image = case(0)[0]
    nib.save(nib.Nifti1Pair(image, LIA), str(src / "pair.hdr"))
    nib.save(nib.Nifti2Pair(image, LIA), str(src / "pair2.HDR"))
    nib.save(nib.Nifti1Pair(image, LIA), str(src / "packed.hdr.gz"))  # a gzip-compressed pair, compressed whole
    nib.save(nib.Nifti1Pair(image, LIA), str(src / "PACKED2.HDR.GZ"))
    nib.save(nib.MGHImage(image.astype(np.int32), LIA), str(src / "brain.mgz"))
    nib.save(nib.MGHImage(image.astype(np.float32), LIA), str(src / "orig.mgh"))
    save(tmp_path / "ref" / "same.nii.gz", image, LIA)
    assert sorted(p.name for p in src.iterdir()) == ["PACKED2.HDR.GZ", "PACKED2.IMG.GZ", "brain.mgz", "orig.mgh",
                                                     "packed.hdr.gz", "packed.img.gz", "pair.hdr", "pair.img",
                                                     "pair2.HDR", "pair2.IMG"]
    assert (src / "packed.img.gz").read_bytes()[:2] == b"\x1f\x8b"
    (src / "stray.img").write_bytes(b"\0" * 64)  # an .img no header names is no volume
    (src / "stray.img.gz").write_bytes(b"\0" * 64)
    result = convert_nifti(src, tmp_path / "out")
    assert reasons_by_path(result) == {"stray.img": NOT_NIFTI, "stray.img.gz": NOT_NIFTI}
    ref_result = convert_nifti(tmp_path / "ref", tmp_path / "ref_out")
    ((ref, _, ref_meta),) = volumes_by_source(tmp_path / "ref_out", ref_result).values()
    got = _by_name(tmp_path / "out", result)
    assert sorted(got) == ["PACKED2.HDR.GZ", "brain.mgz", "orig.mgh", "packed.hdr.gz", "pair.hdr", "pair2.HDR"]
    for name, (arr, mask, meta) in got.items():
        assert mask is None and arr.dtype == np.int16, name  # whole numbers in int16's range, as the NIfTI's
        np.testing.assert_array_equal(arr, ref)
        for key in ("shape", "spacing", "origin", "direction"):
            np.testing.assert_allclose(meta[key], ref_meta[key], atol=1e-5, err_msg=f"{name}: {key}")
        # MGH is in mm; a pair, as a NIfTI file, says its unit (nibabel wrote none: read as mm)
        assert meta["spatial_units"] == ("mm" if name.startswith(("brain", "orig")) else "unknown")
        # the values: MGH holds no scaling; a pair's scl_slope/scl_inter are applied, as a NIfTI file's
        assert meta["units"] == ("stored values" if name.startswith(("brain", "orig")) else ref_meta["units"])
    assert ref_meta["units"] == "stored values (scl_slope/scl_inter applied)"
    assert ref_meta["spacing"] == pytest.approx([2.0, 1.1, 0.9], abs=1e-6)  # (z, y, x): k, j, i


def test_an_analyze_image_takes_nibabels_geometry_and_spms_mat_beside_it(tmp_path: Path):
    """Analyze 7.5 stores voxel sizes and no orientation: nibabel reads x right to left (radiological, as FSL and
    SPM do), and SPM's `NAME.mat` beside the pair gives the affine. The .mat is read with its header."""
    scipy_io = pytest.importorskip("scipy.io")
    src = tmp_path / "oasis"
    src.mkdir()
    image = case(1)[0]
    img = nib.AnalyzeImage(image, None)
    img.header.set_zooms((1.0, 1.25, 1.5))
    nib.save(img, str(src / "OAS1_0001_MR1_mpr-1_anon.hdr"))
    nib.save(img, str(src / "spm.hdr"))
    mat = np.diag([2.0, 3.0, 4.0, 1.0])
    mat[:3, 3] = (-10.0, 20.0, 30.0)
    scipy_io.savemat(str(src / "spm.mat"), {"mat": mat})
    from converters import get_kind

    # a MATLAB file is an images file to the images kind (SVHN's), but not SPM's beside its pair
    assert get_kind("nifti").detect(src) and not get_kind("images").detect(src)
    result = convert_nifti(src, tmp_path / "out")
    assert result.rejected == []
    got = _by_name(tmp_path / "out", result)
    arr, _, meta = got["OAS1_0001_MR1_mpr-1_anon.hdr"]
    np.testing.assert_array_equal(arr, image.transpose(2, 1, 0))
    assert meta["spacing"] == [1.5, 1.25, 1.0] and meta["spatial_units"] == "mm"  # Analyze's unit is the mm
    assert meta["direction"] == [[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [1.0, 0.0, 0.0]]  # i: RAS -x = LPS +x
    arr, _, meta = got["spm.hdr"]
    # the .mat's, in LPS; SPM's matrices take MATLAB's indices from 1, so voxel 0 lies one step before its origin
    assert meta["spacing"] == [4.0, 3.0, 2.0] and meta["origin"] == [8.0, -23.0, 34.0]
    assert meta["direction"] == [[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [-1.0, 0.0, 0.0]]


def test_an_mgz_segmentation_beside_its_image_is_its_mask_and_mgh_frames_are_channels(tmp_path: Path):
    image, mask = case(2)
    nib.save(nib.MGHImage(image.astype(np.int32), LIA), str((tmp_path / "subj01").mkdir() or
                                                            tmp_path / "subj01" / "brain.mgz"))
    nib.save(nib.MGHImage(mask.astype(np.int32), LIA), str(tmp_path / "subj01" / "seg.mgz"))
    result = convert_nifti(tmp_path / "subj01", tmp_path / "out")
    assert result.rejected == []
    ((arr, labels, _),) = volumes_by_source(tmp_path / "out", result).values()
    np.testing.assert_array_equal(labels, mask.transpose(2, 1, 0))
    assert labels.dtype == np.uint8 and arr.shape == labels.shape
    frames = np.stack([case(3)[0], case(4)[0]], axis=-1).astype(np.float32)
    (tmp_path / "dwi").mkdir()
    nib.save(nib.MGHImage(frames, LIA), str(tmp_path / "dwi" / "dwi.mgz"))
    result = convert_nifti(tmp_path / "dwi", tmp_path / "dwi_out", channel=1)
    ((arr, _, meta),) = volumes_by_source(tmp_path / "dwi_out", result).values()
    np.testing.assert_array_equal(arr, case(4)[0].transpose(2, 1, 0))
    assert meta["channel"] == 1


def test_broken_pairs_and_mgh_files_are_rejected_with_their_reason_and_no_name(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    image = case(5)[0]
    save(src / "good.nii.gz", image)
    nib.save(nib.Nifti1Pair(image, AFFINE), str(src / "patient-smith.hdr"))
    (src / "patient-smith.img").unlink()  # a header without its voxels
    nib.save(nib.Nifti1Pair(image, AFFINE), str(src / "gone.hdr.gz"))
    (src / "gone.img.gz").unlink()
    nib.save(nib.Nifti1Pair(image, AFFINE), str(src / "cut.hdr"))
    with open(src / "cut.img", "r+b") as f:
        f.truncate(100)
    nib.save(nib.MGHImage(image.astype(np.int32), AFFINE), str(src / "short.mgz"))
    data = (src / "short.mgz").read_bytes()
    (src / "short.mgz").write_bytes(data[: len(data) // 2])
    (src / "envi.hdr").write_text("ENVI\nsamples = 10\nlines = 10\n")  # a hyperspectral header, no Analyze one
    (src / "envi.img").write_bytes(b"\0" * 100)
    (src / "text.mgz").write_text("not gzip")
    (src / "empty.mgh").write_bytes(b"")
    nib.save(nib.MGHImage(image.astype(np.int32), AFFINE), str(src / "zero.mgh"))
    with open(src / "zero.mgh", "r+b") as f:  # MGH's voxel sizes (delta, big-endian float32 at byte 30): 0 mm
        f.seek(30)
        f.write(struct.pack(">3f", 0.0, 0.0, 0.0))
    nib.save(nib.AnalyzeImage(image, None), str(src / "flat.hdr"))
    with open(src / "flat.hdr", "r+b") as f:  # Analyze's pixdim[1] (byte 80): nibabel would read 0 as 1 mm
        f.seek(80)
        f.write(struct.pack("<f", 0.0))
    nib.save(nib.Nifti1Pair(image, AFFINE), str(src / "twice.hdr"))
    save(src / "twice.nii", image)
    result = convert_nifti(src, tmp_path / "out")
    assert not any("smith" in r["reason"] for r in result.rejected)  # reasons name files by pseudonym
    assert reasons_by_path(result) == {
        "patient-smith.hdr": "patient-smith.hdr: its data file (.img of the same name, beside it) is missing",
        "gone.hdr.gz": "gone.hdr.gz: its data file (.img.gz of the same name, beside it) is missing",
        "cut.hdr": "cut.hdr: cannot read the voxels (OSError)",
        "short.mgz": "short.mgz: not a readable MGH file (EOFError)",  # nibabel reads its footer when it opens it
        "envi.hdr": "envi.hdr: not a readable Analyze or NIfTI pair file (ImageFileError)",
        "text.mgz": "text.mgz: not a readable MGH file (BadGzipFile)",
        "empty.mgh": "empty.mgh: not a readable MGH file (ImageFileError)",
        "zero.mgh": "zero.mgh: the affine gives voxel axes of length [0.0, 0.0, 0.0] mm",
        "flat.hdr": ("flat.hdr: voxel sizes (pixdim) [0.0, 1.0, 1.0] are not positive, and with no sform the geometry "
                     "comes from them (nibabel would read them as 1 mm)"),
        **{name: f"2 volume files of this name in one folder ({SAME_NAME}): keep one" for name in ("twice.hdr",
                                                                                                 "twice.nii")}}
    assert list(_by_name(tmp_path / "out", result)) == ["good.nii.gz"]


def test_a_linked_img_is_refused_with_its_header_when_links_are_not_followed(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    image = case(6)[0]
    nib.save(nib.Nifti1Pair(image, AFFINE), str(tmp_path / "elsewhere.hdr"))
    nib.save(nib.Nifti1Pair(image, AFFINE), str(src / "a.hdr"))
    (src / "a.img").unlink()
    (src / "a.img").symlink_to(tmp_path / "elsewhere.img")
    save(src / "b.nii.gz", image)
    result = convert_nifti(src, tmp_path / "out", follow_symlinks=False)
    reasons = reasons_by_path(result)
    assert sorted(reasons) == ["a.hdr", "a.img"] and reasons["a.hdr"].startswith("its data file was refused: ")
    result = convert_nifti(src, tmp_path / "followed")
    assert result.rejected == [] and len(volumes_by_source(tmp_path / "followed", result)) == 2


def test_a_resume_sees_an_img_rewritten_beside_its_header(tmp_path: Path):
    """The identity a resume compares counts the bytes of the files read with a header, not the header's alone."""
    from converters.nifti.discover import _volume_size

    nib.save(nib.Nifti1Pair(case(7)[0], AFFINE), str(tmp_path / "a.hdr"))
    before = _volume_size(str(tmp_path / "a.hdr"))
    assert before == 348 + (tmp_path / "a.img").stat().st_size
    nib.save(nib.Nifti1Pair(case(7)[0][:10], AFFINE), str(tmp_path / "a.hdr"))
    assert _volume_size(str(tmp_path / "a.hdr")) < before
    sitk = pytest.importorskip("SimpleITK")
    image = sitk.GetImageFromArray(case(7)[0])
    for name in ("b.mhd", "c.mha"):  # a MetaImage's data file beside it, or inside it
        sitk.WriteImage(image, str(tmp_path / name))
    with_raw = sum(f.stat().st_size for f in tmp_path.glob("b.*"))
    assert _volume_size(str(tmp_path / "b.mhd")) == with_raw > 5760  # the voxels' bytes
    assert _volume_size(str(tmp_path / "c.mha")) == (tmp_path / "c.mha").stat().st_size
    (tmp_path / "d.mhd").write_text((tmp_path / "b.mhd").read_text().replace("b.raw", "../b.raw"))
    assert _volume_size(str(tmp_path / "d.mhd")) == (tmp_path / "d.mhd").stat().st_size  # refused when read


def test_an_mgh_source_is_the_nifti_kind(tmp_path: Path):
    from converters import get_kind

    nib.save(nib.MGHImage(case(8)[0].astype(np.int32), AFFINE), str(tmp_path / "T1.mgz"))
    assert get_kind("nifti").detect(tmp_path)
    with pytest.raises(ConvertError, match="were rejected"):
        (tmp_path / "T1.mgz").write_bytes(b"\x1f\x8b broken")
        convert_nifti(tmp_path, tmp_path / "out")


def test_an_img_that_is_a_device_or_a_fifo_is_never_opened(tmp_path: Path):
    """A pair's `.img` linked to /dev/zero, or a FIFO, would hang a read: the walk refuses it, and its header."""
    src = tmp_path / "src"
    src.mkdir()
    nib.save(nib.Nifti1Pair(case(9)[0], AFFINE), str(src / "a.hdr"))
    (src / "a.img").unlink()
    (src / "a.img").symlink_to("/dev/zero")
    nib.save(nib.Nifti1Pair(case(9)[0], AFFINE), str(src / "b.hdr"))
    (src / "b.img").unlink()
    os.mkfifo(src / "b.img")
    save(src / "c.nii.gz", case(9)[0])
    reasons = reasons_by_path(convert_nifti(src, tmp_path / "out"))
    assert reasons == {"a.img": "a character device, not a regular file: never opened",
                       "a.hdr": "its data file was refused: a character device, not a regular file: never opened",
                       "b.img": "a FIFO, not a regular file: never opened",
                       "b.hdr": "its data file was refused: a FIFO, not a regular file: never opened"}
