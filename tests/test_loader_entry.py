"""The edges of the loaders, before any batch: `fastdata.loader`'s refusals, the image and pair loaders' option
resolution (defaults for device and backend, lists made tuples, unknown names refused), the split asked for, the
`Loader` wrapper (finalizer, close, repr), rank detection, the epoch bound, the manifest of a URL, and `require`."""

from __future__ import annotations

import gc
import types
from pathlib import Path

import boto3
import numpy as np
import pytest
from conftest_kinds import KINDS, kinds_data_fixture, make_loader  # noqa: F401  (the kinds_data fixture)
from conftest_remote import upload_folder
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)
from helpers import convert_images, make_image_tree

import fastdata
from fastdata.distributed import MAX_WORLD_SIZE, launched_world_size, resolve_rank
from fastdata.errors import ManifestError, MissingDependencyError, require
from fastdata.images import loader as image_loader_module
from fastdata.images.loader import Loader, build_options, default_backend, default_device, image_loader
from fastdata.manifest import read_manifest
from fastdata.manifest_at import read_any_manifest
from fastdata.planning.epochs import MAX_EPOCH, valid_epoch

CPU = {"device": "cpu", "backend": "kornia"}


@pytest.fixture(scope="module")
def two_splits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("entry")
    make_image_tree(root / "src", classes=2, per_class=2, splits=("train", "val"))
    convert_images(root / "src", root / "ds", samples_per_shard=4)
    return root / "ds"


def test_the_split_asked_for_is_opened(two_splits: Path) -> None:
    assert image_loader(two_splits, split="val", **CPU).split == "val"
    assert fastdata.loader(two_splits, split="val", **CPU).split == "val"
    assert image_loader(two_splits, **CPU).split == "train"


