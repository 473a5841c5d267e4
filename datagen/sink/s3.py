"""S3 (and S3-compatible: MinIO, moto) storage for the sink, through boto3.

Credentials come from boto3's standard chain (environment, profile, instance role) and are
never read, logged or written by datagen. The endpoint comes from `output.endpoint_url`, else
boto3's own `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`. A PUT is atomic: an object appears
whole or not at all; above the threshold the upload is multipart, which S3 also makes visible
only once complete. Throttling (503 SlowDown) and 5xx are retried by botocore's standard mode.
`put_new` is a conditional PUT (`If-None-Match: *`, S3 since 2024-08; MinIO; moto): S3 itself
decides which of two writers creates the key.
"""

from __future__ import annotations

import io
import time
from typing import Any

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from datagen.sink.keys import check_key
from datagen.sink.listing import ObjectStat

RETRIES = {"max_attempts": 10, "mode": "standard"}  # standard mode retries throttling and 5xx
# 409 ConditionalRequestConflict: another conditional write of the key is in flight; S3 says to
# retry, and the retry gets 412 once that write has landed.
CONFLICT_RETRIES = 5


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
        self,
        uri: str,
        endpoint_url: str | None = None,
        multipart_threshold_mb: int = 16,
        client_config: Config | None = None,  # merged over the sink's (retries, pool)
    ) -> None:
        self.uri = uri.rstrip("/")
        self.bucket, self.prefix = split_uri(uri)
        config = Config(retries=RETRIES, max_pool_connections=16)
        if client_config is not None:
            config = config.merge(client_config)
        self.client: Any = boto3.session.Session().client(
            "s3", endpoint_url=endpoint_url, config=config
        )
        size = multipart_threshold_mb * 1024 * 1024
        self.transfer = TransferConfig(multipart_threshold=size, multipart_chunksize=size)

    def _key(self, key: str) -> str:
        return self.prefix + key

    def _own(self, key: str) -> str:
        """The full key of a key this storage may write or remove (`keys.check_key`)."""
        return self.prefix + check_key(key)

    def put(self, key: str, data: bytes) -> None:
        self.client.upload_fileobj(
            io.BytesIO(data), self.bucket, self._own(key), Config=self.transfer
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
        self.client.delete_object(Bucket=self.bucket, Key=self._own(key))

    def stat(self, prefix: str) -> dict[str, ObjectStat]:
        out = {}
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(prefix)):
            for item in page.get("Contents", []):
                key = item["Key"][len(self.prefix) :]
                if not key.rsplit("/", 1)[-1].startswith("."):
                    out[key] = ObjectStat(int(item["Size"]), item["LastModified"].timestamp())
        return out

    def put_new(self, key: str, data: bytes) -> bool:
        for attempt in range(CONFLICT_RETRIES):
            try:
                self.client.put_object(
                    Bucket=self.bucket, Key=self._own(key), Body=data, IfNoneMatch="*"
                )
                return True
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code in ("PreconditionFailed", "412"):
                    return False
                if code != "ConditionalRequestConflict" or attempt == CONFLICT_RETRIES - 1:
                    raise
                time.sleep(0.2 * (attempt + 1))
        return False  # unreachable: the last attempt returns or raises

    def remove_temp(self, older_than_s: float) -> list[str]:
        """Abort multipart uploads under the prefix started more than `older_than_s` ago: S3's
        leftovers of a killed write (invisible, but stored and billed until aborted)."""
        cutoff = time.time() - older_than_s
        aborted = []
        paginator = self.client.get_paginator("list_multipart_uploads")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix):
            for upload in page.get("Uploads", []):
                if upload["Initiated"].timestamp() <= cutoff:
                    self.client.abort_multipart_upload(
                        Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                    )
                    aborted.append(upload["Key"][len(self.prefix) :])
        return sorted(aborted)

    def list(self, prefix: str) -> list[str]:
        return sorted(self.stat(prefix))
