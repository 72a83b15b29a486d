"""A manifest may come from someone else: every field is checked before use, names are plain file names,
and nothing it names can make a loader or `verify` read outside the dataset, a device or a FIFO."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree

import fastdata
from fastdata.dataset import open_dataset
from fastdata.errors import ManifestError, ShardError
from fastdata.manifest import read_manifest
from fastdata.verify import verify_dataset


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    convert_images(make_image_tree(tmp_path / "src", classes=2, per_class=3), tmp_path / "ds", samples_per_shard=4)
    return tmp_path / "ds"


def edit(ds: Path, change) -> None:
    path = ds / "manifest.json"
    m = json.loads(path.read_text())
    change(m)
    path.write_text(json.dumps(m))


def first_shard(m: dict) -> dict:
    return m["splits"]["train"]["shards"][0]


@pytest.mark.parametrize("field,value,message", [
    ("name", "../x.tar", "plain file name"),
    ("name", "/etc/passwd", "plain file name"),
    ("name", "sub/x.tar", "plain file name"),
    ("index", "../x.idx", "plain file name"),
    ("samples", 0, "integer >= 1"),
    ("samples", -3, "integer >= 1"),
    ("samples", "5", "integer >= 1"),
    ("samples", True, "integer >= 1"),
    ("bytes", -1, "integer >= 0"),
    ("sha256", "../../x", "hex"),
    ("extra_field", 1, "unknown fields"),
])
def test_a_bad_shard_entry_is_refused_naming_the_field(ds: Path, field, value, message):
    edit(ds, lambda m: first_shard(m).__setitem__(field, value))
    with pytest.raises(ManifestError, match=message):
        read_manifest(ds)


def test_bad_splits_are_refused(ds: Path):
    edit(ds, lambda m: m.__setitem__("splits", {}))
    with pytest.raises(ManifestError, match="at least one split"):
        read_manifest(ds)


def test_a_split_name_that_is_a_path_is_refused(ds: Path):
    edit(ds, lambda m: m["splits"].__setitem__("../escape", m["splits"].pop("train")))
    with pytest.raises(ManifestError, match="split name"):
        read_manifest(ds)


def test_a_shard_listed_twice_is_refused(ds: Path):
    edit(ds, lambda m: m["splits"]["train"]["shards"].append(dict(first_shard(m))))
    with pytest.raises(ManifestError, match="more than once"):
        read_manifest(ds)


def test_a_device_or_fifo_named_by_shard_root_is_never_read(ds: Path, tmp_path: Path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    name = first_shard(json.loads((ds / "manifest.json").read_text()))["name"]

    def to_fifo(m: dict) -> None:
        m["shard_root"] = os.path.relpath(tmp_path, ds)
        for s in m["splits"]["train"]["shards"]:
            s["name"] = "pipe" if s["name"] == name else s["name"]

    edit(ds, to_fifo)
    with pytest.raises(ShardError, match="not a regular file"):
        open_dataset(ds)
    assert any("not a regular file" in p for p in verify_dataset(ds))  # returns: no hang reading the FIFO
    with pytest.raises(ShardError, match="not a regular file"):
        fastdata.loader(ds, batch_size=2, backend="kornia", device="cpu")


def test_the_error_shows_the_value_cut_short_and_what_to_do(ds: Path):
    """The message names the file, the field, the value as read (its first 80 characters) and the remedy."""
    edit(ds, lambda m: first_shard(m).__setitem__("samples", "7" * 100))
    with pytest.raises(ManifestError) as info:
        read_manifest(ds)
    message = str(info.value)
    assert message.startswith(f"{ds / 'manifest.json'}: ")
    assert f"is {'7' * 80!r}, it must be an integer >= 1; " in message
    assert message.endswith("the manifest was edited or damaged: restore it or re-run the command that wrote it")
