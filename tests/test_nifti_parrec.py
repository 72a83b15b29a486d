"""Philips PAR/REC volumes (`NAME.PAR` with `NAME.REC`, or `.par` with `.rec`: Kirby21's names) convert as NIfTI
files do, read by nibabel (converters/nifti/parrec.py); before, a tree of them was no input fastdata knew. The PAR
headers are the real ones nibabel ships (written by Philips scanners) and the REC files are written in fixtures with
known pixels (scripts/parrec_files.py), so each converted value is checked against the header's own table: which
slice and volume an image lands in, and its display value."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from conftest_dicom import reasons_by_path  # noqa: E402
from conftest_nifti import convert_nifti, volumes_by_source  # noqa: E402
from nifti_sample import kirby21_scans  # noqa: E402
from parrec_files import bundled, copy_par, image_table, shuffle_images  # noqa: E402

from converters.nifti import parrec  # noqa: E402
from converters.nifti.discover import NOT_NIFTI  # noqa: E402
from fastdata.errors import ConvertError  # noqa: E402

PHANTOM = "phantom_EPI_asc_CLEAR_2_1.PAR"  # 9 slices x 3 dynamics, 64 x 64, oblique (angulated) slices
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # nibabel warns of PAR versions it has not seen


def _by_name(dst: Path, result) -> dict[str, tuple[np.ndarray, np.ndarray | None, dict]]:
    return {Path(k).name: v for k, v in volumes_by_source(dst, result).items()}


def _with_patient(par: Path, name: str, encoding: str) -> None:
    """The PAR file's `Patient name` set to `name`, in `encoding`, as a scanner writes it."""
    lines = par.read_text().splitlines(keepends=True)
    text = "".join(f".    Patient name                       :   {name}\n" if "Patient name" in line else line
                   for line in lines)
    par.write_bytes(text.encode(encoding))