def test_an_evaluation_of_the_train_split_taken_by_default_is_a_warning(two_splits: Path, tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """`fastdata.loader("shards/", train=False)` evaluates the train split (split= defaults to it): metrics on
    training data, silently. A split asked for, shards named by path or a dataset of one split say nothing."""
    def warned(source, **kw) -> list[str]:
        caplog.clear()
        with caplog.at_level("WARNING", logger="fastdata.loader"):
            fastdata.loader(source, **{**CPU, **kw})
        return [r.getMessage() for r in caplog.records if r.name == "fastdata.loader"]

    assert warned(two_splits, train=False) == [
        f"{two_splits}: evaluating (train=False) its train split, which split= defaults to; it also has ['val']: "
        "pass split='val' to evaluate on held-out data (or split='train' to silence this)"]
    assert warned(two_splits, train=False, split="train") == warned(two_splits, train=False, split="val") == []
    assert warned(two_splits) == [] and warned(sorted(two_splits.glob("train-*.tar")), train=False) == []
    make_image_tree(tmp_path / "src", classes=2, per_class=2)
    convert_images(tmp_path / "src", tmp_path / "one")
    assert warned(tmp_path / "one", train=False) == []
    assert warned(two_splits, train=np.False_) == warned(two_splits, train=False)  # numpy's False evaluates too


def test_a_train_flag_that_is_an_array_is_refused_by_name(two_splits: Path) -> None:
    """`train=np.array([1, 2])` raised numpy's "truth value of an array ... is ambiguous" from the evaluation
    warning's check, before the loader's options could refuse it by name (found by the fuzz's `options` target)."""
    with pytest.raises(ValueError, match=r"^train=.* is not allowed; train must be True or False$"):
        fastdata.loader(two_splits, train=np.array([1, 2]), **CPU)


def test_a_single_dataset_refuses_mixture_options_but_not_their_off_values(two_splits: Path) -> None:
    assert fastdata.loader(two_splits, return_dataset=False, weights=None, **CPU).split == "train"
    with pytest.raises(ValueError) as caught:
        fastdata.loader(two_splits, return_dataset=True, samples_per_epoch=10, **CPU)
    assert str(caught.value) == (
        f"['samples_per_epoch', 'return_dataset'] apply to a mixture of datasets: pass a list of dataset folders, "
        f"globs or URLs (or a dict {{source: weight}}), not {two_splits!r}")


def test_a_dataset_of_another_kind_is_refused_by_name(two_splits: Path) -> None:
    from fastdata.pairs.loader import pair_loader

    with pytest.raises(ManifestError) as caught:
        pair_loader(two_splits, **CPU)
    assert str(caught.value) == (f"{two_splits} holds a dataset of kind 'images'; pair_loader reads kind 'image_text' "
                                 "(use fastdata.loader() to pick the loader by kind)")


def test_options_lists_become_tuples_and_unknown_names_are_refused() -> None:
    opts = build_options(mean=[0.5, 0.5, 0.5], std=[0.2, 0.2, 0.2], scale=[0.5, 1.0], ratio=[0.8, 1.25],
                         color_jitter=[0.1, 0.1, 0.1, 0.0], **CPU)
    assert (opts.mean, opts.std, opts.scale, opts.ratio, opts.color_jitter) == (
        (0.5, 0.5, 0.5), (0.2, 0.2, 0.2), (0.5, 1.0), (0.8, 1.25), (0.1, 0.1, 0.1, 0.0))
    with pytest.raises(TypeError) as caught:
        build_options(batchsize=3)
    names = ", ".join(image_loader_module._OPTION_NAMES)
    assert str(caught.value) == f"unknown image loader option(s) ['batchsize']; allowed: split, {names}"


def test_device_and_backend_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert default_device() == "cpu"
    monkeypatch.setattr(image_loader_module, "default_device", lambda: "cuda")
    assert build_options(device="cpu", backend="kornia").device == "cpu"  # given: no default looked up
    with pytest.raises(ValueError) as caught:
        build_options(backend="kornia")
    assert str(caught.value) == "device='cuda' but torch.cuda.is_available() is False; use device='cpu'"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert default_device() == "cuda"
    assert build_options(backend="kornia").device == "cuda"

    answers = {"nvidia.dali": object()}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: answers.get(name))
    assert default_backend("cuda") == default_backend("cuda:1") == "dali"  # DALI on a GPU: nvJPEG, GPU resize
    assert build_options().backend == "dali"  # (the default device is cuda here)
    assert default_backend("cpu") == build_options(device="cpu").backend == "kornia"  # faster on the CPU
    assert default_backend("cuda", device_decode=True) == "kornia"  # the kornia backend's own option
    assert build_options(device="cpu", dali_augment=lambda images: images).backend == "dali"  # needs DALI
    answers.clear()
    assert default_backend("cuda") == default_backend("cpu") == "kornia"
    assert default_backend("cpu", dali_augment=lambda images: images) == "dali"  # refused later, naming DALI's extra

    def broken(name):
        raise ValueError("nvidia.dali.__spec__ is None")

    monkeypatch.setattr(importlib.util, "find_spec", broken)
    assert default_backend("cuda") == "kornia"


class _Backend:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __len__(self) -> int:
        return 7

    def stop_ahead(self, wait: bool) -> None:
        self.calls.append(("stop_ahead", wait))

    def close(self) -> None:
        self.calls.append(("close",))


def _view() -> types.SimpleNamespace:
    return types.SimpleNamespace(root=Path("/data/ds"), split="val", classes=("a", "b"))


def test_a_loader_stops_its_producer_when_it_dies_and_closes_its_backend() -> None:
    backend = _Backend()
    loader = Loader(_view(), build_options(**CPU, batch_size=4, rank=1, world_size=2), backend)
    assert repr(loader) == ("Loader('/data/ds', split='val', backend='kornia', batch_size=4, train=True, rank=1/2, "
                            "batches=7)")
    loader.close()
    assert backend.calls == [("close",)]
    del loader
    gc.collect()
    assert backend.calls == [("close",), ("stop_ahead", False)]  # without waiting for the producer


class _Bare:
    """A backend with neither `stop_ahead` nor `close`."""

    def __len__(self) -> int:
        return 0


