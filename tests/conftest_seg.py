"""DICOM Segmentation objects (SEG) of known masks over the test phantoms, written with highdicom as annotation tools
write them: each frame one segment on one source image, naming that image (DerivationImageSequence), and frames
that would be empty left out."""

from __future__ import annotations

from pathlib import Path

import numpy as np

# attributes highdicom copies from the source images into a SEG (the phantoms have none of them)
STUDY = {"PatientSex": "O", "StudyDate": "20200101", "StudyTime": "120000", "ReferringPhysicianName": "",
         "StudyID": "1", "SeriesNumber": 1}
CODES = {  # name -> (scheme, value, meaning), as SNOMED CT codes them
    "liver": ("SCT", "10200004", "Liver"),
    "tumor": ("SCT", "108369006", "Neoplasm"),
    "kidney": ("SCT", "64033007", "Kidney"),
    "local neoplasm": ("99FD", "N1", "Neoplasm"),  # a site's own code of the same meaning as SNOMED's
}


def prepared_sources(paths: list[Path], frame_of_reference: str = "1.2.826.0.1.3680043.8.498.77") -> list:
    """The source images' datasets, sorted along z, with what highdicom needs added to each file (a frame of
    reference, the study's attributes, a slice thickness)."""
    import pydicom

    out = []
    for path in paths:
        ds = pydicom.dcmread(path)
        for name, value in {**STUDY, "FrameOfReferenceUID": frame_of_reference,
                            "SliceThickness": "2.5"}.items():
            if name not in ds:
                setattr(ds, name, value)
        ds.save_as(path)
        out.append(ds)
    return sorted(out, key=lambda ds: float(ds.ImagePositionPatient[2]))


def write_seg(path: Path, sources: list, segments: list[tuple[str, np.ndarray]], *, uid_seed: str = "seg",
              fractional: bool = False) -> Path:
    """A SEG at `path` of `segments` ((CODES name, (z, y, x) bool mask over `sources`, in their order)), numbered
    1, 2, ... in that order; with `fractional`, a FRACTIONAL one whose masks are floats in [0, 1]."""
    import highdicom as hd
    from pydicom.sr.coding import Code
    from pydicom.uid import generate_uid

    labels = np.zeros((len(sources), *segments[0][1].shape[1:], len(segments)), np.float32 if fractional else np.uint8)
    descriptions = []
    for n, (name, mask) in enumerate(segments, start=1):
        labels[..., n - 1] = mask
        scheme, value, meaning = CODES[name]
        code = Code(value, scheme, meaning)
        descriptions.append(hd.seg.SegmentDescription(
            segment_number=n, segment_label=name, segmented_property_category=Code("91723000", "SCT", "Anatomical "
                                                                                   "structure"),
            segmented_property_type=code, algorithm_type=hd.seg.SegmentAlgorithmTypeValues.MANUAL))
    kind = hd.seg.SegmentationTypeValues.FRACTIONAL if fractional else hd.seg.SegmentationTypeValues.BINARY
    seg = hd.seg.Segmentation(
        source_images=sources, pixel_array=labels, segmentation_type=kind,
        segment_descriptions=descriptions, series_instance_uid=generate_uid(entropy_srcs=[uid_seed, "series"]),
        series_number=2, sop_instance_uid=generate_uid(entropy_srcs=[uid_seed, "sop"]), instance_number=1,
        manufacturer="fastdata tests", manufacturer_model_name="conftest_seg", software_versions="1",
        device_serial_number="1")
    path.parent.mkdir(parents=True, exist_ok=True)
    seg.save_as(path)
    return path
