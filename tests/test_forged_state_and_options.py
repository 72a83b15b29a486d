"""States and options may come from someone else: every field of a state_dict is checked (present, typed,
in range) on every loader, and numeric options must be finite and within bounds (NaN means give NaN
batches; a million threads abort the interpreter)."""

from __future__ import annotations

import json
import math
import re
from functools import partial

import pytest
import torch
from conftest_images import loader, make_datasets
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

import fastdata


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("forged"))


def test_a_text_state_is_checked_field_by_field(fortunes_tokens):
    ld = fastdata.loader(fortunes_tokens, max_tokens=2048)
    state = json.loads(json.dumps(ld.state_dict()))
    fresh = fastdata.loader(fortunes_tokens, max_tokens=2048)
    for bad, match in [({"batches_done": 10**9}, "has .* batches"), ({"batches_done": -1}, ">= 0"),
                       ({"epoch": True}, ">= 0"), ({"max_tokens": 4096}, "max_tokens"),
                       ({"num_sequences": 3}, "num_sequences")]:
        with pytest.raises(ValueError, match=match):
            fresh.load_state_dict({**state, **bad})
    for key in ("seed", "world_size", "num_sequences"):
        with pytest.raises(ValueError, match="lacks"):
            fresh.load_state_dict({k: v for k, v in state.items() if k != key})
    fresh.load_state_dict({**state, "batches_done": len(fresh)})  # the very end is a valid place to resume
    assert list(fresh) == []


def test_a_text_state_refusal_says_exactly_what_is_wrong(fortunes_tokens):
    from fastdata.distributed import MAX_WORLD_SIZE
    from fastdata.planning.epochs import MAX_EPOCH

    ld = fastdata.loader(fortunes_tokens, max_tokens=2048)
    state = json.loads(json.dumps(ld.state_dict()))
    assert {k: state[k] for k in ("epoch", "batches_done", "rank", "world_size", "elastic", "mixture")} == \
        {"epoch": 0, "batches_done": 0, "rank": 0, "world_size": 1, "elastic": [], "mixture": None}
    fresh = fastdata.loader(fortunes_tokens, max_tokens=2048)
    for done in (1.5, "1", True, None):
        with pytest.raises(ValueError) as info:
            fresh.load_state_dict({**state, "batches_done": done})
        assert str(info.value) == (f"state must hold an integer 'epoch' in 0..{MAX_EPOCH}, 'batches_done' >= 0 and "
                                   f"'world_size' in 1..{MAX_WORLD_SIZE}, got 0, {done!r}, 1")
    with pytest.raises(ValueError) as info:
        fresh.load_state_dict({**state, "max_tokens": 4096, "seed": 7})
    assert str(info.value) == ("cannot resume: the loader was built with other options or data (seed: saved 7, now "
                               "0, max_tokens: saved 4096, now 2048); build it with the saved options and dataset "
                               "to resume exactly")
    with pytest.raises(TypeError, match="^state_dict must be a dict, got list$"):
        fresh.load_state_dict([state])


def test_a_volume_state_from_other_patches_is_refused(tmp_path):
    pytest.importorskip("pydicom")
    from conftest_dicom import convert_dicom, write_phantom

    write_phantom(tmp_path / "src" / "p1")
    convert_dicom(tmp_path / "src", tmp_path / "vols")
    kw = dict(batch_size=1, patch_size=(4, 8, 8), device="cpu")
    state = json.loads(json.dumps(fastdata.loader(tmp_path / "vols", **kw).state_dict()))
    with pytest.raises(ValueError, match="patch_size"):
        fastdata.loader(tmp_path / "vols", **{**kw, "patch_size": (8, 8, 8)}).load_state_dict(state)
    with pytest.raises(ValueError, match="batch_size"):
        fastdata.loader(tmp_path / "vols", **{**kw, "batch_size": 2}).load_state_dict(state)
    fastdata.loader(tmp_path / "vols", **kw).load_state_dict(state)


@pytest.mark.parametrize("option,value", [
    ("mean", (math.nan, 0.5, 0.5)), ("std", (0.2, math.inf, 0.2)), ("scale", (math.nan, 1.0)),
    ("ratio", (0.75, math.inf)), ("color_jitter", (0.1, math.nan, 0.1, 0.1)), ("hw_decoder_load", math.nan),
    ("num_threads", 10**6), ("prefetch", 10**6), ("num_threads", True)])
