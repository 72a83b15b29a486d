"""Arrow IPC stream shards (the format `datasets.Dataset.from_file` reads), written atomically."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from converters.kind import ArrowLayout
from converters.sample import Sample
from fastdata.atomic import commit, sha256_file, tmp_path
from fastdata.manifest import ShardInfo

ROWS_PER_BATCH = 256  # bounded memory: rows are flushed as record batches of this size


class ArrowShardWriter:
    suffix = ".arrow"

    def __init__(self, path: Path, *, member_order: tuple[str, ...] = (), layout: ArrowLayout) -> None:
        self.path = path
        self._schema = layout.schema
        self._sink = pa.OSFile(str(tmp_path(path)), "wb")
        self._writer = pa.ipc.new_stream(self._sink, self._schema)
        self._rows: list[dict] = []
        self.samples = 0

    def _flush(self) -> None:
        if self._rows:
            self._writer.write_batch(pa.RecordBatch.from_pylist(self._rows, schema=self._schema))
            self._rows = []

    def add(self, sample: Sample) -> None:
        self._rows.append(sample.row)
        self.samples += 1
        if len(self._rows) >= ROWS_PER_BATCH:
            self._flush()

    def close(self) -> ShardInfo:
        self._flush()
        self._writer.close()
        self._sink.close()
        tmp = tmp_path(self.path)
        size, digest = tmp.stat().st_size, sha256_file(tmp)
        commit(tmp, self.path)
        return ShardInfo(name=self.path.name, samples=self.samples, bytes=size, sha256=digest)

    def abort(self) -> None:
        self._sink.close()
        tmp_path(self.path).unlink(missing_ok=True)
