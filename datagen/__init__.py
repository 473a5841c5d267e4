"""datagen: training data for computer-use agents, from real browsers at scale."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow.dataset

from datagen.versions import SCHEMA_VERSION, __version__

__all__ = ["SCHEMA_VERSION", "__version__", "read_committed"]


def read_committed(
    uri: str, table: str = "steps", endpoint_url: str | None = None
) -> pyarrow.dataset.Dataset:
    """The committed rows of a table of a datagen output (local folder or s3://), as a
    `pyarrow.dataset.Dataset`. Safe while a run is still writing. See docs/output.md."""
    from datagen.sink.read import read_committed as read

    return read(uri, table, endpoint_url)
