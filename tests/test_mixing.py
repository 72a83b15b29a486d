"""Weighted mixing through `fastdata.loader([...], weights=...)`: shares per epoch, cursors across epochs,
united classes, the `dataset` of each row, exact resume in any epoch, and the refusals."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

pytest.importorskip("kornia")

from conftest_mixing import IMAGE_KW, image_datasets, image_rows, run_rank, text_datasets  # noqa: E402

import fastdata  # noqa: E402
from fastdata.errors import ManifestError  # noqa: E402
from fastdata.mixing import MixedView  # noqa: E402


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return image_datasets(tmp_path_factory.mktemp("mix_images"))


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    return text_datasets(tmp_path_factory.mktemp("mix_text"))


def _pair(ds):
    return [str(ds["a"]), str(ds["b"])]


def test_image_classes_are_united_by_name_and_labels_follow(images):
    mixed = fastdata.loader(_pair(images), **IMAGE_KW, train=False, return_dataset=True)
    assert mixed.classes == ("cat", "dog", "emu")
    singles = [fastdata.loader(images[k], **IMAGE_KW, train=False) for k in ("a", "b")]
    owners, count = Counter(), 0
    for _, labels, dataset in mixed:
        for row, label, d in zip(mixed.backend.last_rows, labels.tolist(), dataset.tolist()):
            local = row - (0 if d == 0 else 20)
            raw = singles[d].backend._reader.read(local)
            assert mixed.classes[label] == singles[d].classes[raw.label]
            owners[d] += 1
            count += 1
    assert owners == {0: 20, 1: 12} and count == 32  # eval of a list: the union, every sample once


@pytest.mark.parametrize("weights, per_epoch, quotas", [([0.5, 0.5], None, (16, 16)), ([3, 1], 24, (18, 6))])
def test_image_shares_are_exact_in_every_epoch(images, weights, per_epoch, quotas):
    loader = fastdata.loader(_pair(images), **{**IMAGE_KW, "batch_size": 2}, weights=weights,
                             samples_per_epoch=per_epoch, return_dataset=True)
    for epoch in range(3):
        loader.set_epoch(epoch)
        counts = Counter(d for _, _, ds in loader for d in ds.tolist())
        assert (counts[0], counts[1]) == quotas


def test_repeats_of_a_sample_within_an_epoch_draw_their_own_crops(images):
    loader = fastdata.loader(_pair(images), **IMAGE_KW, weights=[1, 3], samples_per_epoch=32)  # b: 24 of 12
    views: dict[int, list[torch.Tensor]] = {}
    for x, _ in loader:
        for row, image in zip(loader.backend.last_rows, x):
            views.setdefault(row, []).append(image.clone())
    repeated = [v for row, v in views.items() if row >= 20 and len(v) == 2]
    assert len(repeated) == 12  # every sample of b comes twice
    assert all(not torch.equal(a, b) for a, b in repeated)


def test_a_dict_is_the_same_mixture_as_a_list_with_weights(images):
    a = fastdata.loader(_pair(images), **IMAGE_KW, weights=[0.3, 0.7])
    b = fastdata.loader({_pair(images)[0]: 0.3, _pair(images)[1]: 0.7}, **IMAGE_KW)
    ra = [row for _ in a for row in a.backend.last_rows]
    rb = [row for _ in b for row in b.backend.last_rows]
    assert ra == rb and len(ra) == 32


@pytest.mark.parametrize("epoch", [0, 2])
def test_image_mixture_resumes_mid_epoch_exactly(images, epoch):
    def make(**kw):
        return fastdata.loader(_pair(images), **IMAGE_KW, weights=[0.2, 0.8], **kw)

    whole, _, _ = run_rank(make, epoch=epoch, ident=image_rows)
    head, state, _ = run_rank(make, epoch=epoch, ident=image_rows, stop=3)
    tail, _, _ = run_rank(make, epoch=epoch, ident=image_rows, state=state)
    assert head + tail == whole and state["mixture"]["weights"] == [0.2, 0.8]


def _text_rows(loader):
    out = []
    for batch in loader:
        ids = loader.last_index
        assert batch["dataset"].tolist() == loader.mixture.dataset_of(ids).tolist()
        out.extend(ids.tolist())
    return out


def test_text_token_shares_per_epoch(texts, caplog):
    with caplog.at_level("INFO", logger="fastdata.text.loader"):
        loader = fastdata.loader(_pair(texts), weights=[0.7, 0.3], max_tokens=4096)
    assert loader.classes == ("computers", "linux", "science")  # the datasets' classes united by name
    assert (f"MixedView({_pair(texts)}, split='train', weights=(0.7, 0.3)): {len(loader.store)} sequences, "
            f"{int(loader.store.lengths.sum())} tokens, rank 0/1") in caplog.text
    lengths, longest = loader.store.lengths, int(loader.store.lengths.max())
    quotas = loader.mixture.quotas()
    assert sum(quotas) == int(lengths.sum())  # an epoch carries as many tokens as the two datasets hold
    for epoch in range(3):
        loader.set_epoch(epoch)
        ids = np.asarray(_text_rows(loader))
        owner = loader.mixture.dataset_of(ids)
        for d in (0, 1):
            assert abs(int(lengths[ids[owner == d]].sum()) - quotas[d]) < longest


def test_text_sample_shares_and_no_repeat_before_a_dataset_is_seen_whole(texts):
    loader = fastdata.loader(_pair(texts), weights=[0.5, 0.5], weight_by="samples", samples_per_epoch=400,
                             batch_size=16)
    size = loader.mixture.sizes[0]
    seen_a = []
    for epoch in range(8):  # 8 x 200 of dataset a's sequences: more than it holds
        loader.set_epoch(epoch)
        ids = np.asarray(_text_rows(loader))
        owner = loader.mixture.dataset_of(ids)
        assert Counter(owner.tolist()) == {0: 200, 1: 200}
        seen_a.extend(ids[owner == 0].tolist())
    assert 1200 < size < 1400
    assert len(set(seen_a[:1200])) == 1200  # epochs 0-5 continue one permutation: no repeat
    assert set(seen_a[:1400]) == set(range(size))  # epoch 6 ends the pass (and starts the next)
    assert max(Counter(seen_a).values()) == 2


@pytest.mark.parametrize("epoch", [0, 2])
def test_text_mixture_resumes_mid_epoch_exactly(texts, epoch):
    kw = dict(weights=[0.4, 0.6], max_tokens=2048, rank=1, world_size=2)
    whole = fastdata.loader(_pair(texts), **kw)
    whole.set_epoch(epoch)
    reference = [b["input_ids"] for b in whole]
    part = fastdata.loader(_pair(texts), **kw)
    part.set_epoch(epoch)
    it = iter(part)
    for _ in range(5):
        next(it)
    state = part.state_dict()
    resumed = fastdata.loader(_pair(texts), **kw)
    resumed.load_state_dict(state)
    rest = [b["input_ids"] for b in resumed]
    assert len(rest) == len(reference) - 5 and all(torch.equal(x, y) for x, y in zip(rest, reference[5:]))
    other = fastdata.loader(_pair(texts), **{**kw, "weights": [0.5, 0.5]})
    with pytest.raises(ValueError) as err:
        other.load_state_dict(state)
    datasets = state["mixture"]["datasets"]
    assert len(datasets) == 2 and str(err.value) == (
        "cannot resume: the state was saved with another mixture (weights: saved [0.4, 0.6], now [0.5, 0.5]); "
        f"saved datasets {datasets}, now {datasets}")
    single = fastdata.loader(texts["a"], max_tokens=2048, rank=1, world_size=2)
    with pytest.raises(ValueError) as err:
        single.load_state_dict(state)
    assert str(err.value) == ("cannot resume: the state was saved by a loader with a mixture of datasets, this "
                              "loader has none")
    with pytest.raises(ValueError) as err:
        resumed.load_state_dict(single.state_dict())
    assert str(err.value) == ("cannot resume: the state was saved by a loader without a mixture of datasets, this "
                              "loader has one")


def test_packed_rows_say_the_dataset_of_every_token(texts):
    """Each piece of a document in a packed row is found among the documents of one dataset (their token ids,
    read from each dataset alone), and every token of the piece names that dataset; padding, which only the
    epoch's last batch has, names -1."""
    loader = fastdata.loader(_pair(texts), weights=[0.5, 0.5], bucketing="pack", block_size=128, batch_size=8)
    corpora = []
    for key in ("a", "b"):
        store = fastdata.loader(texts[key], max_tokens=4096).store
        corpora.append(b"".join(store.ids(i).astype(np.int64).tobytes() + b"\xff" * 8 for i in range(len(store))))

    def owners(piece: np.ndarray) -> set[int]:
        needle = piece.astype(np.int64).tobytes()
        found = set()
        for d, corpus in enumerate(corpora):
            at = corpus.find(needle)
            while at >= 0 and at % 8:  # a match must start on a token
                at = corpus.find(needle, at + 1)
            if at >= 0:
                found.add(d)
        return found

    batches = list(loader)
    checked, seen, padding = 0, set(), 0
    for n, batch in enumerate(batches):
        dataset, real = batch["dataset"], batch["attention_mask"] == 1
        assert dataset.shape == batch["input_ids"].shape
        assert (dataset[~real] == -1).all()
        padding += int((~real).sum())
        seen |= set(dataset[real].tolist())
        if n % 10 and n != len(batches) - 1:
            continue
        for row in range(len(dataset)):
            for doc in set(batch["document_ids"][row].tolist()) - {0}:
                where = batch["document_ids"][row] == doc
                piece = batch["input_ids"][row][where].numpy()
                if piece[-1] == loader.eos_id:  # the EOS the stream appends after a document
                    piece = piece[:-1]
                found = owners(piece) if len(piece) >= 4 else set()
                if len(found) == 1:
                    assert set(dataset[row][where].tolist()) == found
                    checked += 1
    assert seen == {0, 1} and padding > 0 and checked > 50


