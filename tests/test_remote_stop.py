"""A loader left early never waits for a remote download: a `break` (or Ctrl-C) while a decode thread waits for
a shard whose server stalls returns at once, `close()` cuts the download short, and a process that ends while
one runs ends at once; what was abandoned is taken over by the next epoch, or removed (its partial file)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers import convert_images, make_image_tree, wait_until
from http_server import Fault, FileServer

import fastdata

pytest.importorskip("obstore")

STALLED = "val-000003.tar"  # read fourth (eval reads in order); prefetched once the first shard is done


@pytest.fixture(scope="module")
def served_folder(tmp_path_factory) -> Path:
    src = make_image_tree(tmp_path_factory.mktemp("stop") / "src", classes=2, per_class=10, splits=("val",))
    www = tmp_path_factory.mktemp("www")
    convert_images(src, www / "ds", samples_per_shard=4)
    return www


def _loader(source: str | Path, cache: Path | None = None):
    remote = {} if cache is None else {"cache_dir": cache, "storage_options": {"read_timeout": 120}}
    return fastdata.loader(source, split="val", train=False, backend="kornia", batch_size=2, image_size=32,
                           device="cpu", num_threads=1, **remote)


def _downloading(cache: Path) -> bool:
    return bool(list(cache.glob(f"*/{STALLED}.*.tmp")))


def _decode_thread_waits_for(name: str) -> bool:
    """Whether a decode thread of the loader is waiting for `name` (RemoteFiles.local) right now."""
    for thread in threading.enumerate():
        if thread.name.startswith("fastdata-kornia_"):
            frame = sys._current_frames().get(thread.ident)
            while frame is not None:
                # mutmut runs a copy of `local` named `xǁRemoteFilesǁlocal__mutmut_orig` (or `_N`)
                function = frame.f_code.co_name.split("ǁ")[-1].split("__mutmut_")[0]
                if function == "local" and frame.f_locals.get("name") == name:
                    return True
                frame = frame.f_back
    return False


def test_a_break_does_not_wait_for_a_stalled_download_and_the_next_epoch_takes_it_over(served_folder: Path,
                                                                                         tmp_path: Path):
    want = [y.tolist() for _, y in _loader(served_folder / "ds")]
    with FileServer(served_folder) as server:
        server.faults.append(Fault(STALLED, stall=6.0, times=1))
        ld = _loader(server.url + "ds/", tmp_path / "cache")
        for k, _ in enumerate(ld):
            if k == 2:
                wait_until(lambda: _decode_thread_waits_for(STALLED), "a decode thread waits for the stalled shard")
                left = time.monotonic()
                break
        assert time.monotonic() - left < 3.0, "the break waited for the stalled download"
        assert [y.tolist() for _, y in ld] == want  # the download went on; the next epoch took it over
        assert sum(path.endswith(STALLED) for _, path, _ in server.requests) == 1  # downloaded once
        ld.close()


def test_close_cuts_a_download_short(served_folder: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    before = set(threading.enumerate())
    with FileServer(served_folder) as server:
        server.faults.append(Fault(STALLED, stall=30.0, times=1))
        with _loader(server.url + "ds/", cache) as ld:
            it = iter(ld)
            for _ in range(3):
                next(it)
            wait_until(lambda: _downloading(cache), "the stalled shard's download started")
            del it
            closing = time.monotonic()
        assert time.monotonic() - closing < 5.0, "close() waited for the stalled download"
        # the download threads have ended when close() returns (cut short, then joined): none left behind
        assert [t.name for t in set(threading.enumerate()) - before if t.name.startswith("fastdata-fetch")] == []
    assert not list(cache.rglob("*.tmp"))  # the partial download was removed
    with pytest.raises(RuntimeError, match="was closed"):
        iter(ld)


def _script(url: str, cache: Path) -> str:
    return textwrap.dedent(f"""
        import pathlib, time
        import fastdata
        ld = fastdata.loader({url!r}, split="val", train=False, backend="kornia", batch_size=2, image_size=32,
                             device="cpu", num_threads=1, cache_dir={str(cache)!r},
                             storage_options={{"read_timeout": 120}})
        it = iter(ld)
        for _ in range(3):
            next(it)
        waited = time.monotonic()
        while not list(pathlib.Path({str(cache)!r}).glob("*/{STALLED}.*.tmp")):  # its download is under way
            assert time.monotonic() - waited < 20, "the stalled shard was never downloaded"
            time.sleep(0.05)
        print("EXITING", time.monotonic(), flush=True)
        """)


def test_a_process_ending_mid_download_ends_at_once(served_folder: Path, tmp_path: Path):
    stall = 30.0
    with FileServer(served_folder) as server:
        server.faults.append(Fault(STALLED, stall=stall, times=1))
        script = tmp_path / "main.py"
        script.write_text(_script(server.url + "ds/", tmp_path / "cache"))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        ended = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process of the machine
    assert done.returncode == 0, done.stderr[-3000:]
    exiting = float(done.stdout.split("EXITING", 1)[1].split()[0])
    assert ended - exiting < stall / 3, f"the exit waited for the stalled download: {ended - exiting:.1f} s"
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr[-3000:]
    assert not list((tmp_path / "cache").rglob("*.tmp"))  # the partial download was removed
