"""PyTorch-native option values (torch.dtype, torch.device) are accepted by every loader, as their names are, and
numpy numbers and arrays as the Python numbers and tuples they are (mixture weights too)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest_kinds import kinds_data_fixture  # noqa: F401  (the kinds_data fixture)
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.coerce import device_name, dtype_name, plain_number, plain_numbers


def test_names_of_torch_values():
    assert dtype_name(torch.bfloat16) == "bfloat16" and dtype_name(torch.uint8) == "uint8"
    assert dtype_name("float16") == "float16" and dtype_name(3) == 3
    assert device_name(torch.device("cpu")) == "cpu" and device_name(torch.device("cuda", 1)) == "cuda:1"


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float16, torch.float32])
def test_image_loader_takes_torch_dtypes(kinds_data, dtype):
    ld = fastdata.loader(kinds_data["wds"], split="val", batch_size=4, image_size=32, train=False, backend="kornia",
                         device=torch.device("cpu"), dtype=dtype)
    x, _ = next(iter(ld))
    assert x.dtype == dtype and ld.options.dtype == str(dtype).removeprefix("torch.")


def test_a_dtype_that_is_not_allowed_is_still_refused(kinds_data):
    with pytest.raises(ValueError, match="dtype"):
        fastdata.loader(kinds_data["wds"], batch_size=4, backend="kornia", device="cpu", dtype=torch.int32)


def test_sequence_loader_takes_a_torch_device(fortunes_tokens):
    ld = fastdata.loader(fortunes_tokens, batch_size=8, device=torch.device("cpu"))
    assert next(iter(ld))["input_ids"].device.type == "cpu"


def test_volume_loader_takes_torch_dtype(kinds_data):
    ld = fastdata.loader(kinds_data["volumes"], batch_size=1, patch_size=(4, 8, 8), dtype=torch.float16,
                         device=torch.device("cpu"))
    patches, _ = next(iter(ld))
    assert patches.dtype == torch.float16


@pytest.mark.parametrize("device", ["cuda:1:2", "cuda:x", "cuda:", "gpu", 0, None])
def test_every_loader_refuses_a_device_name_it_cannot_read_with_the_same_error(device):
    """'cuda:1:2' once passed the check ('cuda:' prefix) and failed later, and a device that was no string raised
    AttributeError in the sequence and volume options; every loader now says what a device may be."""
    from fastdata.images.options import ImageLoaderOptions
    from fastdata.text.options import SequenceLoaderOptions
    from fastdata.volumes.options import VolumeLoaderOptions

    for options in (ImageLoaderOptions, SequenceLoaderOptions, VolumeLoaderOptions):
        with pytest.raises(ValueError) as err:
            options(batch_size=2, device=device)
        assert str(err.value) == f"device={device!r} is not allowed; device must be 'cpu', 'cuda' or 'cuda:N'"
    for good in ("cpu", "cuda", "cuda:0", "cuda:15"):
        assert all(options(batch_size=2, device=good).device == good
                   for options in (ImageLoaderOptions, SequenceLoaderOptions, VolumeLoaderOptions))


def test_numpy_numbers_are_the_python_numbers_they_are():
    assert type(plain_number(np.int64(3))) is int and plain_number(np.uint8(200)) == 200
    assert type(plain_number(np.float32(0.5))) is float and plain_number(np.float32(0.5)) == 0.5
    for kept in (True, 3.0, "3", None, torch.tensor(3), [np.int64(1)]):
        assert plain_number(kept) is kept


def _numpy_ints(options: dict) -> dict:
    """`options` with numpy integers for ints and numpy bools (`np.arange(3)[1] > 0`) for bools."""
    return {k: (np.int64(v) if type(v) is int else np.bool_(v) if type(v) is bool
                else tuple(np.int64(x) for x in v) if isinstance(v, tuple) else v)
            for k, v in options.items()}


@pytest.mark.parametrize("kind", ["images", "text", "volumes"])
def test_every_loader_takes_numpy_integers_for_its_options_and_epochs(kind, kinds_data, fortunes_tokens):
    """`batch_size=np.int64(...)` (arithmetic on arrays), `set_epoch(e)` in `for e in np.arange(n)` and a flag from a
    numpy comparison are refused no more: they are the ints and bools they are, and the states stay plain data."""
    source, options = {
        "images": (kinds_data["wds"], dict(batch_size=2, image_size=16, seed=3, rank=1, world_size=2,
                                           backend="kornia", device="cpu", num_threads=1, train=True, hflip=False)),
        "text": (fortunes_tokens, dict(max_tokens=2048, seed=3, rank=1, world_size=2, shuffle=False)),
        "volumes": (kinds_data["volumes"], dict(batch_size=1, patch_size=(4, 8, 8), patches_per_volume=2, seed=3,
                                                train=True, rot90=False)),
    }[kind]
    plain, numpy_ = fastdata.loader(source, **options), fastdata.loader(source, **_numpy_ints(options))
    plain.set_epoch(1)
    numpy_.set_epoch(np.arange(3)[1])
    state = numpy_.state_dict()
    assert json.loads(json.dumps(state)) == state == plain.state_dict()
    first = next(iter(plain))
    again = next(iter(numpy_))
    if isinstance(first, dict):
        assert first.keys() == again.keys() and all(torch.equal(first[k], again[k]) for k in first)
    else:
        assert torch.equal(first[0], again[0])


@pytest.mark.parametrize(("kind", "option", "value"), [
    ("text", "shuffle", "no"), ("text", "shuffle", 0), ("text", "pin_memory", "no"), ("text", "seed", -1),
    ("text", "seed", 1.5), ("text", "seed", "1"), ("volumes", "train", "no"), ("volumes", "drop_last", "no"),
    ("volumes", "rot90", 1), ("volumes", "seed", -1), ("volumes", "seed", 1.5), ("images", "train", None),
    ("images", "drop_last", 1), ("images", "seed", True)])
def test_a_flag_or_seed_of_another_type_is_refused_by_every_loader(kind, option, value, kinds_data, fortunes_tokens):
    """`shuffle="no"` is truthy: the text loader shuffled, and the volume loader trained on `train="no"`. A text
    seed of -1 or 1.5 was taken too, and a volume seed failed inside numpy."""
    source, options = {
        "images": (kinds_data["wds"], dict(batch_size=2, image_size=16, device="cpu")),
        "text": (fortunes_tokens, dict(max_tokens=2048)),
        "volumes": (kinds_data["volumes"], dict(batch_size=1, patch_size=(4, 8, 8))),
    }[kind]
    allowed = {"seed": "an integer >= 0", "drop_last": "None (train drops, eval keeps), True or False",
               "pin_memory": "None (pin when the device is CUDA), True or False"}.get(option, "True or False")
    with pytest.raises(ValueError) as refused:
        fastdata.loader(source, **options, **{option: value})
    assert str(refused.value) == f"{option}={value!r} is not allowed; {option} must be {allowed}"


def test_numpy_numbers_and_arrays_are_plain_numbers_and_tuples():
    assert plain_numbers(np.array([1.0, 2.5])) == (1.0, 2.5) and type(plain_numbers(np.array([1]))[0]) is int
    assert plain_numbers([np.float32(0.5), np.int64(2)]) == [0.5, 2]
    assert [type(v) for v in plain_numbers((np.float32(0.5), np.float64(1.5), np.int8(2)))] == [float, float, int]
    assert plain_numbers(np.int64(3) > 2) is True and plain_numbers(np.array([True]))[0] is True
    for kept in (True, "0.5", None, torch.tensor(0.5)):
        assert plain_numbers(kept) is kept


def test_mixture_weights_and_image_options_from_numpy(kinds_data):
    """Weights computed with numpy (an array, or its scalars) made `is_mixture` raise numpy's "truth value of an
    array is ambiguous", or were refused; an array `mean` or `scale` was kept as an array in the options."""
    wds, arrow = str(kinds_data["wds"]), str(kinds_data["arrow"])
    common = dict(batch_size=2, image_size=16, backend="kornia", device="cpu", num_threads=1, seed=5)

    def labels(loader):
        with loader:
            return [b[1].tolist() for b in loader]

    expected = labels(fastdata.loader([wds, arrow], weights=[1.0, 3.0], samples_per_epoch=8, **common))
    sizes = np.array([1, 3])
    for mixed in (fastdata.loader([wds, arrow], weights=sizes / sizes.sum() * 4, samples_per_epoch=np.int64(8),
                                  **common),
                  fastdata.loader([wds, arrow], weights=[np.float32(1), np.float32(3)], samples_per_epoch=8, **common),
                  fastdata.loader({wds: np.float64(1), arrow: np.int64(3)}, samples_per_epoch=8, **common)):
        assert json.loads(json.dumps(mixed.state_dict())) == mixed.state_dict()
        assert labels(mixed) == expected
    loader = fastdata.loader(wds, mean=np.array([0.5, 0.5, 0.5]), scale=np.array([0.25, 1.0]), **common)
    assert (loader.options.mean, loader.options.scale) == ((0.5, 0.5, 0.5), (0.25, 1.0))
