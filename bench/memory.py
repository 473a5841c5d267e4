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

import asyncio
import contextlib
import statistics
from contextlib import AsyncExitStack

import psutil

from bench.harness import parser, print_columns, write_json
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
                urls = [server.resolve(f"site://{sites[i % len(sites)]}/") for i in range(n)]
                await asyncio.gather(*(s.goto(url) for s, url in zip(sessions, urls, strict=True)))
                await asyncio.sleep(1.0)  # let renderers settle after load
                uss, (pss, rss) = host.memory_mb(max_age_s=0), pss_rss_mb(host)
                mb = {"uss_mb": uss, "pss_mb": pss, "rss_mb": rss}
                out.append({"sessions": n} | {k: round(v, 1) for k, v in mb.items()})
            await asyncio.sleep(1.0)
    finally:
        await host.close()
        server.close()
    print_columns({f"{r['sessions']:.0f} sessions open": r for r in out})
    return out


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--sessions", type=int, nargs="*", default=[1, 2, 4, 8, 16])
    args = p.parse_args()
    rows = asyncio.run(measure(args.sessions))
    xs = [int(r["sessions"]) for r in rows]
    fit = {m: statistics.linear_regression(xs, [r[f"{m}_mb"] for r in rows]) for m in ("uss", "pss", "rss")}  # fmt: skip
    print("per concurrent session: " + ", ".join(f"{m.upper()} {f.slope:.1f} MB" for m, f in fit.items()))  # fmt: skip
    print("browser with no session (intercept): " + ", ".join(f"{m.upper()} {f.intercept:.1f} MB" for m, f in fit.items()))  # fmt: skip
    result = {"rows": rows} | {f"{m}_mb_per_session": round(f.slope, 1) for m, f in fit.items()}
    write_json(args.json, result | {f"{m}_mb_base": round(f.intercept, 1) for m, f in fit.items()})


if __name__ == "__main__":
    main()
