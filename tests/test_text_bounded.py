"""Text discovery is streamed: memory bounded by --max-document-bytes, not by the corpus or a gzip bomb;
a document over the cap is a recorded rejection, and its neighbours are kept."""

from __future__ import annotations

import gzip
import json
import tempfile
import tracemalloc
from pathlib import Path

import pytest
from conftest_text import TOKENIZER, convert_text, read_rows

from converters.text.discover import discover_text
from converters.text.options import TextOptions

MiB = 2**20


def _discover(src: Path, **options):
    return discover_text(src, options=TextOptions(tokenizer=str(TOKENIZER), **options))


def _peak(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _texts(found) -> dict[str, str]:
    return {it.rel: it.payload.read() for items in found.splits.values() for it in items}


def test_discovery_memory_does_not_grow_with_the_text(tmp_path: Path) -> None:
    """Forty 512 KiB documents (20 MiB of JSONL): what discovery holds is the work items, not the text."""
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "big.jsonl", "w", encoding="utf-8") as f:
        for i in range(40):
            f.write(json.dumps({"text": f"doc{i} " + "x" * (512 * 1024)}) + "\n")
    found, peak = _peak(lambda: _discover(src))
    texts = _texts(found)
    assert len(texts) == 40 and texts["big.jsonl:7"].startswith("doc6 ") and len(texts["big.jsonl:7"]) == 5 + 512 * 1024
    assert peak < 4 * MiB, f"discovery peaked at {peak / MiB:.1f} MiB for 20 MiB of text"


def test_a_gzip_bomb_is_a_rejection_within_the_cap(tmp_path: Path) -> None:
    """Under 1 MiB of gzip inflating to 96 MiB without a newline: rejected having held about one cap."""
    src = tmp_path / "src"
    src.mkdir()
    with gzip.open(src / "bomb.txt.gz", "wb", compresslevel=1) as f:
        for _ in range(96):
            f.write(b"a" * MiB)
    assert (src / "bomb.txt.gz").stat().st_size < 1 * MiB
    (src / "fine.txt").write_text("a fine document", encoding="utf-8")
    found, peak = _peak(lambda: _discover(src, max_document_bytes=MiB))
    assert [(r.source, r.reason) for r in found.rejected] == [
        ("bomb.txt.gz", f"document larger than --max-document-bytes ({MiB} bytes)")]
    assert _texts(found) == {"fine.txt": "a fine document"}
    assert peak < 8 * MiB, f"discovery peaked at {peak / MiB:.1f} MiB"
    # per line: the one long line is skipped in chunks, the lines around it are kept
    found, peak = _peak(lambda: _discover(src, max_document_bytes=MiB, per_line=True))
    assert [(r.source, r.reason) for r in found.rejected] == [
        ("bomb.txt.gz:1", f"document larger than --max-document-bytes ({MiB} bytes)")]
    assert peak < 8 * MiB


def test_oversized_records_are_rejected_and_their_neighbours_kept(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "docs.jsonl").write_text("\n".join(json.dumps({"text": t}) for t in ["one", "y" * 5000, "three"]) + "\n")
    (src / "recs.txt").write_text("first\n%\n" + "z\n" * 3000 + "%\nthird\n%\n")
    (src / "whole.json").write_text(json.dumps([{"text": "w" * 5000}]))
    (src / "lines.txt").write_bytes(b"good line\ncaf\xe9 latin-1\n" + b"q" * 5000 + b"\r\nlast line\r\n")
    found = _discover(src, max_document_bytes=4096)
    reasons = {r.source: r.reason for r in found.rejected}
    too_large = "document larger than --max-document-bytes (4096 bytes)"
    assert reasons == {
        "docs.jsonl:2": too_large,
        "recs.txt": too_large,  # a whole plain file is one document
        "whole.json": "a .json file is parsed whole: it is larger than --max-document-bytes (4096 bytes)",
        "lines.txt": too_large,
    }
    texts = _texts(found)
    assert texts["docs.jsonl:1"] == "one" and texts["docs.jsonl:3"] == "three"
    found = _discover(src / "recs.txt", max_document_bytes=4096, separator="%")
    assert {r.source: r.reason for r in found.rejected} == {"recs.txt#1": too_large}
    assert _texts(found) == {"recs.txt#0": "first", "recs.txt#2": "third"}
    found = _discover(src / "lines.txt", max_document_bytes=4096, per_line=True)
    assert {r.source: r.reason for r in found.rejected} == {
        "lines.txt:2": "not UTF-8 text: undecodable byte 0xe9 at offset 13", "lines.txt:3": too_large}
    assert _texts(found) == {"lines.txt:1": "good line", "lines.txt:4": "last line"}


