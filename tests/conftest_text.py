"""Builders and fixtures for the text kind and the sequence loader (imported by tests/test_text_* and
tests/test_sequence_*): real fortunes text copied into class folders, and in-process conversion."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import SAMPLES

FORTUNES = SAMPLES / "text" / "fortunes"
TOKENIZER = SAMPLES / "tokenizers" / "bert-base-uncased.json"


def copy_fortunes(root: Path, names: tuple[str, ...] = ("computers", "education", "linux", "science", "wisdom"),
                  *, suffix: str = ".txt") -> Path:
    """`root/<name>/<name><suffix>`: each real fortunes file is its own class."""
    if not FORTUNES.is_dir() or not TOKENIZER.is_file():
        pytest.fail(f"bundled data missing: {FORTUNES} or {TOKENIZER}")
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FORTUNES / name, root / name / f"{name}{suffix}")
    return root


def fortune_records(path: Path) -> list[str]:
    """The records of a fortunes file, split independently of the converter: lines between `%` lines."""
    records, current = [], []
    for line in path.read_text(encoding="utf-8").split("\n") + ["%"]:
        if line.rstrip() == "%":
            if "\n".join(current).strip():
                records.append("\n".join(current))
            current = []
        else:
            current.append(line)
    return records


def bert():
    """The real tokenizer as `tokenizers` itself builds it, with variable-length output."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.no_padding()
    tok.no_truncation()
    return tok


def convert_text(src: Path, dst: Path, **kw: object):
    """Run the text conversion in-process (1 job unless given, real tokenizer unless given)."""
    from converters import get_kind
    from converters.engine import ConvertConfig, convert
    from converters.text import TextOptions

    config_keys = {"jobs", "samples_per_shard", "seed", "num_parts", "part", "shard_size"}
    opts = TextOptions(**{"tokenizer": str(TOKENIZER), **{k: v for k, v in kw.items() if k not in config_keys}})
    cfg = {"jobs": 1, **{k: v for k, v in kw.items() if k in config_keys}}
    return convert(get_kind("text"), src, dst, options=opts, config=ConvertConfig(**cfg))


def read_rows(dst: Path) -> list[dict]:
    rows = []
    for shard in sorted(dst.glob("*.arrow")):
        with pa.ipc.open_stream(pa.memory_map(str(shard))) as reader:
            rows.extend(reader.read_all().to_pylist())
    return rows


@pytest.fixture(scope="session", name="fortunes_tokens")
def fortunes_tokens_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All five fortunes files as classes, converted with the real tokenizer into 4 shards."""
    root = tmp_path_factory.mktemp("fortunes")
    copy_fortunes(root / "src")
    convert_text(root / "src", root / "tokens", separator="%", samples_per_shard=700)
    return root / "tokens"
