"""Browser memory per concurrent session.

One `BrowserHost` (the pipeline's browser, Debian's Chromium) opens N sessions at once, each a
fresh context whose page has loaded a bundled site, for N in `--sessions`. With all N open it
reads the memory of the browser's processes: USS (pages only this process has: what closing
it would free), PSS (shared pages split among the processes sharing them: the fair total) and
RSS (which counts shared pages, e.g. Chromium's code, once per process).
The per-session cost is the slope of a least-squares line over N; the intercept is the
browser with nothing open.

    python -m bench.memory
    python -m bench.memory --sessions 1 4 8 16 32 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from contextlib import AsyncExitStack

import psutil

from datagen.browser.host import BrowserHost
from datagen.config import BrowserConfig
from datagen.source.readers import BUNDLED_SITES, list_sites
from datagen.source.serve import SiteServer


def pss_rss_mb(host: BrowserHost) -> tuple[float, float]:
    pss = rss = 0
    for process in host._browser_processes():  # the processes memory_mb() sums
        with contextlib.suppress(psutil.Error):
            info = process.memory_full_info()
            pss, rss = pss + info.pss, rss + info.rss
    return pss / 2**20, rss / 2**20


def slope(xs: list[int], ys: list[float]) -> tuple[float, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return b, my - b * mx


async def measure(counts: list[int]) -> list[dict[str, float]]:
    server = SiteServer(BUNDLED_SITES)
    sites = list_sites(BUNDLED_SITES)
    host = BrowserHost(BrowserConfig(), allow=[server.origin])
    await host.start()
    out = []
    try:
        for n in counts:
            async with AsyncExitStack() as stack:
                sessions = [await stack.enter_async_context(host.session()) for _ in range(n)]
                await asyncio.gather(
                    *(
                        s.goto(server.resolve(f"site://{sites[i % len(sites)]}/"))
                        for i, s in enumerate(sessions)
                    )
                )
                await asyncio.sleep(1.0)  # let renderers settle after load
                uss, (pss, rss) = host.memory_mb(max_age_s=0), pss_rss_mb(host)
                out.append(
                    {
                        "sessions": n,
                        "uss_mb": round(uss, 1),
                        "pss_mb": round(pss, 1),
                        "rss_mb": round(rss, 1),
                    }
                )
                print(f"{n:3d} sessions open: USS {uss:7.1f} MB   PSS {pss:7.1f} MB   RSS {rss:7.1f} MB", flush=True)  # fmt: skip
            await asyncio.sleep(1.0)
    finally:
        await host.close()
        server.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, nargs="*", default=[1, 2, 4, 8, 16])
    parser.add_argument("--json", help="write results here")
    args = parser.parse_args()
    rows = asyncio.run(measure(args.sessions))
    xs = [int(r["sessions"]) for r in rows]
    uss_b, uss_a = slope(xs, [r["uss_mb"] for r in rows])
    pss_b, pss_a = slope(xs, [r["pss_mb"] for r in rows])
    rss_b, rss_a = slope(xs, [r["rss_mb"] for r in rows])
    print(f"per concurrent session: USS {uss_b:.1f} MB, PSS {pss_b:.1f} MB, RSS {rss_b:.1f} MB")
    print(f"browser with no session (intercept): USS {uss_a:.1f} MB, PSS {pss_a:.1f} MB, RSS {rss_a:.1f} MB")  # fmt: skip
    if args.json:
        with open(args.json, "w") as fh:
            result = {"rows": rows, "uss_mb_per_session": round(uss_b, 1)}
            result |= {"rss_mb_per_session": round(rss_b, 1), "uss_mb_base": round(uss_a, 1)}
            result |= {"pss_mb_per_session": round(pss_b, 1), "pss_mb_base": round(pss_a, 1)}
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
