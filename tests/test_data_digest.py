"""A loader state names the data it was saved on (fastdata/data_digest.py): every loader refuses to resume a state
saved on other data of the same size, where it used to resume at the same position in other samples, and accepts
the same data wherever they lie, and a state that records no digest (an older fastdata's)."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from types import SimpleNamespace

import pytest
from conftest_images import loader, make_datasets, run, state_after_one_batch
from conftest_mixing import IMAGE_KW, image_datasets
from conftest_text import convert_text, copy_fortunes
from helpers import convert_images

import fastdata
from fastdata.data_digest import KEY, check_data_digest, data_digest

A, B, C = "a" * 64, "b" * 64, "c" * 64


def _view(*shards: tuple[str, int]) -> SimpleNamespace:
    return SimpleNamespace(shards=[SimpleNamespace(info=SimpleNamespace(sha256=sha, samples=n)) for sha, n in shards])


def test_the_digest_hashes_each_datasets_shard_digests_and_counts() -> None:
    listing = f'[[["{A}",4],["{B}",3]]]'  # a state saved by one release must resume in the next: the form is fixed
    assert data_digest(_view((A, 4), (B, 3))) == hashlib.sha256(listing.encode()).hexdigest()[:32]
    mixed = SimpleNamespace(views=(_view((A, 4)), _view((B, 3), (C, 2))))
    assert data_digest(mixed) == hashlib.sha256(f'[[["{A}",4]],[["{B}",3],["{C}",2]]]'.encode()).hexdigest()[:32]
    assert data_digest(None) is None


def test_any_change_in_the_shards_read_changes_the_digest() -> None:
    base = data_digest(_view((A, 4), (B, 3)))
    others = [_view((A, 4), (C, 3)), _view((A, 4), (B, 2)), _view((B, 3), (A, 4)), _view((A, 4)),
              SimpleNamespace(views=(_view((A, 4)), _view((B, 3))))]  # the same shards, split into two datasets
    digests = [data_digest(v) for v in others]
    assert base not in digests and len(set(digests)) == len(digests)
    assert data_digest(_view((A, 4), (B, 3))) == base


def test_a_state_is_checked_against_the_data(caplog) -> None:
    check_data_digest({KEY: "d1"}, "d1")
    check_data_digest({KEY: None}, "d1")  # saved by a loader without a view
    check_data_digest({KEY: "d1"}, None)
    with pytest.raises(ValueError) as info:
        check_data_digest({KEY: "d1"}, "d2")
    assert str(info.value) == (
        "cannot resume: the state was saved on other data (data_digest: saved 'd1', now 'd2'); the shards' contents "
        "or their order differ (another dataset, split, selection of shards, or a conversion with other options; "
        "`fastdata info DATASET` shows each split's digest), or the loader reads other samples of them (indices=, "
        "sample_weights=). Build the loader on the data it was saved on, or delete "
        "the state's 'data_digest' field to resume on these data anyway")
    with pytest.raises(ValueError, match=r"^state_dict field 'data_digest' must be a string, got 7$"):
        check_data_digest({KEY: 7}, "d1")
    with caplog.at_level(logging.WARNING, logger="fastdata.data_digest"):
        check_data_digest({}, "d1")
    assert [r.getMessage() for r in caplog.records] == [
        "the loader state records no data_digest (saved by an older fastdata): resuming without checking that it "
        "was saved on these data"]


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """The same 12 train images as tar shards of 4 (wds), of 3 (regrouped), and resized to a short side of 24."""
    root = tmp_path_factory.mktemp("digest")
    out = make_datasets(root)
    convert_images(root / "src", root / "regrouped", samples_per_shard=3)
    convert_images(root / "src", root / "resized", samples_per_shard=4, short_side=24)
    return {**out, "regrouped": root / "regrouped", "resized": root / "resized", "root": root}


def _state_after_one_batch(ds) -> dict:
    return json.loads(json.dumps(state_after_one_batch(ds)))  # as a checkpoint file holds it


@pytest.mark.parametrize("other", ["regrouped", "resized", "arrow"])
def test_an_image_state_does_not_resume_other_data_of_the_same_size(images, other) -> None:
    state = _state_after_one_batch(images["wds"])
    assert state[KEY] == data_digest(fastdata.dataset.open_dataset(images["wds"], split="train"))
    fresh = loader(images[other])
    assert fresh.num_samples == 12
    with pytest.raises(ValueError, match=f"^cannot resume: the state was saved on other data \\({KEY}: saved "):
        fresh.load_state_dict(state)
    del state[KEY]  # on purpose: resumes at the same place in these samples
    fresh.load_state_dict(state)
    assert len(run(fresh)) == 2


def test_fastdata_info_shows_the_digest_a_state_of_each_split_names(images, capsys) -> None:
    from fastdata.cli import main as cli

    assert cli(["info", str(images["wds"])]) == 0
    out = capsys.readouterr().out
    for split in ("train", "val"):
        digest = loader(images["wds"], split=split).state_dict()[KEY]
        assert f"data_digest: {digest} (what a loader state saved on the whole split names)" in out
    assert loader(images["wds"], split="val").state_dict()[KEY] != loader(images["wds"]).state_dict()[KEY]


def test_an_image_state_resumes_its_data_copied_elsewhere(images) -> None:
    state = _state_after_one_batch(images["wds"])
    moved = images["root"] / "moved"
    shutil.copytree(images["wds"], moved)
    there, here = loader(moved), loader(images["wds"])
    there.load_state_dict(state)
    here.load_state_dict(state)
    assert [y.tolist() for _, y in run(there)] == [y.tolist() for _, y in run(here)]


def test_an_image_state_resumes_its_data_in_object_storage(images, s3, tmp_path) -> None:
    from conftest_remote import upload_folder

    state = _state_after_one_batch(images["wds"])
    remote, here = loader(upload_folder(images["wds"], f"{s3}/ds"), cache_dir=tmp_path / "cache"), loader(images["wds"])
    remote.load_state_dict(state)
    here.load_state_dict(state)
    assert [y.tolist() for _, y in run(remote)] == [y.tolist() for _, y in run(here)]


def test_an_older_state_without_a_digest_still_resumes(images, caplog) -> None:
    state = _state_after_one_batch(images["wds"])
    del state[KEY]
    fresh = loader(images["wds"])
    with caplog.at_level(logging.WARNING, logger="fastdata.data_digest"):
        fresh.load_state_dict(state)
    assert "records no data_digest" in caplog.text and len(run(fresh)) == 2


def test_the_dali_backend_records_the_same_digest(images) -> None:
    pytest.importorskip("nvidia.dali")
    dali = loader(images["wds"], backend="dali")
    assert dali.state_dict()[KEY] == loader(images["wds"]).state_dict()[KEY]
    with pytest.raises(ValueError, match="saved on other data"):
        dali.load_state_dict(loader(images["regrouped"]).state_dict())


def test_a_mixture_state_does_not_resume_a_mixture_of_other_data(tmp_path) -> None:
    ds = image_datasets(tmp_path)
    convert_images(tmp_path / "src" / "b", tmp_path / "b3", samples_per_shard=3)  # b's samples in other shards
    saved = fastdata.loader({str(ds["a"]): 0.5, str(ds["b"]): 0.5}, **IMAGE_KW).state_dict()
    other = fastdata.loader({str(ds["a"]): 0.5, str(tmp_path / "b3"): 0.5}, **IMAGE_KW)
    with pytest.raises(ValueError, match="saved on other data"):
        other.load_state_dict(saved)
    fastdata.loader({str(ds["a"]): 0.5, str(ds["b"]): 0.5}, **IMAGE_KW).load_state_dict(saved)


def test_a_text_state_does_not_resume_other_data_of_the_same_size(tmp_path) -> None:
    copy_fortunes(tmp_path / "src", ("science",))
    convert_text(tmp_path / "src", tmp_path / "a", separator="%", samples_per_shard=300)
    convert_text(tmp_path / "src", tmp_path / "b", separator="%", samples_per_shard=200)
    kw = dict(max_tokens=2048)
    state = json.loads(json.dumps(fastdata.loader(tmp_path / "a", **kw).state_dict()))
    other = fastdata.loader(tmp_path / "b", **kw)
    assert other.state_dict()["num_sequences"] == state["num_sequences"]
    with pytest.raises(ValueError, match="saved on other data"):
        other.load_state_dict(state)
    shutil.copytree(tmp_path / "a", tmp_path / "a2")
    fastdata.loader(tmp_path / "a2", **kw).load_state_dict(state)


def test_a_volume_state_does_not_resume_other_data_of_the_same_size(tmp_path) -> None:
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, write_phantom

    write_phantom(tmp_path / "src1" / "p1")
    write_phantom(tmp_path / "src2" / "p1", Phantom(sphere_hu=500))  # one volume in each, other values
    convert_dicom(tmp_path / "src1", tmp_path / "v1")
    convert_dicom(tmp_path / "src2", tmp_path / "v2")
    kw = dict(batch_size=1, patch_size=(4, 8, 8), device="cpu")
    state = json.loads(json.dumps(fastdata.loader(tmp_path / "v1", **kw).state_dict()))
    assert state[KEY] is not None
    with pytest.raises(ValueError, match="saved on other data"):
        fastdata.loader(tmp_path / "v2", **kw).load_state_dict(state)
    fastdata.loader(tmp_path / "v1", **kw).load_state_dict(state)
