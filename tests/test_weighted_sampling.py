"""Weighted sampling (`sample_weights=`, as `torch.utils.data.WeightedRandomSampler` draws): each train epoch draws the
split's size in samples with replacement, by weight; "balanced" weighs by 1 / class count (fastdata/planning/
weights.py, order.py, the image plan and readers); `fastdata.sample_labels` gives the labels in the weights' order."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_images import (
    TRAIN_COUNTS,
    image_sets_fixture,  # noqa: F401  (the image_sets fixture)
    loader,
)
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)
from http_server import FileServer

import fastdata
from fastdata.images.order import epoch_plan, shard_sequence
from fastdata.images.reader import SplitReader
from fastdata.planning.weights import Weighting, balanced, sample_weights, weighting_digest, weights_for

N = sum(TRAIN_COUNTS)  # 12 train samples, in shards of 4
W = np.array([1, 0, 2, 1, 0, 3, 1, 1, 0, 2, 1, 4], dtype=np.float64)


def weighted_sequence(full: np.ndarray, weights: np.ndarray, *, seed: int, epoch: int) -> np.ndarray:
    return Weighting(weights, len(weights)).sequence(full, seed=seed, epoch=epoch)


@pytest.fixture(scope="module")
def ds(image_sets: dict[str, Path]) -> Path:
    return image_sets["wds"]


def _pass(ld) -> tuple[list[int], list[torch.Tensor], list[int]]:
    """(global index of each row, its image, its label) over one pass."""
    rows, images, labels = [], [], []
    for x, y in ld:
        rows += ld.backend.last_rows
        images += [img.clone() for img in x]
        labels += y.tolist()
    return rows, images, labels


# ---------------------------------------------------------------------------------------------- the draws
def test_an_epoch_draws_n_samples_by_weight_in_the_order_of_its_shards():
    full = shard_sequence((4, 4, 4), seed=5, epoch=2)
    seq = weighted_sequence(full, W, seed=5, epoch=2)
    assert len(seq) == N and np.array_equal(seq, weighted_sequence(full, W, seed=5, epoch=2))
    items = seq % N
    assert not np.isin(items, np.flatnonzero(W == 0)).any()
    kept = [i for i in full.tolist() if i in set(items.tolist())]
    assert list(dict.fromkeys(items.tolist())) == kept  # the shard sequence's order, each sample's repeats together
    for i in set(items.tolist()):  # the k-th repeat of sample i is k * N + i
        assert sorted(seq[items == i].tolist()) == [k * N + i for k in range(int((items == i).sum()))]
    assert not np.array_equal(seq, weighted_sequence(full, W, seed=5, epoch=3))
    assert not np.array_equal(seq, weighted_sequence(full, W, seed=6, epoch=2))


def test_draws_follow_the_weights_over_many_epochs():
    full = np.arange(N, dtype=np.int64)
    counts = np.zeros(N)
    for epoch in range(600):
        counts += np.bincount(weighted_sequence(full, W, seed=1, epoch=epoch) % N, minlength=N)
    share = counts / counts.sum()
    assert np.abs(share - W / W.sum()).max() < 0.01  # 7,200 draws: about 4 standard errors
    assert counts[W == 0].sum() == 0


@pytest.mark.parametrize("scale", [1e308, 1e-320, 1.0])
def test_the_draws_do_not_depend_on_the_weights_scale(scale):
    """Weights whose sum overflows (1e308 each) or that are subnormal draw as the same weights near 1 do: they had
    sent every draw to the last sample, the sum being infinite."""
    w = np.array([1.0, 1.7, 1.0, 1.7])  # times 1e308: each finite, their sum not
    got = Weighting(w * scale, 4000).draws(seed=3, epoch=0)
    assert got.sum() == 4000 and np.abs(got / 4000 - w / w.sum()).max() < 0.03


def test_balanced_weights_are_one_over_the_class_count():
    weights = balanced(np.array([0, 0, 1, 2, 2, 2]))
    assert weights.tolist() == [0.5, 0.5, 1.0] + [1 / 3] * 3 and not weights.flags.writeable
    full = np.arange(6, dtype=np.int64)
    labels = np.array([0, 0, 1, 2, 2, 2])
    drawn = np.concatenate([weighted_sequence(full, balanced(labels), seed=0, epoch=e) % 6 for e in range(500)])
    per_class = np.bincount(labels[drawn]) / len(drawn)
    assert np.abs(per_class - 1 / 3).max() < 0.02
    with pytest.raises(ValueError, match="2 of the split's 3 samples have none"):
        balanced(np.array([-1, 0, -1]))
    with pytest.raises(ValueError, match="0 of the split's 0 samples"):
        balanced(np.zeros(0))


@pytest.mark.parametrize("value", [[1, 2.5, 0], np.array([0, 3], dtype=np.uint8), torch.tensor([0.5, 0.25]), [2.0]],
                         ids=["list", "uint8", "tensor", "one sample"])
def test_weights_are_held_as_read_only_floats(value):
    out = sample_weights(value)
    assert out.dtype == np.float64 and not out.flags.writeable
    assert out.tolist() == [float(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]
    assert sample_weights("balanced") == "balanced"


@pytest.mark.parametrize("value", [[], [[1, 2], [3, 4]], ["a", "b"], [1, -1], [1, float("nan")], [float("inf"), 1],
                                   [0, 0], [True, False], "uniform", None.__class__, {1: 2}, list(range(1, 300))[::-1]
                                   + [-5]],
                         ids=["empty", "2d", "text", "negative", "nan", "inf", "all-zero", "mask", "name", "type",
                              "dict", "long"])
def test_bad_weights_are_refused_in_full(value):
    with pytest.raises(ValueError) as err:
        sample_weights(value)
    message = str(err.value)
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."  # a long value is cut
    assert message == (f"sample_weights={shown} is not allowed; sample_weights must be 'balanced' or one finite "
                       "number >= 0 per sample of the split (manifest order), not all 0 (not a mask: indices= "
                       "selects a subset)")


@pytest.mark.parametrize("first, cut", [(-10, False), (-100, True)])  # reprs of 80 and 81 characters
def test_a_value_is_shown_whole_up_to_80_characters(first, cut):
    value = [first] + [0] * 25
    assert len(repr(value)) == (81 if cut else 80)
    with pytest.raises(ValueError) as err:
        sample_weights(value)
    assert str(err.value).startswith(f"sample_weights={repr(value)[:77] + '...' if cut else repr(value)} is not")


def test_what_a_loader_refuses_is_refused_before_labels_are_read():
    def labels():
        raise AssertionError("labels read")

    rules = dict(per_epoch=None, train=True, mixture=False, subset=False, labels=labels)
    for changed, message in [
        ({"train": False}, "sample_weights draw the samples of training epochs; a loader that reads every sample "
                           "once, in order (train=False; for tokens, shuffle=False), takes none"),
        ({"mixture": True}, "sample_weights weigh the samples of one dataset; a mixture weighs its datasets "
                            "(weights=)"),
        ({"subset": True}, "give indices= or sample_weights=, not both: a weight of 0 leaves a sample out"),
    ]:
        with pytest.raises(ValueError) as err:
            weights_for("balanced", 12, **{**rules, **changed})
        assert str(err.value) == message
    with pytest.raises(ValueError) as err:
        weights_for(np.ones(3), 12, **rules)
    assert str(err.value) == ("sample_weights holds 3 weights, but the split has 12 samples (one weight per sample, "
                              "in the manifest's order)")
    got = weights_for("balanced", 3, **{**rules, "labels": lambda: np.array([0, 1, 1])})
    assert got.weights.tolist() == [1, .5, .5] and got.per_epoch == 3
    assert weights_for(np.ones(3), 3, **{**rules, "per_epoch": 7}).per_epoch == 7


def test_the_digest_names_the_weights_and_the_epoch_length():
    data = "ab" * 16
    assert weighting_digest(data, None) == data and weighting_digest(None, Weighting(W, N)) is None
    one = weighting_digest(data, Weighting(W, N))
    others = {weighting_digest(data, Weighting(W * 2, N)), weighting_digest(data, Weighting(W, N + 1))}
    assert len(one) == 32 and one not in others and len(others) == 2 and one != data
    assert one == weighting_digest(data, Weighting(W.copy(), N))
    # pinned: a state saved by this release resumes in the next only while the digest of its weights stays the same
    assert weighting_digest(data, Weighting(np.array([1.0, 2.0]), 2)) == "f4b4e8169965c327a284b9975bd21736"


# ---------------------------------------------------------------------------------------------- the loaders
@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_both_backends_read_the_plan_of_the_weights(ds, backend):
    ld = loader(ds, train=True, backend=backend, sample_weights=W, seed=4)
    for epoch in range(2):
        ld.set_epoch(epoch)
        rows, _, labels = _pass(ld)
        plan = epoch_plan((4, 4, 4), train=True, batch_size=4, keep_last=False, seed=4, epoch=epoch, rank=0,
                          world_size=1, weights=Weighting(W, N))
        assert rows == (plan.sequence % N).tolist() and len(rows) == len(ld) * 4 == N
        assert set(rows).isdisjoint(np.flatnonzero(W == 0).tolist())
        assert labels == fastdata.sample_labels(ds)[rows].tolist()
    ld.close()


def test_both_backends_crop_the_repeats_alike(ds):
    """The repeats' ids k * N + i draw the same crop and flip on both backends (one plan, one draw function)."""
    passes = {}
    for backend in ("kornia", "dali"):
        ld = loader(ds, train=True, backend=backend, dtype="uint8", sample_weights=W, seed=8)
        passes[backend] = _pass(ld)
        ld.close()
    (rows_k, images_k, _), (rows_d, images_d, _) = passes["kornia"], passes["dali"]
    assert rows_k == rows_d and len(set(rows_k)) < len(rows_k)  # repeats among them
    for a, b in zip(images_k, images_d):
        diff = (a.int() - b.int()).abs()
        assert diff.float().mean() < 0.5 and diff.max() <= 8, (float(diff.float().mean()), int(diff.max()))


