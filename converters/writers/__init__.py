"""Shard writers by format name: a plain registry."""

from __future__ import annotations

from converters.writers.arrow import ArrowShardWriter
from converters.writers.wds import WdsShardWriter

WRITERS = {"wds": WdsShardWriter, "arrow": ArrowShardWriter}

__all__ = ["WRITERS", "ArrowShardWriter", "WdsShardWriter"]
