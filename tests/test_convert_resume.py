"""Reliability: deterministic bytes, resume after a crash or kill -9, and --num-parts/--part/--merge."""

from __future__ import annotations

import hashlib
import json
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


def test_a_crash_inside_a_write_leaves_the_old_file_or_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastdata import atomic

    target = tmp_path / "state.json"
    atomic.write_bytes_atomic(target, b"old")

    def crash(*args, **kwargs):
        raise OSError("disk gone")

    monkeypatch.setattr(atomic.os, "replace", crash)
    with pytest.raises(OSError):
        atomic.write_bytes_atomic(target, b"new and longer")
    assert target.read_bytes() == b"old"  # never half of the new content
    monkeypatch.setattr(atomic.os, "fsync", crash)
    with pytest.raises(OSError):
        atomic.write_bytes_atomic(tmp_path / "fresh.json", b"new")
    assert not (tmp_path / "fresh.json").exists()


def test_a_crash_while_a_shard_is_written_leaves_no_shard_under_its_name(tree: Path, tmp_path: Path,
                                                                         reference: dict[str, bytes],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    original = wds.WdsShardWriter.add
    added = []

    def crashing(self, sample):
        added.append(sample.key)
        if len(added) == 6:  # the second sample of the second shard
            raise KeyboardInterrupt("killed mid-shard")
        return original(self, sample)

    monkeypatch.setattr(wds.WdsShardWriter, "add", crashing)
    with pytest.raises(KeyboardInterrupt):
        convert_images(tree, tmp_path / "out", samples_per_shard=4, short_side=128)
    monkeypatch.undo()
    finals = sorted(p.name for p in (tmp_path / "out").glob("train-*") if not p.name.endswith(".tmp"))
    assert finals == ["train-000000.idx", "train-000000.tar"]  # the half-written shard has no final name
    assert not list((tmp_path / "out").glob("*.tmp"))  # and its writer removed its temporary file
    result = convert_images(tree, tmp_path / "out", samples_per_shard=4, short_side=128)
    assert len(result.skipped) == 1 and _files(tmp_path / "out") == reference


@pytest.mark.parametrize("fail_on", [".idx", ".tar"])
def test_a_shard_whose_files_cannot_be_moved_into_place_leaves_no_temporary_file(tree: Path, tmp_path: Path,
                                                                                 reference: dict[str, bytes],
                                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                                 fail_on: str) -> None:
    """close() moves the index, then the tar, into place; a failure at either (a full disk, a vanished folder)
    reaches the user as it was, with neither temporary file left behind, and a rerun finishes the dataset."""
    original = wds.commit

    def failing(tmp: Path, final: Path) -> None:
        if final.name == f"train-000001{fail_on}":
            raise OSError(28, "No space left on device (simulated)")
        original(tmp, final)

    monkeypatch.setattr(wds, "commit", failing)
    with pytest.raises(OSError, match=r"No space left on device \(simulated\)"):
        convert_images(tree, tmp_path / "out", samples_per_shard=4, short_side=128)
    assert not list((tmp_path / "out").glob("*.tmp"))
    assert not (tmp_path / "out" / "train-000001.tar").exists()
    monkeypatch.undo()
    convert_images(tree, tmp_path / "out", samples_per_shard=4, short_side=128)
    assert _files(tmp_path / "out") == reference


def test_a_recorded_shard_truncated_or_replaced_is_made_again(tree: Path, tmp_path: Path,
                                                              reference: dict[str, bytes],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    original = state.save_record
    saved = []

    def crash_after_three(*args, **kwargs):
        original(*args, **kwargs)
        saved.append(1)
        if len(saved) == 3:
            raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(state, "save_record", crash_after_three)
    with pytest.raises(KeyboardInterrupt):
        convert_images(tree, tmp_path / "out", samples_per_shard=4, short_side=128)
    monkeypatch.undo()
    out = tmp_path / "out"
    shard0, shard1, shard2 = (out / f"train-00000{i}.tar" for i in range(3))
    shard0.write_bytes(shard0.read_bytes()[:-1024])  # truncated
    data = bytearray(shard1.read_bytes())
    data[2000:2010] = b"x" * 10
    shard1.write_bytes(bytes(data))  # replaced by other bytes of the same size
    shard2.write_bytes(shard2.read_bytes())  # rewritten with the same bytes (a copy): newer mtime, same content
    result = convert_images(tree, out, samples_per_shard=4, short_side=128)
    assert result.skipped == ["train-000002.tar"]  # the copy is kept (its sha256 matches its record)
    assert sorted(result.converted)[:2] == ["train-000000.tar", "train-000001.tar"]
    assert _files(out) == reference


_STALL_AFTER_TWO_RECORDS = """
import sys, time
from pathlib import Path
from converters import state
original = state.save_record
done = []
def stalling(*args, **kwargs):
    original(*args, **kwargs)
    done.append(1)
    if len(done) == 2:  # two shards recorded: say so, then hang until killed (the kill lands mid-run)
        Path(sys.argv[1]).write_text("ready")
        time.sleep(3600)
state.save_record = stalling
from fastdata.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_kill_9_mid_run_then_rerun_is_byte_identical(tree: Path, tmp_path: Path, reference: dict[str, bytes]) -> None:
    out, ready = tmp_path / "out", tmp_path / "ready"
    args = ["convert", str(tree), str(out), "-j", "1", "--samples-per-shard", "4", "--short-side", "128",
            "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-c", _STALL_AFTER_TWO_RECORDS, str(ready), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready.exists(), "the conversion never reached its second shard"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert not (out / "manifest.json").exists() and len(list((out / ".partial" / "records").iterdir())) == 2
    rerun = subprocess.run([sys.executable, "-m", "fastdata", *args], capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert "skipped 2 already done" in rerun.stdout
    assert _files(out) == reference


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
        from converters.assemble import merge

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


def test_canonical_json_sorts_keys_at_every_level():
    """Manifests, plans and records are byte-identical across runs only if their JSON does not depend on the
    order a dict was built in."""
    from fastdata.atomic import dumps_json

    assert dumps_json({"b": 1, "a": {"d": 2, "c": "é"}}) == '{\n "a": {\n  "c": "é",\n  "d": 2\n },\n "b": 1\n}\n'



def _record_first_shard(out: Path) -> None:
    """Record train-000000.tar and its index as written now, as a finished shard task does."""
    name = "train-000000.tar"
    shard = {"name": name, "index": "train-000000.idx", "bytes": (out / name).stat().st_size,
             "sha256": hashlib.sha256((out / name).read_bytes()).hexdigest()}
    state.save_record(out, name, {"split": "train", "shard": shard, "class_counts": {}, "stats": {}, "rejected": []})


@pytest.mark.parametrize("member", ["tar", "idx"])
def test_a_record_vouches_for_touched_files_with_the_same_bytes_only(tree: Path, tmp_path: Path, member: str):
    """Two attempts at one shard (a retried task whose first attempt still runs) rename identical bytes into
    place: the record may hold the mtime of one attempt's file and the disk the other's. Same bytes: still
    finished; other bytes: converted again."""
    out = tmp_path / "out"
    convert_images(tree, out, samples_per_shard=4, short_side=128)
    name = "train-000000.tar"
    path = out / f"train-000000.{member}"
    data = path.read_bytes()
    _record_first_shard(out)
    assert state.load_record(out, name) is not None
    stamp = path.stat().st_mtime_ns + 10**9
    path.write_bytes(data)  # another attempt's identical file
    os.utime(path, ns=(stamp, stamp))
    assert state.load_record(out, name) is not None
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size, other bytes
    os.utime(path, ns=(stamp, stamp))
    assert state.load_record(out, name) is None


def test_a_record_trusts_untouched_files_without_hashing_and_not_missing_ones(tree: Path, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch, caplog):
    """Resuming a large destination stats its recorded files, it does not read them: a file whose size and mtime
    are as recorded is not hashed. A missing tar or index makes the shard again, and so does an index touched
    since a record of a version that kept no hash for it (`written_sha256`)."""
    out = tmp_path / "out"
    convert_images(tree, out, samples_per_shard=4, short_side=128)
    name, index = "train-000000.tar", "train-000000.idx"
    _record_first_shard(out)
    hashed: list[Path] = []
    real = state._sha256
    monkeypatch.setattr(state, "_sha256", lambda path: hashed.append(path) or real(path))
    assert state.load_record(out, name) is not None and hashed == []
    old = json.loads(state.record_path(out, name).read_text())
    del old["written_sha256"]
    state.record_path(out, name).write_text(json.dumps(old))
    stamp = (out / index).stat().st_mtime_ns + 10**9
    os.utime(out / index, ns=(stamp, stamp))
    with caplog.at_level("WARNING", logger="converters.state"):
        assert state.load_record(out, name) is None
    assert caplog.messages == [f"{out / index} changed since it was recorded: converting it again"]
    _record_first_shard(out)
    for gone in (index, name):
        kept = (out / gone).read_bytes()
        (out / gone).unlink()
        assert state.load_record(out, name) is None, gone
        (out / gone).write_bytes(kept)


def test_the_plan_is_saved_in_a_destination_without_state_and_saved_again(tmp_path: Path):
    dst = tmp_path / "new" / "out"  # not there yet
    state.save_plan(dst, {"fingerprint": "a"})
    state.save_plan(dst, {"fingerprint": "b"})  # a resume writes its plan again
    assert state.load_plan(dst) == {"fingerprint": "b"} and (dst / state.PARTIAL / "records").is_dir()


def test_what_a_destination_holds_and_the_messages_of_its_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog):
    """destination_state's verdicts and refusals, and the warnings of records that cannot vouch for their shard,
    word for word (each names the file and what happens next)."""
    dst = tmp_path / "out"
    assert state.destination_state(dst, "f" * 64) == "fresh"
    dst.write_text("x")
    with pytest.raises(ConvertError) as err:
        state.destination_state(dst, "f" * 64)
    assert str(err.value) == f"destination {dst} exists and is not a directory"
    dst.unlink()
    dst.mkdir()
    real = Path.iterdir
    monkeypatch.setattr(Path, "iterdir", lambda self: iter(sorted(real(self))))  # leftovers first
    (dst / "a.tmp").write_text("")
    (dst / state.PARTIAL).mkdir()  # a run that failed before its plan: not a dataset yet
    assert state.destination_state(dst, "f" * 64) == "fresh"
    (dst / "notes.txt").write_text("mine")
    with pytest.raises(ConvertError) as err:
        state.destination_state(dst, "f" * 64)
    assert str(err.value) == f"destination {dst} is not empty and holds no fastdata dataset; pick an empty directory"
    (dst / "notes.txt").unlink()
    with pytest.raises(ConvertError) as err:
        state.load_plan(dst)
    assert str(err.value) == (f"no conversion in progress in {dst} (missing {dst / state.PARTIAL / state.PLAN}); "
                              "run `fastdata convert` first")
    state.save_plan(dst, {"fingerprint": "0123456789abcdef"})
    assert state.destination_state(dst, "0123456789abcdef") == "resume"
    with pytest.raises(ConvertError) as err:
        state.destination_state(dst, "fedcba9876543210")
    assert str(err.value) == (f"destination {dst} holds an unfinished conversion of a different dataset or with other "
                              "options (fingerprint 0123456789ab, this one is fedcba987654): rerun that conversion "
                              f"with its original arguments, or delete {dst}")
    (dst / state.PARTIAL / state.PLAN).write_text("[1]")
    with pytest.raises(ConvertError) as err:
        state.load_plan(dst)
    assert str(err.value) == (f"{dst / state.PARTIAL / state.PLAN} is damaged (a JSON list, not an object): delete "
                              f"{dst}/{state.PARTIAL}/ to start the conversion over")
    assert state.plan_fix("s3://b/out/") == f"delete s3://b/out/{state.PARTIAL}/ to start the conversion over"
    record = state.record_path(dst, "train-000000.tar")
    record.write_bytes(b'{"shard": ')
    with caplog.at_level("WARNING", logger="converters.state"):
        assert state.load_record(dst, "train-000000.tar") is None
        record.write_text('{"shard": {"bytes": 3}}')
        assert state.load_record(dst, "train-000000.tar") is None
    assert caplog.messages == [
        f"{record} is damaged (invalid JSON: Expecting value at line 1 column 11): converting the shard again",
        f"{record} is not a record of this fastdata version: converting the shard again"]


@pytest.mark.parametrize("sizes, shard_size, n, want", [
    ([], 10**9, 0, 1), ([], 10**9, 1, 1), ([], 10**9, 7, 7),  # nothing probed: one shard of everything
    ([1000, 3000], 30240, 100, 10),  # (2000 + 1024 bytes of tar headers) x 10 = 30240 exactly
    ([1000, 3000], 30239, 100, 9),
    ([1000, 3000], 30240, 4, 4),  # never more than there are samples
    ([1000, 3000], 30240, 1, 1),
    ([1000, 3000], 100, 100, 1),  # a shard smaller than one sample still holds one
])
def test_samples_per_shard_follow_the_probed_sizes(sizes: list[int], shard_size: int, n: int, want: int) -> None:
    from converters.plan import samples_per_shard_from_probe

    assert samples_per_shard_from_probe(sizes, shard_size=shard_size, n=n) == want


@pytest.mark.parametrize("damage", [b"{\"fingerprint\": ", b"[1, 2]", b"\xff\xfe"])
def test_a_damaged_plan_is_a_clear_error_saying_how_to_start_over(tree: Path, tmp_path: Path, damage: bytes) -> None:
    """json.loads' JSONDecodeError (or an AttributeError for a plan that is a list) escaped the conversion."""
    dst = tmp_path / "out"
    (dst / state.PARTIAL).mkdir(parents=True)
    (dst / state.PARTIAL / state.PLAN).write_bytes(damage)
    with pytest.raises(ConvertError, match=rf"plan\.json is damaged \(.*\): delete {dst}/\.partial/ to start the "
                                           "conversion over$"):
        convert_images(tree, dst, samples_per_shard=4, short_side=128)


def test_a_damaged_record_converts_its_shard_again(tree: Path, tmp_path: Path, reference: dict[str, bytes],
                                                   caplog) -> None:
    dst = tmp_path / "out"
    first = convert_images(tree, dst, samples_per_shard=4, short_side=128, num_parts=2, part=0)
    assert first.manifest is None and len(first.converted) >= 2
    records = sorted((dst / state.PARTIAL / "records").iterdir())
    records[0].write_bytes(b"{\"shard\": ")  # unreadable
    records[1].write_text('{"shard": {"bytes": 3}}')  # an object, but not a record this version writes
    again = convert_images(tree, dst, samples_per_shard=4, short_side=128, num_parts=2, part=0)
    assert sorted(again.converted) == sorted(r.name.removesuffix(".json") for r in records[:2])
    assert "is damaged (invalid JSON" in caplog.text and "is not a record of this fastdata version" in caplog.text
    convert_images(tree, dst, samples_per_shard=4, short_side=128, num_parts=2, part=1)
    from converters.assemble import merge

    merge(dst)
    assert _files(dst) == reference
