"""The URL guard's decisions without a browser: localhost and the loopback addresses in
`browser.allow` name one machine; a name that does not resolve is no block; IPv6 addresses
count by the IPv4 they carry; a URL that does not parse is `BadUrl`, never a crash."""

from __future__ import annotations

import asyncio
import ipaddress

import pytest

from datagen.browser.guard import NameNotResolved, UrlGuard, carried_ipv4
from datagen.url import BadUrl, split_url
from tests.helpers import EMBEDDED

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


# IPv6 addresses that carry an IPv4 one, with the metadata or a loopback address inside
@pytest.mark.parametrize("form", EMBEDDED)
def test_ipv6_forms_carrying_a_non_public_ipv4_are_blocked(form: str) -> None:
    guard = UrlGuard()
    address = EMBEDDED[form]
    for url in (f"http://[{address}]/latest/meta-data/", f"https://[{address}]:8443/"):
        assert "not a public address" in (check(guard, url) or ""), url
        assert "not a public address" in (guard.check_static(url) or ""), url
    reason, addresses = asyncio.run(guard.vet(address, 80))  # what the egress proxy asks
    assert reason is not None and addresses == []


def test_the_reason_names_the_ipv4_an_ipv6_address_carries() -> None:
    reason = check(UrlGuard(), "http://[64:ff9b::a9fe:a9fe]/")
    assert reason == (
        "64:ff9b::a9fe:a9fe, which carries 169.254.169.254, is not a public address "
        '(fix: add "[64:ff9b::a9fe:a9fe]:80" to browser.allow)'
    )


@pytest.mark.parametrize(
    "address", ["64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8", "2606:4700::1111"]
)
def test_ipv6_forms_carrying_a_public_ipv4_still_load(address: str) -> None:
    assert asyncio.run(UrlGuard().vet(address, 443)) == (None, [ipaddress.ip_address(address)])


def test_carried_ipv4() -> None:
    assert str(carried_ipv4(ipaddress.ip_address("::7f00:1"))) == "127.0.0.1"
    assert str(carried_ipv4(ipaddress.ip_address("2001:0:4136:e378:8000:63bf:5601:56fe"))) == (
        "169.254.169.1"
    )
    assert carried_ipv4(ipaddress.ip_address("2606:4700::1111")) is None
    assert carried_ipv4(ipaddress.ip_address("8.8.8.8")) is None


BAD_URLS = [
    "http://127.0.0.1:99999/",  # port out of range
    "http://[::1/",  # unclosed bracket
    "http://h:80a/",  # port not a number
    "http://[::1]:x/",
    "https://a]b/",
    "http://[not-an-address]/",
    "http://a^b/",  # Python's parser takes these two, Chromium's ("invalid URL") does not
    "http://999.1.1.1/",
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_url_that_does_not_parse_is_bad_url_not_a_crash(url: str) -> None:
    guard = UrlGuard(["127.0.0.1"])
    with pytest.raises(BadUrl, match="cannot parse"):
        check(guard, url)
    with pytest.raises(BadUrl):
        split_url(url)
    assert (guard.check_static(url) or "").startswith("cannot parse")  # for warnings: no raise
