"""A part of a conversion in parts (`--num-parts K --part I`) spills only the inputs it converts.

Its first discovery (converters/engine.py) counts the inputs and writes none to the spill file (`spilling_only(())`,
converters/spill.py): the plan needs only their number. Once the part knows its shards it discovers the source
again, spilling only their inputs (and, before that, the probe's, when it makes the plan), so it needs about 1/K of
the source's size in TMPDIR. A source that changed in between is refused: every part's shards come from one source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from converters.kind import Discovery, Kind
from converters.sample import WorkItem
from converters.spill import Spill, spilled, spilling_only
from converters.survey import fingerprint, prepared, survey
from fastdata.errors import ConvertError

if TYPE_CHECKING:
    from converters.engine import ConvertConfig


def spills_nothing(discovery: Discovery) -> bool:
    """Whether `discovery` refers to a spill file that holds none of its inputs: a part's first discovery."""
    return isinstance(discovery.keep, Spill) and discovery.keep.only == frozenset()


@dataclass(frozen=True)
class PartReads:
    """What a part discovers its source again with (`given`: the options as the user gave them)."""

    kind: Kind
    src: Path
    fmt: str
    fp: str
    config: ConvertConfig
    given: Any
    options: Any

    def read_again(self, shuffled: dict[str, list[WorkItem]],
                   needed: list[WorkItem]) -> tuple[Discovery, dict[str, list[WorkItem]]]:
        """The source discovered again, spilling only the inputs of `needed` (a part's, or the probe's): a part of a
        conversion in parts needs TMPDIR for its own inputs, not for the whole source. ConvertError when the source
        changed in between."""
        with spilling_only(ref.ordinal for it in needed for ref in spilled(it.payload)):
            again = survey(self.kind, self.src, options=self.given, config=self.config)
        again, _, reshuffled = prepared(self.kind, again, self.options, self.config)
        if (fingerprint(self.kind, self.fmt, self.config, self.given, again) != self.fp
                or _rels(reshuffled) != _rels(shuffled)):
            raise ConvertError(f"source {self.src} changed while this part read it: run the part again once it is "
                               "settled")
        return again, reshuffled


def _rels(shuffled: dict[str, list[WorkItem]]) -> dict[str, list[str]]:
    return {s: [it.rel for it in items] for s, items in shuffled.items()}
