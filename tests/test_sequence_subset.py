"""A subset of a text split (`indices=`, fastdata/planning/subset.py): the sequence loader plans its batches over
those sequences alone, in every bucketing, with resume and ranks as over a whole split."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest_text import fortunes_tokens_fixture, read_rows  # noqa: F401  (the fortunes_tokens fixture)

import fastdata


def _picked(tokens: Path) -> np.ndarray:
    """Every third sequence, and the longest one left out (so a budget below it is fine for the subset)."""
    lengths = np.array([len(r["input_ids"]) for r in read_rows(tokens)])
    picked = np.arange(0, len(lengths), 3)
    return picked[picked != int(lengths.argmax())]


@pytest.mark.parametrize("bucketing", ["length", "none"])
def test_each_picked_sequence_once_an_epoch_across_ranks(fortunes_tokens: Path, bucketing: str) -> None:
    picked = _picked(fortunes_tokens)
    for epoch in (0, 1):
        seen: Counter = Counter()
        for rank in (0, 1):
            ld = fastdata.loader(fortunes_tokens, max_tokens=1024, bucketing=bucketing, indices=picked, rank=rank,
                                 world_size=2)
            ld.set_epoch(epoch)
            for _ in ld:
                seen.update(ld.last_index.tolist())
        assert set(seen) == set(picked.tolist()) and set(seen.values()) == {1}


def test_packing_streams_the_picked_documents_only(fortunes_tokens: Path) -> None:
    rows = read_rows(fortunes_tokens)
    picked = _picked(fortunes_tokens)
    ld = fastdata.loader(fortunes_tokens, bucketing="pack", block_size=128, max_tokens=1024, indices=picked)
    whole = fastdata.loader(fortunes_tokens, bucketing="pack", block_size=128, max_tokens=1024)
    real = sum(int(b["attention_mask"].sum()) for b in ld)
    # every picked document's tokens and one EOS after each (the stored ids may end with it already)
    expected = sum(len(rows[i]["input_ids"]) + (rows[i]["input_ids"][-1] != 102) for i in picked.tolist())
    assert real == expected and len(ld) < len(whole) / 2


def test_the_budget_is_checked_against_the_picked_sequences(fortunes_tokens: Path) -> None:
    lengths = np.array([len(r["input_ids"]) for r in read_rows(fortunes_tokens)])
    budget = int(np.sort(lengths)[-2]) + 8  # below the longest, above every other
    with pytest.raises(ValueError, match="cannot hold the longest sequence"):
        fastdata.loader(fortunes_tokens, max_tokens=budget)
    assert len(fastdata.loader(fortunes_tokens, max_tokens=budget, indices=_picked(fortunes_tokens))) > 0


def test_a_resume_needs_the_same_subset(fortunes_tokens: Path) -> None:
    picked = _picked(fortunes_tokens)
    first = fastdata.loader(fortunes_tokens, max_tokens=1024, indices=picked, seed=3)
    it = iter(first)
    next(it)
    state = first.state_dict()
    rest = [b["input_ids"].clone() for b in it]
    again = fastdata.loader(fortunes_tokens, max_tokens=1024, indices=picked[::-1].copy(), seed=3)
    again.load_state_dict(state)
    got = [b["input_ids"] for b in again]
    assert len(got) == len(rest) > 0 and all(np.array_equal(a, b) for a, b in zip(got, rest))
    assert state["num_sequences"] == len(picked)
    other = fastdata.loader(fortunes_tokens, max_tokens=1024, indices=picked[1:], seed=3)
    with pytest.raises(ValueError, match="cannot resume: the state was saved on other data"):
        other.load_state_dict(state)


def test_an_index_past_the_split_or_a_subset_of_a_mixture_is_refused(fortunes_tokens: Path, tmp_path: Path) -> None:
    from conftest_text import convert_text, copy_fortunes

    copy_fortunes(tmp_path / "src", ("education",))
    convert_text(tmp_path / "src", tmp_path / "other", separator="%", samples_per_shard=500)
    with pytest.raises(ValueError, match="^indices selects samples of one dataset; a mixture draws"):
        fastdata.loader([str(fortunes_tokens), str(tmp_path / "other")], max_tokens=1024, indices=[0, 1])
    n = len(read_rows(fortunes_tokens))
    with pytest.raises(ValueError, match=rf"^indices go up to {n}, but the split has {n} samples"):
        fastdata.loader(fortunes_tokens, max_tokens=1024, indices=[0, n])
    with pytest.raises(ValueError, match=r"^indices=\[1, 1\] is not allowed; indices must be distinct indices"):
        fastdata.loader(fortunes_tokens, max_tokens=1024, indices=[1, 1])
