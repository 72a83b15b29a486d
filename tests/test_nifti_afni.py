"""AFNI datasets (`NAME+VIEW.HEAD` with `.BRIK`, `.BRIK.gz` or `.BRIK.bz2`) convert as NIfTI files do, read by
nibabel (converters/nifti/afni.py); before, a tree of them was no input fastdata knew. The datasets are written in
fixtures with known voxels, scaling and geometry (scripts/afni_files.py), and nibabel's own bundled AFNI datasets,
written by AFNI, are converted for realism."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from afni_files import Afni, write_afni  # noqa: E402
from conftest_dicom import reasons_by_path  # noqa: E402
from conftest_nifti import convert_nifti, volumes_by_source  # noqa: E402
from nifti_sample import afni_subjects, anatomical, bright_half  # noqa: E402

from converters.nifti import afni  # noqa: E402
from converters.nifti.discover import NOT_NIFTI  # noqa: E402
from fastdata.errors import ConvertError  # noqa: E402

T = 0.3  # radians: the i and j axes turned about z (an oblique acquisition)
# LPS mm of voxel (i, j, k): i 0.8 mm along (cos T, sin T, 0), j 1.2 mm along (-sin T, cos T, 0) reversed, k 2.5 mm
MATRIX = np.array([[0.8 * math.cos(T), 1.2 * math.sin(T), 0.0, -10.0],
                   [0.8 * math.sin(T), -1.2 * math.cos(T), 0.0, 40.0],
                   [0.0, 0.0, 2.5, -30.0]])
BUNDLED = Path(nib.__file__).parent / "tests" / "data"  # AFNI datasets written by AFNI, shipped with nibabel


def _stored(seed: int, shape: tuple[int, ...] = (6, 5, 4), dtype: type = np.int16) -> np.ndarray:
    return np.random.default_rng(seed).integers(-300, 300, shape).astype(dtype)


def _by_name(dst: Path, result) -> dict[str, tuple[np.ndarray, np.ndarray | None, dict]]:
    return {Path(k).name: v for k, v in volumes_by_source(dst, result).items()}


def _zyx(ijk: np.ndarray) -> np.ndarray:
    return ijk.transpose(2, 1, 0)


def test_datasets_convert_with_their_values_scaling_and_geometry_in_each_compression(tmp_path: Path):
    """The voxels in (z, y, x) = (k, j, i) order, BRICK_FLOAT_FACS applied, and the geometry IJK_TO_DICOM_REAL's
    columns (an oblique one and a reversed one included) and origin, already in LPS; a big-endian dataset alike."""
    src = tmp_path / "src"
    stored = _stored(0)
    history = "3dcopy /home/smith/scans/Smith_John_T1.nii anat"  # AFNI's history names paths and patients
    write_afni(src / "plain+orig.HEAD", Afni(stored, MATRIX, history=history))
    write_afni(src / "zipped+orig.HEAD", Afni(stored, MATRIX, history=history), compress=".gz")
    write_afni(src / "bzipped+tlrc.HEAD", Afni(stored, MATRIX), compress=".bz2")
    write_afni(src / "big+acpc.HEAD", Afni(stored, MATRIX, big_endian=True))
    write_afni(src / "scaled+orig.HEAD", Afni(stored, MATRIX, facs=[0.25]))
    write_afni(src / "bytes+orig.HEAD", Afni(stored.clip(0, 255).astype(np.uint8), MATRIX))
    write_afni(src / "floats+orig.HEAD", Afni(stored.astype(np.float32) / 7, MATRIX))
    write_afni(src / "lower+orig.HEAD", Afni(stored, MATRIX)).rename(src / "lower+orig.brik")  # nibabel reads this
    (src / "lower+orig.HEAD").rename(src / "lower+orig.head")  # case too
    result = convert_nifti(src, tmp_path / "out")
    assert result.rejected == []
    got = _by_name(tmp_path / "out", result)
    assert sorted(got) == ["big+acpc.HEAD", "bytes+orig.HEAD", "bzipped+tlrc.HEAD", "floats+orig.HEAD",
                           "lower+orig.head", "plain+orig.HEAD", "scaled+orig.HEAD", "zipped+orig.HEAD"]
    assert b"Smith" in (src / "plain+orig.HEAD").read_bytes()
    for written in (tmp_path / "out").rglob("*"):  # the header's history is never copied
        assert not written.is_file() or b"Smith" not in written.read_bytes(), written
    for name in ("plain+orig.HEAD", "zipped+orig.HEAD", "bzipped+tlrc.HEAD", "big+acpc.HEAD", "lower+orig.head"):
        arr, mask, meta = got[name]
        assert mask is None and arr.dtype == np.int16, name
        np.testing.assert_array_equal(arr, _zyx(stored))
        assert meta["shape"] == [4, 5, 6] and meta["spatial_units"] == "mm"
        assert meta["units"] == "stored values (BRICK_FLOAT_FACS applied)"
        np.testing.assert_allclose(meta["spacing"], [2.5, 1.2, 0.8], atol=1e-6)
        s, c = math.sin(T), math.cos(T)
        np.testing.assert_allclose(meta["direction"], [[0, 0, 1], [s, -c, 0], [c, s, 0]], atol=1e-6)
        np.testing.assert_allclose(meta["origin"], [-10.0, 40.0, -30.0], atol=1e-6)
    arr, _, meta = got["scaled+orig.HEAD"]  # a quarter of whole numbers: float32
    assert arr.dtype == np.float32 and meta["dtype"] == "float32"
    np.testing.assert_array_equal(arr, _zyx(stored) * np.float32(0.25))
    arr, _, _ = got["bytes+orig.HEAD"]
    np.testing.assert_array_equal(arr, _zyx(stored.clip(0, 255)))
    arr, _, _ = got["floats+orig.HEAD"]
    np.testing.assert_array_equal(arr, _zyx(stored.astype(np.float32) / 7))


def test_a_datasets_sub_bricks_are_its_channels_each_scaled_by_its_own_factor(tmp_path: Path):
    """An fMRI run's volumes, a statistics dataset's maps: the fourth axis, one BRICK_FLOAT_FACS each (0 is no
    scaling)."""
    bricks = _stored(1, (6, 5, 4, 3))
    write_afni(tmp_path / "src" / "stats+tlrc.HEAD", Afni(bricks, MATRIX, facs=[0.0, 2.0, 0.5]), compress=".gz")
    with pytest.raises(ConvertError, match=r"1 x a 4D image of 3 channels; pick one with --channel C"):
        convert_nifti(tmp_path / "src", tmp_path / "none")
    factors = np.array([1.0, 2.0, 0.5])
    for channel in (1, 2):
        result = convert_nifti(tmp_path / "src", tmp_path / f"one{channel}", channel=channel)
        ((arr, _, meta),) = volumes_by_source(tmp_path / f"one{channel}", result).values()
        np.testing.assert_array_equal(arr, _zyx(bricks[..., channel]) * factors[channel])
        assert meta["channel"] == channel and meta["shape"] == [4, 5, 6]
    result = convert_nifti(tmp_path / "src", tmp_path / "all", channel="all")
    ((arr, _, meta),) = volumes_by_source(tmp_path / "all", result).values()
    np.testing.assert_array_equal(arr, (bricks * factors).transpose(3, 2, 1, 0))
    assert meta["axes"] == "czyx" and meta["channels"] == ["0", "1", "2"]


def test_the_afni_datasets_nibabel_ships_convert_to_its_values(tmp_path: Path):
    """Datasets written by AFNI (nibabel's test data): a 4D one with its BRIK gzip-compressed, and a scaled one in
    Talairach space: the values, voxel size and position nibabel reads."""
    got = {}
    for name, channel in (("example4d+orig", "all"), ("scaled+tlrc", None)):
        for path in BUNDLED.glob(f"{name}.*"):
            (tmp_path / name / path.name).parent.mkdir(exist_ok=True)
            (tmp_path / name / path.name).write_bytes(path.read_bytes())
        result = convert_nifti(tmp_path / name, tmp_path / f"{name}.out", channel=channel)
        assert result.rejected == []
        got.update(_by_name(tmp_path / f"{name}.out", result))
    img = nib.load(BUNDLED / "example4d+orig.HEAD")
    arr, _, meta = got["example4d+orig.HEAD"]
    np.testing.assert_array_equal(arr, np.asarray(img.dataobj).transpose(3, 2, 1, 0))
    assert arr.shape == (3, 25, 41, 33) and meta["channels"] == ["0", "1", "2"] and meta["spacing"] == [3.0, 3.0, 3.0]
    np.testing.assert_allclose(meta["origin"], img.affine[:3, 3] * [-1, -1, 1])
    img = nib.load(BUNDLED / "scaled+tlrc.HEAD")
    arr, _, meta = got["scaled+tlrc.HEAD"]
    assert arr.dtype == np.float32 and arr.shape == (43, 54, 47)
    np.testing.assert_allclose(arr, np.asarray(img.dataobj)[..., 0].T, rtol=1e-6)
    np.testing.assert_allclose(meta["origin"], [66.0, 87.0, -54.0])  # the header's ORIGIN: LPS already


def test_an_afni_subject_converts_with_its_mask_as_its_nifti_does(tmp_path: Path):
    """The docs walk's sample: the bundled real MR brain as AFNI keeps it (anat+orig, BRIK gzipped) beside
    3dAutomask's anat_mask+orig, against the same brain converted from its NIfTI file."""
    afni_subjects(tmp_path / "afni")
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "brain.nii").write_bytes(anatomical().read_bytes())
    result = convert_nifti(tmp_path / "afni", tmp_path / "out", modality="MRI")
    assert result.rejected == []
    ((source, (arr, mask, meta)),) = volumes_by_source(tmp_path / "out", result).items()
    assert source == "sub-01/anat+orig.HEAD" and meta["source"].startswith("file-")  # a pseudonym
    ref_result = convert_nifti(tmp_path / "ref", tmp_path / "ref_out", modality="MRI")
    ((ref, _, ref_meta),) = volumes_by_source(tmp_path / "ref_out", ref_result).values()
    np.testing.assert_array_equal(arr, ref)
    keys = ("shape", "spacing", "origin", "direction", "dtype")
    assert {k: meta[k] for k in keys} == {k: ref_meta[k] for k in keys}
    np.testing.assert_array_equal(mask, bright_half(ref).astype(np.uint8))


