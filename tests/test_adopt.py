"""`fastdata index`: WebDataset shards written by other tools are adopted (index + manifest, tars untouched)
and read by both image backends exactly like converted shards; everything unusable is reported."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import torch
from conftest_adopt import encoded, raw_tar, shardwriter_shards
from helpers import PHOTOS

import converters.adopt as adopt_module
import fastdata
from converters.adopt import AdoptOptions, adopt
from converters.adopt import scan as scan_module
from fastdata.cli import main as cli
from fastdata.errors import ConvertError, ManifestError, ShardError
from fastdata.verify import verify_dataset

pytest.importorskip("webdataset")


def wds2idx(tar: Path, out: Path) -> bytes:
    """The index DALI's own tool writes for `tar`."""
    from wds2idx import IndexCreator

    with IndexCreator(str(tar), str(out), verbose=False) as creator:
        creator.create_index()
    return out.read_bytes()


def load_all(source, backend: str, **kw) -> tuple[list[torch.Tensor], list[int]]:
    ld = fastdata.loader(source, batch_size=3, image_size=32, train=False, backend=backend, device="cpu",
                         num_threads=2, **kw)
    images, labels = [], []
    for x, y in ld:
        images.extend(x[y != -100])
        labels.extend(y.tolist())
    return images, [v for v in labels if v != -100]


@pytest.fixture
def foreign(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    labels = shardwriter_shards(tmp_path / "shards", count=10, per_shard=4)
    return tmp_path / "shards", labels


def test_index_equals_wds2idx_and_manifest_describes_the_shards(foreign, tmp_path: Path):
    pytest.importorskip("nvidia.dali")
    folder, labels = foreign
    tars = sorted(folder.glob("*.tar"))
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tars}
    assert cli(["index", str(folder), "-j", "1", "--no-progress"]) == 0
    for tar in tars:
        assert (folder / tar.with_suffix(".idx").name).read_bytes() == wds2idx(tar, tmp_path / "ref.idx")
    manifest = json.loads((folder / "manifest.json").read_text())
    shards = manifest["splits"]["train"]["shards"]
    assert [s["name"] for s in shards] == [t.name for t in tars]
    assert [s["samples"] for s in shards] == [4, 4, 2]
    assert {s["name"]: s["sha256"] for s in shards} == before
    assert manifest["classes"] == ["0", "1", "2"] and manifest["rejected"] == []
    assert manifest["splits"]["train"]["class_counts"] == [4, 3, 3]
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tars} == before  # tars untouched


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_adopted_shards_load_with_their_labels(foreign, backend):
    if backend == "dali":
        pytest.importorskip("nvidia.dali")
    folder, labels = foreign
    adopt(folder, options=AdoptOptions(jobs=1))
    ld = fastdata.loader(folder, batch_size=4, image_size=32, train=False, backend=backend, device="cpu")
    seen = []
    for x, y in ld:
        assert x.shape[1:] == (3, 32, 32)
        seen.extend(v for v in y.tolist() if v != -100)
    assert sorted(seen) == sorted(labels.values())
    assert ld.classes == ("0", "1", "2") and len(seen) == 10


def test_the_loader_takes_a_shard_a_list_a_glob_and_a_brace_pattern(foreign):
    folder, labels = foreign
    adopt(folder, options=AdoptOptions(jobs=1))
    counts = {}
    for name, source in {"dir": folder, "one": folder / "f-000001.tar",
                         "list": [folder / "f-000000.tar", str(folder / "f-000002.tar")],
                         "glob": str(folder / "f-*.tar"), "brace": str(folder / "f-{000000..000001}.tar")}.items():
        ld = fastdata.loader(source, batch_size=2, image_size=32, train=False, backend="kornia", device="cpu")
        counts[name] = ld.num_samples
    assert counts == {"dir": 10, "one": 4, "list": 6, "glob": 10, "brace": 8}
    with pytest.raises(ManifestError, match="do not exist"):
        fastdata.loader(str(folder / "f-{000000..000009}.tar"), batch_size=2)


def test_foreign_shards_without_a_manifest_get_told_to_run_index(foreign, tmp_path: Path):
    folder, _ = foreign
    with pytest.raises(ManifestError, match=r"fastdata index '.*f-\*\.tar'"):
        fastdata.loader(str(folder / "f-*.tar"), batch_size=2)
    with pytest.raises(ManifestError, match="fastdata index"):
        fastdata.loader(folder / "f-000000.tar", batch_size=2)
    raw = tmp_path / "raw"
    (raw / "cat").mkdir(parents=True)
    (raw / "cat" / "a.jpg").write_bytes(encoded("JPEG"))
    with pytest.raises(ManifestError, match="fastdata convert"):
        fastdata.loader(raw, batch_size=2)


def test_read_only_shards_are_indexed_into_a_separate_folder(foreign, tmp_path: Path):
    folder, labels = foreign
    before = {p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in folder.iterdir()}
    folder.chmod(0o555)  # what a read-only mount looks like (root may write anyway: the check below is by content)
    try:
        dst = tmp_path / "meta"
        assert cli(["index", str(folder / "f-{000000..000002}.tar"), str(dst), "-j", "1", "--no-progress"]) == 0
    finally:
        folder.chmod(0o755)
    after = {p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in folder.iterdir()}
    assert after == before  # nothing written, added or touched beside the shards
    assert (dst / "f-000000.idx").exists()
    manifest = json.loads((dst / "manifest.json").read_text())
    assert manifest["shard_root"] == os.path.relpath(folder, dst)
    _, got = load_all(dst, "kornia")
    assert sorted(got) == sorted(labels.values())
    assert cli(["verify", str(dst), "--decode"]) == 0


def test_other_image_formats_decode_on_both_backends_and_agree(tmp_path: Path):
    pytest.importorskip("nvidia.dali")
    members = []
    formats = {"a": ("jpg", encoded("JPEG", seed=1)), "b": ("png", encoded("PNG", seed=2)),
               "c": ("webp", encoded("WEBP", seed=3, lossless=True)), "d": ("jpg", encoded("JPEG", seed=4,
                                                                                              progressive=True)),
               "e": ("jpg", encoded("JPEG", seed=5, mode="CMYK")), "f": ("png", encoded("PNG", seed=6, mode="L"))}
    for key, (ext, data) in formats.items():
        members += [(f"{key}.{ext}", data), (f"{key}.cls", b"1")]
    raw_tar(tmp_path / "s" / "x-000000.tar", members)
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    assert result.manifest.image_members == ("jpg", "png", "webp")
    stats = result.manifest.splits["train"].stats["image_formats"]
    assert stats == {"jpeg": 1, "png": 2, "webp": 1, "jpeg-progressive": 1, "jpeg-cmyk": 1}
    k_images, k_labels = load_all(tmp_path / "s", "kornia")
    d_images, d_labels = load_all(tmp_path / "s", "dali")
    assert k_labels == d_labels == [1] * 6
    for a, b in zip(k_images, d_images):
        assert (a.float() - b.float()).abs().mean() < 0.05  # normalised units: about 3 grey levels


