"""The pipeline file: pydantic models (extra keys forbidden, frozen) and a loader whose errors
name the YAML path of the bad key and say how to fix it.

    pipelines/X.yaml ─► load_pipeline() ─► PipelineConfig

Nothing here starts a browser or a cluster: a bad file fails before either exists.
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import json
import os
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from datagen.engine.sim.config import SimConfig
from datagen.errors import ConfigError
from datagen.loading import MAX_BYTES, FileProblem, load_yaml, read_text
from datagen.scope import check_setting


class Section(BaseModel):
    """Base of every config section: unknown keys are errors, values immutable."""

    # NaN and infinity are never meant: `.inf` as a timeout is "forever", which breaks later.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# --------------------------------------------------------------------------- sources


class SitesSource(Section):
    """The bundled local web apps in `datagen/sites/` (package data), served by datagen on
    127.0.0.1."""

    type: Literal["sites"]
    sites: list[str] | None = Field(None, description="site folder names; default: all of them")
    dir: str | None = Field(None, description="folder holding the sites; default: bundled one")


class JsonlSource(Section):
    """datagen's native JSONL: id, start_url, instruction, check, max_steps (one task a line)."""

    type: Literal["jsonl"]
    path: str = Field(description="path to the .jsonl file, relative to the pipeline file")
    limit: int | None = Field(None, ge=1, description="read at most this many tasks")


class WebVoyagerSource(Section):
    """WebVoyager's JSONL: web_name, id, ques, web."""

    type: Literal["webvoyager"]
    path: str = Field(description="path to WebVoyager_data.jsonl, relative to the pipeline file")
    limit: int | None = Field(None, ge=1, description="read at most this many tasks")


class UrlsSource(Section):
    """A plain list of URLs, one a line (# comments allowed); each becomes an explore task."""

    type: Literal["urls"]
    path: str = Field(description="path to the URL list, relative to the pipeline file")
    instruction: str = Field("Explore the page.", description="instruction given to every URL")
    limit: int | None = Field(None, ge=1, description="read at most this many URLs")


SourceConfig = Annotated[
    SitesSource | JsonlSource | WebVoyagerSource | UrlsSource, Field(discriminator="type")
]


# --------------------------------------------------------------------------- browser


class Viewport(Section):
    width: int = Field(1280, ge=200, le=7680, description="CSS px")
    height: int = Field(800, ge=200, le=4320, description="CSS px")


def _whole_pixels(config: BrowserConfig) -> BrowserConfig:
    """Screenshots have whole pixels: viewport × device_scale_factor must be an integer."""
    for side in ("width", "height"):
        value = getattr(config.viewport, side) * config.device_scale_factor
        if abs(value - round(value)) > 1e-9:
            raise ValueError(
                f"viewport.{side} × device_scale_factor = {value:g} is not a whole number of pixels; "
                "pick a size or scale whose product is an integer"
            )
    return config