def test_a_datasets_view_is_not_part_of_its_name(tmp_path: Path):
    """`brain_seg+tlrc` is the mask of `brain+tlrc` (the view is no word of the name), and `anat+orig` beside
    `anat+tlrc` are two files of one name: either could be the case, so both are rejected, saying so."""
    src = tmp_path / "src"
    image = _stored(2)
    write_afni(src / "case1" / "brain+tlrc.HEAD", Afni(image, MATRIX))
    write_afni(src / "case1" / "brain_seg+tlrc.HEAD", Afni((image > 0).astype(np.uint8), MATRIX))
    write_afni(src / "both" / "anat+orig.HEAD", Afni(image, MATRIX))
    write_afni(src / "both" / "anat+tlrc.HEAD", Afni(image, MATRIX))
    result = convert_nifti(src, tmp_path / "out")
    assert {rel: reason.split(" (")[0] for rel, reason in reasons_by_path(result).items()} == {
        "both/anat+orig.HEAD": "2 volume files of this name in one folder",
        "both/anat+tlrc.HEAD": "2 volume files of this name in one folder"}
    assert "+orig.HEAD and +tlrc.HEAD" in reasons_by_path(result)["both/anat+orig.HEAD"]
    ((source, (arr, mask, _)),) = volumes_by_source(tmp_path / "out", result).items()
    assert source == "case1/brain+tlrc.HEAD"
    np.testing.assert_array_equal(mask, _zyx(image > 0))


