"""`output:`, `cluster:` and `run:`: where the rows go, where the browsers run, and what a run
does (seed, step budget, sharding, repeats, time limits, scope).

    output: ─► datagen.sink;  cluster: ─► datagen.runtime;  run: ─► datagen.runplan, datagen.pipeline
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, PlainSerializer, field_validator, model_validator

from datagen.config.admission import AdmissionConfig
from datagen.config.base import NEUTRAL, Section
from datagen.config.hosts import HostsConfig
from datagen.config.paths import PATH_MAX, check_path_length, path_schema
from datagen.config.scope import check_scope
from datagen.config.urls import has_userinfo, redact_url, split_host_port


class OutputConfig(Section):
    """Where the rows go (all output-neutral: the same rows, written elsewhere)."""

    uri: str = Field(
        max_length=PATH_MAX - 1,
        description="a folder (relative to the current one) or s3://bucket/prefix; a folder's "
        "path at most 4,095 bytes, each of its parts at most 255",
        json_schema_extra={**NEUTRAL, **path_schema("s3://.*")},
    )
    endpoint_url: Annotated[
        str | None, PlainSerializer(lambda url: redact_url(url) if url else url)
    ] = Field(
        None,
        description="S3-compatible endpoint (MinIO, moto); accepts ${VAR}; default: boto3's AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL",
        json_schema_extra=NEUTRAL,
    )
    multipart_threshold_mb: int = Field(
        16,
        ge=5,
        le=5120,
        description="S3 uploads above this size go multipart",
        json_schema_extra=NEUTRAL,
    )

    @field_validator("uri")
    @classmethod
    def _check_length(cls, uri: str) -> str:
        return uri if "://" in uri else check_path_length(uri, "output.uri")

    @model_validator(mode="after")
    def _scheme(self) -> OutputConfig:
        if not self.uri.strip():
            raise ValueError("output.uri is empty. fix: a folder (./out) or s3://bucket/prefix")
        scheme = self.uri.split("://", 1)[0] if "://" in self.uri else "file"
        if scheme not in ("file", "s3"):
            raise ValueError(
                f"{redact_url(self.uri)!r}: output goes to a local folder or "
                f"s3://bucket/prefix, not {scheme}://"
            )
        bucket = self.uri[5:].split("/", 1)[0] if scheme == "s3" else ""
        if scheme == "s3" and not bucket:
            raise ValueError(f"{self.uri!r} has no bucket; write s3://bucket/prefix")
        if "@" in bucket or ":" in bucket:
            raise ValueError(
                f"{redact_url(self.uri)!r} holds credentials or a port, which an S3 URI cannot. "
                "fix: write s3://bucket/prefix; credentials come from the AWS chain "
                "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, a role), the endpoint from "
                "output.endpoint_url"
            )
        if has_userinfo(self.endpoint_url):
            raise ValueError(
                f"output.endpoint_url {redact_url(self.endpoint_url or '')!r} holds credentials: "
                "S3 clients sign with access keys and never send these (they would only be "
                "written into the output and printed). fix: remove user:password@ and give the "
                "keys through the AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile)"
            )
        return self


class ClusterConfig(Section):
    """Where the browsers run: a local Dask cluster, or an existing scheduler (all
    output-neutral: who computes the rows, not what they hold)."""

    address: str | None = Field(
        None,
        description="tcp://host:port of a running scheduler; default: start a LocalCluster",
        json_schema_extra=NEUTRAL,
    )
    workers: int = Field(
        2,
        ge=1,
        le=256,
        description="LocalCluster worker processes (one browser each)",
        json_schema_extra=NEUTRAL,
    )
    sessions_per_worker: int = Field(
        4, ge=1, le=512, description="episodes in flight per worker", json_schema_extra=NEUTRAL
    )
    admission: AdmissionConfig = Field(
        default_factory=AdmissionConfig,
        description="fewer sessions in flight while the worker's browsers starve for CPU",
    )
    dashboard: str = Field(
        "127.0.0.1:8787",
        description="LocalCluster dashboard address (host:port; this machine only by default). "
        "Any other address (0.0.0.0:8787, :8787, a network's) needs `expose: true`, and access "
        "control of your own: the dashboard has none, and shows every task and worker",
        json_schema_extra=NEUTRAL,
    )
    expose: bool = Field(
        False,
        description="let `dashboard` listen on an address other than loopback (validate and "
        "run refuse one without it)",
        json_schema_extra=NEUTRAL,
    )
    retries: int = Field(
        2,
        ge=0,
        le=20,
        description="re-runs of a shard whose task raised (e.g. its browser died)",
        json_schema_extra=NEUTRAL,
    )
    allowed_failures: int = Field(
        3,
        ge=0,
        le=100,
        description="worker deaths a shard may cause before it fails (LocalCluster only; a running scheduler keeps its own)",
        json_schema_extra=NEUTRAL,
    )
    wait_for_workers_s: float = Field(
        120.0,
        gt=0,
        le=86_400,
        description="how long a run waits for a worker that has started its browser (at the "
        "start, or after every such worker was lost) before it stops with an error",
        json_schema_extra=NEUTRAL,
    )

    @field_validator("address")
    @classmethod
    def _check_address(cls, address: str | None) -> str | None:
        if address is None:
            return None
        scheme, sep, rest = address.partition("://")
        if not sep:
            scheme, rest = "tcp", address
        if scheme not in ("tcp", "tls", "ws", "wss", "ucx"):
            raise ValueError(
                f"{address!r}: unknown protocol {scheme}://. fix: write tcp://host:8786"
            )
        host, port = split_host_port(rest)
        if not host or port is None:
            raise ValueError(
                f"{address!r} is not host:port. fix: write tcp://host:8786 (the scheduler's "
                "address, as `dask scheduler` prints it)"
            )
        return address if sep else f"tcp://{address}"

    @field_validator("dashboard")
    @classmethod
    def _check_dashboard(cls, dashboard: str) -> str:
        _, port = split_host_port(dashboard)
        if port is None:
            raise ValueError(
                f"{dashboard!r} is not [host]:port. fix: write 127.0.0.1:8787 (port 0: any free one)"
            )
        return dashboard


class RunConfig(Section):
    """What a run does with its tasks."""

    seed: int = Field(
        0,
        ge=-(2**63),
        le=2**63 - 1,
        description="seed of every random choice (per episode: seed + task id)",
    )
    max_steps: int = Field(
        12,
        ge=1,
        le=500,
        description="step budget of every episode (a task's own max_steps may lower it)",
    )
    # Not neutral: the shards' contents, and so what a rerun may skip, follow from it.
    tasks_per_shard: int = Field(4, ge=1, le=100_000, description="tasks per Dask task (shard)")
    repeats: int = Field(1, ge=1, le=1000, description="episodes per task (different seeds)")
    step_timeout_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="the browser part of a step (observe, check, act) still running after this becomes a timeout_step reject",
        json_schema_extra=NEUTRAL,
    )
    episode_timeout_s: float = Field(
        300.0,
        gt=0,
        le=86_400,
        description="an episode still running after this becomes a timeout_episode reject; "
        "its replay verification (annotation.verify) shares the same budget: what the "
        "episode left of it, the verification cut short there (reduced or not_reproduced)",
        json_schema_extra=NEUTRAL,
    )
    straggler_s: float | None = Field(
        120.0,
        gt=0,
        le=86_400,
        description="an episode with no progress (no step completed, nor its start page loaded) "
        "for this long ends as a straggler reject and its slot refills; null: no such limit",
        json_schema_extra=NEUTRAL,
    )
    straggler_factor: float | None = Field(
        10.0,
        ge=1,
        le=1000,
        description="a step running longer than this × the p95 step time of the worker's last "
        "200 steps (once it has 20; never under 10 s) ends its episode as a straggler reject; "
        "null: no such limit",
        json_schema_extra=NEUTRAL,
    )
    limit: int | None = Field(
        None, ge=1, le=1_000_000_000, description="use only the first N tasks"
    )
    scope: str | list[str] = Field(
        "site",
        description="where an episode may go: site (the start URL's registrable domain, any "
        "scheme or port; for a loopback, IP or one-label host such as localhost: the start "
        "URL's origin and directory, http://127.0.0.1:8000/todo/ for "
        "http://127.0.0.1:8000/todo/index.html), origin (the start URL's scheme, host and "
        "port), anywhere (what the URL guard allows), or a list of hosts (with their "
        "subdomains), host:port, origins and URL prefixes; steps that land outside it, or on "
        "error or blank pages, are dropped as rejects",
    )

    hosts: HostsConfig = Field(
        default_factory=HostsConfig,
        description="politeness per host, cluster-wide: sessions and requests/s, back-off on "
        "429/503, a blocklist of failing hosts, robots.txt",
    )

    @field_validator("scope")
    @classmethod
    def _check_scope(cls, value: str | list[str]) -> str | list[str]:
        return check_scope(value)
