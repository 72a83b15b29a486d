"""A part of a conversion in parts (`--num-parts K --part I`) spills only the inputs it converts (converters/spill.py,
converters/part_reads.py): its first discovery spills nothing, and it discovers again for the probe's inputs (when it
makes the plan) and for its own. The shards are the bytes one run makes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest_pairs import TOKENIZER, convert_pairs
from conftest_text import FORTUNES, convert_text
from helpers import PHOTOS, convert_images, with_features

from converters.assemble import merge
from converters.spill import Spill
from converters.state import PLAN, partial_dir
from fastdata.errors import ConvertError
from fastdata.manifest import read_manifest


@pytest.fixture
def spills(monkeypatch: pytest.MonkeyPatch) -> list[tuple[frozenset[int] | None, int]]:
    """(ordinals written or None, bytes) of every spill file, as discovery leaves it."""
    seen: list[tuple[frozenset[int] | None, int]] = []
    flush = Spill.flush

    def recording(self: Spill) -> None:
        flush(self)
        seen.append((self.only, self.size))

    monkeypatch.setattr(Spill, "flush", recording)
    return seen


def _corpus(root: Path) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    for name in ("education", "wisdom"):
        (src / f"{name}.txt").write_bytes((FORTUNES / name).read_bytes())
    return src


def _shas(manifest) -> dict[str, list[str]]:
    return {name: [sh.sha256 for sh in manifest.split(name).shards] for name in manifest.splits}


def _converted_samples(dst: Path, part: int, num_parts: int) -> int:
    """The inputs of the shards that part `part` of `num_parts` converts, by the plan."""
    plan = json.loads((partial_dir(dst) / PLAN).read_text())
    return sum(s["stop"] - s["start"] for s in plan["shards"] if s["ordinal"] % num_parts == part)


def test_each_part_spills_its_own_documents_and_the_shards_are_one_runs(tmp_path: Path, spills: list) -> None:
    src = _corpus(tmp_path)
    whole = convert_text(src, tmp_path / "whole", separator="%", samples_per_shard=150)
    assert [only for only, _ in spills] == [None]
    total = spills.pop()[1]
    parts: list[tuple[frozenset[int], int]] = []
    for part in (2, 0, 1):
        assert convert_text(src, tmp_path / "parts", separator="%", samples_per_shard=150, num_parts=3,
                            part=part).manifest is None
        (nothing, empty), (only, size) = spills  # the count, then the part's own documents
        assert nothing == frozenset() and empty == 0
        assert len(only) == _converted_samples(tmp_path / "parts", part, 3) and 0 < size < total / 2
        parts.append((only, size))
        spills.clear()
    assert sum(size for _, size in parts) == total  # every document spilled once, by one part
    assert sorted(o for only, _ in parts for o in only) == list(range(sum(len(o) for o, _ in parts)))
    assert _shas(merge(tmp_path / "parts")) == _shas(whole.manifest)


def test_the_part_that_makes_the_plan_spills_the_probes_documents_too(tmp_path: Path, spills: list) -> None:
    src = _corpus(tmp_path)
    whole = convert_text(src, tmp_path / "whole", separator="%", shard_size=40_000)
    spills.clear()
    convert_text(src, tmp_path / "parts", separator="%", shard_size=40_000, num_parts=2, part=1)
    assert [len(only) for only, _ in spills][:2] == [0, 32]  # the probe: 32 documents of the one split
    assert len(spills) == 3 and len(spills[2][0]) == _converted_samples(tmp_path / "parts", 1, 2)
    spills.clear()
    convert_text(src, tmp_path / "parts", separator="%", shard_size=40_000, num_parts=2, part=0)
    assert len(spills) == 2  # the plan is there: no probe
    assert _shas(merge(tmp_path / "parts")) == _shas(whole.manifest)
    assert len(whole.manifest.split("train").shards) > 2


def test_a_part_whose_shards_are_done_reads_its_source_once(tmp_path: Path, spills: list) -> None:
    src = _corpus(tmp_path)
    for _ in range(2):
        convert_text(src, tmp_path / "parts", separator="%", samples_per_shard=400, num_parts=2, part=0)
    assert [len(only) for only, _ in spills][2:] == [0]  # the rerun: every shard of part 0 recorded


def test_a_source_that_changes_between_a_parts_reads_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                spills: list) -> None:
    import converters.part_reads as part_reads

    src = _corpus(tmp_path)
    survey = part_reads.survey

    def changing(*args, **kwargs):  # the second read: the source has grown since the first
        with (src / "wisdom.txt").open("a", encoding="utf-8") as f:
            f.write("%\nA document written while the part ran.\n")
        return survey(*args, **kwargs)

    monkeypatch.setattr(part_reads, "survey", changing)
    with pytest.raises(ConvertError, match=r"source .*src changed while this part read it: run the part again once "
                                           r"it is settled"):
        convert_text(src, tmp_path / "parts", separator="%", samples_per_shard=400, num_parts=2, part=0)
    assert not list((tmp_path / "parts").glob("*.arrow"))


def test_a_renamed_input_between_reads_is_refused_though_the_counts_agree(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The fingerprint holds every file's size and document count; the names are compared too."""
    import converters.engine as engine
    import converters.part_reads as part_reads

    src = _corpus(tmp_path)
    survey = part_reads.survey
    for module in (engine, part_reads):
        monkeypatch.setattr(module, "fingerprint", lambda *a: "same")

    def renaming(*args, **kwargs):
        (src / "wisdom.txt").rename(src / "wisdom2.txt")
        return survey(*args, **kwargs)

    monkeypatch.setattr(part_reads, "survey", renaming)
    with pytest.raises(ConvertError, match="changed while this part read it"):
        convert_text(src, tmp_path / "parts", separator="%", samples_per_shard=400, num_parts=2, part=0)


