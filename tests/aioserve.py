"""An aiohttp application served on 127.0.0.1 from a thread and event loop of its own, for
tests whose pages need what a stdlib server lacks (WebSockets, many routes)."""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web


class LoopServer:
    """Subclasses add their routes in `routes`; `port` is set once serving; `close()` ends it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait(10)

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        self.routes(app)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
