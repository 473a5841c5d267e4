"""Why a start URL did not load, from what Chromium, Playwright and the egress proxy saw.

Session.goto ─► (Playwright's error | the main document's status, the proxy's refusal)
             ─► NavigationFailed(reason) ─► a `task` reject in the pipeline
"""

from __future__ import annotations

import re

from datagen.browser.egress import EgressProxy
from datagen.config.urls import strip_credentials
from datagen.records import RejectReason

# Chromium's network errors that say the host was never reached, by the reason they become
NET_ERRORS = {
    "ERR_NAME_NOT_RESOLVED": RejectReason.DNS_FAILED,
    "ERR_NAME_RESOLUTION_FAILED": RejectReason.DNS_FAILED,
    "ERR_CONNECTION_REFUSED": RejectReason.UNREACHABLE,
    "ERR_CONNECTION_FAILED": RejectReason.UNREACHABLE,
    "ERR_CONNECTION_TIMED_OUT": RejectReason.UNREACHABLE,
    "ERR_ADDRESS_UNREACHABLE": RejectReason.UNREACHABLE,
    "ERR_ADDRESS_INVALID": RejectReason.UNREACHABLE,
    "ERR_INTERNET_DISCONNECTED": RejectReason.UNREACHABLE,
}
NET_ERROR = re.compile(r"net::(ERR_[A-Z_]+)")
# Playwright's "Cannot navigate to invalid URL": Chromium's parser refused what Python's took
INVALID_URL = "invalid URL"


class NavigationFailed(Exception):
    """The start URL could not be loaded; `reason` is its reject: `blocked_url` (the guard),
    `bad_url` (it does not parse), `dns_failed`, `unreachable` or `navigation_failed` (an HTTP
    error, anything else)."""

    def __init__(self, message: str, reason: RejectReason = RejectReason.NAVIGATION_FAILED) -> None:
        super().__init__(strip_credentials(message))  # a reject's detail: kept and printed
        self.reason = reason

    @property
    def blocked(self) -> bool:
        return self.reason is RejectReason.BLOCKED_URL


def navigation_failure(
    url: str,
    exc: Exception | None,
    answers: list[tuple[int, str]],
    last: str,
    began: float,
    egress: EgressProxy | None,
) -> NavigationFailed:
    """Why `url` did not load. `answers`: the main document's (status, the proxy's reason or "")
    responses; `last`: the last main-document request (redirect hops included); `began`: when
    the load started (the proxy's refusals since then count)."""
    refusal = egress.refusal(last, since=began) if egress is not None else None
    if answers and answers[-1][0] >= 400:
        status, proxy = answers[-1]
        if proxy and refusal is not None:  # the proxy's own answer, not the site's
            return NavigationFailed(f"{url}: {refusal.detail}", refusal.reason)
        return NavigationFailed(f"{url}: HTTP {status}")
    text = str(exc).splitlines()[0] if exc is not None else ""
    if INVALID_URL in text:  # Python's parser let it through, Chromium's did not
        return NavigationFailed(f"{url[:300]}: {text}", RejectReason.BAD_URL)
    code = NET_ERROR.search(text)
    if code and code.group(1) in NET_ERRORS:
        return NavigationFailed(f"{url}: {text}", NET_ERRORS[code.group(1)])
    if code and code.group(1) == "ERR_TUNNEL_CONNECTION_FAILED" and refusal is not None:
        return NavigationFailed(f"{url}: {refusal.detail}", refusal.reason)
    return NavigationFailed(f"{url}: {text}")
