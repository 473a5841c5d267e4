"""Where an episode ran, as the split and the card name it: the app or site its tasks share.

    episode row (site, start_url) + the run's `run.scope` ─► places() ─► {"shop", "example.com"}
                                                          ─► site_label() ─► "example.com"

Two tasks of one app must land on one side of the split, else validation screenshots repeat
train's (the same start page, the same list). An episode's `site` is what its source named
(a bundled site's folder, WebVoyager's `web_name`); a plain task list names none, so the start
URL says where it ran:

- a named host: its registrable domain (`app.example.com:8443` → `example.com`);
- a loopback, IP or one-label host (`127.0.0.1`, `localhost`, `10.0.0.5`) has no registrable
  domain and often serves several apps by port or folder: the folder the run's scope confines
  the episode to when there is one (`run.scope: site` on such a host, or a URL prefix in a
  scope list: `http://127.0.0.1:8000/todo/`), else its host and port (`127.0.0.1:8000`).

Both the source's name and the URL's place are kept: either one shared joins two tasks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datagen.scope import Scope
from datagen.url import BadUrl, is_local_host, is_web, origin, page_of, path_of, site_of

ScopeSetting = str | list[str]


def run_scope(pipeline: Mapping[str, Any]) -> ScopeSetting:
    """The run's `run.scope` from its `_run.json` pipeline (`site`, its default, when absent
    or unreadable)."""
    run = pipeline.get("run")
    scope = run.get("scope") if isinstance(run, dict) else None
    if isinstance(scope, str) or (
        isinstance(scope, list) and all(isinstance(s, str) for s in scope)
    ):
        return scope
    return "site"


def url_place(url: str, scope: ScopeSetting = "site") -> str | None:
    """The app or site a start URL belongs to (module docstring); None for a URL that is no
    web page (`site://shop/`, `about:blank`)."""
    if not is_web(url):
        return None
    _, host, port = origin(url)
    if not host:
        return None
    if not is_local_host(host):
        return site_of(host)
    try:
        prefixes = Scope.for_task(scope, url).prefixes
    except (ValueError, BadUrl):  # a scope this version cannot read: the host and port
        prefixes = ()
    page = page_of(url)
    folders = [p for p in prefixes if page.startswith(p)]
    folder = max(folders, key=len) if folders else ""
    # the root folder is the whole origin: one key for it, whatever the scope
    return folder if folder and path_of(folder) not in ("", "/") else f"{host}:{port}"


def places(episode: Mapping[str, Any], scope: ScopeSetting = "site") -> set[str]:
    """Every place an episode row is tied to: its source's site name and its start URL's place."""
    found = {str(episode["site"])} if episode.get("site") else set()
    place = url_place(str(episode.get("start_url") or ""), scope)
    return found | ({place} if place else set())


def site_label(episode: Mapping[str, Any]) -> str:
    """The one name the card counts an episode under: its source's site name, else its start
    URL's host and port or registrable domain, else `unknown`."""
    if episode.get("site"):
        return str(episode["site"])
    return url_place(str(episode.get("start_url") or ""), "origin") or "unknown"
