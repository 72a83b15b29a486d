"""NRRD volumes (`.nrrd`, as 3D Slicer saves them, and a detached `.nhdr` with its `.raw` or `.raw.gz`) convert as
NIfTI volumes do (converters/nifti/nrrd.py); before, each file was rejected as no NIfTI file. The files are written
by SimpleITK or by hand, and ITK's own index-to-point transform is the reference for the geometry. A header's
`data file:` field is checked before ITK reads the file: ITK would read any path it names."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

sitk = pytest.importorskip("SimpleITK")
sys.path.insert(0, str(Path(__file__).parent))
from conftest_dicom import reasons_by_path  # noqa: E402
from conftest_nifti import convert_nifti, volumes_by_source  # noqa: E402

from converters.nifti.discover import NOT_NIFTI, SAME_NAME  # noqa: E402

DIRECTION = (0.0, 1.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 1.0)  # index x along LPS -y, y along +x, z along +z


def ct(seed: int, shape: tuple[int, int, int] = (6, 8, 10)) -> np.ndarray:
    """int16 HU voxels in ITK's array order (z, y, x)."""
    return np.random.default_rng(seed).integers(-1024, 2000, shape).astype(np.int16)


def write(path: Path, voxels: np.ndarray, *, compress: bool = False) -> Path:
    image = sitk.GetImageFromArray(voxels)
    image.SetSpacing((0.7, 0.8, 2.5))
    image.SetOrigin((-150.5, -170.0, -310.25))
    image.SetDirection(DIRECTION)
    path.parent.mkdir(parents=True, exist_ok=True)
    sitk.WriteImage(image, str(path), useCompression=compress)
    return path


def header(tail: str, sizes: str = "4 3 2", space: str = "left-posterior-superior") -> str:
    return (f"NRRD0004\ntype: short\ndimension: 3\nspace: {space}\nsizes: {sizes}\n"
            "space directions: (0.5,0,0) (0,0.75,0) (0,0,2)\nendian: little\nencoding: raw\n"
            f"space origin: (10,-20,30)\n{tail}")


def samples(dst: Path) -> int:
    return json.loads((dst / "manifest.json").read_text())["splits"]["train"]["samples"]


def test_nrrd_gzip_nrrd_and_nhdr_files_convert_with_their_voxels_and_itk_geometry(tmp_path: Path):
    src = tmp_path / "src"
    made = {"a.nrrd": (ct(0, (40, 40, 30)), False), "b.nrrd": (ct(1), True), "c.nhdr": (ct(2), False),
            "d.nhdr": (ct(3), True)}  # a.nrrd: 96 KB of voxels after its header, more than a header may be
    for name, (voxels, compress) in made.items():
        write(src / name, voxels, compress=compress)
    assert sorted(p.name for p in src.iterdir()) == ["a.nrrd", "b.nrrd", "c.nhdr", "c.raw", "d.nhdr", "d.raw.gz"]
    (src / "notes.txt").write_text("scanner settings\n")
    result = convert_nifti(src, tmp_path / "out")
    assert reasons_by_path(result) == {"notes.txt": NOT_NIFTI}  # c.raw and d.raw.gz are read with their headers
    got = volumes_by_source(tmp_path / "out", result)
    assert sorted(got) == ["a.nrrd", "b.nrrd", "c.nhdr", "d.nhdr"]
    reference = sitk.ReadImage(str(src / "a.nrrd"))
    rng = np.random.default_rng(0)
    for name, (voxels, _) in made.items():
        arr, labels, meta = got[name]
        np.testing.assert_array_equal(arr, voxels)
        assert labels is None and meta["spacing"] == [2.5, 0.8, 0.7] and meta["resampled"] is False
        for _ in range(10):
            k, j, i = (int(rng.integers(n)) for n in voxels.shape)
            lps = np.asarray(meta["origin"]) + np.asarray([k, j, i]) * np.asarray(meta["spacing"]) @ np.asarray(
                meta["direction"])
            np.testing.assert_allclose(lps, reference.TransformIndexToPhysicalPoint((i, j, k)), atol=1e-6)


