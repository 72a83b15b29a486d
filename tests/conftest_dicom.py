"""Synthetic DICOM series with exact, known geometry (for the dicom converter and volume loader tests)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PATIENT_NAME = "Doe^Jane"
PATIENT_ID = "PID-7731-SECRET"
ACCESSION = "ACC-99812"
INSTITUTION = "St Example Hospital"
BIRTH_DATE = "19610417"
PHI_STRINGS = (PATIENT_NAME, PATIENT_ID, ACCESSION, INSTITUTION, BIRTH_DATE, "Doe")


@dataclass(frozen=True)
class Phantom:
    """A CT series: `slices` axial slices of rows x cols, background HU, and a sphere of `sphere_hu`."""

    rows: int = 40
    cols: int = 36
    slices: int = 16
    pixel_spacing: tuple[float, float] = (0.8, 0.7)  # (between rows, between columns)
    slice_spacing: float = 2.5
    origin: tuple[float, float, float] = (-12.0, -20.0, 40.0)
    center_mm: tuple[float, float, float] = (1.5, -4.0, 58.0)  # (x, y, z) patient coordinates
    radius_mm: float = 8.0
    background_hu: int = 0
    sphere_hu: int = 800
    slope: float = 0.5
    intercept: float = -1024.0
    series_uid: str = "1.2.826.0.1.3680043.8.498.1234567890.1"

    def hu(self) -> np.ndarray:
        """The HU volume (z, y, x) the series encodes."""
        k, i, j = np.meshgrid(np.arange(self.slices), np.arange(self.rows), np.arange(self.cols), indexing="ij")
        x = self.origin[0] + j * self.pixel_spacing[1]
        y = self.origin[1] + i * self.pixel_spacing[0]
        z = self.origin[2] + k * self.slice_spacing
        cx, cy, cz = self.center_mm
        inside = (x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2 <= self.radius_mm ** 2
        return np.where(inside, self.sphere_hu, self.background_hu).astype(np.int32)


def make_slice(path: Path, pixels: np.ndarray, *, series_uid: str, position: tuple[float, float, float] | None,
               orientation: tuple[float, ...] | None = (1, 0, 0, 0, 1, 0), pixel_spacing=(0.8, 0.7),
               slope: float = 1.0, intercept: float = 0.0, instance: int = 1, modality: str = "CT",
               with_pixels: bool = True, slice_thickness: float | None = None) -> Path:
    """Write one single-frame DICOM file with the given stored pixels (uint16) and geometry."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = CTImageStorage
    sop_uid = generate_uid(entropy_srcs=[str(path), series_uid, str(instance)])
    meta.MediaStorageSOPInstanceUID = sop_uid
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = CTImageStorage
    ds.SOPInstanceUID = sop_uid
    ds.PatientName = PATIENT_NAME
    ds.PatientID = PATIENT_ID
    ds.PatientBirthDate = BIRTH_DATE
    ds.AccessionNumber = ACCESSION
    ds.InstitutionName = INSTITUTION
    ds.StudyInstanceUID = series_uid + ".0"
    ds.SeriesInstanceUID = series_uid
    ds.Modality = modality
    ds.SeriesDescription = "CHEST PHANTOM"
    ds.InstanceNumber = instance
    if position is not None:
        ds.ImagePositionPatient = [f"{v:.4f}" for v in position]
    if orientation is not None:
        ds.ImageOrientationPatient = [f"{v:.6f}" for v in orientation]
    ds.PixelSpacing = [f"{v:.4f}" for v in pixel_spacing]
    if slice_thickness is not None:
        ds.SliceThickness = f"{slice_thickness:.4f}"
    ds.RescaleSlope = f"{slope:g}"
    ds.RescaleIntercept = f"{intercept:g}"
    ds.Rows, ds.Columns = pixels.shape
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.BitsAllocated = 16
    ds.BitsStored = 16
    ds.HighBit = 15
    ds.PixelRepresentation = 0
    if with_pixels:
        ds.PixelData = np.ascontiguousarray(pixels, dtype="<u2").tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
    return path


def edit_dicom(path: Path, *, file_meta: dict[str, object] | None = None, **attrs: object) -> None:
    """Set attributes of a DICOM file in place (None deletes one). With `file_meta` (a dict, maybe empty) those
    file-meta attributes are set and the file is saved as it is: its file meta is not made to agree with the
    dataset (a SOP class the two disagree on)."""
    import pydicom

    ds = pydicom.dcmread(path)
    for name, value in attrs.items():
        if value is None:
            delattr(ds, name)
        else:
            setattr(ds, name, value)
    for name, value in (file_meta or {}).items():
        setattr(ds.file_meta, name, value)
    ds.save_as(path, enforce_file_format=file_meta is None)


PLANE = np.arange(64, dtype=np.uint16).reshape(8, 8)  # the stored pixels of every slice `stack_series` writes


def stack_series(root: Path, *, uid: str = "1.2.3", zs: tuple[float, ...] = (0.0, 2.0, 4.0),
                 positions: list[tuple[float, float, float]] | None = None,
                 orientations: list[tuple[float, ...]] | None = None, **kwargs: object):
    """A SeriesFiles of slices 00.dcm, 01.dcm, ... of PLANE under `root`, at (0, 0, z) for each z of `zs` (or at
    `positions`), each with its own orientation when `orientations` is given; 1 mm pixels unless `kwargs` (passed
    to make_slice) say otherwise."""
    from converters.dicom.discover import SeriesFiles

    files = []
    for k, position in enumerate(positions or [(0.0, 0.0, z) for z in zs]):
        extra = {} if orientations is None else {"orientation": orientations[k]}
        path = make_slice(root / f"{k:02d}.dcm", PLANE, series_uid=uid, instance=k + 1, position=position,
                          **{"pixel_spacing": (1.0, 1.0), **extra, **kwargs})
        files.append((str(path), path.name))
    return SeriesFiles(uid, tuple(files))


