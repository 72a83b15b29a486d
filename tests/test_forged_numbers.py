"""Numbers written as text in what fastdata reads (index offsets and counts, label members, Content-Length
headers, cache file names) are parsed by `fastdata.numerals.parse_int`: a forged one ('²', which
`str.isdigit()` accepts and `int()` refuses; 5,000 digits, past `int()`'s limit; b'--3', which
`lstrip(b'-').isdigit()` accepts) is a clear error or a recorded rejection, never a ValueError."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest_adopt import encoded, raw_tar
from http_server import Fault, FileServer

from fastdata.errors import ShardError, StorageError
from fastdata.numerals import parse_int
from fastdata.verify import verify_dataset

FORGED = ["²", "9" * 5000, "１２", "+3", "3 ", "1_000", "", "-"]


@pytest.mark.parametrize(("text", "signed", "want"), [
    ("0", False, 0), ("42", False, 42), (b"42", False, 42), ("9" * 18, False, 10**18 - 1), ("-3", True, -3),
    (b"-3", True, -3), ("-3", False, None), ("--3", True, None), (b"--3", True, None), ("9" * 19, False, None),
    ("-" + "9" * 19, True, None), (b"\xb2", False, None), ("²".encode(), False, None),
    *[(t, s, None) for t in FORGED for s in (False, True)],
])
def test_parse_int_takes_ascii_digits_only(text, signed, want):
    assert parse_int(text, signed=signed) == want


def test_max_digits_bounds_the_length():
    assert parse_int("1234", max_digits=4) == 1234 and parse_int("12345", max_digits=4) is None


@pytest.fixture
def adopted(tmp_path: Path) -> Path:
    """An adopted tar of two samples whose labels are 3 bytes each (b'  1'), so one can be forged in place."""
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", encoded("JPEG")), ("a.cls", b"  1"),
                                       ("b.jpg", encoded("JPEG", seed=1)), ("b.cls", b"  0")])
    from converters.adopt import AdoptOptions, adopt

    adopt(tmp_path / "s", options=AdoptOptions(jobs=1, classes=("x", "y")))
    return tmp_path / "s"


def loader(root: Path, **kw):
    import fastdata

    return fastdata.loader(root, **{"batch_size": 2, "image_size": 32, "backend": "kornia", "device": "cpu",
                                    "train": False, "split": "train", **kw})


def forge_in_place(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    path.write_bytes(data.replace(old, new))


def test_a_label_of_two_minus_signs_is_a_shard_error_and_a_verify_problem(adopted):
    assert [sorted(y.tolist()) for _, y in loader(adopted)] == [[0, 1]]
    forge_in_place(adopted / "a.tar", b"  1", b"--1")
    with pytest.raises(ShardError, match=r"sample a in .*a\.tar has a bad class label b'--1'; a label member holds an "
                                         r"integer such as b'3'$"):
        list(loader(adopted))
    problems = verify_dataset(adopted)
    assert any("sample a has a non-integer label b'--1'" in p for p in problems), problems


def test_a_negative_label_is_read_as_one_and_named_out_of_range(adopted):
    forge_in_place(adopted / "a.tar", b"  1", b" -1")
    with pytest.raises(ShardError, match=r"sample a in .*a\.tar has label -1, the manifest lists 2 classes$"):
        list(loader(adopted))
    assert any(p.endswith("a.tar: sample a label -1 outside 0..1") for p in verify_dataset(adopted))


@pytest.mark.parametrize("forged", ["²", "9" * 5000])
def test_a_forged_index_offset_is_a_shard_error_and_a_verify_problem(adopted, forged):
    idx = adopted / "a.idx"
    lines = idx.read_text().splitlines()
    fields = lines[1].split()
    fields[1] = forged
    idx.write_text("\n".join([lines[0], " ".join(fields), *lines[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(ShardError, match="offset or size that is not a number of at most 18 ASCII digits"):
        list(loader(adopted))
    assert any("not a number of at most 18 ASCII digits" in p for p in verify_dataset(adopted))


@pytest.mark.parametrize("forged", ["²", "9" * 5000, "-2"])
def test_a_forged_index_count_is_a_shard_error(adopted, forged):
    idx = adopted / "a.idx"
    lines = idx.read_text().splitlines()
    idx.write_text("\n".join([f"v1.2 {forged}", *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(ShardError, match="is not a DALI webdataset index"):
        list(loader(adopted))


def test_adopt_records_a_label_of_two_minus_signs_and_keeps_the_rest(tmp_path: Path):
    from converters.adopt import AdoptOptions, adopt

    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", encoded("JPEG")), ("a.cls", b"--1"),
                                       ("b.jpg", encoded("JPEG", seed=1)), ("b.cls", b"0")])
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    reasons = [r["reason"] for r in result.rejected]
    assert any("label b'--1' is not an integer" in r for r in reasons), reasons
    assert [y.tolist() for _, y in loader(tmp_path / "s", batch_size=1)] == [[0]]


@pytest.mark.parametrize("forged", ["²", "9" * 5000])
def test_a_forged_content_length_is_a_storage_error_or_ignored(tmp_path: Path, forged):
    pytest.importorskip("obstore")
    from fastdata.storage.client import RemoteStore

    (tmp_path / "small.json").write_text('{"a": 1}')
    with FileServer(tmp_path) as server:
        store = RemoteStore(server.url, {"read_timeout": 1.0, "connect_timeout": 1.0, "attempts": 1})
        server.faults.append(Fault("small.json", method="HEAD", length=forged))
        with pytest.raises(StorageError, match="no Content-Length"):
            store.size("small.json")
        server.faults.append(Fault("small.json", length=forged))
        fresh = RemoteStore(server.url, {"read_timeout": 1.0, "connect_timeout": 1.0})  # HEAD closed its connection
        assert fresh.read("small.json") == b'{"a": 1}'  # the body is read to the end of the connection
        assert server.faults[-1].times == 0  # the forged GET was served


def test_cache_files_named_after_impossible_pids_are_stale(tmp_path: Path):
    """A pid past what a pid_t holds (os.kill raises OverflowError) is no live process: its files are removed;
    a name that is not a pid at all ('²', 100 digits) is not this cache's to judge: users are kept."""
    from fastdata.storage.cache import ShardCache

    first = ShardCache(tmp_path, fingerprint="f" * 64, limit=None)
    users, schedules = first.dir / "users", first.dir / "schedules"
    dead, odd = "9999999999-0", ["²-0", "9" * 100 + "-0"]
    for name in [dead, *odd]:
        (users / name).touch()
        (schedules / f"{name}.json").write_text("[]")
    for pid in ["9999999999", "²", "9" * 100]:
        (first.dir / f"x.{pid}.tmp").write_text("")
    ShardCache(tmp_path, fingerprint="f" * 64, limit=None)  # cleans what no live process holds
    left = {p.name for p in users.iterdir()}
    assert dead not in left and set(odd) <= left and first.token in left
    assert not list(schedules.glob("*.json")) and not list(first.dir.glob("*.tmp"))


def test_info_orders_forged_histogram_buckets_without_failing():
    from fastdata.cli.info import _order

    assert sorted(["9-16", "²-3", "1-8", "9" * 5000 + "+"], key=_order) == ["9" * 5000 + "+", "²-3", "1-8", "9-16"]
