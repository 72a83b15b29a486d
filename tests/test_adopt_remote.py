"""`fastdata index` of WebDataset shards on remote storage (converters/adopt/remote.py): the shards named by a brace
pattern or one URL each on the local S3 server (or an HTTP server), each downloaded, scanned and deleted, the indexes
and manifest uploaded into an object store folder, which `fastdata.loader` then streams like a converted remote
dataset. Before, a URL was taken for a local path: "names 3 file(s) that do not exist", and an HTTPS folder became
'https:/example.com'."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest
import torch
from conftest_adopt import shardwriter_shards
from conftest_remote import upload_folder
from helpers import convert_images, make_image_tree, wait_until
from http_server import Fault, FileServer

import converters.adopt.remote as remote_module
import fastdata
from converters.adopt import AdoptOptions, adopt
from converters.adopt.remote import is_remote, shard_root_between
from fastdata.cli import main as cli
from fastdata.errors import ConvertError, ManifestError, StorageError
from fastdata.storage.client import RemoteStore

pytest.importorskip("obstore")
pytest.importorskip("webdataset")

NAMES = [f"f-{i:06d}.tar" for i in range(3)]


@pytest.fixture
def shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three ShardWriter tars of real photos (labels 0..2), in a local folder to upload; the user cache in tmp."""
    monkeypatch.setenv("FASTDATA_CACHE", str(tmp_path / "cache" / "shards"))
    shardwriter_shards(tmp_path / "wds", count=10, per_shard=4)
    return tmp_path / "wds"


def upload_tars(folder: Path, url: str) -> str:
    store = RemoteStore(url)
    for name in NAMES:
        store.upload(name, folder / name)
    return store.url


def batches(source, tmp_path: Path) -> list[tuple[torch.Tensor, list[int]]]:
    ld = fastdata.loader(source, batch_size=3, image_size=32, train=False, backend="kornia", device="cpu",
                         num_threads=2, cache_dir=str(tmp_path / "loader-cache") if "://" in str(source) else None)
    return [(x, y.tolist()) for x, y in ld]


def same(a, b) -> bool:
    return len(a) == len(b) and all(torch.equal(x, u) and y == v for (x, y), (u, v) in zip(a, b))


def test_remote_shards_are_indexed_beside_themselves_as_a_local_copy_is(shards: Path, s3: str, tmp_path: Path):
    url = upload_tars(shards, f"{s3}/wds/")
    result = adopt(f"{url}f-{{000000..000002}}.tar", options=AdoptOptions(jobs=2))
    local = shutil.copytree(shards, tmp_path / "copy")
    expected = adopt(local, options=AdoptOptions(jobs=1)).manifest
    assert result.dst == url and result.manifest.to_dict() == expected.to_dict()  # shard_root None in both
    store = RemoteStore(url)
    for name in NAMES:  # the indexes are the local ones, byte for byte
        index = name.replace(".tar", ".idx")
        assert store.read(index) == (local / index).read_bytes()
    assert store.read("manifest.json") == (local / "manifest.json").read_bytes()
    assert same(batches(url, tmp_path), batches(local, tmp_path))
    staging = tmp_path / "cache" / "staging"
    assert not staging.exists() or not any(staging.rglob("*.tar"))  # every download deleted


