"""S3Storage against moto's S3 server over HTTP (no in-process patching)."""

from __future__ import annotations

import hashlib
import os

import pytest

from datagen.sink.s3 import S3Storage, split_uri
from datagen.sink.storage import read_small
from datagen.sink.writer import (
    MAX_MARKER_BYTES,
    completed_shards,
    marker_key,
    read_markers,
    write_shard,
)
from tests.helpers import shard_stats
from tests.s3server import CREDENTIALS, FlakyProxy, moto_s3


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)


def test_split_uri() -> None:
    assert split_uri("s3://b/a/b/") == ("b", "a/b/") and split_uri("s3://b") == ("b", "")
    with pytest.raises(ValueError, match="no bucket"):
        split_uri("s3:///x")


def test_multipart_upload_survives_throttled_parts() -> None:
    data = os.urandom(12 * 1024 * 1024)  # > the 5 MiB threshold: 3 parts
    with moto_s3() as endpoint, FlakyProxy(endpoint, every=2) as proxy:
        storage = S3Storage("s3://datagen-test/x", endpoint_url=proxy.url, multipart_threshold_mb=5)
        storage.put("big/object.bin", data)
        assert proxy.failed >= 2  # half the part uploads were refused with 503 SlowDown
        direct = S3Storage("s3://datagen-test/x", endpoint_url=endpoint)
        assert (
            hashlib.sha256(direct.get("big/object.bin")).digest() == hashlib.sha256(data).digest()
        )


def test_keys_markers_and_delete() -> None:
    with moto_s3() as endpoint:
        storage = S3Storage("s3://datagen-test/runs/r1/", endpoint_url=endpoint)
        assert storage.uri == "s3://datagen-test/runs/r1" and not storage.exists("_run.json")
        write_shard(storage, 7, {}, shard_stats(7))
        assert completed_shards(storage) == {7}
        assert "steps/part-00007.parquet" in storage.list("steps")
        storage.delete("steps/part-00007.parquet")
        assert not storage.exists("steps/part-00007.parquet")
        other = S3Storage("s3://datagen-test/runs/r2", endpoint_url=endpoint)
        assert other.list("") == []  # prefixes do not leak into each other


def test_control_files_are_read_with_a_bound() -> None:
    """A marker larger than any the sink writes is refused from the GET's Content-Length, its
    body not read (issue 36): the shard counts as not committed."""
    with moto_s3() as endpoint:
        storage = S3Storage("s3://datagen-test/runs/r3/", endpoint_url=endpoint)
        write_shard(storage, 1, {}, shard_stats(1))
        write_shard(storage, 2, {}, shard_stats(2))
        storage.put(marker_key(2), b" " * (MAX_MARKER_BYTES + 1))
        assert read_small(storage, marker_key(1), MAX_MARKER_BYTES).startswith(b"{")
        with pytest.raises(ValueError, match="more than the"):
            read_small(storage, marker_key(2), MAX_MARKER_BYTES)
        with pytest.warns(UserWarning, match="shard 2 skipped"):
            assert [m.shard for m in read_markers(storage)] == [1]


@pytest.mark.parametrize("key", ["../escape.json", "/abs.json", "a/../../b.json"])
def test_put_and_delete_refuse_keys_that_leave_the_prefix(key: str) -> None:
    """A key with `..` or a leading `/` is refused before any request (issue 42, item 1)."""
    with moto_s3() as endpoint:
        storage = S3Storage("s3://datagen-test/runs/r4/", endpoint_url=endpoint)
        outside = S3Storage("s3://datagen-test/runs/", endpoint_url=endpoint)
        outside.put("escape.json", b"{}")
        for call in (storage.put, storage.put_new):
            with pytest.raises(ValueError, match="not a key inside the output"):
                call(key, b"{}")
        with pytest.raises(ValueError, match="not a key inside the output"):
            storage.delete(key)
        assert outside.exists("escape.json") and storage.list("") == []