def test_numeric_image_options_must_be_finite_and_bounded(ds, option, value):
    with pytest.raises(ValueError, match=option.split("_")[0]):
        loader(ds["wds"], **{option: value})


@pytest.mark.parametrize("backend", ["kornia", "dali"])
@pytest.mark.parametrize("option, bad, good", [
    ("std", (1e-300, 0.2, 0.2), (1e-4, 1e-4, 1e-4)),  # 1e-300 divided by zero in float32; 1e-6 overflowed float16
    ("std", (1e-6, 0.2, 0.2), (1e-4, 1e-4, 1e-4)),
    ("color_jitter", (0.0, 1e39, 0.0, 0.0), (1000.0, 1000.0, 1000.0, 0.5)),  # contrast 1e39: inf in float32
])
def test_extreme_normalisation_and_jitter_are_refused_before_they_make_inf(ds, backend, option, bad, good):
    with pytest.raises(ValueError, match=r"^(mean/std|color_jitter)=.* is not allowed; .*(std >= 0\.0001|<= 1000\.0)"):
        loader(ds["wds"], backend=backend, dtype="float16", **{option: bad})
    ld = loader(ds["wds"], backend=backend, dtype="float16", **{option: good})  # the bound itself: finite batches
    assert all(bool(torch.isfinite(x.float()).all()) for x, _ in ld)
    ld.close()


@pytest.mark.parametrize("option,value", [("window", (-1000.0, math.nan)), ("foreground_prob", math.nan),
                                          ("pad_value", math.inf), ("num_workers", 10**6), ("scale", (0.9, math.inf)),
                                          ("zscore", (0.0, math.nan))])
def test_numeric_volume_options_must_be_finite_and_bounded(option, value):
    from fastdata.volumes.options import VolumeLoaderOptions

    with pytest.raises(ValueError, match=option.split("_")[0]):
        VolumeLoaderOptions(**{option: value})


@pytest.mark.parametrize("option,value", [("window", 400), ("scale", 1.1), ("zscore", 5), ("zscore", (0.0, 1.0, 2.0))])
def test_a_number_where_a_volume_option_takes_a_pair_is_a_value_error(option, value):
    """Not a raw TypeError from len() or a * unpacking (window=400 raised one)."""
    from fastdata.volumes.options import VolumeLoaderOptions

    named = re.escape(f"{option}={value!r} is not allowed; {option} must be ")
    with pytest.raises(ValueError, match=rf"^{named}.*two finite numbers"):
        VolumeLoaderOptions(**{option: value})


@pytest.mark.parametrize("edit", ["world_size", "elastic"])
@pytest.mark.parametrize("kind", ["images", "tokens"])
def test_a_state_naming_too_many_ranks_is_refused_not_planned(ds, fortunes_tokens, kind, edit):
    """A state is also an amount of work: an elastic replay plans every rank of each world size it names (the
    fuzzer's 10**18 ranks planned for ever). The bound is checked before any plan; at the bound, it plans."""
    from fastdata.distributed import MAX_WORLD_SIZE

    def make():
        if kind == "images":
            return loader(ds["wds"], batch_size=2, image_size=32, num_threads=1)
        return fastdata.loader(fortunes_tokens, max_tokens=2048)

    state = json.loads(json.dumps(make().state_dict()))
    field = {"world_size": lambda w: w, "elastic": lambda w: [[w, 0]]}[edit]
    for bad in (MAX_WORLD_SIZE + 1, 10**18):
        with pytest.raises(ValueError, match=f"world_size.*1..{MAX_WORLD_SIZE}"):
            make().load_state_dict({**state, edit: field(bad)})
    fresh = make()
    fresh.load_state_dict({**state, edit: field(MAX_WORLD_SIZE)})  # planned: every rank of the saved world
    assert fresh.state_dict()["elastic"] == [[MAX_WORLD_SIZE, 0]]


def test_a_lineage_replaying_too_many_ranks_in_all_is_refused():
    from fastdata.distributed import MAX_WORLD_SIZE
    from fastdata.planning.elastic import MAX_REPLAYED_RANKS, check_lineage

    steps = MAX_REPLAYED_RANKS // MAX_WORLD_SIZE
    assert len(check_lineage([[MAX_WORLD_SIZE, 1]] * steps)) == steps
    with pytest.raises(ValueError, match=f"replays {MAX_REPLAYED_RANKS + 1} ranks in all"):
        check_lineage([[MAX_WORLD_SIZE, 1]] * steps + [[1, 1]])


