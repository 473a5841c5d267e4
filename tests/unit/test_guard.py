"""The URL guard's decisions without a browser: localhost and the loopback addresses in
`browser.allow` name one machine; a name that does not resolve is no block."""

from __future__ import annotations

import asyncio

import pytest

from datagen.browser.guard import NameNotResolved, UrlGuard

LOOPBACK = ["http://127.0.0.1:8000/", "http://localhost:8000/", "http://[::1]:8000/"]


def check(guard: UrlGuard, url: str) -> str | None:
    return asyncio.run(guard.check(url, top_level=True))


@pytest.mark.parametrize("entry", ["localhost:8000", "127.0.0.1:8000", "[::1]:8000"])
def test_a_loopback_host_port_entry_covers_all_its_names(entry: str) -> None:
    guard = UrlGuard([entry])
    for url in LOOPBACK:
        assert check(guard, url) is None, (entry, url)
        assert guard.check_static(url) is None, (entry, url)
    for url in (u.replace(":8000", ":8001") for u in LOOPBACK):
        assert "not a public address" in (check(guard, url) or ""), (entry, url)


@pytest.mark.parametrize("entry", ["localhost", "127.0.0.1", "::1", "127.0.0.0/8"])
def test_a_loopback_host_entry_covers_all_its_names_on_any_port(entry: str) -> None:
    guard = UrlGuard([entry])
    for url in [*LOOPBACK, *(u.replace(":8000", ":9") for u in LOOPBACK)]:
        assert check(guard, url) is None, (entry, url)


def test_other_entries_do_not_open_loopback() -> None:
    guard = UrlGuard(["10.0.0.0/8", "intranet:8000"])
    for url in LOOPBACK:
        assert check(guard, url) is not None


def test_a_name_without_addresses_is_not_a_block(monkeypatch: pytest.MonkeyPatch) -> None:
    guard = UrlGuard(["known-but-gone"])

    async def nothing(host: str) -> list[object]:
        return []  # what DNS says for a name it does not know (no network needed here)

    monkeypatch.setattr(guard, "_resolve", nothing)
    with pytest.raises(NameNotResolved, match=r"cannot resolve no-such-host\.invalid"):
        check(guard, "https://no-such-host.invalid/")
    with pytest.raises(NameNotResolved):
        asyncio.run(guard.vet("no-such-host.invalid", 443))
    # an allowed name is the user's to reach: no verdict, no address (the proxy dials it)
    assert asyncio.run(guard.vet("known-but-gone", 80)) == (None, [])
