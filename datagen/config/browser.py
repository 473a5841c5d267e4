"""`browser:`: Chromium through Playwright: what a screenshot looks like, how long an action
may take, what the URL guard lets through, and when a browser or a page uses too much memory.

    browser: ─► BrowserConfig ─► datagen.browser (BrowserHost, Session, UrlGuard)
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from datagen.config.allow import allow_entry_problem
from datagen.config.base import NEUTRAL, Section
from datagen.config.paths import PATH_MAX, check_path_length, path_schema

# Chromium switches that would override the egress proxy (Chromium keeps a switch's last value)
PROXY_SWITCHES = frozenset(
    {
        "--proxy-server",
        "--proxy-bypass-list",
        "--no-proxy-server",
        "--proxy-pac-url",
        "--proxy-auto-detect",
        "--winhttp-proxy-resolver",
    }
)


class Viewport(Section):
    """The page's size in CSS pixels."""

    width: int = Field(1280, ge=200, le=7680, description="CSS px")
    height: int = Field(800, ge=200, le=4320, description="CSS px")


class BrowserConfig(Section):
    """Chromium through Playwright."""

    executable: str | None = Field(
        None,
        max_length=PATH_MAX - 1,
        description="Chromium binary; default: Playwright's own if installed, else "
        "/usr/bin/chromium; a path of at most 4,095 bytes, each part at most 255",
        json_schema_extra={**NEUTRAL, **path_schema()},
    )
    headless: bool = Field(True, description="run without a window")
    viewport: Viewport = Field(default_factory=Viewport)
    device_scale_factor: float = Field(1.0, ge=0.5, le=4.0, description="screenshot px per CSS px")
    image_format: Literal["png", "jpeg", "webp"] = Field("jpeg", description="screenshot encoding")
    image_quality: int = Field(80, ge=1, le=100, description="jpeg/webp quality")
    # Not neutral: an expired navigation or action limit is written into the step's error text.
    navigation_timeout_s: float = Field(15.0, gt=0, le=600, description="page load limit")
    action_timeout_s: float = Field(5.0, gt=0, le=600, description="limit for one action")
    settle_ms: int = Field(
        120,
        ge=0,
        le=10_000,
        description="pause after an action for the page to react (the settle before the next "
        "observation also waits for what the action started: a navigation, a form submission, "
        "timers, fetches, transitions; docs/observation.md)",
    )
    settle_quiet_ms: int = Field(
        50,
        ge=0,
        le=5_000,
        description="before each observation: no DOM change and no new request for this long "
        "(then a painted frame), so the screenshot and the element boxes show one moment; it "
        "ends sooner once the page has nothing scheduled that could change it "
        "(docs/observation.md)",
    )
    settle_timeout_ms: int = Field(
        1500,
        ge=0,
        le=30_000,
        description="give up waiting for a quiet page after this (pages that animate or poll); "
        "boxes that still move across the screenshot are flagged and not grounded",
    )
    first_settle_timeout_ms: int = Field(
        4000,
        ge=0,
        le=60_000,
        description="the same limit for an episode's first observation (apps that render "
        "after load: loaders, data fetches); the larger of the two applies. A settle that "
        "gives up is recorded (settle_timed_out) and its observation is not stable",
    )
    consent: Literal["reject", "accept", "leave"] = Field(
        "reject",
        description="cookie-consent dialogs, before an episode's first observation: reject "
        "(the dialog's reject-all / essential-only button), accept (its accept-all) or leave "
        "(left on the page, over the app); recorded as the episode's consent_action",
    )
    extra_args: list[str] = Field(default_factory=list, description="more Chromium switches")
    recycle_after_episodes: int = Field(
        200,
        ge=1,
        le=1_000_000,
        description="restart the browser between shards once it has run this many episodes (leaks)",
        json_schema_extra=NEUTRAL,
    )
    memory_limit_mb: int = Field(
        6000,
        ge=256,
        le=1_048_576,
        description="new episodes wait while the browser's own memory (USS) is above this",
        json_schema_extra=NEUTRAL,
    )
    page_memory_mb: int = Field(
        2048,
        ge=256,
        le=1_048_576,
        description="an episode whose page holds more memory than this (its renderer "
        "processes' private memory: JS heap, ArrayBuffers, DOM, canvases, WebAssembly) ends as "
        "a page_memory reject, its renderer stopped; checked at every step and every 0.25 s",
        json_schema_extra=NEUTRAL,
    )
    url_guard: bool = Field(
        True, description="block non-public addresses and non-web schemes (see browser.allow)"
    )
    allow: list[str] = Field(
        default_factory=list,
        description="hosts, host:port or CIDRs the guard lets through (the bundled sites are added by datagen; localhost, 127.0.0.1 and ::1 cover each other)",
    )

    @field_validator("executable")
    @classmethod
    def _check_executable(cls, path: str | None) -> str | None:
        return None if path is None else check_path_length(path, "browser.executable")

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
        switched = [a for a in self.extra_args if a.split("=", 1)[0] in PROXY_SWITCHES]
        if self.url_guard and switched:
            raise ValueError(
                f"extra_args {switched[0]!r} would route the browser around the egress proxy, "
                "the URL guard of everything a page loads. fix: remove it (open what the "
                "pipeline needs in browser.allow), or set url_guard: false"
            )
        return self


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