def test_a_mixture_of_tokenizers_is_refused_naming_both(texts):
    import json
    import re

    sha = json.loads((texts["a"] / "manifest.json").read_text())["extra"]["tokenizer"]["sha256"]
    want = (f"{texts['a']} and {texts['c']} were tokenized differently (tokenizer sha256 {sha} and {'0' * 64}); "
            "token ids of one mixture must mean the same: convert both with one tokenizer")
    with pytest.raises(ManifestError, match=re.escape(want)):
        fastdata.loader([str(texts["a"]), str(texts["b"]), str(texts["c"])], max_tokens=4096)


def test_mixtures_are_checked(images, texts, tmp_path):
    with pytest.raises(ManifestError) as err:
        fastdata.loader([str(images["a"]), str(texts["a"])], batch_size=4)
    assert str(err.value) == (f"the datasets of a mixture must be of one kind, these are {images['a']}: images, "
                              f"{texts['a']}: text")
    with pytest.raises(ValueError) as err:
        fastdata.loader(_pair(images), **IMAGE_KW, train=False, weights=[1, 1])
    assert str(err.value) == ("weights apply to training (train=True); an evaluation reads every sample of every "
                              "dataset once: pass the list without weights")
    with pytest.raises(ValueError, match="list of 2 numbers"):
        fastdata.loader(_pair(images), **IMAGE_KW, weights=[1])
    with pytest.raises(ValueError, match="appears twice"):
        fastdata.loader([str(images["a"]), str(images["a"])], **IMAGE_KW)
    with pytest.raises(ValueError, match="apply to a mixture"):
        fastdata.loader(images["a"], **IMAGE_KW, weights=[1.0])
    with pytest.raises(ValueError) as err:
        fastdata.loader(_pair(images), **IMAGE_KW, weights=[1, 1], weight_by="tokens")
    assert str(err.value) == "weight_by='tokens' applies to text datasets; a 'images' mixture is weighted by samples"
    with pytest.raises(ValueError, match="samples_per_epoch counts samples"):
        fastdata.loader(_pair(texts), max_tokens=4096, weights=[1, 1], weight_by="tokens", samples_per_epoch=10)
    with pytest.raises(ValueError, match="the weights either"):
        fastdata.loader({_pair(images)[0]: 1, _pair(images)[1]: 2}, **IMAGE_KW, weights=[1, 2])
    from helpers import convert_images, make_image

    for i in range(3):
        make_image(tmp_path / "flat" / f"x{i}.jpg", size=(24, 20), seed=i)
    convert_images(tmp_path / "flat", tmp_path / "unlabeled", unlabeled=True)
    with pytest.raises(ManifestError) as err:
        fastdata.loader([str(images["a"]), str(tmp_path / "unlabeled"), str(images["b"])], **IMAGE_KW)
    assert str(err.value) == (f"{tmp_path / 'unlabeled'} has no classes while the other datasets of the mixture do; "
                              "labels would mean nothing for its samples: mix labeled datasets with labeled ones")
    plain = fastdata.loader([images["a"] / "train-000000.tar", images["a"] / "train-000001.tar"], **IMAGE_KW)
    assert plain.num_samples == 8  # a list of shard files is still one dataset
    globbed = fastdata.loader([str(images["a"] / "train-00000[01].tar")], **IMAGE_KW)
    assert globbed.num_samples == 8 and not isinstance(globbed.backend._view, MixedView)  # and so are its patterns
    mixed = fastdata.loader([str(images["a"] / "*.tar"), str(images["b"] / "*.tar")], **IMAGE_KW)
    assert isinstance(mixed.backend._view, MixedView) and mixed.classes == ("cat", "dog", "emu")


