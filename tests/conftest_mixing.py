"""Builders for the mixing and elastic-resume tests: small datasets of every kind, with exact control."""

from __future__ import annotations

import json
from pathlib import Path

from conftest_text import convert_text, copy_fortunes
from helpers import convert_images, make_image

import fastdata

IMAGE_KW = dict(batch_size=4, image_size=16, backend="kornia", device="cpu", num_threads=1, prefetch=1)


def image_datasets(root: Path) -> dict[str, Path]:
    """a: cat and dog, 10 each (20 samples); b: dog and emu, 6 each (12); shards of 4."""
    out = {}
    seed = 0
    for name, classes, n in (("a", ("cat", "dog"), 10), ("b", ("dog", "emu"), 6)):
        for c in classes:
            for i in range(n):
                seed += 1
                make_image(root / "src" / name / c / f"{name}_{c}_{i}.jpg", size=(24, 20), seed=seed)
        convert_images(root / "src" / name, root / name, samples_per_shard=4)
        out[name] = root / name
    return out


def text_datasets(root: Path) -> dict[str, Path]:
    """a: two fortunes files (about 74k tokens); b: one (about 31k); c: b's copy claiming another tokenizer."""
    copy_fortunes(root / "src_a", ("computers", "linux"))
    copy_fortunes(root / "src_b", ("science",))
    convert_text(root / "src_a", root / "a", separator="%", samples_per_shard=300)
    convert_text(root / "src_b", root / "b", separator="%", samples_per_shard=300)
    convert_text(root / "src_b", root / "c", separator="%", samples_per_shard=300)
    manifest = json.loads((root / "c" / "manifest.json").read_text())
    manifest["extra"]["tokenizer"]["sha256"] = "0" * 64
    (root / "c" / "manifest.json").write_text(json.dumps(manifest))
    return {"a": root / "a", "b": root / "b", "c": root / "c"}


def run_rank(make, *, epoch: int, ident, state=None, stop: int | None = None) -> tuple[list, dict | None, int]:
    """Iterate one rank's loader (`make()`) in `epoch`, from `state` if given, until `stop` batches; returns
    (the identities `ident(loader, batch)` of every delivered row, the state at the stop, len(loader) before)."""
    loader = make()
    loader.set_epoch(epoch)
    if state is not None:
        loader.load_state_dict(state)
    seen, saved, batches = [], None, len(loader)  # (text and volume loaders move to the next epoch at the end)
    for i, batch in enumerate(loader):
        seen.extend(ident(loader, batch))
        if stop is not None and i + 1 == stop:
            saved = loader.state_dict()
            break
    return seen, saved, batches


def image_rows(loader, batch) -> list[int]:
    return list(loader.backend.last_rows)


def open_loader(source, **kw):
    return fastdata.loader(source, **kw)
