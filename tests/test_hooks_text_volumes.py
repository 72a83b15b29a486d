"""User hooks on the text and volume loaders: batch_transform (masked-language-model batches, a volume
transform), augment on volume patches; reproducible with the seed and across a mid-epoch resume."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.hooks import HookError

MASK_ID = 103  # BERT's [MASK]


def mlm(batch):
    """Mask 15% of the real tokens; labels hold the masked ids, -100 elsewhere."""
    ids = batch["input_ids"].clone()
    masked = torch.bernoulli(torch.full(ids.shape, 0.15)).bool() & batch["attention_mask"].bool()
    return {**batch, "input_ids": torch.where(masked, MASK_ID, ids), "labels": torch.where(masked, ids, -100)}


def text(fortunes_tokens: Path, **kw):
    return fastdata.loader(fortunes_tokens, max_tokens=2048, seed=1, **kw)


def collect(ld) -> list[dict]:
    return [{k: v.clone() for k, v in b.items()} for b in ld]


def test_mlm_masking_is_reproducible_differs_per_batch_and_resumes(fortunes_tokens):
    a, b = collect(text(fortunes_tokens, batch_transform=mlm)), collect(text(fortunes_tokens, batch_transform=mlm))
    plain = collect(text(fortunes_tokens))
    assert len(a) == len(plain) > 3
    for x, y, p in zip(a, b, plain):
        assert torch.equal(x["input_ids"], y["input_ids"]) and torch.equal(x["labels"], y["labels"])
        masked = x["labels"] != -100
        assert torch.equal(x["labels"][masked], p["input_ids"][masked]) and (x["input_ids"][masked] == MASK_ID).all()
        assert torch.equal(x["input_ids"][~masked], p["input_ids"][~masked])
    rates = [float((x["labels"] != -100).sum() / x["attention_mask"].sum()) for x in a]
    assert all(0.08 < r < 0.22 for r in rates) and len(set(rates)) > 1
    ld = text(fortunes_tokens, batch_transform=mlm)
    it = iter(ld)
    next(it)
    next(it)
    state = ld.state_dict()
    resumed = text(fortunes_tokens, batch_transform=mlm)
    resumed.load_state_dict(state)
    rest = collect(resumed)
    assert len(rest) == len(a) - 2
    assert all(torch.equal(x["input_ids"], y["input_ids"]) for x, y in zip(a[2:], rest))


def test_text_hook_errors(fortunes_tokens):
    with pytest.raises(HookError, match="must return the batch dict, it returned tuple on epoch 0, batch 0"):
        collect(text(fortunes_tokens, batch_transform=lambda b: (b, 1)))

    def boom(batch):
        raise ValueError("bad mask")

    ld = text(fortunes_tokens, batch_transform=boom)
    with pytest.raises(HookError, match="batch_transform hook .*boom raised on epoch 0, batch 0: ValueError") as info:
        collect(ld)
    assert isinstance(info.value.__cause__, ValueError) and ld.state_dict()["batches_done"] == 0
    with pytest.raises(ValueError, match="batch_transform=1 is not allowed"):
        text(fortunes_tokens, batch_transform=1)


def test_a_text_hook_returning_no_dict_later_says_where(fortunes_tokens):
    calls = []

    def third_wrong(batch):
        calls.append(1)
        return list(batch) if len(calls) == 3 else batch

    ld = text(fortunes_tokens, batch_transform=third_wrong)
    ld.set_epoch(1)
    with pytest.raises(HookError) as info:
        collect(ld)
    assert str(info.value) == ("the batch_transform hook of a text loader must return the batch dict, it returned "
                               "list on epoch 1, batch 2")
    assert (info.value.hook, info.value.epoch, info.value.batch) == ("batch_transform", 1, 2)


pydicom = pytest.importorskip("pydicom")
pytest.importorskip("kornia")


@pytest.fixture(scope="module")
def volumes(tmp_path_factory):
    from conftest_dicom import Phantom, convert_dicom, write_phantom

    root = tmp_path_factory.mktemp("hook-volumes")
    for i in range(4):
        ph = Phantom(series_uid=f"1.2.840.7.{i}", slices=12, rows=24, cols=24, slice_spacing=2.0,
                     pixel_spacing=(1.0, 1.0), origin=(-12.0, -12.0, 40.0), center_mm=(0.0, 0.0, 50.0),
                     radius_mm=5.0, background_hu=-1000, sphere_hu=600)
        write_phantom(root / "src" / f"s{i}", ph, seed=i)
    convert_dicom(root / "src", root / "out", samples_per_shard=2)
    return root / "out"


def vols(ds, **kw):
    return fastdata.loader(ds, batch_size=2, patch_size=(8, 8, 8), window=(-1000, 400), num_workers=1, seed=2,
                           patches_per_volume=2, **kw)


def intensity(x):
    """A random per-patch contrast scale, as a user's 3D intensity transform."""
    return (x * (0.8 + 0.4 * torch.rand(x.shape[0], 1, 1, 1, 1))).clamp(0, 1)


def test_volume_augment_hook_runs_after_the_builtin_and_is_reproducible(volumes):
    seen = []

    def spy(x):
        seen.append((float(x.min()), float(x.max()), tuple(x.shape)))
        return intensity(x)

    a = [x.clone() for x, _ in vols(volumes, augment=spy)]
    b = [x.clone() for x, _ in vols(volumes, augment=intensity)]
    builtin = [x.clone() for x, _ in vols(volumes)]
    assert len(a) == len(b) == len(builtin) > 1
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert any(not torch.equal(x, y) for x, y in zip(a, builtin))
    assert all(lo >= 0 and hi <= 1 and shape == (2, 1, 8, 8, 8) for lo, hi, shape in seen)
    ld = vols(volumes, augment=intensity)
    it = iter(ld)
    next(it)
    state = ld.state_dict()
    resumed = vols(volumes, augment=intensity)
    resumed.load_state_dict(state)
    assert all(torch.equal(x, y) for x, (y, _) in zip(a[1:], resumed))


def test_volume_batch_transform_gets_patches_and_meta(volumes):
    def tag(patches, meta):
        return patches.flip(-1), {**meta, "flipped": True}

    plain = [(x.clone(), m) for x, m in vols(volumes, train=False)]
    hooked = [(x.clone(), m) for x, m in vols(volumes, train=False, batch_transform=tag)]
    assert all(torch.equal(hx, px.flip(-1)) and hm["flipped"] and hm["keys"] == pm["keys"]
               for (hx, hm), (px, pm) in zip(hooked, plain))
    with pytest.raises(HookError, match="must return a pair"):
        list(vols(volumes, batch_transform=lambda p, m: p))
    calls = []

    def second_unpaired(p, m):  # the second batch's result is not a pair
        calls.append(1)
        return p if len(calls) == 2 else (p, m)

    late = vols(volumes, batch_transform=second_unpaired)
    late.set_epoch(3)
    with pytest.raises(HookError) as err:
        list(late)
    assert str(err.value).endswith("it returned Tensor on epoch 3, batch 1")
    assert (err.value.epoch, err.value.batch) == (3, 1)
    with pytest.raises(HookError, match="augment hook must return a floating-point tensor of shape"):
        list(vols(volumes, augment=lambda x: x[:1]))
    with pytest.raises(HookError, match="it returned a torch.int32 tensor of shape"):
        list(vols(volumes, augment=lambda x: x.int()))
