"""De-identification (DICOM PS3.15 Annex E, Basic Profile): no description, UID or source path inside DST
without --keep-phi; pseudonyms keyed by the user's salt or a random one per conversion; the salt never
in the fingerprint; BurnedInAnnotation YES rejected unless asked."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

pytest.importorskip("pydicom")
pytest.importorskip("scipy")

from conftest_dicom import (  # noqa: E402
    PHI_STRINGS,
    Phantom,
    convert_dicom,
    load_volume,
    read_samples,
    write_phantom,
)
from helpers import crash_after_first_record  # noqa: E402

from fastdata.cli import main as cli  # noqa: E402
from fastdata.errors import ConvertError  # noqa: E402

PATIENT_FOLDER = "DOE_JANE_PID-7731-SECRET"  # PACS exports name folders after the patient


def _everything(dst: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(dst.rglob("*")) if p.is_file())


@pytest.fixture
def export(tmp_path: Path) -> Path:
    """A PACS-style export: folders named after the patient, a good series, a broken one, a stray file."""
    src = tmp_path / "export"
    write_phantom(src / PATIENT_FOLDER / "CT_CHEST", Phantom(series_uid="1.2.840.99.1", slices=5), seed=0)
    write_phantom(src / PATIENT_FOLDER / "CT_GAP", Phantom(series_uid="1.2.840.99.2", slices=5), seed=1,
                  skip=(2,))
    (src / PATIENT_FOLDER / "notes-about-jane.txt").write_text("not dicom")
    (src / PATIENT_FOLDER / "loop").symlink_to("/nonexistent/DOE_JANE_target")
    return src


def _series_of(dst: Path) -> list[str]:
    return sorted(load_volume(s)[1]["series"] for s in read_samples(dst).values())


def test_no_description_uid_or_path_inside_dst(export: Path, tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="converters"):
        result = convert_dicom(export, tmp_path / "out")
    blob = _everything(tmp_path / "out")
    for secret in (*PHI_STRINGS, PATIENT_FOLDER, "DOE_JANE", "CT_CHEST", "CT_GAP", "notes-about-jane",
                   "CHEST PHANTOM", "1.2.840.99.1", "1.2.840.99.2", str(export)):
        assert secret.encode() not in blob, secret
        assert secret not in caplog.text, secret
    meta = load_volume(next(iter(read_samples(tmp_path / "out").values())))[1]
    assert "series_description" not in meta and "files_rel" not in meta and "phi" not in meta
    # every rejection is named by a pseudonym, and the reasons name files by pseudonym too
    sources = sorted(r["source"] for r in result.rejected)
    assert len(sources) == 3 and all(s.startswith(("file-", "series-")) for s in sources)
    gap = next(r["reason"] for r in result.rejected if r["source"].startswith("series-"))
    assert gap.startswith("missing slices")
    broken = next(r["reason"] for r in result.rejected if "symlink" in r["reason"])
    assert broken == "broken symlink (points to a path withheld)"


def test_the_private_report_maps_pseudonyms_back_outside_dst(export: Path, tmp_path: Path) -> None:
    result = convert_dicom(export, tmp_path / "out")
    report = tmp_path / "out.private-sources.jsonl"
    assert result.private_report == report and oct(report.stat().st_mode & 0o777) == "0o600"
    head, *lines = [json.loads(line) for line in report.read_text().splitlines()]
    assert head["source"] == str(export.resolve()) and "PRIVATE" in head["note"]
    by_name = {line["name"]: line for line in lines}
    [sample_key] = read_samples(tmp_path / "out")
    [kept] = [line for line in lines if line.get("key") == sample_key]
    assert kept["path"] == f"{PATIENT_FOLDER}/CT_CHEST (5 files)"
    assert kept["name"] == f"series-{_series_of(tmp_path / 'out')[0]}"  # the sample's own `series`
    for r in result.rejected:
        assert by_name[r["source"]]["path"].startswith(PATIENT_FOLDER)
    # a report inside DST is refused (it would travel with the dataset)
    with pytest.raises(ConvertError, match="inside the destination"):
        convert_dicom(export, tmp_path / "o2", private_report=tmp_path / "o2" / "r.jsonl")


def test_keep_phi_keeps_paths_and_descriptions(export: Path, tmp_path: Path) -> None:
    result = convert_dicom(export, tmp_path / "out", keep_phi=True)
    meta = load_volume(next(iter(read_samples(tmp_path / "out").values())))[1]
    assert meta["phi"]["SeriesDescription"] == "CHEST PHANTOM"
    assert meta["files_rel"][0].startswith(f"{PATIENT_FOLDER}/CT_CHEST/")
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    assert f"{PATIENT_FOLDER}/notes-about-jane.txt" in reasons
    assert reasons[f"{PATIENT_FOLDER}/loop"] == "broken symlink (points to /nonexistent/DOE_JANE_target)"
    assert result.private_report is None and not (tmp_path / "out.private-sources.jsonl").exists()


def test_pseudonyms_without_a_salt_link_to_nothing(export: Path, tmp_path: Path) -> None:
    a = convert_dicom(export, tmp_path / "a", salt="")
    b = convert_dicom(export, tmp_path / "b", salt="")
    assert _series_of(tmp_path / "a") != _series_of(tmp_path / "b")
    assert {r["source"] for r in a.rejected}.isdisjoint({r["source"] for r in b.rejected})
    assert "random salt" in a.manifest.preprocessing["pseudonyms"]
    # a given salt gives the same pseudonyms every time, and the salt is in no output nor the fingerprint
    c = convert_dicom(export, tmp_path / "c", salt="pepper-1")
    convert_dicom(export, tmp_path / "d", salt="pepper-1")
    e = convert_dicom(export, tmp_path / "e", salt="pepper-2")
    assert _series_of(tmp_path / "c") == _series_of(tmp_path / "d") != _series_of(tmp_path / "e")
    assert a.manifest.fingerprint == b.manifest.fingerprint == c.manifest.fingerprint == e.manifest.fingerprint
    assert b"pepper" not in _everything(tmp_path / "c")


def test_resume_keeps_the_random_salt_and_refuses_another(export: Path, tmp_path: Path) -> None:
    write_phantom(export / "other" / "s3", Phantom(series_uid="1.2.840.99.3", slices=4), seed=2)
    with crash_after_first_record():
        convert_dicom(export, tmp_path / "out", salt="", samples_per_shard=1)
    plan = json.loads((tmp_path / "out" / ".partial" / "plan.json").read_text())
    assert set(plan["secrets"]["salt"]) == {"random"}
    with pytest.raises(ConvertError, match="started without --salt"):
        convert_dicom(export, tmp_path / "out", salt="late", samples_per_shard=1)
    result = convert_dicom(export, tmp_path / "out", salt="", samples_per_shard=1)
    assert len(result.skipped) == 1 and not (tmp_path / "out" / ".partial").exists()
    # the resumed shards use the first run's salt: the report (written by the rerun) matches every sample
    lines = [json.loads(line) for line in result.private_report.read_text().splitlines()[1:]]
    names = {line["key"]: line["name"] for line in lines if "key" in line}
    for key, sample in read_samples(tmp_path / "out").items():
        assert names[key] == "series-" + load_volume(sample)[1]["series"]


def test_resume_with_another_given_salt_is_refused(export: Path, tmp_path: Path) -> None:
    with crash_after_first_record():
        convert_dicom(export, tmp_path / "out", salt="first", samples_per_shard=1)
    plan = (tmp_path / "out" / ".partial" / "plan.json").read_text()
    assert "first" not in plan and set(json.loads(plan)["secrets"]["salt"]) == {"check"}
    with pytest.raises(ConvertError, match="started with another --salt"):
        convert_dicom(export, tmp_path / "out", salt="second", samples_per_shard=1)
    assert convert_dicom(export, tmp_path / "out", salt="first", samples_per_shard=1).manifest is not None


def test_parts_need_a_salt(export: Path, tmp_path: Path) -> None:
    with pytest.raises(ConvertError, match="parts needs --salt"):
        convert_dicom(export, tmp_path / "out", salt="", num_parts=2, part=0)


def test_burned_in_annotation_is_rejected_unless_allowed(tmp_path: Path) -> None:
    import pydicom

    files = write_phantom(tmp_path / "src" / "a", Phantom(slices=4), seed=0)
    for path in files:
        ds = pydicom.dcmread(path)
        ds.BurnedInAnnotation = "YES"
        ds.save_as(path, enforce_file_format=True)
    rc = cli(["convert", str(tmp_path / "src"), str(tmp_path / "no"), "--kind", "dicom", "--salt", "s", "-j", "1",
              "--no-progress"])
    assert rc == 2  # every file rejected: nothing kept, an error
    result = convert_dicom(tmp_path / "src", tmp_path / "yes", allow_burned_in=True)
    assert result.manifest.num_samples == 1
    assert result.manifest.preprocessing["burned_in_annotation"] == "converted"
    from converters.dicom.discover import discover_dicom

    reasons = {r.reason for r in discover_dicom(tmp_path / "src").rejected}
    assert len(reasons) == 1 and next(iter(reasons)).startswith("BurnedInAnnotation YES")


@pytest.mark.parametrize("keep_phi", [False, True])
def test_pydicom_never_prints_or_logs_an_invalid_identifier(tmp_path: Path, caplog, capfd, recwarn,
                                                            keep_phi: bool) -> None:
    """pydicom warns and logs a value it finds invalid for its VR with the value itself: a SeriesInstanceUID with a
    letter in it went to the terminal and the logs of a de-identified conversion, four times a series."""
    uid = "1.2.840.99.7"
    files = write_phantom(tmp_path / "src" / "a", Phantom(series_uid=uid, slices=4), seed=0)
    secret = "1.2.840.99.X"  # a letter: not a valid UI (and as long as the UID it replaces)
    for f in files:
        f.write_bytes(f.read_bytes().replace(uid.encode(), secret.encode()))
    assert secret.encode() in files[0].read_bytes()
    with caplog.at_level(logging.DEBUG):
        result = convert_dicom(tmp_path / "src", tmp_path / "out", keep_phi=keep_phi)
    assert result.manifest.num_samples == 1
    out, err = capfd.readouterr()
    shown = out + err + caplog.text + "".join(str(w.message) for w in recwarn)
    assert secret not in shown and "Invalid value for VR UI" not in shown


def test_a_rejection_reason_never_quotes_the_value_pydicom_failed_on(tmp_path: Path) -> None:
    """A SeriesInstanceUID stored with the VR US and an odd length: pydicom's BytesLengthException quotes the bytes
    it got, and that message was the rejection reason, written into the manifest: the UID inside DST."""
    uid = "1.2.840.99.12345"
    files = write_phantom(tmp_path / "src" / "a", Phantom(series_uid=uid, slices=4), seed=0)
    write_phantom(tmp_path / "src" / "b", Phantom(series_uid="1.2.840.99.2", slices=4), seed=1)
    raw = files[1].read_bytes()
    at = raw.index(b"\x20\x00\x0e\x00UI")  # (0020,000E) SeriesInstanceUID, explicit VR
    n = int.from_bytes(raw[at + 6:at + 8], "little")
    files[1].write_bytes(raw[:at + 4] + b"US" + (n - 1).to_bytes(2, "little") + raw[at + 8:at + 7 + n] +
                         raw[at + 8 + n:])
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    reasons = [r["reason"] for r in result.rejected]
    assert "malformed attribute value: BytesLengthException" in reasons
    assert b"1.2.840.99.1" not in _everything(tmp_path / "out")


def test_a_sop_class_uid_that_runs_on_into_the_patients_name_is_not_quoted(tmp_path: Path) -> None:
    """A SOPClassUID whose length runs on over the elements after it (the patient's name among them): the reason
    "without an image" quoted the value as pydicom read it, the name inside (found by `make fuzz` with the privacy
    oracle of its dicom target)."""
    files = write_phantom(tmp_path / "src" / "a", Phantom(slices=2), seed=0)
    write_phantom(tmp_path / "src" / "b", Phantom(series_uid="1.2.840.99.2", slices=4), seed=1)
    raw = files[0].read_bytes()
    at = raw.index(b"\x08\x00\x16\x00UI")  # (0008,0016) SOPClassUID in the dataset
    n = int.from_bytes(raw[at + 6:at + 8], "little")
    end = raw.index(PHI_STRINGS[0].encode()) + len(PHI_STRINGS[0])
    longer = n + (end - (at + 8 + n) + 1) // 2 * 2 + 2  # past the end of PatientName: the parse goes astray
    files[0].write_bytes(raw[:at + 6] + longer.to_bytes(2, "little") + raw[at + 8:])
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    reasons = [r["reason"] for r in result.rejected]
    assert any(r.startswith("DICOM object without an image (no Rows/Columns; ") for r in reasons), reasons
    blob = _everything(tmp_path / "out")
    for secret in PHI_STRINGS:
        assert secret.encode() not in blob, secret


def test_a_modality_that_runs_on_over_the_institution_is_rejected_unquoted(tmp_path: Path) -> None:
    """Modality's length stretched over the InstitutionName element after it: the series converted, and its
    'modality' (in the sample json and the manifest's stats) held the institution's name."""
    files = write_phantom(tmp_path / "src" / "a", Phantom(slices=3), seed=0)
    write_phantom(tmp_path / "src" / "b", Phantom(series_uid="1.2.840.99.2", slices=4), seed=1)
    institution = PHI_STRINGS[3].encode()
    for f in files:
        raw = f.read_bytes()
        at = raw.index(b"\x08\x00\x60\x00CS")  # (0008,0060) Modality, explicit VR
        value = raw.index(institution)
        end = value + int.from_bytes(raw[value - 2:value], "little")  # the end of InstitutionName
        f.write_bytes(raw[:at + 6] + (end - (at + 8)).to_bytes(2, "little") + raw[at + 8:])
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    assert [r["reason"].partition(": ")[2] for r in result.rejected] == [
        "malformed Modality attribute (not a code string of at most 16 capitals, digits, spaces or underscores)"]
    assert result.manifest.num_samples == 1
    assert institution not in _everything(tmp_path / "out")


def test_an_undecodable_pixel_reason_never_quotes_the_transfer_syntax_uid() -> None:
    """pydicom's NotImplementedError for a transfer syntax it does not know quotes the UID (a private one, or the
    value a damaged length ran on into); the reason quoted pydicom's message whole."""
    from pydicom.dataset import Dataset, FileMetaDataset

    from converters.dicom.geometry import RejectSeries
    from converters.dicom.slices import pixels

    ds = Dataset()
    ds.file_meta = FileMetaDataset()
    ds.file_meta.TransferSyntaxUID = "1.2.840.99.777123"
    ds.Rows, ds.Columns, ds.SamplesPerPixel, ds.BitsAllocated = 2, 2, 1, 8
    ds.PixelData = b"\0\1\2\3"
    with pytest.raises(RejectSeries) as info:
        pixels(ds, "x.dcm")
    assert str(info.value) == ("cannot decode pixel data of x.dcm (unknown transfer syntax): no installed decoder "
                               "supports it")


def test_an_unexpected_error_is_recorded_without_its_message(tmp_path: Path, monkeypatch) -> None:
    """The engine's catch-all quotes an exception's message in the reason; a DICOM series' reason must not (a
    message can quote a value: a name, a UID)."""
    from converters.dicom import series as series_module

    write_phantom(tmp_path / "src" / "a", Phantom(series_uid="1.2.840.99.1", slices=4), seed=0)
    write_phantom(tmp_path / "src" / "b", Phantom(series_uid="1.2.840.99.2", slices=4), seed=1)
    real = series_module.convert_series

    def failing(series, opts):
        if series.uid.endswith(".1"):
            raise ValueError(f"cannot use {PHI_STRINGS[0]}")
        return real(series, opts)

    monkeypatch.setattr(series_module, "convert_series", failing)
    result = convert_dicom(tmp_path / "src", tmp_path / "out")
    assert [r["reason"] for r in result.rejected] == ["unexpected error: ValueError"]
    assert PHI_STRINGS[0].encode() not in _everything(tmp_path / "out")


def test_failure_shows_only_fixed_text_of_an_exception() -> None:
    from pydicom.errors import InvalidDicomError

    from converters.dicom.privacy import failure, uid_name

    assert failure(InvalidDicomError("File is missing DICOM File Meta Information header")) == (
        "InvalidDicomError: File is missing DICOM File Meta Information header")
    assert failure(OSError(5, "Input/output error", "/export/DOE_JANE/1.dcm")) == "OSError: Input/output error"
    assert failure(OSError("no errno")) == "OSError"
    assert failure(ValueError(f"invalid literal: {PHI_STRINGS[0]!r}")) == "ValueError"
    assert uid_name("1.2.840.10008.1.2.1", "?") == "Explicit VR Little Endian"
    assert uid_name("1.2.840.10008.1.2.1\x00\x10\x00PN Doe^Jane", "?") == "?" and uid_name(None, "none") == "none"


def test_pseudonymize_names_every_series_file_and_rejection_by_its_salted_pseudonym(export: Path, caplog) -> None:
    """What the processor sees of a file is its pseudonym, so a conversion-time reason cannot name its path."""
    from converters import get_kind
    from converters.dicom.options import DicomOptions
    from converters.dicom.privacy import file_name, series_name

    kind = get_kind("dicom")
    options = DicomOptions(salt="one", split="val")
    with caplog.at_level(logging.INFO, logger="converters"):
        found = kind.discover(export, options=options)
    assert "random salt" not in caplog.text  # a salt was given
    assert list(found.splits) == ["val"]
    renamed, report = kind.pseudonymize(found, options)
    items = renamed.splits["val"]
    assert sorted(it.payload.uid for it in items) == ["1.2.840.99.1", "1.2.840.99.2"]  # CT_CHEST and CT_GAP
    originals = {path: rel for it in found.splits["val"] for path, rel in it.payload.files}
    names = [name for it in items for _, name in it.payload.files]
    assert len(names) == 9 and all(PATIENT_FOLDER not in name for name in names)
    for it in items:
        assert it.rel == series_name(it.payload.uid, "one") and PATIENT_FOLDER in report[it.rel]
        for path, name in it.payload.files:
            assert name == file_name(originals[path], "one") and report[name] == originals[path]
    assert [r.source for r in renamed.rejected] == [file_name(r.source, "one") for r in found.rejected]
    other, _ = kind.pseudonymize(found, DicomOptions(salt="two", split="val"))
    assert {n for it in other.splits["val"] for _, n in it.payload.files}.isdisjoint(names)
    kept, none = kind.pseudonymize(found, DicomOptions(keep_phi=True))
    assert kept is found and none == {}
