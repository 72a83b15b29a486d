"""The sequence loader on real tokens: budgets, padding, masks, packing boundaries, labels, resume."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest_kinds import kinds_data_fixture  # noqa: F401  (the kinds_data fixture)
from conftest_text import fortunes_tokens_fixture, read_rows  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.errors import ShardError

EOS, PAD = 102, 0


def _docs(tokens: Path) -> Counter:
    return Counter((tuple(r["input_ids"]), r["label"]) for r in read_rows(tokens))


@pytest.mark.parametrize("bucketing, multiple", [("length", 8), ("length", 1), ("none", 8), ("none", 3)])
def test_budget_padding_masks_and_every_document_once(fortunes_tokens: Path, bucketing: str, multiple: int) -> None:
    loader = fastdata.loader(fortunes_tokens, max_tokens=2048, bucketing=bucketing, pad_to_multiple_of=multiple)
    assert loader.classes == ("computers", "education", "linux", "science", "wisdom")
    n = len(loader)
    seen: Counter = Counter()
    batches = 0
    for batch in loader:
        ids, mask, lengths = batch["input_ids"], batch["attention_mask"], batch["lengths"]
        assert all(t.dtype == torch.int64 for t in batch.values())
        assert ids.numel() <= 2048 and ids.shape[1] % multiple == 0
        assert ids.shape[1] - multiple < int(lengths.max()) <= ids.shape[1]  # padded to the longest only
        assert torch.equal(mask.sum(1), lengths)
        assert torch.equal(mask, (torch.arange(ids.shape[1])[None] < lengths[:, None]).long())
        assert bool((ids[mask == 0] == PAD).all())
        for row, n_tok, label in zip(ids, lengths.tolist(), batch["labels"].tolist()):
            seen[(tuple(row[:n_tok].tolist()), label)] += 1
        batches += 1
    assert batches == n
    assert seen == _docs(fortunes_tokens)  # none lost, none duplicated, labels preserved


def test_length_bucketing_wastes_far_less_than_random(fortunes_tokens: Path) -> None:
    def waste(**kw) -> float:
        real = total = 0
        for b in fastdata.loader(fortunes_tokens, pad_to_multiple_of=1, **kw):
            real += int(b["lengths"].sum())
            total += b["input_ids"].numel()
        return 1 - real / total

    bucketed, random = waste(max_tokens=1024, bucketing="length"), waste(max_tokens=1024, bucketing="none")
    assert bucketed < 0.02 and bucketed * 10 < random


def test_batch_size_cap_and_budget_together(fortunes_tokens: Path) -> None:
    loader = fastdata.loader(fortunes_tokens, batch_size=16, max_tokens=1024, bucketing="length")
    sizes = [b["input_ids"].shape for b in loader]
    assert max(s[0] for s in sizes) == 16 and all(s[0] * s[1] <= 1024 for s in sizes)
    assert sum(s[0] for s in sizes) == sum(_docs(fortunes_tokens).values())


def test_packing_boundaries_positions_and_waste(fortunes_tokens: Path) -> None:
    block = 256
    loader = fastdata.loader(fortunes_tokens, max_tokens=2048, bucketing="pack", block_size=block, seed=3)
    rows: dict[int, dict] = {}
    for index, batch in zip(loader.batch_indices(), loader):
        assert batch["input_ids"].shape == (len(index), block) and batch["input_ids"].numel() <= 2048
        cu = batch["cu_seqlens"]
        assert int(cu[-1]) == int(batch["lengths"].sum())
        for r, row in enumerate(index.tolist()):
            rows[row] = {k: v[r] for k, v in batch.items() if k != "cu_seqlens"}
        docs = batch["document_ids"]
        pieces = [int((docs[r] == d).sum()) for r in range(len(index)) for d in range(1, int(docs[r].max()) + 1)]
        assert torch.equal(cu.diff(), torch.tensor(pieces))
    assert sorted(rows) == list(range(len(rows)))
    stream = torch.cat([rows[r]["input_ids"][: int(rows[r]["lengths"])] for r in sorted(rows)])
    positions = torch.cat([rows[r]["position_ids"][: int(rows[r]["lengths"])] for r in sorted(rows)])
    # documents come back whole, each followed by one EOS ([SEP] already ends every BERT encoding)
    starts = (positions == 0).nonzero().flatten().tolist() + [len(stream)]
    docs = Counter(tuple(stream[a:b].tolist()) for a, b in zip(starts, starts[1:]))
    assert docs == Counter(ids for ids, _ in _docs(fortunes_tokens).elements())
    assert all(int(stream[b - 1]) == EOS for b in starts[1:])
    for r in sorted(rows):  # a new document piece starts exactly where positions restart (or at a row start)
        pos, doc, n = rows[r]["position_ids"], rows[r]["document_ids"], int(rows[r]["lengths"])
        new_piece = torch.cat([torch.tensor([True]), doc[1:n] != doc[: n - 1]])
        restart = torch.cat([torch.tensor([True]), pos[1:n] == 0])
        assert torch.equal(new_piece, restart) and int(doc[n - 1]) == int(doc[:n].max())
        assert bool((doc[n:] == 0).all()) and bool((rows[r]["attention_mask"][n:] == 0).all())
    real = sum(int(rows[r]["lengths"]) for r in rows)
    assert 1 - real / (len(rows) * block) < 0.01


def test_resume_mid_epoch_is_exact(fortunes_tokens: Path) -> None:
    for kw in ({"bucketing": "length"}, {"bucketing": "pack", "block_size": 128}):
        full = fastdata.loader(fortunes_tokens, max_tokens=1024, seed=5, **kw)
        full.set_epoch(2)
        reference = [b["input_ids"] for b in full]
        partial = fastdata.loader(fortunes_tokens, max_tokens=1024, seed=5, **kw)
        partial.set_epoch(2)
        it = iter(partial)
        for _ in range(7):
            next(it)
        state = partial.state_dict()
        assert state["epoch"] == 2 and state["batches_done"] == 7
        resumed = fastdata.loader(fortunes_tokens, max_tokens=1024, seed=5, **kw)
        resumed.load_state_dict(state)
        rest = [b["input_ids"] for b in resumed]
        assert len(rest) == len(reference) - 7
        assert all(torch.equal(a, b) for a, b in zip(rest, reference[7:]))
        assert resumed.state_dict()["epoch"] == 3  # a finished epoch advances
    other = fastdata.loader(fortunes_tokens, max_tokens=2048, seed=5)
    with pytest.raises(ValueError, match="max_tokens: saved 1024, now 2048"):
        other.load_state_dict(state)
    with pytest.raises(ValueError, match=f"num_sequences: saved {state['num_sequences'] + 1}, now"):
        resumed.load_state_dict({**state, "num_sequences": state["num_sequences"] + 1})  # another dataset


def test_order_is_a_pure_function_of_seed_and_epoch(fortunes_tokens: Path) -> None:
    def order(seed: int, epoch: int) -> list[list[int]]:
        loader = fastdata.loader(fortunes_tokens, max_tokens=1024, seed=seed)
        loader.set_epoch(epoch)
        return [b.tolist() for b in loader.batch_indices()]

    assert order(0, 1) == order(0, 1)
    assert order(0, 1) != order(0, 2) and order(0, 1) != order(1, 1)


def test_options_are_validated(fortunes_tokens: Path) -> None:
    with pytest.raises(ValueError, match="give max_tokens"):
        fastdata.loader(fortunes_tokens)
    with pytest.raises(ValueError, match=r"bucketing must be one of \['length', 'none', 'pack'\]"):
        fastdata.loader(fortunes_tokens, max_tokens=1024, bucketing="sorted")
    with pytest.raises(ValueError, match="cannot hold the longest sequence"):
        fastdata.loader(fortunes_tokens, max_tokens=64)
    with pytest.raises(ValueError, match="needs block_size"):
        fastdata.loader(fortunes_tokens, max_tokens=1024, bucketing="pack")
    with pytest.raises(TypeError) as err:
        fastdata.loader(fortunes_tokens, max_tokens=1024, image_size=224)
    from dataclasses import fields

    from fastdata.text.options import SequenceLoaderOptions

    allowed = sorted({f.name for f in fields(SequenceLoaderOptions)} - {"rank", "world_size"})
    assert "max_tokens" in allowed and str(err.value) == (f"unknown option(s) ['image_size'] for a text dataset; "
                                                          f"allowed: {allowed}")
    with pytest.raises(ValueError, match="device"):
        fastdata.loader(fortunes_tokens, max_tokens=1024, device="tpu")


def test_a_budget_of_exactly_the_longest_padded_sequence_holds_it(fortunes_tokens: Path) -> None:
    longest = max(len(r["input_ids"]) for r in read_rows(fortunes_tokens))
    need = -(-longest // 8) * 8  # padded to a multiple of 8
    loader = fastdata.loader(fortunes_tokens, max_tokens=need, pad_to_multiple_of=8)
    assert max(b["input_ids"].shape[1] for b in loader) == need
    with pytest.raises(ValueError) as err:
        fastdata.loader(fortunes_tokens, max_tokens=need - 1, pad_to_multiple_of=8)
    assert str(err.value) == (f"max_tokens={need - 1} cannot hold the longest sequence ({longest} tokens, {need} "
                              "padded to a multiple of 8); raise max_tokens or convert with --max-length")


def test_the_pad_id_comes_from_the_manifests_tokenizer_unless_given(fortunes_tokens: Path, tmp_path: Path) -> None:
    import json

    forged = tmp_path / "tokens"
    shutil.copytree(fortunes_tokens, forged)
    manifest = json.loads((forged / "manifest.json").read_text())
    manifest["extra"]["tokenizer"]["pad_id"] = 7
    (forged / "manifest.json").write_text(json.dumps(manifest))
    for given, want in ((None, 7), (3, 3)):
        batch = next(iter(fastdata.loader(forged, max_tokens=1024, shuffle=False, pad_id=given)))
        ids, lengths = batch["input_ids"], batch["lengths"]
        padding = torch.arange(ids.shape[1])[None, :] >= lengths[:, None]
        assert padding.any() and (ids[padding] == want).all()


def test_the_sequence_loader_opens_a_path_itself(fortunes_tokens: Path, kinds_data, caplog) -> None:
    from fastdata.text.loader import sequence_loader

    with caplog.at_level("INFO", logger="fastdata.text.loader"):
        direct = sequence_loader(str(fortunes_tokens), split="train", max_tokens=1024, shuffle=False)
    want = fastdata.loader(fortunes_tokens, max_tokens=1024, shuffle=False)
    assert all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(direct, want)) and len(direct) == len(want)
    store = direct.store
    assert f": {len(store)} sequences, {int(store.lengths.sum())} tokens, rank 0/1" in caplog.text
    with pytest.raises(fastdata.ManifestError, match=r"^unknown split 'val'; this dataset has splits \['train'\]$"):
        sequence_loader(fortunes_tokens, split="val", max_tokens=1024)
    with pytest.raises(ValueError) as err:
        sequence_loader(kinds_data["wds"], max_tokens=1024)
    assert str(err.value) == f"{kinds_data['wds']} holds a 'images' dataset; the sequence loader reads 'text'"


def test_device_plumbing_pins_for_cuda(fortunes_tokens: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastdata.text.options import SequenceLoaderOptions

    assert SequenceLoaderOptions(max_tokens=8, device="cuda:1").pin
    assert not SequenceLoaderOptions(max_tokens=8).pin
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="need CUDA"):
            fastdata.loader(fortunes_tokens, max_tokens=1024, device="cuda")
        with pytest.raises(ValueError) as err:  # pinned host memory alone needs CUDA too
            fastdata.loader(fortunes_tokens, max_tokens=1024, pin_memory=True)
        assert str(err.value) == ("device='cpu', pin_memory=True need CUDA, but torch.cuda.is_available() is False; "
                                  "use device='cpu' (and pin_memory=None or False)")
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    loader = fastdata.loader(fortunes_tokens, max_tokens=1024, pin_memory=True)
    calls = []
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: calls.append(self.shape) or self.clone())
    batch = next(iter(loader))
    assert len(calls) == len(batch) and batch["input_ids"].device.type == "cpu"
    assert np.all(batch["lengths"].numpy() > 0)


def test_a_truncated_shard_is_a_clear_error(fortunes_tokens: Path, tmp_path: Path) -> None:
    copy = tmp_path / "tokens"
    shutil.copytree(fortunes_tokens, copy)
    shard = sorted(copy.glob("*.arrow"))[0]
    shard.write_bytes(shard.read_bytes()[:-100])
    with pytest.raises(ShardError, match=f"shard {shard} has .* bytes, the manifest says"):
        fastdata.loader(copy, max_tokens=2048)


def test_length_buckets_come_in_shuffled_order_with_mixed_lengths_inside_the_epoch(fortunes_tokens: Path) -> None:
    """Bucketing groups similar lengths into a batch, but the batches of an epoch are shuffled: sorted
    batches (shortest first) would give the model a curriculum by length and skew every epoch's start."""
    loader = fastdata.loader(fortunes_tokens, max_tokens=1024, bucketing="length", seed=0)
    longest = [int(b["lengths"].max()) for b in loader]
    assert len(longest) > 20
    assert longest != sorted(longest) and longest != sorted(longest, reverse=True)
    rises = sum(b > a for a, b in zip(longest, longest[1:]))
    assert 0.25 < rises / (len(longest) - 1) < 0.75  # about half the steps go up, as in a random order
    within = [b["lengths"] for b in fastdata.loader(fortunes_tokens, max_tokens=1024, bucketing="length")]
    spread = np.mean([int(x.max()) - int(x.min()) for x in within if len(x) > 1])
    assert spread < 0.25 * np.mean([int(x.max()) for x in within])  # yet each batch holds similar lengths


