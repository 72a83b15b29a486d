"""Bad DICOM input is rejected with a reason and nothing else is lost; no PHI unless --keep-phi."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

pytest.importorskip("pydicom")
pytest.importorskip("scipy")

from conftest_dicom import (  # noqa: E402
    PHI_STRINGS,
    Phantom,
    convert_dicom,
    load_volume,
    make_slice,
    read_samples,
    reasons_by_path,
    write_phantom,
)

PLANE = np.full((8, 8), 1000, dtype=np.uint16)


def _series(root, uid, positions, *, shapes=None, with_pixels=True, drop_position=()):
    for n, z in enumerate(positions):
        pixels = np.full(shapes[n], 1000, np.uint16) if shapes else PLANE
        make_slice(root / f"{n:02d}.dcm", pixels, series_uid=uid, instance=n + 1, with_pixels=with_pixels,
                   position=None if n in drop_position else (0.0, 0.0, z), pixel_spacing=(1.0, 1.0))


@pytest.fixture
def bad_tree(tmp_path):
    src = tmp_path / "src"
    write_phantom(src / "good", Phantom(slices=6), seed=0)
    _series(src / "missing_pixels", "1.9.1", [0, 2, 4], with_pixels=False)
    _series(src / "mixed_shapes", "1.9.2", [0, 2, 4], shapes=[(8, 8), (8, 8), (8, 6)])
    _series(src / "duplicate", "1.9.3", [0, 2, 2, 4])
    _series(src / "gap", "1.9.4", [0, 2, 4, 10, 12])
    _series(src / "irregular", "1.9.5", [0, 2, 4, 5.1, 7])
    _series(src / "no_position", "1.9.6", [0, 2, 4], drop_position=(1,))
    _series(src / "truncated", "1.9.7", [0, 2, 4])
    data = (src / "truncated" / "01.dcm").read_bytes()
    (src / "truncated" / "01.dcm").write_bytes(data[:-40])
    (src / "notes.txt").write_text("hello")
    (src / "empty.dcm").write_bytes(b"")
    (src / "fake.dcm").write_bytes(b"\0" * 128 + b"DICM" + b"\xff" * 40)
    (src / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 200)
    return src


def test_bad_inputs_are_rejected_with_reasons_and_nothing_is_lost(bad_tree, tmp_path):
    result = convert_dicom(bad_tree, tmp_path / "out")
    reasons = reasons_by_path(result)
    assert reasons["missing_pixels (3 files)"].startswith("missing pixel data in missing_pixels/00.dcm")
    assert reasons["mixed_shapes (3 files)"].startswith("mixed image shapes within the series")
    assert reasons["duplicate (4 files)"].startswith("duplicate slices")
    assert reasons["gap (5 files)"].startswith("missing slices: gap of 6.000 mm")
    assert reasons["irregular (5 files)"].startswith("irregular slice spacing")
    assert reasons["no_position (3 files)"].startswith("missing position tags")
    assert "no_position/01.dcm" in reasons["no_position (3 files)"]
    assert reasons["notes.txt"].startswith("not a DICOM file")
    assert reasons["photo.jpg"].startswith("not a DICOM file")
    assert reasons["empty.dcm"] == "empty file (0 bytes)"
    assert reasons["fake.dcm"].startswith("DICOM object without an image")
    assert reasons["truncated (3 files)"].startswith("cannot decode pixel data of truncated/01.dcm"), reasons
    assert len(reasons) == 11
    samples = read_samples(tmp_path / "out")
    assert len(samples) == 1  # the good series, converted in spite of its neighbours
    arr, meta = load_volume(next(iter(samples.values())))
    assert arr.shape == (6, 40, 36) and meta["files"] == 6
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert len(manifest["rejected"]) == 11 and manifest["splits"]["train"]["stats"]["series"] == 1


def _all_output_bytes(dst):
    return b"".join(p.read_bytes() for p in sorted(dst.rglob("*")) if p.is_file())


def test_no_phi_in_any_output_by_default(tmp_path, caplog):
    ph = Phantom(slices=5)
    write_phantom(tmp_path / "src" / "a", ph, seed=0)
    with caplog.at_level(logging.WARNING):
        convert_dicom(tmp_path / "src", tmp_path / "out", spacing=(2.0, 2.0, 2.0))
    blob = _all_output_bytes(tmp_path / "out")
    for secret in (*PHI_STRINGS, ph.series_uid, ph.series_uid + ".0", "Doe^Jane"):
        assert secret.encode() not in blob, secret
    meta = load_volume(next(iter(read_samples(tmp_path / "out").values())))[1]
    assert "phi" not in meta and "files_rel" not in meta and len(meta["series"]) == 32
    assert "--keep-phi" not in caplog.text


def test_keep_phi_copies_identifiers_and_warns_loudly(tmp_path, caplog):
    ph = Phantom(slices=5)
    write_phantom(tmp_path / "src" / "a", ph, seed=0)
    with caplog.at_level(logging.WARNING):
        convert_dicom(tmp_path / "src", tmp_path / "out", keep_phi=True)
    assert "--keep-phi" in caplog.text and "WILL be" in caplog.text
    meta = load_volume(next(iter(read_samples(tmp_path / "out").values())))[1]
    assert meta["phi"]["PatientName"] == "Doe^Jane" and meta["phi"]["SeriesInstanceUID"] == ph.series_uid
    assert meta["phi"]["AccessionNumber"] == "ACC-99812"
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["preprocessing"]["keep_phi"] is True


def test_detect_needs_pydicom_only_for_files_with_the_dicom_marker(tmp_path, monkeypatch):
    """`--kind auto` on a text or image folder must not ask for the dicom extra."""
    import converters.dicom.discover as dicom_discover
    from converters.dicom import KIND
    from fastdata.errors import MissingDependencyError

    def missing(module, extra):
        raise MissingDependencyError(f"{module!r} is not installed")

    monkeypatch.setattr(dicom_discover, "require", missing)
    (tmp_path / "text" / "a.txt").parent.mkdir()
    (tmp_path / "text" / "a.txt").write_text("hello\n" * 40)
    assert KIND.detect(tmp_path / "text") is False
    make_slice(tmp_path / "dicom" / "00.dcm", PLANE, series_uid="1.9.9", instance=1, position=(0.0, 0.0, 0.0),
               pixel_spacing=(1.0, 1.0))
    with pytest.raises(MissingDependencyError):
        KIND.detect(tmp_path / "dicom")
