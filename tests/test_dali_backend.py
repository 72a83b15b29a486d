"""DALI backend on CPU: output contract, epoch/rank rules, determinism, resume, errors, GPU plumbing.

The backend executes fastdata's plan (the kornia backend's), so keys come from `backend.last_keys`."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
import torch

pytest.importorskip("nvidia.dali")

from conftest_dali import backend, close_backends, corrupt_jpeg, key_of, make_dataset, manifest_keys  # noqa: E402, F401  (close_backends: autouse)

from fastdata.errors import ShardError  # noqa: E402
from fastdata.images.dali_graph import graph_args  # noqa: E402
from fastdata.images.options import IMAGENET_MEAN, IMAGENET_STD, ImageLoaderOptions  # noqa: E402
from fastdata.images.order import rank_block  # noqa: E402
from fastdata.manifest import read_manifest  # noqa: E402

N = 27


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("dali"))


def run_epoch(b) -> tuple[list[torch.Tensor], list[torch.Tensor], list[list[str]]]:
    images, labels, keys = [], [], []
    for x, y in b:
        images.append(x)
        labels.append(y)
        keys.append([key_of(k) for k in b.last_keys])
    return images, labels, keys


@pytest.mark.parametrize("train,dtype,channels_last", [
    (True, "float32", True), (True, "uint8", False), (False, "bfloat16", True), (False, "float16", False),
    (True, "bfloat16", False)])
def test_output_contract(ds: Path, train: bool, dtype: str, channels_last: bool) -> None:
    b = backend(ds, train=train, dtype=dtype, channels_last=channels_last, color_jitter=(0.2, 0.2, 0.2, 0.05))
    images, labels, _ = run_epoch(b)
    assert len(images) == len(b) > 0
    want = {"float32": torch.float32, "uint8": torch.uint8, "bfloat16": torch.bfloat16, "float16": torch.float16}
    for x, y in zip(images, labels):
        assert x.shape == (4, 3, 32, 32) and x.dtype == want[dtype] and x.device.type == "cpu"
        assert y.shape == (4,) and y.dtype == torch.int64
        if channels_last:
            assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
        else:
            assert x.is_contiguous()
    real = torch.cat([x[y >= 0] for x, y in zip(images, labels)]).float()
    if dtype == "uint8":
        assert real.min() >= 0 and real.max() <= 255 and real.max() > 100  # raw pixels, not normalised
    else:
        lo = min((0 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD))
        hi = max((1 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD))
        assert lo - 0.02 <= real.min() < 0 < real.max() <= hi + 0.02
        per_channel = real.mean(dim=(0, 2, 3))
        assert per_channel.abs().max() < 1.5  # normalised around 0, not 0..255


def test_eval_visits_manifest_order_with_padding(ds: Path) -> None:
    b = backend(ds, train=False)
    images, labels, keys = run_epoch(b)
    expected = manifest_keys(ds)
    assert len(b) == len(images) == 7 and b.num_samples == N
    flat = torch.cat(labels).tolist()
    assert flat[:N] == [lab for _, lab in expected] and flat[N:] == [-100]
    assert [k for batch in keys for k in batch] == [k for k, _ in expected]
    assert torch.count_nonzero(images[-1][3]) == 0 and torch.count_nonzero(images[-1][2]) > 0
    counts = Counter(lab for lab in flat if lab >= 0)
    assert [counts[c] for c in range(3)] == list(read_manifest(ds).splits["train"].class_counts)
    # the eval pipeline is reused across epochs and gives the same epoch again
    again = run_epoch(b)
    assert torch.equal(torch.cat(again[1]), torch.cat(labels))
    assert all(torch.equal(x, y) for x, y in zip(again[0], images))


@pytest.mark.parametrize("train,dtype", [(True, "float32"), (False, "uint8")])
def test_held_batches_stay_valid_while_later_batches_are_produced(ds: Path, train: bool, dtype: str) -> None:
    # CPU batches are zero-copy views of DALI's output buffers: they must outlive later runs, the
    # pipeline rebuild of the next epoch and the backend itself
    b = backend(ds, train=train, dtype=dtype, prefetch=3)
    held = []
    for epoch in range(2):
        b.set_epoch(epoch)
        held += [(x, x.clone(), y) for x, y in b]
    del b
    assert len(held) == (12 if train else 14)
    assert all(torch.equal(x, copy) for x, copy, _ in held)
    assert all(torch.count_nonzero(x[y < 0]) == 0 for x, _, y in held)  # eval padding rows stayed zero


def test_eval_drop_last_repeats_the_same_full_batches(ds: Path) -> None:
    b = backend(ds, train=False, drop_last=True)
    first, second = run_epoch(b), run_epoch(b)
    assert len(b) == 6 and b.num_samples == 24 and first[2] == second[2]
    assert [k for batch in first[2] for k in batch] == [k for k, _ in manifest_keys(ds)][:24]


def test_train_epoch_is_a_permutation_with_manifest_counts(ds: Path) -> None:
    b = backend(ds, train=True, batch_size=9)
    _, labels, keys = run_epoch(b)
    assert len(b) == 3 and b.num_samples == N
    assert sorted(k for batch in keys for k in batch) == sorted(k for k, _ in manifest_keys(ds))
    counts = Counter(torch.cat(labels).tolist())
    assert [counts[c] for c in range(3)] == list(read_manifest(ds).splits["train"].class_counts)


def test_train_keep_last_yields_a_final_partial_batch(ds: Path) -> None:
    b = backend(ds, train=True, batch_size=4, drop_last=False, channels_last=True)
    images, labels, keys = run_epoch(b)
    assert len(b) == len(images) == 7 and [len(y) for y in labels] == [4] * 6 + [3]
    assert images[-1].shape == (3, 3, 32, 32) and images[-1].is_contiguous(memory_format=torch.channels_last)
    assert sorted(k for batch in keys for k in batch) == sorted(k for k, _ in manifest_keys(ds))
    b.set_epoch(1)
    assert b.state_dict()["epoch"] == 1 and b.state_dict()["batch"] == 0


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_eval_ranks_disjoint_complete_equal(ds: Path, world_size: int) -> None:
    expected = [k for k, _ in manifest_keys(ds)]
    seen, lengths = [], set()
    for rank in range(world_size):
        b = backend(ds, train=False, rank=rank, world_size=world_size, batch_size=3)
        _, labels, keys = run_epoch(b)
        lengths.add(len(labels))
        real = [k for batch, lab in zip(keys, labels) for k, y in zip(batch, lab.tolist()) if y >= 0]
        lo, hi = rank_block(N, rank, world_size)
        assert real == expected[lo:hi]  # contiguous block in manifest order
        assert b.num_samples == hi - lo
        seen.extend(real)
    assert seen == expected  # disjoint and complete
    assert lengths == {math.ceil(math.ceil(N / world_size) / 3)}


def test_eval_more_ranks_than_samples_pads_empty_ranks(ds: Path) -> None:
    empty = backend(ds, train=False, rank=0, world_size=N + 1)  # block [0, 0): nothing but padding
    images, labels, _ = run_epoch(empty)
    assert len(empty) == 1 and empty.num_samples == 0 and labels[0].tolist() == [-100] * 4
    assert torch.count_nonzero(images[0]) == 0
    last = backend(ds, train=False, rank=N, world_size=N + 1)  # block [26, 27): the last sample
    _, labels, keys = run_epoch(last)
    assert labels[0].tolist()[1:] == [-100] * 3 and keys[0] == [manifest_keys(ds)[-1][0]]


@pytest.mark.parametrize("world_size", [2, 4])
def test_train_ranks_equal_full_batches_and_disjoint(ds: Path, world_size: int) -> None:
    seen: list[str] = []
    for rank in range(world_size):
        b = backend(ds, train=True, rank=rank, world_size=world_size, batch_size=2)
        images, _, keys = run_epoch(b)
        assert len(b) == len(images) == (N // world_size) // 2
        assert all(x.shape[0] == 2 for x in images)
        seen.extend(k for batch in keys for k in batch)
    assert len(seen) == len(set(seen))


def test_set_epoch_is_deterministic(ds: Path) -> None:
    a, b = backend(ds, seed=5), backend(ds, seed=5)
    first = run_epoch(a)
    assert torch.equal(torch.cat(first[1]), torch.cat(run_epoch(b)[1]))
    assert all(torch.equal(x, y) for x, y in zip(first[0], run_epoch(b)[0]))
    a.set_epoch(1)
    second = run_epoch(a)
    assert first[2] != second[2]
    a.set_epoch(0)
    assert run_epoch(a)[2] == first[2]
    assert run_epoch(backend(ds, seed=6))[2] != first[2]


@pytest.mark.parametrize("train", [True, False])
def test_resume_mid_epoch(ds: Path, train: bool) -> None:
    jitter = (0.3, 0.3, 0.3, 0.05)
    full = run_epoch(backend(ds, train=train, seed=3, color_jitter=jitter))
    a = backend(ds, train=train, seed=3, color_jitter=jitter)
    a.set_epoch(0)
    it = iter(a)
    for _ in range(2):
        next(it)
    state = json.loads(json.dumps(a.state_dict()))
    assert state["batch"] == 2 and state["cursor"] == 8
    fresh = backend(ds, train=train, seed=3, color_jitter=jitter)
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state  # a loaded, not yet iterated loader still stands there
    rest = run_epoch(fresh)
    assert len(rest[0]) == len(full[0]) - 2
    assert rest[2] == full[2][2:]
    assert all(torch.equal(x, y) for x, y in zip(rest[1], full[1][2:]))
    assert all(torch.equal(x, y) for x, y in zip(rest[0], full[0][2:]))  # augmentation is per sample: bitwise


def test_a_kornia_state_resumes_dali_at_the_same_sample(ds: Path) -> None:
    from conftest_images import loader

    kornia = loader(ds, split="train", seed=4, batch_size=4, image_size=32)
    it = iter(kornia)
    next(it)
    state = kornia.state_dict()
    rest = []
    for _ in it:
        rest.append([key_of(k) for k in kornia.backend.last_keys])
    dali = backend(ds, seed=4)
    dali.load_state_dict(state)
    assert run_epoch(dali)[2] == rest and len(rest) == 5


def test_load_state_from_other_settings_is_refused(ds: Path) -> None:
    state = backend(ds, seed=1).state_dict()
    with pytest.raises(ValueError, match="seed"):
        backend(ds, seed=2).load_state_dict(state)
    with pytest.raises(ValueError, match="batch"):
        backend(ds, seed=1).load_state_dict({**state, "batch": 10**6})
    with pytest.raises(ValueError, match="integer"):
        backend(ds, seed=1).load_state_dict({**state, "batch": -5})


@pytest.mark.parametrize("train,mode", [(True, "garbage"), (False, "garbage"), (False, "tail")])
def test_corrupt_jpeg_error_names_shard_and_key(ds: Path, tmp_path: Path, train: bool, mode: str) -> None:
    # garbage: DALI's message names no sample, the backend finds it; tail: DALI names it itself
    bad = tmp_path / "bad"
    shutil.copytree(ds, bad)
    key = corrupt_jpeg(bad, "train-000002.tar", 1, mode=mode)
    with pytest.raises(ShardError, match=rf"corrupt JPEG in \S*train-000002\.tar, key {key}") as err:
        run_epoch(backend(bad, train=train))
    if mode == "tail":  # found by DALI's decoder: the message says how to go on without it
        assert str(err.value).endswith("; pass on_error='skip' to leave corrupt samples out")


def test_a_dali_failure_no_host_decoder_explains_names_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """When libjpeg-turbo/Pillow decode every sample DALI failed on, the error names the batch's shards (the
    first four) and DALI's message on one line."""
    from types import SimpleNamespace

    import fastdata.images.dali_backend as dali_backend

    monkeypatch.setattr(dali_backend, "decode_problem", lambda data: None)
    batch = [SimpleNamespace(index=i, raw=SimpleNamespace(data=b"x", shard=Path(f"s{i % 5}.tar"))) for i in range(9)]
    fake = SimpleNamespace(_opts=SimpleNamespace(on_error="raise"))
    err = dali_backend.DaliBackend._diagnose(fake, batch, RuntimeError("nvImageCodec failure:\n  '#4'"))
    assert str(err) == ("DALI failed on a batch of 9 samples from ['s0.tar', 's1.tar', 's2.tar', 's3.tar'] ...: "
                        "nvImageCodec failure: '#4'")
    few = dali_backend.DaliBackend._diagnose(fake, batch[:4], RuntimeError("x"))
    assert str(few) == "DALI failed on a batch of 4 samples from ['s0.tar', 's1.tar', 's2.tar', 's3.tar']: x"


