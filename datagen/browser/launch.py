"""Finding and launching Chromium: the executable, and the switches that keep it quiet.

Why the switches: on these closed networks Chromium's background services try to reach
Google hosts at every start and get refused; and Debian's Chromium in new-headless mode
starts a hidden omnibox-popup renderer per context unless the WebUIOmnibox* features are
disabled, which halves memory per context. Playwright passes its own `--disable-features=`
list and a second such switch would replace it, so the two lists are merged.

With the egress proxy (the URL guard on), WebRTC may use only what goes through the proxy
(`PROXIED_ONLY_SWITCHES`): UDP never does, and the URL guard never sees it, so a page's STUN
or TURN server, or a remote ICE candidate, on an address the guard refuses would otherwise be
sent packets directly (tests/integration/test_egress_udp.py). What else is not an HTTP request
needs nothing more: WebTransport (HTTP/3, UDP) fails while a proxy is configured, and Chromium
here acts on no `dns-prefetch` or `preconnect` hint; the same test watches both.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from pathlib import Path

from datagen.errors import BrowserUnavailable

QUIET_SWITCHES = [
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-gpu",
]
# No UDP from WebRTC: no STUN, no TURN over UDP, no ICE checks, no host candidates (nor their
# mDNS names announced on the network); TURN over TCP becomes a CONNECT the egress proxy vets.
# Chrome reads the first switch, the headless shell (Playwright's own build) the second.
PROXIED_ONLY_SWITCHES = [
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
]
# The omnibox pop-ups: see the module's docstring. AutofillServerCommunication: on every page
# with a form, Chromium asks content-autofill.googleapis.com about its fields (67 requests in
# 200 steps on the bundled sites, each a name the egress proxy resolves and refuses).
OUR_DISABLED_FEATURES = [
    "WebUIOmniboxPopup",
    "WebUIOmniboxAimPopup",
    "WebUIOmniboxFullPopup",
    "AutofillServerCommunication",
]
SYSTEM_CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
INSTALL_HINT = (
    "install a Chromium: as root `apt-get install -y chromium` (Debian/Ubuntu), or "
    "`playwright install chromium` where downloads are allowed, or set browser.executable"
)


def find_executable(configured: str | None, playwright_own: str | None) -> str:
    """The configured binary, else Playwright's own if installed, else the system Chromium."""
    if configured:
        if not Path(configured).is_file():
            raise BrowserUnavailable(
                f"browser.executable {configured!r} does not exist; {INSTALL_HINT}"
            )
        return configured
    if playwright_own and Path(playwright_own).is_file():
        return playwright_own
    for candidate in (*SYSTEM_CHROMIUM, shutil.which("chromium") or ""):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise BrowserUnavailable(f"no Chromium found; {INSTALL_HINT}")


@functools.lru_cache(maxsize=1)
def playwright_disabled_features() -> tuple[str, ...]:
    """The feature list Playwright passes in its own `--disable-features=` switch.

    Read from the installed driver's source rather than copied, so that a Playwright upgrade
    cannot silently drop its entries. Empty when it cannot be found (we then leave
    Playwright's switch alone and add ours separately, which loses its list: logged by caller).
    """
    import playwright

    root = Path(playwright.__file__).parent / "driver" / "package" / "lib"
    for path in (root / "coreBundle.js", root / "server" / "chromium" / "chromiumSwitches.js"):
        if not path.is_file():
            continue
        match = re.search(
            r"disabledFeatures\s*=\s*\[(.*?)\]", path.read_text(encoding="utf-8"), re.S
        )
        if match:
            body = re.sub(r"//[^\n]*", "", match.group(1))
            return tuple(re.findall(r"""["']([A-Za-z0-9_]+)["']""", body))
    return ()


def launch_options(
    executable: str, headless: bool, extra_args: list[str], proxy: str | None = None
) -> dict[str, object]:
    """Keyword arguments for `playwright.chromium.launch`; with `proxy` (the egress proxy's
    URL) every connection goes through it, and WebRTC sends nothing that would not."""
    theirs = playwright_disabled_features()
    merged = list(dict.fromkeys([*theirs, *OUR_DISABLED_FEATURES]))
    args = [*QUIET_SWITCHES, f"--disable-features={','.join(merged)}", *extra_args]
    if proxy is not None:
        args += PROXIED_ONLY_SWITCHES  # last: a switch in extra_args cannot undo them
    ignore = [f"--disable-features={','.join(theirs)}"] if theirs else []
    # Playwright adds --no-sandbox itself (chromium_sandbox defaults to False), which root needs.
    return {
        # loopback through the proxy as well, whatever PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_
        # PROXIED_LOOPBACK says (Playwright's default, which that variable turns off)
        **({"proxy": {"server": proxy, "bypass": "<-loopback>"}} if proxy is not None else {}),
        "executable_path": executable,
        "headless": headless,
        "args": args,
        "ignore_default_args": ignore,
        # Ctrl-C reaches every process of the terminal's group, Playwright's driver too, which
        # would then close the browser under running episodes (their navigations fail as if
        # the task had). The worker closes its browser itself, when its shards have stopped.
        "handle_sigint": False,
    }
