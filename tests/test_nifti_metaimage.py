"""MetaImage volumes (`.mhd` with its `.raw` or `.zraw`, and `.mha`: LUNA16's CT, PROMISE12's MR) convert as NIfTI
volumes do (converters/nifti/metaimage.py); before, each file was rejected as no NIfTI file. The files are written by
SimpleITK, and ITK's own index-to-point transform is the reference for the geometry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sitk = pytest.importorskip("SimpleITK")
sys.path.insert(0, str(Path(__file__).parent))
from conftest_dicom import reasons_by_path  # noqa: E402
from conftest_nifti import convert_nifti, volumes_by_source  # noqa: E402

from converters.nifti.discover import NOT_NIFTI  # noqa: E402
from fastdata.errors import ConvertError  # noqa: E402

LUNA = "1.3.6.1.4.1.14519.5.2.1.6279.6001.105756658031515062000744821260"  # a LUNA16 series' name
# index axis x runs along LPS -y, y along +x, z along +z: a direction ITK keeps as written
DIRECTION = (0.0, 1.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def ct(seed: int, shape: tuple[int, int, int] = (7, 9, 11)) -> np.ndarray:
    """int16 HU voxels in ITK's array order (z, y, x)."""
    return np.random.default_rng(seed).integers(-1024, 2000, shape).astype(np.int16)


def write(path: Path, voxels: np.ndarray, *, spacing=(0.7, 0.8, 2.5), origin=(-150.5, -170.0, -310.25),
          direction=DIRECTION, compress: bool = False) -> Path:
    image = sitk.GetImageFromArray(voxels, isVector=voxels.ndim == 4)
    image.SetSpacing(spacing)
    image.SetOrigin(origin)
    image.SetDirection(direction)
    path.parent.mkdir(parents=True, exist_ok=True)
    sitk.WriteImage(image, str(path), useCompression=compress)
    return path


def test_luna16_mhd_raw_zraw_and_mha_convert_with_their_voxels_and_itk_geometry(tmp_path: Path):
    src = tmp_path / "subset0"
    made = {f"{LUNA}.mhd": ct(0), "compressed.mhd": ct(1), "single.mha": ct(2)}
    for name, voxels in made.items():
        write(src / name, voxels, compress=name.startswith("compressed"))
    assert sorted(p.name for p in src.iterdir()) == sorted([*made, f"{LUNA}.raw", "compressed.zraw"])
    (src / "annotations.txt").write_text("seriesuid,coordX\n")
    result = convert_nifti(src, tmp_path / "out")
    assert reasons_by_path(result) == {"annotations.txt": NOT_NIFTI}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["kind"] == "nifti" and manifest["splits"]["train"]["samples"] == 3
    got = volumes_by_source(tmp_path / "out", result)
    assert sorted(got) == sorted(made)
    reference = sitk.ReadImage(str(src / f"{LUNA}.mhd"))
    for name, voxels in made.items():
        arr, mask, meta = got[name]
        assert mask is None and arr.dtype == np.int16
        np.testing.assert_array_equal(arr, voxels)
        assert meta["spacing"] == [2.5, 0.8, 0.7] and meta["shape"] == [7, 9, 11] and meta["resampled"] is False
        assert meta["origin"] == [-150.5, -170.0, -310.25] and meta["spatial_units"] == "mm"
        assert meta["units"] == "stored values"  # a MetaImage file holds no scaling: not NIfTI's scl_slope
        assert meta["direction"] == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]  # (z, y, x): D's columns
    rng = np.random.default_rng(0)
    _, _, meta = got[f"{LUNA}.mhd"]
    for _ in range(20):
        k, j, i = (int(rng.integers(n)) for n in made[f"{LUNA}.mhd"].shape)
        lps = np.asarray(meta["origin"]) + np.asarray([k, j, i]) * np.asarray(meta["spacing"]) @ np.asarray(
            meta["direction"])
        np.testing.assert_allclose(lps, reference.TransformIndexToPhysicalPoint((i, j, k)), atol=1e-6)