def test_unusable_members_and_samples_are_rejected_with_reasons(tmp_path: Path):
    jpg = encoded("JPEG")
    members = [
        ("ok1.jpg", jpg), ("ok1.cls", b"0"),
        ("/abs/evil.jpg", jpg), ("/abs/evil.cls", b"1"),
        ("../up.jpg", jpg), ("../up.cls", b"1"),
        ("nolabel.jpg", jpg),
        ("noimage.cls", b"1"), ("noimage.txt", b"hello"),
        ("badlabel.jpg", jpg), ("badlabel.cls", b"cat"),
        ("notimage.jpg", b"this is not an image"), ("notimage.cls", b"0"),
        ("sp ace.jpg", jpg), ("sp ace.cls", b"0"),
        ("dir/.hidden.jpg", jpg),
        ("link.jpg", b""),
        ("ok2.jpg", jpg), ("ok2.cls", b"2"),
        ("ok1.jpg", jpg), ("ok1.cls", b"0"),
    ]
    raw_tar(tmp_path / "s" / "a.tar", members, types={"link.jpg": tarfile.SYMTYPE})
    (tmp_path / "s" / "b.tar").write_bytes(b"not a tar at all" * 100)
    good = raw_tar(tmp_path / "t" / "c.tar", [("k1.jpg", jpg), ("k1.cls", b"1"), ("k2.jpg", jpg), ("k2.cls", b"2")])
    cut = good.read_bytes()
    (tmp_path / "s" / "c.tar").write_bytes(cut[:len(cut) // 2 + 600])
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    reasons = {r["source"]: r["reason"] for r in result.rejected}
    assert "absolute path" in reasons["a.tar:/abs/evil"]
    assert "'..'" in reasons["a.tar:../up"]
    assert reasons["a.tar:nolabel"] == "no label member while the rest of the dataset is labeled"
    assert "no image member" in reasons["a.tar:noimage"]
    assert "not an integer" in reasons["a.tar:badlabel"]
    assert "not a readable image" in reasons["a.tar:notimage"]
    assert "whitespace" in reasons["a.tar:sp ace"]
    assert "appears twice" in reasons["a.tar:ok1"]
    problems = [r["reason"] for r in result.rejected if r["source"] == "a.tar"]
    assert any("hidden name" in p for p in problems) and any("symbolic link" in p for p in problems)
    assert any("no tar header" in r["reason"] for r in result.rejected if r["source"] == "b.tar")
    assert any("truncated" in r["reason"] for r in result.rejected if r["source"].startswith("c.tar"))
    shards = {s.name: s.samples for s in result.manifest.splits["train"].shards}
    assert shards == {"a.tar": 2, "c.tar": 1}
    _, labels = load_all(tmp_path / "s", "kornia")
    assert sorted(labels) == [0, 1, 2]
    assert cli(["index", str(tmp_path / "s"), "-j", "1", "--strict", "--no-progress"]) == 1


def test_unlabeled_shards_yield_label_minus_one(tmp_path: Path):
    shardwriter_shards(tmp_path / "u", count=5, per_shard=5, labeled=False)
    manifest = adopt(tmp_path / "u", options=AdoptOptions(jobs=1)).manifest
    assert manifest.classes == () and not manifest.labeled
    for backend in ["kornia"] + (["dali"] if _has_dali() else []):
        _, labels = load_all(tmp_path / "u", backend)
        assert labels == [-1] * 5


def test_a_rerun_reuses_saved_scans_and_writes_the_same_bytes(foreign, monkeypatch):
    folder, _ = foreign
    adopt(folder, options=AdoptOptions(jobs=1))
    first = (folder / "manifest.json").read_bytes()
    calls = []
    real = scan_module.scan_tar
    monkeypatch.setattr("converters.adopt.scan_tar", lambda *a, **k: calls.append(a) or real(*a, **k))
    adopt(folder, options=AdoptOptions(jobs=1))
    assert (folder / "manifest.json").read_bytes() == first and len(calls) == 3
    saved = folder / ".partial" / "scans"
    saved.mkdir(parents=True)
    real_scan = real(folder / "f-000000.tar", max_pixels=AdoptOptions().max_pixels)
    st = (folder / "f-000000.tar").stat()
    stamp = [st.st_size, st.st_mtime_ns, AdoptOptions().max_pixels, False]
    (saved / "f-000000.tar.json").write_text(json.dumps({"stamp": stamp, "scan": real_scan.to_dict()}))
    calls.clear()
    adopt(folder, options=AdoptOptions(jobs=1))
    assert len(calls) == 3  # a scan saved by a version that did not check captions is not reused
    saved.mkdir(parents=True, exist_ok=True)  # a finished run removed it
    (saved / "f-000000.tar.json").write_text(json.dumps({"stamp": stamp + [None, scan_module.SCAN_VERSION],
                                                         "scan": real_scan.to_dict()}))
    calls.clear()
    adopt(folder, options=AdoptOptions(jobs=1))
    assert len(calls) == 2 and (folder / "manifest.json").read_bytes() == first  # the saved scan was used


def test_a_different_existing_index_is_not_overwritten(foreign):
    folder, _ = foreign
    (folder / "f-000000.idx").write_text("v1.2 0\n")
    with pytest.raises(ConvertError, match="exists and differs"):
        adopt(folder, options=AdoptOptions(jobs=1))


def test_an_index_an_earlier_run_wrote_is_replaced_when_its_tar_changed(tmp_path: Path):
    folder = tmp_path / "s"
    shardwriter_shards(folder, count=8, per_shard=4)  # f-000000.tar and f-000001.tar
    adopt(folder, options=AdoptOptions(jobs=1))
    before = (folder / "f-000000.idx").read_bytes()
    shardwriter_shards(folder, count=3, per_shard=4)  # f-000000.tar written again, with 3 samples
    manifest = adopt(folder, options=AdoptOptions(jobs=1)).manifest
    after = (folder / "f-000000.idx").read_bytes()
    assert after != before and after == wds2idx(folder / "f-000000.tar", tmp_path / "ref.idx")
    assert manifest.splits["train"].samples == 7


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_shards_changed_after_indexing_are_refused_with_the_command_that_indexes_them(tmp_path: Path, backend):
    """Adopted shards are rebuilt with `fastdata index`, not `fastdata convert` (which has no raw images to read):
    every error about a shard or index changed since names the command that made the manifest."""
    folder = tmp_path / "s"
    shardwriter_shards(folder, count=8, per_shard=4)
    adopt(folder, options=AdoptOptions(jobs=1))
    shardwriter_shards(folder, count=3, per_shard=4)  # f-000000.tar written again, with 3 samples
    with pytest.raises(ShardError, match=r"was changed; re-run `fastdata index` or restore the file"):
        load_all(folder, backend)
    adopt(folder, options=AdoptOptions(jobs=1))  # what the message says to do
    assert len(load_all(folder, backend)[1]) == 7
    shutil.copyfile(folder / "f-000000.idx", folder / "f-000001.idx")  # 3 samples where the manifest says 4
    with pytest.raises(ShardError, match=r"lists 3 samples, the manifest says 4 .*; re-run `fastdata index`$"):
        load_all(folder / "f-000001.tar", backend)


def test_an_index_is_replaced_only_where_an_adopted_manifest_lists_it(tmp_path: Path):
    folder = tmp_path / "s"
    shardwriter_shards(folder, count=8, per_shard=4)
    adopt(folder, options=AdoptOptions(jobs=1))
    shardwriter_shards(folder, count=12, per_shard=4)  # adds f-000002.tar, beside which someone left an index
    (folder / "f-000002.idx").write_text("v1.2 0\n")
    with pytest.raises(ConvertError, match="f-000002.idx exists and differs"):
        adopt(folder, options=AdoptOptions(jobs=1))
    assert (folder / "f-000002.idx").read_text() == "v1.2 0\n"


def test_a_folder_that_holds_a_converted_dataset_is_not_indexed_into(tmp_path: Path):
    folder = tmp_path / "s"
    shardwriter_shards(folder, count=8, per_shard=4)
    adopt(folder, options=AdoptOptions(jobs=1))
    record = json.loads((folder / "manifest.json").read_text())
    del record["extra"]["adopted"]  # what `fastdata convert` writes has no such entry
    (folder / "manifest.json").write_text(json.dumps(record))
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    with pytest.raises(ConvertError, match=r"s already holds a dataset written by `fastdata convert`; index into "
                                           r"another folder \(fastdata index SRC DST\)$"):
        adopt(folder, options=AdoptOptions(jobs=1))
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConvertError, match="file exists and is not a folder"):
        adopt(folder, tmp_path / "file", options=AdoptOptions(jobs=1))


def test_the_shards_named_one_by_one_are_indexed_and_anything_else_named_is_rejected(tmp_path: Path):
    folder = tmp_path / "s"
    shardwriter_shards(folder, count=12, per_shard=4)  # three tars
    (folder / "notes.txt").write_text("not a shard")
    one = adopt(folder / "f-000001.tar", tmp_path / "one", options=AdoptOptions(jobs=1)).manifest
    assert [sh.name for sh in one.splits["train"].shards] == ["f-000001.tar"] and one.rejected == ()
    listed = adopt([folder / "f-000002.tar", folder / "notes.txt", folder / "f-000000.tar"], tmp_path / "two",
                   options=AdoptOptions(jobs=1)).manifest
    assert [sh.name for sh in listed.splits["train"].shards] == ["f-000000.tar", "f-000002.tar"]
    assert list(listed.rejected) == [{"split": "", "source": "notes.txt", "reason": "not a .tar file"}]


def test_a_folder_without_shards_or_shards_from_several_folders_are_refused(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".hidden.tar").write_bytes(b"")  # a hidden file is not a shard
    (empty / "notes.txt").write_text("x")
    with pytest.raises(ConvertError, match=f"{empty} holds no .tar file; pass the folder of the shards, a glob, a "
                                           "brace pattern or a list of tars"):
        adopt(empty, tmp_path / "m", options=AdoptOptions(jobs=1))
    hub = tmp_path / "hub"  # a Hugging Face WebDataset repository: shards in split folders
    shardwriter_shards(hub / "validation", count=4, per_shard=4)
    shardwriter_shards(hub / "train", count=8, per_shard=4)
    (hub / "notes").mkdir()
    with pytest.raises(ConvertError) as info:
        adopt(hub, tmp_path / "m", options=AdoptOptions(jobs=1))
    assert str(info.value) == (f"{hub} holds no .tar file; its subfolders hold tars: train/ (2 tars), validation/ "
                               "(1 tar); a manifest lists the shards of one folder, so index each of them, e.g. "
                               f"`fastdata index {hub / 'train'} --split train`, and load that folder")
    shutil.rmtree(hub / "train")
    with pytest.raises(ConvertError, match=rf"`fastdata index {hub / 'validation'} --split val`, and load"):
        adopt(hub, tmp_path / "m", options=AdoptOptions(jobs=1))
    shutil.move(hub / "validation", hub / "part-a")  # not a split's name: train
    with pytest.raises(ConvertError, match=rf"`fastdata index {hub / 'part-a'} --split train`, and load"):
        adopt(hub, tmp_path / "m", options=AdoptOptions(jobs=1))
    shardwriter_shards(tmp_path / "a", count=4, per_shard=4)
    shardwriter_shards(tmp_path / "b", count=4, per_shard=4)
    (tmp_path / "a" / "sub").mkdir()
    for spec in ([tmp_path / "a" / "f-000000.tar", tmp_path / "b" / "f-000000.tar"],  # two folders
                 [tmp_path / "a" / "sub", tmp_path / "a" / "f-000000.tar"]):  # a folder among the files
        with pytest.raises(ConvertError, match=r"^the shards to index must be files in one folder \(the manifest "
                                               r"records one shard folder\)$"):
            adopt(spec, tmp_path / "m", options=AdoptOptions(jobs=1))
    assert not (tmp_path / "m").exists()


def test_shards_that_are_links_to_two_disks_are_indexed_where_their_links_lie(foreign, tmp_path: Path):
    """A folder of links to shards kept on several disks: its glob is one folder's shards, indexed beside the links
    (or into DST), and loads what the shards themselves hold."""
    folder, labels = foreign
    links = tmp_path / "links"
    links.mkdir()
    for i, tar in enumerate(sorted(folder.glob("*.tar"))):
        disk = tmp_path / f"disk{i % 2}"
        disk.mkdir(exist_ok=True)
        tar.rename(disk / tar.name)
        os.symlink(disk / tar.name, links / tar.name)
    assert cli(["index", str(links / "f-*.tar"), str(tmp_path / "meta"), "-j", "1", "--no-progress"]) == 0
    assert json.loads((tmp_path / "meta" / "manifest.json").read_text())["shard_root"] == "../links"
    assert sorted(load_all(tmp_path / "meta", "kornia")[1]) == sorted(labels.values())
    assert cli(["index", str(links / "f-*.tar"), "-j", "1", "--no-progress"]) == 0
    assert sorted(load_all(str(links / "f-*.tar"), "kornia")[1]) == sorted(labels.values())


def test_a_tar_that_cannot_be_read_is_recorded_by_name_and_the_rest_adopted(foreign):
    folder, _ = foreign
    (folder / "broken.tar").mkdir()  # named like a shard, and not a file
    manifest = adopt(folder, options=AdoptOptions(jobs=1)).manifest
    assert [sh.name for sh in manifest.splits["train"].shards] == ["f-000000.tar", "f-000001.tar", "f-000002.tar"]
    (record,) = manifest.rejected
    assert record["split"] == "train" and record["source"] == "broken.tar"
    assert record["reason"].startswith("unexpected error: IsADirectoryError")


def test_the_scans_of_an_interrupted_run_are_reused_by_the_next(foreign, monkeypatch):
    folder, _ = foreign
    real_write = adopt_module.write_manifest

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(adopt_module, "write_manifest", interrupted)
    with pytest.raises(KeyboardInterrupt):
        adopt(folder, options=AdoptOptions(jobs=1))
    assert sorted(p.name for p in (folder / ".partial" / "scans").iterdir()) == [
        "f-000000.tar.json", "f-000001.tar.json", "f-000002.tar.json"]
    calls = []
    real = scan_module.scan_tar
    monkeypatch.setattr(adopt_module, "scan_tar", lambda *a, **k: calls.append(a) or real(*a, **k))
    with pytest.raises(KeyboardInterrupt):
        adopt(folder, options=AdoptOptions(jobs=1, decode=True))  # another option: every tar scanned again
    assert len(calls) == 3
    monkeypatch.setattr(adopt_module, "write_manifest", real_write)
    manifest = adopt(folder, options=AdoptOptions(jobs=1, decode=True)).manifest
    assert len(calls) == 3 and manifest.splits["train"].samples == 10  # the scans with --decode were reused


def test_decode_rejects_an_image_whose_header_is_whole_and_whose_data_is_cut(tmp_path: Path):
    photo = sorted(PHOTOS.glob("*.jpg"))[0].read_bytes()
    raw_tar(tmp_path / "s" / "f-000000.tar", [("a.jpg", photo), ("a.cls", b"0"), ("b.jpg", photo[: len(photo) // 2]),
                                              ("b.cls", b"1")])
    headers = adopt(tmp_path / "s", tmp_path / "h", options=AdoptOptions(jobs=1)).manifest
    assert headers.splits["train"].samples == 2 and headers.preprocessing["decoded_at_index"] is False
    decoded = adopt(tmp_path / "s", tmp_path / "d", options=AdoptOptions(jobs=1, decode=True)).manifest
    assert decoded.splits["train"].samples == 1 and decoded.preprocessing["decoded_at_index"] is True
    reasons = [(r["source"], r["reason"].split(":")[0]) for r in decoded.rejected]
    assert reasons == [("f-000000.tar:b", "not a readable image")]


def test_a_sample_whose_members_lie_apart_is_rejected_with_the_cause_and_the_fix(tmp_path: Path):
    """`tar -cf shards.tar folder/` stores files in directory order: a.JPEG and a.cls apart. Each part alone was
    rejected as having no label or no image, which hid the cause. A duplicated sample is still "appears twice"."""
    jpg = encoded("JPEG")
    members = [("n1/a.JPEG", jpg), ("n1/b.cls", b"1"), ("n1/b.JPEG", jpg), ("n1/a.cls", b"0"),
               ("n1/c.JPEG", jpg), ("n1/c.cls", b"1"), ("n1/d.JPEG", jpg), ("n1/d.cls", b"0"),
               ("n1/e.JPEG", jpg), ("n1/e.cls", b"1"), ("n1/d.JPEG", jpg), ("n1/d.cls", b"0")]
    raw_tar(tmp_path / "s" / "a.tar", members)
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    reasons = sorted((r["source"], r["reason"]) for r in result.rejected)
    apart = ("its members (JPEG, cls) lie in 2 places of the tar, not next to each other: WebDataset and DALI read "
             "a sample's files only where they follow one another; write the tar with its files sorted by name "
             "(tar --sort=name)")
    assert reasons == [("a.tar:n1/a", apart), ("a.tar:n1/a", apart), ("a.tar:n1/d", "key 'n1/d' appears twice in "
                                                                                     "this tar")]
    assert [s.samples for s in result.manifest.splits["train"].shards] == [4]  # b, c, the first d, e


@pytest.mark.parametrize("member", ["class", "label"])
def test_labels_in_class_or_label_members_and_images_in_several_formats_are_read(tmp_path: Path, member):
    jpg, png, jpeg = encoded("JPEG", seed=1), encoded("PNG", seed=2), encoded("JPEG", seed=3)
    raw_tar(tmp_path / "s" / "f-000000.tar", [
        ("a.png", png), (f"a.{member}", b"2"), ("b.jpeg", jpeg), (f"b.{member}", b"0"),
        ("c.jpg", jpg), (f"c.{member}", b"1"), ("d.jpeg", jpeg), ("d.jpg", jpg), (f"d.{member}", b"1")])
    manifest = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert manifest.label_member == member and manifest.classes == ("0", "1", "2")
    assert manifest.image_members == ("jpg", "jpeg", "png")  # jpg first: a sample holding two takes its jpg
    images, labels = load_all(tmp_path / "s", "kornia")
    assert labels == [2, 0, 1, 1]
    assert torch.equal(images[3], images[2])  # d's jpg, the same bytes as c's


def test_class_names_are_taken_from_the_options_and_labels_are_checked_against_them(foreign, tmp_path: Path):
    folder, _ = foreign  # labels 0, 1, 2
    named = adopt(folder, tmp_path / "n", options=AdoptOptions(jobs=1, classes=("cat", "dog", "fish"))).manifest
    assert named.classes == ("cat", "dog", "fish")
    with pytest.raises(ConvertError, match=r"^--classes names 2 classes, the shards hold labels up to 2$"):
        adopt(folder, tmp_path / "m", options=AdoptOptions(jobs=1, classes=("cat", "dog")))
    assert AdoptOptions(classes=[" cat ", "dog"]).classes == ("cat", "dog")  # stripped, a tuple
    for bad, why in [(("cat", ""), r"^classes\[1\]: a class name is blank$"),
                     (("cat", "Cat", "cat"), r"^classes\[2\]: the class .cat. is named again \(first at classes\[0"),
                     (("c\u202eat",), r"^classes\[0\]: the class .* holds control characters")]:
        with pytest.raises(ConvertError, match=why):
            AdoptOptions(classes=bad)
    for bad in ("cat", ("cat", 1)):
        with pytest.raises(ValueError, match=r"^classes must be a sequence of names \(strings\), got "):
            AdoptOptions(classes=bad)
    raw_tar(tmp_path / "neg" / "f-000000.tar", [("a.jpg", encoded("JPEG")), ("a.cls", b"-3"),
                                                ("b.jpg", encoded("JPEG")), ("b.cls", b"1")])
    with pytest.raises(ConvertError, match=r"^the shards hold negative labels \(down to -3\); labels are class "
                                           r"indices >= 0$"):
        adopt(tmp_path / "neg", options=AdoptOptions(jobs=1))


def test_a_sample_without_a_caption_among_captioned_ones_is_rejected(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "c" / "f-000000.tar", [("a.jpg", jpg), ("a.txt", b"a dog"), ("b.jpg", jpg),
                                              ("c.jpg", jpg), ("c.txt", b"a cat")])
    manifest = adopt(tmp_path / "c", options=AdoptOptions(jobs=1)).manifest
    assert manifest.kind == "image_text" and manifest.splits["train"].samples == 2
    assert list(manifest.rejected) == [{"split": "train", "source": "f-000000.tar:b",
                                        "reason": "no caption member (txt) while the rest of the dataset has captions"}]


def test_progress_counts_one_per_tar(foreign, tmp_path: Path):
    folder, _ = foreign
    steps = []
    adopt(folder, tmp_path / "m", options=AdoptOptions(jobs=1), progress=steps.append)
    assert steps == [1, 1, 1]


def test_the_manifest_records_how_the_shards_were_adopted(foreign, tmp_path: Path):
    folder, _ = foreign
    here = adopt(folder, options=AdoptOptions(jobs=1)).manifest
    assert here.shard_root is None and here.tool_version == fastdata.__version__
    assert here.splits["train"].name == "train"
    assert here.preprocessing == {"source": "adopted WebDataset shards (not re-encoded)",
                                  "max_pixels": AdoptOptions().max_pixels, "decoded_at_index": False}
    assert here.extra == {"adopted": {"tool": "fastdata index", "shards": 3}, "image_members": ["jpg"],
                          "label_member": "cls", "members": ["cls", "jpg"], "layout": "adopted"}
    assert here.splits["train"].stats == {"image_formats": {"jpeg": 8, "jpeg-progressive": 2}}  # the real photos
    elsewhere = adopt(folder, tmp_path / "m", options=AdoptOptions(jobs=1)).manifest
    assert elsewhere.shard_root == os.path.relpath(folder, tmp_path / "m")
    # the fingerprint is the shards' and the classes': equal for equal ones wherever the manifest lies
    assert len(here.fingerprint) == 64 and elsewhere.fingerprint == here.fingerprint
    named = adopt(folder, tmp_path / "n", options=AdoptOptions(jobs=1, classes=("a", "b", "c"))).manifest
    assert named.fingerprint != here.fingerprint
    shardwriter_shards(folder, count=3, per_shard=4)  # f-000000.tar rewritten
    assert adopt(folder, tmp_path / "m", options=AdoptOptions(jobs=1)).manifest.fingerprint != here.fingerprint


def test_no_usable_sample_is_refused_and_an_empty_shard_is_left_out(tmp_path: Path):
    raw_tar(tmp_path / "bad" / "f-000000.tar", [("a.jpg", b"not an image"), ("a.cls", b"0"), ("b.jpg", b"nor this"),
                                                ("b.cls", b"0")])
    raw_tar(tmp_path / "bad" / "f-000001.tar", [("c.txt", b"no image"), ("d.jpg", b"x"), ("d.cls", b"1")])
    unreadable = "not a readable image: no known image format signature"
    with pytest.raises(ConvertError) as caught:  # the first three of its 5 reasons
        adopt(tmp_path / "bad", options=AdoptOptions(jobs=1))
    assert str(caught.value) == (f"no usable sample in 2 tar(s) under {tmp_path / 'bad'} ({unreadable}; {unreadable}; "
                                 "no usable sample: the shard is left out)")
    shardwriter_shards(tmp_path / "mixed", count=4, per_shard=4)
    raw_tar(tmp_path / "mixed" / "f-000001.tar", [("a.jpg", b"not an image"), ("a.cls", b"0")])
    manifest = adopt(tmp_path / "mixed", options=AdoptOptions(jobs=1)).manifest
    assert [sh.name for sh in manifest.splits["train"].shards] == ["f-000000.tar"]
    assert {"split": "train", "source": "f-000001.tar", "reason": "no usable sample: the shard is left out"} in \
        manifest.rejected


def test_options_out_of_range_are_refused_and_the_smallest_ones_accepted():
    for bad in ({"max_pixels": 0}, {"jobs": 0}, {"max_pixels": 0, "jobs": 0}):
        with pytest.raises(ValueError, match=r"^--max-pixels and -j must be >= 1, got "):
            AdoptOptions(**bad)
    assert AdoptOptions(max_pixels=1, jobs=1).max_pixels == 1
    with pytest.raises(ValueError, match="split"):
        AdoptOptions(split="../x")


def test_shards_that_keep_labels_in_two_kinds_of_member_are_refused(tmp_path: Path):
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "f-000000.tar", [("a.jpg", jpg), ("a.cls", b"0"), ("b.jpg", jpg), ("b.label", b"1")])
    with pytest.raises(ConvertError, match=r"^the shards hold their labels in several places \(cls, label\); "
                                               "one dataset uses one$"):
        adopt(tmp_path / "s", options=AdoptOptions(jobs=1))


def test_splits_come_from_file_name_prefixes(tmp_path: Path):
    shardwriter_shards(tmp_path / "s", count=4, per_shard=4, pattern="train-%06d.tar")
    shardwriter_shards(tmp_path / "s", count=3, per_shard=4, pattern="validation-%06d.tar")
    shardwriter_shards(tmp_path / "s", count=2, per_shard=4, pattern="Testing_%06d.tar")
    shardwriter_shards(tmp_path / "s", count=1, per_shard=4, pattern="training.%06d.tar")
    manifest = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert {k: v.samples for k, v in manifest.splits.items()} == {"train": 5, "val": 3, "test": 2}
    forced = adopt(tmp_path / "s", tmp_path / "m", options=AdoptOptions(jobs=1, split="all")).manifest
    assert {k: v.samples for k, v in forced.splits.items()} == {"all": 10}


def _has_dali() -> bool:
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        return False
    return True


def test_captioned_shards_that_also_hold_labels_adopt_as_pairs(tmp_path: Path):
    """jpg + txt + cls (captions beside class labels): an image_text dataset whose label members are not classes;
    indexing it once failed with an IndexError while counting the labels per class."""
    from conftest_adopt import photo_bytes

    members = []
    for i, (_, data) in enumerate(photo_bytes(3)):
        members += [(f"s{i}.jpg", data), (f"s{i}.txt", f"photo number {i}".encode()), (f"s{i}.cls", b"2")]
    raw_tar(tmp_path / "c" / "c-000000.tar", members)
    manifest = adopt(tmp_path / "c", options=AdoptOptions(jobs=1)).manifest
    assert manifest.kind == "image_text" and manifest.classes == () and not manifest.labeled
    assert manifest.extra["label_member"] is None  # its cls members are not classes
    assert manifest.num_samples == 3 and not manifest.rejected


@pytest.mark.skipif(shutil.which("tar") is None, reason="needs GNU tar to write a sparse member")
def test_a_sparse_member_is_rejected_not_indexed_over_the_bytes_after_it(tmp_path: Path):
    """wds2idx indexes a GNU sparse member as the span its header claims (2 MiB here, over the members after it);
    the loaders would read those bytes as the image."""
    src = tmp_path / "files"
    src.mkdir()
    jpg = encoded("JPEG")
    for name, data in [("a.jpg", jpg), ("a.cls", b"0"), ("c.jpg", jpg), ("c.cls", b"2")]:
        (src / name).write_bytes(data)
    (src / "b.jpg").write_bytes(jpg)
    os.truncate(src / "b.jpg", 2 << 20)  # a hole after the image: written sparse
    (src / "b.cls").write_bytes(b"1")
    (src / "c.bin").write_bytes(bytes(range(256)) * (3 << 12))  # enough bytes after b for its claimed span
    (tmp_path / "s").mkdir()
    tar = tmp_path / "s" / "a.tar"
    subprocess.run(["tar", "--sparse", "--format=gnu", "-cf", str(tar), "-C", str(src), "a.jpg", "a.cls", "b.jpg",
                    "b.cls", "c.jpg", "c.cls", "c.bin"], check=True)
    claimed = {m.name: (m.issparse(), m.offset_data + m.size) for m in tarfile.open(tar)}
    assert claimed["b.jpg"][0] and claimed["b.jpg"][1] < tar.stat().st_size  # the span lies inside the file
    assert b"b.jpg" in wds2idx(tar, tmp_path / "dali.idx")  # DALI's tool indexes it
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    reasons = [(r["source"], r["reason"]) for r in result.rejected]
    assert reasons == [("a.tar:b", f"member 'b.jpg': {scan_module.SPARSE}")]
    assert [s.samples for s in result.manifest.splits["train"].shards] == [2]
    _, labels = load_all(tmp_path / "s", "kornia")
    assert sorted(labels) == [0, 2]
    assert verify_dataset(tmp_path / "s") == []
    (tmp_path / "s" / "a.idx").write_bytes(wds2idx(tar, tmp_path / "dali.idx"))  # an index that names b.jpg
    assert any("sample b: the index names ['b.jpg'] where the tar holds no such member" in p
               for p in verify_dataset(tmp_path / "s"))


def test_a_member_name_that_is_not_utf8_is_rejected_not_a_failed_tar(tmp_path: Path):
    """A tar written with Latin-1 names (an old tool): tarfile reads the byte 0xe9 as a lone surrogate, and the
    scan's JSON record could not be written: the whole tar was rejected as 'unexpected error: UnicodeEncodeError'
    ('no usable sample in 0 tar(s)'). Now that sample is rejected, named with \\xNN, and the others are indexed."""
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("caf\udce9.jpg", jpg), ("caf\udce9.cls", b"1"), ("ok.jpg", jpg),
                                       ("ok.cls", b"0")])
    assert b"caf\xe9.jpg" in (tmp_path / "s" / "a.tar").read_bytes()
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    assert [(r["source"], r["reason"]) for r in result.rejected] == [
        ("a.tar:caf\\xe9", f"member 'caf\\\\xe9.jpg': {scan_module.NOT_UTF8}")]
    assert [s.samples for s in result.manifest.splits["train"].shards] == [1]
    assert load_all(tmp_path / "s", "kornia")[1] == [0] and verify_dataset(tmp_path / "s") == []


