"""Writing a dataset folder on an object store (`RemoteStore.upload` and `delete`): through obstore, which holds the
credentials, multipart for large files (checksummed by S3), each object whole or not at all. HTTP(S) datasets are
read-only."""

from __future__ import annotations

from pathlib import Path

from fastdata.errors import StorageError
from fastdata.storage.answers import first_line

MULTIPART_ABOVE = 64 * 2**20  # bytes: larger uploads go in parts


class StoreWrites:
    """The writes of `RemoteStore` (client.py), which provides `url`, `http_only`, `_clients`, `_path` and `size`."""

    url: str
    http_only: bool

    def upload(self, name: str, source: Path | bytes) -> None:
        """Put a local file (multipart when large) or bytes at `name`; the object appears whole or not at all."""
        if self.http_only:
            raise StorageError(f"{self.url} is read-only (HTTP): write datasets to s3://, gs:// or az://, or to a "
                               "local folder")
        store, _ = self._clients()
        import obstore

        size = source.stat().st_size if isinstance(source, Path) else len(source)
        try:
            obstore.put(store, self._path(name), source, use_multipart=size > MULTIPART_ABOVE,
                        chunk_size=16 * 2**20, max_concurrency=4)
        except Exception as exc:  # noqa: BLE001 - obstore's errors become one clear message
            raise StorageError(f"cannot upload {name} to {self.url}: {type(exc).__name__}: {first_line(exc)}; check "
                               "the credentials and that they may write there") from exc
        found = self.size(name)
        if found != size:
            raise StorageError(f"after uploading {name} to {self.url} the object has {found} bytes, not {size}")

    def delete(self, name: str) -> None:
        if self.http_only:
            raise StorageError(f"{self.url} is read-only (HTTP)")
        store, _ = self._clients()
        import obstore

        try:
            obstore.delete(store, self._path(name))
        except FileNotFoundError:
            pass
