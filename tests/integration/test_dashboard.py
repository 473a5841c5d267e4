"""The Dask dashboard listens where `cluster.dashboard` says, this machine only by default, and
the link datagen prints is the address it listens on."""

from __future__ import annotations

import contextlib
import os
import socket
from urllib.parse import urlsplit

import psutil
import pytest

from datagen.config import ClusterConfig
from datagen.runtime.driver import connect, dashboard_link

pytestmark = pytest.mark.cluster


def listening(port: int) -> set[str]:
    """The addresses this process listens on at `port` (the LocalCluster's scheduler, and so
    its dashboard, runs in it)."""
    return {
        c.laddr.ip
        for c in psutil.Process(os.getpid()).net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == port
    }


def other_address() -> str | None:
    """An IPv4 address of this machine that is not loopback, if it has one."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return str(address.address)
    return None


def answers(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=2):
        return True
    return False


def test_the_dashboard_listens_on_loopback_by_default_and_the_link_says_so() -> None:
    config = ClusterConfig(workers=1)
    assert config.dashboard == "127.0.0.1:8787"
    with connect(config) as client:
        link = dashboard_link(client)
        parts = urlsplit(link)
        assert parts.port is not None  # 8787, or a free port when another run holds it
        bound = listening(parts.port)
        outside = other_address()
        reachable_outside = outside is not None and answers(outside, parts.port)
        reachable_here = answers("127.0.0.1", parts.port)
    assert bound == {"127.0.0.1"}, bound  # not 0.0.0.0
    assert parts.hostname == "127.0.0.1" and parts.path == "/status", link
    assert reachable_here and not reachable_outside


def test_an_exposed_dashboard_is_printed_as_exposed() -> None:
    """`0.0.0.0:port` listens on every interface: the link says 0.0.0.0, not 127.0.0.1 (what
    Dask's own link said), so whoever reads it sees that it is open."""
    with connect(ClusterConfig(workers=1, dashboard="0.0.0.0:0")) as client:
        link = dashboard_link(client)
        parts = urlsplit(link)
        assert parts.port is not None
        bound = listening(parts.port)
        dask_link = client.dashboard_link
    assert bound == {"0.0.0.0"} and parts.hostname == "0.0.0.0", (bound, link)
    assert urlsplit(dask_link).hostname == "127.0.0.1"  # why datagen prints its own