def test_volume_mixture_says_the_dataset_of_each_patch(tmp_path):
    pytest.importorskip("pydicom")
    from conftest_dicom import Phantom, convert_dicom, write_phantom

    for i in range(5):
        ph = Phantom(series_uid=f"1.2.840.5.{i}", slices=8, rows=16, cols=16, slice_spacing=2.0,
                     pixel_spacing=(1.0, 1.0), origin=(-8.0, -8.0, 40.0), center_mm=(0.0, 0.0, 46.0), radius_mm=4.0)
        write_phantom(tmp_path / "src" / ("x" if i < 4 else "y") / f"s{i}", ph, seed=i)
    convert_dicom(tmp_path / "src" / "x", tmp_path / "x")
    convert_dicom(tmp_path / "src" / "y", tmp_path / "y")
    loader = fastdata.loader([str(tmp_path / "x"), str(tmp_path / "y")], weights=[0.5, 0.5], samples_per_epoch=6,
                             return_dataset=True, batch_size=2, patches_per_volume=1, patch_size=(8, 8, 8),
                             num_workers=1)
    for epoch in range(2):
        loader.set_epoch(epoch)
        counts = Counter(d for _, meta in loader for d in meta["dataset"].tolist())
        assert counts == {0: 3, 1: 3}  # y's single volume comes three times, x's four volumes three of them


