"""The shard schedule of a rank's epoch (fastdata/images/schedule.py), read back on its own: which shard each
position reads, which shards are still to come or done, and the most shard bytes a reader holds at once,
against a count made at every position of hand-made and random plans; then what a loader tells the remote
store and the node cache as it reads, and the cache limit it refuses (stand-ins for both; test_remote.py runs
the real ones)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fastdata.images.order import shard_sequence, window_shuffle
from fastdata.images.schedule import ShardSchedule, check_cache, shard_follower

# Shards of 3, 2, 4 and 1 samples (global indices 0-2, 3-4, 5-8, 9), read as shard 2, then 0, then 1; shard 3
# is not in this rank's sequence.
STARTS = [0, 3, 5, 9]
SEQUENCE = np.array([5, 6, 7, 8, 0, 1, 2, 3, 4])


def held_at_every_position(schedule: ShardSchedule, sizes: list[int], *, lookahead: int, ahead: int) -> int:
    """The definition of peak_bytes counted at every position, not only where the held set changes: a shard is
    held from `lookahead` positions before its first read to its last, and the next `ahead` shards with a read
    still to come are held too."""
    end = int(schedule.last.max()) + 2 if len(schedule.order) else 1
    peak = 0
    for p in range(end):
        held = {s for s in schedule.order if schedule.first[s] - lookahead <= p <= schedule.last[s]}
        held |= set([s for s in schedule.order if schedule.last[s] >= p][:ahead])
        peak = max(peak, sum(sizes[s] for s in held))
    return peak


def test_each_position_reads_the_shard_whose_range_holds_its_sample() -> None:
    s = ShardSchedule(SEQUENCE, STARTS)
    assert s.shard_at.tolist() == [2, 2, 2, 2, 0, 0, 0, 1, 1]  # 3 and 5, a shard's first sample, open shards 1, 2
    assert s.order == [2, 0, 1]  # by first use, not by number
    assert s.first == {2: 0, 0: 4, 1: 7}
    assert s.last.tolist() == [6, 8, 3, -1]  # -1: shard 3 is not read


def test_upcoming_and_done_at_the_boundaries_of_a_shard() -> None:
    s = ShardSchedule(SEQUENCE, STARTS)
    assert s.upcoming(0) == [2, 0, 1]
    assert s.upcoming(3) == [2, 0, 1]  # shard 2's last read is at 3: still to come there
    assert s.upcoming(4) == [0, 1] and s.upcoming(8) == [1] and s.upcoming(9) == []
    assert s.done(0, 3) == [] and s.done(0, 4) == [2]  # done once the reader passes its last read
    assert s.done(3, 4) == [2] and s.done(4, 7) == [0] and s.done(7, 9) == [1]
    assert s.done(4, 6) == [] and s.done(6, 6) == []


def test_a_shard_read_only_at_the_first_position() -> None:
    s = ShardSchedule(np.array([2, 0, 1]), [0, 1, 2])
    assert s.order == [2, 0, 1] and s.last.tolist() == [1, 2, 0]
    assert s.done(0, 1) == [2] and s.upcoming(1) == [0, 1]
    assert s.peak_bytes([1, 1, 100], lookahead=0, ahead=0) == 100  # held at position 0 only


@pytest.mark.parametrize("lookahead, ahead, peak", [
    (0, 0, 40),  # one shard at a time: the largest
    (2, 0, 70),  # shard 0 is read ahead from position 2, while shard 2 is still read (to 3)
    (4, 0, 90),  # shard 1 from position 3: all three at once
    (0, 2, 70),  # the next two still to be read: 2 and 0, then 0 and 1
    (0, 1, 40),  # the next one is the one being read
])
def test_peak_bytes_of_a_hand_made_plan(lookahead: int, ahead: int, peak: int) -> None:
    s = ShardSchedule(SEQUENCE, STARTS)
    sizes = [30, 20, 40, 1000]  # shard 3 is never read: its bytes never count
    assert s.peak_bytes(sizes, lookahead=lookahead, ahead=ahead) == peak
    assert held_at_every_position(s, sizes, lookahead=lookahead, ahead=ahead) == peak


def test_nothing_to_read_holds_nothing() -> None:
    s = ShardSchedule(np.zeros(0, dtype=np.int64), [0, 4])
    assert s.order == [] and s.upcoming(0) == [] and s.done(0, 10) == []
    assert s.peak_bytes([10, 10], lookahead=8, ahead=2) == 0
    assert ShardSchedule(np.array([0, 1]), [0]).peak_bytes([0], lookahead=0, ahead=0) == 0


@pytest.mark.parametrize("seed", range(40))
def test_peak_bytes_equals_the_count_at_every_position(seed: int) -> None:
    rng = np.random.default_rng(seed)
    counts = tuple(int(c) for c in rng.integers(1, 9, size=int(rng.integers(1, 9))))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()
    full = shard_sequence(counts, seed=seed, epoch=0)
    world = int(rng.integers(1, 3))
    block = full[: len(full) // world]  # rank 0's block: some shards only in part, some not at all
    sequence = window_shuffle(block, window=int(rng.integers(1, 6)), seed=seed, epoch=0, start=0)
    sizes = [int(b) for b in rng.integers(1, 1000, size=len(counts))]
    s = ShardSchedule(sequence, starts)
    for lookahead in (0, 1, 3, 7):
        for ahead in (0, 1, 2, 4):
            assert s.peak_bytes(sizes, lookahead=lookahead, ahead=ahead) == \
                held_at_every_position(s, sizes, lookahead=lookahead, ahead=ahead), (lookahead, ahead)


def _remote_view(limit: int | None = None, ahead: int = 0):
    calls: list = []
    remote = SimpleNamespace(follow=lambda names: calls.append(("follow", names)), ahead=ahead,
                             cache=SimpleNamespace(limit=limit))
    shards = [SimpleNamespace(info=SimpleNamespace(name=n, bytes=b)) for n, b in zip("abcd", (30, 20, 40, 1000))]
    reader = _Reader(starts=STARTS, forget=lambda s: calls.append(("forget", s)))
    return SimpleNamespace(remote=remote, shards=shards), reader, calls


class _Reader(SimpleNamespace):
    def __len__(self) -> int:
        return 10  # the samples of STARTS' shards


def test_a_local_dataset_has_nothing_to_follow_or_limit() -> None:
    view = SimpleNamespace(remote=None)
    assert shard_follower(view, None, SEQUENCE, 0)(3) is None
    check_cache(view, None, SEQUENCE, None)  # no reader, no options: nothing is looked at


def test_the_follower_prefetches_what_comes_and_gives_back_what_is_done() -> None:
    view, reader, calls = _remote_view()
    follow = shard_follower(view, reader, SEQUENCE, 0)
    for position in (0, 4, 8, None):
        follow(position)
    assert calls == [("follow", ["c", "a", "b"]),
                     ("forget", 2), ("follow", ["a", "b"]),
                     ("forget", 0), ("follow", ["b"]),
                     ("forget", 0), ("forget", 1), ("forget", 2), ("forget", 3)]  # the end: every shard


def test_the_repeats_of_weighted_sampling_are_followed_as_their_samples() -> None:
    """A weighted epoch numbers the k-th repeat of sample i k * N + i (planning/weights.py): the same shards."""
    repeats = SEQUENCE + 10 * np.array([0, 1, 0, 2, 0, 3, 1, 0, 1])
    view, reader, calls = _remote_view()
    want_view, want_reader, want = _remote_view()
    for follow in (shard_follower(view, reader, repeats, 0), shard_follower(want_view, want_reader, SEQUENCE, 0)):
        for position in (0, 4, 8, None):
            follow(position)
    assert calls == want and calls[0] == ("follow", ["c", "a", "b"])
    view, reader, _ = _remote_view(69)
    with pytest.raises(ValueError, match="up to 70 bytes"):
        check_cache(view, reader, repeats, SimpleNamespace(prefetch=0, batch_size=1, shuffle_window=5))


def test_a_resumed_follower_starts_at_its_cursor() -> None:
    view, reader, calls = _remote_view()
    follow = shard_follower(view, reader, SEQUENCE, 4)
    follow(7)  # shard 2 was done before the cursor: given back by the run that read it
    follow(7)
    assert calls == [("forget", 0), ("follow", ["b"]), ("follow", ["b"])]


def test_the_cache_limit_must_hold_the_plans_peak() -> None:
    opts = SimpleNamespace(prefetch=0, batch_size=1, shuffle_window=5)  # read ahead 1 position; peak 70 bytes
    for limit in (None, 70, 71):
        view, reader, _ = _remote_view(limit)
        check_cache(view, reader, SEQUENCE, opts)
    view, reader, _ = _remote_view(70)
    check_cache(view, reader, SEQUENCE, SimpleNamespace(prefetch=2, batch_size=1, shuffle_window=5))  # 3 ahead: 70
    view, reader, _ = _remote_view(69)
    with pytest.raises(ValueError) as info:
        check_cache(view, reader, SEQUENCE, opts)
    assert str(info.value) == ("cache_limit=69 bytes is too small for this loader: it holds up to 70 bytes of shards "
                               "at once (those of one shuffle window of 5 samples plus 0 prefetched shards); set "
                               "cache_limit to at least 70 bytes, or lower shuffle_window")
    view, reader, _ = _remote_view(89, ahead=3)  # all three shards prefetched at once
    with pytest.raises(ValueError, match="up to 90 bytes .* plus 3 prefetched shards"):
        check_cache(view, reader, SEQUENCE, opts)
    view, reader, _ = _remote_view(89)
    with pytest.raises(ValueError, match="up to 90 bytes"):  # (prefetch + 1) * batch_size positions read ahead
        check_cache(view, reader, SEQUENCE, SimpleNamespace(prefetch=1, batch_size=2, shuffle_window=5))
