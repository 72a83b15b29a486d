"""Loading image-text pairs: every image beside its own caption through shuffling, ranks, resume and skipping,
on both backends; token ids equal to the tokenizer's; the caption drawn per epoch; img2dataset shards adopted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from conftest_pairs import (
    TOKENIZER,
    caption_ids,
    caption_number,
    convert_pairs,
    flat_grey,
    image_ids,
    make_pair_tree,
    tokenizer,
)

import fastdata
from fastdata.errors import ManifestError
from fastdata.pairs.captions import choose, cut_ids

pytest.importorskip("kornia")
BACKENDS = ["kornia", pytest.param("dali", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("nvidia.dali") is None, reason="DALI not installed"))]
N = 23  # an odd count: uneven ranks, a partial eval batch


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> Path:
    """23 pairs (even samples with 3 captions), converted with token ids, 5 samples a shard."""
    root = tmp_path_factory.mktemp("pairs")
    convert_pairs(make_pair_tree(root / "src", n=N, captions=3), root / "out", tokenizer=str(TOKENIZER))
    return root / "out"


def load(ds: Path, **kw):
    base = dict(batch_size=4, image_size=32, num_threads=2, prefetch=2, backend="kornia", device="cpu",
                dtype="uint8", return_captions=True)
    return fastdata.loader(ds, **{**base, **kw})


def epoch(ld) -> tuple[list[int], list[str], list[torch.Tensor]]:
    """(sample numbers the images show, captions, text batches) of one pass, checking each pair agrees."""
    images, captions, texts = [], [], []
    for x, t in ld:
        assert flat_grey(x)
        shown, named = image_ids(x), caption_ids(t["captions"])
        real = [i for i, c in zip(shown, named) if c != -1]
        assert real == [c for c in named if c != -1], "an image came apart from its caption"
        images.extend(real)
        captions.extend(c for c in t["captions"] if c)
        texts.append(t)
    return images, captions, texts


@pytest.mark.parametrize("backend", BACKENDS)
def test_pairs_stay_together_through_shuffle_and_epochs(pairs, backend):
    ld = load(pairs, backend=backend, train=True, seed=3)
    seen = []
    for e in range(2):
        ld.set_epoch(e)
        images, _, _ = epoch(ld)
        assert len(images) == len(set(images)) == 20  # drop_last: 5 batches of 4 from 23
        seen.append(images)
    assert seen[0] != seen[1] and seen[0] != sorted(seen[0])


def test_a_subset_reads_its_pairs_only(pairs):
    whole, part = load(pairs, train=False), load(pairs, train=False, indices=[3, 0, 17])
    images, captions, _ = epoch(whole)
    got_images, got_captions, _ = epoch(part)
    assert got_images == [images[i] for i in (0, 3, 17)] and got_captions == [captions[i] for i in (0, 3, 17)]
    whole.close()
    part.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_weighted_pairs_stay_together(pairs, backend):
    """sample_weights draws the pairs (fastdata/planning/weights.py): repeats read the same image and caption."""
    weights = [0.0] * N
    weights[2], weights[7] = 1.0, 3.0
    ld = load(pairs, backend=backend, train=True, seed=1, sample_weights=weights)
    images, captions, _ = epoch(ld)  # each image beside its caption (epoch() checks)
    assert len(images) == 20 and len(set(images)) == 2 and len(set(caption_ids(captions))) == 2
    assert sorted(set(ld.backend.last_rows)) <= [2, 7]
    ld.close()


def test_the_repeats_of_a_pair_draw_their_own_captions(pairs):
    """A sample drawn several times in an epoch (sample_weights, a mixture's repeats) draws a caption each time."""
    whole, rows, shown = load(pairs, train=False), [], []
    for x, _ in whole:
        rows += whole.backend.last_rows
        shown += image_ids(x)[:len(whole.backend.last_rows)]
    whole.close()
    three = rows[[i % 2 == 0 for i in shown].index(True)]  # an even photo: 3 captions
    weights = [0.0] * N
    weights[three] = 1.0
    ld = load(pairs, train=True, seed=2, sample_weights=weights)
    images, captions, _ = epoch(ld)
    assert len(set(images)) == 1 and len(images) == 20
    assert len(set(captions)) == 3  # 20 draws among its 3 captions
    ld.close()


def test_sample_labels_read_image_text_datasets(pairs):
    assert fastdata.sample_labels(pairs).tolist() == [-1] * N  # pairs without classes


def test_progressive_resizing_keeps_each_caption_with_its_image(pairs):
    """A change of image size builds a new backend: it carries the text of each batch as the first one did."""
    ld = load(pairs, train=True, seed=3, image_size={0: 16, 1: 32})
    sizes = []
    for e in range(2):
        ld.set_epoch(e)
        images, captions, texts = epoch(ld)
        assert len(images) == 20 and len(captions) == 20 and all("input_ids" in t for t in texts)
        sizes.append(ld.options.image_size)
    assert sizes == [16, 32]
    ld.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_eval_takes_first_captions_in_order_with_padding(pairs, backend):
    ld = load(pairs, backend=backend, train=False)
    images, captions, texts = epoch(ld)
    assert sorted(images) == list(range(N))
    assert all(c.endswith("caption 0") for c in captions)
    last = texts[-1]
    pad = [i for i, c in enumerate(last["captions"]) if not c]
    assert len(pad) == 4 * 6 - N
    assert int(last["attention_mask"][pad].sum()) == 0 and int(last["input_ids"][pad].sum()) == 0


@pytest.mark.parametrize("world", [2, 3])
def test_ranks_split_pairs_disjointly(pairs, world):
    parts = []
    for rank in range(world):
        images, _, _ = epoch(load(pairs, train=False, rank=rank, world_size=world))
        parts.append(images)
    flat = [i for p in parts for i in p]
    assert sorted(flat) == list(range(N)) and len(flat) == len(set(flat))


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_mid_epoch_gives_the_same_pairs_and_captions(pairs, backend):
    full = load(pairs, backend=backend, train=True, seed=5)
    full.set_epoch(1)
    whole = [(image_ids(x), t["captions"], t["input_ids"].clone()) for x, t in full]
    first = load(pairs, backend=backend, train=True, seed=5)
    first.set_epoch(1)
    it = iter(first)
    for _ in range(2):
        next(it)
    state = first.state_dict()
    it.close()
    resumed = load(pairs, backend=backend, train=True, seed=5)
    resumed.load_state_dict(state)
    rest = [(image_ids(x), t["captions"], t["input_ids"].clone()) for x, t in resumed]
    assert len(rest) == len(whole) - 2
    for (a_img, a_cap, a_ids), (b_img, b_cap, b_ids) in zip(whole[2:], rest):
        assert a_img == b_img and a_cap == b_cap and torch.equal(a_ids, b_ids)


def test_stored_ids_equal_the_tokenizer_and_pad_to_multiple_of_8(pairs):
    tok = tokenizer()
    for _, t in load(pairs, train=True, seed=1):
        assert t["input_ids"].dtype == torch.int64 and t["attention_mask"].dtype == torch.int64
        width = t["input_ids"].shape[1]
        longest = int(t["attention_mask"].sum(1).max())
        assert width % 8 == 0 and width - 8 < longest <= width
        for row, mask, caption in zip(t["input_ids"], t["attention_mask"], t["captions"]):
            n = int(mask.sum())
            assert row[:n].tolist() == tok.encode(caption).ids and mask[:n].all()
            assert not row[n:].any()


def test_max_length_pads_and_cuts_every_batch_to_it(pairs):
    for _, t in load(pairs, train=False, max_length=6):
        assert t["input_ids"].shape[1] == 6
        assert t["attention_mask"].sum(1).max() <= 6
    with pytest.raises(ValueError, match="max_length"):
        load(pairs, max_length=0)


@pytest.mark.parametrize("length", [2, 5, 9])
def test_stored_ids_cut_by_max_length_equal_the_tokenizer_truncating_them(pairs, length):
    """The tokenizer's own truncation keeps the end token it appends ([SEP]): cut stored ids keep it too, so a
    text tower that reads the end token's position finds it, and stored ids agree with ids tokenized at load."""
    tok = tokenizer()
    tok.enable_truncation(length)
    cut = 0
    for _, t in load(pairs, train=True, seed=3, max_length=length):
        for row, mask, caption in zip(t["input_ids"], t["attention_mask"], t["captions"]):
            n = int(mask.sum())
            assert row[:n].tolist() == tok.encode(caption).ids
            cut += len(tokenizer().encode(caption).ids) > length
    assert cut > 0  # the lengths chosen cut captions


def test_cut_ids_keeps_only_an_end_token_that_is_there():
    assert cut_ids([101, 5, 6, 7, 102], None, 102) == [101, 5, 6, 7, 102]
    assert cut_ids([101, 5, 6, 7, 102], 5, 102) == [101, 5, 6, 7, 102]
    assert cut_ids([101, 5, 6, 7, 102], 4, 102) == [101, 5, 6, 102]
    assert cut_ids([101, 5, 6, 7, 102], 2, 102) == [101, 102]
    assert cut_ids([101, 5, 6, 7, 102], 1, 102) == [101]  # as the tokenizer pads and cuts: it cannot keep both
    assert cut_ids([101, 5, 6, 7, 8], 4, 102) == [101, 5, 6, 7]  # a template without an end token
    assert cut_ids([101, 5, 6, 7, 102], 4, None) == [101, 5, 6, 7]


def test_caption_choice_varies_by_epoch_and_repeats_with_seed(pairs):
    def picks(seed: int, e: int) -> dict[int, str]:
        ld = load(pairs, train=True, seed=seed)
        ld.set_epoch(e)
        out = {}
        for x, t in ld:
            out.update(zip(image_ids(x), t["captions"]))
        return out

    a0, a1, again = picks(7, 0), picks(7, 1), picks(7, 0)
    assert a0 == again
    common = [i for i in a0 if i in a1 and i % 2 == 0]  # samples with three captions
    assert any(a0[i] != a1[i] for i in common)
    used = {caption_number(c) for e in range(4) for i, c in picks(7, e).items() if i % 2 == 0}
    assert used == {0, 1, 2}
    assert all(a0[i].endswith("caption 0") for i in a0 if i % 2)  # one caption: always that one


def test_choose_is_a_pure_function():
    draws = [choose(5, train=True, seed=1, epoch=e, index=3) for e in range(40)]
    assert set(draws) == set(range(5))
    assert draws == [choose(5, train=True, seed=1, epoch=e, index=3) for e in range(40)]
    assert choose(5, train=False, seed=1, epoch=9, index=3) == 0


def _adopted(tmp_path: Path, *, with_txt_for_all: bool = True, corrupt: int | None = None) -> Path:
    """An img2dataset-style shard (jpg + txt + json), written with webdataset, then `fastdata index`ed."""
    wds = pytest.importorskip("webdataset")
    from converters.adopt import adopt

    src = make_pair_tree(tmp_path / "raw", n=10)
    out = tmp_path / "shards"
    out.mkdir()
    with wds.TarWriter(str(out / "00000.tar")) as w:
        for i in range(10):
            jpg = (src / f"img_{i:03d}.jpg").read_bytes()
            if i == corrupt:
                scan = jpg.index(b"\xff\xda") + 20  # past the start of scan: headers and tables intact
                jpg = jpg[:scan] + bytes(len(jpg) - scan)  # scan data zeroed: fails at decode, not at indexing
            sample = {"__key__": f"{i:09d}", "jpg": jpg, "json": json.dumps({"url": f"http://x/{i}"}).encode()}
            if with_txt_for_all or i != 4:
                sample["txt"] = (src / f"img_{i:03d}.txt").read_bytes().strip()
            w.write(sample)
    adopt(out)
    return out


def test_adopted_img2dataset_shards_load_as_pairs_tokenized_at_load(tmp_path):
    ds = _adopted(tmp_path, with_txt_for_all=False)
    m = fastdata.dataset.open_dataset(ds).manifest
    assert m.kind == "image_text" and m.text_member == "txt" and m.ids_member is None
    assert [r["reason"] for r in m.rejected] == ["no caption member (txt) while the rest of the dataset has captions"]
    images, captions, texts = epoch(load(ds, train=False, tokenizer=str(TOKENIZER)))
    assert sorted(images) == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    tok = tokenizer()
    for t in texts:
        for row, mask, caption in zip(t["input_ids"], t["attention_mask"], t["captions"]):
            n = int(mask.sum())
            assert row[:n].tolist() == (tok.encode(caption).ids if caption else [])
    untokenized = next(iter(load(ds, train=False, return_captions=False)))[1]
    assert set(untokenized) == {"captions"}  # nothing to tokenize with: the strings


@pytest.mark.parametrize("backend", BACKENDS)
def test_skipped_corrupt_images_take_their_captions_with_them(tmp_path, backend):
    ds = _adopted(tmp_path, corrupt=6)
    with pytest.raises(Exception, match="00000.tar|corrupt|decode"):
        epoch(load(ds, backend=backend, train=False))
    ld = load(ds, backend=backend, train=False, on_error="skip")
    images, captions, _ = epoch(ld)
    assert sorted(images) == [0, 1, 2, 3, 4, 5, 7, 8, 9] and ld.skipped == 1
    assert "photo 6 caption 0" not in captions


def test_text_from_another_tokenizer_is_tokenized_again(pairs, tmp_path):
    other = json.loads(TOKENIZER.read_text())
    other["padding"] = {"pad_id": 7, "pad_token": "[unused6]", "strategy": "BatchLongest", "direction": "Right",
                        "pad_to_multiple_of": None, "pad_type_id": 0}
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    ld = load(pairs, train=False, tokenizer=str(path))
    assert ld.pad_id == 7 and ld.tokenized
    _, t = next(iter(ld))
    assert set(t["input_ids"][t["attention_mask"] == 0].tolist()) <= {7}


def test_pair_loader_refuses_other_kinds(tmp_path):
    from helpers import convert_images, make_image_tree

    from fastdata.pairs.loader import pair_loader

    convert_images(make_image_tree(tmp_path / "src", classes=2, per_class=2), tmp_path / "imgs")
    with pytest.raises(ManifestError, match="pair_loader reads kind 'image_text'"):
        pair_loader(tmp_path / "imgs")


def test_text_member_problems_are_shard_errors(pairs, tmp_path):
    ds = tmp_path / "ds"
    shutil.copytree(pairs, ds)
    idx = ds / "train-000000.idx"
    fields = idx.read_text().splitlines()[1].split()
    i = fields.index("txt")
    offset, size = int(fields[i + 1]), int(fields[i + 2])
    data = bytearray((ds / "train-000000.tar").read_bytes())
    data[offset:offset + size] = b"\xff" * size
    (ds / "train-000000.tar").write_bytes(bytes(data))
    with pytest.raises(fastdata.errors.ShardError, match="not UTF-8"):
        epoch(load(ds, train=False))