def test_a_segmentation_beside_its_image_is_its_mask_and_a_vector_image_has_channels(tmp_path: Path, monkeypatch):
    read = sitk.ReadImage
    src = tmp_path / "promise12"
    image = ct(3)
    mask = np.zeros(image.shape, np.uint8)
    mask[2:5, 3:7, 4:9] = 1
    write(src / "Case00.mhd", image)
    write(src / "Case00_segmentation.mhd", mask)
    result = convert_nifti(src, tmp_path / "out", spacing=(2.5, 1.6, 1.4))
    assert result.rejected == []
    ((arr, labels, meta),) = volumes_by_source(tmp_path / "out", result).values()
    assert reasons_by_path(result, key="source")[meta["label"]] == "Case00_segmentation.mhd"
    assert labels.shape == arr.shape == (7, 5, 6) and int(labels.max()) == 1
    np.testing.assert_array_equal(labels, mask[:, ::2, ::2])  # nearest on a grid twice as coarse in y and x
    write(tmp_path / "rgb" / "a.mha", np.stack([ct(4), ct(5)], axis=-1))
    result = convert_nifti(tmp_path / "rgb", tmp_path / "out2", channel=1)
    ((arr, _, meta),) = volumes_by_source(tmp_path / "out2", result).values()
    np.testing.assert_array_equal(arr, ct(5))
    reads = []
    monkeypatch.setattr(sitk, "ReadImage", lambda *a, **k: reads.append(a) or read(*a, **k))
    result = convert_nifti(tmp_path / "rgb", tmp_path / "all", channel="all")
    ((arr, _, meta),) = volumes_by_source(tmp_path / "all", result).values()
    np.testing.assert_array_equal(arr, np.stack([ct(4), ct(5)]))
    assert meta["axes"] == "czyx" and len(reads) == 1  # the voxels of both channels read at once
    assert meta["channels"] == ["0", "1"]  # counted on the header by discovery (it found none before: nibabel's)
    with pytest.raises(ConvertError, match=r"all 1 input\(s\) were rejected \(1 x --channel 2, but the image has 2 "
                                           r"channel\(s\)\)"):
        convert_nifti(tmp_path / "rgb", tmp_path / "out3", channel=2)


def header(name: str, data_file: str, dims: str = "4 4 2") -> str:
    return (f"ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\nCompressedData = "
            f"False\nTransformMatrix = 1 0 0 0 1 0 0 0 1\nOffset = 0 0 0\nElementSpacing = 1 1 1\nDimSize = {dims}\n"
            f"ElementType = MET_SHORT\nElementDataFile = {data_file}\n")


OUTSIDE = "its ElementDataFile names no file beside it; only a file in the header's folder is read"
LISTED = "its ElementDataFile names a list of files; only one data file (or LOCAL) is read"


@pytest.mark.parametrize("data_file, reason", [
    ("/dev/zero", OUTSIDE),
    ("../secret.raw", OUTSIDE),
    ("..", OUTSIDE),
    ("LIST", LISTED),
    ("slice%03d.raw 1 2 1", LISTED),
    ("slice%03d.raw", LISTED),
    ("LIST 2D", LISTED),
    ("", OUTSIDE),
    (".", OUTSIDE),
    ("..\\secret.raw", OUTSIDE),
    ("my scan.raw", None),  # one file whose name has a space: ITK reads it so, and so is it checked
    ("\udcff.raw", "its ElementDataFile is no UTF-8 text"),
    ("Smith_John.raw", "the file its ElementDataFile names is not beside it"),  # and the name is not written
    # ITK reads the first ElementDataFile line, whatever run of ':' and '=' follows its key: so is it checked
    ("good.raw\nElementDataFile: /dev/zero", None),
    ("/dev/zero\nElementDataFile = good.raw", OUTSIDE),
])
def test_a_header_naming_data_anywhere_but_beside_it_is_rejected_before_itk_reads_it(tmp_path: Path, data_file: str,
                                                                                    reason: str):
    (tmp_path / "secret.raw").write_bytes(np.arange(32, dtype=np.int16).tobytes())
    src = tmp_path / "src"
    write(src / "good.mhd", ct(6))
    if reason is None:  # the first line is good.raw's, or a file beside it: what ITK reads
        (src / "my scan.raw").write_bytes(np.arange(32, dtype=np.int16).tobytes())
        (src / "evil.mhd").write_text(header("evil", data_file))
        result = convert_nifti(src, tmp_path / "out")
        assert "evil.mhd" not in reasons_by_path(result)  # (a data file named apart from its header is one too)
        assert json.loads((tmp_path / "out" / "manifest.json").read_text())["splits"]["train"]["samples"] == 2
        return
    (src / "evil.mhd").write_bytes(header("evil", data_file).encode("utf-8", "surrogateescape"))
    reasons = reasons_by_path(convert_nifti(src, tmp_path / "out"))
    assert reasons == {"evil.mhd": f"evil.mhd: {reason}"}
    assert "Smith" not in (tmp_path / "out" / "manifest.json").read_text()
    for separator in (":", ":=", " = :") if data_file in ("/dev/zero", "../secret.raw") else ():  # as ITK reads it
        (src / "evil.mhd").write_text(header("evil", "x").replace("ElementDataFile = x", f"ElementDataFile{separator}"
                                                                  f"{data_file}\nElementDataFile = good.raw"))
        reasons = reasons_by_path(convert_nifti(src, tmp_path / f"out{separator}"))
        assert reasons == {"evil.mhd": f"evil.mhd: {reason}"}, separator


