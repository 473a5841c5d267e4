"""Pieces of run isolation that need no cluster: per-invocation names, episodes counted once
by id, one line (and the fix) for a worker whose browser cannot start."""

from __future__ import annotations

import io

from rich.console import Console

from datagen.browser.launch import INSTALL_HINT
from datagen.errors import BrowserUnavailable
from datagen.observe.progress import RichProgress
from datagen.records import Resumed
from datagen.runtime.plugin import RunNames, _why


def test_two_invocations_of_one_run_get_names_of_their_own() -> None:
    one, two = RunNames.new("a" * 16, "1" * 32), RunNames.new("a" * 16, "2" * 32)
    for name in ("plugin", "topic", "resource"):
        assert getattr(one, name) != getattr(two, name)
    assert one.key(3) != two.key(3) and one.key(3).startswith("shard-00003-")


def test_an_episode_reported_again_counts_once_with_its_last_outcome() -> None:
    progress = RichProgress(Console(file=io.StringIO()))
    progress.started("", 2, Resumed())
    first = {"episode_id": "e1", "episode": False, "steps": 3, "rejects": {"timeout_step": 1}}
    progress.episode(first)
    progress.episode({"episode_id": "e1", "episode": True, "steps": 2, "solved": True})  # rerun
    progress.episode({"episode_id": "e2", "episode": True, "steps": 1})
    assert progress.ended == 2
    assert progress._stats().startswith("episodes 2 · tasks rejected 0 · steps 3 ")
    assert "solved 1" in progress._stats() and "rejects:" not in progress._stats()


def test_a_worker_without_chromium_is_one_line_and_the_fix() -> None:
    reason, fix = _why(BrowserUnavailable(f"no Chromium found; {INSTALL_HINT}"))
    assert reason == "no Chromium found" and INSTALL_HINT in fix
    reason, fix = _why(RuntimeError("BrowserType.launch: spawn EACCES\nCall log:\n  - a\n  - b"))
    assert reason == "RuntimeError: BrowserType.launch: spawn EACCES" and "chromium" in fix
