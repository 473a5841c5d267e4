"""Serving the bundled sites on 127.0.0.1 (a free port), and resolving `site://` URLs to it.

Each browser-owning worker runs its own server, so bundled sites work the same on a laptop
and on a remote cluster whose workers have the repository.
"""

from __future__ import annotations

import functools
import http.server
import sys
import threading
from pathlib import Path
from typing import Any

from datagen.source.readers import BUNDLED_SITES, SITE_SCHEME


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request on the worker's stderr is noise


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that closed a context mid-download is normal here, not an error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class SiteServer:
    """A static file server over a sites folder, on its own thread. Use as a context manager."""

    def __init__(self, root: Path = BUNDLED_SITES) -> None:
        self.root = Path(root)
        handler = functools.partial(_QuietHandler, directory=str(self.root))
        self._server = _QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="datagen-sites", daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/"

    @property
    def origin(self) -> str:
        """`127.0.0.1:PORT`, as the URL guard's allow list takes it."""
        return f"127.0.0.1:{self._server.server_port}"

    def resolve(self, url: str) -> str:
        """`site://todo/` → `http://127.0.0.1:PORT/todo/`; other URLs unchanged."""
        if url.startswith(SITE_SCHEME):
            return self.base_url + url[len(SITE_SCHEME) :].lstrip("/")
        return url

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> SiteServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
