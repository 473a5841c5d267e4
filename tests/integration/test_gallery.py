"""`datagen inspect --html` in Chromium: each step's caption gives its description, whether it
was needed, its target's role, name and box, and each episode its verification (the DOM as the
browser built it, not the HTML text)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from datagen.sink.inspect import gallery, load
from tests.unit.synthetic_run import Task, write_run

pytestmark = pytest.mark.browser


def test_the_gallery_shows_descriptions_needed_marks_and_verification(
    chromium: str, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    out = write_run(tmp_path / "out", [[Task("alpha", "a1"), Task("beta", "b1")]])
    tables = load(str(out))
    page_html = gallery(tables, max_episodes=4)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_content(page_html)
            steps = page.evaluate(
                """() => [...document.querySelectorAll('figure.step')].map(f => ({
                    episode: f.closest('section').id, step: +f.dataset.step,
                    description: f.querySelector('.description').textContent,
                    needed: f.querySelector('.needed').textContent,
                    target: f.querySelector('.target').textContent,
                    verification: f.closest('section').querySelector('.verification').textContent,
                }))"""
            )
            if os.environ.get("DATAGEN_SHOT_GALLERY"):  # docs/img/gallery.png
                page.screenshot(path=os.environ["DATAGEN_SHOT_GALLERY"])
        finally:
            browser.close()
    rows = {(s["episode_id"], s["step_index"]): s for s in tables["steps"]}
    episodes = {e["episode_id"]: e for e in tables["episodes"]}
    assert len(steps) == len(rows) == 8
    for shown in steps:
        row = rows[(shown["episode"], shown["step"])]
        assert shown["description"] == row["action_description"] == 'Click the "Go" button'
        assert shown["needed"] == ("✔ needed" if row["needed"] else "✘ not needed")
        if row["target_bbox_px"]:
            assert shown["target"].endswith("at [20, 10, 60, 30]")
        else:
            assert shown["target"] == "no target element"
        verification = episodes[shown["episode"]]["verification"] or "not verified"
        assert shown["verification"] == f"verification: {verification}"
    assert {s["verification"] for s in steps} == {
        "verification: minimal",
        "verification: not verified",
    }
