"""The image loader with the kornia backend: output contract, epochs, ranks, resume, both shard formats."""

from __future__ import annotations

import io
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_images import TRAIN_COUNTS, VAL_COUNTS, collect, loader, make_datasets
from PIL import Image

import fastdata
from fastdata.dataset import open_dataset
from fastdata.images.decode import decode_eval
from fastdata.images.options import IMAGENET_MEAN, IMAGENET_STD
from fastdata.images.reader import SplitReader


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_datasets(tmp_path_factory.mktemp("images"))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "uint8"])
@pytest.mark.parametrize("train", [True, False])
def test_shapes_dtypes_layout(ds, dtype, train):
    ld = loader(ds["wds"], split="val", train=train, dtype=dtype)
    batches = list(ld)
    assert len(batches) == len(ld) == (1 if train else 2)  # train: floor(7/4); eval: ceil(7/4) padded
    for x, y in batches:
        assert x.shape == (4, 3, 32, 32) and x.dtype == getattr(torch, dtype)
        assert x.is_contiguous(memory_format=torch.channels_last)
        assert y.dtype == torch.int64 and y.shape == (4,)


def test_num_samples_and_len_follow_drop_last(ds, caplog):
    drop = loader(ds["wds"], split="train", batch_size=5)
    keep = loader(ds["wds"], split="train", batch_size=5, drop_last=False)
    assert (len(drop), drop.num_samples, len(keep), keep.num_samples) == (2, 10, 3, 12)
    assert [len(y) for _, y in keep] == [5, 5, 2]
    with caplog.at_level("WARNING"):
        assert len(loader(ds["wds"], split="val", batch_size=8)) == 0  # 7 samples, train drops
    assert "yields no batch" in caplog.text


@pytest.mark.parametrize(("train", "size", "needs"), [(True, 256, None), (True, 257, 257), (False, 224, None),
                                                      (False, 225, 257), (False, 384, 439)])
def test_an_image_size_the_conversion_cut_below_is_a_warning(ds, caplog, train, size, needs):
    """Converted with --short-side 256 (the default), shards cannot feed image_size=384 without upsampling every
    image: the loader says so, with the --short-side that would (train: image_size; eval: image_size / 0.875)."""
    with caplog.at_level("WARNING", logger="fastdata.images.loader"):
        loader(ds["wds"], split="val", train=train, image_size=size)
        both = [str(ds["wds"]), str(ds["arrow"])]  # weighted in training, the union in evaluation
        fastdata.loader(both, weights=[1, 1] if train else None, split="val", train=train, image_size=size,
                        batch_size=4, backend="kornia", device="cpu")
    messages = [r.getMessage() for r in caplog.records if r.name == "fastdata.images.loader"]
    if needs is None:
        assert messages == []
    else:
        wanted = (f"was converted with --short-side 256; image_size={size} ({'train' if train else 'eval: '}")
        assert len(messages) == 3 and all(wanted in m for m in messages)  # one loader, and each member of the mixture
        assert all(m.endswith(f"needs a shorter side of {needs}, so its images are upsampled (blurred): convert again "
                              f"with --short-side {needs} (or 0 to keep the original sizes)") for m in messages)
        assert {str(ds["wds"]), str(ds["arrow"])} <= {m.split(" was converted")[0] for m in messages}


def test_channels_first_when_asked(ds):
    x, _ = next(iter(loader(ds["wds"], split="val", train=False, channels_last=False)))
    assert x.is_contiguous() and not x.is_contiguous(memory_format=torch.channels_last)


def test_value_ranges_and_normalisation(ds):
    raw = torch.cat([x for x, _ in loader(ds["wds"], split="val", train=False, dtype="uint8")])
    norm = torch.cat([x for x, _ in loader(ds["wds"], split="val", train=False, dtype="float32")])
    valid = slice(0, 7)
    assert raw.dtype == torch.uint8 and int(raw[valid].max()) > 200 and int(raw[valid].min()) < 60
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    expected = (raw[valid].float() / 255 - mean) / std
    assert torch.allclose(norm[valid], expected, atol=1e-5)
    assert torch.all(norm[7:] == 0) and torch.all(raw[7:] == 0)  # padding rows are zero after normalisation
    for dtype, tol in (("float16", 4e-3), ("bfloat16", 3e-2)):
        low = torch.cat([x for x, _ in loader(ds["wds"], split="val", train=False, dtype=dtype)])
        assert (low.float() - norm).abs().max() <= tol


