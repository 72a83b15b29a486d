"""JSON from files fastdata did not write is read by `fastdata.json_text.parse_json`: a number of more than
4,300 digits (a plain ValueError from `json.loads`, not a JSONDecodeError), nesting past the recursion
limit and undecodable bytes are a ManifestError, a recorded rejection or a ConvertError, never a
traceback out of the loader or the converter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest_images import make_datasets
from conftest_text import convert_text, read_rows
from http_server import FileServer

from converters.image_text.captions import read_captions
from fastdata.errors import ConvertError, ManifestError
from fastdata.json_text import BadJSON, parse_json
from fastdata.manifest import read_manifest

HUGE = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(("text", "message"), [
    (HUGE, "unreadable JSON: Exceeds the limit (4300"),  # Python 3.11+: "(4300 digits)"; 3.10: "(4300) for"
    (f'{{"n": {HUGE}}}', "Exceeds the limit"),
    (DEEP, "JSON nested too deeply to read"), ('{"a": 1', "invalid JSON: Expecting ',' delimiter at line 1"),
    (b"\xff\xfe\x00", "unreadable JSON"), ("", "invalid JSON: Expecting value at line 1 column 1"),
])
def test_parse_json_turns_every_failure_into_one_line(text, message):
    with pytest.raises(BadJSON) as info:
        parse_json(text)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_parse_json_reads_what_json_reads():
    assert parse_json('{"a": [1, 2.5, "x", null]}') == {"a": [1, 2.5, "x", None]}
    assert parse_json(b'{"n": ' + b"9" * 4300 + b"}")["n"] == int("9" * 4300)


@pytest.fixture
def wds(tmp_path: Path) -> Path:
    return make_datasets(tmp_path)["wds"]


@pytest.mark.parametrize("forged", [HUGE, DEEP])
def test_a_forged_manifest_is_a_manifest_error_local_and_remote(wds, forged):
    manifest = json.loads((wds / "manifest.json").read_text())
    text = json.dumps({**manifest, "num_samples": 0}).replace('"num_samples": 0', f'"num_samples": {forged}')
    (wds / "manifest.json").write_text(text)
    with pytest.raises(ManifestError, match=r"cannot read .*manifest.json: (unreadable JSON|JSON nested)"):
        read_manifest(wds)
    pytest.importorskip("obstore")
    import fastdata

    with FileServer(wds) as server, pytest.raises(ManifestError, match="manifest.json is not JSON"):
        fastdata.loader(server.url, batch_size=2, image_size=32, backend="kornia", device="cpu",
                        cache_dir=str(wds.parent / "cache"))


def test_a_jsonl_record_with_a_huge_number_is_rejected_and_the_rest_kept(tmp_path: Path):
    src = tmp_path / "src" / "a"
    src.mkdir(parents=True)
    (src / "docs.jsonl").write_text(f'{{"text": "kept"}}\n{{"text": "x", "n": {HUGE}}}\n{DEEP}\n', encoding="utf-8")
    (src / "whole.json").write_text(f'[{{"text": "x", "n": {HUGE}}}]', encoding="utf-8")
    result = convert_text(tmp_path / "src", tmp_path / "dst")
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    assert "Exceeds the limit" in reasons["a/docs.jsonl:2"]
    assert reasons["a/docs.jsonl:3"] == "JSON nested too deeply to read"
    assert "Exceeds the limit" in reasons["a/whole.json"]
    assert [r["source"] for r in read_rows(tmp_path / "dst")] == ["a/docs.jsonl:1"]


@pytest.mark.parametrize("name", ["c.jsonl", "c.json"])
def test_a_captions_file_with_a_huge_number_is_a_convert_error(tmp_path: Path, name: str):
    path = tmp_path / name
    path.write_text(f'{{"file": "a.jpg", "caption": "x", "n": {HUGE}}}\n', encoding="utf-8")
    with pytest.raises(ConvertError, match="Exceeds the limit"):
        read_captions(path)
