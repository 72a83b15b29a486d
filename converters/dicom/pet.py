"""PET series in standardized uptake values (`--suv`, `--suv lbm`, `--suv bsa`), by QIBA's vendor-neutral rules.

SUVbw = activity concentration (Bq/ml) x patient weight (g) / the injected dose decayed to the scan's start (Bq).
SUVlbm (SUL, PERCIST's) takes the lean body mass for the weight, by Janmahasatian's formula from weight, height and
sex (James' formula, QIBA's pseudo-code's, is not used: its lean mass peaks at a body mass index of about 36 for women
and 43 for men, then falls, and turns negative near twice that); SUVbsa the body surface area in cm2, by Du Bois'
formula from weight and height.
A PET series stores activity concentration (Units BQML), corrected for attenuation and decay (CorrectedImage ATTN
and DECY) to the scan's start (DecayCorrection START) or to the administration (ADMIN); the dose, its half-life and
its administration time are in its RadiopharmaceuticalInformationSequence. The scan's start is the series' date and
time unless that is after its earliest acquisition (a series processed later), where GE's private scan date and
time stands in. Philips writes counts (Units CNTS) with its own scale factors (private group 7053): the SUV factor,
else the activity concentration factor followed by the rules above. Units GML are SUVbw already.

A series whose SUV cannot be computed by these rules is rejected with the reason (never converted in other units
among SUVs); the reason names attributes, never their values (dates, weights). Nothing read here is written: the
factor itself would carry the weight.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from converters.dicom.geometry import RejectSeries
from converters.dicom.privacy import sop_class

ENHANCED_PET = ("1.2.840.10008.5.1.4.1.1.130",)  # Enhanced PET Image Storage: its dose is in MBq (PS3.3 C.8.22.4)
DAY = timedelta(days=1)
SUV_UNITS = "SUVbw (g/ml): activity concentration x body weight / decayed injected dose (QIBA)"
NORMALISATIONS = ("bw", "lbm", "bsa")  # --suv KIND
UNITS = {
    "bw": SUV_UNITS,
    "lbm": "SUVlbm (g/ml): activity concentration x lean body mass (Janmahasatian) / decayed injected dose (QIBA)",
    "bsa": "SUVbsa (cm2/ml): activity concentration x body surface area (Du Bois) / decayed injected dose (QIBA)",
}
HEIGHTS = (0.3, 2.8)  # m: a PatientSize outside it is no height in metres (some systems write centimetres)


def acquired(ds: Any) -> datetime | None:
    """When a file's image was acquired (AcquisitionDateTime, else AcquisitionDate and AcquisitionTime), or None
    when it does not say (or says it in a malformed value: a series of another modality converts all the same)."""
    try:
        return _when(ds.get("AcquisitionDateTime"), ds.get("AcquisitionDate"), ds.get("AcquisitionTime"))
    except Exception:  # noqa: BLE001 - pydicom parses a value when it is first read
        return None


def suv_factor(ds: Any, earliest: datetime | None, rel: str, by: str = "bw") -> float:
    """The factor that turns the series' rescaled values (the first file `ds`; `earliest`: its earliest
    acquisition) into SUVbw, or SUVlbm or SUVbsa (`by`); RejectSeries says which attribute is missing or unusable."""
    return _bw_factor(ds, earliest, rel) * (1.0 if by == "bw" else _per_weight(ds, rel, by))


def _per_weight(ds: Any, rel: str, by: str) -> float:
    """What SUVbw is multiplied by for `by`: lean body mass / weight (lbm), body surface area in cm2 / weight in g
    (bsa)."""
    weight = _weight(ds, rel)
    height = _positive(ds.get("PatientSize"))
    if height is None or not HEIGHTS[0] <= height <= HEIGHTS[1]:
        raise _cannot(rel, f"its PatientSize is missing or not a height in metres ({HEIGHTS[0]}-{HEIGHTS[1]}), which "
                           f"--suv {by} needs")
    if by == "bsa":
        return 0.007184 * weight ** 0.425 * (height * 100.0) ** 0.725 * 1e4 / (weight * 1000.0)
    sex = str(ds.get("PatientSex", "") or "").strip().upper()
    if sex not in ("M", "F"):
        raise _cannot(rel, "its PatientSex is not M or F, which --suv lbm's formula (Janmahasatian's) needs")
    bmi = weight / height ** 2
    lean = 9270.0 * weight / ((6680.0 + 216.0 * bmi) if sex == "M" else (8780.0 + 244.0 * bmi))
    return lean / weight


def _weight(ds: Any, rel: str) -> float:
    weight = _positive(ds.get("PatientWeight"))
    if weight is None:
        raise _cannot(rel, "its PatientWeight is missing or not a positive number")
    return weight


def _bw_factor(ds: Any, earliest: datetime | None, rel: str) -> float:
    units = str(ds.get("Units", "")).strip().upper()
    if units == "GML":
        return 1.0
    if units == "CNTS":
        suv = _philips(ds, 0x00)
        if suv:
            return suv
        activity = _philips(ds, 0x09)
        if not activity:
            raise _cannot(rel, "its Units are CNTS (counts) without Philips' SUV or activity concentration scale "
                               "factor (7053,1000 or 7053,1009)")
        return activity * _bqml_factor(ds, earliest, rel)
    if units != "BQML":
        raise _cannot(rel, "its Units are not BQML (activity concentration), CNTS with Philips' scale factors or "
                           "GML (SUVbw already)")
    return _bqml_factor(ds, earliest, rel)


def _bqml_factor(ds: Any, earliest: datetime | None, rel: str) -> float:
    corrected = {str(v).strip().upper() for v in _values(ds.get("CorrectedImage"))}
    if not {"ATTN", "DECY"} <= corrected:
        raise _cannot(rel, "it is not corrected for attenuation and decay (CorrectedImage lacks ATTN or DECY)")
    correction = str(ds.get("DecayCorrection", "")).strip().upper()
    if correction not in ("START", "ADMIN"):
        raise _cannot(rel, "its DecayCorrection is not START or ADMIN")
    weight = _weight(ds, rel)
    info = (ds.get("RadiopharmaceuticalInformationSequence") or [None])[0]
    dose = None if info is None else _positive(info.get("RadionuclideTotalDose"))
    if dose is None:
        raise _cannot(rel, "its RadionuclideTotalDose (RadiopharmaceuticalInformationSequence) is missing or not a "
                           "positive number")
    if sop_class(ds) in ENHANCED_PET:
        dose *= 1e6  # MBq
    if correction == "START":  # the values are decay-corrected to the scan's start: so must the dose be
        dose *= 0.5 ** (_decay_seconds(ds, info, earliest, rel) / _half_life(info, rel))
    return weight * 1000.0 / dose


def _half_life(info: Any, rel: str) -> float:
    half = _positive(info.get("RadionuclideHalfLife"))
    if half is None:
        raise _cannot(rel, "its RadionuclideHalfLife is missing or not a positive number")
    return half


def _decay_seconds(ds: Any, info: Any, earliest: datetime | None, rel: str) -> float:
    """Seconds from the administration to the scan's start."""
    series = _when(None, ds.get("SeriesDate"), ds.get("SeriesTime"))
    if series is not None and (earliest is None or _seconds(series, earliest) <= 0):
        scan = series
    else:  # a series written after its acquisition (or without its time): GE keeps the scan's start
        scan = _ge_scan(ds) or (earliest if series is None else None)
        if scan is None:
            raise _cannot(rel, "its SeriesDate and SeriesTime are missing or after its acquisition (a series "
                               "processed later), and no scan start stands in (GE's 0009,100D)")
    start = _when(info.get("RadiopharmaceuticalStartDateTime"), None, None)
    if start is None:  # the time alone: on the scan's day, or the day before when it would be after the scan
        start = _when(None, f"{scan.year:04d}{scan.month:02d}{scan.day:02d}",
                      info.get("RadiopharmaceuticalStartTime"))
        if start is not None and _seconds(start, scan) > 0:
            start -= DAY
    if start is None:
        raise _cannot(rel, "its RadiopharmaceuticalStartDateTime (or RadiopharmaceuticalStartTime) is missing")
    seconds = _seconds(scan, start)
    if not 0 <= seconds <= DAY.total_seconds():
        raise _cannot(rel, "its radiopharmaceutical start is after the scan, or more than a day before it")
    return seconds


