"""Checks of what a pipeline file points at, run before any Dask process or browser starts.

    PipelineConfig ─► preflight() ─► None, or a ConfigError naming the key and the fix

The file itself is checked by `config.load_pipeline`; these checks look at the machine: the
output location, the scheduler's address, the dashboard's, and the browser executable. Each
takes well under a second when things are right and fails in seconds when they are not (an
unreachable scheduler used to cost Dask's 30 s connect timeout and a traceback).
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import subprocess
from pathlib import Path

from datagen.config import PipelineConfig, split_host_port
from datagen.errors import BrowserUnavailable, ConfigError

CONNECT_TIMEOUT_S = 5.0
VERSION_TIMEOUT_S = 20.0  # a cold start of a browser binary on a loaded machine
BROWSER_NAMES = ("Chromium", "Google Chrome", "Chrome for Testing", "HeadlessChrome")


def preflight(config: PipelineConfig) -> None:
    """Every check, cheapest first; raises on the first problem."""
    check_output(config)
    if config.cluster.address:
        check_scheduler(config.cluster.address)
    else:
        check_dashboard(config.cluster.dashboard, config.cluster.expose)
        # On a LocalCluster the workers are this machine: its browser is theirs. A remote
        # cluster's workers have their own, checked there when they start.
        check_browser(config.browser.executable)


def check_output(config: PipelineConfig) -> None:
    """A local output must be (or be creatable as) a writable folder; an S3 output's bucket
    must exist, and this machine's credentials list its prefix."""
    uri = config.output.uri
    if uri.startswith("s3://"):
        check_s3_output(config)
        return
    path = Path(uri.removeprefix("file://"))
    if path.exists() and not path.is_dir():
        raise ConfigError(
            f"{path} exists and is a file, not a folder",
            path="output.uri",
            fix="choose a folder (new or empty) with --output",
        )
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(
            f"{existing} is a file, so {path} cannot be created",
            path="output.uri",
            fix="choose a folder (new or empty) with --output",
        )
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{existing} is not writable by this user",
            path="output.uri",
            fix="choose a folder you can write, or fix its permissions",
        )


def check_s3_output(config: PipelineConfig) -> None:
    """One listing of the output's prefix and one probe object written there, with a client
    that gives up in seconds (before: a missing bucket was a NoSuchBucket traceback, after the
    retries of every request; credentials that could list but not write passed)."""
    from datagen.sink.probe import (
        NO_BUCKET,
        UNREACHABLE,
        endpoint_of,
        s3_listing_problem,
        s3_write_problem,
    )

    problem = s3_listing_problem(config.output)
    if problem is None:
        unwritable = s3_write_problem(config.output)
        if unwritable is None:
            return
        raise ConfigError(
            f"cannot write to {config.output.uri} at {endpoint_of(config.output)} with this "
            f"machine's credentials ({unwritable}); they may list it, but a run writes there",
            path="output.uri",
            fix="use credentials that may write that prefix (s3:PutObject), or choose another "
            "output with --output",
        )
    kind, detail = problem
    endpoint = endpoint_of(config.output)
    if kind == NO_BUCKET:
        bucket = config.output.uri.removeprefix("s3://").split("/", 1)[0]
        raise ConfigError(
            f"bucket {bucket!r} does not exist at {endpoint} ({detail})",
            path="output.uri",
            fix="create it, or correct the bucket (or output.endpoint_url / AWS_ENDPOINT_URL_S3)",
        )
    if kind == UNREACHABLE:
        raise ConfigError(
            f"cannot reach the S3 endpoint {endpoint} ({detail})",
            path="output.uri",
            fix="correct output.endpoint_url (or AWS_ENDPOINT_URL_S3), or check the network",
        )
    raise ConfigError(
        f"cannot list {config.output.uri} at {endpoint} with this machine's credentials ({detail})",
        path="output.uri",
        fix="check the credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID, the instance role) and "
        "that they may list, read and write that prefix",
    )


