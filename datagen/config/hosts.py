"""`run.hosts:` how politely a run treats each site it visits: sessions and requests at once
per host, back-off, a blocklist of hosts that keep failing, `robots.txt`.

    run.hosts ─► datagen.pipeline.hosts (HostBook: the rules) ─► runtime.hosts (cluster-wide)

A "host" is a registrable domain (`app.example.com` and `www.example.com` are `example.com`);
an IP or one-label host is its own, by host:port (`10.0.0.5:8080`).
"""

from __future__ import annotations

from pydantic import Field, field_validator

from datagen.config.base import NEUTRAL, Section

CAUSE_MAX = 500  # a block's first cause is kept (in the book, in _hosts.json) to this many chars


class HostsConfig(Section):
    """Limits per host, the same on every worker of the cluster (shared, not per worker)."""

    max_sessions_per_host: int = Field(
        3,
        ge=1,
        le=10_000,
        description="browser sessions (episodes) open at once on one host, over the whole "
        "cluster; more tasks of that host wait for one to end",
        json_schema_extra=NEUTRAL,
    )
    max_requests_per_second: float = Field(
        4.0,
        gt=0,
        le=10_000,
        description="requests per second to one host over the whole cluster (every request a "
        "page makes, sub-resources too); a 429 or 503 lowers it for that host (halved, and "
        "none before its Retry-After), back to this after a quiet minute",
        json_schema_extra=NEUTRAL,
    )
    respect_robots_txt: bool = Field(
        True,
        description="fetch each host's /robots.txt once (per run, cached) and end a task "
        "whose start URL it disallows as a robots_disallowed reject",
    )
    robots_timeout_s: float = Field(
        10.0,
        gt=0,
        le=120,
        description="the most a robots.txt fetch may take, its first 512 KiB read (the rest is "
        "not downloaded); one that does not answer in time is unreachable, which RFC 9309 "
        "reads as disallowing everything: that host's tasks end as robots_disallowed for the "
        "run (cached, fetched once)",
        json_schema_extra=NEUTRAL,
    )
    user_agent: str | None = Field(
        None,
        max_length=512,
        description="the User-Agent every page sends (default: the browser's own); its first "
        "word (before '/') is the robots.txt agent, else 'datagen'",
    )
    block_after: int = Field(
        5,
        ge=1,
        le=10_000,
        description="failures in a row on one host (DNS, connection refused, HTTP 5xx) that "
        "put it on the blocklist: its remaining tasks end at once as host_blocked rejects",
        json_schema_extra=NEUTRAL,
    )
    block_ttl_s: float = Field(
        3600.0,
        gt=0,
        le=30 * 86_400,
        description="how long a blocked host stays blocked (recorded in the output's "
        "_hosts.json; a rerun after it runs that host's tasks again)",
        json_schema_extra=NEUTRAL,
    )
    exempt: list[str] = Field(
        default_factory=lambda: ["localhost", "127.0.0.1", "::1"],
        description="hosts no limit applies to (exact names, any port): by default the "
        "machine's own loopback servers (the bundled sites' sessions are never limited); [] "
        "limits them too, by host:port",
        json_schema_extra=NEUTRAL,
    )

    @field_validator("user_agent")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or any(c in value for c in "\r\n\0")):
            raise ValueError(
                "run.hosts.user_agent must be one non-empty line. fix: e.g. "
                "'datagen/0.1 (+https://example.com/bot)'"
            )
        return value

    @field_validator("exempt")
    @classmethod
    def _lower(cls, value: list[str]) -> list[str]:
        return [v.strip().lower().strip("[]").rstrip(".") for v in value]
