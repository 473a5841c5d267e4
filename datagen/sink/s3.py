"""S3 (and S3-compatible: MinIO, moto) storage for the sink, through boto3.

Credentials come from boto3's standard chain (environment, profile, instance role) and are
never read, logged or written by datagen. The endpoint comes from `output.endpoint_url`, else
boto3's own `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`. A PUT is atomic: an object appears
whole or not at all; above the threshold the upload is multipart, which S3 also makes visible
only once complete. Throttling (503 SlowDown) and 5xx are retried by botocore's standard mode.
"""

from __future__ import annotations

import io
from typing import Any

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

RETRIES = {"max_attempts": 10, "mode": "standard"}  # standard mode retries throttling and 5xx


def split_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/a/b` → ("bucket", "a/b/")."""
    rest = uri.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise ValueError(f"{uri!r} has no bucket (expected s3://bucket/prefix)")
    prefix = prefix.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


class S3Storage:
    """Objects under `s3://bucket/prefix/`."""

    def __init__(
        self, uri: str, endpoint_url: str | None = None, multipart_threshold_mb: int = 16
    ) -> None:
        self.uri = uri.rstrip("/")
        self.bucket, self.prefix = split_uri(uri)
        config = Config(retries=RETRIES, max_pool_connections=16)
        self.client: Any = boto3.session.Session().client(
            "s3", endpoint_url=endpoint_url, config=config
        )
        size = multipart_threshold_mb * 1024 * 1024
        self.transfer = TransferConfig(multipart_threshold=size, multipart_chunksize=size)

    def _key(self, key: str) -> str:
        return self.prefix + key

    def put(self, key: str, data: bytes) -> None:
        self.client.upload_fileobj(
            io.BytesIO(data), self.bucket, self._key(key), Config=self.transfer
        )

    def get(self, key: str) -> bytes:
        return bytes(self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read())

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def list(self, prefix: str) -> list[str]:
        keys = []
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(prefix)):
            for item in page.get("Contents", []):
                key = item["Key"][len(self.prefix) :]
                if not key.rsplit("/", 1)[-1].startswith("."):
                    keys.append(key)
        return sorted(keys)