def check_scheduler(address: str) -> None:
    """Something accepts connections at the scheduler's address (Dask says more later)."""
    host, port = split_host_port(address.partition("://")[2] or address)
    assert port is not None  # the config validator made sure
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except socket.gaierror:
        raise ConfigError(
            f"scheduler host {host!r} does not resolve",
            path="cluster.address",
            fix="correct the address, or remove it to start a local cluster",
        ) from None
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise ConfigError(
            f"cannot reach the scheduler at {address} ({why})",
            path="cluster.address",
            fix="start `dask scheduler` there (and its workers), correct the address, or "
            "remove it to start a local cluster",
        ) from None


def check_dashboard(dashboard: str, expose: bool = False) -> None:
    """The dashboard's host is an address of this machine (a busy port is fine: Dask then
    picks a free one and the printed link says which), and loopback unless `expose` (the
    dashboard has no access control: `:0` bound every interface)."""
    host, port = split_host_port(dashboard)
    assert port is not None
    _listen(dashboard, host, port)
    if not expose and not _loopback(host):
        where = "every interface" if host in ("", "0.0.0.0", "::") else repr(host)
        raise ConfigError(
            f"{dashboard!r} listens on {where}, not on this machine only, and the dashboard has "
            "no access control",
            path="cluster.dashboard",
            fix="write 127.0.0.1:8787, or set cluster.expose: true and put access control in "
            "front of it",
        )


def _loopback(host: str) -> bool:
    """Is `host` this machine only (localhost, 127.0.0.0/8, ::1)? An empty host is every
    interface (Dask binds `:8787` to all)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listen(dashboard: str, host: str, port: int) -> None:
    """Can this machine listen on host:port? ConfigError saying why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host or "0.0.0.0", port))
        except socket.gaierror:
            raise ConfigError(
                f"dashboard host {host!r} does not resolve",
                path="cluster.dashboard",
                fix="write 127.0.0.1:8787, or an address of this machine",
            ) from None
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return
            raise ConfigError(
                f"cannot listen on {dashboard} ({exc.strerror or exc})",
                path="cluster.dashboard",
                fix="write 127.0.0.1:8787, or an address of this machine",
            ) from None


def check_browser(configured: str | None) -> None:
    """The executable exists, runs, and says it is Chromium."""
    from datagen.browser.launch import INSTALL_HINT, SYSTEM_CHROMIUM, find_executable

    try:
        executable = find_executable(configured, _playwright_own() if not configured else None)
    except BrowserUnavailable as exc:
        problem, _, hint = str(exc).partition("; ")  # "what is wrong; install a Chromium: …"
        key = "browser.executable" if configured else ""
        raise ConfigError(problem, path=key, fix=hint or INSTALL_HINT) from None
    if os.sep in executable or Path(executable).exists():
        executable = os.path.abspath(executable)  # run the file named, not one on PATH
    key = "browser.executable" if configured else ""
    fix = "set browser.executable to a Chromium binary, e.g. " + SYSTEM_CHROMIUM[0]
    if not os.access(executable, os.X_OK):
        raise ConfigError(f"{executable} is not executable", path=key, fix=fix)
    try:
        done = subprocess.run(
            [executable, "--version"],
            capture_output=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"{executable} --version did not answer in {VERSION_TIMEOUT_S:g}s", path=key, fix=fix
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{executable} cannot run ({exc.strerror or exc})", path=key, fix=fix
        ) from None
    said = (done.stdout or b"").decode(errors="replace").strip()
    if done.returncode != 0 or not any(name in said for name in BROWSER_NAMES):
        shown = said.splitlines()[0][:120] if said else f"nothing, exit code {done.returncode}"
        raise ConfigError(
            f"{executable} is not Chromium (its --version said: {shown})", path=key, fix=fix
        )


def _playwright_own() -> str | None:
    """Playwright's bundled Chromium, when one is installed (asking its driver costs ~0.5 s,
    so only when no system Chromium is found first)."""
    from datagen.browser.launch import SYSTEM_CHROMIUM

    if any(Path(p).is_file() for p in SYSTEM_CHROMIUM):
        return None
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            return playwright.chromium.executable_path
    except Exception:  # no driver, no browser: find_executable says what to install
        return None