def test_a_dali_hooks_random_differs_between_repeats(ds):
    """A dali_augment hook's per-sample `random` is drawn by each repeat's own id (k * N + i)."""
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types

    from fastdata.images.dali_graph import random_draws

    def first_draw(images, random):
        return images * 0 + fn.cast(random[0] * 250.0, dtype=types.UINT8)

    ld = loader(ds, train=True, backend="dali", dtype="uint8", sample_weights=W, seed=9, dali_augment=first_draw)
    levels = [float(x.flatten()[0]) for x in _pass(ld)[1]]
    ld.close()
    plan = epoch_plan((4, 4, 4), train=True, batch_size=4, keep_last=False, seed=9, epoch=0, rank=0, world_size=1,
                      weights=Weighting(W, N))
    want = random_draws(9, 0, plan.sequence[:len(levels)])[:, 0] * np.float32(250.0)
    assert np.abs(np.array(levels) - want).max() <= 0.5 and (plan.sequence >= N).any()


def test_the_repeats_of_a_sample_get_their_own_crops(ds):
    ld = loader(ds, train=True, sample_weights=np.eye(1, N, 5)[0] + 1e-9, seed=0)  # sample 5 nearly always
    rows, images, _ = _pass(ld)
    fives = [img for r, img in zip(rows, images) if r == 5]
    assert len(fives) >= 10
    assert len({img.numpy().tobytes() for img in fives}) == len(fives)  # each repeat its own crop and flip
    ld.close()


