"""LSUN as torchvision's `LSUN` reads it (`bedroom_train_lmdb/`, `church_outdoor_val_lmdb/`, `test_lmdb/`: LMDB
environments whose values are WebP images) converts, each image read where it lies (converters/images/lsun.py);
before, `fastdata convert` took `data.mdb` for a file that is no image. The environments are written with the lmdb
package as LSUN's are; the expected images and labels are read as torchvision's `LSUN` reads them (each category's
environment in turn, its keys in cursor order, `target` the category's index). Images: the real photos, as WebP."""

from __future__ import annotations

import io
import itertools
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from helpers import PHOTOS, convert_images, converted_pixels
from PIL import Image

from converters import lmdb_walk
from converters.images import KIND as IMAGES
from converters.images import lsun
from converters.images.discover import discover_images
from fastdata.cli import main as cli
from fastdata.errors import ConvertError, MissingDependencyError
from fastdata.manifest import read_manifest

lmdb = pytest.importorskip("lmdb")


def photos(n: int, side: int = 64) -> list[bytes]:
    """`n` real photos made `side` pixels wide, as WebP (LSUN's format)."""
    out = []
    for path in sorted(PHOTOS.glob("*.jpg"))[:n]:
        im = Image.open(path).convert("RGB")
        im = im.resize((side, max(1, im.height * side // im.width)))
        buf = io.BytesIO()
        im.save(buf, "WEBP", quality=90)
        out.append(buf.getvalue())
    return out


def environment(folder: Path, values: dict[bytes, bytes]) -> Path:
    """An LMDB environment in `folder` holding `values`, as LSUN's are written."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    env = lmdb.open(str(folder), map_size=1 << 26)
    with env.begin(write=True) as txn:
        for key, value in values.items():
            txn.put(key, value)
    env.close()
    return folder


def keys(n: int, start: int = 0) -> list[bytes]:
    """LSUN's keys are 40 hex digits."""
    return [f"{i:040x}".encode() for i in range(start + n - 1, start - 1, -1)]  # written out of their order


def torchvision_lsun(root: Path, classes: list[str]) -> list[tuple[str, int, np.ndarray]]:
    """What torchvision's `LSUN(root, classes)` reads: (environment#key, target, RGB pixels) in its index order."""
    out = []
    for target, name in enumerate(classes):
        env = lmdb.open(str(root / f"{name}_lmdb"), readonly=True, lock=False)
        with env.begin() as txn:
            for key in list(txn.cursor().iternext(keys=True, values=False)):
                image = Image.open(io.BytesIO(txn.get(key))).convert("RGB")
                out.append((f"{name}_lmdb#{key.decode()}", target, np.asarray(image).astype(int)))
        env.close()
    return out


def test_lsun_as_torchvision_reads_it_converts_with_its_categories_and_splits(tmp_path: Path):
    images = photos(9)
    src = tmp_path / "lsun"
    environment(src / "bedroom_train_lmdb", dict(zip(keys(3), images[:3], strict=True)))
    environment(src / "church_outdoor_train_lmdb", dict(zip(keys(2, 10), images[3:5], strict=True)))
    environment(src / "bedroom_val_lmdb", dict(zip(keys(1, 20), images[5:6], strict=True)))
    environment(src / "church_outdoor_val_lmdb", dict(zip(keys(1, 30), images[6:7], strict=True)))
    environment(src / "test_lmdb", dict(zip(keys(2, 40), images[7:9], strict=True)))
    (src / "category_indices.txt").write_text("bedroom 0\n")
    assert IMAGES.detect(src)
    assert cli(["convert", str(src), str(tmp_path / "out"), "-j", "2", "--short-side", "0", "--no-progress"]) == 0
    m = read_manifest(tmp_path / "out")
    assert m.classes == ("bedroom", "church_outdoor")
    assert {k: s.samples for k, s in m.splits.items()} == {"train": 5, "val": 2}
    assert sorted((r["source"], r["reason"]) for r in m.rejected) == [
        ("category_indices.txt", "beside the LMDB environments: not read"),
        ("test_lmdb", lsun.NO_LABELS)]
    for split, names in (("train", ["bedroom_train", "church_outdoor_train"]),
                         ("val", ["bedroom_val", "church_outdoor_val"])):
        got = converted_pixels(tmp_path / "out", split)
        theirs = torchvision_lsun(src, names)
        assert sorted(got) == sorted(source for source, _, _ in theirs)
        for source, target, pixels in theirs:
            label, converted = got[source]
            assert label == target
            assert converted.shape == pixels.shape
            assert np.abs(converted - pixels).mean() < 6  # WebP decoded, then JPEG at quality 90


def test_one_environment_as_the_source_and_every_environment_unlabeled(tmp_path: Path):
    images = photos(4)
    one = environment(tmp_path / "bedroom_train_lmdb", dict(zip(keys(2), images[:2], strict=True)))
    m = convert_images(one, tmp_path / "out").manifest
    assert m.classes == ("bedroom",) and {k: s.samples for k, s in m.splits.items()} == {"train": 2}
    assert {label for label, _ in converted_pixels(tmp_path / "out", "train").values()} == {0}
    src = tmp_path / "lsun"
    environment(src / "tower_val_lmdb", dict(zip(keys(1), images[2:3], strict=True)))
    environment(src / "test_lmdb", dict(zip(keys(1, 5), images[3:4], strict=True)))
    m = convert_images(src, tmp_path / "out2", unlabeled=True).manifest
    assert m.classes == () and m.rejected == ()
    assert {k: s.samples for k, s in m.splits.items()} == {"val": 1, "test": 1}
    got = converted_pixels(tmp_path / "out2", "test")
    test_key = f"test_lmdb#{keys(1, 5)[0].decode()}"
    assert list(got) == [test_key] and got[test_key][0] is None
    m = convert_images(src, tmp_path / "out3", split="val").manifest  # the test set alone beside one category
    assert m.classes == ("tower",) and [r["source"] for r in m.rejected] == ["test_lmdb"]


@pytest.mark.parametrize("name, category, split", [
    ("bedroom_train_lmdb", "bedroom", "train"), ("church_outdoor_val_lmdb", "church_outdoor", "val"),
    ("test_lmdb", None, "test"), ("train_lmdb", None, "train"), ("cats_test_lmdb", "cats", "test"),
    ("cats_lmdb", "cats", "val"), ("a_b_lmdb", "a_b", "val"), ("lmdb_data", "lmdb_data", "val")])
def test_an_environments_name_gives_its_category_and_split(name: str, category: str | None, split: str):
    assert lsun._category_and_split(name, "val") == (category, split)


def test_names_without_a_split_go_to_the_split_option_and_odd_keys_are_shown_in_hex(tmp_path: Path):
    images = photos(4)
    src = tmp_path / "lmdb"
    environment(src / "cats_lmdb", {b"a#1": images[0], b"\x00\xff": images[1], "\u00e9".encode(): images[3]})
    environment(src / "dogs_lmdb", {b"dog-1": images[2]})
    (src / "notes_lmdb").mkdir()  # no data.mdb: no environment
    (src / "notes_lmdb" / "readme.txt").write_text("LSUN\n")
    m = convert_images(src, tmp_path / "out", split="val").manifest
    assert m.classes == ("cats", "dogs")
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("notes_lmdb/readme.txt", "beside the LMDB environments: not read")]
    got = converted_pixels(tmp_path / "out", "val")
    assert {k: v[0] for k, v in got.items()} == {"cats_lmdb#0x612331": 0, "cats_lmdb#0x00ff": 0, "cats_lmdb#0xc3a9": 0,
                                                 "dogs_lmdb#dog-1": 1}


def test_environments_that_hold_no_images_are_rejected_saying_why(tmp_path: Path):
    images = photos(4)
    src = tmp_path / "lsun"
    environment(src / "bedroom_train_lmdb", dict(zip(keys(2), images[:2], strict=True)))
    environment(src / "kitchen_train_lmdb", {b"0": pickle.dumps((images[2], 3))})  # another tool's layout
    environment(src / "tower_train_lmdb", {})
    (src / "bridge_train_lmdb").mkdir()
    (src / "bridge_train_lmdb" / "data.mdb").write_bytes(b"not an LMDB file" * 512)
    environment(src / "classroom_train_lmdb", {b"k1": images[3], b"k2": b"<html>not found</html>"})
    m = convert_images(src, tmp_path / "out").manifest
    assert {r["split"] for r in m.rejected} == {"train"}
    reasons = {r["source"]: r["reason"] for r in m.rejected}
    assert m.classes == ("bedroom", "bridge", "classroom", "kitchen", "tower")  # the categories named, as torchvision's
    assert reasons.pop("kitchen_train_lmdb") == ("its values are no encoded images: the first is a Python pickle "
                                                 "(another tool's LMDB layout: images and labels pickled together)")
    assert reasons.pop("tower_train_lmdb") == "an LMDB environment of no images (no key)"
    assert reasons.pop("bridge_train_lmdb").startswith("not a readable LMDB environment (InvalidError: ")
    assert reasons == {"classroom_train_lmdb#k2": "not an image (no known image format signature)"}
    assert m.splits["train"].samples == 3


def test_a_value_longer_than_an_image_may_be_is_rejected_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    noise = np.random.default_rng(0).integers(0, 256, (720, 720, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(noise).save(buf, "PNG")
    large = buf.getvalue()  # more than 1 MiB and 8 bytes a pixel of --max-pixels 1000
    src = tmp_path / "lsun"
    environment(src / "bedroom_train_lmdb", {b"small": photos(1, 16)[0], b"large": large})
    read = []
    real = lsun.FileRange.read_bytes
    monkeypatch.setattr(lsun.FileRange, "read_bytes", lambda self: read.append(self.length) or real(self))
    m = convert_images(src, tmp_path / "out", max_pixels=1000).manifest
    assert [(r["split"], r["source"], r["reason"]) for r in m.rejected] == [
        ("train", "bedroom_train_lmdb#large", f"a value of {len(large)} bytes, more than an image of --max-pixels "
                                              f"may hold ({8 * 1000 + (1 << 20)})")]
    assert m.splits["train"].samples == 1 and read == [len(photos(1, 16)[0])]
    found = discover_images(src, max_pixels=1000)
    assert [it.source for it in found.splits["train"]] == [str(src / "bedroom_train_lmdb" / "data.mdb")]


def test_a_damaged_environment_is_rejected_and_the_conversion_goes_on(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    """LMDB trusts its file: a damaged one crashes the process walking it. The walk runs in a child, whose crash is
    the environment's rejection; so is a walk past its time. The images are read from data.mdb where the walk
    found them: they are the values, byte for byte."""
    images = photos(3)
    src = tmp_path / "lsun"
    environment(src / "bedroom_train_lmdb", {b"a": images[0], b"b": images[1]})
    environment(src / "tower_train_lmdb", {b"t": images[2]})
    entries, stage, why = lsun._walked(src / "bedroom_train_lmdb")
    assert (stage, why) == ("", "")
    data = (src / "bedroom_train_lmdb" / "data.mdb").read_bytes()
    assert [(key, data[offset:offset + length]) for key, offset, length in entries] == [(b"a", images[0]),
                                                                                      (b"b", images[1])]
    monkeypatch.setattr(lsun, "_CHILD", "import os, signal, sys\nif 'bedroom' in sys.argv[1]:\n"
                                        "    os.kill(os.getpid(), signal.SIGSEGV)\n" + lsun._CHILD)
    m = convert_images(src, tmp_path / "out").manifest
    assert [(r["split"], r["source"], r["reason"]) for r in m.rejected] == [
        ("train", "bedroom_train_lmdb", "LMDB's reader crashed on it (signal 11): a damaged environment; no key of it "
                                        "is read")]
    assert list(converted_pixels(tmp_path / "out", "train")) == ["tower_train_lmdb#t"]
    monkeypatch.setattr(lsun, "_CHILD", "import time\ntime.sleep(30)")
    monkeypatch.setattr(lsun, "CHILD_TIMEOUT_S", 0.5)
    entries, stage, why = lsun._walked(src / "tower_train_lmdb")
    assert (entries, stage) == ([], "crash") and why.startswith("the walk of its keys took more than 1 s")
    monkeypatch.setattr(lsun, "_CHILD", "import sys\nsys.exit(3)")
    with pytest.raises(RuntimeError, match="walking the LMDB environment .* failed"):
        lsun._walked(src / "tower_train_lmdb")


def test_a_walk_that_fails_part_of_the_way_keeps_the_keys_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    images = photos(2)
    src = tmp_path / "lsun"
    environment(src / "bedroom_train_lmdb", {b"a": images[0], b"b": images[1]})
    real = lsun._walked

    def cut(env: Path):
        entries, _, _ = real(env)
        return entries[:1], "walk", "CorruptedError: MDB_CORRUPTED: Located page was wrong type"

    monkeypatch.setattr(lsun, "_walked", cut)
    m = convert_images(src, tmp_path / "out").manifest
    assert {r["split"] for r in m.rejected} == {"train"}
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("bedroom_train_lmdb", "damaged LMDB environment (CorruptedError: MDB_CORRUPTED: Located page was wrong type); "
                               "the 1 keys before are kept")]
    assert list(converted_pixels(tmp_path / "out", "train")) == ["bedroom_train_lmdb#a"]


def test_links_to_environments_are_not_read_unless_followed_and_lmdb_missing_is_named(tmp_path: Path,
                                                                                      monkeypatch: pytest.MonkeyPatch):
    images = photos(2)
    elsewhere = environment(tmp_path / "elsewhere" / "tower_train_lmdb", {b"t": images[0]})
    src = tmp_path / "lsun"
    environment(src / "bedroom_train_lmdb", {b"b": images[1]})
    (src / "tower_train_lmdb").symlink_to(elsewhere)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("a")
    (src / "notes").symlink_to(tmp_path / "notes")  # a linked folder beside the environments
    m = convert_images(src, tmp_path / "out", follow_symlinks=False).manifest
    assert sorted((r["split"], r["source"], r["reason"]) for r in m.rejected) == [
        ("", "notes", "beside the LMDB environments: not read"),  # the link, not looked into
        ("train", "tower_train_lmdb", "symbolic link not followed (--no-follow-symlinks)")]
    assert m.splits["train"].samples == 1
    m = convert_images(src, tmp_path / "out2").manifest
    assert m.splits["train"].samples == 2 and m.classes == ("bedroom", "tower")
    assert [r["source"] for r in m.rejected] == ["notes/a.txt"]  # followed: each file it holds
    (src / "bedroom_train_lmdb" / "notes").symlink_to(tmp_path / "notes")  # in an environment given as the source
    found = discover_images(src / "bedroom_train_lmdb", follow_symlinks=False)
    assert [(r.source, r.reason) for r in found.rejected] == [("notes", "in the LMDB environment: not read")]
    found = discover_images(src / "bedroom_train_lmdb")
    assert [r.source for r in found.rejected] == ["notes/a.txt"]

    def missing(module: str, extra: str):
        raise MissingDependencyError(f"{module!r} is not installed; install it with: pip install 'fastdata[{extra}]'")

    monkeypatch.setattr(lsun, "require", missing)
    with pytest.raises(ConvertError, match=r"holds LMDB environments \(LSUN\), which are read with lmdb: 'lmdb' is "
                                           r"not installed; install it with: pip install 'fastdata\[lmdb\]'$"):
        convert_images(src, tmp_path / "out3")


def test_the_walk_says_where_each_value_lies_and_refuses_a_place_outside_the_file(tmp_path: Path, capsysbinary,
                                                                                  monkeypatch: pytest.MonkeyPatch):
    """The child's walk, run here on a sound environment: its records, and its verdicts when the map's address is
    unknown (not Linux) or a value's place falls outside data.mdb (a damaged environment)."""
    images = photos(2)
    env = environment(tmp_path / "bedroom_train_lmdb", {b"k0": images[0], b"k1": images[1]})

    def walked() -> tuple[list[tuple[bytes, int, int]], list[str]]:
        lmdb_walk.walk(str(env))
        out, pos, records = capsysbinary.readouterr().out, 0, []
        while True:
            length, offset, size = lmdb_walk.RECORD.unpack_from(out, pos)
            pos += lmdb_walk.RECORD.size
            if length == lmdb_walk.END:
                return records, json.loads(out[pos:])
            records.append((out[pos:pos + length], offset, size))
            pos += length

    records, verdict = walked()
    data = (env / "data.mdb").read_bytes()
    assert verdict == ["", ""] and [(k, data[o:o + n]) for k, o, n in records] == [(b"k0", images[0]),
                                                                                  (b"k1", images[1])]
    real = lmdb_walk._map_base
    monkeypatch.setattr(lmdb_walk, "_map_base", lambda path: None)
    assert walked() == ([], ["map", "where data.mdb is mapped cannot be found here (/proc/self/maps: LSUN's "
                                    "environments are read on Linux)"])
    shift = len(data) - max(o + n for _, o, n in records) + 1  # the last value's end one byte past the file's
    monkeypatch.setattr(lmdb_walk, "_map_base", lambda path: real(path) - shift)
    inside = list(itertools.takewhile(lambda r: r[1] + r[2] <= len(data), [(k, o + shift, n) for k, o, n in records]))
    outside = records[len(inside)]
    assert walked() == (inside, ["walk", f"a value of {outside[2]} bytes lies outside data.mdb"])
    monkeypatch.setattr(lmdb_walk, "_map_base", lambda path: real(path) + 1)  # the first value a byte earlier
    assert walked() == ([(k, o - 1, n) for k, o, n in records], ["", ""])
    (tmp_path / "empty").mkdir()
    lmdb_walk.walk(str(tmp_path / "empty"))
    out = capsysbinary.readouterr().out
    assert out.startswith(lmdb_walk.RECORD.pack(lmdb_walk.END, 0, 0) + b'["open", "')


def test_the_identity_of_a_discovery_and_files_inside_an_environment(tmp_path: Path):
    images = photos(3)
    src = tmp_path / "lsun"
    environment(src / "bedroom_train_lmdb", {b"a": images[0], b"b": images[1]})
    environment(src / "tower_val_lmdb", {b"t": images[2]})
    found = discover_images(src)
    size = (src / "bedroom_train_lmdb" / "data.mdb").stat().st_size
    assert found.layout == "lsun" and found.identity == [
        ["train", "bedroom_train_lmdb", 0, size, 2],
        ["val", "tower_val_lmdb", 1, (src / "tower_val_lmdb" / "data.mdb").stat().st_size, 1]]
    one = src / "bedroom_train_lmdb"
    (one / "keys.txt").write_text("a\nb\n")
    found = discover_images(one)
    assert found.identity == [["train", "bedroom_train_lmdb", 0, size, 2]]
    assert [(r.source, r.reason) for r in found.rejected] == [("keys.txt", "in the LMDB environment: not read")]
    pickled = environment(tmp_path / "kitchen_val_lmdb", {b"0": pickle.dumps((images[0], 3))})
    (pickled / "keys.txt").write_text("0\n")
    assert [(r.split, r.source) for r in discover_images(pickled).rejected] == [("val", "kitchen_val_lmdb"),
                                                                                ("", "keys.txt")]


def test_the_reader_keeps_a_value_of_max_bytes_and_says_why_a_walk_stopped(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    images = sorted(photos(2), key=len)
    assert len(images[0]) < len(images[1])
    env = environment(tmp_path / "lsun" / "bedroom_train_lmdb", {b"a": images[0], b"b": images[1]})
    for limit, kept in ((len(images[1]), [b"a", b"b"]), (len(images[1]) - 1, [b"a"])):
        reader = lsun._Reader(tmp_path / "lsun", limit)
        reader.read(env, "train", 0)
        assert [i.rel for i in reader.items["train"]] == [f"bedroom_train_lmdb#{k.decode()}" for k in kept]
        assert [i.payload.read_bytes() for i in reader.items["train"]] == images[:len(kept)]
    monkeypatch.setattr(lsun, "_walked", lambda env: ([], "map", "where data.mdb is mapped cannot be found here"))
    reader = lsun._Reader(tmp_path / "lsun", 1 << 30)
    reader.read(env, "train", 0)
    assert [(r.source, r.reason) for r in reader.rejected] == [
        ("bedroom_train_lmdb", "where data.mdb is mapped cannot be found here")]


def test_a_linked_environment_given_as_the_source_is_read_without_following_links(tmp_path: Path):
    env = environment(tmp_path / "data" / "bedroom_train_lmdb", {b"a": photos(1)[0]})
    (tmp_path / "bedroom_train_lmdb").symlink_to(env)
    m = convert_images(tmp_path / "bedroom_train_lmdb", tmp_path / "out", follow_symlinks=False).manifest
    assert m.rejected == () and m.splits["train"].samples == 1
    src = tmp_path / "lsun"  # a data.mdb that is a link, in a folder that is none
    (src / "bedroom_train_lmdb").mkdir(parents=True)
    (src / "bedroom_train_lmdb" / "data.mdb").symlink_to(env / "data.mdb")
    environment(src / "tower_train_lmdb", {b"t": photos(2)[1]})
    m = convert_images(src, tmp_path / "out2", follow_symlinks=False).manifest
    assert [(r["source"], r["reason"]) for r in m.rejected] == [
        ("bedroom_train_lmdb", "symbolic link not followed (--no-follow-symlinks)")]
    assert m.splits["train"].samples == 1
    assert convert_images(src, tmp_path / "out3").manifest.splits["train"].samples == 2


def test_a_walk_without_its_verdict_or_failing_at_its_first_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A child that stops writing before its verdict (killed by nothing that sets a signal) keeps the keys it gave;
    a walk that fails before any key says nothing of keys kept."""
    images = photos(1)
    env = environment(tmp_path / "lsun" / "bedroom_train_lmdb", {b"a": images[0]})
    entries, _, _ = lsun._walked(env)
    record = lmdb_walk.RECORD.pack(1, entries[0][1], entries[0][2]) + b"a"
    monkeypatch.setattr(lsun, "_CHILD", f"import sys\nsys.stdout.buffer.write({record!r})")
    assert lsun._walked(env) == (entries, "walk", "the walk ended without its verdict")
    monkeypatch.setattr(lsun, "_walked", lambda env: ([], "walk", "CorruptedError: at the root"))
    reader = lsun._Reader(tmp_path / "lsun", 1 << 30)
    reader.read(env, "val", 0)
    assert [(r.split, r.source, r.reason) for r in reader.rejected] == [
        ("val", "bedroom_train_lmdb", "damaged LMDB environment (CorruptedError: at the root)")]


def test_walking_leaves_the_environment_as_it_was(tmp_path: Path, capsysbinary):
    """Read only and without the lock file: a dataset on a read-only disk, or shared, is walked without a write."""
    env = environment(tmp_path / "bedroom_train_lmdb", {b"a": photos(1)[0]})
    (env / "lock.mdb").unlink()
    before = {p.name: p.stat().st_mtime_ns for p in env.iterdir()}
    lmdb_walk.walk(str(env))
    assert capsysbinary.readouterr().out.endswith(b'["", ""]')
    assert {p.name: p.stat().st_mtime_ns for p in env.iterdir()} == before == {"data.mdb": before["data.mdb"]}


def _verdict(out: bytes) -> tuple[list[tuple[int, int, bytes]], list[str]]:
    """The records (offset, length, key) and the verdict a walk wrote."""
    pos, records = 0, []
    while True:
        length, offset, size = lmdb_walk.RECORD.unpack_from(out, pos)
        pos += lmdb_walk.RECORD.size
        if length == lmdb_walk.END:
            return records, json.loads(out[pos:])
        records.append((offset, size, out[pos:pos + length]))
        pos += length


def test_the_walks_verdicts_when_lmdb_fails_to_open_or_part_of_the_way(tmp_path: Path, capsysbinary,
                                                                        monkeypatch: pytest.MonkeyPatch):
    """An lmdb error is the verdict of its stage, named by its type and its first 160 characters: "walk" (a
    verdict without a stage would pass for a whole walk) and "open"."""
    env = environment(tmp_path / "bedroom_train_lmdb", {b"a": photos(1)[0]})

    class Failing:
        def begin(self, **kwargs):
            raise lmdb.CorruptedError("x" * 200)

    monkeypatch.setattr(lmdb_walk, "_open", lambda path: Failing())
    monkeypatch.setattr(lmdb_walk, "_map_base", lambda path: 0)  # (nothing mapped)
    lmdb_walk.walk(str(env))
    assert _verdict(capsysbinary.readouterr().out) == ([], ["walk", "CorruptedError: " + "x" * 160])

    def refused(path):
        raise lmdb.InvalidError("y" * 161)

    monkeypatch.setattr(lmdb_walk, "_open", refused)
    lmdb_walk.walk(str(env))
    assert _verdict(capsysbinary.readouterr().out) == ([], ["open", "InvalidError: " + "y" * 160])


def test_an_empty_value_a_value_at_the_files_start_and_a_path_with_spaces(tmp_path: Path, capsysbinary,
                                                                           monkeypatch: pytest.MonkeyPatch):
    """An empty value lies at 0 (its buffer's address means nothing); a value at byte 0 of data.mdb is inside it;
    /proc/self/maps is read from its left, so a path with spaces is found."""
    image = photos(1)[0]
    env = environment(tmp_path / "with spaces in it" / "bedroom_train_lmdb", {b"a": b"", b"b": image})
    lmdb_walk.walk(str(env))
    records, verdict = _verdict(capsysbinary.readouterr().out)
    assert verdict == ["", ""] and records[0] == (0, 0, b"a") and records[1][1:] == (len(image), b"b")
    data = (env / "data.mdb").read_bytes()
    assert data[records[1][0]:records[1][0] + len(image)] == image
    real = lmdb_walk._map_base
    monkeypatch.setattr(lmdb_walk, "_map_base", lambda path: real(path) + records[1][0])  # b's value at byte 0
    lmdb_walk.walk(str(env))
    assert _verdict(capsysbinary.readouterr().out) == ([(0, 0, b"a"), (0, len(image), b"b")], ["", ""])
    (tmp_path / "empty").mkdir()
    lmdb_walk.walk(str(tmp_path / "empty"))
    assert _verdict(capsysbinary.readouterr().out)[1][0] == "open"
    assert not any((tmp_path / "empty").iterdir())  # nothing created where nothing was
