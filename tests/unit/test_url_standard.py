"""Hosts read as the URL Standard (and Chromium) reads them (issue 42, item 6): trailing dots
on numeric hosts, fullwidth digits and dots, ideographic full stops, percent-encoded hosts,
`localhost.` and backslashes in special URLs all name the address Chromium loads, so the
static check blocks them, `validate` warns, and explore never picks such a link.
tests/integration/test_url_standard.py holds the same parser to Chromium's own `new URL()`."""

from __future__ import annotations

import pytest

from datagen.browser.guard import UrlGuard
from datagen.url import BadUrl, hostname, netloc, split_url

FW = str.maketrans("0123456789.", "０１２３４５６７８９．")  # fullwidth digits and full stop

# Each one a host Chromium loads at a non-public address; Python's urlsplit read them as a
# name (or no host at all), so `check_static` let them through.
SPELLINGS = {
    "http://169.254.169.254./latest/meta-data/": "169.254.169.254",
    "http://2852039166./": "169.254.169.254",
    "http://0xA9FEA9FE./": "169.254.169.254",
    "http://" + "169.254.169.254".translate(FW) + "/": "169.254.169.254",
    "http://" + "127.0.0.1".translate(FW) + ":8000/": "127.0.0.1",
    "http://169\u3002254\u3002169\u3002254/": "169.254.169.254",  # ideographic full stops
    "http://10\uff610\uff610\uff611/": "10.0.0.1",  # halfwidth ideographic full stops
    "http://127.0.0.1%2e/": "127.0.0.1",
    "http://%31%32%37.0.0.1/": "127.0.0.1",
    "http://localhost./": "localhost.",
    "http://LocalHost./": "localhost.",
    "http:\\\\169.254.169.254\\latest": "169.254.169.254",
    "http:/\\169.254.169.254/": "169.254.169.254",
    "http:169.254.169.254/": "169.254.169.254",
    "https:////10.0.0.1/": "10.0.0.1",
}


@pytest.mark.parametrize("url", SPELLINGS)
def test_every_spelling_of_a_private_address_is_read_as_chromium_reads_it(url: str) -> None:
    assert split_url(url)[1] == SPELLINGS[url]
    reason = UrlGuard().check_static(url)
    assert reason is not None and "is not a public address" in reason, (url, reason)


def test_a_backslash_ends_the_authority_as_in_chromium() -> None:
    """`http://example.com\\@169.254.169.254/` is example.com to Chromium (path `/@169…`):
    a name, not the metadata address Python's parser read."""
    assert split_url("http://example.com\\@169.254.169.254/") == ("http", "example.com", None)
    assert UrlGuard().check_static("http://example.com\\@169.254.169.254/") is None


def test_names_and_ports_as_chromium_writes_them() -> None:
    assert split_url("http://b\u00fccher.de/") == ("http", "xn--bcher-kva.de", None)
    assert split_url("https://u:p@EXAMPLE.com:8443/x") == ("https", "example.com", 8443)
    assert split_url("http://h:/") == ("http", "h", None)
    assert split_url("ws://[::FFFF:169.254.169.254]/") == ("ws", "::ffff:a9fe:a9fe", None)
    assert hostname("http://2852039166./") == "169.254.169.254"
    assert netloc("http://2852039166.:8080/") == "169.254.169.254:8080"


@pytest.mark.parametrize(
    "url",
    ["http://1.2.3.08/", "http://4294967296/", "http://x.0x/", "http://%zz/", "http://a%00b/"],
)
def test_hosts_the_url_standard_refuses_are_bad_urls(url: str) -> None:
    with pytest.raises(BadUrl, match="cannot parse"):
        split_url(url)