class BrowserConfig(Section):
    """Chromium through Playwright."""

    executable: str | None = Field(
        None,
        description="Chromium binary; default: Playwright's own if installed, else /usr/bin/chromium",
    )
    headless: bool = Field(True, description="run without a window")
    viewport: Viewport = Field(default_factory=Viewport)
    device_scale_factor: float = Field(1.0, ge=0.5, le=4.0, description="screenshot px per CSS px")
    image_format: Literal["png", "jpeg", "webp"] = Field("jpeg", description="screenshot encoding")
    image_quality: int = Field(80, ge=1, le=100, description="jpeg/webp quality")
    navigation_timeout_s: float = Field(15.0, gt=0, le=600, description="page load limit")
    action_timeout_s: float = Field(5.0, gt=0, le=600, description="limit for one action")
    settle_ms: int = Field(
        120, ge=0, le=10_000, description="pause after an action for the page to react"
    )
    settle_quiet_ms: int = Field(
        50,
        ge=0,
        le=5_000,
        description="before each observation: no DOM change and no new request for this long "
        "(then a painted frame), so the screenshot and the element boxes show one moment",
    )
    settle_timeout_ms: int = Field(
        1500,
        ge=0,
        le=30_000,
        description="give up waiting for a quiet page after this (pages that animate or poll); "
        "boxes that still move across the screenshot are flagged and not grounded",
    )
    extra_args: list[str] = Field(default_factory=list, description="more Chromium switches")
    recycle_after_episodes: int = Field(
        200,
        ge=1,
        le=1_000_000,
        description="restart the browser between shards once it has run this many episodes (leaks)",
    )
    memory_limit_mb: int = Field(
        6000,
        ge=256,
        le=1_048_576,
        description="new episodes wait while the browser's own memory (USS) is above this",
    )
    page_memory_mb: int = Field(
        2048,
        ge=256,
        le=1_048_576,
        description="an episode whose page holds more memory than this (its renderer "
        "processes' private memory: JS heap, ArrayBuffers, DOM, canvases, WebAssembly) ends as "
        "a page_memory reject, its renderer stopped; checked at every step and every 0.25 s",
    )
    url_guard: bool = Field(
        True, description="block non-public addresses and non-web schemes (see browser.allow)"
    )
    allow: list[str] = Field(
        default_factory=list,
        description="hosts, host:port or CIDRs the guard lets through (the bundled sites are added by datagen; localhost, 127.0.0.1 and ::1 cover each other)",
    )

    @field_validator("allow")
    @classmethod
    def _check_allow(cls, entries: list[str]) -> list[str]:
        bad = [f"{entry!r} ({why})" for entry in entries if (why := allow_entry_problem(entry))]
        if bad:
            raise ValueError(
                f"entries that name no host, host:port or network: {'; '.join(bad)}. fix: write "
                "a host (intranet.example), host:port (intranet.example:8080, [::1]:8080) or "
                "a CIDR network (10.1.0.0/16)"
            )
        return entries

    @model_validator(mode="after")
    def _check_pixels(self) -> BrowserConfig:
        return _whole_pixels(self)

    @model_validator(mode="after")
    def _guard_and_allow(self) -> BrowserConfig:
        if not self.url_guard and self.allow:
            raise ValueError(
                "url_guard: false lets everything through, so browser.allow would mean nothing. "
                "fix: keep url_guard on and list what to open in allow, or remove allow"
            )
        return self


HOST_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


def allow_entry_problem(entry: str) -> str:
    """Why a `browser.allow` entry names nothing the guard can match ("" when it is fine)."""
    text = entry.strip().lower()
    if not text:
        return "empty"
    if "[" not in text and _is_network(text):
        return ""
    if "/" in text:
        return "a URL or path, not a host"
    if text.startswith("["):
        inside, closed, rest = text[1:].partition("]")
        if not closed or not _is_network(inside):
            return "not an IPv6 address inside [ ]"
        if not rest:
            return ""
        if not rest.startswith(":"):
            return "text after ']'"
        return _port_problem(rest[1:])
    if text.count(":") > 1:
        return "neither an address nor host:port (write IPv6 as [addr]:port or a CIDR)"
    host, colon, port = text.partition(":")
    if colon and (problem := _port_problem(port)):
        return problem
    if "*" in host:
        return "wildcards are not supported; list each host (a host covers no subdomains)"
    if not all(HOST_LABEL.match(label) for label in host.rstrip(".").split(".")):
        return "not a valid host name"
    return ""


def _port_problem(port: str) -> str:
    return "" if port.isdigit() and 0 < int(port) < 65536 else f"port {port!r} is not 1-65535"