def test_broken_and_unusual_datasets_are_rejected_with_their_reason(tmp_path: Path):
    src = tmp_path / "src"
    good = Afni(_stored(3), MATRIX)
    write_afni(src / "good+orig.HEAD", good)
    write_afni(src / "warped+tlrc.HEAD", good).unlink()  # AFNI's warp-on-demand: a header, no BRIK
    write_afni(src / "twice+orig.HEAD", good)
    write_afni(src / "twice+orig.HEAD", good, compress=".gz")
    brik = write_afni(src / "old+orig.HEAD", good)
    brik.rename(brik.with_name(brik.name + ".Z"))  # compress(1)'s suffix: nibabel would read its bytes as voxels
    write_afni(src / "nomatrix+orig.HEAD", good, matrix=False)
    brik = write_afni(src / "cut+orig.HEAD", good)
    brik.write_bytes(brik.read_bytes()[:100])
    brik = write_afni(src / "cutzip+orig.HEAD", good, compress=".gz")
    brik.write_bytes(brik.read_bytes()[:60])
    write_afni(src / "complex+orig.HEAD", Afni(_stored(4).astype(np.complex64), MATRIX))
    write_afni(src / "nan+orig.HEAD", Afni(_stored(5), MATRIX, facs=[float("nan")]))
    write_afni(src / "huge+orig.HEAD", Afni(_stored(5), MATRIX, facs=[1e300]))
    sheared = MATRIX.copy()
    sheared[0, 2] = 1.0
    write_afni(src / "sheared+orig.HEAD", Afni(_stored(6), sheared))
    (src / "noise+orig.HEAD").write_bytes(np.random.default_rng(7).bytes(2048) + b"IJK_TO_DICOM_REAL")
    (src / "noise+orig.BRIK").write_bytes(b"\0" * 240)
    write_afni(src / "mixed+orig.HEAD", good)
    (src / "mixed+orig.HEAD").rename(src / "mixed+orig.Head")
    (src / "mixed+orig.BRIK").rename(src / "mixed+orig.Brik")
    (src / "stray+orig.BRIK").write_bytes(b"\0" * 240)  # a data file whose header is missing
    result = convert_nifti(src, tmp_path / "out")
    assert reasons_by_path(result) == {
        "warped+tlrc.HEAD": ("warped+tlrc.HEAD: its data file (.BRIK of the same name, or .BRIK.gz, .BRIK.bz2, beside "
                             "it) is missing (a dataset AFNI warps on demand has none: write it out with 3dcopy)"),
        "twice+orig.HEAD": "twice+orig.HEAD: 2 data files of its name (.BRIK, .BRIK.gz): keep one",
        "old+orig.HEAD": ("old+orig.HEAD: its data file is compressed as .BRIK.Z, which nibabel does not read "
                          "(fastdata reads .BRIK, .BRIK.gz and .BRIK.bz2): decompress it first"),
        "nomatrix+orig.HEAD": ("nomatrix+orig.HEAD: an AFNI header without IJK_TO_DICOM_REAL, the matrix that places "
                               "its voxels (the geometry is read from it alone)"),
        "cut+orig.HEAD": "cut+orig.HEAD: cannot read the voxels (ValueError)",
        "cutzip+orig.HEAD": "cutzip+orig.HEAD: cannot read the voxels (EOFError)",
        "complex+orig.HEAD": "complex+orig.HEAD: complex voxels (BRICK_TYPES 5); volumes hold one number per voxel",
        "nan+orig.HEAD": "nan+orig.HEAD: 120 voxel(s) are NaN or infinite",
        "huge+orig.HEAD": "huge+orig.HEAD: 120 voxel(s) beyond float32's range (|value| > 3.403e+38)",
        "sheared+orig.HEAD": ("sheared+orig.HEAD: the affine is sheared (voxel axes not orthogonal, |cos| up to "
                              "0.3548); resample it to an orthogonal grid first"),
        "noise+orig.HEAD": "noise+orig.HEAD: not a readable AFNI file (UnicodeDecodeError)",
        "mixed+orig.Head": ("mixed+orig.Head: an AFNI header whose suffix is not .HEAD or .head (nibabel reads no "
                            "other case)"),
        "mixed+orig.Brik": NOT_NIFTI,
        "stray+orig.BRIK": NOT_NIFTI}
    assert list(_by_name(tmp_path / "out", result)) == ["good+orig.HEAD"]


