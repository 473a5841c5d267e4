"""The engine endpoint of a run: the configured vLLM server, or a stand-in started here.

    PipelineConfig ─► engine_endpoint() ─► (config with engine.url set, what the engine is)

Readiness is checked before any worker starts, so an unreachable engine fails the run early
with the URL in the message. When the stand-in answers, that is said loudly and stored in the
manifest: its answers are a load double's, never a model's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from datagen.config import PipelineConfig
from datagen.engine.client import EngineClient, EngineError
from datagen.engine.roles import roles_for
from datagen.engine.sim import SimServer
from datagen.errors import EngineNotReady

log = logging.getLogger(__name__)


@contextlib.contextmanager
def engine_endpoint(config: PipelineConfig) -> Iterator[tuple[PipelineConfig, dict[str, Any]]]:
    """Yield the config to run with and a description of the engine (for the manifest)."""
    if not config.uses_engine:
        yield config, {}
        return
    sim = None
    if config.engine.url is None:
        sim = SimServer(config.engine.sim.model_copy()).start()
        config = config.model_copy(
            update={"engine": config.engine.model_copy(update={"url": sim.url})}
        )
        log.warning(
            "engine.url is not set: started the stand-in at %s (a load double, not a model)",
            sim.url,
        )
    try:
        yield config, asyncio.run(_describe(config))
    finally:
        if sim is not None:
            sim.stop()


async def _describe(config: PipelineConfig) -> dict[str, Any]:
    key = config.engine.api_key.get_secret_value() if config.engine.api_key else None
    urls = sorted({role.url or config.engine.url or "" for role in roles_for(config).values()})
    described: dict[str, Any] = {"standin": False, "endpoints": []}
    for url in urls:
        async with EngineClient(url, api_key=key, retries=0) as client:
            try:
                # A refused connection is a wrong address or a server not started: said at
                # once (2 s ride out a restart), not after ready_timeout_s.
                info = await client.wait_ready(config.engine.ready_timeout_s, refused_s=2.0)
            except EngineError as exc:
                raise EngineNotReady(
                    f"engine at {client.url} is not ready: {exc}; fix: start it (vLLM opens its "
                    "port once the model is loaded), or check engine.url"
                ) from None
        described["endpoints"].append(
            {"model": info.id, "max_model_len": info.max_model_len, "standin": info.is_standin}
        )
        described["standin"] = described["standin"] or info.is_standin
    return described
