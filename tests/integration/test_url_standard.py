"""datagen's reading of a URL's host and port is Chromium's (issue 42, item 6): each URL below
goes through `new URL()` in the browser and through `split_url`, and both give the same host
and port, or both refuse it."""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import async_playwright

from datagen.url import BadUrl, split_url
from tests.helpers import CHROMIUM_ARGS
from tests.unit.test_url_standard import SPELLINGS

pytestmark = pytest.mark.browser

OTHERS = [
    "http://example.com\\@169.254.169.254/",
    " http://169.254.\t169.254/",
    "http://b\u00fccher.de/",
    "http://\u24b6.com/",
    "http://ex\u00adample.com/",
    "http://a_b.example/",
    "http://169.254.169.254../",
    "http://0x/",
    "http://127.1/",
    "http://0300.0250.0.1/",
    "http://4294967295/",
    "http://[::ffff:169.254.169.254]/",
    "http://u:p@h:81/x",
    "http://h:/",
    "ws://2852039166./",
    "http://\u3002/",
    # refused by both
    "http://1.2.3.08/",
    "http://09.1/",
    "http://1.2.3.4.5/",
    "http://999.1.1.1/",
    "http://4294967296/",
    "http://x.0x/",
    "http://a^b/",
    "https://a]b/",
    "http://[::1%25eth0]/",
    "http://%zz/",
    "http://a%00b/",
    "http://h:99999/",
]
READ = """u => {
  try { const x = new URL(u); return x.hostname.replace(/^\\[|\\]$/g, '') + '|' + x.port; }
  catch (e) { return 'refused'; }
}"""


def ours(url: str) -> str:
    """`split_url`'s reading as `READ` writes Chromium's: host|port, the default port empty."""
    try:
        scheme, host, port = split_url(url)
    except BadUrl:
        return "refused"
    default = {"http": 80, "ws": 80, "https": 443, "wss": 443}[scheme]
    return f"{host}|{'' if port in (None, default) else port}"


async def chromium_reads(executable: str, urls: list[str]) -> list[str]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            return [str(await page.evaluate(READ, url)) for url in urls]
        finally:
            await browser.close()


def test_split_url_reads_hosts_as_chromium_does(chromium: str) -> None:
    urls = [*SPELLINGS, *OTHERS]
    theirs = asyncio.run(chromium_reads(chromium, urls))
    differ = [(u, t, ours(u)) for u, t in zip(urls, theirs, strict=True) if ours(u) != t]
    assert not differ