def test_balanced_epochs_draw_the_classes_alike(ds):
    labels = fastdata.sample_labels(ds)
    assert np.bincount(labels).tolist() == list(TRAIN_COUNTS)
    ld = loader(ds, train=True, sample_weights="balanced", seed=1)
    drawn = []
    for epoch in range(60):  # the plans alone: what each epoch reads
        drawn += (ld.backend.plan(epoch).sequence % N).tolist()
    share = np.bincount(labels[drawn], minlength=3) / len(drawn)
    assert np.abs(share - 1 / 3).max() < 0.05  # unweighted: 5/12, 3/12, 4/12
    ld.close()


def test_ranks_cut_their_shares_from_one_weighted_epoch(ds):
    plan = epoch_plan((4, 4, 4), train=True, batch_size=2, keep_last=False, seed=2, epoch=1, rank=0, world_size=1,
                      window=None, weights=Weighting(W, N))
    shares = []
    for rank in range(2):
        ld = loader(ds, train=True, sample_weights=W, seed=2, batch_size=2, rank=rank, world_size=2,
                    shuffle_window=None)
        ld.set_epoch(1)
        shares.append(_pass(ld)[0])
        assert len(ld) == 3
        ld.close()
    assert sorted(shares[0] + shares[1]) == sorted((plan.sequence % N).tolist())