def test_a_header_is_measured_before_nibabel_reads_it_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """nibabel reads a HEAD file whole; a file of more than MAX_HEADER bytes is no AFNI header AFNI writes (one of
    exactly MAX_HEADER is read)."""
    write_afni(tmp_path / "src" / "small+orig.HEAD", Afni(_stored(8), MATRIX))
    monkeypatch.setattr(afni, "MAX_HEADER", (tmp_path / "src" / "small+orig.HEAD").stat().st_size)
    write_afni(tmp_path / "src" / "long+orig.HEAD", Afni(_stored(8), MATRIX, history="3dcalc " * 500))
    opened: list[str] = []
    real_load = nib.load
    monkeypatch.setattr(nib, "load", lambda path, *a, **k: opened.append(Path(path).name) or real_load(path, *a, **k))
    result = convert_nifti(tmp_path / "src", tmp_path / "out")
    size = (tmp_path / "src" / "long+orig.HEAD").stat().st_size
    assert reasons_by_path(result) == {
        "long+orig.HEAD": f"long+orig.HEAD: an AFNI header of {size} bytes; they hold a few KB (at most "
                          f"{afni.MAX_HEADER} read)"}
    assert "long+orig.HEAD" not in opened and "small+orig.HEAD" in opened


def test_a_resume_sees_a_brik_rewritten_beside_its_unchanged_header(tmp_path: Path):
    """The BRIK is read with its header: its bytes are part of the volume's size that a resume compares."""
    from converters.nifti.discover import _volume_size

    head = tmp_path / "a+orig.HEAD"
    brik = write_afni(head, Afni(_stored(9), MATRIX))
    assert _volume_size(str(head)) == head.stat().st_size + brik.stat().st_size