def test_a_right_anterior_superior_header_gets_itks_lps_geometry(tmp_path: Path):
    """A hand-written header in RAS: ITK flips x and y into LPS, and so do the converted volume's origin and axes."""
    src = tmp_path / "src"
    src.mkdir()
    voxels = np.arange(24, dtype="<i2")
    (src / "ras.nrrd").write_bytes(header("\n", space="right-anterior-superior").encode() + voxels.tobytes())
    result = convert_nifti(src, tmp_path / "out")
    ((arr, _, meta),) = volumes_by_source(tmp_path / "out", result).values()
    np.testing.assert_array_equal(arr, voxels.reshape(2, 3, 4))
    assert meta["origin"] == [-10.0, 20.0, 30.0] and meta["spacing"] == [2.0, 0.75, 0.5]
    assert meta["direction"] == [[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [-1.0, 0.0, 0.0]]  # (z, y, x)
    itk = sitk.ReadImage(str(src / "ras.nrrd"))
    np.testing.assert_allclose(itk.TransformIndexToPhysicalPoint((3, 2, 1)),
                               np.asarray(meta["origin"]) + np.asarray([1, 2, 3]) * np.asarray(meta["spacing"])
                               @ np.asarray(meta["direction"]), atol=1e-9)


def test_a_slicer_case_folder_pairs_the_volume_with_its_seg_nrrd(tmp_path: Path):
    """3D Slicer saves a volume and its segmentation side by side: `CT.nrrd` and `Segmentation.seg.nrrd`."""
    src = tmp_path / "slicer"
    image = ct(4)
    mask = np.zeros(image.shape, np.uint8)
    mask[1:4, 2:6, 3:8] = 2
    write(src / "case01" / "CT.nrrd", image)
    write(src / "case01" / "Segmentation.seg.nrrd", mask, compress=True)
    write(src / "case02" / "CT.nrrd", ct(5))
    write(src / "case02" / "Segmentation.seg.nrrd", np.zeros_like(mask))
    write(src / "case03" / "CT.nrrd", ct(6))  # a segmentation of other spacing
    coarse = sitk.GetImageFromArray(mask[1:4, 2:6, 3:8])
    coarse.SetSpacing((1.4, 1.6, 5.0))
    coarse.SetOrigin((-150.5, -170.0, -310.25))
    sitk.WriteImage(coarse, str(src / "case03" / "Segmentation.seg.nrrd"))
    write(src / "case04" / "CT.nrrd", ct(7))  # overlapping segments: one layer a segment
    sitk.WriteImage(sitk.GetImageFromArray(np.stack([mask, mask], axis=-1), isVector=True),
                    str(src / "case04" / "Segmentation.seg.nrrd"))
    result = convert_nifti(src, tmp_path / "out")
    reasons = reasons_by_path(result)
    assert sorted(reasons) == [f"{c}/{f}" for c in ("case03", "case04") for f in ("CT.nrrd", "Segmentation.seg.nrrd")]
    assert reasons["case03/Segmentation.seg.nrrd"] == "the mask of a case that was rejected"  # the case rejected whole
    assert reasons["case03/CT.nrrd"].startswith("case03/Segmentation.seg.nrrd: the mask's grid (shape [3, 4, 5]")
    # (one saved cropped to its segments' extent is padded onto the volume: test_nifti_cropped_masks.py)
    assert reasons["case04/CT.nrrd"] == ("case04/Segmentation.seg.nrrd: a mask of 2 channels; a mask holds one label "
                                         "value per voxel")
    got = volumes_by_source(tmp_path / "out", result)
    assert sorted(got) == ["case01/CT.nrrd", "case02/CT.nrrd"]
    arr, labels, meta = got["case01/CT.nrrd"]
    np.testing.assert_array_equal(arr, image)
    np.testing.assert_array_equal(labels, mask)
    assert reasons_by_path(result, key="source")[meta["label"]] == "case01/Segmentation.seg.nrrd"


OUTSIDE = "its data file field names no file beside it; only a file in the header's folder is read"
LISTED = "its data file field names a list of files (or a name with a space); only one data file is read"
TWICE = "its header has 2 data file fields; one is read"


@pytest.mark.parametrize("field, reason", [
    ("data file: ../secret.raw", OUTSIDE),
    ("data file: /dev/zero", OUTSIDE),
    ("datafile: ../secret.raw", OUTSIDE),  # teem's other spelling
    ("DATA FILE: ../secret.raw", OUTSIDE),  # any case
    ("Data File: ../secret.raw\r", OUTSIDE),  # a CRLF header
    ("data file: ..\\secret.raw", OUTSIDE),
    ("data file: .", OUTSIDE),
    ("data file: ./../secret.raw", OUTSIDE),
    ("data file: LIST\n../secret.raw", LISTED),
    ("data file: LIST 2\n../secret.raw", LISTED),
    ("data file: ../secret%d.raw 0 0 1", LISTED),
    ("data file: secret%d.raw", LISTED),  # teem reads a name with % as a pattern of files
    ("data file: good.raw ", LISTED),  # ITK would look for "good.raw " (a name with a space)
    ("data file: ../secret.raw\ndata file: good.raw", TWICE),
    ("data file: good.raw\ndatafile: ../secret.raw", TWICE),
    ("data  file : ../secret.raw", OUTSIDE),  # ITK would not read this one: refused all the same
    ("data file: \udcff.raw", "its data file field is no UTF-8 text"),
    ("data file: Smith_John.raw", "the file its data file field names is not beside it"),  # the name is not written
    ("data file: good.raw", None),
    ("data file: good:1.raw", None),  # a colon in the name: the field ends at the first one
    ("data file: X1.raw", None),
    ("data file: ./good.raw", None),  # teem's own example of a name beside its header
    ("# data file: ../secret.raw\ndata file: good.raw", None),  # a comment
])
@pytest.mark.parametrize("suffix", [".nhdr", ".nrrd"])
def test_a_header_naming_data_anywhere_but_beside_it_is_rejected_before_itk_reads_it(tmp_path: Path, field: str,
                                                                                    reason: str | None, suffix: str):
    """In a `.nrrd` as in a `.nhdr`: ITK reads a `data file:` field in either. The secret's values (1000) would show
    in the volume if it were read; the good data file's are 7."""
    (tmp_path / "secret.raw").write_bytes(np.full(24, 1000, "<i2").tobytes())
    src = tmp_path / "src"
    src.mkdir()
    for name in ("good.raw", "good:1.raw", "X1.raw"):
        (src / name).write_bytes(np.full(24, 7, "<i2").tobytes())
    text = header(field + "\n") + ("\n" if suffix == ".nrrd" else "")  # a .nrrd: the empty line ends the header
    (src / f"evil{suffix}").write_bytes(text.encode("utf-8", "surrogateescape"))
    write(src / "ok.nrrd", ct(15))
    result = convert_nifti(src, tmp_path / "out")
    reasons = reasons_by_path(result)
    if reason is None:  # the file it names is read with it; the others are no volumes
        named = field.rsplit(" ", 1)[-1].removeprefix("./")
        assert reasons == {name: NOT_NIFTI for name in ("good.raw", "good:1.raw", "X1.raw") if name != named}
        arr = volumes_by_source(tmp_path / "out", result)[f"evil{suffix}"][0]
        assert set(arr.ravel().tolist()) == {7}
        return
    assert reasons == {f"evil{suffix}": f"evil{suffix}: {reason}", "good.raw": NOT_NIFTI, "good:1.raw": NOT_NIFTI,
                       "X1.raw": NOT_NIFTI}
    assert "Smith" not in (tmp_path / "out" / "manifest.json").read_text()
    first = text.replace(field + "\n", "").replace("NRRD0004\n", f"NRRD0004\n{field}\n")  # the first field
    (src / f"evil{suffix}").write_bytes(first.encode("utf-8", "surrogateescape"))
    assert reasons_by_path(convert_nifti(src, tmp_path / "out2"))[f"evil{suffix}"] == f"evil{suffix}: {reason}"



def test_the_voxels_after_an_attached_header_are_not_read_as_its_fields(tmp_path: Path):
    """The header ends at its first empty line: voxel bytes that spell a `data file:` line are voxels."""
    src = tmp_path / "src"
    src.mkdir()
    data = {"a.nrrd": b"\ndata file: ../secret.raw\n".ljust(48, b"\0"),
            "b.nrrd": b"data file: ../secret.raw".ljust(48, b"\0")}  # no line break after the header's end
    for name, voxels in data.items():
        (src / name).write_bytes(header("\n").encode() + voxels)
    fields = header("data file: ../secret.raw\n").encode().split(b"\n", 1)[1]  # no empty line in them
    (src / "c.nrrd").write_bytes(b"NRRD0004\n\n" + fields)  # no field: the header is empty, the rest is data
    result = convert_nifti(src, tmp_path / "out")
    assert reasons_by_path(result) == {"c.nrrd": "c.nrrd: not a readable NRRD file (RuntimeError)"}
    got = volumes_by_source(tmp_path / "out", result)
    for name, voxels in data.items():
        np.testing.assert_array_equal(got[name][0], np.frombuffer(voxels, "<i2").reshape(2, 3, 4))

def test_broken_nrrd_files_are_rejected_with_their_reason_and_no_path(tmp_path: Path):
    src = tmp_path / "src"
    write(src / "good.nrrd", ct(6))
    write(src / "short.nhdr", ct(7))
    raw = (src / "short.raw").read_bytes()
    (src / "short.raw").write_bytes(raw[:len(raw) // 2])
    (src / "nomagic.nrrd").write_bytes(b"NRRX0004\n" + header("\n").encode().split(b"\n", 1)[1])
    sitk.WriteImage(sitk.GetImageFromArray(np.zeros((3, 4), np.int16)), str(src / "flat.nrrd"))  # one slice
    (src / "huge.nrrd").write_bytes(header("\n", sizes="100000 100000 1000").encode() + b"\0" * 64)
    (src / "odd.nrrd").write_bytes(header("\n").replace("type: short", "type: shorty").encode() + b"\0" * 48)
    (src / "long.nrrd").write_bytes(b"NRRD0004\n" + b"# " + b"x" * 70_000 + b"\n" + header("\n").encode())
    (src / "nodata.nhdr").write_text(header(""))  # no data file field, and no data
    edge = write(src / "edge.nhdr", ct(16))  # a detached header of exactly the limit: read
    text = edge.read_text()
    edge.write_text(text.replace("\n", "\n# " + "x" * (65536 - len(text) - 3) + "\n", 1))
    assert edge.stat().st_size == 65536
    result = convert_nifti(src, tmp_path / "out")
    reasons = reasons_by_path(result)
    assert reasons == {
        "short.nhdr": "short.nhdr: cannot read the voxels (RuntimeError)",
        "nomagic.nrrd": "nomagic.nrrd: not a NRRD file (no NRRD000X magic)",
        "flat.nrrd": "flat.nrrd: a 2D NRRD; volumes are 3D",
        "huge.nrrd": "the image holds 10000000000000 voxels, more than --max-voxels 536870912 (about 114,440,918 "
                     "MiB of memory to convert)",  # from the header, before a voxel is read
        "odd.nrrd": "odd.nrrd: not a readable NRRD file (RuntimeError)",
        "long.nrrd": "long.nrrd: a NRRD header longer than 65536 bytes",
        "nodata.nhdr": "nodata.nhdr: not a readable NRRD file (RuntimeError)",
    }
    assert all(str(tmp_path) not in r["reason"] for r in result.rejected)  # ITK's messages quote paths: not kept
    assert samples(tmp_path / "out") == 2  # good.nrrd, edge.nhdr


@pytest.mark.parametrize("module", ["nrrd", "metaimage"])
def test_a_header_gone_before_it_is_read_is_a_rejection_saying_so(tmp_path: Path, module: str):
    import importlib

    data_file = importlib.import_module(f"converters.nifti.{module}").data_file
    from converters.dicom.geometry import RejectSeries

    with pytest.raises(RejectSeries, match=r"^gone: unreadable \(FileNotFoundError: No such file or directory\)$"):
        data_file(str(tmp_path / "gone"), "gone")


def test_a_data_file_named_apart_from_its_header_is_read_with_it_and_not_rejected(tmp_path: Path):
    """The data file is whatever the header names (`scan.nhdr` -> `voxels.raw`, `a.mhd` -> `a_data.raw`): it is read
    with its header and not listed as a file that is no volume."""
    src = tmp_path / "src"
    write(src / "scan.nhdr", ct(8))
    (src / "scan.raw").rename(src / "voxels.raw")
    (src / "scan.nhdr").write_text((src / "scan.nhdr").read_text().replace("data file: scan.raw",
                                                                           "data file: voxels.raw"))
    mhd = sitk.GetImageFromArray(ct(9))
    sitk.WriteImage(mhd, str(src / "a.mhd"))
    (src / "a.raw").rename(src / "a_data.raw")
    (src / "a.mhd").write_text((src / "a.mhd").read_text().replace("ElementDataFile = a.raw",
                                                                   "ElementDataFile = a_data.raw"))
    result = convert_nifti(src, tmp_path / "out")
    assert result.rejected == []
    got = volumes_by_source(tmp_path / "out", result)
    np.testing.assert_array_equal(got["scan.nhdr"][0], ct(8))
    np.testing.assert_array_equal(got["a.mhd"][0], ct(9))


@pytest.mark.parametrize("detached, attached", [(".mhd", ".mha"), (".nhdr", ".nrrd")])
def test_without_following_links_a_linked_data_file_rejects_its_header_too(tmp_path: Path, detached: str,
                                                                           attached: str):
    """MetaImage's and NRRD's alike: ITK reads whatever a header's data file is; with --no-follow-symlinks a linked
    one is refused, and so is the header, which would read through the link."""
    elsewhere = write(tmp_path / "elsewhere" / f"a{detached}", ct(10))
    src = tmp_path / "src"
    src.mkdir()
    (src / f"a{detached}").write_bytes(elsewhere.read_bytes())
    (src / "a.raw").symlink_to(elsewhere.with_suffix(".raw"))
    write(src / f"b{attached}", ct(11))
    write(src / f"c{detached}", ct(12))
    write(src / f"c{attached}", ct(13))  # one name twice
    result = convert_nifti(src, tmp_path / "out", follow_symlinks=False)
    reasons = reasons_by_path(result)
    assert reasons[f"a{detached}"] == f"its data file was refused: {reasons['a.raw']}"
    assert reasons[f"c{detached}"] == reasons[f"c{attached}"] == (
        f"2 volume files of this name in one folder ({SAME_NAME}): keep one")
    assert sorted(volumes_by_source(tmp_path / "out", result)) == [f"b{attached}"]
    result = convert_nifti(src, tmp_path / "out2")  # links followed: read through it
    assert sorted(volumes_by_source(tmp_path / "out2", result)) == [f"a{detached}", f"b{attached}"]


def test_the_cli_detects_a_folder_of_nrrd_files_as_volumes(tmp_path: Path):
    from fastdata.cli import main as cli

    write(tmp_path / "src" / "CT.nrrd", ct(14))
    assert cli(["convert", str(tmp_path / "src"), str(tmp_path / "out"), "--salt", "s", "-j", "1",
                "--no-progress"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["kind"] == "nifti" and samples(tmp_path / "out") == 1
    # ITK reads these files: its version shapes the bytes, and a resume on another one is refused
    assert manifest["extra"]["versions"]["SimpleITK"] == metadata.version("SimpleITK")