@pytest.mark.parametrize(("caption", "reason"), [
    ("café".encode("latin-1"), "its caption is not UTF-8 text ('utf-8' codec can't decode byte 0xe9 in position 3: "
                               "unexpected end of data)"),
    (b"  \n\t\n", "its caption is empty"),
    (b"", "its caption is empty"),
    (b"x" * (scan_module.MAX_CAPTION_BYTES + 1),
     f"its caption member is {scan_module.MAX_CAPTION_BYTES + 1} bytes, more than a caption has "
     f"({scan_module.MAX_CAPTION_BYTES})"),
])
def test_a_caption_the_loader_would_refuse_is_rejected_at_index_time(tmp_path: Path, caption, reason):
    """Such a caption used to be indexed and verified clean, then stop the pairs loader at that sample."""
    from conftest_adopt import photo_bytes

    members = []
    for i, (_, data) in enumerate(photo_bytes(3)):
        members += [(f"s{i}.jpg", data), (f"s{i}.txt", caption if i == 1 else f"photo number {i}".encode())]
    raw_tar(tmp_path / "c" / "c-000000.tar", members)
    result = adopt(tmp_path / "c", options=AdoptOptions(jobs=1))
    assert result.manifest.kind == "image_text"
    assert [(r["source"], r["reason"]) for r in result.rejected] == [("c-000000.tar:s1", reason)]
    loader = fastdata.loader(tmp_path / "c", batch_size=4, image_size=32, backend="kornia", device="cpu",
                             train=False, return_captions=True)
    assert [c for _, text in loader for c in text["captions"] if c] == ["photo number 0", "photo number 2"]
    assert verify_dataset(tmp_path / "c") == []


