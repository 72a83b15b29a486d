"""Shards from someone else, or changed under a running loader: Arrow offsets that point past their data are
refused at open (never foreign memory handed to a decoder or a collate), and a shard truncated in place while
it is read is a ShardError on every reader (tar on both backends, Arrow images, Arrow tokens), never SIGBUS."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
from conftest_images import make_datasets
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)
from helpers import convert_images

import fastdata
from fastdata.errors import ShardError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ds(tmp_path: Path) -> dict[str, Path]:
    return make_datasets(tmp_path)


def forge_offsets(path: Path, column_path: list[str]) -> None:
    """Overwrite the last value offset of a binary/list column of the first batch with a huge number."""
    mm = pa.memory_map(str(path))
    base = mm.read_buffer(1).address
    mm.seek(0)
    batch = next(iter(pa.ipc.open_stream(mm)))
    arr = batch.column(column_path[0])
    for name in column_path[1:]:
        arr = arr.field(name)
    offsets = arr.buffers()[1]
    at = offsets.address - base + 4 * len(arr)
    mm.close()
    raw = bytearray(path.read_bytes())
    struct.pack_into("<i", raw, at, 10**8)
    path.write_bytes(bytes(raw))


def test_forged_image_offsets_are_refused_at_open(ds):
    shard = ds["arrow"] / "train-000000.arrow"
    forge_offsets(shard, ["image", "bytes"])
    with pytest.raises(ShardError, match="train-000000.arrow.*(damaged|Offset|offset)"):
        list(fastdata.loader(ds["arrow"], batch_size=4, backend="kornia", device="cpu", image_size=32))


def test_forged_token_offsets_are_refused_at_open(fortunes_tokens, tmp_path):
    import shutil

    copy = tmp_path / "tokens"
    shutil.copytree(fortunes_tokens, copy)
    forge_offsets(next(copy.glob("*.arrow")), ["input_ids"])
    with pytest.raises(ShardError, match="damaged|Offset|offset"):
        fastdata.loader(copy, max_tokens=4096)


SCRIPT = """
import os, sys
import fastdata
import fastdata.arrow_file as arrow_file
from fastdata.errors import ShardError
arrow_file.BLOCK, arrow_file.CACHED_BLOCKS = 4096, 2  # small reads, so the rest of the epoch reads after the cut
source, kind, backend = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "text":
    ld = fastdata.loader(source, batch_size=8, shuffle=False)
else:
    ld = fastdata.loader(source, split="train", batch_size=2, train=False, backend=backend, device="cpu",
                         image_size=32, num_threads=1, prefetch=1)
shards = sorted(p for p in os.listdir(source) if p.endswith((".tar", ".arrow")))
it = iter(ld)
next(it)
for name in shards:  # every shard shrinks to a tenth while the loader is in the middle of the epoch
    path = os.path.join(source, name)
    os.truncate(path, os.path.getsize(path) // 10)
try:
    for _ in it:
        pass
except ShardError as exc:
    print("ShardError:", exc)
    sys.exit(3)
print("no error")
"""


@pytest.mark.parametrize("kind,backend", [("wds", "kornia"), ("wds", "dali"), ("arrow", "kornia"),
                                          ("arrow", "dali"), ("text", "-")])
def test_a_shard_truncated_while_it_is_read_is_an_error_not_sigbus(ds, fortunes_tokens, tmp_path, kind, backend):
    if backend == "dali":
        pytest.importorskip("nvidia.dali")
    import shutil

    source = tmp_path / "copy"
    if kind == "arrow":  # one shard of 12 images, open before the cut: an Arrow shard's structure is read
        # through a map while it opens, a window docs/security.md states, that a shard opening on the
        # prefetch thread while the test cuts it would hit
        convert_images(tmp_path / "src", source, samples_per_shard=100, format="arrow")
    else:
        shutil.copytree(fortunes_tokens if kind == "text" else ds[kind], source)
    (tmp_path / "s.py").write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, str(tmp_path / "s.py"), str(source), kind, backend], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 3, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # -7 would be SIGBUS
    assert "ShardError" in done.stdout and ("shrank" in done.stdout or "truncated" in done.stdout)
