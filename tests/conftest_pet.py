"""PET series of known activity, weight, dose and times (tests/test_dicom_pet.py, the fuzz harness's dicom target):
slices of conftest_dicom's PLANE, each rescaled by its own slope, with the attributes QIBA's SUV rules read."""

from __future__ import annotations

from pathlib import Path

from conftest_dicom import PLANE, make_slice

PET_STORAGE = "1.2.840.10008.5.1.4.1.1.128"
HALF_LIFE = 6586.2  # F-18, seconds
WEIGHT, DOSE = 81.5, 3.52e8  # kg, Bq
SLOPES = (0.5, 2.25, 7.3)  # GE writes a slope per slice


def write_pet(root: Path, *, slopes=SLOPES, injected="101500", series="111500",
              acquisitions=("111500", "111800", "112100"), info: dict | None = None, **attrs) -> list[Path]:
    """The files of a PET series of PLANE under `root`, slice k rescaled by slopes[k]: Units BQML, corrected for
    attenuation and decay to the scan's start, the dose injected at `injected` on the series' day; `info` and
    `attrs` replace (None deletes) attributes of the radiopharmaceutical item and of each file."""
    from pydicom import dcmread
    from pydicom.dataset import Dataset

    files: list[Path] = []
    for k, slope in enumerate(slopes):
        path = make_slice(root / f"{k:02d}.dcm", PLANE, series_uid="1.2.9", instance=k + 1,
                          position=(0.0, 0.0, 3.0 * k), pixel_spacing=(4.0, 4.0), slope=slope, modality="PT")
        ds = dcmread(path)
        ds.SOPClassUID = ds.file_meta.MediaStorageSOPClassUID = PET_STORAGE
        item = Dataset()
        for name, value in {"RadionuclideTotalDose": f"{DOSE:.6g}", "RadionuclideHalfLife": f"{HALF_LIFE}",
                            "RadiopharmaceuticalStartTime": injected, **(info or {})}.items():
            if value is not None:
                setattr(item, name, value)
        fields = {"Units": "BQML", "CorrectedImage": ["DECY", "ATTN", "NORM"], "DecayCorrection": "START",
                  "PatientWeight": f"{WEIGHT}", "SeriesDate": "20240229", "SeriesTime": series,
                  "AcquisitionDate": "20240229", "AcquisitionTime": acquisitions[k],
                  "RadiopharmaceuticalInformationSequence": [item], **attrs}
        for name, value in fields.items():
            if value is not None:
                setattr(ds, name, value)
            elif name in ds:
                delattr(ds, name)
        ds.save_as(path, enforce_file_format=True)
        files.append(path)
    return files