def test_eval_pixels_equal_decode_and_torchvision_geometry(ds):
    """Eval output is exactly: decode, resize shorter side to 37 (antialias), centre crop 32."""
    from torchvision.transforms.v2 import functional as TF

    x = torch.cat([b for b, _ in loader(ds["wds"], split="val", train=False, dtype="uint8")])
    reader = SplitReader(open_dataset(ds["wds"], split="val"))
    for i in range(7):
        raw = reader.read(i)
        ours = decode_eval(raw, resize_short=37, size=32).permute(2, 0, 1)
        assert torch.equal(x[i], ours)
        pil = torch.from_numpy(np.array(Image.open(io.BytesIO(bytes(raw.data))).convert("RGB")))
        ref = TF.center_crop(TF.resize(pil.permute(2, 0, 1), [37], antialias=True), [32])
        assert (x[i].int() - ref.int()).abs().max() <= 3  # PIL vs simplejpeg IDCT rounding only


@pytest.mark.parametrize("fmt", ["wds", "arrow"])
def test_label_counts_per_class_equal_manifest(ds, fmt):
    for split, counts in (("train", TRAIN_COUNTS), ("val", VAL_COUNTS)):
        ld = loader(ds[fmt], split=split, train=False, batch_size=3)
        labels = torch.cat([y for _, y in ld])
        got = Counter(labels[labels >= 0].tolist())
        manifest = open_dataset(ds[fmt], split=split).manifest.split(split).class_counts
        assert tuple(got[c] for c in range(3)) == tuple(manifest) == counts
        assert ld.num_samples == sum(counts)
    train = loader(ds[fmt], split="train", train=True, batch_size=4)  # 12 samples: all visited
    assert Counter(torch.cat([y for _, y in train]).tolist()) == dict(enumerate(TRAIN_COUNTS))


def test_tar_and_arrow_shards_give_identical_tensors(ds):
    a = torch.cat([x for x, _ in loader(ds["wds"], split="train", train=False)])
    b = torch.cat([x for x, _ in loader(ds["arrow"], split="train", train=False)])
    assert torch.equal(a, b)
    def rows(fmt: str) -> list[bytes]:  # train: the shard layouts differ (4 vs 5 per shard), so the order does
        kw = dict(split="train", train=True, color_jitter=(0.4, 0.4, 0.4, 0.1), shuffle_window=None, drop_last=False)
        return sorted(bytes(x[i].numpy().tobytes()) + bytes([int(y[i])])
                      for x, y in loader(ds[fmt], **kw) for i in range(len(y)))

    assert rows("wds") == rows("arrow")  # every sample's augmented tensor is a function of the sample alone


def test_same_seed_same_order_and_set_epoch_changes_it(ds):
    def epoch(seed: int, e: int):
        ld = loader(ds["wds"], split="train", train=True, seed=seed)
        ld.set_epoch(e)
        return collect(ld)

    a, b = epoch(0, 0), epoch(0, 0)
    assert all(torch.equal(x, y) for x, y in zip(a[0] + a[1], b[0] + b[1]))
    c = epoch(0, 1)
    assert not all(torch.equal(x, y) for x, y in zip(a[0] + a[1], c[0] + c[1]))
    assert sorted(torch.cat(a[1]).tolist()) == sorted(torch.cat(c[1]).tolist())  # same samples, new order
    d = epoch(5, 0)
    assert not torch.equal(torch.cat(a[0]), torch.cat(d[0]))
    no_flip = collect(loader(ds["wds"], split="train", train=True, seed=0, hflip=False))
    assert torch.equal(torch.cat(no_flip[1]), torch.cat(a[1]))  # same samples and crops ...
    assert not torch.equal(torch.cat(no_flip[0]), torch.cat(a[0]))  # ... but some were flipped


