"""The peers of benchmarks/mixing.py, run in their own environment (`--peers-python`):
`python mixing_peers.py NAME CONFIG.json` with NAME `mds` or `litdata`.

Each writes its own format from the same token sequences (`raw/<d>.npz`: ids and offsets, exported from
fastdata's shards), mixes the datasets with the weights of CONFIG the way its docs show (MosaicML Streaming:
`Stream(proportion=...)`; LitData: `CombinedStreamingDataset(weights=...)`), and prints one JSON line:
the realised shares of samples and tokens per epoch, whether two uninterrupted runs deliver the same batches,
and what happened when a run stopped in the middle of epoch 1 (after the first epoch) was resumed from its
loader's state_dict: `exact` when the resumed batches are the ones the uninterrupted run delivered, `differs`
when they are not, or the error it raised.
"""

from __future__ import annotations

import json
import shutil
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np


def _sequences(raw: Path, d: int) -> list[np.ndarray]:
    data = np.load(raw / f"{d}.npz")
    ids, offsets = data["ids"], data["offsets"]
    return [ids[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def _rows(raw: Path, d: int) -> list[dict[str, Any]]:
    return [{"key": f"{d}:{i}", "dataset": d, "ids": s.astype(np.int32).tobytes()}
            for i, s in enumerate(_sequences(raw, d))]


def _keys(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """A batch as its sample keys, in a dict (how both loaders count the samples of a batch for their state)."""
    return {"key": [r["key"] for r in rows]}


def _epochs(dl: Any, *, epochs: int, stop: tuple[int, int] | None) -> tuple[list[list[list[str]]], Any]:
    """The keys of every batch of `epochs` epochs of loader `dl`; at (epoch, batches) `stop`, its state_dict()
    and no more."""
    out, saved = [], None
    for epoch in range(epochs):
        keys = []
        for b, rows in enumerate(dl):
            keys.append(list(rows["key"]))
            if stop is not None and (epoch, b + 1) == stop:
                saved = dl.state_dict()
                break
        out.append(keys)
        if saved is not None:
            break
    return out, saved


# -------------------------------------------------------------------------------------- MosaicML Streaming
def write_mds(raw: Path, out: Path, datasets: int) -> list[Path]:
    from streaming import MDSWriter

    dirs = []
    for d in range(datasets):
        folder = out / f"mds-{d}"
        shutil.rmtree(folder, ignore_errors=True)
        with MDSWriter(out=str(folder), columns={"key": "str", "dataset": "int", "ids": "bytes"},
                       size_limit=1 << 22) as w:
            for row in _rows(raw, d):
                w.write(row)
        dirs.append(folder)
    return dirs


def mds_epochs(dirs: list[Path], cfg: dict[str, Any], *, epochs: int, stop: tuple[int, int] | None = None,
               state: Any = None) -> tuple[list[list[list[str]]], Any]:
    from streaming import Stream, StreamingDataLoader, StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()
    streams = [Stream(local=str(p), proportion=w) for p, w in zip(dirs, cfg["weights"])]
    ds = StreamingDataset(streams=streams, shuffle=True, shuffle_seed=cfg["seed"], batch_size=cfg["batch_size"],
                          epoch_size=cfg["samples_per_epoch"])
    dl = StreamingDataLoader(ds, batch_size=cfg["batch_size"], num_workers=cfg.get("workers", 0), collate_fn=_keys)
    if state is not None:
        dl.load_state_dict(state)
    out, saved = _epochs(dl, epochs=epochs, stop=stop)
    del dl, ds
    clean_stale_shared_memory()
    return out, saved


# -------------------------------------------------------------------------------------- LitData
def _litdata_item(row: dict[str, Any]) -> dict[str, Any]:
    return row


def write_litdata(raw: Path, out: Path, datasets: int) -> list[Path]:
    from litdata import optimize

    dirs = []
    for d in range(datasets):
        folder = out / f"litdata-{d}"
        shutil.rmtree(folder, ignore_errors=True)
        optimize(fn=_litdata_item, inputs=_rows(raw, d), output_dir=str(folder), chunk_bytes=1 << 22, num_workers=1,
                 mode="overwrite")
        dirs.append(folder)
    return dirs


def litdata_epochs(dirs: list[Path], cfg: dict[str, Any], *, epochs: int, stop: tuple[int, int] | None = None,
                   state: Any = None) -> tuple[list[list[list[str]]], Any]:
    from litdata import CombinedStreamingDataset, StreamingDataLoader, StreamingDataset

    parts = [StreamingDataset(str(p), shuffle=True, seed=cfg["seed"]) for p in dirs]
    ds = CombinedStreamingDataset(parts, weights=cfg["weights"], seed=cfg["seed"], iterate_over_all=False)
    dl = StreamingDataLoader(ds, batch_size=cfg["batch_size"], num_workers=cfg.get("workers", 0), collate_fn=_keys)
    if state is not None:
        dl.load_state_dict(state)
    return _epochs(dl, epochs=epochs, stop=stop)


# -------------------------------------------------------------------------------------- the report
def shares(epochs: list[list[list[str]]], lengths: list[np.ndarray], datasets: int) -> list[dict[str, Any]]:
    """Per epoch: samples, sample and token shares, items delivered twice within the epoch, and (over the
    epochs so far) `early_repeats`: items an epoch repeats from earlier epochs although their dataset was
    still not seen whole at the end of that epoch (an epoch's order is shuffled, so it is counted by epoch)."""
    out, seen, early = [], [set() for _ in range(datasets)], 0
    for keys in epochs:
        flat = [k for batch in keys for k in batch]
        pairs = [(int(d), int(i)) for d, i in (k.split(":") for k in flat)]
        owner = np.array([d for d, _ in pairs])
        tokens = np.array([int(lengths[d][i]) for d, i in pairs])
        for d in range(datasets):
            here = {i for e, i in pairs if e == d}
            if len(seen[d] | here) < len(lengths[d]):
                early += len(here & seen[d])
            seen[d] |= here
        out.append({"samples": len(flat),
                    "sample_share": [round(float((owner == d).mean()), 4) if len(flat) else 0 for d in range(datasets)],
                    "token_share": [round(float(tokens[owner == d].sum() / max(tokens.sum(), 1)), 4)
                                    for d in range(datasets)],
                    "repeats": len(flat) - len(set(flat)), "early_repeats": early})
    return out


def main(argv: list[str]) -> int:
    name, cfg = argv[0], json.loads(Path(argv[1]).read_text())
    raw, work = Path(cfg["raw"]), Path(cfg["work"])
    datasets = len(cfg["weights"])
    lengths = [np.diff(np.load(raw / f"{d}.npz")["offsets"]) for d in range(datasets)]
    write, run = (write_mds, mds_epochs) if name == "mds" else (write_litdata, litdata_epochs)
    result: dict[str, Any] = {"candidate": name}
    try:
        dirs = write(raw, work, datasets)
        whole, _ = run(dirs, cfg, epochs=cfg["epochs"])
        result["epochs"] = shares(whole, lengths, datasets)
        again, _ = run(dirs, cfg, epochs=2)
        result["repeatable"] = again[:2] == whole[:2]  # two uninterrupted runs deliver the same batches
        stop = (1, cfg["stop_batch"])
        head, state = run(dirs, cfg, epochs=2, stop=stop)
        try:
            resumed, _ = run(dirs, cfg, epochs=1, state=state)
            want = whole[1][cfg["stop_batch"]:]
            got = resumed[0]
            result["resume"] = "exact" if got == want else (
                f"differs: {len(got)} batches after the resume, the uninterrupted run had {len(want)} more in epoch 1"
                + ("" if got[:1] == want[:1] else ", the first of them already different"))
        except Exception as exc:  # noqa: BLE001 - the peer's own failure is the measurement
            result["resume"] = f"error: {type(exc).__name__}: {str(exc)[:300]}"
    except Exception as exc:  # noqa: BLE001
        result["error"] = f"{type(exc).__name__}: {exc}"[:500]
        result["traceback"] = traceback.format_exc()[-1500:]
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
