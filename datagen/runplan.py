"""The plan of a run: tasks, shards and the run id, made before anything starts.

    PipelineConfig ─► make_plan() ─► Plan(tasks, shards, run_id)

`datagen validate` and `datagen run --dry-run` print it (observe.summary.show_plan), with
`notes(plan)` and `warnings(plan)`; `datagen run` executes it. Not what `datagen plan` prints: that is the
capacity plan (sessions, workers, GPU hours: datagen.capacity).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from datagen.browser.guard import UrlGuard
from datagen.config import PipelineConfig
from datagen.errors import ConfigError, SourceError
from datagen.records import TaskSpec
from datagen.source import load_tasks, shard_tasks
from datagen.source.readers import SITE_SCHEME
from datagen.url import BadUrl, hostname, is_local_host, netloc, split_url, url_directory
from datagen.versions import SCHEMA_VERSION


@dataclass(frozen=True)
class Plan:
    """What a run will do. `run_id` hashes everything that affects the rows."""

    config: PipelineConfig
    tasks: list[TaskSpec]
    shards: list[list[TaskSpec]]
    run_id: str

    @property
    def episodes(self) -> int:
        return len(self.tasks) * self.config.run.repeats

    @property
    def shard_ids(self) -> list[int]:
        """Indices of the shards (every shard holds at least one task)."""
        return list(range(len(self.shards)))


def make_plan(config: PipelineConfig) -> Plan:
    """Read the task lists and shard them. Source problems become ConfigErrors."""
    try:
        tasks = load_tasks(config)
    except SourceError as exc:
        raise ConfigError(
            str(exc),
            path="sources",
            fix=exc.fix or "correct the task list (or the pipeline's sources)",
        ) from None
    shards = shard_tasks(tasks, config.run.tasks_per_shard)
    digest = hashlib.sha256(f"{SCHEMA_VERSION}:{config.output_hash()}".encode())
    for task in tasks:
        digest.update(json.dumps(task.model_dump(mode="json"), sort_keys=True).encode())
    return Plan(config=config, tasks=tasks, shards=shards, run_id=digest.hexdigest()[:16])


def notes(plan: Plan) -> list[str]:
    """What the run will do that a reader may not expect: with `run.scope: site`, an episode
    whose start URL is local (a loopback, IP or one-label host; the bundled sites) stays under
    its start URL's folder, not the whole host (datagen/scope.py). One line naming them."""
    if plan.config.run.scope != "site":
        return []
    folders = [f for f in map(_local_folder, (t.start_url for t in plan.tasks)) if f]
    if not folders:
        return []
    distinct = list(dict.fromkeys(folders))
    shown = ", ".join(distinct[:3]) + (
        f", … ({len(distinct)} folders)" if len(distinct) > 3 else ""
    )
    return [
        f"scope: {len(folders)} of {len(plan.tasks)} tasks start on a local host; run.scope site "
        f"keeps each in its start URL's folder, not the whole host: {shown}. To widen it, list "
        "hosts in run.scope"
    ]


def _local_folder(url: str) -> str | None:
    """The folder `site` means for a local start URL (`site://todo/` → `site://todo/`), or None."""
    if url.startswith(SITE_SCHEME):
        path = url[len(SITE_SCHEME) :].lstrip("/")
        return SITE_SCHEME + url_directory("http://x/" + path).removeprefix("http://x/")
    try:
        scheme, host, _ = split_url(url)
    except BadUrl:
        return None
    return url_directory(url) if scheme in ("http", "https") and is_local_host(host) else None


def warnings(plan: Plan) -> list[str]:
    """What would make the run produce less than it could, told before anything starts: start
    URLs that do not parse, and start URLs the URL guard would block. No DNS here: IP addresses
    and localhost are checked, other names are not; the bundled sites are served and allowed by
    datagen itself."""
    config = plan.config
    found = _unparsable(plan.tasks)
    if not config.browser.url_guard or not plan.tasks:
        return found
    guard = UrlGuard(list(config.browser.allow))
    blocked: dict[str, str] = {}  # what to allow (or "" when allowing cannot help) -> why
    count = 0
    for task in plan.tasks:
        if task.source == "sites" or task.start_url.startswith(SITE_SCHEME):
            continue
        if not _parses(task.start_url):
            continue  # told above
        reason = guard.check_static(task.start_url)
        if reason is None:
            continue
        count += 1
        if "public address" in reason and hostname(task.start_url):
            entry = netloc(task.start_url)
            blocked.setdefault(entry, f"{entry} is not a public address")
        else:
            blocked.setdefault("", reason)
    if not count:
        return found
    allow = [e for e in blocked if e]
    why = "; ".join(list(blocked.values())[:3]) + ("; …" if len(blocked) > 3 else "")
    fix = (
        "fix: add "
        + ", ".join([f'"{e}"' for e in allow[:5]] + ["…"] * (len(allow) > 5))
        + " to browser.allow"
        if allow
        else "fix: use http(s) start URLs"
    )
    return [
        *found,
        f"warning: {count} of {len(plan.tasks)} start URLs would be blocked by the URL guard "
        f"({why}). {fix}",
    ]


def _parses(url: str) -> bool:
    try:
        split_url(url)
    except BadUrl:
        return False
    return True


def _unparsable(tasks: list[TaskSpec]) -> list[str]:
    """Start URLs that do not parse: each task becomes a `bad_url` reject, the run goes on."""
    bad = [t for t in tasks if not _parses(t.start_url)]
    if not bad:
        return []
    shown = ", ".join(f"{t.id} ({t.start_url[:80]!r})" for t in bad[:3]) + (
        ", …" if len(bad) > 3 else ""
    )
    return [
        f"warning: {len(bad)} of {len(tasks)} start URLs do not parse: {shown}; each will end "
        "as a bad_url reject. fix: correct them in the task list"
    ]