@pytest.mark.parametrize("train,mode", [(True, "garbage"), (True, "tail"), (False, "garbage"), (False, "tail")])
def test_corrupt_jpeg_skipped_and_counted(ds: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                          train: bool, mode: str) -> None:
    # garbage: the header is unreadable, found while preparing; tail: only DALI's decoder fails on it
    bad = tmp_path / "bad"
    shutil.copytree(ds, bad)
    key = corrupt_jpeg(bad, "train-000002.tar", 1, mode=mode)
    b = backend(bad, train=train, on_error="skip", batch_size=4, drop_last=False)
    with caplog.at_level(logging.WARNING, logger="fastdata.images.samples"):
        _, labels, keys = run_epoch(b)
    assert b.skipped == 1 and key in caplog.text and "pass on_error" not in caplog.text  # already skipping
    real = [k for batch in keys for k in batch]
    assert key not in real and len(set(real)) == N - 1
    if train:  # refilled from the following samples (wrapping to the start at the end): same full batches
        assert [len(y) for y in labels] == [4] * 6 + [3] and len(real) == N
    else:  # the corrupt sample's row became padding: same batches, one more -100
        assert int((torch.cat(labels) == -100).sum()) == 2 and len(labels) == 7
        assert real == [k for k, _ in manifest_keys(bad) if k != key] and len(real) == N - 1


