"""PET series: values int16 cannot hold are kept as float32 (activity concentrations are not clipped), and `--suv`
converts them to SUVbw by QIBA's rules, rejecting a series whose header cannot give them, with the reason."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pydicom")
sys.path.insert(0, str(Path(__file__).parent))

from conftest_dicom import PLANE, convert_dicom, read_samples, rejection_of  # noqa: E402
from conftest_pet import DOSE, HALF_LIFE, PET_STORAGE, SLOPES, WEIGHT, write_pet  # noqa: E402

from converters.dicom import DicomOptions  # noqa: E402
from converters.dicom.discover import SeriesFiles  # noqa: E402
from converters.dicom.series import convert_series  # noqa: E402

SUV = DicomOptions(salt="t", suv=True)
PLAIN = DicomOptions(salt="t")
SERIES_LATER = ("its SeriesDate and SeriesTime are missing or after its acquisition (a series processed later), and "
                "no scan start stands in (GE's 0009,100D)")
NOT_CORRECTED = "it is not corrected for attenuation and decay (CorrectedImage lacks ATTN or DECY)"


def _pet(root: Path, **kwargs) -> SeriesFiles:
    return SeriesFiles("1.2.9", tuple((str(p), p.name) for p in write_pet(root, **kwargs)))


def _activity(slopes=SLOPES) -> np.ndarray:
    return np.stack([PLANE * np.float32(s) for s in slopes]).astype(np.float32)


def _factor(decay_seconds: float) -> float:
    return WEIGHT * 1000 / (DOSE * 0.5 ** (decay_seconds / HALF_LIFE))


def test_suv_is_activity_times_weight_over_the_dose_decayed_to_the_series_start(tmp_path):
    """An hour from injection to the series' start decays the dose by 2^(-3600/6586.2); each slice keeps its own
    slope. The values are float32 SUVs, and nothing of the computation (weight, dose, times) is written."""
    arr, _, meta = convert_series(_pet(tmp_path), SUV)
    assert arr.dtype == np.float32 and meta["dtype"] == "float32"
    np.testing.assert_allclose(arr, _activity() * _factor(3600.0), rtol=1e-6)
    assert meta["units"].startswith("SUVbw (g/ml)")
    assert meta["min"] == 0.0 and meta["max"] == pytest.approx(float(arr.max()), abs=1e-6)  # 6 decimals
    written = json.dumps(meta)
    assert not any(word in written for word in ("81.5", "Weight", "Dose", "2024", "1015"))


def test_without_suv_activity_concentrations_are_kept_whole_and_unclipped(tmp_path):
    """Without --suv a PET series keeps its rescaled values: int16 where each is a whole number in int16's range,
    else float32, so Bq/ml beyond 32767 and fractional slopes lose nothing (they were clipped and rounded to int16
    before). CT stays whole Hounsfield units in int16."""
    arr, _, meta = convert_series(_pet(tmp_path / "whole", slopes=(1.0, 2.0, 3.0)), PLAIN)
    assert arr.dtype == np.int16 and meta["dtype"] == "int16" and meta["min"] == 0 and meta["max"] == 189
    np.testing.assert_array_equal(arr, _activity((1.0, 2.0, 3.0)))
    for slopes in ((0.5, 2.25, 7.3), (1000.0, 1000.0, 1000.0)):
        arr, _, meta = convert_series(_pet(tmp_path / str(slopes[0]), slopes=slopes), PLAIN)
        assert arr.dtype == np.float32 and meta["clipped_voxels"] == 0
        np.testing.assert_array_equal(arr, _activity(slopes))
        assert meta["units"] == "rescaled stored values (RescaleSlope/RescaleIntercept applied)"
    ct, _, meta = convert_series(_pet(tmp_path / "ct", slopes=(1.0, 2.0, 3.0), Modality="CT"), SUV)  # not PET
    assert ct.dtype == np.int16 and meta["units"] == "HU"
    np.testing.assert_array_equal(ct, _activity((1.0, 2.0, 3.0)))


@pytest.mark.parametrize(("change", "decay"), [
    ({"DecayCorrection": "ADMIN"}, 0.0),  # decay-corrected to the injection: the dose as injected
    ({"series": "121500", "GE": "20240229111500"}, 3600.0),  # a series written later: GE's scan start stands in
    ({"series": None, "SeriesDate": None}, 3600.0),  # no series time: the earliest acquisition
    ({"injected": "233000", "series": "003000", "acquisitions": ("003000",) * 3}, 3600.0),  # over midnight
    ({"info": {"RadiopharmaceuticalStartDateTime": "20240229101500", "RadiopharmaceuticalStartTime": "000000"}},
     3600.0),  # the start's date and time win over its time alone
    ({"info": {"RadiopharmaceuticalStartDateTime": "20240229101500+0100"}, "SeriesTime": "111500"}, 3600.0),
    ({"series": "121500", "GE": "20240229111500+0100"}, 3600.0),  # a scan start with an offset, a start without
    ({"injected": "111500"}, 0.0),  # injected as the scan began: no decay
    ({"injected": "111501"}, 86399.0),  # its time alone a second after the scan's: the day before
    ({"info": {"RadiopharmaceuticalStartDateTime": "20240228111500"}}, 86400.0),  # a day: the longest taken
])
def test_the_decay_time_follows_qiba(tmp_path, change, decay):
    change = dict(change)
    ge = change.pop("GE", None)
    series = _pet(tmp_path, **change)
    if ge is not None:
        from pydicom import dcmread

        for path, _ in series.files:
            ds = dcmread(path)
            ds.private_block(0x0009, "GEMS_PETD_01", create=True).add_new(0x0D, "DT", ge)
            ds.save_as(path)
    arr, _, _ = convert_series(series, SUV)
    np.testing.assert_allclose(arr, _activity() * _factor(decay), rtol=1e-6)


def test_philips_counts_and_units_already_in_suv(tmp_path):
    """Units GML are SUVbw already; Philips' CNTS take its SUV scale factor (7053,1000), else its activity
    concentration factor (7053,1009) and then the BQML rules."""
    from pydicom import dcmread

    arr, _, _ = convert_series(_pet(tmp_path / "gml", Units="GML"), SUV)
    np.testing.assert_allclose(arr, _activity(), rtol=1e-6)
    for offset, value, expected in ((0x00, "0.000412", 0.000412), (0x09, "3.5", 3.5 * _factor(3600.0))):
        series = _pet(tmp_path / f"cnts{offset}", Units="CNTS")
        for path, _ in series.files:
            ds = dcmread(path)
            ds.private_block(0x7053, "Philips PET Private Group", create=True).add_new(offset, "DS", value)
            ds.save_as(path)
        arr, _, _ = convert_series(series, SUV)
        np.testing.assert_allclose(arr, _activity() * expected, rtol=1e-6)
    later = _pet(tmp_path / "cnts_later", Units="CNTS", series="121500")  # activity: then the BQML rules
    for path, _ in later.files:
        ds = dcmread(path)
        ds.private_block(0x7053, "Philips PET Private Group", create=True).add_new(0x09, "DS", "3.5")
        ds.save_as(path)
    assert rejection_of(later, SUV) == ("00.dcm: --suv cannot compute standardized uptake values of this PET series: "
                                        + SERIES_LATER)


@pytest.mark.parametrize(("change", "why"), [
    ({"PatientWeight": None}, "its PatientWeight is missing or not a positive number"),
    ({"PatientWeight": "0"}, "its PatientWeight is missing or not a positive number"),
    ({"PatientWeight": "1e999"}, "its PatientWeight is missing or not a positive number"),  # infinite
    ({"info": {"RadionuclideTotalDose": None}}, "its RadionuclideTotalDose (RadiopharmaceuticalInformationSequence) "
                                                "is missing or not a positive number"),
    ({"RadiopharmaceuticalInformationSequence": None}, "its RadionuclideTotalDose (RadiopharmaceuticalInformation"
                                                       "Sequence) is missing or not a positive number"),
    ({"info": {"RadionuclideHalfLife": "-1"}}, "its RadionuclideHalfLife is missing or not a positive number"),
    ({"info": {"RadiopharmaceuticalStartTime": None}}, "its RadiopharmaceuticalStartDateTime (or "
                                                       "RadiopharmaceuticalStartTime) is missing"),
    ({"info": {"RadiopharmaceuticalStartDateTime": "20240227101500"}}, "its radiopharmaceutical start is after the "
                                                                       "scan, or more than a day before it"),
    ({"series": "121500"}, SERIES_LATER),
    ({"series": "111501"}, SERIES_LATER),  # a second after the first acquisition
    ({"series": "121500", "AcquisitionDate": None, "AcquisitionTime": None,
      "AcquisitionDateTime": "20240229111500"}, SERIES_LATER),  # the acquisition as one DT value (enhanced objects)
    ({"Units": "PROPCNTS"}, "its Units are not BQML (activity concentration), CNTS with Philips' scale factors or "
                            "GML (SUVbw already)"),
    ({"Units": "CNTS"}, "its Units are CNTS (counts) without Philips' SUV or activity concentration scale factor "
                        "(7053,1000 or 7053,1009)"),
    ({"CorrectedImage": ["ATTN", "NORM"]}, NOT_CORRECTED),
    ({"CorrectedImage": "DECY"}, NOT_CORRECTED),
    ({"CorrectedImage": None}, NOT_CORRECTED),
    ({"DecayCorrection": "NONE"}, "its DecayCorrection is not START or ADMIN"),
])
def test_a_pet_series_whose_suv_cannot_be_computed_is_rejected_naming_the_attribute(tmp_path, change, why):
    reason = rejection_of(_pet(tmp_path, **change), SUV)
    assert reason == "00.dcm: --suv cannot compute standardized uptake values of this PET series: " + why
    assert "81.5" not in reason and "2024" not in reason


def test_an_enhanced_pet_dose_is_in_megabecquerels():
    """PS3.3 C.8.22.4: the Enhanced PET Isotope module gives the dose in MBq, the classic PET module in Bq."""
    from pydicom.dataset import Dataset

    from converters.dicom.pet import suv_factor

    def header(sop: str, dose: str) -> Dataset:
        ds, item = Dataset(), Dataset()
        ds.SOPClassUID, ds.Units, ds.CorrectedImage, ds.DecayCorrection = sop, "BQML", ["ATTN", "DECY"], "ADMIN"
        ds.PatientWeight = "70"
        item.RadionuclideTotalDose = dose
        ds.RadiopharmaceuticalInformationSequence = [item]
        return ds

    classic = suv_factor(header(PET_STORAGE, "370000000"), None, "x")
    assert classic == pytest.approx(70000 / 3.7e8)
    assert suv_factor(header("1.2.840.10008.5.1.4.1.1.130", "370"), None, "x") == pytest.approx(classic)


def test_suv_through_the_engine(tmp_path):
    """A converted PET series reads back in SUV, without a foreground histogram (kept for int16 volumes); the
    manifest says the rule."""
    import io

    _pet(tmp_path / "src" / "pet")
    convert_dicom(tmp_path / "src", tmp_path / "out", suv=True)
    ((sample),) = read_samples(tmp_path / "out").values()
    np.testing.assert_allclose(np.load(io.BytesIO(sample["npy"])), _activity() * _factor(3600.0), rtol=1e-6)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["preprocessing"]["values"].endswith("; PET in SUVbw (QIBA), float32")
    assert manifest["splits"]["train"]["stats"]["modality"] == {"PT": 1}


def test_rescaled_values_past_float32_reject_the_series(tmp_path):
    """A slope within float32's range can still carry a stored value past it (63 x 1e38): an infinite voxel is no
    value, so the series is rejected rather than stored with it."""
    reason = rejection_of(_pet(tmp_path, slopes=(1.0, 1e38, 1.0)), PLAIN)
    assert reason == "00.dcm: rescaled values beyond float32's range (RescaleSlope, RescaleIntercept)"


@pytest.mark.parametrize("sex, height", [("F", 1.65), ("M", 1.82), ("M", 1.50)])
def test_suv_by_lean_body_mass_is_janmahasatians(tmp_path, sex, height):
    """--suv lbm (SUL): SUVbw x LBM / weight, LBM = 9270 W / (8780 + 244 BMI) for women, (6680 + 216 BMI) for men
    (Janmahasatian 2005); a short heavy man (BMI 36) where James' formula has begun to fall."""
    bmi = WEIGHT / height ** 2
    lean = 9270 * WEIGHT / ((8780 + 244 * bmi) if sex == "F" else (6680 + 216 * bmi))
    arr, _, meta = convert_series(_pet(tmp_path, PatientSize=f"{height}", PatientSex=sex),
                                  DicomOptions(salt="t", suv="lbm"))
    np.testing.assert_allclose(arr, _activity() * _factor(3600.0) * lean / WEIGHT, rtol=1e-5)
    assert meta["units"].startswith("SUVlbm (g/ml)") and 0.55 < lean / WEIGHT < 0.85


