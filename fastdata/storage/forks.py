"""Remote storage and fork: obstore's runtime does not survive it. A child forked after its parent made a request
hangs on its first one, even with a new client, so such a child gets a clear `StorageError` from `guard` instead
(the loaders fetch in their own thread of the main process and need no forked workers)."""

from __future__ import annotations

import os

from fastdata.errors import StorageError

_state = {"used_in": None, "forked_after_use": False}  # the process that first used a client


def _after_fork_in_child() -> None:
    if _state["used_in"] is not None:
        _state["forked_after_use"] = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def guard(url: str) -> None:
    """Called before a client is used for `url`: refuses in a process forked after its parent used one, and records
    this process as a user otherwise."""
    if _state["forked_after_use"]:
        raise StorageError(
            f"cannot reach {url} from process {os.getpid()}: it was forked from process {_state['used_in']} after "
            "that one had used remote storage, and obstore's runtime does not survive fork (the request would "
            "hang). Read remote datasets with fastdata.loader in the main process (it downloads in its own "
            "thread and needs no DataLoader workers), or start worker processes with "
            "multiprocessing.set_start_method('spawn') / 'forkserver'.")
    _state["used_in"] = _state["used_in"] or os.getpid()