def test_indexes_go_to_another_folder_of_the_bucket_or_another_bucket(shards: Path, s3: str, tmp_path: Path,
                                                                        capsys):
    url = upload_tars(shards, f"{s3}/wds/")
    local = adopt(shutil.copytree(shards, tmp_path / "copy"), options=AdoptOptions(jobs=1)).manifest
    expected = batches(tmp_path / "copy", tmp_path)
    meta = adopt([url + n for n in NAMES], f"{s3}/meta/", options=AdoptOptions(jobs=1)).manifest
    assert meta.shard_root == "../wds/" and meta.splits == local.splits
    assert same(batches(f"{s3}/meta/", tmp_path), expected)
    assert cli(["verify", f"{s3}/meta/", "--decode"]) == 0  # reads the shards where shard_root says
    capsys.readouterr()
    assert cli(["info", f"{s3}/meta/"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"shards in: ../wds/ (relative to {s3}/meta/)"
    import boto3

    other = s3.replace("s3://", "s3://o")  # a second bucket on the same server
    boto3.client("s3").create_bucket(Bucket=other.removeprefix("s3://"))
    elsewhere = adopt(f"{url}f-{{000000..000002}}.tar", f"{other}/m", options=AdoptOptions(jobs=1)).manifest
    assert elsewhere.shard_root == url
    assert same(batches(f"{other}/m/", tmp_path), expected)
    assert RemoteStore(url).size("manifest.json") is None  # the shards' folder was not written


def test_shards_on_an_http_server_are_indexed_into_a_bucket(shards: Path, s3: str, tmp_path: Path, capsys):
    """As a Hugging Face dataset repository serves WebDataset shards: read-only HTTPS, the indexes in your bucket."""
    expected = batches(adopt(shutil.copytree(shards, tmp_path / "copy"), options=AdoptOptions(jobs=1)).dst,
                       tmp_path)
    with FileServer(shards) as server:
        pattern = f"{server.url}f-{{000000..000002}}.tar"
        with pytest.raises(ConvertError) as info:
            adopt(pattern, options=AdoptOptions(jobs=1))
        assert str(info.value) == (f"{server.url} is read-only (HTTP): pass DST, a folder on s3://, gs:// or az:// "
                                   "for the indexes and the manifest")
        manifest = adopt(pattern, f"{s3}/hub-meta/", options=AdoptOptions(jobs=1)).manifest
        assert manifest.shard_root == server.url
        assert same(batches(f"{s3}/hub-meta/", tmp_path), expected)
        capsys.readouterr()
        assert cli(["info", f"{s3}/hub-meta/"]) == 0
        assert capsys.readouterr().out.splitlines()[1] == f"shards in: {server.url}"  # no "relative to": a URL


def test_remote_shards_joined_with_double_colons_are_indexed_and_loaded(shards: Path, s3: str, tmp_path: Path):
    url = upload_tars(shards, f"{s3}/wds/")
    joined = f"{url}{NAMES[0]}::{url}f-{{000001..000002}}.tar"
    manifest = adopt(joined, options=AdoptOptions(jobs=1)).manifest
    assert [sh.name for sh in manifest.splits["train"].shards] == NAMES
    assert same(batches(joined, tmp_path), batches(url, tmp_path))


def test_https_shards_are_indexed_into_a_local_folder_that_the_loader_streams_them_through(
        shards: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch):
    """Shards on a read-only server (a Hugging Face dataset repository) need no bucket: the manifest and indexes go
    into a local folder whose shard_root is the shards' URL; the loader, verify and info read it."""
    copy = adopt(shutil.copytree(shards, tmp_path / "copy"), options=AdoptOptions(jobs=1))
    expected = batches(copy.dst, tmp_path)
    meta = tmp_path / "meta"
    with FileServer(shards) as server:
        pattern = f"{server.url}f-{{000000..000002}}.tar"
        assert cli(["index", pattern, str(meta), "-j", "2", "--no-progress"]) == 0
        assert capsys.readouterr().out.splitlines()[0] == (f"indexed 3 shard(s) -> {meta / 'manifest.json'} (shards "
                                                           f"in {server.url})")
        manifest = json.loads((meta / "manifest.json").read_text())
        assert manifest["shard_root"] == server.url and manifest["splits"] == copy.manifest.to_dict()["splits"]
        assert sorted(p.name for p in meta.iterdir()) == ["f-000000.idx", "f-000001.idx", "f-000002.idx",
                                                          "manifest.json"]  # no staging left, no tar
        for name in NAMES:
            idx = name.replace(".tar", ".idx")
            assert (meta / idx).read_bytes() == (copy.dst / idx).read_bytes()
        assert same(batches(meta, tmp_path), expected)
        assert cli(["verify", str(meta), "--decode"]) == 0
        assert "fastdata verify: 3/3 shards (100.0%) in " in capsys.readouterr().err  # counted through the cache
        assert cli(["info", str(meta)]) == 0 and capsys.readouterr().out.splitlines()[1] == f"shards in: {server.url}"
        assert adopt(pattern, meta, options=AdoptOptions(jobs=1)).manifest == copy.manifest.__class__.from_dict(
            manifest, where="again")  # a rerun writes the same
        server.rewrite = lambda method, path, rng, answer: (  # the server now serves other bytes for one shard
            answer if not path.endswith(NAMES[1]) or method != "GET" else
            type(answer)(answer.status, answer.headers, bytes(b ^ 1 for b in answer.body)))
        monkeypatch.setenv("FASTDATA_CACHE", str(tmp_path / "fresh-cache"))  # the node cache held the good bytes
        assert cli(["verify", str(meta)]) == 1
        assert f"{server.url}{NAMES[1]}" in capsys.readouterr().out
        server.rewrite = None
        monkeypatch.setenv("FASTDATA_CACHE", str(tmp_path / "third-cache"))
        index = meta / "f-000000.idx"
        index.write_bytes(index.read_bytes().replace(b"jpg", b"JPG", 1))  # an index edited after indexing
        with pytest.raises(StorageError, match=r"f-000000.idx: sha256 differs from the manifest"):
            batches(meta, tmp_path)


def test_an_interrupted_index_into_a_local_folder_keeps_its_scans_where_told_and_says_so(
        shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    real_scan = remote_module.scan_tar

    def dies_on_the_last(path, **kw):
        if path.name == NAMES[-1]:
            raise OSError("killed")
        return real_scan(path, **kw)

    monkeypatch.setattr(remote_module, "scan_tar", dies_on_the_last)
    with FileServer(shards) as server:
        pattern = f"{server.url}f-{{000000..000002}}.tar"
        meta = tmp_path / "meta"
        with pytest.raises(OSError, match="killed"):
            adopt(pattern, meta, options=AdoptOptions(jobs=1))
        assert sorted(p.name for p in (meta / ".partial" / "remote" / "scans").iterdir()) == [
            "f-000000.tar.json", "f-000001.tar.json"]  # in DST's own .partial/ by default
        with pytest.raises(ManifestError, match=rf"an index into {meta} is unfinished: re-run the same `fastdata "
                                                r"index` command to finish it"):
            fastdata.loader(meta, batch_size=2)
        other, stage = tmp_path / "other", tmp_path / "stage"
        with pytest.raises(OSError, match="killed"):
            adopt(pattern, other, options=AdoptOptions(jobs=1, staging=str(stage)))
        assert len(list((stage / "scans").iterdir())) == 2 and not (other / ".partial").exists()
        monkeypatch.setattr(remote_module, "scan_tar", real_scan)
        assert cli(["index", pattern, str(meta), "-j", "1"]) == 0  # resumed, with a progress line in the log
        assert "fastdata index: 3/3 shards (100.0%) in " in capsys.readouterr().err
        assert not (meta / ".partial").exists()


def test_the_cli_indexes_remote_shards_with_progress_and_a_summary(shards: Path, s3: str, tmp_path: Path, capsys):
    url = upload_tars(shards, f"{s3}/wds/")
    assert cli(["index", f"{url}f-{{000000..000002}}.tar", "-j", "1", "--staging", str(tmp_path / "stage")]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == f"indexed 3 shard(s) -> {url}manifest.json"
    shown = [line for line in err.splitlines() if line.startswith("fastdata index: ")]  # moto logs there too
    assert len(shown) == 1 and shown[0].startswith("fastdata index: 3/3 shards (100.0%) in ")
    assert not (tmp_path / "stage").exists()  # the staging folder goes once the manifest is up


def test_an_interrupted_run_resumes_without_downloading_the_tars_it_scanned(shards: Path, s3: str, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch):
    url = upload_tars(shards, f"{s3}/wds/")
    downloads: list[str] = []
    real_download, real_scan = RemoteStore.download, remote_module.scan_tar

    def counted(self, name, dest, **kw):
        downloads.append(name)
        return real_download(self, name, dest, **kw)

    def dies_on_the_last(path, **kw):
        if path.name == NAMES[-1]:
            raise OSError("killed")
        return real_scan(path, **kw)

    monkeypatch.setattr(RemoteStore, "download", counted)
    monkeypatch.setattr(remote_module, "scan_tar", dies_on_the_last)
    options = AdoptOptions(jobs=1, staging=str(tmp_path / "stage"))
    with pytest.raises(OSError, match="killed"):
        adopt(f"{url}f-{{000000..000002}}.tar", options=options)
    assert sorted(downloads) == NAMES and RemoteStore(url).size("manifest.json") is None
    assert sorted(p.name for p in (tmp_path / "stage" / "downloads").iterdir()) == []  # deleted though it failed
    monkeypatch.setattr(remote_module, "scan_tar", real_scan)
    downloads.clear()
    for other in ({"max_pixels": 10**6}, {"decode": True}):  # the same tars with other options: scanned anew
        downloads.clear()
        with pytest.raises(OSError, match="stop"):
            monkeypatch.setattr(remote_module, "scan_tar", lambda path, **kw: (_ for _ in ()).throw(OSError("stop")))
            adopt(f"{url}f-{{000000..000002}}.tar",
                  options=AdoptOptions(jobs=1, staging=str(tmp_path / "stage"), **other))
        wait_until(lambda: not any(t.name.startswith("fastdata-index") for t in threading.enumerate()),
                   "the failed run's threads end", timeout=10)
        assert downloads[0] == NAMES[0]  # a second may have been under way: it saved nothing (below)
    monkeypatch.setattr(remote_module, "scan_tar", real_scan)
    downloads.clear()
    adopt(f"{url}f-{{000000..000002}}.tar", options=options)
    assert downloads == [NAMES[-1]]  # the first two scans were saved
    assert RemoteStore(url).size("manifest.json") is not None


def test_what_cannot_be_indexed_remotely_is_refused_before_anything_is_written(shards: Path, s3: str,
                                                                                tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch):
    url = upload_tars(shards, f"{s3}/wds/")
    name_them = ("name the shards with a brace pattern, 's3://bucket/ds/shards-{000000..000099}.tar', or one URL "
                 "each: fastdata never lists a bucket")
    cases = [
        (url, {}, f"{url} is a folder; {name_them}"),
        (f"{s3}/v1.0/ds", {}, f"{s3}/v1.0/ds is a folder; {name_them}"),
        (f"{s3}/ds.v2/", {}, f"{s3}/ds.v2/ is a folder; {name_them}"),  # a dot in a folder's name
        (f"{url}f-*.tar", {}, f"'{url}f-*.tar': globs cannot be expanded on remote storage; {name_them} (a name "
                              "that holds *, ? or [ is written percent-encoded: %2A, %3F, %5B)"),
        ([url + NAMES[0], f"{s3}/other/x.tar"], {}, "the shards to index must lie in one folder (the manifest "
                                                    "records one shard folder)"),
        ([url + NAMES[0], str(shards / NAMES[1])], {}, "the shards to index are local paths and URLs at once; a "
                                                       "dataset's shards lie in one folder"),
        (shards, {"dst": f"{s3}/meta/"}, f"local shards are indexed into a local folder, not {s3}/meta/: index them "
                                         "beside the shards, then upload the folder (tars, indexes and manifest) "
                                         "together"),
        (f"{url}f-{{000000..000003}}.tar", {}, f"1 of the 4 shards named do not exist in {url} (f-000003.tar); check "
                                               "the range and the folder"),
        (f"{url}f-{{000000..000006}}.tar", {}, f"4 of the 7 shards named do not exist in {url} (f-000003.tar, "
                                               "f-000004.tar, f-000005.tar and 1 more); check the range and the "
                                               "folder"),
        ([url + "notes.txt"], {}, f"no .tar file among the shards named in {url}"),
    ]
    def no_download(*args, **kw):
        raise AssertionError("a refusal came after a download")

    monkeypatch.setattr(RemoteStore, "download", no_download)  # a missing last shard: refused before the first tar
    for spec, kw, message in cases:
        with pytest.raises(ConvertError) as info:
            adopt(spec, options=AdoptOptions(jobs=1), **kw)
        assert str(info.value) == message, spec
    assert RemoteStore(url).size("manifest.json") is None and RemoteStore(url).size("f-000000.idx") is None


def test_a_folder_that_holds_a_conversion_or_someone_elses_index_is_not_written(shards: Path, s3: str,
                                                                                 tmp_path: Path):
    url = upload_tars(shards, f"{s3}/wds/")
    converted = tmp_path / "conv"
    convert_images(make_image_tree(tmp_path / "src", classes=2, per_class=2), converted)
    taken = upload_folder(converted, f"{s3}/taken/")
    with pytest.raises(ConvertError) as info:
        adopt(f"{url}f-{{000000..000002}}.tar", taken, options=AdoptOptions(jobs=1))
    assert str(info.value) == (f"{taken} already holds a dataset written by `fastdata convert`; index into another "
                               "folder (fastdata index SRC DST)")
    RemoteStore(url).upload("f-000001.idx", b"v1.2 0\n")  # an index someone else wrote
    with pytest.raises(ConvertError, match=rf"^{url}f-000001.idx exists and differs from the index of its tar \(sha256 "
                                           r"[0-9a-f]{12}\.\.\.\); pass a separate DST folder or remove it$"):
        adopt(f"{url}f-{{000000..000002}}.tar", options=AdoptOptions(jobs=1))
    assert RemoteStore(url).size("manifest.json") is None
    RemoteStore(url).delete("f-000001.idx")
    first = adopt(f"{url}f-{{000000..000002}}.tar", options=AdoptOptions(jobs=1)).manifest
    again = adopt(f"{url}f-{{000000..000002}}.tar", options=AdoptOptions(jobs=1)).manifest  # its own: rewritten
    assert again.to_dict() == first.to_dict()
    fresh = f"{s3}/fresh/"
    upload_tars(shards, fresh)
    adopt(f"{fresh}f-{{000000..000001}}.tar", options=AdoptOptions(jobs=1))  # a manifest listing two indexes
    RemoteStore(fresh).upload("f-000002.idx", b"v1.2 0\n")  # and one it does not list, someone else's
    with pytest.raises(ConvertError, match=r"f-000002.idx exists and differs from the index of its tar"):
        adopt(f"{fresh}f-{{000000..000002}}.tar", options=AdoptOptions(jobs=1))
    RemoteStore(url).upload(NAMES[1], shards / NAMES[2])  # the tar changed since: its index is ours to replace
    changed = adopt(f"{url}f-{{000000..000002}}.tar", options=AdoptOptions(jobs=1)).manifest
    assert changed.splits["train"].shards[1].sha256 == changed.splits["train"].shards[2].sha256
    assert RemoteStore(url).read("f-000001.idx") == RemoteStore(url).read("f-000002.idx")


def test_remote_tars_without_a_usable_sample_are_refused_naming_their_folder(tmp_path: Path):
    from conftest_adopt import raw_tar

    raw_tar(tmp_path / "w" / "a.tar", [("a.txt", b"no image")])
    with FileServer(tmp_path / "w") as server:
        with pytest.raises(ConvertError, match=rf"^no usable sample in 1 tar\(s\) under {server.url} \("):
            adopt(server.url + "a.tar", tmp_path / "meta", options=AdoptOptions(jobs=1))


def test_compressed_and_other_names_given_are_recorded(shards: Path, s3: str):
    url = upload_tars(shards, f"{s3}/wds/")
    manifest = adopt([url + NAMES[0], url + "b.tar.gz", url + "notes.txt"], options=AdoptOptions(jobs=1)).manifest
    assert [(r["split"], r["source"]) for r in manifest.rejected] == [("", "b.tar.gz"), ("", "notes.txt")]
    assert manifest.rejected[0]["reason"].startswith("a compressed tar: ")
    assert manifest.rejected[1]["reason"] == "not a .tar file"


@pytest.mark.parametrize(("dst", "folder", "root"), [
    ("s3://b/ds/", "s3://b/ds/", None),
    ("s3://b/meta/", "s3://b/ds/", "../ds/"),
    ("s3://b/a/b/m/", "s3://b/ds/x/", "../../../ds/x/"),
    ("s3://b/ds/meta/", "s3://b/ds/", "../"),
    ("s3://c/meta/", "s3://b/ds/", "s3://b/ds/"),
    ("s3://b/meta/", "https://h/ds/", "https://h/ds/"),
])
def test_the_shard_root_is_relative_on_one_bucket_and_a_url_across(dst: str, folder: str, root: str | None):
    assert shard_root_between(dst, folder) == root


def test_remote_is_told_from_local():
    assert is_remote("s3://b/x.tar") and is_remote(["gs://b/x.tar", "gs://b/y.tar"])
    assert not is_remote("shards/x.tar") and not is_remote(Path("s3:/b")) and not is_remote("file:///x/y.tar")


@pytest.mark.parametrize(("base", "ref", "folder"), [
    ("s3://b/meta/", "../wds/", "s3://b/wds/"),
    ("s3://b/meta/", "../wds", "s3://b/wds/"),  # as os.path.relpath writes it for a local index
    ("gs://b/m/", "x/", "gs://b/m/x/"),
    ("az://c/a/m/", "../../s/", "az://c/s/"),
    ("s3://b/m/", "../../../x/", "s3://b/x/"),  # never above the bucket
    ("https://h/a/m/", "../s/", "https://h/a/s/"),
    ("s3://b/meta/", "https://h/ds", "https://h/ds/"),
    ("s3://b", "x/", "s3://b/x/"),  # a bucket's root without its slash
])
def test_a_shard_root_is_resolved_on_the_manifests_bucket_for_every_scheme(base: str, ref: str, folder: str):
    """urllib's urljoin resolved `../wds/` only for http(s): on s3:// it stayed `../wds/`, and the loader failed."""
    from fastdata.storage.url import folder_at

    assert folder_at(base, ref) == folder


def test_a_failure_ends_the_run_at_once_without_waiting_for_the_downloads_in_flight(
        shards: Path, s3: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Before, the thread pool's exit waited for every download in flight: a failed scan or a Ctrl-C hung for as long
    as the slowest tar took to come."""
    real_scan = remote_module.scan_tar

    def fails_first(path, **kw):
        if path.name == NAMES[0]:
            raise OSError("bad disk")
        return real_scan(path, **kw)

    monkeypatch.setattr(remote_module, "scan_tar", fails_first)
    with FileServer(shards) as server:
        server.faults.append(Fault(NAMES[1], stall=30))  # the second tar's body would take 30 s to start
        start = time.monotonic()
        with pytest.raises(OSError, match="bad disk"):
            adopt(f"{server.url}f-{{000000..000002}}.tar", f"{s3}/m/",
                  options=AdoptOptions(jobs=2, staging=str(tmp_path / "stage")))
        assert time.monotonic() - start < 10
        wait_until(lambda: not any(t.name.startswith("fastdata-index") for t in threading.enumerate()),
                   "the download threads end (their bodies cut), so that the interpreter's exit does not wait",
                   timeout=10)


def test_a_tar_larger_than_the_staging_disks_free_space_is_refused_before_its_download(
        shards: Path, s3: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    url = upload_tars(shards, f"{s3}/wds/")
    size = (shards / NAMES[0]).stat().st_size
    monkeypatch.setattr(remote_module.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 0, size - 1))
    stage = tmp_path / "stage"
    with pytest.raises(ConvertError) as info:
        adopt(url + NAMES[0], options=AdoptOptions(jobs=1, staging=str(stage)))
    assert str(info.value) == (f"{url}{NAMES[0]} is {size:,} bytes, more than the {size - 1:,} free where it would be "
                               f"downloaded to be scanned ({stage / 'downloads'}): free space there, or pass --staging "
                               "DIR (AdoptOptions.staging) on a larger disk")
    monkeypatch.setattr(remote_module.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 0, size))
    assert adopt(url + NAMES[0], options=AdoptOptions(jobs=1, staging=str(stage))).manifest.num_samples == 4


def test_a_scanner_left_running_by_a_failed_run_saves_nothing(shards: Path, s3: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch):
    """A thread of a failed run that was past its download scanned and saved its tar with that run's options after
    the run had returned: the next run with other options then found a scan that was not its own."""
    url = upload_tars(shards, f"{s3}/wds/")
    stopped = threading.Event()
    store = RemoteStore(url)
    scanner = remote_module._RemoteScanner(store, remote_module.sizes_of(store, NAMES), tmp_path / "work",
                                           AdoptOptions(jobs=1), stopped)
    for sub in ("scans", "downloads"):
        (tmp_path / "work" / sub).mkdir(parents=True)
    real_scan = remote_module.scan_tar

    def stopped_meanwhile(path, **kw):
        stopped.set()  # the run fails while this tar is being scanned
        return real_scan(path, **kw)

    monkeypatch.setattr(remote_module, "scan_tar", stopped_meanwhile)
    assert scanner(NAMES[0]).name == NAMES[0]
    with pytest.raises(ConvertError, match=rf"^the index of {url} stopped before {NAMES[1]} was scanned$"):
        scanner(NAMES[1])  # stopped before its scan: not scanned
    assert list((tmp_path / "work" / "scans").iterdir()) == [] == list((tmp_path / "work" / "downloads").iterdir())


def test_a_failed_run_stops_the_scans_it_leaves_running_from_saving(shards: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch):
    real_scan = remote_module.scan_tar

    def scan(path, **kw):
        if path.name == NAMES[0]:
            time.sleep(0.3)
            raise OSError("bad disk")
        time.sleep(1.5)  # still scanning when the run fails
        return real_scan(path, **kw)

    monkeypatch.setattr(remote_module, "scan_tar", scan)
    stage = tmp_path / "stage"
    with FileServer(shards) as server:
        with pytest.raises(OSError, match="bad disk"):
            adopt(f"{server.url}f-{{000000..000001}}.tar", tmp_path / "meta",
                  options=AdoptOptions(jobs=2, staging=str(stage)))
        wait_until(lambda: not any(t.name.startswith("fastdata-index") for t in threading.enumerate()),
                   "the failed run's threads end", timeout=10)
    assert list((stage / "scans").iterdir()) == []


def test_decode_reaches_remote_shards_and_a_rerun_with_it_scans_anew(tmp_path: Path):
    from conftest_adopt import raw_tar
    from helpers import PHOTOS

    photo = sorted(PHOTOS.glob("*.jpg"))[0].read_bytes()
    raw_tar(tmp_path / "s" / "f-000000.tar", [("a.jpg", photo), ("a.cls", b"0"), ("b.jpg", photo[: len(photo) // 2]),
                                              ("b.cls", b"1")])
    stage = str(tmp_path / "stage")  # one staging folder for both runs: the saved scans must not be reused
    with FileServer(tmp_path / "s") as server:
        headers = adopt(server.url + "f-000000.tar", tmp_path / "h", options=AdoptOptions(jobs=1, staging=stage))
        decoded = adopt(server.url + "f-000000.tar", tmp_path / "d",
                        options=AdoptOptions(jobs=1, staging=stage, decode=True))
    assert headers.manifest.splits["train"].samples == 2
    assert decoded.manifest.splits["train"].samples == 1
    assert [(r["source"], r["reason"].split(":")[0]) for r in decoded.manifest.rejected] == [
        ("f-000000.tar:b", "not a readable image")]


def test_unindexed_remote_shards_given_to_the_loader_are_told_the_command_that_indexes_them(shards: Path, s3: str):
    """It was "no manifest.json at URL: pass the URL of the folder `fastdata convert` or `fastdata index` wrote"."""
    url = upload_tars(shards, f"{s3}/wds/")
    for source, given in ((f"{url}f-{{000000..000002}}.tar", f"{url}f-{{000000..000002}}.tar"),
                          ([url + NAMES[0], url + NAMES[1]], f"{url}{NAMES[0]}::{url}{NAMES[1]}")):
        with pytest.raises(ManifestError) as info:
            fastdata.loader(source, batch_size=2)
        assert str(info.value) == (f"no manifest.json beside the shards in {url}: shards written by another tool are "
                                   f"indexed where they lie with `fastdata index '{given}'`, or into a local folder "
                                   f"with `fastdata index '{given}' meta/`; then load that folder")
    with pytest.raises(ManifestError, match=r"^no manifest.json at .*: pass the URL of the folder"):
        fastdata.loader(url, batch_size=2)  # a folder: the advice for folders
    with pytest.raises(ManifestError, match=r"^no manifest.json at .*: pass the URL of the folder"):
        fastdata.loader(f"{url}train-000000.arrow", batch_size=2)  # no tar: nothing to index
    RemoteStore(url).upload("manifest.json", b"{not json")
    with pytest.raises(ManifestError, match=r"manifest.json is not JSON"):
        fastdata.loader(f"{url}f-{{000000..000002}}.tar", batch_size=2)  # a manifest there, broken: said so


def test_a_gated_repository_is_read_with_hf_token_or_the_headers_given(shards: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch):
    """A gated or private Hugging Face repository answers 401 without a token: $HF_TOKEN is sent to its hosts (here
    the test server stands in for huggingface.co), or `storage_options={'headers': ...}` to any."""
    import fastdata.storage.client as client

    monkeypatch.delenv("HF_TOKEN", raising=False)
    with FileServer(shards) as server:
        server.require_authorization("Bearer hf_secret")
        pattern = f"{server.url}f-{{000000..000002}}.tar"
        with pytest.raises(StorageError) as info:
            adopt(pattern, tmp_path / "meta", options=AdoptOptions(jobs=1))
        assert str(info.value) == (f"access to {server.url}f-000000.tar was denied (HTTP 401): a gated or private "
                                   "repository needs a token: set HF_TOKEN (Hugging Face, sent to huggingface.co only) "
                                   "or pass storage_options={'headers': {'Authorization': 'Bearer ...'}}")
        monkeypatch.setenv("HF_TOKEN", "hf_secret")
        with pytest.raises(StorageError, match="HTTP 401"):  # a token goes to Hugging Face's hosts only
            adopt(pattern, tmp_path / "meta", options=AdoptOptions(jobs=1))
        monkeypatch.setattr(client, "HF_HOSTS", ("127.0.0.1",))  # the test server as huggingface.co
        adopt(pattern, tmp_path / "meta", options=AdoptOptions(jobs=1))
        expected = batches(adopt(shutil.copytree(shards, tmp_path / "copy"), options=AdoptOptions(jobs=1)).dst,
                           tmp_path)
        assert same(batches(tmp_path / "meta", tmp_path), expected)
        monkeypatch.delenv("HF_TOKEN")
        monkeypatch.setenv("FASTDATA_CACHE", str(tmp_path / "fresh"))
        given = fastdata.loader(tmp_path / "meta", batch_size=3, image_size=32, train=False, backend="kornia",
                                device="cpu", storage_options={"headers": {"Authorization": "Bearer hf_secret"}})
        assert same([(x, y.tolist()) for x, y in given], expected)
        wrong = fastdata.loader(tmp_path / "meta", batch_size=3, image_size=32, train=False, backend="kornia",
                                device="cpu", storage_options={"headers": {"Authorization": "Bearer nope"}},
                                cache_dir=str(tmp_path / "other"))
        with pytest.raises(StorageError, match=r"\(the one sent was refused\)$"):
            next(iter(wrong))


@pytest.mark.parametrize(("url", "env", "given", "sent"), [
    ("https://huggingface.co/datasets/o/n/resolve/main/", "t", None, {"Authorization": "Bearer t"}),
    ("https://cdn.hf.co/x/", "t", None, {"Authorization": "Bearer t"}),  # a subdomain
    ("https://HuggingFace.co/x/", "t", None, {"Authorization": "Bearer t"}),  # hosts compare without case
    ("https://huggingface.co.evil.org/x/", "t", None, {}),  # look-alikes
    ("https://evilhuggingface.co/x/", "t", None, {}),
    ("https://example.org/x/", "t", None, {}),
    ("https://huggingface.co/x/", None, None, {}),
    ("https://huggingface.co/x/", "t", {"authorization": "Bearer mine"}, {"authorization": "Bearer mine"}),
    ("https://example.org/x/", None, {"X-Api-Key": "k"}, {"X-Api-Key": "k"}),
    ("s3://bucket/x/", "t", {"X-Api-Key": "k"}, {}),  # an object store signs its own requests
])
def test_which_headers_a_store_sends(monkeypatch: pytest.MonkeyPatch, url, env, given, sent):
    if env is None:
        monkeypatch.delenv("HF_TOKEN", raising=False)
    else:
        monkeypatch.setenv("HF_TOKEN", env)
    options = {} if given is None else {"headers": given}
    assert RemoteStore(url, options).headers == sent


@pytest.mark.parametrize("given", ["Bearer x", {"Authorization": 1}, {"A": "b\r\nX-Evil: 1"}, {"A: b": "c"}, {"": "x"}])
def test_headers_that_are_no_headers_are_refused(given):
    with pytest.raises(ValueError, match=r"^storage_options\['headers'\] is not allowed; it must be a dict of header "):
        RemoteStore("https://example.org/x/", {"headers": given})
