"""The stand-in's HTTP server (aiohttp): vLLM's routes on top of `SimEngine`.

POST /v1/chat/completions   GET /v1/models /health /metrics /version
GET /sim/stats              POST /sim/config   (stand-in only: stats and live reconfiguration)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import threading
import time
import uuid
from typing import Any

from aiohttp import web
from prometheus_client import generate_latest

from datagen.config import STANDIN_OWNER, SimConfig
from datagen.engine.client import STANDIN_KEY
from datagen.engine.sim.answers import answer_text
from datagen.engine.sim.engine import SimEngine, SimRequest
from datagen.engine.sim.hindsight import hindsight_answer
from datagen.engine.sim.metrics import SimMetrics
from datagen.engine.sim.protocol import ApiError, check_sampling, measure, parse_body
from datagen.engine.sim.replies import completion, stream_completion

log = logging.getLogger(__name__)
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
ENGINE_KEY = web.AppKey("engine", SimEngine)
STATE_KEY = web.AppKey("state", dict)


def make_app(config: SimConfig) -> web.Application:
    """An aiohttp application serving the stand-in; its engine loop starts with the app."""
    app = web.Application(client_max_size=256 * 1024**2, middlewares=[_auth])
    app[STATE_KEY] = {
        "config": config,
        "fault_rng": random.Random(config.seed),
        "started": time.time(),
        "replied": 0,  # scripted replies given
        "prefixes": set(),  # first messages seen (prefix-cache hits)
    }
    app.router.add_post("/v1/chat/completions", _chat)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/health", _health)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/version", _version)
    app.router.add_get("/sim/stats", _stats)
    app.router.add_post("/sim/config", _reconfigure)
    app.cleanup_ctx.append(_engine_ctx)
    return app


async def _engine_ctx(app: web.Application) -> Any:
    config: SimConfig = app[STATE_KEY]["config"]
    engine = SimEngine(config, SimMetrics(config.served_model_name, config.max_model_len))
    app[ENGINE_KEY] = engine
    task = asyncio.create_task(engine.run())
    yield
    task.cancel()


@web.middleware
async def _auth(request: web.Request, handler: Any) -> web.StreamResponse:
    key = request.app[STATE_KEY]["config"].api_key
    if (
        key
        and request.path.startswith("/v1/")
        and request.headers.get("Authorization") != f"Bearer {key}"
    ):
        return web.json_response({"error": "Unauthorized"}, status=401)
    response: web.StreamResponse = await handler(request)
    return response


async def _version(request: web.Request) -> web.Response:
    return web.json_response({"version": "0.14.1", "standin": STANDIN_OWNER})


def _error(exc: ApiError) -> web.Response:
    return web.json_response(exc.body(), status=exc.status)


async def _chat(request: web.Request) -> web.StreamResponse:
    config: SimConfig = request.app[STATE_KEY]["config"]
    engine = request.app[ENGINE_KEY]
    try:
        body = parse_body(await request.read())
        if body.model is not None and body.model != config.served_model_name:
            raise ApiError(
                404, "NotFoundError", f"The model `{body.model}` does not exist.", "model"
            )
        check_sampling(body)
        prompt = measure(body, config)
        if config.dead:
            raise ApiError(500, "InternalServerError", "Internal server error")
    except ApiError as exc:
        return _error(exc)
    _count_prefix(request.app, body.messages, prompt.tokens)
    if prompt.ignored:
        log.warning(
            "The following fields were present in the request but ignored: %s", set(prompt.ignored)
        )
    fault = _fault(request.app[STATE_KEY]["fault_rng"], config)
    if fault == "drop":
        if request.transport is not None:
            request.transport.abort()  # the client sees the connection reset, no response
        return web.Response(status=500)
    if fault == "error":
        return _error(ApiError(500, "InternalServerError", "Internal server error"))
    if fault == "slow":
        await asyncio.sleep(config.slow_seconds)
    request_id = request.headers.get("X-Request-Id") or uuid.uuid4().hex
    digest = hashlib.sha256(
        f"{config.seed}:{body.seed}:{request_id if body.seed is None else ''}".encode()
    ).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    malformed = rng.random() < config.malformed_rate
    answer = answer_text(
        prompt.schema,
        rng,
        click_bias=config.click_bias,
        fixed_point=config.fixed_point,
        text_reply=config.text_reply,
        malformed=malformed,
    )
    derived = hindsight_answer(prompt.schema, body.messages)  # relabel prompts: from their text
    if derived is not None:
        answer = derived[: len(derived) // 2] if malformed else derived
    if config.replies and prompt.schema is not None:
        state = request.app[STATE_KEY]
        answer = config.replies[state["replied"] % len(config.replies)]
        state["replied"] += 1
    sim = SimRequest(
        id=f"chatcmpl-{request_id}",
        prompt_tokens=prompt.tokens,
        tiles=prompt.tiles,
        max_tokens=max(1, prompt.max_tokens),
        answer=answer,
    )
    if body.stream:
        return await stream_completion(
            request, engine, sim, config, bool((body.stream_options or {}).get("include_usage"))
        )
    sim.done = asyncio.get_running_loop().create_future()
    engine.submit(sim)
    try:
        await sim.done
    except asyncio.CancelledError:
        engine.abort(sim)  # client disconnected: vLLM aborts generation
        raise
    if sim.finish_reason == "error":
        return _error(ApiError(500, "InternalServerError", "Internal server error"))
    return web.json_response(completion(sim, config))


def _count_prefix(app: web.Application, messages: list[dict[str, Any]], tokens: int) -> None:
    """vLLM's prefix-cache counters, roughly: every prompt token is a query; a prompt whose
    first message was seen before hits that message's share (text only, ~4 bytes a token)."""
    metrics = app[ENGINE_KEY].metrics
    metrics.labelled(metrics.prefix_queries).inc(tokens)
    if not messages or not app[STATE_KEY]["config"].prefix_caching:
        return
    head = json.dumps(messages[0], sort_keys=True)
    seen: set[str] = app[STATE_KEY]["prefixes"]
    key = hashlib.sha256(head.encode()).hexdigest()
    if key in seen:
        metrics.labelled(metrics.prefix_hits).inc(min(tokens, max(1, len(head) // 4)))
    elif len(seen) < 4096:
        seen.add(key)


def _fault(rng: random.Random, config: SimConfig) -> str | None:
    draw = rng.random()
    for name, rate in (
        ("drop", config.drop_rate),
        ("error", config.error_rate),
        ("slow", config.slow_rate),
    ):
        if draw < rate:
            return name
        draw -= rate
    return None


async def _models(request: web.Request) -> web.Response:
    config: SimConfig = request.app[STATE_KEY]["config"]
    created = int(request.app[STATE_KEY]["started"])
    card = {
        "id": config.served_model_name,
        "object": "model",
        "created": created,
        "owned_by": "vllm",  # as vLLM's card; the extra key below tells the stand-in apart
        "root": config.served_model_name,  # vLLM: the --model path (= the id without an alias)
        "parent": None,
        "max_model_len": config.max_model_len,
        STANDIN_KEY: True,
        "permission": [
            {
                "id": f"modelperm-{created}",
                "object": "model_permission",
                "created": created,
                "allow_create_engine": False,
                "allow_sampling": True,
                "allow_logprobs": True,
                "allow_search_indices": False,
                "allow_view": True,
                "allow_fine_tuning": False,
                "organization": "*",
                "group": None,
                "is_blocking": False,
            }
        ],
    }
    return web.json_response({"object": "list", "data": [card]})


async def _health(request: web.Request) -> web.Response:
    return web.Response(status=503 if request.app[STATE_KEY]["config"].dead else 200)


async def _metrics(request: web.Request) -> web.Response:
    engine = request.app[ENGINE_KEY]
    body = generate_latest(engine.metrics.registry)
    # vLLM 0.14.1 serves the 0.0.4 text format (newer prometheus_client says 1.0.0).
    return web.Response(body=body, headers={"Content-Type": METRICS_CONTENT_TYPE})


async def _stats(request: web.Request) -> web.Response:
    engine = request.app[ENGINE_KEY]
    config = engine.config
    return web.json_response(
        {
            "running": len(engine.running),
            "waiting": len(engine.waiting),
            "peak_running": engine.peak_running,
            "peak_in_flight": engine.peak_in_flight,
            "completed": engine.completed,
            "prompt_tokens": engine.prompt_token_sum,
            "completion_tokens": engine.completion_tokens,
            "steps": engine.steps,
            "busy_seconds": engine.busy_seconds,
            "config": config.model_dump(exclude={"api_key"}),
        }
    )


async def _reconfigure(request: web.Request) -> web.Response:
    """Change settings while running (capacity, speed, faults); `dead: true` kills in-flight work."""
    config: SimConfig = request.app[STATE_KEY]["config"]
    try:
        changes = await request.json()
        for key, value in changes.items():
            setattr(config, key, value)
    except Exception as exc:
        return web.json_response({"error": str(exc)}, status=400)
    engine = request.app[ENGINE_KEY]
    if config.dead:
        engine.fail_all()
    engine.submit_wake()
    return web.json_response(config.model_dump(exclude={"api_key"}))


class SimServer:
    """The stand-in on a background thread with its own loop, for tests and the sim-demo.

    `not_ready_s` keeps the port closed for a while after start, like vLLM loading a model.
    """

    def __init__(
        self,
        config: SimConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        not_ready_s: float = 0.0,
    ) -> None:
        self.config = config or SimConfig()
        self.host, self.port, self.not_ready_s = host, port, not_ready_s
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="datagen-sim", daemon=True)
        self._runner: web.AppRunner | None = None
        self._stop: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> SimServer:
        if self.port == 0:
            self.port = free_port(self.host)
        self._thread.start()
        if not self.not_ready_s and not self._ready.wait(30):
            raise RuntimeError("stand-in did not start")
        return self

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        if self.not_ready_s:
            await asyncio.sleep(self.not_ready_s)
        # handler_cancellation: a client that hangs up cancels its handler, which aborts the
        # request in the engine, as vLLM does (aiohttp leaves handlers running by default).
        self._runner = web.AppRunner(
            make_app(self.config), access_log=None, handler_cancellation=True
        )
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        self._ready.set()
        await self._stop.wait()
        await self._runner.cleanup()

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C in the CLI)."""
        self._thread.join()

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port(host: str = "127.0.0.1") -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
