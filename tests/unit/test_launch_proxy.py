"""The egress proxy cannot be switched off by accident: loopback goes through it whatever
Playwright's environment says, and a Chromium switch that would route around it is refused
while the URL guard is on."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from datagen.browser.launch import launch_options
from datagen.config import BrowserConfig


def test_loopback_goes_through_the_proxy_by_our_own_bypass_rule() -> None:
    options = launch_options("/usr/bin/chromium", True, [], proxy="http://127.0.0.1:9")
    # given to Playwright itself, so PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK,
    # which drops Playwright's own rule, cannot drop it
    assert options["proxy"] == {"server": "http://127.0.0.1:9", "bypass": "<-loopback>"}
    assert "proxy" not in launch_options("/usr/bin/chromium", True, [])


@pytest.mark.parametrize(
    "switch",
    [
        "--proxy-server=direct://",
        "--proxy-bypass-list=*",
        "--no-proxy-server",
        "--proxy-pac-url=http://x/p.pac",
        "--proxy-auto-detect",
    ],
)
def test_a_switch_around_the_proxy_is_refused_while_the_guard_is_on(switch: str) -> None:
    with pytest.raises(ValidationError, match="around the egress proxy"):
        BrowserConfig(extra_args=["--lang=fr", switch])
    # with the guard off there is no proxy to go around: the switch is the user's business
    assert BrowserConfig(url_guard=False, extra_args=[switch]).extra_args == [switch]


def test_other_switches_pass() -> None:
    args = ["--lang=fr", "--proxy-something-else"]
    assert BrowserConfig(extra_args=args).extra_args == args
