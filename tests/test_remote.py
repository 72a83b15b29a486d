"""Remote datasets end to end, on servers on 127.0.0.1 (moto's S3, tests/http_server.py): conversion to S3
(byte-identical to a local one, resumable, in parts), `info`/`verify` on URLs, every kind streamed with the
batches of the local dataset, the node cache's budget, sharing and warm epochs, and faults that must end in
a retry or a clear error, never a hang or a shorter epoch."""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest_remote import upload_folder
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)
from helpers import convert_images, make_image_tree
from http_server import Answer, Fault, FileServer

import fastdata
from converters import get_kind
from converters.assemble import merge
from converters.destination import RemoteDestination
from converters.engine import ConvertConfig, convert
from converters.images import ImageOptions
from fastdata.cli import main as cli
from fastdata.errors import ConvertError, ManifestError, StorageError
from fastdata.storage.client import RemoteStore

pytest.importorskip("obstore")


def files_of(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def remote_files(url: str, names: list[str]) -> dict[str, str]:
    store = RemoteStore(url)
    return {n: hashlib.sha256(store.read(n)).hexdigest() for n in names}


@pytest.fixture(scope="module")
def src(tmp_path_factory) -> Path:
    return make_image_tree(tmp_path_factory.mktemp("remote") / "src", classes=3, per_class=8,
                           splits=("train", "val"))


@pytest.fixture(scope="module")
def local(src: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local") / "ds"
    convert_images(src, out, samples_per_shard=5)
    return out


def labels_of(source, **kw) -> list[list[int]]:
    ld = fastdata.loader(source, batch_size=4, image_size=32, device="cpu", num_threads=2, **kw)
    return [y.tolist() for _, y in ld]


# ---------------------------------------------------------------------------------------------- convert
def test_convert_to_s3_equals_a_local_conversion_and_info_verify_read_it(s3: str, src: Path, local: Path,
                                                                          tmp_path: Path, capsys):
    url = f"{s3}/imagenet/"
    assert cli(["convert", str(src), url, "-j", "1", "--samples-per-shard", "5", "--no-progress",
                "--staging", str(tmp_path / "stage")]) == 0
    assert remote_files(url, list(files_of(local))) == files_of(local)  # byte for byte, manifest included
    assert not (tmp_path / "stage").exists()  # staging removed once the manifest is up
    with pytest.raises(StorageError, match="does not exist"):
        RemoteStore(url).read(".partial/plan.json")
    capsys.readouterr()
    assert cli(["info", url]) == 0 and "images dataset" in capsys.readouterr().out
    assert cli(["verify", url, "--decode"]) == 0 and "OK" in capsys.readouterr().out


def _convert(src: Path, dst, *, staging: Path, **cfg) -> object:
    dest = RemoteDestination(dst, staging=staging) if isinstance(dst, str) else dst
    return convert(get_kind("images"), src, dest, options=ImageOptions(),
                   config=ConvertConfig(**{"jobs": 1, "samples_per_shard": 5, **cfg}))


def test_a_failed_upload_resumes_and_only_missing_shards_go_up(s3: str, src: Path, local: Path, tmp_path: Path,
                                                               monkeypatch):
    url = f"{s3}/resume/"
    uploads: list[str] = []
    real = RemoteStore.upload

    def flaky(self, name, source):
        if name.endswith(".tar") and len([u for u in uploads if u.endswith(".tar")]) == 2:
            raise StorageError("injected: the network went away")
        uploads.append(name)
        return real(self, name, source)

    monkeypatch.setattr(RemoteStore, "upload", flaky)
    with pytest.raises(StorageError, match="injected"):
        _convert(src, url, staging=tmp_path / "stage")
    with pytest.raises(StorageError, match="does not exist"):
        RemoteStore(url).read("manifest.json")  # no manifest while shards are missing
    monkeypatch.setattr(RemoteStore, "upload", lambda self, n, s: uploads.append(n) or real(self, n, s))
    first = list(uploads)
    # resume from another machine: a new staging folder, the records on the store say what is done
    result = _convert(src, url, staging=tmp_path / "elsewhere")
    again = [u for u in uploads[len(first):] if u.endswith(".tar")]
    assert set(again).isdisjoint(u for u in first if u.endswith(".tar")) and result.skipped
    assert remote_files(url, list(files_of(local))) == files_of(local)


def test_parts_and_merge_on_a_remote_destination(s3: str, src: Path, local: Path, tmp_path: Path):
    url = f"{s3}/parts/"
    for part in range(3):
        assert cli(["convert", str(src), url, "-j", "1", "--samples-per-shard", "5", "--num-parts", "3",
                    "--part", str(part), "--no-progress", "--staging", str(tmp_path / f"stage{part}")]) == 0
    assert cli(["convert", "--merge", url]) == 0
    assert remote_files(url, list(files_of(local))) == files_of(local)
    assert cli(["convert", "--merge", url]) == 0  # merged already: nothing to do


def test_a_finished_remote_conversion_run_again_does_nothing(s3: str, src: Path, local: Path, tmp_path: Path,
                                                             monkeypatch):
    url = f"{s3}/again/"
    first = _convert(src, url, staging=tmp_path / "stage")
    uploads: list[str] = []
    monkeypatch.setattr(RemoteStore, "upload", lambda self, name, source: uploads.append(name))
    again = _convert(src, url, staging=tmp_path / "stage2")
    assert uploads == [] and again.manifest == first.manifest and again.converted == []
    with pytest.raises(ManifestError, match=r"no manifest.json at .*/empty/"):
        merge(f"{s3}/empty/")


def test_an_http_destination_is_read_only(src: Path, tmp_path: Path):
    with FileServer(tmp_path) as server, pytest.raises(StorageError, match="read-only"):
        _convert(src, server.url + "ds/", staging=tmp_path / "stage")


# ---------------------------------------------------------------------------------------------- stream
@pytest.mark.parametrize("backend", ["kornia", "dali"])
@pytest.mark.parametrize("train", [True, False])
def test_images_from_s3_equal_local_batch_for_batch(s3: str, local: Path, tmp_path: Path, backend: str,
                                                    train: bool):
    if backend == "dali":
        pytest.importorskip("nvidia.dali")
    url = upload_folder(local, f"{s3}/img/")
    kw = dict(backend=backend, train=train, seed=7, split="val" if not train else "train")
    assert labels_of(url, cache_dir=tmp_path / "c", **kw) == labels_of(local, **kw)


def test_a_dataset_under_a_key_of_pattern_characters_loads_by_its_percent_encoded_url(s3: str, local: Path,
                                                                                      tmp_path: Path):
    """`s3://bucket/runs/exp[1]/ds/` is refused as a glob (fastdata never lists remote storage); the refusal says to
    write such a name percent-encoded, and that URL reads the keys as they are."""
    upload_folder(local, f"{s3}/runs/exp[1]{{a,b}}*/ds/")
    with pytest.raises(ManifestError, match=r"percent-encoded: %2A, %3F, %5B\)$"):
        fastdata.loader(f"{s3}/runs/exp[1]{{a,b}}*/ds/", batch_size=4)
    with pytest.raises(ManifestError) as err:  # braces alone: a brace pattern of two folders
        fastdata.loader(f"{s3}/runs/run{{a,b}}/ds/", batch_size=4)
    assert str(err.value) == ("the shard URLs given lie in 2 folders; a dataset's shards lie in one (a name that holds "
                              "braces is written percent-encoded: %7B, %7D)")
    url = f"{s3}/runs/exp%5B1%5D%7Ba,b%7D%2A/ds/"
    kw = dict(backend="kornia", train=False, split="val")
    assert labels_of(url, cache_dir=tmp_path / "c", **kw) == labels_of(local, **kw)


def test_cache_smaller_than_the_dataset_downloads_each_shard_once_per_epoch(s3: str, local: Path, tmp_path: Path):
    url = upload_folder(local, f"{s3}/small/")
    shards = json.loads((local / "manifest.json").read_text())["splits"]["train"]["shards"]
    total = sum(s["bytes"] for s in shards)
    limit = total - min(s["bytes"] for s in shards) // 2  # the shards do not all fit: eviction must happen
    ld = fastdata.loader(url, batch_size=4, image_size=32, device="cpu", backend="kornia", shuffle_window=5,
                         cache_dir=tmp_path / "c", cache_limit=limit, prefetch=1, num_threads=1)
    cache = ld.backend._view.remote.cache
    for epoch in range(3):
        ld.set_epoch(epoch)
        before = cache.downloaded_bytes
        assert len(list(ld)) == len(ld)
        got = cache.downloaded_bytes - before
        assert cache.used() <= cache.limit
        assert got <= total + 4096 * len(shards)  # no shard twice in an epoch (indexes: a few bytes each)
        if epoch > 0:
            assert got > 0  # the cache could not keep everything: some shards came again
    with pytest.raises(ValueError, match="cache_limit=.*at least"):
        fastdata.loader(url, batch_size=4, device="cpu", backend="kornia", cache_dir=tmp_path / "d", cache_limit=1000)


def test_a_warm_epoch_downloads_nothing(s3: str, local: Path, tmp_path: Path):
    url = upload_folder(local, f"{s3}/warm/")
    ld = fastdata.loader(url, batch_size=4, image_size=32, device="cpu", backend="kornia", cache_dir=tmp_path / "c")
    list(ld)
    cache = ld.backend._view.remote.cache
    first = cache.downloads
    ld.set_epoch(1)
    list(ld)
    assert first > 0 and cache.downloads == first
    again = fastdata.loader(url, batch_size=4, image_size=32, device="cpu", backend="kornia",
                            cache_dir=tmp_path / "c")
    list(again)
    assert again.backend._view.remote.cache.downloads == 0  # a new process finds everything cached


def test_resume_mid_epoch_from_s3(s3: str, local: Path, tmp_path: Path):
    url = upload_folder(local, f"{s3}/resume-load/")
    kw = dict(batch_size=3, image_size=32, device="cpu", backend="kornia", seed=2, cache_dir=tmp_path / "c")
    full = [y.tolist() for _, y in fastdata.loader(url, **kw)]
    a = fastdata.loader(url, **kw)
    it = iter(a)
    next(it)
    next(it)
    state = json.loads(json.dumps(a.state_dict()))
    it.close()
    b = fastdata.loader(url, **{**kw, "cache_dir": tmp_path / "other"})
    b.load_state_dict(state)
    assert [y.tolist() for _, y in b] == full[2:]


def test_text_and_volumes_from_s3_equal_local(s3: str, fortunes_tokens: Path, tmp_path: Path):
    url = upload_folder(fortunes_tokens, f"{s3}/tokens/")
    kw = dict(max_tokens=2048, seed=3)
    local_batches = [b["input_ids"] for b in fastdata.loader(fortunes_tokens, **kw)]
    remote_batches = [b["input_ids"] for b in fastdata.loader(url, cache_dir=tmp_path / "c", **kw)]
    assert len(local_batches) == len(remote_batches) and all(
        torch.equal(a, b) for a, b in zip(local_batches, remote_batches))
    with pytest.raises(ValueError, match="whole split"):
        fastdata.loader(url, cache_dir=tmp_path / "d", cache_limit=10_000, **kw)
    need = sum(p.stat().st_size for p in fortunes_tokens.glob("*.arrow"))
    exact = fastdata.loader(url, cache_dir=tmp_path / "f", cache_limit=need, **kw)  # exactly the split's bytes
    assert len(exact) == len(local_batches)
    with pytest.raises(ValueError) as err:
        fastdata.loader(url, cache_dir=tmp_path / "g", cache_limit=need - 1, **kw)
    assert str(err.value) == (f"cache_limit={need - 1} bytes is too small: this loader holds the whole split ({need} "
                              f"bytes of shards) on the node; set cache_limit to at least {need} bytes")
    from fastdata.text.loader import sequence_loader

    direct = [b["input_ids"] for b in sequence_loader(url, cache_dir=tmp_path / "e", **kw)]  # its own remote options
    assert all(torch.equal(a, b) for a, b in zip(local_batches, direct)) and len(direct) == len(local_batches)
    assert {p.name for p in (tmp_path / "e").rglob("*.arrow")} == {p.name for p in fortunes_tokens.glob("*.arrow")}
    pytest.importorskip("pydicom")
    from conftest_dicom import convert_dicom, write_phantom  # noqa: I001

    write_phantom(tmp_path / "dcm" / "p1")
    vols = tmp_path / "vols"
    convert_dicom(tmp_path / "dcm", vols)
    vurl = upload_folder(vols, f"{s3}/vols/")
    vkw = dict(batch_size=1, patch_size=(4, 8, 8), seed=1, device="cpu")
    a = [p for p, _ in fastdata.loader(vols, **vkw)]
    b = [p for p, _ in fastdata.loader(vurl, cache_dir=tmp_path / "c", **vkw)]
    assert len(a) == len(b) > 0 and all(torch.equal(x, y) for x, y in zip(a, b))


def _count_downloads(url: str, cache: str, env: dict, queue) -> None:
    os.environ.update(env)
    ld = fastdata.loader(url, batch_size=4, image_size=32, device="cpu", backend="kornia", cache_dir=cache,
                         num_threads=1, train=False)
    list(ld)
    queue.put(ld.backend._view.remote.cache.downloads)


def test_two_processes_share_one_cache_and_download_each_shard_once(s3: str, local: Path, tmp_path: Path):
    url = upload_folder(local, f"{s3}/shared/")
    env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_count_downloads, args=(url, str(tmp_path / "c"), env, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert all(p.exitcode == 0 for p in procs)
    counts = [queue.get(timeout=5), queue.get(timeout=5)]
    shards = json.loads((local / "manifest.json").read_text())["splits"]["train"]["shards"]
    assert sum(counts) == 2 * len(shards)  # each shard and each index downloaded once on the node


def test_stale_temporary_and_lock_files_are_cleaned_at_start(tmp_path: Path):
    from fastdata.storage.cache import ShardCache

    cache = ShardCache(tmp_path, fingerprint="ab" * 32, limit=None)
    dead = 2**22 + 12345  # no such process
    (cache.dir / f"train-000000.tar.{dead}.tmp").write_bytes(b"x" * 10)
    (cache.dir / "locks" / "train-000000.tar").touch()
    (cache.dir / "users" / str(dead)).touch()
    cache.close()
    fresh = ShardCache(tmp_path, fingerprint="ab" * 32, limit=None)
    assert not list(fresh.dir.glob("*.tmp")) and not (fresh.dir / "locks" / "train-000000.tar").exists()
    assert not (fresh.dir / "users" / str(dead)).exists()


# ---------------------------------------------------------------------------------------------- faults
@pytest.fixture
def served(local: Path, tmp_path: Path):
    shutil.copytree(local, tmp_path / "www" / "ds")
    with FileServer(tmp_path / "www") as server:
        yield server


def _http_labels(server: FileServer, tmp_path: Path, **kw) -> list[list[int]]:
    options = {"read_timeout": 0.5, "attempts": 4, **kw.pop("storage_options", {})}
    return labels_of(server.url + "ds/", backend="kornia", train=False, split="val", cache_dir=tmp_path / "cache",
                     storage_options=options, **kw)


@pytest.mark.parametrize("fault", [Fault("val-000000.tar", status=503, retry_after=0.5, times=2),
                                   Fault("val-000000.tar", status=429, retry_after=0.2, times=1),
                                   Fault("val-000001.tar", cut=1000, times=2),
                                   Fault("val-000000.tar", stall=2.0, times=1),
                                   Fault("val-000000.tar", corrupt=True, times=1),
                                   Fault("manifest.json", status=502, times=2)],
                         ids=["503", "429", "cut", "stall", "corrupt-once", "manifest-502"])
def test_transient_faults_give_the_same_epoch(served: FileServer, local: Path, tmp_path: Path, fault: Fault):
    want = labels_of(local, backend="kornia", train=False, split="val")
    fault = replace(fault)  # a fresh count: the parametrized object outlives one run (pytest.main run twice)
    served.faults.append(fault)
    assert _http_labels(served, tmp_path) == want
    assert fault.times == 0  # the fault happened


@pytest.mark.parametrize("fault,message", [(Fault("val-000001.tar", corrupt=True, times=9), "sha256"),
                                           (Fault("val-000001.tar", status=403, times=9), "denied"),
                                           (Fault("val-000001.tar", status=503, times=99), "gave up"),
                                           (Fault("val-000001.idx", corrupt=True, times=9), "sha256")],
                         ids=["corrupt", "403", "503-forever", "corrupt-index"])
def test_lasting_faults_raise_from_the_loop_naming_the_url(served: FileServer, tmp_path: Path, fault: Fault,
                                                           message: str):
    fault, times = replace(fault), fault.times
    served.faults.append(fault)
    name = re.escape(fault.path)
    with pytest.raises(StorageError, match=rf"{name}.*{message}|{message}.*{name}"):
        _http_labels(served, tmp_path)
    assert fault.times < times  # the error came from the fault


def test_storage_options_reach_the_store_of_the_manifest(served: FileServer, tmp_path: Path):
    """One 503, which any other number of attempts retries, is fatal with attempts=1."""
    served.faults.append(Fault("manifest.json", status=503, times=1))
    with pytest.raises(StorageError, match=r"^gave up on http://127.0.0.1:\d+/ds/manifest.json \(GET\) after 1 "):
        _http_labels(served, tmp_path, storage_options={"attempts": 1})


@pytest.mark.parametrize("options, message", [
    ({"storage_options": 5}, r"^storage_options=5 is not allowed; storage_options must be a dict of the storage "
                             r"client's options by name"),
    ({"storage_options": "region=us-east-1"}, r"^storage_options='region=us-east-1' is not allowed"),
    ({"storage_options": {1: 2}}, r"^storage_options=\{1: 2\} is not allowed"),
    ({"storage_options": {"connect_timeout": -1}}, r"^storage_options\['connect_timeout'\]=-1 is not allowed; it must "
                                                   r"be a number of seconds > 0 and at most 604800 \(a week\)$"),
    ({"storage_options": {"read_timeout": float("nan")}}, r"^storage_options\['read_timeout'\]=nan is not allowed"),
    ({"storage_options": {"read_timeout": 0}}, r"^storage_options\['read_timeout'\]=0 is not allowed"),
    ({"storage_options": {"deadline": "x"}}, r"^storage_options\['deadline'\]='x' is not allowed"),
    ({"storage_options": {"deadline": 604801}}, r"^storage_options\['deadline'\]=604801 is not allowed"),
    ({"storage_options": {"attempts": 0}}, r"^storage_options\['attempts'\]=0 is not allowed; it must be an integer "
                                           r"from 1 to 1000"),
    ({"storage_options": {"attempts": 2.5}}, r"^storage_options\['attempts'\]=2.5 is not allowed"),
    ({"storage_options": {"attempts": 1001}}, r"^storage_options\['attempts'\]=1001 is not allowed"),
    ({"cache_dir": 7}, r"^cache_dir=7 is not allowed; cache_dir must be a folder's path \(made if missing\)$"),
    ({"cache_dir": b"c"}, r"^cache_dir=b'c' is not allowed"),
    ({"cache_limit": "lots"}, r"^cache_limit='lots' is not allowed: cannot read size 'lots'"),
    ({"cache_limit": "0MB"}, r"^cache_limit='0MB' is not allowed; give at least 1 byte$"),
    ({"cache_limit": "0"}, r"^cache_limit='0' is not allowed; give at least 1 byte$"),
    ({"cache_limit": 0}, r"^cache_limit=0 is not allowed; give bytes \(int\) or a size such as '200GB'$"),
    ({"cache_limit": True}, r"^cache_limit=True is not allowed; give bytes \(int\) or a size such as '200GB'$"),
    ({"cache_limit": 2.0}, r"^cache_limit=2.0 is not allowed; give bytes \(int\) or a size such as '200GB'$"),
])
def test_remote_options_are_refused_by_name_before_any_request(served: FileServer, tmp_path: Path, options: dict,
                                                              message: str):
    """Found by a sweep of hostile values: a number for storage_options raised "'int' object is not iterable",
    a negative connect_timeout urllib3's "Attempted to set connect timeout to -1.0", a number for cache_dir
    "expected str, bytes or os.PathLike object", and a cache_limit string parse_size's message without the option."""
    kw = {"cache_dir": tmp_path / "c", **options}
    with pytest.raises(ValueError, match=message):
        fastdata.loader(served.url + "ds/", batch_size=2, backend="kornia", device="cpu", **kw)
    assert served.requests == []  # nothing was asked of the server


def test_the_smallest_cache_limits_are_taken() -> None:
    from fastdata.dataset import RemoteOptions

    assert RemoteOptions(cache_limit=1).limit_bytes() == 1 and RemoteOptions(cache_limit="1").limit_bytes() == 1
    assert RemoteOptions(cache_limit="2KB").limit_bytes() == 2000 and RemoteOptions().limit_bytes() is None


@pytest.mark.parametrize("where", ["file", "proc"])
def test_a_cache_dir_that_cannot_hold_the_cache_is_refused_naming_it(served: FileServer, tmp_path: Path, where: str):
    """A file, or a folder no cache can be made in, raised NotADirectoryError or FileNotFoundError from a mkdir."""
    cache_dir = tmp_path / "a-file" if where == "file" else Path("/proc/self")
    if where == "file":
        cache_dir.write_text("not a folder")
    with pytest.raises(ValueError, match=rf"^cache_dir={re.escape(repr(str(cache_dir)))} cannot hold the node's shard "
                                         r"cache: .*; pass cache_dir= a folder this process can write$"):
        fastdata.loader(served.url + "ds/", batch_size=2, backend="kornia", device="cpu", cache_dir=cache_dir)
    assert labels_of(served.url + "ds/", backend="kornia", train=False, split="val", cache_dir=tmp_path / "ok",
                     storage_options={"read_timeout": 604800, "attempts": 1000, "deadline": 0.5,
                                      "connect_timeout": 1.5})  # the largest read timeout and attempts allowed


def test_a_dataset_behind_redirects_gives_the_same_epoch(served: FileServer, local: Path, tmp_path: Path):
    """Every file of the dataset answered with a 307 to where its bytes are (a hub's `resolve` URL, a CDN)."""
    def rewrite(method: str, path: str, requested: str | None, answer: Answer) -> Answer:
        return answer if "?cdn" in path else Answer(307, [("Location", path + "?cdn"), ("Content-Length", "0")])

    served.rewrite = rewrite
    assert _http_labels(served, tmp_path) == labels_of(local, backend="kornia", train=False, split="val")
    assert served.gets("val-000000.tar?cdn") == 1 and served.gets("manifest.json?cdn") == 1


def test_a_missing_dataset_and_a_missing_manifest_are_clear(served: FileServer, tmp_path: Path):
    with pytest.raises(Exception, match="no manifest.json at"):
        fastdata.loader(served.url + "nothing-here/", batch_size=2, cache_dir=tmp_path / "c")
    with pytest.raises(ManifestError) as glob:
        fastdata.loader(served.url + "ds/val-*.tar", batch_size=2, cache_dir=tmp_path / "c")
    assert str(glob.value) == (f"'{served.url}ds/val-*.tar': globs cannot be expanded on remote storage (fastdata "
                               "never lists it); pass the dataset folder, shard URLs or a brace pattern such as "
                               "'s3://bucket/ds/train-{000000..000009}.tar' (a name that holds *, ? or [ is written "
                               "percent-encoded: %2A, %3F, %5B)")


def test_shard_urls_and_brace_patterns_read_those_shards(served: FileServer, local: Path, tmp_path: Path):
    """A list of shard URLs, or a brace pattern of them, reads those shards as one dataset, as the same local paths
    do. A list of URLs was taken for a mixture of one-shard datasets, each opened on its own."""
    names = sorted(p.name for p in local.glob("val-*.tar"))
    assert len(names) >= 2
    want = labels_of([str(local / n) for n in names], backend="kornia", train=False)
    kw = {"backend": "kornia", "train": False, "cache_dir": tmp_path / "c"}
    assert labels_of([served.url + "ds/" + n for n in names], **kw) == want
    assert served.gets("manifest.json") == 1  # one dataset, not a mixture of one-shard datasets
    assert labels_of(served.url + f"ds/val-{{000000..{len(names) - 1:06d}}}.tar", **kw) == want
    one = labels_of(str(local / names[1]), backend="kornia", train=False)
    assert labels_of(served.url + "ds/" + names[1], **kw) == one
    assert labels_of(served.url + "ds/" + names[1] + "/", **kw) == one  # a shard's URL with a trailing slash
    whole = labels_of(str(local), backend="kornia", train=False, split="val")
    assert labels_of(served.url + "ds/manifest.json", split="val", **kw) == whole  # the dataset named by its manifest
    from fastdata.dataset import RemoteOptions, open_dataset  # the split taken by default (loader.py's warning)

    def by_default(source, **kw) -> bool:
        return open_dataset(source, remote=RemoteOptions(cache_dir=tmp_path / "c"), **kw).split_by_default

    assert by_default(served.url + "ds/") and not by_default(served.url + "ds/", split="train")
    assert not by_default(served.url + "ds/" + names[0])
    assert not by_default(served.url + f"ds/val-{{000000..{len(names) - 1:06d}}}.tar")
    with pytest.raises(ManifestError, match="the shard URLs given lie in 2 folders; a dataset's shards lie in one$"):
        fastdata.loader([served.url + "ds/" + names[0], served.url + "other/" + names[1]], batch_size=2, **kw)
    with pytest.raises(ManifestError, match=r"\['val-000099.tar'\] are not listed in http://127.0.0.1:\d+/ds/manifest"):
        fastdata.loader(served.url + "ds/val-000099.tar", batch_size=2, **kw)
    both = [served.url + "ds/train-000000.tar", served.url + "ds/" + names[0]]
    with pytest.raises(ManifestError, match=r"the shards given span splits \['train', 'val'\]; pass split="):
        fastdata.loader(both, batch_size=2, **kw)
    assert labels_of(both, split="val", **kw) == labels_of(str(local / names[0]), backend="kornia", train=False)


def test_damaged_state_on_the_store_is_a_clear_error_or_converted_again(s3: str, src: Path, local: Path,
                                                                        tmp_path: Path, caplog):
    """The store's plan, records and manifest were read with json.loads: a damaged one escaped as a raw
    JSONDecodeError, a plan that is not an object as an AttributeError."""
    store = RemoteStore(f"{s3}/damaged/")
    store.upload(".partial/plan.json", b"[1, 2]")
    with pytest.raises(ConvertError, match=r"damaged/\.partial/plan\.json is damaged \(a JSON list, not an object\): "
                                           r"delete s3://.*/damaged/\.partial/ to start the conversion over"):
        _convert(src, f"{s3}/damaged/", staging=tmp_path / "s0")
    store.upload("manifest.json", b"{\"format\": ")
    with pytest.raises(ConvertError, match=r"damaged/manifest\.json is damaged \(invalid JSON: .*\): delete "
                                           r"s3://.*/damaged/manifest\.json to convert into"):
        _convert(src, f"{s3}/damaged/", staging=tmp_path / "s1")

    url = f"{s3}/records/"
    first = _convert(src, url, staging=tmp_path / "s2", num_parts=2, part=0)
    victims = sorted(first.converted)[:2]
    RemoteStore(url).upload(f".partial/records/{victims[0]}.json", b"\x00not json")
    RemoteStore(url).upload(f".partial/records/{victims[1]}.json", b'{"shard": {"bytes": 3}}')
    again = _convert(src, url, staging=tmp_path / "s3", num_parts=2, part=0)  # another machine: the store's records
    assert sorted(again.converted) == victims and "is damaged" in caplog.text
    assert "is not a record of this fastdata version" in caplog.text
    _convert(src, url, staging=tmp_path / "s4", num_parts=2, part=1)
    merge(url)
    assert remote_files(url, list(files_of(local))) == files_of(local)


def test_adopted_shards_indexed_into_another_folder_are_read_from_their_own(local: Path, tmp_path: Path):
    """`fastdata index SRC DST` leaves the tars in SRC and records `shard_root` in DST's manifest: read over HTTP,
    the shards come from SRC's URL and the indexes from DST's."""
    from converters.adopt import AdoptOptions, adopt

    www = tmp_path / "www"
    (www / "shards").mkdir(parents=True)
    for tar in sorted(local.glob("val-*.tar")):
        shutil.copy(tar, www / "shards" / tar.name)
    result = adopt(www / "shards", www / "index", options=AdoptOptions(split="val", jobs=1))
    assert result.manifest.shard_root == "../shards" and not list((www / "index").glob("*.tar"))
    want = labels_of(www / "index", backend="kornia", train=False, split="val")
    with FileServer(www) as server:
        got = labels_of(server.url + "index/", backend="kornia", train=False, split="val", cache_dir=tmp_path / "c")
        tars = [path for _, path, _ in server.requests if path.endswith(".tar")]
    assert got == want and tars and all(path.startswith("/shards/") for path in tars)
    with FileServer(www) as server:  # the user's storage_options reach the shard folder's store too
        server.faults.append(Fault("shards/val-000000.tar", status=503, times=1))
        with pytest.raises(StorageError, match=r"gave up on http://127.0.0.1:\d+/shards/val-000000.tar \(GET\)"):
            labels_of(server.url + "index/", backend="kornia", train=False, split="val", cache_dir=tmp_path / "c2",
                      storage_options={"attempts": 1})


def test_shard_urls_outside_the_manifest_or_the_split_are_named(served: FileServer, tmp_path: Path):
    kw = {"batch_size": 2, "cache_dir": tmp_path / "c"}
    missing = [served.url + f"ds/val-00009{k}.tar" for k in range(5)]
    with pytest.raises(ManifestError) as err:
        fastdata.loader(missing, **kw)
    assert str(err.value) == (f"['val-000090.tar', 'val-000091.tar', 'val-000092.tar'] are not listed in "
                              f"{served.url}ds/manifest.json")  # the first three of five
    with pytest.raises(ManifestError) as other:
        fastdata.loader(served.url + "ds/val-000000.tar", split="train", **kw)
    assert str(other.value) == f"split 'train' of {served.url}ds/ holds no shard"


def test_without_cache_limit_the_cache_may_take_a_share_of_the_free_disk_plus_what_it_holds(
        served: FileServer, tmp_path: Path, monkeypatch, caplog):
    """... and the log says what was opened, and that limit."""
    import fastdata.storage.open as opening
    from fastdata.dataset import RemoteOptions

    _http_labels(served, tmp_path)  # the cache now holds the split's shards
    monkeypatch.setattr(opening, "shutil", SimpleNamespace(disk_usage=lambda path: SimpleNamespace(free=10**9)))
    caplog.set_level("INFO", logger="fastdata.storage.open")
    view = opening.open_remote(served.url + "ds/", split="val", options=RemoteOptions(cache_dir=tmp_path / "cache"))
    try:
        assert (view.root, view.split) == (served.url + "ds/", "val")
        cache = view.remote.cache
        held = cache.used()
        assert held > 0 and cache.limit == int(0.8 * 10**9) + held
        assert [r.getMessage() for r in caplog.records if r.name == "fastdata.storage.open"] == [
            f"{served.url}ds/: {len(view.shards)} shard(s) of split val, cached in {cache.dir} (limit {cache.limit} "
            "bytes)"]
    finally:
        view.close()


def test_a_remote_manifest_that_is_no_manifest_is_named_by_its_url(tmp_path: Path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text("{not json")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "manifest.json").write_text('{"format": "something else"}')
    with FileServer(tmp_path) as server:
        with pytest.raises(ManifestError, match=rf"^{re.escape(server.url)}bad/manifest.json is not JSON: "):
            fastdata.loader(server.url + "bad/", batch_size=2, cache_dir=tmp_path / "c")
        with pytest.raises(ManifestError, match=rf"^{re.escape(server.url)}other/manifest.json is not a fastdata "
                                                r"manifest \(missing \"format\": \"fastdata\"\)$"):
            fastdata.loader(server.url + "other/", batch_size=2, cache_dir=tmp_path / "c")