def test_suv_by_body_surface_area_is_du_bois(tmp_path):
    """--suv bsa: activity x BSA (cm2) / decayed dose, BSA = 0.007184 W^0.425 H(cm)^0.725 m2 (about 1.93 m2 here)."""
    bsa_cm2 = 0.007184 * WEIGHT ** 0.425 * 175 ** 0.725 * 1e4
    arr, _, meta = convert_series(_pet(tmp_path, PatientSize="1.75"), DicomOptions(salt="t", suv="bsa"))
    np.testing.assert_allclose(arr, _activity() * _factor(3600.0) * bsa_cm2 / (WEIGHT * 1000), rtol=1e-5)
    assert meta["units"].startswith("SUVbsa (cm2/ml)") and 19000 < bsa_cm2 < 20000


@pytest.mark.parametrize("by, change, why", [
    ("lbm", {"PatientSex": "F"}, "its PatientSize is missing or not a height in metres (0.3-2.8), which --suv lbm "
                                 "needs"),
    ("bsa", {"PatientSize": "175"}, "its PatientSize is missing or not a height in metres (0.3-2.8), which --suv bsa "
                                    "needs"),
    ("lbm", {"PatientSize": "1.7", "PatientSex": "O"}, "its PatientSex is not M or F, which --suv lbm's formula "
                                                       "(Janmahasatian's) needs"),
    ("lbm", {"PatientSize": "1.7"}, "its PatientSex is not M or F, which --suv lbm's formula (Janmahasatian's) needs"),
    ("bsa", {"PatientSize": "1.7", "PatientWeight": None}, "its PatientWeight is missing or not a positive number"),
])
def test_a_series_without_what_its_normalisation_needs_is_rejected(tmp_path, by, change, why):
    """A height in centimetres (a known vendor slip) is no height in metres; the reason names the attribute only."""
    reason = rejection_of(_pet(tmp_path, **change), DicomOptions(salt="t", suv=by))
    assert reason == "00.dcm: --suv cannot compute standardized uptake values of this PET series: " + why


def test_units_already_in_suvbw_take_the_lean_body_mass_too(tmp_path):
    """A series in GML (SUVbw already) converts to SUVlbm by the same ratio."""
    arr, _, _ = convert_series(_pet(tmp_path, Units="GML", PatientSize="1.65", PatientSex="F"),
                               DicomOptions(salt="t", suv="lbm"))
    bmi = WEIGHT / 1.65 ** 2
    np.testing.assert_allclose(arr, _activity() * 9270 / (8780 + 244 * bmi), rtol=1e-5)


def test_suv_options():
    assert DicomOptions(suv=True).suv == "bw" and DicomOptions().suv is False
    with pytest.raises(ValueError, match="--suv must be one of bw, lbm, bsa"):
        DicomOptions(suv="sul")


def test_the_manifest_names_the_normalisation(tmp_path):
    _pet(tmp_path / "src" / "pet", PatientSize="1.65", PatientSex="F")
    convert_dicom(tmp_path / "src", tmp_path / "out", suv="bsa")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["preprocessing"]["values"].endswith("; PET in SUVbsa (QIBA), float32")
