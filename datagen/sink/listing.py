"""What a store's listing says about one object: `ObjectStat`, shared by every backend.

Below `storage.py` (the interface, the local folder, `open_storage`) and `s3.py` (the S3
backend, which `open_storage` imports): both import it, so neither imports the other's module
for it and the sink has no import circle (tests/unit/test_architecture.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ObjectStat:
    """What a listing says about an object."""

    size: int
    modified: float  # epoch seconds, by the store's clock (a local file's mtime, S3 LastModified)