@pytest.mark.parametrize("train", [True, False])
def test_the_graph_runs_one_batch_while_the_next_is_fed(ds: Path, monkeypatch: pytest.MonkeyPatch,
                                                        train: bool) -> None:
    """The producer feeds and schedules batch b + 1 before it takes batch b's output (production.py's `_produce`,
    lag 1), so DALI's executor decodes while Python prepares; every input but the bytes is one array per batch."""
    events: list[str] = []
    fed: list[object] = []

    class Spy:
        def __init__(self, pipe) -> None:
            self.pipe = pipe

        def feed_input(self, name, data):
            fed.append((name, data))
            return self.pipe.feed_input(name, data)

        def schedule_run(self):
            events.append("run")
            return self.pipe.schedule_run()

        def outputs(self):
            events.append("out")
            return self.pipe.outputs()

    b = backend(ds, train=train, drop_last=False)
    built, spies = b._pipeline, {}  # this backend's only: another test's may still be producing (overlap.py)
    monkeypatch.setattr(b, "_pipeline", lambda: spies.setdefault(id(built()), Spy(built())))
    _, labels, _ = run_epoch(b)
    batches = len(labels)  # then the producer goes on into the next epoch (overlap.py): more events follow
    assert batches == 7 and events[:2 * batches] == ["run"] + ["run", "out"] * (batches - 1) + ["out"], events
    assert all(isinstance(data, list) == (name == "encoded") for name, data in fed)
    assert {len(data) for _, data in fed} == {4, 3}  # whole batches (the last of 27 samples holds 3)