def test_the_spill_file_is_gone_after_the_conversion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spills = tmp_path / "tmp"
    spills.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spills))
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("to be or not to be\nthat is the question\n", encoding="utf-8")
    result = convert_text(src, tmp_path / "dst", per_line=True)
    assert sorted(r["source"] for r in read_rows(tmp_path / "dst")) == ["a.txt:1", "a.txt:2"]
    assert result.manifest.preprocessing["max_document_bytes"] == 64 * MiB
    import gc

    gc.collect()
    assert list(spills.iterdir()) == []


def _zstd_file(path: Path, chunks) -> None:
    import pyarrow as pa

    with pa.CompressedOutputStream(str(path), "zstd") as out:
        for chunk in chunks:
            out.write(chunk)


def _read_in_a_child(path: Path, per_line: tuple[bool, ...]) -> tuple[list[list[tuple[str, str]]], int]:
    """(the documents of `path` read with each `per_line`, as (where, text or reason)), and how many MiB the reading
    grew a fresh process by (pyarrow decompresses into its own memory, which tracemalloc does not see: the child's
    peak RSS does)."""
    import ast
    import subprocess
    import sys

    code = f"""
import resource
from pathlib import Path
from converters.text.options import TextOptions
from converters.text.records import read_documents
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
found = [list(read_documents(Path({str(path)!r}), TextOptions(tokenizer="t", per_line=p, max_document_bytes={MiB})))
         for p in {per_line!r}]
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(repr([[(where, str(text)) for where, text in docs] for docs in found]))
print(grown // 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parent.parent).stdout.split("\n")
    return ast.literal_eval(out[0]), int(out[1])


def test_a_zstd_bomb_is_a_rejection_within_the_cap(tmp_path: Path) -> None:
    """32 KiB of zstd inflating to 1 GiB without a newline: rejected, the reading process growing by far less than
    the text."""
    _zstd_file(tmp_path / "bomb.txt.zst", (b"a" * MiB for _ in range(1024)))
    assert (tmp_path / "bomb.txt.zst").stat().st_size < 64 * 1024
    docs, grown = _read_in_a_child(tmp_path / "bomb.txt.zst", (False, True))
    too_large = f"Reject(reason='document larger than --max-document-bytes ({MiB} bytes)')"
    assert docs == [[("", too_large)], [(":1", too_large)]]
    assert grown < 48, f"reading 1 GiB of zstd text grew the process by {grown} MiB"


def test_a_table_of_one_endless_line_is_read_within_a_bound(tmp_path: Path) -> None:
    """A CSV whose second line is 1 GiB long: the table stops there, having read at most four documents and a MiB of
    it, not the whole line."""
    _zstd_file(tmp_path / "bomb.csv.zst", [b"text\n", *(b"a" * MiB for _ in range(1024))])
    docs, grown = _read_in_a_child(tmp_path / "bomb.csv.zst", (False,))
    bound = 4 * MiB + MiB
    assert docs == [[(":2", f"Reject(reason='the table cannot be read from line 2 on: Error: a line longer than "
                            f"{bound} bytes')")]]
    assert grown < 48, f"reading a 1 GiB line of a table grew the process by {grown} MiB"


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_a_stream_cut_short_keeps_the_documents_before_the_damage(tmp_path: Path, codec: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    lines = ["".join(json.dumps({"text": f"doc {i} " + "w" * 200}) + "\n" for i in range(j, j + 100)).encode()
             for j in range(0, 4000, 100)]
    if codec == "gzip":
        data = gzip.compress(b"".join(lines))
    else:
        _zstd_file(tmp_path / "whole.zst", lines)
        data = (tmp_path / "whole.zst").read_bytes()
    name = f"cut.jsonl.{'gz' if codec == 'gzip' else 'zst'}"
    (src / name).write_bytes(data[: len(data) * 2 // 3])
    found = _discover(src)
    [rejected] = found.rejected
    assert rejected.source == name and rejected.reason.startswith(f"corrupt {codec} data")
    kept = _texts(found)
    assert 0 < len(kept) < 4000 and kept[f"{name}:1"].startswith("doc 0 ")