def test_a_resume_gives_the_rest_of_the_epoch_and_needs_the_same_weights(ds):
    first = loader(ds, train=True, sample_weights=W, seed=3)
    first.set_epoch(2)
    it = iter(first)
    next(it)
    state = first.state_dict()
    rest = [(x.clone(), y.clone()) for x, y in it]
    first.close()
    again = loader(ds, train=True, sample_weights=W.tolist(), seed=3)
    again.load_state_dict(state)
    got = [(x.clone(), y.clone()) for x, y in again]
    assert len(got) == len(rest) == 2
    assert all(torch.equal(a, b) and torch.equal(c, d) for (a, c), (b, d) in zip(got, rest))
    again.close()
    for other in ({"sample_weights": W + 1}, {}):
        refused = loader(ds, train=True, seed=3, **other)
        with pytest.raises(ValueError, match="other data.*sample_weights="):
            refused.load_state_dict(state)
        refused.close()


@pytest.mark.parametrize("options, message", [
    ({"train": False, "sample_weights": W}, "training epochs"),
    ({"sample_weights": W, "indices": [1, 2]}, "not both"),
    ({"sample_weights": W[:5]}, "holds 5 weights, but the split has 12 samples"),
    ({"sample_weights": [0] * N}, "not all 0"),
])
def test_the_loader_refuses_weights_it_cannot_draw_with(ds, options, message):
    with pytest.raises(ValueError, match=message):
        loader(ds, **options)


def test_a_mixture_takes_no_sample_weights(image_sets):
    with pytest.raises(ValueError, match="a mixture weighs its datasets"):
        fastdata.loader([image_sets["wds"], image_sets["arrow"]], batch_size=4, image_size=32, device="cpu",
                        backend="kornia", sample_weights=np.ones(2 * N))


def test_balanced_needs_classes(tmp_path, ds):
    from helpers import convert_images, make_image

    for i in range(4):
        make_image(tmp_path / "src" / f"img_{i}.jpg", size=(40, 40), seed=i)
    convert_images(tmp_path / "src", tmp_path / "unlabeled")
    assert fastdata.sample_labels(tmp_path / "unlabeled").tolist() == [-1] * 4
    with pytest.raises(ValueError, match="4 of the split's 4 samples have none"):
        loader(tmp_path / "unlabeled", sample_weights="balanced")


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_samples_per_epoch_sets_the_draws_of_an_epoch(ds, backend):
    ld = fastdata.loader(ds, batch_size=4, image_size=32, device="cpu", backend=backend, num_threads=2,
                         sample_weights="balanced", samples_per_epoch=30, seed=6)
    rows, _, labels = _pass(ld)
    assert len(ld) == 7 and len(rows) == 28 and ld.num_samples == 28  # 30 draws, drop_last: 7 batches of 4
    plan = epoch_plan((4, 4, 4), train=True, batch_size=4, keep_last=False, seed=6, epoch=0, rank=0, world_size=1,
                      weights=Weighting(balanced(fastdata.sample_labels(ds)), 30))
    assert rows == (plan.sequence[:28] % N).tolist() and len(plan.sequence) == 30
    state = ld.state_dict()
    assert state["num_samples"] == 30
    ld.close()
    other = fastdata.loader(ds, batch_size=4, image_size=32, device="cpu", backend=backend,
                            sample_weights="balanced", samples_per_epoch=31, seed=6)
    with pytest.raises(ValueError, match="cannot resume"):
        other.load_state_dict(state)
    other.close()


@pytest.mark.parametrize("value, message", [
    (0, "samples_per_epoch=0 is not allowed; samples_per_epoch must be an integer >= 1 (the samples an epoch draws)"),
    (2.5, "samples_per_epoch=2.5 is not allowed"), (True, "samples_per_epoch=True is not allowed"),
    (12, "samples_per_epoch sets how many samples sample_weights= draw an epoch (or how long a mixture's epoch is); "
         "give sample_weights too"),
])
def test_a_bad_epoch_length_is_refused(ds, value, message):
    weights = {} if isinstance(value, int) and value == 12 else {"sample_weights": W}
    with pytest.raises(ValueError) as err:
        fastdata.loader(ds, batch_size=4, samples_per_epoch=value, **weights)
    assert str(err.value).startswith(message)


