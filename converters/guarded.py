"""The per-item processor of the volume kinds (dicom, nifti): one volume per worker task, and an exception nobody
expected recorded as that item's rejection, naming the exception's type only. Its message may quote a value of
the file (a UID, a patient's name) or its path, and reasons go into DST; the pool's own catch-all quotes it."""

from __future__ import annotations

import abc
from typing import Any

from converters.sample import Rejection, Sample, WorkItem


class Guarded(abc.ABC):
    """Picklable: the engine sends it to worker processes. One item per task (`chunk_size`), because a volume can
    be hundreds of megabytes and the pool keeps a few tasks in flight per worker."""

    chunk_size = 1

    def __init__(self, opts: Any) -> None:
        self.opts = opts

    @abc.abstractmethod
    def convert(self, item: WorkItem, /) -> Sample | Rejection:
        """The item converted, or rejected with a reason."""

    @abc.abstractmethod
    def failure(self, exc: BaseException, /) -> str:
        """What a reason may say of `exc`: its type, and what of it is known to quote nothing of the file."""

    def also(self, item: WorkItem, /) -> tuple[tuple[str, str], ...]:
        """(file, reason) of the item's other files, listed with its rejection (a case's masks); none by default."""
        return ()

    def __call__(self, item: WorkItem) -> Sample | Rejection:
        try:
            return self.convert(item)
        except Exception as exc:  # noqa: BLE001 - recorded here, not by the pool, whose reason quotes the message
            return Rejection(item.split, item.rel, f"unexpected error: {self.failure(exc)}", self.also(item))
