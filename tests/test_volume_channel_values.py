"""pad_value, window, clip and zscore=(mean, std) given per channel (fastdata/volumes/channel_values.py): a PET/CT
stack pads and normalises its CT in HU and its PET in its own units; one value still applies to every channel."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

pytest.importorskip("pydicom")
pytest.importorskip("scipy")

from conftest_dicom import convert_dicom, load_volume, read_samples, small_volumes  # noqa: E402
from conftest_stacks import pet_ct  # noqa: E402

import fastdata  # noqa: E402
from fastdata.volumes.augment import normalise  # noqa: E402
from fastdata.volumes.channel_values import bounds, check_channel_counts  # noqa: E402
from fastdata.volumes.options import VolumeLoaderOptions  # noqa: E402
from fastdata.volumes.patches import crop  # noqa: E402

PADS = (-1024.0, 0.0)
WINDOWS = ((-1000.0, 1000.0), (900.0, 1100.0))


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> tuple:
    """A converted PET/CT stack (2, 12, 20, 18) and its stored array."""
    root = tmp_path_factory.mktemp("stack")
    pet_ct(root / "src")
    convert_dicom(root / "src", root / "out", channels=("CT", "PT"))
    (sample,) = read_samples(root / "out").values()
    return root / "out", load_volume(sample)[0]


def test_crop_pads_each_channel_with_its_own_value():
    volume = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    out = crop(volume, (-1, 2, 3), (3, 3, 3), pad_value=(-7.0, 9.0))
    assert out.shape == (2, 3, 3, 3)
    np.testing.assert_array_equal(out[:, 1:, :2, :2], volume[:, :2, 2:4, 3:5])
    inside = np.zeros((3, 3, 3), bool)
    inside[1:, :2, :2] = True
    assert np.all(out[0][~inside] == -7.0) and np.all(out[1][~inside] == 9.0)
    np.testing.assert_array_equal(crop(volume, (-1, 2, 3), (3, 3, 3), pad_value=5.0)[1][~inside], 5.0)
    np.testing.assert_array_equal(crop(volume[0], (-1, 2, 3), (3, 3, 3), pad_value=(-7.0,))[~inside], -7.0)


def test_normalise_windows_each_channel_in_its_own_range():
    x = torch.tensor([-1000.0, 0.0, 1000.0, 2000.0]).view(1, 1, 1, 1, 4).repeat(1, 2, 1, 1, 1)
    opts = VolumeLoaderOptions(window=((-1000.0, 1000.0), (0.0, 4000.0)), augment=False)
    out = normalise(x, opts)
    torch.testing.assert_close(out[0, 0, 0, 0], torch.tensor([0.0, 0.5, 1.0, 1.0]))
    torch.testing.assert_close(out[0, 1, 0, 0], torch.tensor([0.0, 0.0, 0.25, 0.5]))
    one = normalise(x, VolumeLoaderOptions(window=(0.0, 4000.0), augment=False))
    torch.testing.assert_close(one[0, 0], one[0, 1])


def test_normalise_clips_and_standardises_each_channel_with_its_own_numbers():
    x = torch.tensor([-1000.0, 0.0, 1000.0, 2000.0]).view(1, 1, 1, 1, 4).repeat(1, 2, 1, 1, 1)
    opts = VolumeLoaderOptions(clip=((-500.0, 500.0), (0.0, 4000.0)), zscore=((0.0, 250.0), (1000.0, 500.0)),
                               augment=False)
    out = normalise(x, opts)
    torch.testing.assert_close(out[0, 0, 0, 0], torch.tensor([-2.0, 0.0, 2.0, 2.0]))
    torch.testing.assert_close(out[0, 1, 0, 0], torch.tensor([-2.0, -2.0, 0.0, 2.0]))
    one = normalise(x, VolumeLoaderOptions(clip=(-500.0, 500.0), zscore=(0.0, 250.0), augment=False))
    torch.testing.assert_close(one[0, 1], out[0, 0])


def test_the_loader_pads_and_windows_a_stack_per_channel(stack):
    """Eval patches of the stack: channel c is its stored values windowed by window c, and pad_value c (windowed)
    where the patch reaches past the volume."""
    out, arr = stack
    loader = fastdata.loader(str(out), patch_size=(16, 16, 16), batch_size=1, train=False, pad_value=PADS,
                             window=[list(w) for w in WINDOWS])  # lists, as a YAML config gives them
    assert loader.opts.window == WINDOWS and loader.opts.pad_value == PADS
    x, meta = next(iter(loader))
    start = tuple(meta["start"][0].tolist())
    for c, ((lo, hi), pad) in enumerate(zip(WINDOWS, PADS)):
        expected = np.clip((crop(arr[c], start, (16, 16, 16), pad_value=pad) - lo) / (hi - lo), 0, 1)
        np.testing.assert_allclose(x[0, c].numpy(), expected, rtol=1e-6, atol=1e-6)
    assert x[0, 0, 15, 15, 15] == 0.0 and x[0, 1, 15, 15, 15] == 0.0  # past the volume: air, and no activity


def test_a_count_other_than_the_channels_is_refused(stack, tmp_path):
    out, _ = stack
    for options, name in ((dict(pad_value=(0.0, 0.0, 0.0)), "pad_value"), (dict(window=((0, 1),)), "window"),
                          (dict(zscore=((0, 1),) * 3), "zscore"), (dict(clip=((0, 1),), zscore=True), "clip")):
        with pytest.raises(ValueError, match=rf"{name}=.* per channel: the volumes have 2 channels \(CT, PT\)"):
            fastdata.loader(str(out), patch_size=(8, 8, 8), batch_size=1, train=False, **options)
    single = small_volumes(tmp_path, count=1)
    with pytest.raises(ValueError, match="the volumes have one channel"):
        fastdata.loader(str(single), patch_size=(8, 8, 8), batch_size=1, train=False, pad_value=(0.0, 0.0))
    x, _ = next(iter(fastdata.loader(str(single), patch_size=(8, 8, 8), batch_size=1, train=False,
                                     pad_value=(-5.0,))))
    y, _ = next(iter(fastdata.loader(str(single), patch_size=(8, 8, 8), batch_size=1, train=False, pad_value=-5.0)))
    torch.testing.assert_close(x, y)


@pytest.mark.parametrize("options", [dict(pad_value=()), dict(pad_value=(float("nan"), 0.0)),
                                     dict(pad_value=(0.0, 1e9)), dict(pad_value=("a", 0.0)),
                                     dict(window=((0.0, 1.0), (2.0, 1.0))), dict(window=((0.0, 1.0), (0.0,))),
                                     dict(window=[(0.0, 1.0), 5.0]),
                                     dict(window=((0.0, float("inf")), (0.0, 1.0))),
                                     dict(zscore=((0.0, 1.0), (0.0, 0.0))), dict(zscore=((0.0, 1.0), (0.0,))),
                                     dict(clip=((0.0, 1.0), (1.0, 1.0)), zscore=True)])
def test_bad_per_channel_values_are_refused(options):
    name = next(iter(options))
    with pytest.raises(ValueError, match=f"{name}=.*or one (per channel|such pair per channel)"):
        VolumeLoaderOptions(**options)


def test_per_channel_values_given_deliberately_are_not_warned_of(stack, caplog):
    out, _ = stack
    with caplog.at_level(logging.WARNING, logger="fastdata.volumes.options"):
        fastdata.loader(str(out), patch_size=(8, 8, 8), batch_size=1, train=False)
    assert "pad_value=-1024.0 is in HU" in caplog.text  # the default, HU for every channel, on a CT+PT stack
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="fastdata.volumes.options"):
        fastdata.loader(str(out), patch_size=(8, 8, 8), batch_size=1, train=False, pad_value=PADS, window=WINDOWS)
    assert "Hounsfield" not in caplog.text


def test_values_read_from_json_or_yaml_lists_are_held_as_tuples():
    options = VolumeLoaderOptions(pad_value=[-1024.0, 0.0], window=[[-1000.0, 1000.0], (900.0, 1100.0)])
    assert options.pad_value == PADS and isinstance(options.pad_value, tuple)
    assert options.window == WINDOWS and all(isinstance(pair, tuple) for pair in options.window)
    zscored = VolumeLoaderOptions(zscore=[0.0, 1.0], clip=[[-1000.0, 1000.0], [0.0, 15.0]])
    assert zscored.zscore == (0.0, 1.0) and isinstance(zscored.zscore, tuple)
    assert zscored.clip == ((-1000.0, 1000.0), (0.0, 15.0)) and all(isinstance(pair, tuple) for pair in zscored.clip)
    mixed = VolumeLoaderOptions(window=[(-1000.0, 1000.0), [900.0, 1100.0]], pad_value=-5.0)
    assert mixed.window == WINDOWS and all(isinstance(pair, tuple) for pair in mixed.window)
    assert mixed.pad_value == -5.0


def test_a_count_refusal_names_the_value_cut_and_what_every_channel_takes():
    many = VolumeLoaderOptions(pad_value=tuple(float(i) for i in range(100)))
    with pytest.raises(ValueError) as raised:
        check_channel_counts(many, ("CT", "PT"))
    text = str(raised.value)
    given, rule = text.split(" is not allowed; ")
    assert given.startswith("pad_value=(0.0, 1.0, 2.0, ") and len(given) == len("pad_value=") + 200
    assert given.endswith("...")
    assert rule == ("pad_value must be one number for every channel, or one number per channel: "
                    "the volumes have 2 channels (CT, PT)")
    with pytest.raises(ValueError) as raised:
        check_channel_counts(VolumeLoaderOptions(window=((0.0, 1.0),) * 3), ("CT", "PT"))
    assert str(raised.value) == ("window=((0.0, 1.0), (0.0, 1.0), (0.0, 1.0)) is not allowed; window must be one "
                                 "pair for every channel, or one pair per channel: the volumes have 2 channels "
                                 "(CT, PT)")


def test_per_channel_bounds_are_channel_tensors_of_the_batch_dtype():
    x = torch.zeros(2, 2, 3, 3, 3, dtype=torch.float64)
    low, high = bounds(WINDOWS, x)
    assert low.shape == high.shape == (1, 2, 1, 1, 1) and low.dtype == high.dtype == torch.float64
    assert low.flatten().tolist() == [-1000.0, 900.0] and high.flatten().tolist() == [1000.0, 1100.0]
    assert bounds((0.0, 1.0), x) == (0.0, 1.0)