def test_an_empty_label_or_image_member_rejects_its_sample_not_the_whole_tar(tmp_path: Path):
    """An empty member was never read, and the scan then failed with KeyError: the whole tar was dropped as an
    unexpected error."""
    jpg = encoded("JPEG")
    raw_tar(tmp_path / "s" / "a.tar", [("a.jpg", jpg), ("a.cls", b""), ("b.jpg", jpg), ("b.cls", b"1"),
                                       ("c.jpg", b""), ("c.cls", b"0"), ("d.jpg", b"not an image"), ("d.cls", b"2")])
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    assert [(r["source"], r["reason"]) for r in result.rejected] == [
        ("a.tar:a", "an empty label member"),
        ("a.tar:c", "not a readable image: no known image format signature"),  # no address of an object
        ("a.tar:d", "not a readable image: no known image format signature"),
    ]
    assert result.manifest.num_samples == 1


def test_verify_agrees_with_index_on_a_tar_with_a_damaged_end(tmp_path: Path):
    """index keeps the samples before a damaged end; verify used to call the whole tar unreadable (found by the
    `adopt` target of `make fuzz`, seed 1)."""
    jpg = encoded("JPEG")
    good = raw_tar(tmp_path / "t" / "a.tar", [m for i in range(4) for m in ((f"k{i}.jpg", jpg), (f"k{i}.cls", b"1"))])
    data = good.read_bytes()
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "a.tar").write_bytes(data[:len(data) // 2 + 600])
    result = adopt(tmp_path / "s", options=AdoptOptions(jobs=1))
    assert 0 < result.manifest.num_samples < 4
    assert any("damaged or truncated tar" in r["reason"] for r in result.rejected)
    assert verify_dataset(tmp_path / "s") == []


def test_verify_does_not_read_a_caption_member_past_the_limit(tmp_path: Path):
    """An index that names a caption member larger than a caption has (wds2idx's, over a tar index rejected that
    sample from): verify names its size and does not read it."""
    import hashlib

    from conftest_adopt import photo_bytes

    big, most = scan_module.MAX_CAPTION_BYTES + 2, scan_module.MAX_CAPTION_BYTES
    captions = [b"photo 0", b"x" * big, b"y" * most]  # s2: exactly as large as a caption may be
    members = []
    for i, (_, data) in enumerate(photo_bytes(3)):
        members += [(f"s{i}.jpg", data), (f"s{i}.txt", captions[i])]
    tar = raw_tar(tmp_path / "c" / "c-000000.tar", members)
    adopt(tmp_path / "c", options=AdoptOptions(jobs=1))
    index = wds2idx(tar, tmp_path / "dali.idx")  # names s1, which index left out
    (tmp_path / "c" / "c-000000.idx").write_bytes(index)
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    entry = manifest["splits"]["train"]["shards"][0]
    entry.update(samples=3, index_sha256=hashlib.sha256(index).hexdigest())
    (tmp_path / "c" / "manifest.json").write_text(json.dumps(manifest))
    problems = verify_dataset(tmp_path / "c")
    assert problems == [f"{tar}: sample s1: a text member of {big} bytes, not read"], problems


def test_a_scan_saved_for_resume_reads_back_equal(tmp_path: Path):
    """Every field of a scan survives its JSON record (a mutation round found the record's fields unchecked: a
    resumed run would have lost a sample's problem, caption finding or image member, or a tar's problems)."""
    jpg = encoded("JPEG")
    tar = raw_tar(tmp_path / "a.tar", [("a.jpg", jpg), ("a.txt", b"\xff"), ("a.cls", b"1"), ("b.jpg", b"junk"),
                                       ("b.txt", b"ok"), ("link.jpg", b"")], types={"link.jpg": tarfile.SYMTYPE})
    scan = scan_module.scan_tar(tar, max_pixels=AdoptOptions().max_pixels)
    assert scan.problems and any(s.caption for s in scan.samples) and any(s.problem for s in scan.samples)
    assert any(s.image and s.label == "1" for s in scan.samples)
    again = scan_module.TarScan.from_dict(json.loads(json.dumps(scan.to_dict())))
    assert again == scan


def _compressed(data: bytes, codec: str) -> bytes:
    import bz2
    import gzip
    import lzma

    import pyarrow as pa

    if codec in ("zstd", "lz4"):  # pyarrow writes their frames, magic number first
        return pa.compress(data, codec=codec, asbytes=True)
    return {"gzip": lambda: gzip.compress(data, mtime=0), "bzip2": lambda: bz2.compress(data),
            "xz": lambda: lzma.compress(data)}[codec]()


DECOMPRESS_SENTENCE = ("DALI and fastdata read uncompressed tars, seeking to each sample: decompress (`gunzip -k`, "
                       "`zstd -d`, `xz -dk`, `bunzip2 -k`, `lz4 -d`)")


@pytest.mark.parametrize("codec", ["gzip", "zstd", "xz", "bzip2", "lz4"])
def test_a_compressed_tar_named_tar_is_rejected_with_its_size_and_sha256_recorded(tmp_path: Path, codec: str):
    raw = raw_tar(tmp_path / "a.tar", [("a.jpg", encoded("JPEG")), ("a.cls", b"0")]).read_bytes()
    packed = tmp_path / "b.tar"
    packed.write_bytes(_compressed(raw, codec))
    scan = scan_module.scan_tar(packed, max_pixels=AdoptOptions().max_pixels)
    assert scan.samples == []
    assert scan.problems == [f"compressed ({codec}) tar: {DECOMPRESS_SENTENCE}, then index again"]
    assert (scan.bytes, scan.sha256) == (packed.stat().st_size, hashlib.sha256(packed.read_bytes()).hexdigest())


def test_compressed_tars_named_so_are_refused_or_recorded_with_how_to_decompress_them(tmp_path: Path):
    """WebDataset reads `.tar.gz` shards by streaming; an index cannot point into them. Before, a folder of them
    was 'holds no .tar file', and beside plain tars they were left out without a word."""
    raw = raw_tar(tmp_path / "plain" / "a.tar", [("a.jpg", encoded("JPEG")), ("a.cls", b"0")]).read_bytes()
    only = tmp_path / "only"
    only.mkdir()
    for name, codec in (("s-0.tar.gz", "gzip"), ("s-1.TGZ", "gzip"), ("s-2.tar.zst", "zstd"), ("s-3.tar.xz", "xz")):
        (only / name).write_bytes(_compressed(raw, codec))
    with pytest.raises(ConvertError) as info:
        adopt(only, tmp_path / "m", options=AdoptOptions(jobs=1))
    assert str(info.value) == (f"{only} holds no .tar file: s-0.tar.gz, s-1.TGZ, s-2.tar.zst and 1 more are "
                               f"compressed tars: {DECOMPRESS_SENTENCE}, then index the .tar files")
    mixed = tmp_path / "plain"
    (mixed / "b.tar.bz2").write_bytes(_compressed(raw, "bzip2"))
    (mixed / "notes.txt").write_text("not a shard")  # other files beside shards are not shards: no record
    reason = f"a compressed tar: {DECOMPRESS_SENTENCE}, then index the .tar"
    manifest = adopt(mixed, tmp_path / "m", options=AdoptOptions(jobs=1)).manifest
    assert [sh.name for sh in manifest.splits["train"].shards] == ["a.tar"]
    assert list(manifest.rejected) == [{"split": "", "source": "b.tar.bz2", "reason": reason}]
    named = adopt([mixed / "a.tar", mixed / "b.tar.bz2", mixed / "notes.txt"], tmp_path / "n",
                  options=AdoptOptions(jobs=1)).manifest
    assert list(named.rejected) == [{"split": "", "source": "b.tar.bz2", "reason": reason},
                                    {"split": "", "source": "notes.txt", "reason": "not a .tar file"}]


def test_a_split_named_anywhere_in_a_shard_name_is_its_split(tmp_path: Path):
    """timm's ImageNet on the Hub keeps imagenet1k-train-NNNN.tar beside imagenet1k-validation-NNNN.tar; only a
    name that began with the split's word counted, so the validation shards went into train, silently."""
    labels = shardwriter_shards(tmp_path / "s", count=9, per_shard=3, pattern="imagenet1k-train-%04d.tar")
    (tmp_path / "s" / "imagenet1k-train-0002.tar").rename(tmp_path / "s" / "imagenet1k-validation-0000.tar")
    for name, split in [("shards_TEST.tar", "test"), ("pretrain-0.tar", "train"), ("contest-0.tar", "train"),
                        ("imagenet_val_000.tar", "val"),
                        ("cc3m.valid.0.tar", "val"), ("train-val-0.tar", None)]:
        if split is None:
            with pytest.raises(ConvertError, match=r"^the shard name 'train-val-0\.tar' names the splits train, val: "
                                                   "index the shards of each split with --split SPLIT"):
                adopt_module.split_of(name, AdoptOptions())
        else:
            assert adopt_module.split_of(name, AdoptOptions()) == split, name
    assert adopt_module.split_of("imagenet1k-validation-0.tar", AdoptOptions(split="test")) == "test"
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert {k: [sh.name for sh in s.shards] for k, s in m.splits.items()} == {
        "train": ["imagenet1k-train-0000.tar", "imagenet1k-train-0001.tar"], "val": ["imagenet1k-validation-0000.tar"]}
    _, val = load_all(tmp_path / "s", "kornia", split="val")
    assert val == [labels[k] for k in sorted(labels)[6:]]
    for asked in ("validation", "Valid", "VAL"):  # a split asked by the name the Hub or timm gives it
        assert load_all(tmp_path / "s", "kornia", split=asked)[1] == val
    shards = [str(tmp_path / "s" / "imagenet1k-validation-0000.tar")]
    assert load_all(shards, "kornia", split="validation")[1] == val
    with pytest.raises(ManifestError, match=r"unknown split 'testing'; this dataset has splits \['train', 'val'\]"):
        load_all(tmp_path / "s", "kornia", split="testing")


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_keys_written_with_their_files_extension_are_read_by_their_members_last_extension(tmp_path: Path, backend):
    """`{"__key__": "n01440764_10026.JPEG", ...}` through webdataset's writer makes the members `...JPEG.jpg` and
    `...JPEG.cls`: webdataset, DALI and wds2idx see the extensions `JPEG.jpg` and `JPEG.cls`, and every sample was
    rejected as having no image member."""
    if backend == "dali":
        pytest.importorskip("nvidia.dali")
    import webdataset as wds

    from converters.adopt.scan import last_ext

    assert [last_ext(e) for e in ("JPEG.jpg", "jpg", "input.PNG", "a.b.Cls")] == ["jpg", "jpg", "png", "cls"]
    (tmp_path / "s").mkdir()
    with wds.ShardWriter(str(tmp_path / "s" / "train-%04d.tar"), maxcount=4, verbose=0) as sink:
        for i, data in enumerate(encoded("JPEG", seed=i) for i in range(6)):
            sink.write({"__key__": f"n0144076{i}_{i}.JPEG", "jpg": data, "cls": i % 3})
    m = adopt(tmp_path / "s", options=AdoptOptions(jobs=1)).manifest
    assert m.rejected == () and m.image_members == ("JPEG.jpg",) and m.label_member == "JPEG.cls"
    assert (tmp_path / "s" / "train-0000.idx").read_bytes() == wds2idx(tmp_path / "s" / "train-0000.tar",
                                                                        tmp_path / "w.idx")
    assert load_all(tmp_path / "s", backend)[1] == [0, 1, 2, 0, 1, 2]
    assert verify_dataset(tmp_path / "s") == []


def test_a_split_named_by_hand_is_found_by_its_meaning(tmp_path: Path):
    shardwriter_shards(tmp_path / "s", count=4, per_shard=4)
    adopt(tmp_path / "s", options=AdoptOptions(jobs=1, split="Validation"))
    assert load_all(tmp_path / "s", "kornia", split="val")[1] == [0, 1, 2, 0]
    assert load_all(tmp_path / "s", "kornia", split="Validation")[1] == [0, 1, 2, 0]
    with pytest.raises(ManifestError, match=r"unknown split 'train'; this dataset has splits \['Validation'\]"):
        load_all(tmp_path / "s", "kornia", split="train")