@pytest.mark.parametrize("cls", ["images", "text", "volumes"])
def test_a_world_size_option_past_the_bound_is_refused(cls):
    from fastdata.distributed import MAX_WORLD_SIZE, resolve_rank
    from fastdata.images.options import ImageLoaderOptions
    from fastdata.text.options import SequenceLoaderOptions
    from fastdata.volumes.options import VolumeLoaderOptions

    options = {"images": ImageLoaderOptions, "text": partial(SequenceLoaderOptions, max_tokens=64),
               "volumes": VolumeLoaderOptions}[cls]
    assert options(rank=MAX_WORLD_SIZE - 1, world_size=MAX_WORLD_SIZE).world_size == MAX_WORLD_SIZE
    for bad in (MAX_WORLD_SIZE + 1, 10**18, 0, True):
        with pytest.raises(ValueError, match="world_size"):
            options(world_size=bad)
    with pytest.raises(ValueError, match=f"world_size must be an integer in 1..{MAX_WORLD_SIZE}"):
        resolve_rank(0, MAX_WORLD_SIZE + 1)


@pytest.mark.parametrize("given, name", [
    ({"zscore": (0.0, 1e-300)}, "zscore"), ({"zscore": (1e300, 1.0)}, "zscore"), ({"window": (0.0, 1e-300)}, "window"),
    ({"window": (-1e308, 1e308)}, "window"), ({"pad_value": 1e300}, "pad_value"),
    ({"foreground_hu": -1e300}, "foreground_hu"), ({"zscore": True, "clip": (-1e300, 1e300)}, "clip"),
])
def test_volume_intensities_beyond_float32_are_refused(given, name):
    """Each made infinities or NaN in the patches (a std or window width below float32's range divided by zero, a
    mean or bound past it overflowed), or a torch RuntimeError (clip)."""
    from fastdata.volumes.options import VolumeLoaderOptions

    with pytest.raises(ValueError, match=f"^{name}=.* is not allowed"):
        VolumeLoaderOptions(**given)


def test_volume_intensities_at_the_bounds_give_finite_patches(tmp_path):
    from conftest_dicom import small_volumes

    from fastdata.volumes.options import MAX_INTENSITY, MIN_SPREAD

    vols = small_volumes(tmp_path, count=1)
    for given in ({"zscore": (MAX_INTENSITY, MIN_SPREAD)}, {"window": (-MAX_INTENSITY, -MAX_INTENSITY + MIN_SPREAD)},
                  {"zscore": True, "clip": (-MAX_INTENSITY, MAX_INTENSITY)}, {"pad_value": -MAX_INTENSITY}):
        ld = fastdata.loader(vols, batch_size=1, patch_size=(8, 32, 32), num_workers=1, **given)  # padded: 20 px
        assert all(bool(torch.isfinite(x).all()) for x, _ in ld), given


@pytest.mark.parametrize("given, message", [
    ({"batch_size": 4, "pad_to_multiple_of": 2**31}, r"^pad_to_multiple_of=2147483648 is not allowed; "
                                                     r"pad_to_multiple_of must be at most 65536"),
    ({"bucketing": "pack", "block_size": 2**33, "max_tokens": 2**34}, r"^block_size=8589934592 is not allowed; "
                                                                       r"block_size must be at most 16777216 tokens"),
])
def test_token_row_lengths_that_would_take_gigabytes_are_refused(given, message):
    """A row is padded to these lengths whatever the corpus: 2**31 would have allocated 64 GB for a batch of 4."""
    from fastdata.text.options import SequenceLoaderOptions

    with pytest.raises(ValueError, match=message):
        SequenceLoaderOptions(**given)
    SequenceLoaderOptions(batch_size=4, pad_to_multiple_of=2**16)  # the bounds themselves
    SequenceLoaderOptions(bucketing="pack", block_size=2**24, max_tokens=2**24)