def _seconds(later: datetime, earlier: datetime) -> float:
    """`later` - `earlier` in seconds; without their offsets when one has none (the other's is then unknown)."""
    if later.tzinfo is None or earlier.tzinfo is None:
        later, earlier = later.replace(tzinfo=None), earlier.replace(tzinfo=None)
    return (later - earlier).total_seconds()


def _ge_scan(ds: Any) -> datetime | None:
    return _when(_private(ds, 0x0009, 0x0D, "GEMS_PETD_01"), None, None)


def _philips(ds: Any, offset: int) -> float | None:
    return _positive(_private(ds, 0x7053, offset, "Philips PET Private Group"))


def _private(ds: Any, group: int, offset: int, creator: str) -> Any:
    """The value of a vendor's private element (`offset` in the block `creator` reserves in `group`), or None."""
    try:
        return ds.get_private_item(group, offset, creator).value
    except (KeyError, ValueError):
        return None


def _when(stamp: Any, date: Any, time: Any) -> datetime | None:
    """A DICOM date and time (a DT value, else a DA and a TM value) as a datetime; None when absent or not one."""
    from pydicom.valuerep import DA, DT, TM

    try:
        if stamp not in (None, ""):
            return DT(str(stamp).strip())
        if date in (None, "") or time in (None, ""):
            return None
        day, clock = DA(str(date).strip()), TM(str(time).strip())
        return None if day is None or clock is None else datetime.combine(day, clock)
    except (ValueError, TypeError, OverflowError):
        return None


def _positive(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 and number < float("inf") else None


def _values(value: Any) -> list[Any]:
    """A multi-valued attribute's values (pydicom gives one value as itself)."""
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _cannot(rel: str, why: str) -> RejectSeries:
    return RejectSeries(f"{rel}: --suv cannot compute standardized uptake values of this PET series: {why}")