def test_a_backend_without_a_producer_or_files_to_close() -> None:
    loader = Loader(_view(), build_options(**CPU), _Bare())  # no finalizer to register
    loader.close()  # nothing to close
    assert len(loader) == 0 and loader.split == "val"
    del loader
    gc.collect()


def test_a_pair_loaders_repr_names_it() -> None:
    from fastdata.pairs.loader import PairLoader

    text = types.SimpleNamespace(pad_id=3, tokenized=True)
    loader = PairLoader(_view(), build_options(**CPU, batch_size=2), _Backend(), text)
    assert repr(loader).startswith("PairLoader('/data/ds', split='val', backend='kornia', batch_size=2,")
    assert (loader.pad_id, loader.tokenized, loader.classes) == (3, True, ("a", "b"))


def test_rank_and_world_size_explicit_or_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.distributed as dist

    assert resolve_rank(None, None) == (0, 1)
    assert resolve_rank(None, 4) == (0, 4)
    assert resolve_rank(3, 4) == (3, 4)
    with pytest.raises(ValueError) as caught:
        resolve_rank(1, None)  # world size 1 when nothing is initialised
    assert str(caught.value) == "rank must be an integer in 0..0, got 1"
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda: 5)
    monkeypatch.setattr(dist, "get_world_size", lambda: 8)
    assert resolve_rank(None, None) == (5, 8)
    assert resolve_rank(2, None) == (2, 8)  # each explicit value wins on its own
    assert resolve_rank(None, 6) == (5, 6)
    with pytest.raises(ValueError) as caught:
        resolve_rank(None, 4)
    assert str(caught.value) == "rank must be an integer in 0..3, got 5"
    with pytest.raises(ValueError) as caught:
        resolve_rank(0, MAX_WORLD_SIZE + 1)
    assert str(caught.value) == f"world_size must be an integer in 1..{MAX_WORLD_SIZE}, got {MAX_WORLD_SIZE + 1}"


LAUNCHED = ("WORLD_SIZE=4 in the environment (torchrun or another launcher started 4 processes), but "
            "torch.distributed is not initialised, so this loader would read every sample in each of them: call "
            "torch.distributed.init_process_group() before fastdata.loader(...), or pass rank= and world_size= "
            "(rank=0, world_size=1 to read the whole dataset in this process); with PyTorch Lightning, make the loader "
            "in train_dataloader() of the LightningModule or DataModule, which runs once the group is initialised")


def test_a_launched_job_without_a_process_group_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """torchrun sets WORLD_SIZE; a loader built before init_process_group took rank 0 of 1 in every process, and
    each read the whole epoch. Refused, unless both values are given or the group is initialised."""
    import torch.distributed as dist

    for value, size in (("", 1), ("1", 1), ("4", 4), (" 4\n", 4), ("four", 1), ("-4", 1), ("4.0", 1), ("²", 1)):
        monkeypatch.setenv("WORLD_SIZE", value)
        assert launched_world_size() == size
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert resolve_rank(None, None) == (0, 1)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="^WORLD_SIZE=2 in the environment"):
        resolve_rank(None, None)  # two processes are several already
    monkeypatch.setenv("WORLD_SIZE", "4")
    for rank, world_size in ((None, None), (None, 4), (2, None)):
        with pytest.raises(ValueError) as caught:
            resolve_rank(rank, world_size)
        assert str(caught.value) == LAUNCHED
    assert resolve_rank(2, 4) == (2, 4)
    assert resolve_rank(0, 1) == (0, 1)
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda: 3)
    monkeypatch.setattr(dist, "get_world_size", lambda: 4)
    assert resolve_rank(None, None) == (3, 4)


