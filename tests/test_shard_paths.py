"""Shards named by path (a list, a glob, a brace pattern) rather than by their dataset folder: which split they pick,
what is refused with which message, shards that are links to files elsewhere (a dataset gathered from several
disks by links), which load as the folder of their links does, and folders whose names hold glob or brace
characters (`exp[1]`, `run{a,b}`), which are read as the names they are."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree

import fastdata
from fastdata.dataset import open_dataset
from fastdata.errors import ManifestError

KW = {"batch_size": 2, "image_size": 32, "train": False, "backend": "kornia", "device": "cpu"}


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("paths")
    make_image_tree(root / "src", classes=2, per_class=4, splits=("train", "val"))
    convert_images(root / "src", root / "ds", samples_per_shard=3)
    return root / "ds"


def _shards(folder: Path, split: str) -> list[Path]:
    return sorted(folder.glob(f"{split}-*.tar"))


@pytest.fixture
def linked(ds: Path, tmp_path: Path) -> Path:
    """A dataset folder whose shards are links to the shards of `ds`, each link to another disk's folder; the
    manifest and index files are copies."""
    folder = tmp_path / "linked"
    folder.mkdir()
    for i, path in enumerate(sorted(ds.iterdir(), key=lambda p: (p.suffix != ".tar", p.name))):
        if path.suffix == ".tar":
            disk = tmp_path / f"disk{i % 2}"
            disk.mkdir(exist_ok=True)
            shutil.copyfile(path, disk / path.name)
            os.symlink(disk / path.name, folder / path.name)
        else:
            shutil.copyfile(path, folder / path.name)
    return folder


def _labels(source, **kw) -> list[int]:
    return [v for _, y in fastdata.loader(source, **{**KW, **kw}) for v in y.tolist() if v != -100]


def test_linked_shards_load_by_folder_glob_list_and_brace_pattern_as_their_targets_do(ds: Path, linked: Path):
    want = _labels(ds, split="val")
    assert len(want) == 8
    assert _labels(linked, split="val") == want
    assert _labels(str(linked / "val-*.tar")) == want
    assert _labels([str(p) for p in _shards(linked, "val")]) == want
    assert _labels(str(linked / "val-{000000..000002}.tar")) == want
    assert _labels(linked / "val-000001.tar") == _labels(ds / "val-000001.tar")


def test_shards_in_two_folders_are_refused(ds: Path, tmp_path: Path):
    other = tmp_path / "other"
    other.mkdir()
    shutil.copyfile(ds / "train-000001.tar", other / "train-000001.tar")
    with pytest.raises(ManifestError) as err:
        open_dataset([ds / "train-000000.tar", other / "train-000001.tar"])
    assert str(err.value) == "the shards given lie in 2 folders; the shards of one dataset lie in one"


def test_a_shard_beside_a_manifest_that_keeps_its_shards_elsewhere_is_refused(ds: Path, tmp_path: Path):
    """The manifest's `shard_root` names where its shards are (`fastdata index SRC DST` on read-only shards); a file
    of the same name beside the manifest is not one of them."""
    meta, shards = tmp_path / "meta", tmp_path / "shards"
    shutil.copytree(ds, shards)
    meta.mkdir()
    manifest = json.loads((ds / "manifest.json").read_text())
    manifest["shard_root"] = "../shards"
    (meta / "manifest.json").write_text(json.dumps(manifest))
    for path in ds.glob("*.idx"):
        shutil.copyfile(path, meta / path.name)
    assert _labels(meta, split="val") == _labels(ds, split="val")  # the folder reads the shards where they are
    named = [meta / n for n in ("train-000000.tar", "train-000001.tar", "val-000000.tar", "val-000001.tar")]
    for path in named:
        shutil.copyfile(ds / path.name, path)
    with pytest.raises(ManifestError) as err:
        open_dataset(named)
    assert str(err.value) == (f"{[str(p) for p in named[:3]]} do not lie in {shards.resolve()}, where the "
                              f"manifest of {meta} keeps its shards")


def test_a_shard_the_manifest_does_not_list_is_refused_naming_three(ds: Path, tmp_path: Path):
    folder = tmp_path / "extra"
    shutil.copytree(ds, folder)
    for i in range(4):
        shutil.copyfile(ds / "val-000000.tar", folder / f"zz-{i}.tar")
    with pytest.raises(ManifestError) as err:
        open_dataset(str(folder / "*.tar"))
    assert str(err.value) == (f"['zz-0.tar', 'zz-1.tar', 'zz-2.tar'] are not listed in {folder / 'manifest.json'}; "
                              "pass shards of that dataset, or adopt foreign shards with `fastdata index`")


def test_a_list_that_names_folders_is_refused_naming_three(ds: Path, tmp_path: Path):
    """open_dataset reads one dataset: a list holding folders (a mixture's entries) is refused with what to do."""
    folders = []
    for i in range(4):
        shutil.copytree(ds, tmp_path / f"ds{i}")
        folders.append(str(tmp_path / f"ds{i}"))
    with pytest.raises(ManifestError) as err:
        open_dataset([*folders, str(ds / "val-000000.tar")])
    assert str(err.value) == (f"{folders[:3]} are folders; a list names shard files of one dataset (to mix several "
                              "datasets, give each dataset folder as its own entry)")


def test_a_list_that_names_missing_shards_is_refused_naming_three(ds: Path):
    missing = [str(ds / f"val-00009{i}.tar") for i in range(4)]
    with pytest.raises(ManifestError) as err:
        open_dataset([str(ds / "val-000000.tar"), *missing])
    assert str(err.value) == f"{missing[:3]} do not exist; check the path"


def test_the_split_comes_from_the_shards_named(ds: Path):
    val = open_dataset(str(ds / "val-*.tar"))
    assert val.split == "val" and val.split_by_default is False
    assert [ref.info.name for ref in val.shards] == [p.name for p in _shards(ds, "val")]
    with pytest.raises(ManifestError) as err:
        open_dataset([ds / "train-000000.tar", ds / "val-000000.tar"])
    assert str(err.value) == "the shards given span splits ['train', 'val']; pass split="
    picked = open_dataset([ds / "train-000000.tar", ds / "val-000000.tar", ds / "val-000001.tar"], split="val")
    assert [ref.info.name for ref in picked.shards] == ["val-000000.tar", "val-000001.tar"]
    with pytest.raises(ManifestError) as err:
        open_dataset(str(ds / "val-*.tar"), split="train")
    assert str(err.value) == "none of the shards given belongs to split 'train' (they are in ['val'])"


@pytest.mark.parametrize("name", ["exp[1]", "run{a,b}", "seed{0..1}", "x[!a]{a,b}", "lr=0.1,bs=2",
                                  "exp[1]/seed[2]{a,b}", "run{1", "run}1"])
def test_a_folder_named_with_pattern_characters_is_read_as_its_name(ds: Path, tmp_path: Path, name: str):
    """A dataset under `exp[1]/` or `run{a,b}/` (an experiment's folder) was read as a pattern: 'the pattern
    ... matches no file', or 'names 2 file(s) that do not exist (runa/ds, runb/ds)', for the folder, its manifest,
    its shards and any pattern of them."""
    folder = tmp_path / name / "ds"
    shutil.copytree(ds, folder)
    want = _labels(ds, split="val")
    assert _labels(folder, split="val") == _labels(f"{folder}/", split="val") == want
    assert _labels(folder / "manifest.json", split="val") == want
    assert _labels(str(folder / "val-*.tar")) == want
    assert _labels(str(folder / "val-00000[0-2].tar")) == want
    assert _labels(str(folder / "val-{000000..000002}.tar")) == want
    assert _labels([str(p) for p in _shards(folder, "val")]) == want
    assert _labels(str(folder / "val-000001.tar")) == _labels(ds / "val-000001.tar")
    with pytest.raises(ManifestError) as err:
        open_dataset(str(folder / "test-*.tar"))
    missing = str(folder / "test-*.tar")
    assert str(err.value) == f"the pattern {missing!r} matches no file; check the path and the pattern"


def test_a_folder_that_exists_is_read_by_its_name_before_the_pattern_it_spells(ds: Path, tmp_path: Path):
    """`exp[1]` names the folder `exp[1]` when it exists, not `exp1` beside it (a pattern is for what is not there)."""
    shutil.copytree(ds, tmp_path / "exp[1]")
    (tmp_path / "exp1").mkdir()
    assert _labels(tmp_path / "exp[1]", split="val") == _labels(ds, split="val")
    assert open_dataset(str(tmp_path / "exp[1]" / "val-*.tar")).root == tmp_path / "exp[1]"
    shutil.copytree(ds, tmp_path / "exp2")
    assert open_dataset(str(tmp_path / "exp[2]"), split="val").root == tmp_path / "exp2"  # no exp[2]: the pattern


class _PathLike:
    """A path-like object that is no Path (as another library's path is): only `os.fspath` reads it."""

    def __init__(self, path: Path | str | bytes) -> None:
        self._path = path if isinstance(path, bytes) else str(path)

    def __fspath__(self) -> str | bytes:
        return self._path


def test_a_path_like_object_names_its_path(ds: Path, tmp_path: Path):
    """`fastdata.loader(tmpdir)` (pytest's legacy path) was refused: 'a source is a path, a pattern or a non-empty
    list of them, got local(...)'; so was any path-like object but a Path, alone or in a list."""
    import py

    want = _labels(ds, split="val")
    assert _labels(_PathLike(ds), split="val") == _labels(py.path.local(ds), split="val") == want
    assert _labels([_PathLike(p) for p in _shards(ds, "val")]) == want
    assert _labels((_PathLike(ds / "val-*.tar"),)) == want
    assert open_dataset(_PathLike(ds), split="val").root == ds
    from fastdata.images.loader import image_loader

    assert [v for _, y in image_loader(_PathLike(ds), split="val", **KW) for v in y.tolist() if v != -100] == want
    shutil.copytree(ds, tmp_path / "again")
    mixed = fastdata.loader([_PathLike(ds), _PathLike(tmp_path / "again")], split="val", **KW)  # two datasets
    assert sorted(v for _, y in mixed for v in y.tolist() if v != -100) == sorted(want * 2)
    with pytest.raises(TypeError, match=r"^a source is a path, a pattern or a non-empty list of them, got <"):
        open_dataset(_PathLike(os.fsencode(ds)))  # bytes are no source, as bytes themselves are not


def test_sources_joined_with_double_colons_are_read_as_webdataset_reads_them(ds: Path, tmp_path: Path):
    """WebDataset takes several shard specs in one string, joined with `::`; it was 'does not exist'."""
    shards = _shards(ds, "val")
    joined = f"{shards[0]}::{ds / 'val-{000001..000002}.tar'}"
    assert _labels(joined) == _labels([str(p) for p in shards]) == _labels(ds, split="val")
    assert open_dataset(joined).split == "val"
    odd = tmp_path / "a::b"  # a path that exists is its name, '::' and all
    shutil.copytree(ds, odd)
    assert _labels(odd, split="val") == _labels(str(odd), split="val") == _labels(ds, split="val")
    with pytest.raises(ManifestError, match=r"does not exist"):
        open_dataset(f"{shards[0]}::")  # an empty part: no list, a path that is not there
    other = shutil.copytree(ds, tmp_path / "other")
    mixed = fastdata.loader(f"{ds}::{other}", split="val", **KW)  # two dataset folders: a mixture, as a list is
    assert sorted(v for _, y in mixed for v in y.tolist() if v != -100) == sorted(_labels(ds, split="val") * 2)


def test_a_list_of_urls_and_local_paths_is_refused(ds: Path):
    with pytest.raises(ManifestError) as err:
        open_dataset(["s3://bucket/ds/val-000000.tar", str(_shards(ds, "val")[0])])
    assert str(err.value) == "a source list mixes URLs and local paths; the shards of one dataset lie in one place"