@pytest.mark.parametrize("k", [1, 2])
def test_resume_mid_epoch_is_bitwise_exact(ds, k):
    kw = dict(split="train", train=True, batch_size=2, color_jitter=(0.3, 0.3, 0.3, 0.05), seed=3)
    full = loader(ds["wds"], **kw)
    full.set_epoch(2)
    want = collect(full)
    first = loader(ds["wds"], **kw)
    first.set_epoch(2)
    it = iter(first)
    for _ in range(k):
        next(it)
    state = first.state_dict()
    it.close()
    assert state["epoch"] == 2 and state["batch"] == k
    fresh = loader(ds["wds"], **kw)
    fresh.load_state_dict(state)
    fresh.set_epoch(2)  # the usual training loop calls set_epoch before iterating: keeps the resume point
    got = collect(fresh)
    assert len(got[0]) == len(want[0]) - k
    assert all(torch.equal(x, y) for x, y in zip(got[0] + got[1], want[0][k:] + want[1][k:]))
    assert len(list(fresh)) == len(fresh)  # the next pass is a whole epoch again


def test_state_dict_from_other_setup_is_refused(ds):
    state = loader(ds["wds"], split="train", seed=1).state_dict()
    with pytest.raises(ValueError, match="seed"):
        loader(ds["wds"], split="train", seed=2).load_state_dict(state)
    for bad, match in [({"batch": -1}, "batch"), ({"epoch": "3"}, "epoch"), ({"cursor": True}, "cursor"),
                       ({"version": 1}, "version"), ({"shuffle_window": 7}, "shuffle_window"),
                       ({"num_samples": 5}, "num_samples"), ({"batch": 10**9}, "batches")]:
        with pytest.raises(ValueError, match=match):
            loader(ds["wds"], split="train", seed=1).load_state_dict({**state, **bad})
    trimmed = {k: v for k, v in state.items() if k != "world_size"}
    with pytest.raises(ValueError, match="lacks"):
        loader(ds["wds"], split="train", seed=1).load_state_dict(trimmed)


def test_eval_padding_across_two_ranks(ds):
    r0 = loader(ds["wds"], split="val", train=False, rank=0, world_size=2)
    r1 = loader(ds["wds"], split="val", train=False, rank=1, world_size=2)
    (x0, y0), (x1, y1) = next(iter(r0)), next(iter(r1))
    assert len(r0) == len(r1) == 1 and r0.num_samples == 3 and r1.num_samples == 4
    assert y0[3] == -100 and (y1 >= 0).all() and torch.all(x0[3] == 0)
    full = torch.cat([x for x, _ in loader(ds["wds"], split="val", train=False, batch_size=8)])
    assert torch.equal(torch.cat([x0[:3], x1]), full[:7])


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_train_ranks_equal_batches_disjoint_samples(ds, world_size):
    keys = []
    for r in range(world_size):
        tr = loader(ds["wds"], split="train", train=True, batch_size=1, rank=r, world_size=world_size)
        mine = []
        for _ in tr:
            mine.extend(tr.backend.last_keys)
        assert len(tr) == 12 // world_size == len(mine)  # every rank the same number of full batches
        keys.append(mine)
    flat = [k for mine in keys for k in mine]
    assert len(set(flat)) == len(flat) == 12  # disjoint, and together every sample (12 divides evenly)


def test_glob_source_and_fastdata_loader_dispatch(ds):
    ld = fastdata.loader(str(ds["wds"] / "val-*.tar"), batch_size=4, train=False, backend="kornia", device="cpu",
                         image_size=32)
    assert ld.split == "val" and ld.classes == ("class_0", "class_1", "class_2") and len(ld) == 2


def test_early_break_leaves_no_thread_behind(ds):
    before = set(threading.enumerate())  # threads of other tests may come and go: only ours are compared
    ld = loader(ds["wds"], split="train", train=True, batch_size=2, prefetch=1)
    for _ in range(3):
        for _batch in ld:
            break
    ours = [t for t in threading.enumerate() if t not in before]
    for t in ours:
        t.join(timeout=10)  # a closed iterator's threads end promptly; a leaked one never does
    assert not [t.name for t in ours if t.is_alive()]
    assert len(list(ld)) == len(ld) == 6


