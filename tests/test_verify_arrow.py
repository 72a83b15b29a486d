"""`verify` on Arrow image shards: a fresh dataset has no problem (decode included), and a shard rewritten by a
forger (its size and sha256 fixed in the manifest) has each of its problems named: the row count, image bytes
missing, a label outside the classes, class counts, image bytes not decoding, or not baseline RGB JPEG."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pytest
from conftest_images import make_datasets
from helpers import rewrite_arrow_shard
from PIL import Image

from fastdata.verify import verify_dataset


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_datasets(tmp_path_factory.mktemp("verify-arrow"))["arrow"]


def test_a_fresh_arrow_dataset_has_no_problem(pristine):
    assert verify_dataset(pristine) == [] and verify_dataset(pristine, decode=True) == []


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (1, 2, 3)).save(buf, "PNG")
    return buf.getvalue()


def _forge(root: Path, name: str, edit) -> None:
    """Rewrite shard `name` as edit(list of row dicts) -> rows, same schema, and its size and sha256 in the manifest."""
    rewrite_arrow_shard(root, name, lambda t: pa.Table.from_pylist(edit(t.to_pylist()), schema=t.schema))


def test_each_problem_of_a_forged_arrow_shard_is_named(pristine, tmp_path):
    import shutil

    root = Path(shutil.copytree(pristine, tmp_path / "arrow"))
    keys = []

    def edit(rows):
        keys.extend(r["key"] for r in rows)
        rows[0]["image"] = {"bytes": None, "path": None}
        rows[1]["image"]["bytes"] = rows[1]["image"]["bytes"][:200]
        rows[2]["image"]["bytes"] = _png()
        rows[3]["label"] = 7
        return rows[:4]  # one row fewer than the manifest's 5

    _forge(root, "train-000000.arrow", edit)
    path = root / "train-000000.arrow"
    labels = [r["label"] for r in pa.ipc.open_stream(pa.memory_map(str(path))).read_all().to_pylist()]
    problems = verify_dataset(root, decode=True)
    assert problems[:5] == [
        f"{path}: 4 rows, the manifest says 5",
        f"{path}: column image.bytes holds 1 null value(s), the first in row 0",
        f"{path}: row 3 has label 7, outside 0..2",
        problems[3],
        f"{path}: sample {keys[2]} is PNG RGB, expected baseline RGB JPEG",
    ]
    assert problems[3].startswith(f"{path}: sample {keys[1]} does not decode: ")
    counts = json.loads((root / "manifest.json").read_text())["splits"]["train"]["class_counts"]
    found = [0, 0, 0]
    for label in labels[:3]:
        found[label] += 1
    for shard in ("train-000001.arrow", "train-000002.arrow"):
        for row in pa.ipc.open_stream(pa.memory_map(str(root / shard))).read_all().to_pylist():
            found[row["label"]] += 1
    assert found != counts
    assert problems[5:] == [f"split train: class counts {found} differ from the manifest's {counts}"]
    assert verify_dataset(root) == problems[:3] + problems[5:]  # without --decode: no image bytes are decoded


def _jpeg(**save) -> bytes:
    buf = io.BytesIO()
    mode = save.pop("mode", "RGB")
    Image.new(mode, (16, 16), 100 if mode == "L" else (1, 2, 3)).save(buf, "JPEG", **save)
    return buf.getvalue()


def test_decode_names_a_progressive_or_grey_jpeg_and_survives_a_null_image(pristine, tmp_path):
    """Gaps a mutation round of verify.py found: each of 'progressive' and 'not RGB' alone is a problem, and a null
    image (named as a null column) is skipped by the decode pass, not read."""
    import shutil

    root = Path(shutil.copytree(pristine, tmp_path / "arrow"))
    keys = []

    def edit(rows):
        keys.extend(r["key"] for r in rows)
        rows[0]["image"]["bytes"] = _jpeg(progressive=True)
        rows[1]["image"]["bytes"] = _jpeg(mode="L")
        rows[2]["image"] = None
        return rows

    _forge(root, "train-000000.arrow", edit)
    path = root / "train-000000.arrow"
    assert verify_dataset(root, decode=True) == [
        f"{path}: column image.bytes holds 1 null value(s), the first in row 2",
        f"{path}: sample {keys[0]} is JPEG RGB, expected baseline RGB JPEG",
        f"{path}: sample {keys[1]} is JPEG L, expected baseline RGB JPEG",
    ]
