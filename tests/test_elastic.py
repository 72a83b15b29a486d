"""Elastic resume: a state saved on one number of ranks resumes the interrupted epoch on another, delivering
everything not yet delivered exactly once (train: up to the tail drop_last removes), nothing twice, equal
batch counts on the new ranks; the next epoch runs on the new world size. Images, text and volumes, mixed
and not."""

from __future__ import annotations

from collections import Counter
from functools import partial

import pytest

pytest.importorskip("kornia")

from conftest_mixing import IMAGE_KW, image_datasets, image_rows, run_rank, text_datasets  # noqa: E402

import fastdata  # noqa: E402


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return image_datasets(tmp_path_factory.mktemp("elastic_images"))


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    return text_datasets(tmp_path_factory.mktemp("elastic_text"))


def _ranks(make, ident, *, world: int, epoch: int, state: dict | None = None, stop: int | None = None):
    """Every rank of `world` in `epoch`, from `state` (else the epoch's start), until `stop` batches (else the end).
    Returns (what they delivered, their states at the stop, (batches planned, rows delivered) of each rank)."""
    delivered, states, counts = [], [], []
    for r in range(world):
        seen, saved, n = run_rank(partial(make, rank=r, world_size=world), epoch=epoch, ident=ident, state=state,
                                  stop=stop)
        delivered += seen
        states.append(saved)
        counts.append((n, len(seen)))
    return delivered, states, counts


def _elastic(make, ident, *, old: int, new: int, stop: int, epoch: int, saver: int = 0):
    """Run `old` ranks `stop` batches into `epoch`, resume all `new` ranks from rank `saver`'s state.
    Returns (delivered before, delivered after, batch counts of the new ranks, the saved state)."""
    before, states, _ = _ranks(make, ident, world=old, epoch=epoch, stop=stop)
    after, _, counts = _ranks(make, ident, world=new, epoch=epoch, state=states[saver])
    return before, after, counts, states[saver]


def _whole_epoch(make, ident, *, world: int, epoch: int) -> Counter:
    return Counter(_ranks(make, ident, world=world, epoch=epoch)[0])


@pytest.mark.parametrize("old, new", [(4, 2), (2, 3)])
@pytest.mark.parametrize("mode", ["plain", "mixed", "weighted"])
def test_images_train_elastic_exactly_once(images, old, new, mode):
    mixed = mode == "mixed"
    source = [str(images["a"]), str(images["b"])] if mixed else images["a"]
    extra = {"weights": [0.5, 0.5]} if mixed else {"sample_weights": "balanced"} if mode == "weighted" else {}

    def make(**kw):
        return fastdata.loader(source, **IMAGE_KW, **extra, **kw)

    epoch = 2
    before, after, counts, state = _elastic(make, image_rows, old=old, new=new, stop=1, epoch=epoch, saver=old - 1)
    planned = Counter()  # the epoch's samples on the old ranks, with the tails drop_last would leave out
    for r in range(old):
        total = 32 if mixed else 20  # the samples of the two datasets, or of a's alone
        planned.update((make(rank=r, world_size=old).backend.plan(epoch).sequence % total).tolist())  # repeats
    assert not Counter(before) + Counter(after) - planned  # nothing more often than the epoch's plan has it
    if mode == "plain":  # (a mixture repeats its oversampled dataset within the epoch, weighted sampling its draws)
        assert not set(before) & set(after) and len(set(after)) == len(after)
    rest = sum(planned.values()) - len(before)  # still to deliver when the old ranks stopped
    assert rest - len(after) < new * IMAGE_KW["batch_size"]  # only the train tail of < one batch a rank is left
    assert len({n for n, _ in counts}) == 1 and all(n * IMAGE_KW["batch_size"] == got for n, got in counts)
    resumed = make(rank=0, world_size=new)
    resumed.load_state_dict(state)
    assert resumed.state_dict()["elastic"] == [[old, 1]]
    resumed.set_epoch(epoch + 1)  # the next epoch runs on the new world size as a fresh run would
    assert len(resumed) == len(make(rank=0, world_size=new)) and resumed.state_dict()["elastic"] == []


@pytest.mark.parametrize("old, new", [(4, 2), (2, 3)])
def test_images_eval_elastic_delivers_every_sample_exactly_once(images, old, new):
    def make(**kw):
        return fastdata.loader(images["a"], **{**IMAGE_KW, "batch_size": 2}, train=False, **kw)

    before, after, counts, _ = _elastic(make, image_rows, old=old, new=new, stop=1, epoch=0)
    assert sorted(before + after) == list(range(20))
    assert len({n for n, _ in counts}) == 1


def test_a_second_interruption_replays_both(images):
    def make(**kw):
        return fastdata.loader(images["a"], **IMAGE_KW, train=False, **kw)

    before, states, _ = _ranks(make, image_rows, world=4, epoch=0, stop=1)  # one batch of 4 a rank (5 samples each)
    # 2 ranks resume the last 4 samples: 2 a rank, one batch (padded)
    middle, states, _ = _ranks(make, image_rows, world=2, epoch=0, state=states[3], stop=1)
    assert states[0]["elastic"] == [[4, 1]] and states[0]["batch"] == 1
    after, _, _ = _ranks(make, image_rows, world=3, epoch=0, state=states[1])
    assert sorted(before + middle) == list(range(20)) and after == []  # nothing was left: nothing more comes