def test_tables_of_images_in_parts_spill_their_own_images(tmp_path: Path, spills: list) -> None:
    photos = sorted(PHOTOS.glob("*.jpg"))[:12]
    image = pa.array([{"bytes": p.read_bytes(), "path": p.name} for p in photos],
                     type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    table = with_features(pa.table({"image": image, "label": pa.array([i % 2 for i in range(12)])}),
                          {"image": {"_type": "Image"}, "label": {"names": ["a", "b"], "_type": "ClassLabel"}})
    (tmp_path / "src").mkdir()
    pq.write_table(table, tmp_path / "src" / "train.parquet", row_group_size=4)
    whole = convert_images(tmp_path / "src", tmp_path / "whole", samples_per_shard=3)
    total = spills.pop()[1]
    for part in (0, 1):
        convert_images(tmp_path / "src", tmp_path / "parts", samples_per_shard=3, num_parts=2, part=part)
        assert len(spills[-1][0]) == 6 and spills[-1][1] < total
    assert _shas(merge(tmp_path / "parts")) == _shas(whole.manifest)


def test_caption_tables_in_parts_spill_their_own_images(tmp_path: Path, spills: list) -> None:
    photos = sorted(PHOTOS.glob("*.jpg"))[:8]
    image = pa.array([{"bytes": p.read_bytes(), "path": p.name} for p in photos],
                     type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    table = with_features(pa.table({"image": image, "caption": [f"photo number {i}" for i in range(8)]}),
                          {"image": {"_type": "Image"}})
    (tmp_path / "src").mkdir()
    pq.write_table(table, tmp_path / "src" / "train.parquet")
    whole = convert_pairs(tmp_path / "src", tmp_path / "whole", tokenizer=str(TOKENIZER), samples_per_shard=2)
    total = spills.pop()[1]
    for part in (1, 0):
        convert_pairs(tmp_path / "src", tmp_path / "parts", tokenizer=str(TOKENIZER), samples_per_shard=2,
                      num_parts=2, part=part)
        assert len(spills[-1][0]) == 4 and spills[-1][1] < total
    assert _shas(merge(tmp_path / "parts")) == _shas(whole.manifest)
    assert read_manifest(tmp_path / "parts").kind == "image_text"
