"""Which keys a storage may write or remove: `check_key`, used by every `Storage` backend
(`storage.LocalStorage`, `s3.S3Storage`) before a put or a delete.

Keys can come from control files a stranger may have edited (`_export.json` lists each
shard's files), so a key that would leave the output's root is refused, not followed.
"""

from __future__ import annotations


def check_key(key: str) -> str:
    """`key` itself if it names an object inside the root; ValueError if it would leave it
    (absolute, a `..` part) or is no plain name (empty, `.` or empty parts, a NUL byte). On S3
    `prefix/../x` is a literal key, but a sync of the bucket to disk, or a reader that
    normalizes it, puts it outside the prefix: refused there too."""
    parts = key.split("/")
    if not key or "\0" in key or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{key!r} is not a key inside the output (absolute, `..` or empty parts)")
    return key