@pytest.mark.parametrize("train", [True, False])
def test_a_break_leaves_no_scheduled_batch_behind(ds: Path, train: bool) -> None:
    """Leaving an epoch after 2 batches leaves batch 3 scheduled in the graph (lag 1); it is taken off, so the
    same epoch iterated again starts with its own first batch, not with that one."""
    b = backend(ds, train=train, seed=5)
    it = iter(b)
    next(it), next(it)
    it.close()  # the producer stops: what it had submitted is not delivered
    again, labels, keys = run_epoch(b)
    fresh, fresh_labels, fresh_keys = run_epoch(backend(ds, train=train, seed=5))
    assert keys == fresh_keys and all(torch.equal(x, y) for x, y in zip(again, fresh))
    assert all(torch.equal(x, y) for x, y in zip(labels, fresh_labels))


@pytest.mark.parametrize("fails", ["convert", "targets"])
def test_a_batch_failing_after_its_output_was_taken_raises_its_own_error(
        ds: Path, monkeypatch: pytest.MonkeyPatch, fails: str) -> None:
    """An error after `_collect` took a batch's output (handing it to torch, its padding, or a batch's targets)
    reaches the user as it is, and the pipeline is left with nothing scheduled. Before, stopping then took that
    output again, and DALI's StopIteration ("generator raised StopIteration") replaced the error."""
    calls = []

    def broken(*args):
        calls.append(1)
        if len(calls) == 2:  # the second batch: the graph has the third scheduled (lag 1)
            raise ValueError("no room for this batch")
        return convert(*args) if fails == "convert" else None

    b = backend(ds, train=False)
    convert = b._convert
    if fails == "convert":  # this backend's alone: another test's backend may still be producing ahead
        monkeypatch.setattr(b, "_convert", broken)
    else:
        b.targets = lambda raws, epoch: broken()
    with pytest.raises(ValueError, match="^no room for this batch$"):
        run_epoch(b)
    monkeypatch.undo()
    b.targets = None
    images, labels, keys = run_epoch(b)  # the same backend again: its graph returns this epoch's own batches
    fresh, fresh_labels, fresh_keys = run_epoch(backend(ds, train=False))
    assert keys == fresh_keys and all(torch.equal(x, y) for x, y in zip(images, fresh))
    assert all(torch.equal(x, y) for x, y in zip(labels, fresh_labels))


