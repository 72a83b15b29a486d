"""User hooks on the image loader (both backends): augment on float [0, 1] batches before normalisation,
batch_transform on the final batch, dali_augment inside the DALI graph; reproducible with the seed and across
a mid-epoch resume; an exception names the hook and the batch and leaves nothing running."""

from __future__ import annotations

import threading

import pytest
import torch
from conftest_images import loader, make_datasets, resumed_after_one_batch, run

from fastdata.hooks import HookError, hook_seed, seeded

pytest.importorskip("kornia")
HAVE_DALI = __import__("importlib").util.find_spec("nvidia.dali") is not None
BACKENDS = ["kornia", pytest.param("dali", marks=pytest.mark.skipif(not HAVE_DALI, reason="DALI not installed"))]


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("hooks"))["wds"]


def identity(x):
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_identity_hooks_give_the_batches_of_no_hooks(ds, backend, train, dtype):
    plain = run(loader(ds, backend=backend, train=train, dtype=dtype, seed=2, color_jitter=(0.3, 0.3, 0.3, 0.05)))
    hooked = run(loader(ds, backend=backend, train=train, dtype=dtype, seed=2, color_jitter=(0.3, 0.3, 0.3, 0.05),
                        augment=identity, batch_transform=lambda x, y: (x, y)))
    assert len(plain) == len(hooked)
    for (a, ya), (b, yb) in zip(plain, hooked):
        assert torch.equal(ya, yb) and a.dtype == b.dtype and a.stride() == b.stride()
        if dtype == "uint8":
            assert torch.equal(a, b)
        else:  # the same pixels, normalised along another (equally exact) float path
            assert torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_augment_sees_unit_range_before_normalisation(ds, backend):
    seen = []

    def flip(x):
        seen.append((x.dtype, float(x.min()), float(x.max()), tuple(x.shape)))
        return x.flip(-1)

    plain = run(loader(ds, backend=backend, train=False, dtype="uint8"))
    flipped = run(loader(ds, backend=backend, train=False, dtype="uint8", augment=flip))
    for (a, _), (b, _) in zip(plain, flipped):
        assert torch.equal(b, a.flip(-1))
    assert all(dt == torch.float32 and lo >= 0 and hi <= 1 for dt, lo, hi, _ in seen)
    assert seen[0][3] == (4, 3, 32, 32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_eval_padding_rows_stay_zero_with_label_minus_100(ds, backend):
    def brighten(x):
        return (x + 0.5).clamp(0, 1)

    batches = run(loader(ds, backend=backend, split="val", train=False, dtype="uint8", augment=brighten))
    x, y = batches[-1]
    pad = y == -100
    assert pad.any() and not x[pad].any() and x[~pad].min() >= 127


@pytest.mark.parametrize("backend", BACKENDS)
def test_mixup_cutmix_soft_labels_differ_per_batch(ds, backend):
    v2 = pytest.importorskip("torchvision.transforms.v2")
    mix = v2.RandomChoice([v2.MixUp(num_classes=3), v2.CutMix(num_classes=3)])
    batches = run(loader(ds, backend=backend, train=True, seed=4, batch_transform=mix))
    assert batches and all(y.shape == (4, 3) and y.dtype == torch.float32 for _, y in batches)
    assert all(torch.allclose(y.sum(1), torch.ones(4)) for _, y in batches)
    assert len({tuple(y.flatten().tolist()) for _, y in batches}) == len(batches)  # different mixes


def _randaugment():
    from kornia.augmentation import RandomErasing
    from kornia.augmentation.auto import RandAugment

    return torch.nn.Sequential(RandAugment(n=2, m=9), RandomErasing(p=0.5))


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_seed_same_augmented_batches_and_batches_draw_differently(ds, backend):
    def once(seed):
        return run(loader(ds, backend=backend, train=True, seed=seed, dtype="uint8", augment=_randaugment()))

    a, b, other = once(1), once(1), once(2)
    assert all(torch.equal(x, y) for (x, _), (y, _) in zip(a, b))
    assert any(not torch.equal(x, y) for (x, _), (y, _) in zip(a, other))
    torch.manual_seed(123)
    expect = torch.rand(3)
    torch.manual_seed(123)
    run(loader(ds, backend=backend, train=True, seed=1, augment=_randaugment()))
    assert torch.equal(torch.rand(3), expect)  # the caller's generator is as it was


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hook_draws_anew_for_each_batch_epoch_and_seed(ds, backend):
    """A hook whose output is only what it draws: the images do not hide whether the generator was seeded per
    batch (torch.random.fork_rng restores it after each batch, so without the seed every batch would draw
    the same)."""
    def drawn(x):
        return torch.rand_like(x)

    def epoch_of(seed, epoch=0):
        ld = loader(ds, backend=backend, train=True, seed=seed, dtype="uint8", augment=drawn)
        ld.set_epoch(epoch)
        return [x for x, _ in run(ld)]

    first = epoch_of(1)
    assert len(first) >= 2 and not torch.equal(first[0], first[1])
    assert all(torch.equal(a, b) for a, b in zip(first, epoch_of(1)))
    assert not any(torch.equal(a, b) for a, b in zip(first, epoch_of(2)))
    assert not torch.equal(first[0], epoch_of(1, epoch=1)[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_mid_epoch_gives_the_remaining_augmented_batches(ds, backend):
    v2 = pytest.importorskip("torchvision.transforms.v2")
    kw = dict(backend=backend, train=True, seed=9, augment=_randaugment(),
              batch_transform=v2.MixUp(num_classes=3))
    full = loader(ds, **kw)
    full.set_epoch(1)
    whole = run(full)
    rest = resumed_after_one_batch(ds, 1, **kw)
    assert len(rest) == len(whole) - 1
    for (a, ya), (b, yb) in zip(whole[1:], rest):
        assert torch.equal(a, b) and torch.equal(ya, yb)


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("fastdata")}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("hook", ["augment", "batch_transform"])
def test_a_raising_hook_names_itself_and_the_batch_and_leaves_nothing_running(ds, backend, hook):
    calls = []

    def broken(*args):
        calls.append(1)
        if len(calls) == 2:
            raise ZeroDivisionError("boom")
        return args[0] if len(args) == 1 else args

    before = _threads()
    ld = loader(ds, backend=backend, train=True, seed=0, **{hook: broken})
    message = rf"the {hook} hook .*broken raised on epoch 0, batch 1: ZeroDivisionError: boom"
    with pytest.raises(HookError, match=message) as info:
        run(ld)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert (info.value.hook, info.value.epoch, info.value.batch) == (hook, 0, 1)
    assert [t.name for t in _threads() - before] == []  # threads, not names: others of the same name may run
    ld.set_epoch(1)
    assert len(run(ld)) == len(ld)  # usable again


@pytest.mark.parametrize("backend", BACKENDS)
def test_hook_results_of_the_wrong_shape_are_errors(ds, backend):
    with pytest.raises(HookError, match="must return a floating-point tensor of shape"):
        run(loader(ds, augment=lambda x: x[:, :1]))
    # values of another range, normalised as if in [0, 1] (uint8: up to 255 / std, 1,100 grey levels off)
    with pytest.raises(HookError, match=r"floating-point tensor .* it returned a torch.uint8 tensor of shape"):
        run(loader(ds, backend=backend, augment=lambda x: (x * 255).to(torch.uint8)))
    with pytest.raises(HookError, match=r"of shape \(4, 3, 32, 32\) on cpu .* it returned a torch.float32 tensor of "
                                        r"shape \(4, 3, 32, 32\) on meta on epoch 0, batch 0"):
        run(loader(ds, backend=backend, augment=lambda x: x.to("meta")))
    assert run(loader(ds, backend=backend, augment=lambda x: x.double()))  # another float type is cast as usual
    with pytest.raises(HookError) as none:
        run(loader(ds, backend=backend, augment=lambda x: None))
    assert str(none.value) == ("the augment hook must return a floating-point tensor of shape (4, 3, 32, 32) on cpu "
                               "(like its argument), it returned NoneType on epoch 0, batch 0")
    with pytest.raises(HookError) as single:
        ld = loader(ds, backend=backend, batch_transform=lambda x, y: x)
        ld.set_epoch(2)
        run(ld)
    assert str(single.value) == ("the batch_transform hook must return a pair (like its two arguments), it returned "
                                 "Tensor on epoch 2, batch 0")
    with pytest.raises(HookError, match=r"\(like its argument\), it returned tuple on epoch 0, batch 0$"):
        run(loader(ds, backend=backend, augment=lambda x: (x,)))
    for error, hook in ((none.value, "augment"), (single.value, "batch_transform")):
        assert (error.hook, error.epoch, error.batch) == (hook, 0 if hook == "augment" else 2, 0)


def test_hook_options_are_checked(ds):
    with pytest.raises(ValueError, match="augment=3 is not allowed"):
        loader(ds, augment=3)
    with pytest.raises(ValueError, match="dali_augment.*kornia backend"):
        loader(ds, backend="kornia", dali_augment=identity)


@pytest.mark.skipif(not HAVE_DALI, reason="DALI not installed")
def test_dali_augment_in_graph_rotation_is_reproducible_and_resumes(ds):
    import nvidia.dali.fn as fn

    def rotate(images, random):
        return fn.rotate(images, angle=random[0] * 40 - 20, keep_size=True, fill_value=0)

    kw = dict(backend="dali", train=True, seed=3, dtype="uint8", dali_augment=rotate)
    plain = run(loader(ds, backend="dali", train=True, seed=3, dtype="uint8"))
    a, b = run(loader(ds, **kw)), run(loader(ds, **kw))
    assert all(torch.equal(x, y) for (x, _), (y, _) in zip(a, b))
    assert any(not torch.equal(x, y) for (x, _), (y, _) in zip(a, plain))
    rest = resumed_after_one_batch(ds, **kw)
    assert len(rest) == len(a) - 1 and all(torch.equal(x, y) for (x, _), (y, _) in zip(a[1:], rest))
    one_arg = run(loader(ds, backend="dali", train=False, dtype="uint8", dali_augment=lambda im: fn.flip(im)))
    evals = run(loader(ds, backend="dali", train=False, dtype="uint8"))
    assert all(torch.equal(x, y.flip(-1)) for (x, _), (y, _) in zip(one_arg, evals))


@pytest.mark.skipif(not HAVE_DALI, reason="DALI not installed")
def test_dali_augment_errors_name_the_hook(ds):
    def bad(images):
        raise KeyError("no such op")

    with pytest.raises(HookError) as raised:
        run(loader(ds, backend="dali", dali_augment=bad))
    assert str(raised.value) == "the dali_augment hook raised while the DALI graph was defined: KeyError: 'no such op'"
    assert (raised.value.hook, raised.value.epoch, raised.value.batch) == ("dali_augment", -1, -1)  # not in a batch
    assert isinstance(raised.value.__cause__, KeyError)
    with pytest.raises(HookError) as none:
        run(loader(ds, backend="dali", dali_augment=lambda images: None))
    assert str(none.value) == "the dali_augment hook returned None; it must return the images DataNode"
    assert (none.value.hook, none.value.epoch, none.value.batch) == ("dali_augment", -1, -1)


def test_a_dali_hook_gets_random_only_when_it_takes_a_second_argument():
    from fastdata.images.dali_graph import _takes_random

    assert _takes_random(lambda images, random: images) and _takes_random(lambda images, random, extra=1: images)
    assert not _takes_random(lambda images: images) and not _takes_random(lambda images, *, random=None: images)
    assert not _takes_random(max)  # no signature to read (a builtin): called with the images alone


def test_dali_random_draws_are_a_function_of_seed_epoch_and_sample():
    import numpy as np

    from fastdata.images.dali_graph import RANDOM_VALUES, random_draws

    a = random_draws(3, 0, np.array([5]))[0]
    assert a.shape == (RANDOM_VALUES,) and a.dtype == np.float32 and ((a >= 0) & (a < 1)).all()
    assert np.array_equal(a, random_draws(3, 0, np.array([7, 5]))[1])  # the same in any batch
    assert not np.array_equal(a, random_draws(3, 1, np.array([5]))[0])
    assert not np.array_equal(a, random_draws(3, 0, np.array([6]))[0])
    assert not np.array_equal(a, random_draws(4, 0, np.array([5]))[0])


def test_seeds_differ_per_batch_and_the_window_restores_the_generator():
    assert len({hook_seed(0, e, r, b) for e in range(3) for r in range(2) for b in range(5)}) == 30
    torch.manual_seed(5)
    expect = torch.rand(4)
    torch.manual_seed(5)
    with seeded(0, 1, 0, 2, "cpu"):
        inside = torch.rand(2)
    with seeded(0, 1, 0, 2, "cpu"):
        again = torch.rand(2)
    assert torch.equal(inside, again) and torch.equal(torch.rand(4), expect)


def test_a_raising_module_hook_is_named_by_its_class():
    from fastdata.hooks import call_hook

    class Exploding(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("bad tensor")

    with pytest.raises(HookError, match="the augment hook Exploding raised on epoch 2, batch 5: RuntimeError"):
        call_hook("augment", Exploding(), torch.zeros(1), epoch=2, batch=5)


@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("block", [1 << 18, 700])  # one block, and many blocks of a few rows each
def test_finish_normalises_in_blocks_exactly_as_one_pass(monkeypatch, channels_last, block):
    """DeviceAugment.finish writes (x - mean) / std over the batch in cache-sized blocks of rows; every block must
    get its own rows' (per-plane) scale and shift, whatever the layout and the block size."""
    import fastdata.images.device_aug as device_aug
    from fastdata.images.device_aug import DeviceAugment
    from fastdata.images.options import ImageLoaderOptions

    monkeypatch.setattr(device_aug, "_BLOCK", block)
    opts = ImageLoaderOptions(batch_size=3, image_size=16, device="cpu", backend="kornia", dtype="float32",
                              channels_last=channels_last)
    x = torch.rand(3, 3, 16, 16)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    mean = torch.tensor(opts.mean).view(1, 3, 1, 1)
    std = torch.tensor(opts.std).view(1, 3, 1, 1)
    want = (x - mean) / std
    got = DeviceAugment(opts, torch.device("cpu")).finish(x.clone(memory_format=torch.preserve_format), inplace=True)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