def _token_ident(loader, batch):
    assert batch["lengths"].tolist() == loader.store.lengths[loader.last_index].tolist()
    return loader.last_index.tolist()


@pytest.mark.parametrize("old, new", [(4, 2), (2, 3)])
@pytest.mark.parametrize("mode", ["plain", "mixed", "weighted"])
def test_text_elastic_exactly_once(texts, old, new, mode):
    mixed = mode == "mixed"
    source = [str(texts["a"]), str(texts["b"])] if mixed else texts["a"]
    extra = {"weights": [0.6, 0.4]} if mixed else {"sample_weights": "balanced"} if mode == "weighted" else {}

    def make(**kw):
        return fastdata.loader(source, max_tokens=4096, seed=5, **extra, **kw)

    epoch = 0 if mode == "plain" else 2
    before, after, counts, _ = _elastic(make, _token_ident, old=old, new=new, stop=3, epoch=epoch, saver=1)
    planned = _whole_epoch(make, _token_ident, world=old, epoch=epoch)
    assert Counter(before) + Counter(after) == planned  # text batches are dealt whole: nothing is lost
    assert len({n for n, _ in counts}) == 1


@pytest.fixture(scope="module")
def volumes(tmp_path_factory):
    from conftest_dicom import convert_dicom, small_phantom, write_phantom

    root = tmp_path_factory.mktemp("elastic_volumes")
    for i in range(6):
        write_phantom(root / "src" / ("x" if i < 4 else "y") / f"s{i}", small_phantom(i), seed=i)
    convert_dicom(root / "src" / "x", root / "x")
    convert_dicom(root / "src" / "y", root / "y")
    return root / "x", root / "y"


def _patch_ident(loader, batch):
    return [(p.volume, p.start, p.stream, p.duplicate) for p in loader.last_patches]


@pytest.mark.parametrize("old, new", [(4, 2), (2, 3)])
@pytest.mark.parametrize("mode", ["plain", "mixed", "weighted"])
def test_volumes_train_elastic_exactly_once(volumes, old, new, mode):
    pytest.importorskip("pydicom")
    mixed = mode == "mixed"
    source = [str(volumes[0]), str(volumes[1])] if mixed else volumes[0]
    extra = {"weights": [0.5, 0.5], "samples_per_epoch": 8} if mixed else \
        {"sample_weights": [1, 2, 3, 4]} if mode == "weighted" else {}

    def make(**kw):
        return fastdata.loader(source, batch_size=2, patches_per_volume=2, patch_size=(8, 8, 8), num_workers=1,
                               **extra, **kw)

    before, after, counts, _ = _elastic(make, _patch_ident, old=old, new=new, stop=1, epoch=1)
    planned = _whole_epoch(make, _patch_ident, world=old, epoch=1)
    assert not Counter(before) + Counter(after) - planned  # no patch more often than the epoch's plan has it
    assert sum(planned.values()) - len(before) - len(after) < new * 2
    assert len({n for n, _ in counts}) == 1 and all(n * 2 == got for n, got in counts)


def test_volumes_eval_elastic_covers_every_window_once(volumes):
    pytest.importorskip("pydicom")

    def make(**kw):
        return fastdata.loader(volumes[0], batch_size=2, train=False, patch_size=(8, 16, 16), num_workers=1, **kw)

    before, after, counts, _ = _elastic(make, _patch_ident, old=4, new=3, stop=1, epoch=0)
    real = [x for x in before + after if not x[3]]
    windows = [x for x in _whole_epoch(make, _patch_ident, world=1, epoch=0)]
    assert sorted(real) == sorted(windows)
    assert len({n for n, _ in counts}) == 1


def test_volumes_a_second_interruption_replays_both(volumes):
    """A state saved after an elastic resume carries both interruptions (its `elastic` lineage): resumed again on a
    third world size, the epoch's patches are delivered once over the three runs."""
    pytest.importorskip("pydicom")

    def make(**kw):
        return fastdata.loader(volumes[0], batch_size=2, patches_per_volume=4, patch_size=(8, 8, 8), num_workers=1,
                               **kw)

    before, after, _, state = _elastic(make, _patch_ident, old=2, new=3, stop=1, epoch=1)
    middle, states, _ = _ranks(make, _patch_ident, world=3, epoch=1, state=state, stop=1)
    assert states[0]["elastic"] == [[2, 1]] and states[0]["batch"] == 1
    last, _, _ = _ranks(make, _patch_ident, world=2, epoch=1, state=states[0])
    planned = _whole_epoch(make, _patch_ident, world=2, epoch=1)
    assert sum(planned.values()) == 16 and len(before) == 4 and len(middle) == 6
    delivered = Counter(before) + Counter(middle) + Counter(last)
    assert not delivered - planned  # nothing twice
    assert sum(planned.values()) - sum(delivered.values()) < 2 * 2  # at most the drop_last tail of the last run
    assert len(after) == 12  # the whole rest, had the second run not been interrupted
