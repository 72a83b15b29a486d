"""Privacy by default (DICOM PS3.15 Annex E, Basic Profile; docs/security.md has the table).

Without `--keep-phi` nothing identifying is written into DST: no attribute from PHI_KEYWORDS, no UID,
no description, and no source path. Series and files are named by pseudonyms keyed by a salt: the
user's `--salt` (reproducible across conversions) or a random one drawn per conversion (kept in the
conversion's plan for resume only, so pseudonyms of two conversions cannot be linked). The paths
behind the pseudonyms go to a local report outside DST (converters/private_report.py writes it).
Nor does a value reach a rejection reason or a log: pydicom's validation (which quotes values) is off while a
conversion reads (`quiet_values`), reasons name an exception's type (`failure`) and UIDs by their registered name
only (`uid_name`).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)

# Attributes copied only with --keep-phi (names, IDs, dates, accession numbers, institution, descriptions, UIDs).
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
    "StudyDescription",
    "SeriesDescription",
    "StudyInstanceUID",
    "SeriesInstanceUID",
    "FrameOfReferenceUID",
)


def _keyed(kind: str, value: str, salt: str, length: int) -> str:
    return hmac.new(f"fastdata-dicom\0{salt}".encode(), f"{kind}\0{value}".encode(),
                    hashlib.sha256).hexdigest()[:length]


def series_hash(uid: str, salt: str) -> str:
    """A stable pseudonym for a SeriesInstanceUID under `salt` (HMAC-SHA-256, 32 hex characters)."""
    return _keyed("series", uid, salt, 32)


def series_name(uid: str, salt: str) -> str:
    """How rejections and the report name a series: the same pseudonym as its samples' `series`."""
    return f"series-{series_hash(uid, salt)}"


def file_name(rel: str, salt: str) -> str:
    """How rejections and the report name a source file (or folder) without its path."""
    return f"file-{_keyed('file', rel, salt, 20)}"


def phi_fields(ds: Any) -> dict[str, str]:
    """The identifying attributes of a dataset as strings (only called with --keep-phi)."""
    out = {}
    for kw in PHI_KEYWORDS:
        value = ds.get(kw)
        if value is not None and str(value) != "":
            out[kw] = str(value)
    return out


def burned_in(ds: Any) -> bool:
    """BurnedInAnnotation YES: the pixels themselves may show names or IDs (Annex E cannot remove those)."""
    return str(ds.get("BurnedInAnnotation", "") or "").strip().upper() == "YES"


def warn_keep_phi() -> None:
    log.warning("!" * 78)
    log.warning("--keep-phi: patient names, IDs, birth dates, accession numbers, institution, descriptions, UIDs")
    log.warning("and source paths WILL be written into this dataset. Do not share it outside the approved "
                "environment.")
    log.warning("!" * 78)


def note_random_salt() -> None:
    log.info("no --salt given: series are named with a random salt drawn for this conversion, so its pseudonyms "
             "cannot be linked to any other conversion; pass --salt SECRET (or set FASTDATA_DICOM_SALT) for "
             "pseudonyms that are the same across conversions")


@contextmanager
def quiet_values() -> Iterator[None]:
    """pydicom's validation of the values it reads, off while a conversion reads DICOM. In its default mode it warns
    and logs an invalid value with the value itself ("Invalid value for VR UI: '1.2.840...'"): a UID or a patient's
    name written to the terminal and to the logs of a conversion whose output is de-identified. Nothing else
    changes: the default mode only warns, and fastdata checks the values it uses. Entered by one thread for the
    whole of a discovery (its header threads run inside) or of one series. Without pydicom: nothing to quiet."""
    try:
        from pydicom import config
    except ImportError:  # --kind auto on a source of no DICOM file needs no pydicom
        yield
        return
    before = config.settings.reading_validation_mode
    config.settings.reading_validation_mode = config.IGNORE
    try:
        yield
    finally:
        config.settings.reading_validation_mode = before


def failure(exc: BaseException) -> str:
    """What a rejection reason says of an exception raised while pydicom read a file or a value: its type, with
    pydicom's own fixed-text InvalidDicomError message or an OSError's strerror (not its file name). Other messages
    can quote the value being parsed (a BytesLengthException shows the bytes: a UID, a name), and reasons go into
    DST."""
    from pydicom.errors import InvalidDicomError

    if isinstance(exc, InvalidDicomError):
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}"
    return type(exc).__name__


def sop_class(ds: Any) -> str:
    """A dataset's SOP class UID: its SOPClassUID, else its file meta's (a dataset may lose the first)."""
    return str(ds.get("SOPClassUID", "") or ds.file_meta.get("MediaStorageSOPClassUID", ""))


def uid_name(value: object, unknown: str) -> str:
    """The registered name of a UID (a SOP class, a transfer syntax), else `unknown`: any other value is not shown.
    A damaged length can run a value on over the elements after it, a patient's name among them, and these names
    go into rejection reasons and sample metadata, inside DST."""
    from pydicom.uid import UID_dictionary

    known = UID_dictionary.get(str(value)) if value is not None else None
    return known[0] if known is not None else unknown
