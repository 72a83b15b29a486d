"""MINC volumes (`.mnc`: MINC-1, netCDF, and MINC-2, HDF5; `.mnc.gz`: MINC-1 compressed, as BrainWeb hands its
phantoms out) convert as NIfTI files do, read by nibabel (converters/nifti/minc.py); before, a tree of them was no
input fastdata knew. The files are written in fixtures with known voxels, scaling and geometry (scripts/minc_files.py),
and nibabel's own bundled MINC files, written by the MINC tools, are converted for realism."""

from __future__ import annotations

import gzip
import math
import sys
from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
pytest.importorskip("h5py")
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from conftest_dicom import reasons_by_path  # noqa: E402
from conftest_nifti import convert_nifti, volumes_by_source  # noqa: E402
from minc_files import Axis, Minc, write_minc1, write_minc2  # noqa: E402
from nifti_sample import anatomical, brainweb_normal, bright_half  # noqa: E402

from converters.nifti import minc  # noqa: E402
from fastdata.errors import ConvertError  # noqa: E402

T = 0.3  # radians: the x and y axes turned about z (an oblique acquisition)
AXES = [Axis("zspace", 2.5, -30.0), Axis("yspace", -1.2, 40.0, (-math.sin(T), math.cos(T), 0.0)),
        Axis("xspace", 0.8, -10.0, (math.cos(T), math.sin(T), 0.0))]
BUNDLED = Path(nib.__file__).parent / "tests" / "data"  # MINC files written by the MINC tools, shipped with nibabel


def _stored(seed: int, shape: tuple[int, ...] = (4, 5, 6)) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape).astype(np.uint8)


def _by_name(dst: Path, result) -> dict[str, tuple[np.ndarray, np.ndarray | None, dict]]:
    return {Path(k).name: v for k, v in volumes_by_source(dst, result).items()}


