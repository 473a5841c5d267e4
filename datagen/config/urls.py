"""Addresses in the pipeline file: a model server's URL (normalized, printed without its
credentials) and `host:port` pairs (the scheduler, the dashboard).

    engine.url, policy.<role>.url ─► ServerUrl ─► EngineClient;  cluster.address ─► Dask
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, PlainSerializer

from datagen.url import BadUrl, split
from datagen.url import has_userinfo as has_userinfo
from datagen.url import redact_url as redact_url
from datagen.url import strip_credentials as strip_credentials


def engine_url(url: str | None) -> str | None:
    """A server's base URL as the client joins paths to it: no trailing `/` or `/v1` (OpenAI
    clients write `http://host:8000/v1`; /health and /metrics live at the root)."""
    if url is None:
        return None
    try:
        parts = split(url.strip())
        port = parts.port
    except BadUrl as exc:
        raise ValueError(
            f"{redact_url(url)!r} is not a URL ({exc}). fix: write http://host:8000"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{redact_url(url)!r} is not an http(s)://host URL. fix: write http://host:8000"
        )
    if port == 0:
        raise ValueError(f"{redact_url(url)!r}: port 0. fix: write the server's port")
    if parts.query or parts.fragment:
        raise ValueError(
            f"{redact_url(url)!r} has a query or fragment. fix: write http://host:8000"
        )
    path = parts.path.rstrip("/").removesuffix("/v1").rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{path}"


# A model server's URL: normalized on the way in, written and printed without its credentials.
ServerUrl = Annotated[
    str | None,
    AfterValidator(engine_url),
    PlainSerializer(lambda url: redact_url(url) if url else url),
]


def split_host_port(text: str) -> tuple[str, int | None]:
    """("host", port) of `host:port`, `[v6]:port` or `:port`; port None when it is not one."""
    host, colon, port = text.strip().rstrip("/").rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        return text, None
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        return text, None
    if any(c in host for c in "/ @?#"):
        return text, None
    return host.strip("[]"), int(port)