def test_load_state_then_set_epoch_continues_mid_epoch(fortunes_tokens: Path) -> None:
    """The usual training loop calls set_epoch(e) every epoch, also right after loading a checkpoint:
    with the saved epoch it must keep the resume point, not restart the epoch."""
    full = fastdata.loader(fortunes_tokens, max_tokens=1024, seed=2)
    full.set_epoch(1)
    reference = [b["input_ids"] for b in full]
    partial = fastdata.loader(fortunes_tokens, max_tokens=1024, seed=2)
    partial.set_epoch(1)
    it = iter(partial)
    for _ in range(5):
        next(it)
    state = partial.state_dict()
    resumed = fastdata.loader(fortunes_tokens, max_tokens=1024, seed=2)
    resumed.load_state_dict(state)
    resumed.set_epoch(1)  # the loop's call
    rest = [b["input_ids"] for b in resumed]
    assert len(rest) == len(reference) - 5 and all(torch.equal(a, b) for a, b in zip(rest, reference[5:]))
    resumed.set_epoch(2)  # the next epoch is whole
    assert len(list(resumed)) == len(resumed)


def test_resume_on_a_rank_of_several_is_exact(fortunes_tokens: Path) -> None:
    kw = dict(max_tokens=1024, seed=3, rank=1, world_size=3)
    reference = [b["input_ids"] for b in fastdata.loader(fortunes_tokens, **kw)]
    partial = fastdata.loader(fortunes_tokens, **kw)
    it = iter(partial)
    for _ in range(4):
        next(it)
    state = partial.state_dict()
    resumed = fastdata.loader(fortunes_tokens, **kw)
    resumed.load_state_dict(state)
    rest = [b["input_ids"] for b in resumed]
    assert len(rest) == len(reference) - 4 and all(torch.equal(a, b) for a, b in zip(rest, reference[4:]))
    with pytest.raises(ValueError, match="seed"):
        fastdata.loader(fortunes_tokens, **{**kw, "seed": 4}).load_state_dict(state)
    other = fastdata.loader(fortunes_tokens, **{**kw, "rank": 2})  # ranks advance in lockstep: any rank's state
    other.load_state_dict(state)
    assert other.state_dict()["batches_done"] == 4 and other.state_dict()["elastic"] == []


def test_cut_splits_a_pair_over_the_budget_and_ties_keep_the_shuffled_order() -> None:
    from fastdata.text.options import SequenceLoaderOptions
    from fastdata.text.partition import exact_cut
    from fastdata.text.plan import cut, epoch_order, plan_sequences

    assert [b.tolist() for b in cut(np.arange(2), np.array([10, 10]), max_tokens=15, batch_size=None,
                                    multiple=1)] == [[0], [1]]
    opts = SequenceLoaderOptions(max_tokens=160, pad_to_multiple_of=8, seed=3)
    lengths = np.random.default_rng(0).choice([8, 16], 1000)  # many ties: sorting must keep their shuffled order
    order, _ = epoch_order(1000, opts, epoch=0)
    by_length = np.array(sorted(order.tolist(), key=lambda i: lengths[i]))  # Python's sort is stable
    expected = {tuple(b.tolist()) for b in exact_cut(by_length, lengths, max_tokens=160, batch_size=None, multiple=8)}
    assert {tuple(b.tolist()) for b in plan_sequences(lengths, opts, epoch=0)} == expected
