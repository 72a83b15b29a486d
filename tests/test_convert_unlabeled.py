"""Unlabeled images: a flat folder (or any tree with --unlabeled) converts to shards without labels, and the
loaders yield label -1 for every real sample (-100 stays the padding label)."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from helpers import PHOTOS, convert_images, make_image_tree

import fastdata
from fastdata.cli import main as cli


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    src = tmp_path / "photos"
    src.mkdir()
    for p in sorted(PHOTOS.glob("*.jpg"))[:9]:
        shutil.copyfile(p, src / p.name)
    return src


def test_a_flat_folder_of_real_photos_converts_unlabeled(flat: Path, tmp_path: Path):
    assert cli(["convert", str(flat), str(tmp_path / "out"), "-j", "1", "--samples-per-shard", "4",
                "--no-progress"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == [] and manifest["rejected"] == []
    assert manifest["splits"]["train"]["samples"] == 9
    assert manifest["extra"]["members"] == ["jpg", "json"]
    with tarfile.open(tmp_path / "out" / "train-000000.tar") as tar:
        assert {m.name.split(".", 1)[1] for m in tar} == {"jpg", "json"}
    assert cli(["verify", str(tmp_path / "out"), "--decode"]) == 0


@pytest.mark.parametrize("backend", ["kornia", "dali"])
@pytest.mark.parametrize("train", [True, False])
def test_unlabeled_loaders_yield_minus_one(flat: Path, tmp_path: Path, backend: str, train: bool):
    if backend == "dali":
        pytest.importorskip("nvidia.dali")
    convert_images(flat, tmp_path / "out", samples_per_shard=4)
    ld = fastdata.loader(tmp_path / "out", batch_size=4, image_size=32, train=train, backend=backend, device="cpu",
                         drop_last=False)
    labels = [v for _, y in ld for v in y.tolist()]
    assert ld.classes == ()
    assert sorted(set(labels) - {-100}) == [-1] and labels.count(-1) == 9


def test_unlabeled_flag_ignores_class_folders_and_arrow_has_no_label_column(tmp_path: Path):
    src = make_image_tree(tmp_path / "tree", classes=2, per_class=3, splits=("train", "val"))
    assert cli(["convert", str(src), str(tmp_path / "out"), "--unlabeled", "--format", "arrow", "-j", "1",
                "--no-progress"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["classes"] == [] and {k: v["samples"] for k, v in manifest["splits"].items()} == {
        "train": 6, "val": 6}
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_file(str(tmp_path / "out" / "train-000000.arrow"))
    assert "label" not in ds.column_names and len(ds) == 6
    ld = fastdata.loader(tmp_path / "out", split="val", batch_size=4, image_size=32, train=False, backend="kornia",
                         device="cpu")
    assert [v for _, y in ld for v in y.tolist()] == [-1] * 6 + [-100] * 2


def test_labels_csv_and_unlabeled_contradict(tmp_path: Path, flat: Path):
    (tmp_path / "labels.csv").write_text("filename,class\n")
    assert cli(["convert", str(flat), str(tmp_path / "out"), "--unlabeled", "--labels", str(tmp_path / "labels.csv"),
                "--no-progress"]) == 2
