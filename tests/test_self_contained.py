"""A clone of the repository works with nothing beside it: every data path the tests, the demo and the
benchmarks use resolves inside the repository, and the bundled samples are there with their notice."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = {".py", ".sh", ".md", ".toml", ".cfg", ".txt", ""}


def tracked_files() -> list[Path]:
    """The files a clone holds (git's list; a plain walk outside a git checkout)."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True).stdout
        return [ROOT / p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]
    skip = {".venv", ".git", "__pycache__", "demo-out", "bench-out"}
    return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def test_no_file_reaches_outside_the_repository():
    pattern = re.compile(r"\.\./shared|shared/data|parents\[2\]\s*/")
    offenders = []
    for path in tracked_files():
        if path.suffix not in TEXT_SUFFIXES or path == Path(__file__).resolve() or "data" in path.parts[-3:-1]:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        offenders += [f"{path.relative_to(ROOT)}:{n}" for n, line in enumerate(text.splitlines(), 1)
                      if pattern.search(line)]
    assert offenders == []


def test_bundled_samples_have_a_notice_naming_each_source():
    data = ROOT / "tests" / "data"
    notice = (data / "README.md").read_text(encoding="utf-8")
    for folder in ("photos/", "text/fortunes/", "tokenizers/bert-base-uncased.json"):
        assert f"`{folder}`" in notice
    assert len(list((data / "photos").glob("*.jpg"))) == 59
    assert sorted(p.name for p in (data / "text" / "fortunes").iterdir()) == [
        "computers", "education", "linux", "science", "wisdom"]
    assert (data / "tokenizers" / "bert-base-uncased.json").stat().st_size > 100_000


def test_a_copy_with_nothing_beside_it_finds_all_its_data(tmp_path: Path):
    """Copy the tracked files alone into an empty folder and resolve every data path from there."""
    clone = tmp_path / "lonely" / "fastdata"
    for path in tracked_files():
        target = clone / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    probe = """
import sys, importlib.util
from pathlib import Path
sys.path[:0] = ["tests", "benchmarks"]
import helpers, conftest_text, common
def load(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); return module
demo, sequences = load("scripts/demo.py"), load("benchmarks/sequences.py")
args = sequences.parse_args([]) if hasattr(sequences, "parse_args") else None
paths = [helpers.PHOTOS, conftest_text.FORTUNES, conftest_text.TOKENIZER, common.PHOTOS, demo.SAMPLES / "photos"]
if args is not None:
    paths += [args.text, args.tokenizer]
root = Path.cwd().resolve()
for p in paths:
    p = Path(p).resolve()
    assert p.exists(), p
    assert root in p.parents, (p, root)
print(len(paths))
"""
    env = {**os.environ, "PYTHONPATH": str(clone)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=clone, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 5
    assert not (tmp_path / "lonely" / "shared").exists()
