"""Servers for the remote-storage tests, on 127.0.0.1 only, on ports the OS picks, stopped by the fixtures:
moto's ThreadedMotoServer as the S3 endpoint, and tests/http_server.py (Range support, scripted faults)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    pytest.importorskip("moto")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on the local S3 server; the standard AWS variables point at it. Returns 's3://bucket'."""
    env = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    import boto3

    bucket = f"fd-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=bucket)
    assert os.environ["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
    return f"s3://{bucket}"


def upload_folder(folder: Path, url: str) -> str:
    """Every file of a dataset folder to `url`, the manifest last (as a conversion commits); returns the URL."""
    from fastdata.storage.client import RemoteStore

    store = RemoteStore(url)
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.name != "manifest.json":
            store.upload(p.name, p)
    store.upload("manifest.json", (folder / "manifest.json").read_bytes())
    return store.url
