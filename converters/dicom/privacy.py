"""Privacy by default: series are named by a salted hash, identifying attributes stay behind.

Without `--keep-phi` nothing from this list (nor any UID) is written into shards or the manifest.
With it, these attributes are copied into each sample's json, and a loud warning is logged.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

log = logging.getLogger(__name__)

# Attributes copied only with --keep-phi (names, IDs, dates of birth, accession numbers, institution, UIDs).
PHI_KEYWORDS = (
    "PatientName",
    "PatientID",
    "OtherPatientIDs",
    "PatientBirthDate",
    "PatientSex",
    "PatientAge",
    "AccessionNumber",
    "InstitutionName",
    "InstitutionAddress",
    "ReferringPhysicianName",
    "StudyDate",
    "StudyID",
    "StudyInstanceUID",
    "SeriesInstanceUID",
    "FrameOfReferenceUID",
)


def series_hash(uid: str, salt: str) -> str:
    """A stable pseudonym for a SeriesInstanceUID: SHA-256 of salt + UID (hex, 32 characters)."""
    return hashlib.sha256(f"fastdata-dicom\0{salt}\0{uid}".encode()).hexdigest()[:32]


def phi_fields(ds: Any) -> dict[str, str]:
    """The identifying attributes of a dataset as strings (only called with --keep-phi)."""
    out = {}
    for kw in PHI_KEYWORDS:
        value = ds.get(kw)
        if value is not None and str(value) != "":
            out[kw] = str(value)
    return out


def warn_keep_phi() -> None:
    log.warning("!" * 78)
    log.warning("--keep-phi: patient names, IDs, birth dates, accession numbers, institution and UIDs WILL be")
    log.warning("written into the shards of this dataset. Do not share it outside the approved environment.")
    log.warning("!" * 78)


def warn_unsalted() -> None:
    log.warning("no --salt given: series hashes are an unsalted function of the SeriesInstanceUID, so anyone "
                "holding the UID can link a sample to its series; pass --salt SECRET (or set "
                "FASTDATA_DICOM_SALT) to prevent that")
