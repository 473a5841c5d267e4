"""Where output bytes go. One small interface, so the same writer serves every backend.

Storage.put(key, bytes)  whole objects only: a reader sees all of an object or nothing
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol

from datagen.config import OutputConfig


class Storage(Protocol):
    """Flat key → bytes store rooted at the run's output location."""

    uri: str

    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def list(self, prefix: str) -> list[str]: ...
    def delete(self, key: str) -> None: ...


class LocalStorage:
    """A local folder. Writes go to a hidden temp file then `os.replace`, which is atomic."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(str(root).removeprefix("file://")).expanduser().resolve()
        self.uri = str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / key

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Hidden name: pyarrow datasets and `datasets` skip files starting with "." or "_".
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def list(self, prefix: str) -> list[str]:
        base = self._path(prefix)
        if not base.is_dir():
            return []
        return sorted(
            str(p.relative_to(self.root))
            for p in base.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )


def open_storage(
    uri: str, endpoint_url: str | None = None, multipart_threshold_mb: int = 16
) -> Storage:
    """The storage for an output URI: `s3://bucket/prefix` or a local folder."""
    if uri.startswith("s3://"):
        from datagen.sink.s3 import S3Storage

        return S3Storage(uri, endpoint_url, multipart_threshold_mb)
    return LocalStorage(uri)


def output_storage(output: OutputConfig) -> Storage:
    """The storage a pipeline's `output:` section names."""
    return open_storage(output.uri, output.endpoint_url, output.multipart_threshold_mb)