def test_broken_metaimage_files_are_rejected_with_their_reason_and_no_path(tmp_path: Path):
    src = tmp_path / "src"
    write(src / "good.mhd", ct(7))
    write(src / "short.mhd", ct(8))
    raw = (src / "short.raw").read_bytes()
    (src / "short.raw").write_bytes(raw[:len(raw) // 2])
    (src / "nodata.mhd").write_text("ObjectType = Image\nNDims = 3\n")
    (src / "flat.mhd").write_text(header("flat", "flat.raw", dims="4 4").replace("NDims = 3", "NDims = 2"))
    (src / "flat.raw").write_bytes(b"\0" * 32)
    (src / "huge.mhd").write_text(header("huge", "huge.raw", dims="100000 100000 1000"))
    (src / "huge.raw").write_bytes(b"\0" * 64)
    (src / "junk.mha").write_bytes(b"\xff\xfe" * 100)
    (src / "odd.mhd").write_text(header("odd", "odd.raw").replace("NDims = 3", "NDims = three"))
    (src / "odd.raw").write_bytes(b"\0" * 64)
    (src / "stray.raw").write_bytes(b"\0" * 64)  # no header of its name
    (src / "good.txt").write_text("notes")  # beside good.mhd, but no data file
    result = convert_nifti(src, tmp_path / "out")
    reasons = reasons_by_path(result)
    assert reasons == {
        "short.mhd": "short.mhd: cannot read the voxels (RuntimeError)",
        "nodata.mhd": "nodata.mhd: not a MetaImage header (no ElementDataFile line in its first 65536 bytes)",
        "flat.mhd": "flat.mhd: a 2D MetaImage; volumes are 3D",
        "huge.mhd": "the image holds 10000000000000 voxels, more than --max-voxels 536870912 (about 114,440,918 MiB "
                    "of memory to convert)",  # from the header, before a voxel is read
        "junk.mha": "junk.mha: not a MetaImage header (no ElementDataFile line in its first 65536 bytes)",
        "odd.mhd": "odd.mhd: not a readable MetaImage file (RuntimeError)",
        "stray.raw": NOT_NIFTI,
        "good.txt": NOT_NIFTI,
    }
    assert all(str(tmp_path) not in r["reason"] for r in result.rejected)  # ITK's messages quote paths: not kept
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["splits"]["train"]["samples"] == 1


def test_the_cli_detects_a_folder_of_mhd_and_raw_files_as_volumes(tmp_path: Path):
    from fastdata.cli import main as cli

    write(tmp_path / "src" / f"{LUNA}.mhd", ct(9))
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "out"), "--salt", "s", "-j", "1",
                "--no-progress"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["kind"] == "nifti" and manifest["splits"]["train"]["samples"] == 1


def test_the_real_brain_as_metaimage_converts_to_what_its_nifti_file_converts_to(tmp_path: Path):
    """nibabel's bundled real MR brain, converted from its NIfTI file (nibabel) and from the MetaImage files ITK
    writes of it (SimpleITK): the same voxels, spacing, origin and directions, resampled alike."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
    from nifti_sample import LUNA_UID, anatomical, metaimage_task

    (tmp_path / "nii").mkdir()
    (tmp_path / "nii" / "brain.nii").write_bytes(anatomical().read_bytes())
    metaimage_task(tmp_path / "luna")
    for spacing in (None, (2.5, 1.5, 1.5)):
        extra = {} if spacing is None else {"spacing": spacing}
        nii_out, mhd_out = tmp_path / f"nii-out{spacing}", tmp_path / f"mhd-out{spacing}"
        nii = volumes_by_source(nii_out, convert_nifti(tmp_path / "nii", nii_out, **extra))
        mhd = volumes_by_source(mhd_out, convert_nifti(tmp_path / "luna" / "subset0", mhd_out, **extra))
        (a, _, ma), (b, _, mb) = nii["brain.nii"], mhd[f"{LUNA_UID}.mhd"]
        np.testing.assert_array_equal(a, b)
        for field in ("shape", "spacing", "origin", "direction", "original_shape"):
            np.testing.assert_allclose(ma[field], mb[field], atol=1e-4)
        assert (ma["orientation"], ma["resampled"]) == (mb["orientation"], mb["resampled"]) == (
            ma["orientation"], spacing is not None)


def test_without_simpleitk_a_metaimage_case_says_how_to_install_it(tmp_path: Path, monkeypatch):
    from converters.nifti.volume import load

    write(tmp_path / "a.mhd", ct(10))
    monkeypatch.setitem(sys.modules, "SimpleITK", None)  # not installed
    with pytest.raises(Exception, match=r"^'SimpleITK' is not installed; install it with: pip install "
                                        r"'fastdata\[nifti\]'$"):
        load(str(tmp_path / "a.mhd"), "a.mhd", 10**6)


def test_a_metaimage_converts_where_nibabel_is_not_installed(tmp_path: Path, monkeypatch):
    """SimpleITK reads MetaImage files whole; nothing on their way asks for nibabel (what a volume's values are is
    told without it)."""
    from converters.nifti import volume

    write(tmp_path / "a.mhd", ct(11))
    image = volume.load(str(tmp_path / "a.mhd"), "a.mhd", 10**6)
    monkeypatch.setitem(sys.modules, "nibabel", None)  # import nibabel raises ImportError
    assert volume.grid_of(image, "a.mhd").values == "stored values"
    np.testing.assert_array_equal(volume.voxels(image, "a.mhd", None), ct(11))