@pytest.mark.parametrize("kind", KINDS)
def test_every_loader_refuses_a_launched_job_without_a_process_group(kind, kinds_data, fortunes_tokens,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(ValueError, match="^WORLD_SIZE=4 in the environment"):
        make_loader(kind, kinds_data, fortunes_tokens)


@pytest.mark.parametrize(("value", "valid"), [(0, True), (MAX_EPOCH, True), (MAX_EPOCH + 1, False), (-1, False),
                                              (True, False), (False, False), (1.0, False), ("1", False)])
def test_valid_epochs(value: object, valid: bool) -> None:
    assert valid_epoch(value) is valid


@pytest.mark.parametrize("entry", ["loader", "image_loader"])
def test_remote_options_reach_the_dataset(two_splits: Path, s3: str, tmp_path: Path, entry: str) -> None:
    url = upload_folder(two_splits, f"{s3}/ds")
    open_loader = fastdata.loader if entry == "loader" else image_loader
    ld = open_loader(url, split="val", cache_dir=tmp_path / "cache", batch_size=2, image_size=16, **CPU)
    assert ld.split == "val" and sum(len(y) for _, y in ld) == 4
    assert {p.name for p in (tmp_path / "cache").rglob("*.tar")} == {"val-000000.tar"}  # the cache asked for


def test_a_mixture_opens_the_split_asked_for(two_splits: Path, s3: str, tmp_path: Path) -> None:
    url = upload_folder(two_splits, f"{s3}/ds")
    ld = fastdata.loader([str(two_splits), url], split="val", cache_dir=tmp_path / "cache", batch_size=2,
                         image_size=16, **CPU)
    assert ld.split == "val" and sum(len(y) for _, y in ld) == 8
    assert {p.name for p in (tmp_path / "cache").rglob("*.tar")} == {"val-000000.tar"}


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest_pairs import TOKENIZER, convert_pairs, make_pair_tree

    root = tmp_path_factory.mktemp("pairs")
    make_pair_tree(root / "src" / "train", n=4)
    make_pair_tree(root / "src" / "val", n=2)
    convert_pairs(root / "src", root / "ds", tokenizer=str(TOKENIZER))
    return root / "ds"


def test_the_pair_loader_opens_the_split_and_remote_asked_for(pairs: Path, s3: str, tmp_path: Path) -> None:
    from fastdata.pairs.loader import pair_loader

    url = upload_folder(pairs, f"{s3}/pairs")
    ld = pair_loader(url, split="val", cache_dir=tmp_path / "cache", batch_size=2, image_size=16, **CPU)
    assert ld.split == "val" and ld.options.batch_size == 2 and ld.tokenized
    assert repr(ld).startswith(f"PairLoader({url!r}, split='val', backend='kornia', batch_size=2,")
    (images, text), = list(ld)
    assert sorted(text) == ["attention_mask", "input_ids"]  # no captions unless asked for
    assert {p.name for p in (tmp_path / "cache").rglob("*.tar")} == {"val-000000.tar"}
    (_, text), = list(pair_loader(pairs, split="val", return_captions=True, batch_size=2, image_size=16, **CPU))
    assert sorted(text) == ["attention_mask", "captions", "input_ids"]
    with pytest.raises(ManifestError) as caught:
        image_loader(pairs, **CPU)
    assert str(caught.value) == (f"{pairs} holds a dataset of kind 'image_text'; image_loader reads kind 'images' "
                                 "(use fastdata.loader() to pick the loader by kind)")


def test_the_manifest_of_a_url(two_splits: Path, s3: str) -> None:
    client = boto3.client("s3")
    bucket = s3.removeprefix("s3://")
    client.upload_file(str(two_splits / "manifest.json"), bucket, "data/ds/manifest.json")
    assert read_any_manifest(f"{s3}/data/ds") == read_manifest(two_splits)
    assert read_any_manifest(two_splits) == read_manifest(two_splits)


def test_require_names_the_extra() -> None:
    import json

    assert require("json", "none") is json
    with pytest.raises(MissingDependencyError) as caught:
        require("fastdata_no_such_module", "volumes")
    assert str(caught.value) == ("'fastdata_no_such_module' is not installed; install it with: "
                                 "pip install 'fastdata[volumes]'")
