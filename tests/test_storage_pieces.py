"""Small pieces of the remote client on their own: the first byte of a `Content-Range`, a file URL's folder and
name, the retry backoff's bound and its pause, `Retry-After`, the client options an endpoint leads to, and a missing
file told by its status."""

from __future__ import annotations

import email.utils
import random
import threading
import time
from datetime import timedelta

import pytest

from converters.destination import RemoteDestination
from fastdata.errors import ManifestError, StorageError
from fastdata.storage.answers import range_start
from fastdata.storage.client import RemoteStore
from fastdata.storage.inflight import InFlight
from fastdata.storage.open import manifest_at
from fastdata.storage.retry import RetryPolicy, parse_retry_after
from fastdata.storage.url import split


class Answer:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


@pytest.mark.parametrize("value,first", [
    ("bytes 100-199/1000", 100), (" bytes 0-0/1 ", 0), ("bytes 5-9/*", 5), ("bytes */1000", None),
    ("items 100-199/1000", None), ("bytes 100", None), ("bytes -5-9/10", None), ("", None), ("bytes", None)])
def test_the_first_byte_of_a_content_range(value: str, first: int | None) -> None:
    assert range_start(Answer({"Content-Range": value})) == first
    assert range_start(Answer({})) is None


@pytest.mark.parametrize("url,folder,name", [
    ("s3://bucket/data/train-000000.tar", "s3://bucket/data/", "train-000000.tar"),
    ("s3://bucket/data/shards/", "s3://bucket/data/", "shards"),
    ("https://host/a/b.tar", "https://host/a/", "b.tar")])
def test_a_file_url_splits_into_its_folder_and_name(url: str, folder: str, name: str) -> None:
    assert split(url) == (folder, name)


class Top(random.Random):
    """Draws the upper end of every interval: the backoff's bound itself."""

    def uniform(self, a: float, b: float) -> float:
        return b


def test_the_backoff_doubles_up_to_its_cap() -> None:
    policy = RetryPolicy(base_delay=0.25, max_delay=5.0)
    assert [policy.backoff(k, rng=Top()) for k in range(7)] == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.backoff(10**6, rng=Top()) == 5.0  # no overflow however many attempts


@pytest.mark.parametrize("env,options,allow_http", [
    ({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}, {}, True),
    ({"AWS_ENDPOINT": "http://127.0.0.1:9000"}, {}, True),  # the older name obstore also reads
    ({"AWS_ENDPOINT_URL": "https://s3.example.org", "AWS_ENDPOINT": "http://127.0.0.1:9000"}, {}, False),
    ({"AWS_ENDPOINT_URL": "https://s3.example.org"}, {"endpoint": "http://127.0.0.1:9000"}, True),
    ({}, {}, False)])
def test_plain_http_is_allowed_only_for_an_http_endpoint(monkeypatch: pytest.MonkeyPatch, env: dict, options: dict,
                                                        allow_http: bool) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    remote = RemoteStore("s3://bucket/data/", {"connect_timeout": 3.0, "read_timeout": 20.0, **options})
    client = remote._client_options()
    assert client == {"connect_timeout": timedelta(seconds=3.0), "timeout": timedelta(seconds=300.0),
                      **({"allow_http": True} if allow_http else {})}


def test_retry_after_never_asks_for_a_negative_wait() -> None:
    assert parse_retry_after("0") == 0.0 and parse_retry_after("-2") == 0.0 and parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412500.0) == 0.0  # a date already past
    ahead = parse_retry_after(email.utils.formatdate(time.time() + 100, usegmt=True))  # against the clock
    assert ahead is not None and 97.0 <= ahead <= 100.0


def test_a_retry_pause_ends_soon_after_the_dataset_is_closed_and_on_time_otherwise() -> None:
    flight = InFlight()
    started = time.monotonic()
    flight.pause(0.2)
    assert 0.2 <= time.monotonic() - started < 1.0
    ended: list[float] = []
    sleeper = threading.Thread(target=lambda: (flight.pause(30.0), ended.append(time.monotonic())))
    sleeper.start()
    time.sleep(0.3)
    closed = time.monotonic()
    flight.abandon()
    sleeper.join(timeout=5)
    assert ended and ended[0] - closed < 0.6  # the pause looks every 0.1 s


def answering(store: RemoteStore, status: int, message: str) -> RemoteStore:
    """`store` with every request answered by `status`, in an error that reads `message`."""

    def send(method: str, name: str, headers: dict, *, resigned: list) -> None:
        raise StorageError(message.format(url=store.url + name), status=status)

    store._send = send  # type: ignore[method-assign]
    return store


@pytest.mark.parametrize("status,message", [
    (404, "{url}: gone"), (403, "{url} was denied, though a proxy wrote 'does not exist (HTTP 404)'")])
def test_a_missing_file_is_told_by_its_status_not_by_the_words_of_the_error(tmp_path, status: int, message: str):
    """size() says None, the manifest is missing, a conversion's state file is absent: for a 404 only."""
    url = "http://127.0.0.1:9/ds/"
    store = answering(RemoteStore(url), status, message)
    dest = RemoteDestination(url, staging=tmp_path)
    answering(dest.store, status, message)
    if status == 404:
        assert store.size("train-000000.tar") is None
        assert dest._get_json("manifest.json", fix="delete it") is None
        with pytest.raises(ManifestError, match=r"^no manifest.json at http://127.0.0.1:9/ds/: pass the URL of the "):
            manifest_at(store)
        return
    for call in (lambda: store.size("train-000000.tar"), lambda: dest._get_json("manifest.json", fix="delete it"),
                 lambda: manifest_at(store)):
        with pytest.raises(StorageError) as err:
            call()
        assert err.value.status == 403 and "was denied" in str(err.value)


@pytest.mark.parametrize("status", [401, 403])
def test_an_object_store_that_denies_access_names_the_credentials_to_check(status: int):
    from fastdata.storage.answers import failure

    err = failure("s3://bucket/ds/manifest.json", status)
    assert str(err) == (f"access to s3://bucket/ds/manifest.json was denied (HTTP {status}): check the credentials "
                        "(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, or storage_options), that "
                        "they may read this bucket and path, and the endpoint")
    assert err.status == status