def test_uint8_output_keeps_flip_and_crop_deterministic(ds):
    a = collect(loader(ds["wds"], split="train", dtype="uint8", num_threads=1))
    b = collect(loader(ds["wds"], split="train", dtype="uint8", num_threads=2, prefetch=1))
    assert all(torch.equal(x, y) for x, y in zip(a[0] + a[1], b[0] + b[1]))  # thread count does not matter


@pytest.mark.parametrize(("kw", "match"), [
    (dict(batch_size=0), "batch_size"),
    (dict(dtype="float64"), "uint8"),
    (dict(backend="ffcv"), "kornia"),
    (dict(scale=(0.5, 0.1)), "scale"),
    (dict(on_error="ignore"), "skip"),
    (dict(num_threads=0), "num_threads"),
    (dict(seed=-1), "seed"),
    (dict(color_jitter=(0.4, 0.4, 0.4, 0.9)), "hue"),
    (dict(rank=2, world_size=2), "rank"),
    (dict(scale=0.5), r"scale=0.5 is not allowed; scale must be \(lo, hi\)"),  # not a raw TypeError
    (dict(ratio=1.0), r"ratio=1.0 is not allowed"),
    (dict(color_jitter=0.4), r"color_jitter=0.4 is not allowed; color_jitter must be None or four"),
    (dict(mean=0.5, std=0.5), r"mean/std=\(0.5, 0.5\) is not allowed; mean/std must be three finite values"),
    # DALI's and FFCV's 0-255 convention would normalise every image to about -2 (silently, before)
    (dict(mean=(123.675, 116.28, 103.53), std=(58.395, 57.12, 57.375)), "on the .0, 1. scale .* divide the 0-255"),
    (dict(std=(58.395, 57.12, 57.375)), "on the .0, 1. scale"),
    (dict(mean=(-0.1, 0.5, 0.5)), "on the .0, 1. scale"),
])
def test_bad_options_are_refused_eagerly(ds, kw, match):
    with pytest.raises(ValueError, match=match):
        loader(ds["wds"], split="val", **kw)


def test_unknown_option_and_unavailable_cuda(ds):
    with pytest.raises(TypeError, match="allowed"):
        loader(ds["wds"], split="val", batchsize=4)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="cuda"):
            loader(ds["wds"], split="val", device="cuda")


@pytest.mark.parametrize("train", [True, False])
def test_device_decode_plumbing_on_cpu(ds, train):
    """device_decode=True runs torchvision.io.decode_jpeg on `device` (nvJPEG on CUDA); on the CPU it runs
    libjpeg, so the whole path (host header parse, device decode, crop, resize, batch) is exercised here."""
    kw = dict(split="val", train=train, dtype="uint8", seed=4)
    host = torch.cat([x for x, _ in loader(ds["wds"], **kw)]).int()
    dev_ld = loader(ds["wds"], device_decode=True, **kw)
    dev_batches = collect(dev_ld)
    dev = torch.cat(dev_batches[0]).int()
    assert dev.shape == host.shape and torch.equal(torch.cat(dev_batches[1]),
                                                   torch.cat([y for _, y in loader(ds["wds"], **kw)]))
    # the same libjpeg-turbo decode on both paths (torchvision's on the CPU gives simplejpeg's pixels exactly), so
    # only the resize differs: a float interpolation rounded against torch's fixed-point uint8 kernel (measured:
    # max 1, mean 0.18); a crop or geometry off by one pixel would differ by several grey levels on average
    diff = (dev - host).abs()
    assert diff.max() <= 1 and diff.float().mean() < 0.25, (int(diff.max()), float(diff.float().mean()))


def test_a_state_that_is_not_a_dict_is_refused_by_name(ds):
    with pytest.raises(TypeError, match=r"^state_dict must be a dict, got list$"):
        loader(ds["wds"], split="val").load_state_dict([])
