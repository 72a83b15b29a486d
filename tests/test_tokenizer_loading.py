"""Loading a tokenizer by path at load time (`fastdata.text.tokenizer.load_tokenizer`: the pairs loader's
`tokenizer=` option): a file or a folder holding tokenizer.json, its sha256 and padding id, and clear errors
(gaps a mutation round of the module found: none of this was pinned)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("tokenizers")

from conftest_text import TOKENIZER  # noqa: E402

from fastdata.errors import FastdataError  # noqa: E402
from fastdata.text.tokenizer import BOS_TOKENS, EOS_TOKENS, PAD_TOKENS, first_id, load_tokenizer  # noqa: E402


def test_a_folder_holding_tokenizer_json_loads_as_the_file(tmp_path: Path):
    folder = tmp_path / "bert"
    folder.mkdir()
    shutil.copyfile(TOKENIZER, folder / "tokenizer.json")
    tok, sha, pad = load_tokenizer(folder)
    assert sha == hashlib.sha256(TOKENIZER.read_text(encoding="utf-8").encode()).hexdigest() == load_tokenizer(
        TOKENIZER)[1]
    assert pad == 0 and tok.encode("hello world").ids == load_tokenizer(TOKENIZER)[0].encode("hello world").ids


@pytest.mark.parametrize("make", [
    lambda d: d,  # a folder without tokenizer.json
    lambda d: d / "missing.json",
    lambda d: (d / "latin1.json").write_bytes(b"\xff{}") and d / "latin1.json",
    lambda d: d / ("x" * 300),  # a name too long: OSError from is_dir(), before the read that said why
])
def test_an_unreadable_tokenizer_names_its_path(tmp_path: Path, make):
    path = make(tmp_path)
    with pytest.raises(FastdataError, match=f"^cannot read tokenizer file {path}: "):
        load_tokenizer(path)


def test_a_file_that_is_not_a_tokenizer_names_its_path(tmp_path: Path):
    (tmp_path / "t.json").write_text('{"not": "a tokenizer"}')
    with pytest.raises(FastdataError, match=f"^{tmp_path / 't.json'} is not a valid Hugging Face tokenizer.json: "):
        load_tokenizer(tmp_path / "t.json")


def _variant(tmp_path: Path, padding: object, prefix: str = "") -> Path:
    doc = json.loads(TOKENIZER.read_text(encoding="utf-8"))
    doc["padding"] = padding
    path = tmp_path / "variant.json"
    path.write_text(prefix + json.dumps(doc), encoding="utf-8")
    return path


def test_the_padding_id_is_the_declared_one_else_the_usual_pad_token(tmp_path: Path):
    declared = {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None, "pad_id": 5,
                "pad_type_id": 0, "pad_token": "[unused4]"}
    assert load_tokenizer(_variant(tmp_path, declared, prefix="\n  "))[2] == 5  # leading whitespace before '{'
    assert load_tokenizer(_variant(tmp_path, None))[2] == 0  # no padding declared: the id of [PAD]
    tok = load_tokenizer(TOKENIZER)[0]
    assert (first_id(tok, PAD_TOKENS), first_id(tok, BOS_TOKENS), first_id(tok, EOS_TOKENS)) == (0, 101, 102)
    assert first_id(tok, ("<no such token>",)) is None
