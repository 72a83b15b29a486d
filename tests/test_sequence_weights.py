"""Weighted sampling of token sequences (`sample_weights=`, fastdata/planning/weights.py): each shuffled epoch draws
as many sequences as the split holds, by weight, in every bucketing, with ranks and resume as over a whole split."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest_text import fortunes_tokens_fixture, read_rows  # noqa: F401  (the fortunes_tokens fixture)

import fastdata
from fastdata.planning.weights import Weighting


def _labels(tokens: Path) -> np.ndarray:
    return np.array([r["label"] for r in read_rows(tokens)])


def _weights(n: int) -> np.ndarray:
    """Every tenth sequence weighs 1, every thirtieth 3 more, the rest 0."""
    w = np.zeros(n)
    w[::10] = 1.0
    w[::30] += 3.0
    return w


@pytest.mark.parametrize("bucketing", ["length", "none"])
def test_each_epoch_reads_the_draws_across_ranks(fortunes_tokens: Path, bucketing: str) -> None:
    n = len(read_rows(fortunes_tokens))
    w = _weights(n)
    for epoch in (0, 1):
        seen: Counter = Counter()
        for rank in (0, 1):
            ld = fastdata.loader(fortunes_tokens, max_tokens=1024, bucketing=bucketing, sample_weights=w, seed=2,
                                 rank=rank, world_size=2)
            ld.set_epoch(epoch)
            for _ in ld:
                seen.update(ld.last_index.tolist())
        drawn = Weighting(w, len(w)).draws(seed=2, epoch=epoch)
        assert seen == Counter({i: int(c) for i, c in enumerate(drawn) if c}) and sum(seen.values()) == n


def test_balanced_epochs_read_the_classes_alike(fortunes_tokens: Path) -> None:
    labels = _labels(fortunes_tokens)
    assert max(np.bincount(labels)) > 2 * min(np.bincount(labels))  # the files differ in length
    ld = fastdata.loader(fortunes_tokens, max_tokens=2048, sample_weights="balanced")
    seen = []
    for epoch in range(4):
        ld.set_epoch(epoch)
        for batch in ld:
            seen += ld.last_index.tolist()
            assert batch["labels"].tolist() == labels[ld.last_index].tolist()
    share = np.bincount(labels[seen], minlength=5) / len(seen)
    assert np.abs(share - 0.2).max() < 0.03


def test_packing_streams_the_drawn_documents(fortunes_tokens: Path) -> None:
    rows = read_rows(fortunes_tokens)
    w = _weights(len(rows))
    ld = fastdata.loader(fortunes_tokens, bucketing="pack", block_size=128, max_tokens=1024, sample_weights=w,
                         seed=4)
    real = sum(int(b["attention_mask"].sum()) for b in ld)
    drawn = Weighting(w, len(w)).draws(seed=4, epoch=0)
    expected = sum(int(c) * (len(rows[i]["input_ids"]) + (rows[i]["input_ids"][-1] != 102))
                   for i, c in enumerate(drawn) if c)
    assert real == expected


def test_a_resume_needs_the_same_weights(fortunes_tokens: Path) -> None:
    w = _weights(len(read_rows(fortunes_tokens)))
    first = fastdata.loader(fortunes_tokens, max_tokens=1024, sample_weights=w, seed=3)
    first.set_epoch(1)
    it = iter(first)
    next(it)
    state = first.state_dict()
    rest = [b["input_ids"].clone() for b in it]
    again = fastdata.loader(fortunes_tokens, max_tokens=1024, sample_weights=list(w), seed=3)
    again.load_state_dict(state)
    got = [b["input_ids"] for b in again]
    assert len(got) == len(rest) > 0 and all(a.equal(b) for a, b in zip(got, rest))
    for other in ({"sample_weights": w + 1}, {}):
        with pytest.raises(ValueError, match="saved on other data"):
            fastdata.loader(fortunes_tokens, max_tokens=1024, seed=3, **other).load_state_dict(state)


@pytest.mark.parametrize("options, message", [
    ({"shuffle": False, "sample_weights": "balanced"}, "shuffle=False"),
    ({"sample_weights": [1.0, 2.0]}, "holds 2 weights, but the split has"),
    ({"sample_weights": "balanced", "indices": [0, 1]}, "not both"),
])
def test_weights_it_cannot_draw_with_are_refused(fortunes_tokens: Path, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fastdata.loader(fortunes_tokens, max_tokens=1024, **options)


def test_balanced_needs_classes(tmp_path: Path) -> None:
    from conftest_text import FORTUNES, convert_text

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "wisdom.txt").write_text((FORTUNES / "wisdom").read_text(encoding="utf-8"), encoding="utf-8")
    convert_text(tmp_path / "src", tmp_path / "tokens", separator="%")
    n = len(read_rows(tmp_path / "tokens"))
    assert fastdata.sample_labels(tmp_path / "tokens").tolist() == [-1] * n
    with pytest.raises(ValueError, match=f"{n} of the split's {n} samples have none"):
        fastdata.loader(tmp_path / "tokens", max_tokens=2048, sample_weights="balanced")


def test_samples_per_epoch_sets_the_draws_of_an_epoch(fortunes_tokens: Path) -> None:
    seen: Counter = Counter()
    for rank in (0, 1):
        ld = fastdata.loader(fortunes_tokens, max_tokens=1024, sample_weights="balanced", samples_per_epoch=300,
                             rank=rank, world_size=2)
        for _ in ld:
            seen.update(ld.last_index.tolist())
        assert ld.state_dict()["num_sequences"] == 300
    assert sum(seen.values()) == 300