def rejection_of(series, opts) -> str:
    """The reason convert_series refuses `series` with (it must refuse it)."""
    import pytest

    from converters.dicom.geometry import RejectSeries
    from converters.dicom.series import convert_series

    with pytest.raises(RejectSeries) as info:
        convert_series(series, opts)
    return str(info.value)


def small_phantom(i: int) -> Phantom:
    """Series `i` of a set of small CT phantoms that differ in depth (8 + i slices of 20 x 20 voxels) and UID."""
    return Phantom(series_uid=f"1.2.840.7.{i}", slices=8 + i, rows=20, cols=20, slice_spacing=2.0,
                   pixel_spacing=(1.0, 1.0), origin=(-10.0, -10.0, 40.0), center_mm=(0.0, 0.0, 46.0), radius_mm=4.0)


def small_volumes(root: Path, count: int = 5) -> Path:
    """`count` small CT phantoms (`small_phantom`) converted into `root/out`, two volumes a shard."""
    for i in range(count):
        write_phantom(root / "src" / f"s{i}", small_phantom(i), seed=i)
    convert_dicom(root / "src", root / "out", samples_per_shard=2)
    return root / "out"


def volumes_read(loader) -> list[int]:
    """The volume of each patch one pass of a volume loader yields (eval's padding repeats left out)."""
    out = []
    for _ in loader:
        out.extend(p.volume for p in loader.last_patches if not p.duplicate)
    return out


def resumed_after_one_batch(first, again) -> tuple[dict, list, list]:
    """(the state of volume loader `first` one batch into a pass, the patches of the rest of that pass, the patches
    loader `again` yields once it has loaded that state)."""
    it = iter(first)
    next(it)
    state = first.state_dict()
    rest = [x.clone() for x, _ in it]
    again.load_state_dict(state)
    return state, rest, [x for x, _ in again]


def write_phantom(root: Path, phantom: Phantom = Phantom(), *, seed: int = 0, skip: tuple[int, ...] = (),
                  duplicate: tuple[int, ...] = (), modality: str = "CT") -> list[Path]:
    """Write the phantom as one file per slice, under shuffled, meaningless names (no extension) and
    with InstanceNumber reversed, so only ImagePositionPatient gives the right order."""
    hu = phantom.hu()
    stored = np.rint((hu - phantom.intercept) / phantom.slope).astype(np.uint16)
    order = list(range(phantom.slices)) + list(duplicate)
    random.Random(seed).shuffle(order)
    paths = []
    for n, k in enumerate(order):
        if k in skip:
            continue
        position = (phantom.origin[0], phantom.origin[1], phantom.origin[2] + k * phantom.slice_spacing)
        paths.append(make_slice(root / f"f{n:03d}x", stored[k], series_uid=phantom.series_uid, position=position,
                                pixel_spacing=phantom.pixel_spacing, slope=phantom.slope,
                                intercept=phantom.intercept, instance=phantom.slices - k, modality=modality))
    return paths


def convert_dicom(src: Path, dst: Path, *, salt: str = "test-salt", **kwargs: object):
    """Run the dicom conversion in-process (1 job); keyword arguments go to DicomOptions or ConvertConfig."""
    from dataclasses import fields

    from converters import get_kind
    from converters.dicom import DicomOptions
    from converters.engine import ConvertConfig, convert

    names = {f.name for f in fields(DicomOptions)}
    opts = DicomOptions(salt=salt, **{k: v for k, v in kwargs.items() if k in names})
    config = {"jobs": 1, "samples_per_shard": 4, **{k: v for k, v in kwargs.items() if k not in names}}
    return convert(get_kind("dicom"), src, dst, options=opts, config=ConvertConfig(**config))


def reasons_by_path(result, key: str = "path") -> dict[str, str]:
    """{source path: reason} of a conversion's rejections, the pseudonyms of the manifest (and inside its
    reasons) mapped back to paths through the conversion's private report; key="source": {pseudonym: path}."""
    import json
    import re

    lines = [json.loads(line) for line in Path(result.private_report).read_text().splitlines()[1:]]
    paths = {line["name"]: line["path"] for line in lines}
    if key == "source":
        return paths
    back = re.compile("|".join(re.escape(n) for n in sorted(paths, key=len, reverse=True)))
    return {paths[r["source"]]: back.sub(lambda m: paths[m.group(0)], r["reason"]) for r in result.rejected}


def read_samples(dst: Path, split: str = "train") -> dict[str, dict[str, bytes]]:
    """All samples of a converted split: {key: {ext: bytes}} (plain tarfile; never extracts to disk)."""
    import json
    import tarfile

    manifest = json.loads((dst / "manifest.json").read_text())
    out: dict[str, dict[str, bytes]] = {}
    for shard in manifest["splits"].get(split, {}).get("shards", []):
        with tarfile.open(dst / shard["name"]) as tar:
            for member in tar:
                key, ext = member.name.split(".", 1)
                out.setdefault(key, {})[ext] = tar.extractfile(member).read()
    return out


def load_volume(sample: dict[str, bytes]) -> tuple[np.ndarray, dict]:
    import io
    import json

    return np.load(io.BytesIO(sample["npy"]), allow_pickle=False), json.loads(sample["json"])
