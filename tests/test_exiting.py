"""fastdata/exiting.py: the exit hooks run in their order, after EXITING is set, and one that fails does not keep
the others from running. The process's own hooks and event are swapped for fresh ones, so nothing here exits."""

from __future__ import annotations

import logging
import threading

import pytest

from fastdata import exiting
from fastdata.errors import StorageError


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(exiting, "_hooks", [])
    monkeypatch.setattr(exiting, "EXITING", threading.Event())
    return exiting


def test_hooks_run_lower_order_first_after_exiting_is_set(fresh, caplog):
    ran = []

    def hook(name):
        def run():
            ran.append((name, fresh.EXITING.is_set()))
            if name == "failing":
                raise RuntimeError("boom")
        return run

    failing = hook("failing")
    fresh.on_exit(hook("producers"), fresh.STOP_PRODUCERS)
    fresh.on_exit(failing, fresh.ABANDON_DOWNLOADS)
    fresh.on_exit(hook("downloads"), fresh.ABANDON_DOWNLOADS)
    assert not fresh.EXITING.is_set()
    with caplog.at_level(logging.ERROR, logger="fastdata.exiting"):
        fresh._run_hooks()
    assert ran == [("failing", True), ("downloads", True), ("producers", True)]
    [record] = caplog.records
    assert record.getMessage() == f"exit hook {failing!r} failed" and record.levelno == logging.ERROR
    assert isinstance(record.exc_info[1], RuntimeError) and str(record.exc_info[1]) == "boom"


def test_work_is_abandoned_only_once_the_process_exits(fresh):
    fresh.stop_if_exiting("a download of s3://b/k")
    fresh.EXITING.set()
    with pytest.raises(StorageError, match=r"^a download of s3://b/k abandoned: the process is exiting$"):
        fresh.stop_if_exiting("a download of s3://b/k")