def _is_network(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- policy


class ExplorePolicy(Section):
    """No model: a seeded, coverage-guided walk over the page's interactive elements."""

    type: Literal["explore"]
    type_probability: float = Field(
        0.9, ge=0, le=1, description="chance to type into an input right after focusing it"
    )
    submit_probability: float = Field(
        0.3, ge=0, le=1, description="chance to press Enter after typing"
    )


class ScriptedPolicy(Section):
    """Replays the `actions` listed in each task (for tests and replays)."""

    type: Literal["scripted"]


def engine_url(url: str | None) -> str | None:
    """A server's base URL as the client joins paths to it: no trailing `/` or `/v1` (OpenAI
    clients write `http://host:8000/v1`; /health and /metrics live at the root)."""
    if url is None:
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(
            f"{redact_url(url)!r} is not a URL ({exc}). fix: write http://host:8000"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{redact_url(url)!r} is not an http(s)://host URL. fix: write http://host:8000"
        )
    if port == 0:
        raise ValueError(f"{redact_url(url)!r}: port 0. fix: write the server's port")
    if parts.query or parts.fragment:
        raise ValueError(
            f"{redact_url(url)!r} has a query or fragment. fix: write http://host:8000"
        )
    path = parts.path.rstrip("/").removesuffix("/v1").rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def redact_url(url: str) -> str:
    """The URL without its user:password part: what may be printed, logged or written."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.rsplit("@", 1)[-1] if "@" in url else url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def has_userinfo(url: str | None) -> bool:
    return bool(url) and "@" in urlsplit(url or "").netloc


# A model server's URL: normalized on the way in, written and printed without its credentials.
ServerUrl = Annotated[
    str | None,
    AfterValidator(engine_url),
    PlainSerializer(lambda url: redact_url(url) if url else url),
]


class RoleConfig(Section):
    """One model role (policy, localizer, judge, annotator): endpoint, sampling and budget share."""

    url: ServerUrl = Field(None, description="this role's own server; default: engine.url")
    model: str | None = Field(
        None, description="served model name; default: the server's first model"
    )
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature (always sent)")
    max_tokens: int = Field(512, ge=1, le=1_048_576, description="output budget (always sent)")
    share: float = Field(
        1.0, gt=0, le=1, description="share of the worker's in-flight budget this role may use"
    )
    timeout_s: float = Field(
        120.0, gt=0, le=3600, description="limit for one request, retries not included"
    )


class VlmPolicy(Section):
    """A vision-language model drives the browser (Surfer-H-style roles on a vLLM server)."""

    type: Literal["vlm"]
    profile: Literal["holo2_norm1000", "holo15_abs"] = Field(
        "holo2_norm1000",
        description="prompt profile: Holo-style [0,1000] coordinates, or absolute pixels",
    )
    history_images: int = Field(
        3,
        ge=1,
        le=16,
        description="screenshots sent per step; older ones become a text placeholder",
    )
    image_max_width: int = Field(
        1280, ge=64, le=16384, description="screenshots wider than this are resized on the worker"
    )
    policy: RoleConfig = Field(
        default_factory=lambda: RoleConfig(temperature=0.7, max_tokens=512, share=1.0)
    )
    localizer: RoleConfig | None = Field(
        default_factory=lambda: RoleConfig(
            temperature=0.0, max_tokens=64, share=0.5, timeout_s=30.0
        ),
        description="re-grounds each click's element description; null: use the policy's x, y",
    )
    judge: RoleConfig | None = Field(
        None, description="checks the answer when the policy says done"
    )


PolicyConfig = Annotated[ExplorePolicy | ScriptedPolicy | VlmPolicy, Field(discriminator="type")]


class EngineConfig(Section):
    """The vLLM server shared by all workers (or the stand-in, started by datagen when url is null)."""

    url: ServerUrl = Field(
        None,
        description="http://host:8000 of a vLLM server (a trailing /v1 is fine); accepts "
        "${VAR}; user:password@ in it is sent as basic auth and never written or printed; "
        "null: start the stand-in",
    )
    api_key: SecretStr | None = Field(
        None, description="bearer key; accepts ${VAR}; never written to outputs or logs"
    )
    max_in_flight: int = Field(
        512,
        ge=1,
        le=100_000,
        description="ceiling on requests in flight over the whole cluster (the fixed cap when "
        "control is static)",
    )
    control: Literal["adaptive", "static"] = Field(
        "adaptive",
        description="adaptive: steer the in-flight budget from the server's /metrics (queue, "
        "KV cache, preemptions); static: always max_in_flight",
    )
    control_interval_s: float = Field(
        1.0, gt=0, le=60, description="how often each worker reads /metrics (adaptive)"
    )
    retries: int = Field(
        3, ge=0, le=10, description="retries of connection errors, timeouts and 5xx"
    )
    ready_timeout_s: float = Field(
        120.0, gt=0, le=3600, description="wait this long for /health before giving up"
    )
    sim: SimConfig = Field(
        default_factory=lambda: SimConfig(speed_factor=20.0),
        description="the stand-in's settings when url is null (a load double, never a model)",
    )


# --------------------------------------------------------------------------- annotation etc.


class ModelExpressions(Section):
    """Referring expressions written by the model for DOM elements, kept only if they round-trip."""

    per_step: int = Field(2, ge=1, le=100, description="elements per screenshot to describe")
    writer: RoleConfig = Field(
        default_factory=lambda: RoleConfig(temperature=0.0, max_tokens=64, share=0.3)
    )


class AnnotationConfig(Section):
    grounding: bool = Field(True, description="write grounding rows for each step's elements")
    max_elements_per_step: int = Field(
        60, ge=1, le=10_000, description="cap on grounding rows per screenshot"
    )
    model_expressions: ModelExpressions | None = Field(
        None,
        description="ask the model for referring expressions and check them with the localizer",
    )


class ValidationConfig(Section):
    min_box_px: float = Field(
        4.0, ge=0, le=10_000, description="grounding boxes smaller than this are rejected"
    )
    require_hit_test: bool = Field(
        True, description="reject grounding rows whose element is occluded"
    )


class OutputConfig(Section):
    uri: str = Field(description="a folder (relative to the current one) or s3://bucket/prefix")
    endpoint_url: str | None = Field(
        None,
        description="S3-compatible endpoint (MinIO, moto); accepts ${VAR}; default: boto3's AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL",
    )
    multipart_threshold_mb: int = Field(
        16, ge=5, le=5120, description="S3 uploads above this size go multipart"
    )

    @model_validator(mode="after")
    def _scheme(self) -> OutputConfig:
        scheme = self.uri.split("://", 1)[0] if "://" in self.uri else "file"
        if scheme not in ("file", "s3"):
            raise ValueError(
                f"'{self.uri}': output goes to a local folder or s3://bucket/prefix, not {scheme}://"
            )
        if scheme == "s3" and not self.uri[5:].split("/", 1)[0]:
            raise ValueError(f"'{self.uri}' has no bucket; write s3://bucket/prefix")
        return self


class ClusterConfig(Section):
    """Where the browsers run: a local Dask cluster, or an existing scheduler."""

    address: str | None = Field(
        None, description="tcp://host:port of a running scheduler; default: start a LocalCluster"
    )
    workers: int = Field(
        2, ge=1, le=256, description="LocalCluster worker processes (one browser each)"
    )
    sessions_per_worker: int = Field(4, ge=1, le=512, description="episodes in flight per worker")
    dashboard: str = Field(
        "127.0.0.1:8787",
        description="LocalCluster dashboard address (host:port; this machine only by default). "
        "Exposing it (0.0.0.0:8787, or :8787) needs access control of your own: the dashboard "
        "has none, and shows every task and worker",
    )
    retries: int = Field(
        2,
        ge=0,
        le=20,
        description="re-runs of a shard whose task raised (e.g. its browser died)",
    )
    allowed_failures: int = Field(
        3,
        ge=0,
        le=100,
        description="worker deaths a shard may cause before it fails (LocalCluster only; a running scheduler keeps its own)",
    )
    wait_for_workers_s: float = Field(
        120.0,
        gt=0,
        le=86_400,
        description="how long a run waits for a worker that has started its browser (at the "
        "start, or after every such worker was lost) before it stops with an error",
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


def split_host_port(text: str) -> tuple[str, int | None]:
    """("host", port) of `host:port`, `[v6]:port` or `:port`; port None when it is not one."""
    host, colon, port = text.strip().rstrip("/").rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        return text, None
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        return text, None
    if any(c in host for c in "/ @?#"):
        return text, None
    return host.strip("[]"), int(port)


class RunConfig(Section):
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
    tasks_per_shard: int = Field(4, ge=1, le=100_000, description="tasks per Dask task (shard)")
    repeats: int = Field(1, ge=1, le=1000, description="episodes per task (different seeds)")
    step_timeout_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="the browser part of a step (observe, check, act) still running after this becomes a timeout_step reject",
    )
    episode_timeout_s: float = Field(
        300.0,
        gt=0,
        le=86_400,
        description="an episode still running after this becomes a timeout_episode reject",
    )
    limit: int | None = Field(
        None, ge=1, le=1_000_000_000, description="use only the first N tasks"
    )
    scope: str | list[str] = Field(
        "site",
        description="where an episode may go: site (the start URL's registrable domain, any "
        "scheme or port; an IP address or localhost: that host), origin (the start URL's "
        "scheme, host and port), anywhere (what the URL guard allows), or a list of hosts "
        "(with their subdomains), host:port, origins and URL prefixes; steps that land "
        "outside it, or on error or blank pages, are dropped as rejects",
    )

    @field_validator("scope")
    @classmethod
    def _check_scope(cls, value: str | list[str]) -> str | list[str]:
        return check_setting(value)


class PipelineConfig(Section):
    """A whole pipeline file."""

    name: str = Field(
        "pipeline", description="a name for the run, shown in the output's dataset card"
    )
    sources: list[SourceConfig] = Field(min_length=1, description="task lists to read")
    browser: BrowserConfig = Field(default_factory=BrowserConfig)
    policy: PolicyConfig = Field(default_factory=lambda: ExplorePolicy(type="explore"))
    annotation: AnnotationConfig = Field(default_factory=AnnotationConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    output: OutputConfig
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    base_dir: str = Field(
        "", description="set by the loader: folder of the pipeline file", exclude=True
    )

    @model_validator(mode="after")
    def _one_credential(self) -> PipelineConfig:
        if self.engine.api_key is None:
            return self
        roles = [("engine.url", self.engine.url)]
        if isinstance(self.policy, VlmPolicy):
            for name in ("policy", "localizer", "judge"):
                role = getattr(self.policy, name)
                roles.append((f"policy.{name}.url", role.url if role else None))
        for key, url in roles:
            if has_userinfo(url):
                raise ValueError(
                    f"{key} carries user:password@ and engine.api_key is set too: the server "
                    "would get two Authorization headers. fix: keep one of them (vLLM's "
                    "--api-key wants engine.api_key)"
                )
        return self

    @property
    def uses_engine(self) -> bool:
        """True when some stage calls a model server."""
        return isinstance(self.policy, VlmPolicy) or self.annotation.model_expressions is not None

    def resolve(self, path: str) -> Path:
        """A path from the file, relative to the pipeline file's folder."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else Path(self.base_dir or ".") / p

    def output_hash(self) -> str:
        """Hash of every setting that changes the rows (not where they go or who computes them)."""
        data = self.model_dump(mode="json", exclude={"output", "cluster", "name", "base_dir"})
        data["browser"].pop("executable", None)
        for key in ("url", "api_key", "ready_timeout_s", "retries"):
            data["engine"].pop(key, None)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


# --------------------------------------------------------------------------- loading


def load_pipeline(
    path: str | Path, output: str | None = None, cluster: dict[str, Any] | None = None
) -> PipelineConfig:
    """Read and validate a pipeline file; `output` overrides `output.uri`, `cluster` keys of
    `cluster` (the CLI's --address, --workers, --sessions), validated like the file's."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"pipeline file not found: {path}", fix="give the path of a .yaml file")
    try:
        data = load_yaml(read_text(path, "pipeline file", MAX_BYTES), path)
    except FileProblem as exc:
        raise ConfigError(str(exc), fix=exc.fix or "correct the YAML") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the file must be a YAML mapping (key: value), got {type(data).__name__}"
        )
    data = expand_env(data)
    if "base_dir" in data:
        raise ConfigError(
            "base_dir is set by datagen, not by the file", path="base_dir", fix="remove it"
        )
    if output:
        existing = data.get("output")
        data["output"] = {**(existing if isinstance(existing, dict) else {}), "uri": output}
    if cluster:
        existing = data.get("cluster")
        data["cluster"] = {**(existing if isinstance(existing, dict) else {}), **cluster}
    uri = (data.get("output") or {}).get("uri") if isinstance(data.get("output"), dict) else None
    if isinstance(uri, str):
        _refuse_near_miss(uri)
    if isinstance(uri, str) and "://" not in uri:
        # Local output is relative to where the command runs; workers get the absolute path.
        data["output"]["uri"] = str(Path(uri).expanduser().absolute())
    data["base_dir"] = str(path.resolve().parent)
    return parse_pipeline(data)


NEAR_MISS = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(/{0,3})")


def _refuse_near_miss(uri: str) -> None:
    """`s3:/bucket`, `S3://…`, `s3a://…`, `gs://…`: a URI meant, not a folder. Written as is
    it would become a local folder named `s3:` and the data would silently stay here."""
    match = NEAR_MISS.match(uri)
    if not match or (match.group(1) in ("s3", "file") and match.group(2).startswith("//")):
        return
    scheme = match.group(1)
    if scheme.lower().startswith("s3"):
        fix = "write s3://bucket/prefix (lowercase s3, two slashes)"
    else:
        fix = "output goes to s3://bucket/prefix or a local folder (./name for a folder with ':')"
    raise ConfigError(
        f"{uri!r} looks like a {scheme}: URI but is neither s3://bucket/prefix nor a folder",
        path="output.uri",
        fix=fix,
    )


ENV_KEYS = ("url", "api_key", "endpoint_url")
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(data: Any, path: str = "") -> Any:
    """Replace `${VAR}` / `${VAR:-default}` in `url` and `api_key` values anywhere in the file."""
    if isinstance(data, dict):
        return {
            k: _expand(v, f"{path}.{k}" if path else str(k))
            if k in ENV_KEYS and isinstance(v, str)
            else expand_env(v, f"{path}.{k}" if path else str(k))
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [expand_env(v, f"{path}[{i}]") for i, v in enumerate(data)]
    return data


def _expand(value: str, path: str) -> str | None:
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        raise ConfigError(
            f"environment variable {name} is not set",
            path=path,
            fix=f"export {name}=... or write ${{{name}:-default}}",
        )

    expanded = ENV_REF.sub(one, value)
    return expanded or None


def parse_pipeline(data: dict[str, Any]) -> PipelineConfig:
    """Validate a mapping, turning pydantic's errors into one ConfigError naming the paths."""
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        lines = [_explain(err) for err in exc.errors()]
        error = ConfigError("invalid pipeline file:\n" + "\n".join(lines))
        error.path = _walk(tuple(exc.errors()[0]["loc"]))[0]
        raise error from None


def _walk(loc: tuple[int | str, ...]) -> tuple[str, Any]:
    """Follow an error location through the models the way pydantic did.

    Returns the YAML path (pydantic puts a union's tag into `loc`; the file has no such key)
    and the model found there (None when the walk leaves the models).
    """
    model: Any = PipelineConfig
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            args = typing.get_args(_unwrap(model))
            model = args[0] if args else None
            continue
        tagged = _tagged_member(model, part)
        if tagged is not None:
            model = tagged
            continue
        path += f".{part}" if path else part
        fields = getattr(_unwrap(model), "model_fields", {})
        model = fields[part].annotation if part in fields else None
    return path, _unwrap(model)


def _tagged_member(model: Any, tag: str) -> Any:
    """The member of a discriminated union whose `type` literal is `tag`, if any."""
    tp = _unwrap(model)
    if not (isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union):
        return None
    for member in typing.get_args(tp):
        field = getattr(member, "model_fields", {}).get("type")
        if field is not None and tag in typing.get_args(field.annotation):
            return member
    return None


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _explain(err: Any) -> str:
    loc = tuple(err["loc"])
    kind = err["type"]
    where = _walk(loc)[0] or "(top level)"
    if kind == "extra_forbidden":
        fields = getattr(_walk(loc[:-1])[1], "model_fields", {})
        allowed = [k for k, f in fields.items() if not f.exclude]
        near = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean '{near[0]}'? " if near else ""
        return f"- {where}: unknown key. fix: {hint}allowed keys here: {', '.join(allowed)}"
    if kind == "missing":
        return f"- {where}: required key is missing. fix: add '{loc[-1]}:'"
    if kind == "union_tag_invalid":
        ctx = err.get("ctx", {})
        return f"- {where}: unknown type {ctx.get('tag')!r}. fix: use one of {ctx.get('expected_tags')}"
    if kind == "union_tag_not_found":
        return f"- {where}: no 'type:' key. fix: add 'type:' ({err.get('ctx', {}).get('discriminator')})"
    value = err.get("input")
    shown = "" if isinstance(value, dict | list) else f" (got {value!r})"
    return f"- {where}: {err['msg']}{shown}"
