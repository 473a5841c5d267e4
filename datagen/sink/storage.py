"""Where output bytes go. One small interface, so the same writer serves every backend.

Storage.put(key, bytes)      whole objects only: a reader sees all of an object or nothing
Storage.put_new(key, bytes)  the same, only if the key does not exist yet (atomic: of two
                             writers, exactly one gets True) — claims and leases
Storage.stat(prefix)         sizes and modification times from one listing, no downloads
Storage.remove_temp(age)     leftovers of writes that were killed (local temp files, S3
                             multipart uploads never completed)

Every key written or removed is checked first (`keys.check_key`): a relative path inside the
root, no `..`, no empty or `.` part. Keys can come from control files a stranger may have
edited (`_export.json`'s file lists); a key that leaves the root is refused, on disk and S3.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path
from stat import S_ISREG
from typing import Any, Protocol

from datagen.config import OutputConfig
from datagen.sink.keys import check_key
from datagen.sink.listing import ObjectStat


class Storage(Protocol):
    """Flat key → bytes store rooted at the run's output location."""

    uri: str

    def put(self, key: str, data: bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def delete(self, key: str) -> None: ...
    def put_new(self, key: str, data: bytes) -> bool: ...
    def stat(self, prefix: str) -> dict[str, ObjectStat]: ...
    def remove_temp(self, older_than_s: float) -> list[str]: ...
    def list(self, prefix: str) -> list[str]: ...


# LocalStorage.put's temp files: "." + the final name + "." + 8 random characters (`_open_temp`).
TEMP_NAME = re.compile(r"^\.[^/]+\.(parquet|json|md|html)\.[a-z0-9_]{8}$")


class LocalStorage:
    """A local folder. Writes go to a hidden temp file then `os.replace`, which is atomic."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(str(root).removeprefix("file://")).expanduser().resolve()
        self.uri = str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / key

    def _own(self, key: str) -> Path:
        """The path of a key this storage may write or remove (`check_key`)."""
        return self.root / check_key(key)

    def put(self, key: str, data: bytes) -> None:
        path = self._own(key)
        tmp = _write_temp(path, data)
        try:
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        """The file's bytes: a regular file reached through no symlink (a FIFO would block, a
        link to `/dev/zero` never end); ValueError otherwise."""
        path = self._path(key)
        if under_symlink(self.root, path):
            raise ValueError(f"{path} is or lies under a symlink: not a file of the output")
        fd = os.open(path, READ_FLAGS)
        with os.fdopen(fd, "rb") as fh:
            if not S_ISREG(os.fstat(fd).st_mode):
                raise ValueError(f"{path} is not a regular file")
            return fh.read()

    def exists(self, key: str) -> bool:
        path = self._path(key)
        return not under_symlink(self.root, path) and path.is_file()

    def delete(self, key: str) -> None:
        self._own(key).unlink(missing_ok=True)

    def stat(self, prefix: str) -> dict[str, ObjectStat]:
        base = self._path(prefix)
        if under_symlink(self.root, base) or not base.is_dir():
            return {}
        out = {}
        for path in base.rglob("*"):
            if path.name.startswith("."):
                continue
            try:
                # lstat: a symlink (out of the output, to a device) is no object of it
                info = path.lstat()
            except FileNotFoundError:  # removed since the directory was read
                continue
            if S_ISREG(info.st_mode):
                out[str(path.relative_to(self.root))] = ObjectStat(info.st_size, info.st_mtime)
        return out

    def put_new(self, key: str, data: bytes) -> bool:
        """Write the whole file to a temp name, then hard-link it to its name: `link` fails if
        the name exists (atomic in the kernel), and a reader never sees a partial file."""
        path = self._own(key)
        tmp = _write_temp(path, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: create-exclusive, then write
            return _put_exclusive(path, data)
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def remove_temp(self, older_than_s: float) -> list[str]:
        """Remove `put`'s temp files older than `older_than_s` (left by a killed write)."""
        if not self.root.is_dir():
            return []
        removed = []
        cutoff = time.time() - older_than_s
        for path in self.root.rglob(".*"):
            try:
                if TEMP_NAME.match(path.name) and path.stat().st_mtime <= cutoff:
                    path.unlink()
                    removed.append(str(path.relative_to(self.root)))
            except FileNotFoundError:  # its writer finished (or removed it) meanwhile
                continue
        return sorted(removed)

    def list(self, prefix: str) -> list[str]:
        return sorted(self.stat(prefix))


READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def read_small(storage: Storage, key: str, limit: int) -> bytes:
    """A control file's bytes (a marker, `_run.json`, a lease), at most `limit` of them. Its
    size is looked at before anything is read: a local file's from `fstat` of the opened file
    (a regular file reached through no symlink, as `LocalStorage.get`), an S3 object's from
    the GET's Content-Length, before its body is read. ValueError when it is larger: a 3 GB
    file there costs a stat, not 3 GB of memory."""
    from datagen.sink.s3 import S3Storage

    if isinstance(storage, LocalStorage):
        path = storage._path(key)
        if under_symlink(storage.root, path):
            raise ValueError(f"{path} is or lies under a symlink: not a file of the output")
        fd = os.open(path, READ_FLAGS)
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fd)
            if not S_ISREG(info.st_mode):
                raise ValueError(f"{path} is not a regular file")
            _bounded(info.st_size, limit)
            data = fh.read(limit + 1)
    elif isinstance(storage, S3Storage):
        obj = storage.client.get_object(Bucket=storage.bucket, Key=storage._key(key))
        body = obj["Body"]
        try:
            _bounded(int(obj.get("ContentLength") or 0), limit)
            data = body.read(limit + 1)
        finally:
            body.close()
    else:  # another store (tests): whole objects
        data = storage.get(key)
    _bounded(len(data), limit)
    return data


def control_json(raw: bytes) -> Any:
    """A control file's JSON. ValueError for anything that is not JSON, a document nested
    deeper than the JSON reader follows (`[[[[…`: a RecursionError there) included."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("not JSON (nested deeper than a JSON reader follows)") from None


def _bounded(size: int, limit: int) -> None:
    if size > limit:
        raise ValueError(f"is {size:,} bytes, more than the {limit:,} such a file holds")


def under_symlink(root: Path, path: Path) -> bool:
    """Is `path`, or a folder between `root` and it, a symlink? (Or not under `root` at all.)"""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return True  # not under the root at all (a key with `..`)
    steps = [root / part for part in reversed(relative.parents[:-1])] + [path]
    return any(step.is_symlink() for step in steps)


TEMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"  # TEMP_NAME's random part, as mkstemp's
NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
FILE_MODE = 0o666  # less the process's umask (and as a folder's default ACL says): any new file's


def _open_temp(path: Path) -> tuple[int, Path]:
    """A new hidden temp file beside `path` (pyarrow datasets and `datasets` skip names starting
    with "." or "_"), open for writing. Created with FILE_MODE, so the kernel gives it the
    permissions the run's umask allows, as it does any file the user creates: mkstemp's 0600
    left the output unreadable to a training job running as another user of the group."""
    for _ in range(100):
        token = "".join(secrets.choice(TEMP_CHARS) for _ in range(8))
        tmp = path.parent / f".{path.name}.{token}"
        try:
            return os.open(tmp, NEW_FILE, FILE_MODE), tmp
        except FileExistsError:  # 37**8 names: only a folder full of leftovers gets here twice
            continue
    raise FileExistsError(f"no free temp name beside {path}")


def _write_temp(path: Path, data: bytes) -> Path:
    """`data` written whole to a new temp file beside `path` (its folder made if need be); the
    temp file is removed again if the write fails (a full disk, say)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _open_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _put_exclusive(path: Path, data: bytes) -> bool:
    try:
        fd = os.open(path, NEW_FILE, FILE_MODE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return True


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