def test_a_patch_that_could_not_be_allocated_is_refused():
    from fastdata.volumes.options import VolumeLoaderOptions

    # 2**28 voxels (cut whole: with augmentation the cut's margin counts too, test_a_crop_margin_...)
    assert VolumeLoaderOptions(patch_size=(256, 1024, 1024), crop_margin=0).patch_size == (256, 1024, 1024)
    assert VolumeLoaderOptions(patch_size=(256, 1024, 1024), train=False).patch_size == (256, 1024, 1024)
    with pytest.raises(ValueError, match=r"^patch_size=\(257, 1024, 1024\) is not allowed; patch_size must be at most "
                                         r"268,435,456 voxels"):
        VolumeLoaderOptions(patch_size=(257, 1024, 1024))


def test_a_pad_id_past_int64_is_refused():
    """It raised Python's OverflowError from the first batch (torch.full of int64)."""
    from fastdata.text.options import SequenceLoaderOptions

    assert SequenceLoaderOptions(max_tokens=64, pad_id=(1 << 63) - 1).pad_id == (1 << 63) - 1
    for bad in (1 << 63, 2**70, -1):
        with pytest.raises(ValueError, match=r"^pad_id=.* is not allowed; pad_id must be an integer in 0\.\.2\*\*63"):
            SequenceLoaderOptions(max_tokens=64, pad_id=bad)


@pytest.mark.parametrize("name, most", [("patches_per_volume", 65536), ("elastic_grid", 64)])
def test_volume_counts_that_would_exhaust_memory_are_refused(name, most):
    """patches_per_volume=10**9 would have planned billions of patches a volume before the first batch."""
    from fastdata.volumes.options import VolumeLoaderOptions

    assert getattr(VolumeLoaderOptions(**{name: most}), name) == most
    with pytest.raises(ValueError, match=rf"^{name}={most + 1} is not allowed; {name} must be at most {most}$"):
        VolumeLoaderOptions(**{name: most + 1})


@pytest.mark.parametrize("name, most", [("rotate_degrees", 180.0), ("elastic_magnitude", 1000.0)])
def test_volume_warps_past_their_bound_are_refused_by_name(name, most):
    """rotate_degrees=2**31 raised kornia's "degrees out of bounds" from the first batch, and elastic_magnitude=10**30
    an OverflowError; neither named the option."""
    from fastdata.volumes.options import VolumeLoaderOptions

    assert getattr(VolumeLoaderOptions(**{name: most}), name) == most
    assert getattr(VolumeLoaderOptions(**{name: 0}), name) == 0
    for bad in (most + 0.5, 2**31, 10**30, -1, -0.5):
        with pytest.raises(ValueError, match=rf"^{name}=.* is not allowed; {name} must be in \[0, {most:g}\]$"):
            VolumeLoaderOptions(**{name: bad})


def test_a_crop_margin_is_a_whole_number_of_voxels_whose_cut_can_be_allocated():
    """crop_margin was checked only for being negative: 1.5 or '3' failed in slicing from the first batch, and 2**31
    with numpy's 'array is too big'."""
    from fastdata.volumes.options import VolumeLoaderOptions

    assert VolumeLoaderOptions(crop_margin=0).crop_margin == 0
    ok = VolumeLoaderOptions(patch_size=(254, 1022, 1022), crop_margin=1)
    assert ok.cut_size == (256, 1024, 1024)  # exactly 2**28 voxels
    with pytest.raises(ValueError, match=r"^crop_margin=2 is not allowed; crop_margin must be small enough that a "
                                         r"patch cut with it \(patch_size \(254, 1022, 1022\) \+ 2 x crop_margin a "
                                         r"side\) holds at most 268,435,456 voxels$"):
        VolumeLoaderOptions(patch_size=(254, 1022, 1022), crop_margin=2)
    assert VolumeLoaderOptions(patch_size=(254, 1022, 1022), crop_margin=2, augment=False).cut_size == \
        (254, 1022, 1022)  # no augmentation: no margin is cut
    for bad in (1.5, "3", None, True, -1):
        with pytest.raises(ValueError, match=r"^crop_margin=.* is not allowed; crop_margin must be an integer >= 0$"):
            VolumeLoaderOptions(crop_margin=bad)
    with pytest.raises(ValueError, match=r"^crop_margin=2147483648 is not allowed; crop_margin must be small enough"):
        VolumeLoaderOptions(crop_margin=2**31)
