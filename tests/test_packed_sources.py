"""A source still packed as it was downloaded (`converters/packed.py`): a `.zip`, `.tar`, `.tar.gz`, `.7z` or `.rar`
given as SRC, or a folder no kind recognises that holds such archives. The error said "source pets.zip is not a
directory" (with `--kind`) or "cannot tell what kind of data pets.zip holds (1 .zip); pass --kind"; it now says how
to unpack it and what to convert, and the command it names works."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree

from converters import get_kind
from converters.engine import ConvertConfig, convert
from converters.images import ImageOptions
from converters.packed import archive_suffix, packed_folder_advice, packed_source_problem, unpack_command
from fastdata.cli import main as cli
from fastdata.errors import ConvertError


@pytest.mark.parametrize(("name", "suffix"), [
    ("pets.zip", ".zip"), ("PETS.ZIP", ".zip"), ("a.tar", ".tar"), ("a.tar.gz", ".tar.gz"), ("a.TGZ", ".tgz"),
    ("a.tar.zst", ".tar.zst"), ("a.tar.bz2", ".tar.bz2"), ("a.tar.xz", ".tar.xz"), ("a.7z", ".7z"), ("a.rar", ".rar"),
    ("archive.zip.tar", ".tar"),
    (".zip", None), (".tar.gz", None), ("a.zip", ".zip"),  # a name that is nothing but a suffix is none
    ("wiki.txt.gz", None), ("a.gz", None), ("a.npz", None), ("a.jsonl.zst", None), ("zip", None), ("a.zip.txt", None),
    ("ILSVRC2012_val_00000001.JPEG", None),
])
def test_an_archive_is_known_by_the_end_of_its_name(name: str, suffix: str | None):
    assert archive_suffix(name) == suffix


@pytest.mark.parametrize(("name", "command"), [
    ("pets.zip", "unzip -q /d/pets.zip -d /d/pets"),
    ("my pets.zip", "unzip -q '/d/my pets.zip' -d '/d/my pets'"),
    ("pets.tar.gz", "mkdir -p /d/pets && tar -xf /d/pets.tar.gz -C /d/pets"),
    ("pets.tar", "mkdir -p /d/pets && tar -xf /d/pets.tar -C /d/pets"),
    ("pets.7z", "7z x /d/pets.7z -o/d/pets"),
    ("pets.rar", "mkdir -p /d/pets && unrar x /d/pets.rar /d/pets/"),
])
def test_the_command_that_unpacks_each_archive(name: str, command: str):
    assert unpack_command(Path("/d") / name) == command
    with pytest.raises(ValueError, match="pets.txt is no archive"):
        unpack_command(Path("/d/pets.txt"))


def test_a_tarball_as_the_source_names_the_command_that_unpacks_it_which_works(tmp_path: Path, capsys):
    tree = make_image_tree(tmp_path / "tree", classes=2, per_class=2)
    packed = tmp_path / "pets.tar.gz"
    with tarfile.open(packed, "w:gz") as tar:
        tar.add(tree, arcname=".")
    assert cli(["convert", str(packed), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    command = f"mkdir -p {tmp_path}/pets && tar -xf {packed} -C {tmp_path}/pets"
    assert err.endswith(f"error: {packed} is a compressed tar archive: fastdata converts the folder it unpacks into: "
                        f"`{command}`, then `fastdata convert {tmp_path}/pets DST`")
    subprocess.run(["bash", "-c", command], check=True)
    m = convert_images(tmp_path / "pets", tmp_path / "out").manifest
    assert m.classes == ("class_0", "class_1") and m.splits["train"].class_counts == (2, 2)


def test_a_zip_is_refused_by_the_cli_with_a_kind_by_a_dry_run_and_by_the_api(tmp_path: Path, capsys):
    packed = tmp_path / "pets.zip"
    with zipfile.ZipFile(packed, "w") as z:
        z.writestr("cats/1.jpg", b"\xff\xd8\xff")
    want = (f"{packed} is a zip archive: fastdata converts the folder it unpacks into: "
            f"`unzip -q {packed} -d {tmp_path}/pets`, then `fastdata convert {tmp_path}/pets DST`")
    for args in ([], ["--kind", "images"], ["--dry-run"], ["--kind", "text", "--tokenizer", "tok.json"]):
        assert cli(["convert", str(packed), str(tmp_path / "out"), *args]) == 2
        assert capsys.readouterr().err.strip().endswith(f"error: {want}")
    with pytest.raises(ConvertError) as e:
        convert(get_kind("images"), packed, tmp_path / "out", options=ImageOptions(), config=ConvertConfig())
    assert str(e.value) == want and not (tmp_path / "out").exists()


def test_imagenets_archive_as_the_source_names_its_folder(tmp_path: Path):
    (tmp_path / "ILSVRC2012_img_val.tar").write_bytes(b"")
    assert packed_source_problem(tmp_path / "ILSVRC2012_img_val.tar") == (
        f"{tmp_path}/ILSVRC2012_img_val.tar is one of ImageNet's archives, which a conversion reads as they are "
        f"from the folder that holds them with the devkit: `fastdata convert {tmp_path} DST`")


def test_what_is_no_packed_source(tmp_path: Path):
    folder = make_image_tree(tmp_path / "data.zip", classes=2, per_class=1)  # a folder named as an archive
    assert packed_source_problem(folder) is None
    assert convert_images(folder, tmp_path / "out").manifest.classes == ("class_0", "class_1")
    (tmp_path / "notes.txt").write_text("x")
    assert packed_source_problem(tmp_path / "notes.txt") is None
    assert packed_source_problem(tmp_path / "missing.zip") is None  # (the survey says it does not exist)


def test_a_folder_of_archives_says_to_unpack_them(tmp_path: Path, capsys):
    one = tmp_path / "kaggle"
    one.mkdir()
    shutil.make_archive(str(one / "intel"), "zip", make_image_tree(tmp_path / "t", classes=1, per_class=1))
    assert cli(["convert", str(one), str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"cannot tell what kind of data {one} holds (1 .zip): intel.zip is an archive: unpack it "
        f"(`unzip -q {one}/intel.zip -d {one}/intel`) and convert what it holds (`fastdata convert {one}/intel DST`)")
    two = tmp_path / "two"
    two.mkdir()
    for name in ("train.zip", "test.zip", "b.tar.gz", "c.tar"):  # (a tar among others: no shards' hint)
        (two / name).write_bytes(b"PK\x05\x06" + bytes(18))
    (two / "README").write_bytes(b"\x00")
    assert packed_folder_advice(two, sorted(two.iterdir())) == (
        "b.tar.gz, c.tar, test.zip and 1 more are archives: unpack each into a folder of its name "
        f"(`mkdir -p {two}/b && tar -xf {two}/b.tar.gz -C {two}/b`, ...) and convert {two} again")
    assert packed_folder_advice(two, [two / "README"]) is None and packed_folder_advice(two, []) is None


def test_a_folder_of_tars_may_be_webdataset_shards(tmp_path: Path, capsys):
    shards = tmp_path / "shards"
    shards.mkdir()
    for i in range(2):
        with tarfile.open(shards / f"shard-{i:06d}.tar", "w"):
            pass
    assert cli(["convert", str(shards), str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"cannot tell what kind of data {shards} holds (2 .tar): shard-000000.tar, shard-000001.tar are archives: "
        f"unpack each into a folder of its name (`mkdir -p {shards}/shard-000000 && tar -xf "
        f"{shards}/shard-000000.tar -C {shards}/shard-000000`, ...) and convert {shards} again; WebDataset shards "
        f"are adopted as they are: `fastdata index {shards}`")


def test_no_archive_suffix_ends_another():
    """(archive_suffix takes the first suffix a name ends with: `.gz` beside `.tar.gz` would make the order count.)"""
    from converters.packed import _UNPACK

    assert not [(a, b) for a in _UNPACK for b in _UNPACK if a != b and a.endswith(b)]