# ---------------------------------------------------------------------------------------------- labels and reading
def test_sample_labels_are_the_labels_the_loader_reads(image_sets):
    for kind in ("wds", "arrow"):
        ld = loader(image_sets[kind], train=False, batch_size=4)
        rows, _, labels = _pass(ld)
        ld.close()
        got = fastdata.sample_labels(image_sets[kind])
        assert got.dtype == np.int64 and got[rows].tolist() == labels and len(got) == N
    assert len(fastdata.sample_labels(image_sets["wds"], split="val")) == 7
    with pytest.raises(ValueError) as err:
        fastdata.sample_labels("https://example.invalid/ds/")
    assert str(err.value) == ("https://example.invalid/ds/: sample_labels reads every shard of a split, so it takes a "
                              "local dataset; run it on a local copy, or keep the labels when you convert")


def test_sample_labels_read_token_datasets_too(fortunes_tokens, tmp_path):
    from conftest_dicom import small_volumes
    from conftest_text import read_rows

    assert fastdata.sample_labels(fortunes_tokens).tolist() == [r["label"] for r in read_rows(fortunes_tokens)]
    with pytest.raises(fastdata.ManifestError, match="of kind 'dicom' .volumes carry masks, not a class each.$"):
        fastdata.sample_labels(small_volumes(tmp_path, count=1))


def _cls_entry(ds: Path, shard: str, line: int) -> tuple[int, int]:
    """(offset, size) of the cls member of sample `line` of a tar shard, from its .idx."""
    fields = (ds / shard).with_suffix(".idx").read_text().splitlines()[1 + line].split()
    i = fields.index("cls")
    return int(fields[i + 1]), int(fields[i + 2])


def test_a_bad_or_truncated_label_names_its_shard(tmp_path, ds):
    from fastdata.dataset import open_dataset

    copy = tmp_path / "ds"
    shutil.copytree(ds, copy)
    shard = copy / "train-000002.tar"
    data = bytearray(shard.read_bytes())
    offset, size = _cls_entry(copy, "train-000002.tar", 1)
    data[offset:offset + size] = b"x" * size
    shard.write_bytes(bytes(data))
    with pytest.raises(fastdata.ShardError, match="train-000002.tar has a bad class label"):
        fastdata.sample_labels(copy, split="train")
    shutil.copy(ds / "train-000002.tar", shard)
    reader = SplitReader(open_dataset(copy))
    reader.read(8)  # shard 2 is open
    shard.write_bytes(shard.read_bytes()[:offset])  # then cut short
    with pytest.raises(fastdata.ShardError, match="train-000002.tar is truncated at sample"):
        reader.labels()
    reader.close()


def test_the_reader_reads_a_repeat_as_its_sample(ds):
    from fastdata.dataset import open_dataset

    reader = SplitReader(open_dataset(ds))
    for index in (0, 5, 11):
        raw, repeat = reader.read(index), reader.read(3 * N + index)
        assert bytes(raw.data) == bytes(repeat.data) and repeat.index == index and repeat.key == raw.key
    with pytest.raises(IndexError, match="-1 out of range"):
        reader.read(-1)
    reader.close()


# ---------------------------------------------------------------------------------------------- remote
def test_a_remote_dataset_draws_as_the_local_one(ds, tmp_path):
    pytest.importorskip("obstore")
    shutil.copytree(ds, tmp_path / "www" / "ds")
    with FileServer(tmp_path / "www") as server:
        remote = loader(server.url + "ds/", train=True, sample_weights=W, seed=5, cache_dir=tmp_path / "cache",
                        cache_limit=64 << 20)
        local = loader(ds, train=True, sample_weights=W, seed=5)
        got, want = _pass(remote), _pass(local)
        assert got[0] == want[0] and got[2] == want[2]
        assert all(torch.equal(a, b) for a, b in zip(got[1], want[1]))
        remote.close()
        local.close()
        with pytest.raises(ValueError, match="fetches every shard"):
            loader(server.url + "ds/", train=True, sample_weights="balanced", cache_dir=tmp_path / "cache")
