"""Real DICOM files bundled with pydicom and pydicom-data (never downloaded): transfer syntaxes,
enhanced multi-frame, 2D radiographs and the multi-slice series geometry of `dicomdirtests/`."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pydicom = pytest.importorskip("pydicom")
pytest.importorskip("scipy")

from conftest_dicom import convert_dicom, load_volume, read_samples, reasons_by_path  # noqa: E402

from converters.dicom import DicomOptions  # noqa: E402
from converters.dicom.discover import SeriesFiles  # noqa: E402
from converters.dicom.geometry import RejectSeries  # noqa: E402
from converters.dicom.series import convert_series  # noqa: E402

OPTS = DicomOptions(salt="t")


def _testdata(name: str) -> Path:
    from pydicom.data import get_testdata_file

    path = get_testdata_file(name, download=False)  # never the network
    if path is None:
        pytest.skip(f"{name} is not installed (pydicom-data)")
    return Path(path)


def one(name: str, opts: DicomOptions = OPTS) -> tuple[np.ndarray, dict]:
    path = _testdata(name)
    arr, _, meta = convert_series(SeriesFiles("1.2.3", ((str(path), name),)), opts)
    return arr, meta


def test_ct_small_hounsfield_units_and_geometry():
    arr, meta = one("CT_small.dcm")
    ds = pydicom.dcmread(_testdata("CT_small.dcm"))
    expected = ds.pixel_array.astype(np.float64) * float(ds.RescaleSlope) + float(ds.RescaleIntercept)
    np.testing.assert_array_equal(arr[0], expected.astype(np.int16))
    assert arr.shape == (1, 128, 128) and meta["units"] == "HU"
    assert meta["origin"] == pytest.approx([float(v) for v in ds.ImagePositionPatient])
    assert meta["spacing"] == pytest.approx([float(ds.SliceThickness), *map(float, ds.PixelSpacing)])
    iop = [float(v) for v in ds.ImageOrientationPatient]
    assert meta["direction"][2] == pytest.approx(iop[:3]) and meta["direction"][1] == pytest.approx(iop[3:])


@pytest.mark.parametrize("compressed, reference", [
    ("MR_small_RLE.dcm", "MR_small.dcm"),                  # RLE lossless
    ("MR_small_jpeg_ls_lossless.dcm", "MR_small.dcm"),     # JPEG-LS lossless
    ("MR_small_jp2klossless.dcm", "MR_small.dcm"),         # JPEG 2000 lossless
    ("693_J2KR.dcm", "693_UNCR.dcm"),                      # JPEG 2000 lossless CT (pydicom-data)
])
def test_lossless_transfer_syntaxes_decode_identically(compressed, reference):
    arr, meta = one(compressed)
    ref, ref_meta = one(reference)
    np.testing.assert_array_equal(arr, ref)
    assert meta["transfer_syntaxes"] != ref_meta["transfer_syntaxes"]
    assert meta["spacing"] == ref_meta["spacing"]


@pytest.mark.parametrize("name", ["JPGExtended.dcm", "JPEG-LL.dcm", "JPGLosslessP14SV1_1s_1f_8b.dcm"])
def test_jpeg_compressed_single_frame_images_are_2d(name):
    arr, meta = one(name)
    ds = pydicom.dcmread(_testdata(name))
    assert arr.ndim == 2 and arr.shape == (ds.Rows, ds.Columns) and meta["axes"] == "yx"
    np.testing.assert_array_equal(arr, ds.pixel_array.astype(np.int16))
    spacing = ds.get("PixelSpacing") or ds.get("ImagerPixelSpacing")
    assert meta["spacing"] == pytest.approx([float(v) for v in spacing] if spacing else [1.0, 1.0])


def test_enhanced_multiframe_ct_uses_per_frame_positions():
    arr, meta = one("eCT_Supplemental.dcm")
    ds = pydicom.dcmread(_testdata("eCT_Supplemental.dcm"))
    assert arr.shape == (2, 512, 512) and meta["slices"] == 2
    z = [float(f.PlanePositionSequence[0].ImagePositionPatient[2]) for f in ds.PerFrameFunctionalGroupsSequence]
    assert meta["spacing"][0] == pytest.approx(abs(z[1] - z[0]))
    np.testing.assert_array_equal(arr.max(), (ds.pixel_array.max() - 1024))


def test_resampling_real_ct_keeps_origin_and_extent():
    arr, meta = one("693_UNCR.dcm", DicomOptions(salt="t", spacing=(1.0, 1.0, 1.0)))
    native, nmeta = one("693_UNCR.dcm")
    assert meta["origin"] == nmeta["origin"] and meta["spacing"][1:] == [1.0, 1.0]
    assert meta["spacing"][0] == nmeta["spacing"][0]  # one slice: z is kept
    extent = (np.array(nmeta["shape"][1:]) - 1) * np.array(nmeta["spacing"][1:])
    assert list(arr.shape[1:]) == [int(e) + 1 for e in extent]
    assert arr[0, 0, 0] == native[0, 0, 0]


def test_colour_and_positionless_multiframe_are_rejected_with_reasons():
    with pytest.raises(RejectSeries, match="colour image"):
        one("SC_rgb.dcm")
    with pytest.raises(RejectSeries, match="missing position tags"):
        one("emri_small.dcm")
    with pytest.raises(RejectSeries, match=r"cannot decode pixel data of JPEG-lossy.dcm \(JPEG Extended"):
        one("JPEG-lossy.dcm")  # a known-corrupt JPEG stream


def test_jpeg_baseline_series(tmp_path):
    """8-bit baseline JPEG (the syntax the GPU decoders handle): written with Pillow, read via pylibjpeg."""
    import io

    from conftest_dicom import make_slice
    from PIL import Image
    from pydicom.encaps import encapsulate
    from pydicom.uid import JPEGBaseline8Bit

    rng = np.random.default_rng(0)
    frames, stored = [], []
    for _ in range(3):
        img = np.kron(rng.integers(0, 255, (4, 4)), np.ones((8, 8))).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img, "L").save(buf, "JPEG", quality=95)
        frames.append(buf.getvalue())
        stored.append(np.asarray(Image.open(io.BytesIO(buf.getvalue()))))
    files = []
    for k in range(3):
        path = make_slice(tmp_path / f"j{k}", stored[k].astype(np.uint16), series_uid="1.2.3.9",
                          position=(0.0, 0.0, 3.0 * k), pixel_spacing=(1.0, 1.0), intercept=-100)
        ds = pydicom.dcmread(path)
        ds.BitsAllocated, ds.BitsStored, ds.HighBit = 8, 8, 7
        ds.PixelData = encapsulate([frames[k]])
        ds["PixelData"].VR = "OB"
        ds.file_meta.TransferSyntaxUID = JPEGBaseline8Bit
        ds.save_as(path, enforce_file_format=True)
        files.append((str(path), path.name))
    arr, _, meta = convert_series(SeriesFiles("1.2.3.9", tuple(files)), OPTS)
    assert meta["transfer_syntaxes"] == ["JPEG Baseline (Process 1)"] and meta["spacing"] == [3.0, 1.0, 1.0]
    assert np.abs(arr.astype(int) - (np.stack(stored).astype(int) - 100)).max() <= 1


def test_dicomdir_series_tree(tmp_path):
    from pydicom.data import get_testdata_file

    src = tmp_path / "src"
    shutil.copytree(Path(get_testdata_file("CT_small.dcm", download=False)).parent / "dicomdirtests", src)
    result = convert_dicom(src, tmp_path / "out")
    reasons = reasons_by_path(result)
    assert reasons["DICOMDIR"].startswith("DICOMDIR")
    assert reasons["README.txt"].startswith("not a DICOM file")
    assert "missing slices" in reasons["77654033/CT2 (4 files)"]
    assert "mixed slice orientations" in reasons["98892003/MR700 (7 files)"]
    assert any("without an image" in r for s, r in reasons.items() if s.startswith("TINY_ALPHA"))
    volumes = [load_volume(s) for s in read_samples(tmp_path / "out").values()]
    ct5 = [m for a, m in volumes if m["files"] == 5]
    assert len(ct5) == 1 and ct5[0]["shape"] == [5, 16, 16] and ct5[0]["modality"] == "CT"
    planar = [m for a, m in volumes if m["ndim"] == 2]
    assert planar and all(m["modality"] == "CR" for m in planar)
    # nothing lost: every file is either in a converted series or rejected
    files = [p for p in src.rglob("*") if p.is_file()]
    series_files = sum(m["files"] for _, m in volumes)
    paths = [reasons_by_path(result, key="source")[r["source"]] for r in result.rejected]  # two series can share one
    rejected_files = sum(int(s.rsplit("(", 1)[1].split()[0]) if s.endswith("files)") else 1 for s in paths)
    assert series_files + rejected_files == len(files)
