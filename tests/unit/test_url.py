"""datagen.url, the one URL module (issue 37 item 4): parsing, default ports, origins, pages,
credentials, and sites by the Public Suffix List's bundled copy, never fetched."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from datagen.url import (
    DEFAULT_PORTS,
    BadUrl,
    hostname,
    is_local_host,
    is_web,
    netloc,
    origin,
    origin_text,
    page_of,
    path_of,
    site_of,
    split,
    split_url,
    without_userinfo,
)

PACKAGE = Path(__file__).resolve().parents[2] / "datagen"


@pytest.mark.parametrize(
    ("host", "site"),
    [
        ("app.example.com", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("alice.github.io", "alice.github.io"),  # the list's private section: a tenant each
        ("x.alice.github.io", "alice.github.io"),
        ("alice.myshopify.com", "alice.myshopify.com"),  # not in the old hand-written list
        ("school.k12.ca.us", "school.k12.ca.us"),  # k12.ca.us is a suffix: no wider site
        ("a.school.k12.ca.us", "school.k12.ca.us"),
        ("shop.city.kyoto.jp", "city.kyoto.jp"),
        ("github.io", "github.io"),  # a public suffix itself: its own site
        ("co.uk", "co.uk"),
        ("a.b.intranet.corp", "intranet.corp"),  # an unknown TLD: the last two labels
        ("shop.test", "shop.test"),
        ("127.0.0.1", "127.0.0.1"),
        ("10.0.0.5", "10.0.0.5"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("localhost", "localhost"),
        ("WWW.Example.COM.", "example.com"),
    ],
)
def test_site_of(host: str, site: str) -> None:
    assert site_of(host) == site


def test_sites_the_issue_names() -> None:
    assert site_of("alice.github.io") != site_of("bob.github.io")
    assert site_of("a.example.co.uk") == site_of("b.example.co.uk") == "example.co.uk"
    # k12.ca.us does not widen a site: two schools are two sites, not one "ca.us"
    assert site_of("a.k12.ca.us") != site_of("b.k12.ca.us")
    assert site_of("x.example.ca.us") != site_of("y.other.ca.us")


def test_the_suffix_list_is_read_from_the_package_never_fetched() -> None:
    """In a fresh interpreter whose sockets and resolver refuse: the list loads (from the file
    the package ships) and answers; publicsuffixlist's updater (the only code of it that
    downloads) is never imported."""
    script = """
import socket, sys
def refuse(*args, **kwargs):
    raise AssertionError("network use while loading the suffix list")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.getaddrinfo = refuse
socket.create_connection = refuse
from datagen.url import site_of, _suffix_list
import publicsuffixlist
assert site_of("alice.github.io") == "alice.github.io"
assert site_of("a.b.example.co.uk") == "example.co.uk"
assert _suffix_list().privatesuffix("x.k12.ca.us") == "x.k12.ca.us"
assert "publicsuffixlist.update" not in sys.modules
assert "tldextract" not in sys.modules and "requests" not in sys.modules
print("ok", publicsuffixlist.PSLFILE)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    shipped = Path(done.stdout.removeprefix("ok ").strip())
    assert shipped.parent.name == "publicsuffixlist" and shipped.is_file()


def test_split_url_and_origin() -> None:
    assert split_url("HTTPS://Example.COM:8443/x") == ("https", "example.com", 8443)
    assert split_url("http://[::1]:8000/") == ("http", "::1", 8000)
    assert split_url("about:blank") == ("about", "", None)
    for bad in ("http://[::1/", "http://h:99999/", "http://h:port/", "http://999.1.1.1/"):
        with pytest.raises(BadUrl):
            split_url(bad)
    assert origin("http://a.example.com/x") == ("http", "a.example.com", 80)
    assert origin("https://a.example.com./x") == ("https", "a.example.com", 443)
    assert origin("wss://h/socket") == ("wss", "h", 443)
    assert origin("http://h:99999/") == ("", "", 0)
    assert origin("ftp://h/") == ("ftp", "h", 0)


def test_one_default_ports_table() -> None:
    assert DEFAULT_PORTS == {"http": 80, "ws": 80, "https": 443, "wss": 443}
    defined = [
        path
        for path in PACKAGE.rglob("*.py")
        if "DEFAULT_PORTS = " in path.read_text() or "DEFAULT_PORTS: " in path.read_text()
    ]
    assert defined == [PACKAGE / "url.py"]


def test_no_module_but_url_parses_urls() -> None:
    """urlsplit/urlparse/urlunsplit live in datagen/url.py only: every other module asks it."""
    users = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "urllib.parse":
                names = {a.name for a in node.names}
                if names & {"urlsplit", "urlparse", "urlunsplit", "urlunparse"}:
                    users.append(path.relative_to(PACKAGE).as_posix())
    assert users == ["url.py"]


def test_url_is_the_ground_floor() -> None:
    """datagen.url imports no other datagen module (every layer may import it)."""
    tree = ast.parse((PACKAGE / "url.py").read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not [m for m in imported if m == "datagen" or m.startswith("datagen.")]


def test_pages_and_parts() -> None:
    assert page_of("http://A.example:80") == "http://a.example/"
    assert page_of("http://a.example/x?q=1#frag") == "http://a.example/x?q=1"
    assert page_of("http://[::1]:8000/a#b") == "http://[::1]:8000/a"
    assert page_of("about:blank#x") == "about:blank"
    assert page_of("http://h:99999/#x") == "http://h:99999/"
    assert is_web("https://h/") and not is_web("ws://h/") and not is_web("http://[::1/")
    assert netloc("http://user:pw@Example.com:81/x") == "example.com:81"
    assert netloc("http://[::1/") == ""
    assert hostname("http://user@[::1]:80/") == "::1" and hostname("http://[::1/") == ""
    assert path_of("https://h/a/b?c") == "/a/b" and path_of("http://[::1/") == ""
    assert origin_text("https://h:8443/a") == "https://h:8443"
    assert origin_text("http://[::1/x") == "http://[::1/x"
    with pytest.raises(BadUrl, match="Port"):
        split("http://h:99999/")


def test_userinfo() -> None:
    assert without_userinfo("http://u%40x:p@h:8000/v1") == ("http://h:8000/v1", "u%40x", "p")
    assert without_userinfo("http://h:8000") == ("http://h:8000", None, None)


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("[::1]", True),
        ("10.0.0.5", True),
        ("localhost", True),
        ("app.localhost", True),
        ("intranet", True),
        ("example.com", False),
        ("alice.github.io", False),
    ],
)
def test_is_local_host(host: str, local: bool) -> None:
    assert is_local_host(host) is local
