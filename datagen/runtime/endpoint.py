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

from datagen.config import PipelineConfig
from datagen.engine.client import EngineClient, EngineError
from datagen.engine.sim import SimServer
from datagen.errors import EngineNotReady
from datagen.policy import roles_for
from datagen.sink.models import EngineEndpoint, EngineInfo

log = logging.getLogger(__name__)


@contextlib.contextmanager
def engine_endpoint(config: PipelineConfig) -> Iterator[tuple[PipelineConfig, EngineInfo | None]]:
    """Yield the config to run with and a description of the engine (for the manifest; None
    when the run calls no model)."""
    if not config.uses_engine:
        yield config, None
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


async def _describe(config: PipelineConfig) -> EngineInfo:
    key = config.engine.api_key.get_secret_value() if config.engine.api_key else None
    urls = sorted({role.url or config.engine.url or "" for role in roles_for(config).values()})
    endpoints: list[EngineEndpoint] = []
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
        endpoints.append(
            EngineEndpoint(model=info.id, max_model_len=info.max_model_len, standin=info.is_standin)
        )
    return EngineInfo(standin=any(e.standin for e in endpoints), endpoints=tuple(endpoints))