@pytest.mark.parametrize("train", [True, False])
def test_corrupt_jpegs_found_one_batch_late_give_the_batches_of_a_synchronous_run(
        ds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, train: bool) -> None:
    """With the graph one batch behind (lag 1), DALI reports a bad JPEG of batch b after batch b + 1 was fed;
    production restarts at batch b. The result is exactly that of feeding one batch at a time (lag 0)."""
    from fastdata.images.dali_backend import DaliBackend

    bad = tmp_path / "bad"
    shutil.copytree(ds, bad)
    for shard, line in (("train-000001.tar", 2), ("train-000002.tar", 0), ("train-000004.tar", 4)):
        corrupt_jpeg(bad, shard, line, mode="tail")  # only DALI's decoder finds these
    lagged = run_epoch(backend(bad, train=train, on_error="skip", seed=2))
    monkeypatch.setattr(DaliBackend, "_lag", 0)
    synchronous = run_epoch(backend(bad, train=train, on_error="skip", seed=2))
    assert lagged[2] == synchronous[2] and len(lagged[0]) == len(synchronous[0])
    assert all(torch.equal(a, b) for a, b in zip(lagged[0], synchronous[0]))
    assert all(torch.equal(a, b) for a, b in zip(lagged[1], synchronous[1]))
    assert sum(len(k) for k in lagged[2]) == ((N - 3) // 4 * 4 if train else N - 3)  # train: full batches


def test_missing_index_is_refused_and_arrow_shards_are_read(ds: Path, tmp_path: Path) -> None:
    copy = tmp_path / "noidx"
    shutil.copytree(ds, copy)
    (copy / "train-000003.idx").unlink()
    with pytest.raises(ShardError, match=r"train-000003\.idx"):
        run_epoch(backend(copy))
    from helpers import convert_images, make_image_tree

    src = make_image_tree(tmp_path / "src", classes=2, per_class=3)
    arrow = convert_images(src, tmp_path / "arrow", format="arrow", samples_per_shard=4).dst
    tar = convert_images(src, tmp_path / "tar", samples_per_shard=4).dst
    a, b = run_epoch(backend(arrow, train=False)), run_epoch(backend(tar, train=False))
    assert a[2] == b[2] and all(torch.equal(x, y) for x, y in zip(a[0], b[0]))


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1"])
def test_graph_args_for_each_device(device: str) -> None:
    for train in (True, False):
        opts = ImageLoaderOptions(batch_size=4, train=train, image_size=224, device=device, hw_decoder_load=0.4,
                                  dtype="bfloat16", channels_last=True, num_threads=2, color_jitter=(0.1,) * 4)
        args = graph_args(opts)
        assert args.normalize["output_layout"] == "HWC" and args.normalize["crop"] == [224, 224]
        assert args.normalize["mean"][0] == pytest.approx(0.485 * 255) and args.out_dtype == "float32"
        assert args.decode["adjust_orientation"] is False
        if device == "cpu":
            assert args.device_id is None and args.decode_device == "cpu" and "hw_decoder_load" not in args.decode
            assert args.resize["minibatch_size"] == 1  # 4 samples, 2 threads: every thread gets work
        else:
            assert args.device_id == (1 if device == "cuda:1" else 0) and args.decode_device == "mixed"
            assert args.decode["hw_decoder_load"] == 0.4  # eval: libjpeg's chroma upsampling; train's ROI: none
            assert args.decode.get("jpeg_fancy_upsampling", False) is (not train)
            assert "minibatch_size" not in args.resize
        if train:
            assert args.resize["resize_x"] == 224 and args.inputs == ("encoded", "anchor", "shape", "flip",
                                                                      "brightness", "contrast", "saturation", "hue")
        else:
            assert args.resize["subpixel_scale"] is False and args.inputs[0] == "encoded" and not args.color_jitter


@pytest.mark.parametrize("train", [True, False])
def test_gpu_graph_is_accepted_by_dali(train: bool) -> None:
    """The mixed/GPU graph, defined and serialised (DALI checks every operator argument) without a GPU."""
    import dataclasses

    from fastdata.images.dali_graph import define_pipeline

    opts = ImageLoaderOptions(batch_size=4, train=train, image_size=32, device="cuda:0", color_jitter=(0.1,) * 4,
                              dtype="float16")
    args = graph_args(opts)
    assert args.decode_device == "mixed" and args.device_id == 0
    pipe = define_pipeline(dataclasses.replace(args, device_id=None), batch_size=4, num_threads=1, seed=1)
    text = pipe.serialize()
    assert b"mixed" in text and (b"ImageSlice" in text) is train
    bad = dataclasses.replace(args, device_id=None, decode={**args.decode, "hw_decoder_lod": 0.5})
    with pytest.raises(KeyError, match="hw_decoder_lod"):
        define_pipeline(bad, batch_size=4, num_threads=1, seed=1).serialize()


_DDP_SCRIPT = """
import json, sys
import torch.distributed as dist
from fastdata.images.loader import image_loader

rank, ds, store, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
loader = image_loader(ds, backend="dali", train=False, batch_size=4, image_size=32, num_threads=1, device="cpu")
keys, batches = [], 0
for images, labels in loader:
    batches += 1
    keys += [k.rsplit(":", 1)[1] for k in loader.backend.last_keys]
gathered = [None, None]
dist.all_gather_object(gathered, {"rank": loader.options.rank, "batches": batches, "keys": keys})
if rank == 0:
    open(out, "w").write(json.dumps(gathered))
dist.destroy_process_group()
"""


def test_two_process_gloo_eval_split(ds: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    script, out = tmp_path / "ddp.py", tmp_path / "out.json"
    script.write_text(_DDP_SCRIPT)
    root = Path(__file__).resolve().parents[1]
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(ds), str(tmp_path / "store"), str(out)],
                              cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for r in range(2)]
    try:
        logs = [p.communicate(timeout=120)[0].decode() for p in procs]
    finally:
        for p in procs:  # a rank that hangs does not outlive the test
            if p.poll() is None:
                p.kill()
                p.wait()
    assert all(p.returncode == 0 for p in procs), logs
    ranks = json.loads(out.read_text())
    assert [r["rank"] for r in ranks] == [0, 1] and ranks[0]["batches"] == ranks[1]["batches"] == 4
    assert ranks[0]["keys"] + ranks[1]["keys"] == [k for k, _ in manifest_keys(ds)]
