"""Reliability: deterministic bytes, resume after a crash or kill -9, and --num-parts/--part/--merge."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree

from converters import state
from converters.writers import wds
from fastdata.cli import main as cli
from fastdata.errors import ConvertError


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("resume") / "src"
    make_image_tree(src, classes=3, per_class=10, size=(300, 200))  # re-encoded: exercises the encoder
    return src


@pytest.fixture(scope="module")
def reference(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("ref") / "out"
    convert_images(tree, out, samples_per_shard=4, short_side=128)
    return _files(out)


def test_same_input_same_bytes_whatever_the_jobs(tree: Path, tmp_path: Path, reference: dict[str, bytes]) -> None:
    convert_images(tree, tmp_path / "j2", samples_per_shard=4, short_side=128, jobs=2)
    assert _files(tmp_path / "j2") == reference
    assert sorted(reference) == ["manifest.json"] + [f"train-{i:06d}.{e}" for i in range(8) for e in ("idx", "tar")]


def test_seed_changes_the_order(tree: Path, tmp_path: Path, reference: dict[str, bytes]) -> None:
    convert_images(tree, tmp_path / "s1", samples_per_shard=4, short_side=128, seed=1)
    assert _files(tmp_path / "s1")["train-000000.tar"] != reference["train-000000.tar"]


@pytest.mark.parametrize("crash_at", ["writer_close", "record_save"])
@pytest.mark.parametrize("after", [0, 3])
def test_crash_then_rerun_resumes_and_is_byte_identical(tree: Path, tmp_path: Path, reference: dict[str, bytes],
                                                         monkeypatch: pytest.MonkeyPatch, crash_at: str,
                                                         after: int) -> None:
    calls = {"n": 0}
    target = (wds.WdsShardWriter, "close") if crash_at == "writer_close" else (state, "save_record")
    original = getattr(*target)

    def crashing(*args, **kwargs):
        if calls["n"] == after:
            raise KeyboardInterrupt("simulated crash")
        calls["n"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(*target, crashing)
    with pytest.raises(KeyboardInterrupt):
        convert_images(tree, tmp_path / "out", samples_per_shard=4, short_side=128)
    assert not (tmp_path / "out" / "manifest.json").exists()
    monkeypatch.setattr(*target, original)
    result = convert_images(tree, tmp_path / "out", samples_per_shard=4, short_side=128)
    assert len(result.skipped) == after
    assert _files(tmp_path / "out") == reference


def test_kill_9_mid_run_then_rerun_is_byte_identical(tree: Path, tmp_path: Path, reference: dict[str, bytes]) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "fastdata", "convert", str(tree), str(out), "-j", "1", "--samples-per-shard", "4",
           "--short-side", "128", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = out / ".partial" / "records"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if records.exists() and len(list(records.iterdir())) >= 2:
            break
        time.sleep(0.002)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_early = not (out / "manifest.json").exists()
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    assert _files(out) == reference
    assert killed_early or proc.returncode == 0


def test_parts_then_merge(tree: Path, tmp_path: Path, reference: dict[str, bytes], capsys) -> None:
    out = tmp_path / "out"
    base = ["convert", str(tree), str(out), "-j", "1", "--samples-per-shard", "4", "--short-side", "128",
            "--num-parts", "3"]
    assert cli([*base, "--part", "0"]) == 0
    assert cli([*base, "--part", "2"]) == 0
    assert not (out / "manifest.json").exists()
    assert cli(["convert", "--merge", str(out)]) == 2
    assert "not converted yet (train-000001.tar, train-000004.tar, train-000007.tar)" in capsys.readouterr().err
    with pytest.raises(ConvertError):
        from converters.engine import merge

        merge(out)
    assert cli([*base, "--part", "1"]) == 0
    assert cli(["convert", "--merge", str(out)]) == 0
    assert _files(out) == reference
    assert cli(["convert", "--merge", str(out)]) == 0  # merging again is harmless


def test_rerun_of_a_finished_conversion_is_a_no_op(small_tree: Path, tmp_path: Path) -> None:
    convert_images(small_tree, tmp_path / "out")
    before = _files(tmp_path / "out")
    result = convert_images(small_tree, tmp_path / "out")
    assert result.converted == [] and _files(tmp_path / "out") == before
