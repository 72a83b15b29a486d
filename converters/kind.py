"""What a kind of source (images, text, DICOM) provides to the shared conversion engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from converters.sample import Rejection, Sample, WorkItem


@dataclass(frozen=True)
class Discovery:
    """The result of scanning a source: inputs per split (in a deterministic order), class names,
    inputs rejected before conversion, and what identifies this source for resume checks. `keep`
    holds what the work items refer to (the text kind's spill file) for as long as the discovery lives."""

    splits: dict[str, list[WorkItem]]
    classes: tuple[str, ...]
    rejected: list[Rejection]
    layout: str
    identity: list[Any] = field(default_factory=list)
    keep: Any = None


@dataclass(frozen=True)
class ArrowLayout:
    """How samples become Arrow rows: the schema (with Hugging Face feature metadata)."""

    schema: Any  # pyarrow.Schema


class Kind(Protocol):
    """A converter for one kind of source. Registered by name in `converters.KINDS`.

    Optional attributes, read with defaults where they are used:
    - `unit` (str, default "sample"): the unit of the CLI progress bar (`fastdata/cli/convert.py`);
    - `probe_items` (int, default 32): inputs per split converted to size shards under `--shard-size`
      (`converters/engine.py`); a kind with large samples probes fewer;
    - `task_memory` (int bytes, default none): what one shard task requests from Ray under `--executor ray`.
    The processor may also have `process_batch(items) -> list[result]` and `chunk_size` (int) to
    convert a worker chunk at once (`converters/pool.py`).
    """

    name: str
    formats: tuple[str, ...]  # shard formats it can write, the first is the default
    member_order: tuple[str, ...]  # order of tar members within a sample

    def detect(self, src: Path, /) -> bool:
        """Cheap check whether `src` looks like this kind's input (for `--kind auto`)."""
        ...

    def add_arguments(self, parser: Any) -> None:
        """Add this kind's `fastdata convert` options to an argparse parser (group)."""
        ...

    def options_from_args(self, args: Any) -> Any:
        """Build this kind's frozen options dataclass from parsed arguments."""
        ...

    def discover(self, src: Path, /, *, options: Any, follow_symlinks: bool = True) -> Discovery:
        """Every input per split, in a canonical order, and the rejections; only regular files are opened,
        symbolic links are followed only with `follow_symlinks` (converters/walk.py walks for every kind)."""
        ...

    def processor(self, options: Any) -> Callable[[WorkItem], Sample | Rejection]:
        """A picklable callable converting one work item (run in worker processes)."""
        ...

    def arrow_layout(self, discovery: Discovery, options: Any) -> ArrowLayout: ...

    def describe(self, discovery: Discovery, options: Any) -> dict[str, Any]:
        """Preprocessing parameters and kind-specific manifest extras: {"preprocessing":…, "extra":…}."""
        ...