def test_image_text_pairs_mix_and_stay_paired(tmp_path):
    from conftest_pairs import caption_ids, convert_pairs, image_ids, make_pair_tree

    convert_pairs(make_pair_tree(tmp_path / "src_a", n=10), tmp_path / "a")
    convert_pairs(make_pair_tree(tmp_path / "src_b", n=6), tmp_path / "b")
    loader = fastdata.loader([str(tmp_path / "a"), str(tmp_path / "b")], weights=[1, 3], samples_per_epoch=16,
                             return_dataset=True, batch_size=4, image_size=32, dtype="uint8", backend="kornia",
                             device="cpu", num_threads=1)
    counts = Counter()
    for images, text, dataset in loader:
        assert image_ids(images) == caption_ids(text["captions"])  # a caption never leaves its image
        counts.update(dataset.tolist())
    assert counts == {0: 4, 1: 12}


def test_image_text_pairs_mix_only_when_their_captions_are_stored_alike(tmp_path):
    """Token ids of a mixture must mean the same (one tokenizer, or none) and its captions lie in the same members."""
    import json

    from conftest_pairs import TOKENIZER, convert_pairs, make_pair_tree

    for name, tok in (("plain", None), ("tok", str(TOKENIZER)), ("tok2", str(TOKENIZER))):
        convert_pairs(make_pair_tree(tmp_path / f"src_{name}", n=4), tmp_path / name, tokenizer=tok)
    plain, tok, tok2 = (str(tmp_path / n) for n in ("plain", "tok", "tok2"))
    sha = json.loads((tmp_path / "tok" / "manifest.json").read_text())["extra"]["tokenizer"]["sha256"]
    with pytest.raises(ManifestError) as err:
        fastdata.loader([tok, plain], batch_size=2)
    assert str(err.value) == (f"{tok} and {plain} were tokenized differently (tokenizer sha256 {sha} and None); "
                              "token ids of one mixture must mean the same: convert both with one tokenizer")
    path = tmp_path / "tok2" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["extra"]["ids_member"] = "tokens.npy"  # the same tokenizer, its ids stored under another name
    path.write_text(json.dumps(manifest))
    with pytest.raises(ManifestError) as err:
        fastdata.loader([tok, tok2], batch_size=2)
    assert str(err.value) == (f"the image-text datasets {[tok, tok2]} store captions differently ([('txt', "
                              "'ids.npy'), ('txt', 'tokens.npy')]); convert them with the same options")