def _opened_by_nibabel(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files `nib.load` is asked to open from now on, in order."""
    opened: list[str] = []
    real_load = nib.load
    monkeypatch.setattr(nib, "load", lambda path, *a, **k: opened.append(Path(path).name) or real_load(path, *a, **k))
    return opened


def _gzip(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    return out


def test_minc1_minc2_and_gzipped_files_convert_with_their_scaled_values_and_their_geometry(tmp_path: Path):
    """The array keeps the file's order (its first axis, zspace, is z), MINC's image-min/image-max scaling is
    applied (whole numbers: int16, as NIfTI's scl_slope is), and the geometry is the axes' steps (a negative one
    included), starts and direction cosines, in LPS."""
    src = tmp_path / "src"
    stored = _stored(0)
    scaled = Minc(stored, AXES, image_min=-1000.0, image_max=1550.0, patient="Smith^John")  # real: 10 * stored - 1000
    write_minc1(src / "one.mnc", scaled)
    write_minc2(src / "two.mnc", scaled)
    _gzip(write_minc1(src / "brainweb.mnc", scaled))
    write_minc1(src / "slices.mnc", Minc(stored, AXES, image_min=np.arange(4.0), image_max=np.arange(4.0) + 255))
    write_minc2(src / "fractions.mnc", Minc(stored, AXES, image_min=0.0, image_max=1.0))
    result = convert_nifti(src, tmp_path / "out")
    assert result.rejected == []
    got = _by_name(tmp_path / "out", result)
    assert sorted(got) == ["brainweb.mnc.gz", "fractions.mnc", "one.mnc", "slices.mnc", "two.mnc"]
    from importlib import metadata

    assert result.manifest.extra["versions"]["h5py"] == metadata.version("h5py")  # it reads MINC-2 files' bytes
    assert b"Smith" in (src / "two.mnc").read_bytes() and b"Smith" in (src / "one.mnc").read_bytes()
    for written in (tmp_path / "out").rglob("*"):  # the patient's name in the files' attributes is never copied
        assert not written.is_file() or b"Smith" not in written.read_bytes(), written
    for name in ("one.mnc", "two.mnc", "brainweb.mnc.gz"):
        arr, mask, meta = got[name]
        assert mask is None and arr.dtype == np.int16, name
        np.testing.assert_array_equal(arr, stored.astype(np.int16) * 10 - 1000)
        assert meta["shape"] == [4, 5, 6] and meta["spatial_units"] == "mm"
        assert meta["units"] == "real values (image-min/image-max applied)"
        np.testing.assert_allclose(meta["spacing"], [2.5, 1.2, 0.8], atol=1e-6)
        s, c = math.sin(T), math.cos(T)
        # RAS axis directions: z +z; y the cosines times the step's sign; x its cosines. LPS negates x and y.
        np.testing.assert_allclose(meta["direction"], [[0, 0, 1], [-s, c, 0], [-c, -s, 0]], atol=1e-5)
        ras = -30.0 * np.array([0, 0, 1]) + 40.0 * np.array([-s, c, 0]) - 10.0 * np.array([c, s, 0])
        np.testing.assert_allclose(meta["origin"], ras * [-1, -1, 1], atol=1e-4)
    arr, _, _ = got["slices.mnc"]  # each slice of z scaled by its own image-min and image-max
    np.testing.assert_array_equal(arr, stored.astype(np.int16) + np.arange(4, dtype=np.int16)[:, None, None])
    arr, _, meta = got["fractions.mnc"]
    assert arr.dtype == np.float32 and meta["dtype"] == "float32"
    np.testing.assert_allclose(arr, stored / 255.0, atol=1e-6)


def test_a_minc_files_time_axis_gives_its_channels_wherever_it_lies(tmp_path: Path):
    """4D MINC files (fMRI, dynamic PET) put time first; a file may put it elsewhere. Either way its frames are the
    case's channels, as an MGH file's are."""
    frames = np.random.default_rng(1).integers(-500, 500, (3, 4, 5, 6)).astype(np.int16)
    write_minc1(tmp_path / "first" / "pet.mnc", Minc(frames, [Axis("time", 60.0), *AXES]))
    write_minc2(tmp_path / "middle" / "pet.mnc",
                Minc(frames.transpose(1, 0, 2, 3).copy(), [AXES[0], Axis("time", 60.0), *AXES[1:]]))
    for folder in ("first", "middle"):
        with pytest.raises(ConvertError, match=r"1 x a 4D image of 3 channels; pick one with --channel C"):
            convert_nifti(tmp_path / folder, tmp_path / f"{folder}_none")
        result = convert_nifti(tmp_path / folder, tmp_path / f"{folder}_one", channel=2)
        ((arr, _, meta),) = volumes_by_source(tmp_path / f"{folder}_one", result).values()
        np.testing.assert_array_equal(arr, frames[2])
        assert meta["channel"] == 2 and meta["shape"] == [4, 5, 6]
        result = convert_nifti(tmp_path / folder, tmp_path / f"{folder}_all", channel="all")
        ((arr, _, meta),) = volumes_by_source(tmp_path / f"{folder}_all", result).values()
        np.testing.assert_array_equal(arr, frames)
        assert meta["axes"] == "czyx" and meta["channels"] == ["0", "1", "2"]


def test_the_bundled_brain_as_brainweb_hands_a_subject_out_converts_as_its_nifti_does(tmp_path: Path):
    """BrainWeb's normal brain: `t1_icbm_normal_1mm_pn3_rf20.mnc.gz` and its tissue classes in
    `phantom_1.0mm_normal_crsp.mnc.gz`, which `--mask-word crsp` makes the mask; here nibabel's bundled real MR brain
    written so (the docs walk's
    sample), against the same brain converted from its NIfTI file."""
    brainweb_normal(tmp_path / "brainweb")
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "brain.nii").write_bytes(anatomical().read_bytes())
    result = convert_nifti(tmp_path / "brainweb", tmp_path / "out", mask_words=("crsp",))
    assert result.rejected == []
    ((source, (arr, mask, meta)),) = volumes_by_source(tmp_path / "out", result).items()
    assert source == "normal/t1_icbm_normal_1mm_pn3_rf20.mnc.gz" and meta["source"].startswith("file-")  # a pseudonym
    ref_result = convert_nifti(tmp_path / "ref", tmp_path / "ref_out")
    ((ref, _, ref_meta),) = volumes_by_source(tmp_path / "ref_out", ref_result).values()
    np.testing.assert_array_equal(arr, ref)
    assert {k: meta[k] for k in ("shape", "spacing", "origin", "direction", "dtype")} == {
        k: ref_meta[k] for k in ("shape", "spacing", "origin", "direction", "dtype")}
    assert mask.dtype == np.uint8 and set(np.unique(mask)) == {0, 3} and mask.shape == arr.shape
    np.testing.assert_array_equal(mask, np.where(bright_half(ref), 3, 0))


def test_the_minc_files_nibabel_ships_convert_to_its_values(tmp_path: Path):
    """MINC-1 and MINC-2 files written by the MINC tools (nibabel's test data): the values and voxel size nibabel
    reads, in the file's axis order, a 4D file's frames as channels."""
    got = {}
    for name, channel in (("tiny.mnc", None), ("minc2_4d.mnc", "all")):
        (tmp_path / name / name).parent.mkdir()
        (tmp_path / name / name).write_bytes((BUNDLED / name).read_bytes())
        result = convert_nifti(tmp_path / name, tmp_path / f"{name}.out", channel=channel)
        assert result.rejected == []
        got.update(_by_name(tmp_path / f"{name}.out", result))
    arr, _, meta = got["tiny.mnc"]
    np.testing.assert_allclose(arr, np.asarray(nib.load(BUNDLED / "tiny.mnc").dataobj), rtol=1e-6)
    assert meta["spacing"] == [2.0, 2.0, 2.0] and arr.shape == (10, 20, 20)
    arr, _, meta = got["minc2_4d.mnc"]
    np.testing.assert_allclose(arr, np.asarray(nib.load(BUNDLED / "minc2_4d.mnc").dataobj), rtol=1e-6)
    assert arr.shape == (2, 10, 20, 20) and meta["channels"] == ["0", "1"]


def test_broken_and_unusual_minc_files_are_rejected_with_their_reason(tmp_path: Path):
    import h5py

    src = tmp_path / "src"
    good = Minc(_stored(3), AXES)
    write_minc1(src / "good.mnc", good)
    data = write_minc1(src / "cut1.mnc", good).read_bytes()
    (src / "cut1.mnc").write_bytes(data[: len(data) - 60])
    data = write_minc2(src / "cut2.mnc", good).read_bytes()
    (src / "cut2.mnc").write_bytes(data[: len(data) // 2])
    (src / "noise.mnc").write_bytes(np.random.default_rng(4).bytes(4096))
    (src / "text.mnc.gz").write_text("not gzip")
    _gzip(write_minc2(src / "packed.mnc", good))
    write_minc1(src / "irregular.mnc", Minc(_stored(5), [AXES[0], Axis("yspace", spacing="irregular"), AXES[2]]))
    write_minc2(src / "vectors.mnc", Minc(_stored(6, (2, 3, 4, 5, 6)), [Axis("time"), Axis("echo"), *AXES]))
    write_minc1(src / "flat.mnc", Minc(_stored(7, (5, 6)), AXES[1:]))
    write_minc2(src / "scales.mnc", good)
    with h5py.File(src / "scales.mnc", "r+") as f:  # image-min and image-max per slice of an axis the image's is not
        for name in ("image-min", "image-max"):
            del f["minc-2.0/image/0"][name]
            f["minc-2.0/image/0"][name] = np.zeros(6)
            f["minc-2.0/image/0"][name].attrs["dimorder"] = np.bytes_("xspace")
    result = convert_nifti(src, tmp_path / "out")
    reasons = reasons_by_path(result)
    assert reasons == {
        "cut1.mnc": "cut1.mnc: not a readable MINC file (ValueError)",
        "cut2.mnc": "cut2.mnc: not a readable MINC file (OSError)",
        "noise.mnc": "noise.mnc: not a readable MINC file (ImageFileError)",
        "text.mnc.gz": "text.mnc.gz: not a readable MINC file (BadGzipFile: damaged gzip data)",
        "packed.mnc.gz": ("packed.mnc.gz: a gzip-compressed MINC-2 (HDF5) file; nibabel reads MINC-2 uncompressed "
                          "only: decompress it (gunzip) first"),
        "irregular.mnc": "irregular.mnc: not a readable MINC file (ValueError)",
        "vectors.mnc": ("vectors.mnc: a MINC image of axes ['time', 'echo', 'zspace', 'yspace', 'xspace']; volumes "
                        "have xspace, yspace and zspace, and at most one axis more (time: its channels)"),
        "flat.mnc": "flat.mnc: not a readable MINC file (ValueError)",
        "scales.mnc": "scales.mnc: cannot read the voxels (MincError)"}  # nibabel scales the voxels as it reads them
    assert list(_by_name(tmp_path / "out", result)) == ["good.mnc"]


def test_a_minc_file_is_measured_before_nibabel_reads_it_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """nibabel's netCDF reader reads a MINC-1 file whole when it opens it, and a `.mnc.gz` can decompress to many
    times its size. A file is refused, unread, when its bytes (decompressed) exceed what --max-voxels voxels of
    MINC's widest type fill, and a mask when they exceed what its image's voxels fill."""
    opened = _opened_by_nibabel(monkeypatch)
    monkeypatch.setattr(minc, "CHUNK", 1000)  # a .mnc.gz is measured in several reads
    src = tmp_path / "src"
    write_minc1(src / "big.mnc", Minc(np.zeros((8, 8, 16), np.float64), AXES))  # 1024 voxels of a double
    _gzip(write_minc1(src / "bomb.mnc", Minc(np.zeros((8, 8, 16), np.float64), AXES)))
    fits = write_minc1(src / "fits.mnc", Minc(np.zeros((8, 8, 8), np.float64), AXES))  # 512 of the widest type
    (src / "fits2.mnc.gz").write_bytes(gzip.compress(fits.read_bytes()))
    # room for exactly this file's header: its bytes are the bound itself, and it is read
    monkeypatch.setattr(minc, "HEADROOM", fits.stat().st_size - 8 * 8**3)
    assert 500 < minc.HEADROOM < 2000
    result = convert_nifti(src, tmp_path / "out", max_voxels=8**3)
    assert reasons_by_path(result) == {
        "big.mnc": ("big.mnc: it holds more bytes than 512 voxels of any MINC type fill (the --max-voxels cap, or its "
                    "image's voxels for a mask): nibabel would read it whole"),
        "bomb.mnc.gz": ("bomb.mnc.gz: it decompresses to more bytes than 512 voxels of any MINC type fill (the "
                        "--max-voxels cap, or its image's voxels for a mask): nibabel would read it whole")}
    assert sorted(opened) == ["fits.mnc", "fits2.mnc.gz"]
    opened.clear()
    # a mask of the image's grid, with more bytes than the image's voxels fill (junk after its data)
    cases = tmp_path / "cases"
    for name in ("a", "b"):
        write_minc1(cases / name / "t1.mnc", Minc(np.ones((8, 10, 12), np.uint8), AXES))
        write_minc1(cases / name / "seg.mnc", Minc(np.ones((8, 10, 12), np.uint8), AXES))
    with open(cases / "a" / "seg.mnc", "ab") as f:
        f.write(b"\0" * 10_000)
    result = convert_nifti(cases, tmp_path / "cases_out")
    assert reasons_by_path(result) == {
        "a/t1.mnc": ("a/seg.mnc: it holds more bytes than 960 voxels of any MINC type fill (the --max-voxels cap, or "
                     "its image's voxels for a mask): nibabel would read it whole"),
        "a/seg.mnc": "the mask of a case that was rejected"}
    assert opened == ["t1.mnc", "t1.mnc", "seg.mnc"]


def test_a_minc2_file_without_h5py_is_rejected_saying_what_to_install(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    write_minc2(tmp_path / "src" / "two.mnc", Minc(_stored(8), AXES))
    write_minc1(tmp_path / "src" / "one.mnc", Minc(_stored(8), AXES))
    monkeypatch.setitem(sys.modules, "h5py", None)  # import h5py raises ImportError
    result = convert_nifti(tmp_path / "src", tmp_path / "out")
    assert reasons_by_path(result) == {
        "two.mnc": ("two.mnc: a MINC-2 (HDF5) file, which nibabel reads with h5py: 'h5py' is not installed; install "
                    "it with: pip install 'fastdata[nifti]'")}


def test_a_minc2_file_reading_other_files_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """HDF5 lets a file keep a dataset's bytes in another file (external storage), map them from other files (a
    virtual dataset) or link to another file's objects, and h5py follows each: a MINC-2 file naming `~/.ssh/id_rsa`
    as its voxels' storage would put the key into the shards. Everything in the file must lie in it."""
    import h5py

    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"SECRET-KEY-MATERIAL-" * 6)  # 120 bytes: the voxels of a 4 x 5 x 6 byte image
    src = tmp_path / "src"
    write_minc2(src / "good.mnc", Minc(_stored(10), AXES))

    def reroute(name: str, make) -> None:
        """`name`: good.mnc with its image dataset replaced by `make(image group, the original dataset)`."""
        path = src / name
        path.write_bytes((src / "good.mnc").read_bytes())
        with h5py.File(path, "r+") as f:
            group = f["minc-2.0/image/0"]
            original = group["image"]
            attrs, shape, dtype = dict(original.attrs), original.shape, original.dtype
            del group["image"]
            made = make(group, shape, dtype)
            for key, value in attrs.items():
                made.attrs[key] = value

    reroute("stored.mnc", lambda g, shape, dtype: g.create_dataset(
        "image", shape=shape, dtype=dtype, external=[(str(secret), 0, 120)]))
    layout_source = tmp_path / "elsewhere.h5"
    with h5py.File(layout_source, "w") as f:
        f.create_dataset("data", data=np.frombuffer(secret.read_bytes(), np.uint8).reshape(4, 5, 6))

    def virtual(g, shape, dtype):
        layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
        layout[...] = h5py.VirtualSource(str(layout_source), "data", shape=shape)
        return g.create_virtual_dataset("image", layout)

    reroute("virtual.mnc", virtual)
    write_minc2(src / "linked.mnc", Minc(_stored(11), AXES))
    with h5py.File(src / "linked.mnc", "r+") as f:
        del f["minc-2.0/dimensions"]
        f["minc-2.0/dimensions"] = h5py.ExternalLink(str(layout_source), "/")
        f["minc-2.0/alias"] = h5py.SoftLink("/minc-2.0/image")  # walked before it, by name: the walk goes on
    write_minc2(src / "soft.mnc", Minc(_stored(12), AXES))
    with h5py.File(src / "soft.mnc", "r+") as f:  # a soft link names a path in the file: harmless, read
        f["minc-2.0/alias"] = h5py.SoftLink("/minc-2.0/image")
        f["minc-2.0/nowhere"] = h5py.SoftLink("/no/such/object")  # dangling: nothing reads it
    write_minc2(src / "cycle.mnc", Minc(_stored(13), AXES))
    with h5py.File(src / "cycle.mnc", "r+") as f:  # a hard link from a group to its parent: a cycle
        f["minc-2.0/image/0/up"] = f["minc-2.0/image"]
    opened = _opened_by_nibabel(monkeypatch)
    monkeypatch.setattr(minc, "MAX_OBJECTS", 50)
    result = convert_nifti(src, tmp_path / "out")
    outside = "only what lies in the file is read"
    assert reasons_by_path(result) == {
        "stored.mnc": f"stored.mnc: an HDF5 dataset whose bytes lie in other files (external storage, or a virtual "
                      f"dataset); {outside}",
        "virtual.mnc": f"virtual.mnc: an HDF5 dataset whose bytes lie in other files (external storage, or a virtual "
                       f"dataset); {outside}",
        "linked.mnc": f"linked.mnc: the HDF5 file links to an object in another file; {outside}",
        "cycle.mnc": "cycle.mnc: an HDF5 file of more than 50 objects; a MINC-2 file holds a few dozen"}
    assert sorted(opened) == ["good.mnc", "soft.mnc"]
    got = _by_name(tmp_path / "out", result)
    np.testing.assert_array_equal(got["soft.mnc"][0], _stored(12))
    for arr, _, _ in got.values():
        assert b"SECRET" not in arr.tobytes()


def test_the_walk_of_a_minc2_file_counts_each_link_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The file scripts/minc_files.py writes has 10 links: minc-2.0, its dimensions and image groups, three axes,
    image/0, and the image with its image-min and image-max. A bound of 10 reads it, and 9 refuses it."""
    import h5py

    path = write_minc2(tmp_path / "a.mnc", Minc(_stored(14), AXES))
    monkeypatch.setattr(minc, "MAX_OBJECTS", 10)
    minc._contained(h5py, str(path), "a.mnc")
    monkeypatch.setattr(minc, "MAX_OBJECTS", 9)
    with pytest.raises(Exception, match=r"^a\.mnc: an HDF5 file of more than 9 objects"):
        minc._contained(h5py, str(path), "a.mnc")
