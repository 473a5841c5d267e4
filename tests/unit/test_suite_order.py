"""The suite's own scheduling (tests/conftest.py): the long files xdist starts first exist."""

from __future__ import annotations

from tests.helpers import LONG_FILES, REPO


def test_every_long_file_exists_once() -> None:
    missing = [name for name in LONG_FILES if not (REPO / name).is_file()]
    assert not missing, f"renamed or removed: update tests/helpers.py LONG_FILES: {missing}"
    assert len(set(LONG_FILES)) == len(LONG_FILES)