def test_a_remote_dataset_mixes_like_a_local_one(images, s3, tmp_path):
    pytest.importorskip("obstore")
    from fastdata.storage.client import RemoteStore

    store = RemoteStore(f"{s3}/mix-b/")
    for p in sorted(images["b"].iterdir()):
        if p.is_file() and p.name != "manifest.json":
            store.upload(p.name, p)
    store.upload("manifest.json", (images["b"] / "manifest.json").read_bytes())

    def rows(source):
        loader = fastdata.loader(source, **IMAGE_KW, weights=[0.5, 0.5], cache_dir=tmp_path / "cache")
        return [(r, y) for _, labels in loader for r, y in zip(loader.backend.last_rows, labels.tolist())]

    assert rows([str(images["a"]), f"{s3}/mix-b/"]) == rows(_pair(images))


@pytest.mark.parametrize("source, mixture", [
    (["s3://b/web/", "s3://b/code/"], True),  # dataset folders
    (["s3://b/web"], True),
    (["s3://b/ds/train-000000.tar", "s3://b/ds/train-000001.tar"], False),  # shards of one dataset
    (["https://h/ds/train-000000.arrow"], False),
    (["s3://b/ds/train-{000000..000001}.tar"], False),
    (["s3://b/x/t-{0..1}.tar", "s3://b/y/t-{0..1}.tar"], True),  # patterns in two folders
    ("s3://b/web/", False),  # one source, not a list
])
def test_which_lists_of_urls_are_mixtures(source, mixture: bool):
    from fastdata.mixing import is_mixture

    assert is_mixture(source, {}) is mixture


@pytest.mark.parametrize("source, options, message", [
    ({"a": 1, "b": 2}, {"weights": [1, 2]},
     "give the weights either as the values of the dict or as weights=, not both"),
    ([], {}, "a mixture needs at least one dataset"),
    ({}, {}, "a mixture needs at least one dataset"),
    (["a", "b"], {"weight_by": "bytes"}, "weight_by='bytes' is not allowed; weight_by must be 'samples' or 'tokens'"),
    (["a", "b"], {"samples_per_epoch": 10, "tokens_per_epoch": 10},
     "give samples_per_epoch or tokens_per_epoch, not both"),
    (["a", "b"], {"samples_per_epoch": 0},
     "samples_per_epoch=0 is not allowed; samples_per_epoch must be an integer >= 1 (the samples an epoch of the "
     "mixture draws)"),
    (["a", "b"], {"tokens_per_epoch": 2.0},
     "tokens_per_epoch=2.0 is not allowed; tokens_per_epoch must be an integer >= 1 (the tokens an epoch of the "
     "mixture draws)"),
    (["a", "b"], {"tokens_per_epoch": 10, "weight_by": "samples"}, "tokens_per_epoch counts tokens, but "
     "weight_by='samples'"),
    (["a", "b"], {"return_dataset": 1}, "return_dataset must be True or False, got 1"),
])
def test_the_mixture_options_are_refused_with_what_they_must_be(source, options, message):
    from fastdata.mixing import pop_spec

    with pytest.raises(ValueError) as err:
        pop_spec(source, dict(options))
    assert str(err.value) == message


def test_the_mixture_options_at_their_bounds():
    from fastdata.mixing import pop_spec

    given = {"samples_per_epoch": 1, "tokens_per_epoch": None, "return_dataset": True, "batch_size": 4}
    entries, spec = pop_spec({"a": 1.0, "b": 3.0}, given)
    assert entries == ["a", "b"] and given == {"batch_size": 4}  # the mixture's options taken out, the rest kept
    assert (spec.per_epoch, spec.weight_by, spec.return_dataset) == (1, "samples", True)
    assert pop_spec(["a"], {"tokens_per_epoch": 1})[1].weight_by == "tokens"