def _display(table: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """Each image's display values: stored * rescale slope + rescale intercept, as (image, y, x)."""
    return stored * table["rescale slope"][:, None, None] + table["rescale intercept"][:, None, None]


def _lps(affine: np.ndarray) -> tuple[list[float], list[list[float]], list[float]]:
    """(origin, direction rows for z, y, x, spacing z, y, x) in LPS of a RAS+ affine over (i, j, k)."""
    steps = np.linalg.norm(affine[:3, :3], axis=0)
    axes = affine[:3, :3] / steps * np.array([[-1.0], [-1.0], [1.0]])
    return ((affine[:3, 3] * [-1, -1, 1]).tolist(), [axes[:, a].tolist() for a in (2, 1, 0)],
            steps[::-1].tolist())


def test_a_par_rec_converts_to_display_values_each_image_in_its_slice_and_dynamic(tmp_path: Path):
    """Each image of the table lands in its slice (z) and its dynamic (the channel), scaled by its own rescale slope
    and intercept; the geometry is nibabel's affine of the angulated slices, in LPS. Kirby21's lowercase names read
    alike. The patient's name in the header, in Latin-1 or in UTF-8, does not stop the file being read (nibabel's own
    load fails on a Latin-1 name where the locale's encoding is UTF-8) and is never copied."""
    src = tmp_path / "src"
    stored = copy_par(PHANTOM, src / "scan.PAR")
    (src / "kirby").mkdir()
    copy_par(PHANTOM, src / "kirby" / "KKI2009-01-fMRI.par", seed=0)
    _with_patient(src / "scan.PAR", "Smith^Jürgen", "latin-1")
    _with_patient(src / "kirby" / "KKI2009-01-fMRI.par", "Smith^Jürgen", "utf-8")
    result = convert_nifti(src, tmp_path / "out", channel="all")
    assert result.rejected == []
    got = _by_name(tmp_path / "out", result)
    assert sorted(got) == ["KKI2009-01-fMRI.par", "scan.PAR"]
    for written in (tmp_path / "out").rglob("*"):
        assert not written.is_file() or b"Smith" not in written.read_bytes(), written
    table = image_table(src / "scan.PAR")
    values = _display(table, stored.astype(np.float64))
    expected = np.zeros((3, 9, 64, 64))
    for row, image in zip(table, values, strict=True):
        expected[row["dynamic scan number"] - 1, row["slice number"] - 1] = image
    reference = nib.load(src / "kirby" / "KKI2009-01-fMRI.par", strict_sort=True)
    origin, direction, spacing = _lps(reference.affine)
    for name in ("scan.PAR", "KKI2009-01-fMRI.par"):
        arr, mask, meta = got[name]
        assert mask is None and arr.dtype == np.float32 and meta["channels"] == ["0", "1", "2"]
        assert meta["units"] == "display values (rescale slope/intercept applied)"
        np.testing.assert_allclose(arr, expected, rtol=1e-6)
        np.testing.assert_allclose(meta["origin"], origin, atol=1e-4)
        np.testing.assert_allclose(meta["direction"], direction, atol=1e-6)
        np.testing.assert_allclose(meta["spacing"], spacing, atol=1e-6)
    assert meta["spacing"] == [8.0, 3.75, 3.75]  # 6 mm slices with a 2 mm gap; 3.75 mm pixels
    assert abs(meta["direction"][0][0]) > 0.2  # angulated: the slices' normal is not z


def test_a_scan_of_echoes_and_image_types_orders_its_volumes_echo_first(tmp_path: Path):
    """A multi-echo scan saving magnitude, real, imaginary and phase images (12 volumes): the volumes go echo by
    echo within each image type (nibabel's strict sort: echo before image type), whatever the file's line order,
    each image scaled by its own slope and intercept. --channel C takes one of them."""
    name = "T1_3echo_mag_real_imag_phase.PAR"
    stored = copy_par(name, tmp_path / "src" / "multi.PAR")
    copy_par(name, tmp_path / "shuffled" / "multi.PAR")  # the same images, its lines and REC images reordered
    shuffle_images(tmp_path / "shuffled" / "multi.PAR", seed=3)
    table = image_table(tmp_path / "src" / "multi.PAR")
    types = sorted(set(table["image_type_mr"].tolist()))
    values = _display(table, stored.astype(np.float64))
    expected = np.zeros((12, 30, 80, 80))
    for row, image in zip(table, values, strict=True):
        expected[types.index(row["image_type_mr"]) * 3 + row["echo number"] - 1, row["slice number"] - 1] = image
    with pytest.raises(ConvertError, match=r"1 x a 4D image of 12 channels; pick one with --channel C"):
        convert_nifti(tmp_path / "src", tmp_path / "none")
    result = convert_nifti(tmp_path / "src", tmp_path / "all", channel="all")
    ((arr, _, meta),) = volumes_by_source(tmp_path / "all", result).values()
    assert meta["channels"] == [str(c) for c in range(12)]
    np.testing.assert_allclose(arr, expected, rtol=1e-6, atol=1e-6)
    result = convert_nifti(tmp_path / "shuffled", tmp_path / "shuffled_all", channel="all")
    ((again, _, _),) = volumes_by_source(tmp_path / "shuffled_all", result).values()
    np.testing.assert_array_equal(again, arr)
    result = convert_nifti(tmp_path / "src", tmp_path / "one", channel=7)  # the phase image's second echo
    ((arr, _, meta),) = volumes_by_source(tmp_path / "one", result).values()
    assert meta["channel"] == 7 and meta["shape"] == [30, 80, 80]
    np.testing.assert_allclose(arr, expected[7], rtol=1e-6, atol=1e-6)


def test_the_par_rec_nibabel_ships_whole_converts_to_its_values(tmp_path: Path):
    """The one scan nibabel ships with its REC (a phantom, written by the scanner): the values nibabel reads."""
    for suffix in (".PAR", ".REC"):
        target = tmp_path / "src" / f"phantom{suffix}"
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(bundled(PHANTOM).with_suffix(suffix).read_bytes())
    result = convert_nifti(tmp_path / "src", tmp_path / "out", channel=2)
    ((arr, _, meta),) = volumes_by_source(tmp_path / "out", result).values()
    reference = np.asarray(nib.load(tmp_path / "src" / "phantom.PAR", strict_sort=True).dataobj)[..., 2]
    np.testing.assert_allclose(arr, reference.transpose(2, 1, 0), rtol=1e-6)
    assert arr.max() > 100  # the phantom's signal, not an empty volume


def test_kirby21_scans_convert_as_the_docs_say(tmp_path: Path):
    """The docs walk's sample: Kirby21's MPRAGE scans, `KKI2009-NN-MPRAGE.par` with `.rec`, one volume each."""
    kirby21_scans(tmp_path / "kirby21")
    result = convert_nifti(tmp_path / "kirby21", tmp_path / "out", modality="MRI")
    assert result.rejected == []
    got = _by_name(tmp_path / "out", result)
    assert sorted(got) == ["KKI2009-01-MPRAGE.par", "KKI2009-02-MPRAGE.par"]
    for name, (arr, _, meta) in got.items():
        reference = np.asarray(nib.load(tmp_path / "kirby21" / name, strict_sort=True).dataobj)
        np.testing.assert_allclose(arr, reference.transpose(2, 1, 0), rtol=1e-6)
        assert meta["shape"] == [10, 80, 80] and meta["modality"] == "MRI"


def test_broken_and_unusual_par_rec_files_are_rejected_with_their_reason(tmp_path: Path):
    src = tmp_path / "src"
    copy_par("T1.PAR", src / "good.PAR")
    copy_par("T1.PAR", src / "norec.PAR")
    (src / "norec.REC").unlink()
    copy_par("T1.PAR", src / "packed.PAR")
    (src / "packed.REC").rename(src / "packed.REC.gz")
    copy_par("T1.PAR", src / "cut.PAR")
    (src / "cut.REC").write_bytes((src / "cut.REC").read_bytes()[:5000])
    copy_par("T1.PAR", src / "mixed.PAR")
    (src / "mixed.PAR").rename(src / "mixed.Par")
    (src / "mixed.REC").rename(src / "mixed.Rec")
    (src / "truncated.PAR").write_bytes(bundled("phantom_truncated.PAR").read_bytes())  # fewer dynamics than said
    (src / "truncated.REC").write_bytes(bundled("phantom_truncated.REC").read_bytes())
    (src / "noise.PAR").write_bytes(np.random.default_rng(1).bytes(3000))
    (src / "noise.REC").write_bytes(b"\0" * 100)
    copy_par("T1.PAR", src / "huge.PAR")
    text = (src / "huge.PAR").read_text().replace(" 1.26032 ", " 1e+36 ")  # a rescale slope past float32
    (src / "huge.PAR").write_text(text)
    (src / "stray.REC").write_bytes(b"\0" * 100)  # a REC whose PAR is missing
    result = convert_nifti(src, tmp_path / "out")
    reasons = reasons_by_path(result)
    assert reasons == {
        "norec.PAR": "norec.PAR: its REC file (.REC of the same name, beside it) is missing",
        "packed.PAR": ("packed.PAR: its REC file is compressed (.REC.gz); nibabel reads PAR/REC uncompressed only: "
                       "decompress it first"),
        "packed.REC.gz": NOT_NIFTI,
        "cut.PAR": "cut.PAR: cannot read the voxels (ValueError)",
        "mixed.Par": "mixed.Par: a PAR header whose suffix is not .PAR or .par (nibabel reads no other case)",
        "mixed.Rec": NOT_NIFTI,
        "truncated.PAR": "truncated.PAR: not a readable PAR/REC file (PARRECError)",
        "noise.PAR": "noise.PAR: not a readable PAR/REC file (KeyError)",
        "huge.PAR": "huge.PAR: 58461 voxel(s) beyond float32's range (|value| > 3.403e+38)",
        "stray.REC": NOT_NIFTI}
    assert list(_by_name(tmp_path / "out", result)) == ["good.PAR"]


def test_a_header_is_measured_before_nibabel_reads_it_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """One of exactly MAX_HEADER bytes is read; one byte more is not."""
    copy_par("T1.PAR", tmp_path / "src" / "small.PAR")
    copy_par("T1.PAR", tmp_path / "src" / "long.PAR")
    with open(tmp_path / "src" / "long.PAR", "a") as f:
        f.write("\n")
    monkeypatch.setattr(parrec, "MAX_HEADER", (tmp_path / "src" / "small.PAR").stat().st_size)
    opened: list[str] = []
    real_load = parrec.load
    monkeypatch.setattr(parrec, "load", lambda path: opened.append(Path(path).name) or real_load(path))
    result = convert_nifti(tmp_path / "src", tmp_path / "out")
    size = (tmp_path / "src" / "long.PAR").stat().st_size
    assert reasons_by_path(result) == {
        "long.PAR": f"long.PAR: a PAR header of {size} bytes; nibabel reads it whole (at most {size - 1})"}
    assert opened == ["small.PAR"]


def test_a_resume_sees_a_rec_rewritten_beside_its_unchanged_header(tmp_path: Path):
    from converters.nifti.discover import _volume_size

    copy_par("T1.PAR", tmp_path / "a.par")
    assert _volume_size(str(tmp_path / "a.par")) == sum(p.stat().st_size for p in tmp_path.iterdir())
