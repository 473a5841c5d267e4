"""`datagen engine …`: the stand-in server, a readiness check, and the GPU host's vLLM command."""

from __future__ import annotations

import asyncio
import os
import shlex
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

engine_app = typer.Typer(no_args_is_help=True, help="The model server: stand-in, check, serve.")
console = Console()

HOLOTRON = "Hcompany/Holotron-12B"


@engine_app.command()
def sim(
    host: Annotated[str, typer.Option(help="bind address (loopback by default)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8000,
    served_model_name: Annotated[str, typer.Option(help="model id it serves")] = "datagen-sim",
    calibration: Annotated[
        str,
        typer.Option(
            help="engine model fit: decode (default) | holotron-12b/all-tokens | "
            "holotron-12b/output-tokens | holo2-8b/all-tokens | holo2-8b/output-tokens"
        ),
    ] = "decode",
    max_num_seqs: Annotated[
        int | None, typer.Option(help="requests running at once (default: the calibration's)")
    ] = None,
    max_model_len: Annotated[int, typer.Option(help="context length")] = 32768,
    speed_factor: Annotated[
        float, typer.Option(help="run this many times faster than real time")
    ] = 1.0,
    limit_images: Annotated[
        int, typer.Option("--limit-mm-per-prompt", help="images per request")
    ] = 999,
    api_key: Annotated[
        str | None, typer.Option(envvar="VLLM_API_KEY", help="require this bearer key")
    ] = None,
    error_rate: Annotated[float, typer.Option(help="share of requests answered 500")] = 0.0,
    drop_rate: Annotated[float, typer.Option(help="share of connections dropped")] = 0.0,
    slow_rate: Annotated[float, typer.Option(help="share of requests delayed")] = 0.0,
    slow_seconds: Annotated[float, typer.Option(help="delay of a slow request")] = 2.0,
    malformed_rate: Annotated[
        float, typer.Option(help="share of answers that break their schema")
    ] = 0.0,
    not_ready_seconds: Annotated[
        float, typer.Option(help="keep the port closed this long, like a loading model")
    ] = 0.0,
    seed: Annotated[int, typer.Option(help="seed of answers and faults")] = 0,
) -> None:
    """Serve the vLLM stand-in: vLLM's API and queueing with arbitrary schema-valid answers.

    A load and protocol double for tests and capacity planning, never a model."""
    from datagen.config import SimConfig
    from datagen.engine.sim import SimServer

    given = {} if max_num_seqs is None else {"max_num_seqs": max_num_seqs}
    try:
        config = SimConfig.model_validate(dict(
            calibration=calibration, served_model_name=served_model_name, max_model_len=max_model_len,
            speed_factor=speed_factor, limit_images=limit_images, api_key=api_key, error_rate=error_rate,
            drop_rate=drop_rate, slow_rate=slow_rate, slow_seconds=slow_seconds, malformed_rate=malformed_rate,
            seed=seed, **given,
        ))  # fmt: skip
    except ValueError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    server = SimServer(config, host=host, port=port, not_ready_s=not_ready_seconds).start()
    console.print(
        f"datagen engine stand-in (not a model) on {server.url}  max_num_seqs={config.max_num_seqs} speed×{speed_factor:g}\n"
        f"{config.calibrated.line()}", highlight=False, soft_wrap=True,
    )  # fmt: skip
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()


@engine_app.command()
def check(
    url: Annotated[str, typer.Argument(help="http://host:port of a vLLM server")],
    api_key: Annotated[str | None, typer.Option(envvar="VLLM_API_KEY", help="bearer key")] = None,
    timeout: Annotated[float, typer.Option(help="seconds to wait for readiness")] = 10.0,
) -> None:
    """What a user needs to know about an engine: model, context, health, queue. Exit 1 with
    one line when it is not ready or an answer is not what vLLM gives (no redirect followed)."""
    from rich.text import Text

    from datagen.engine.client import EngineClient, EngineError, ModelInfo

    async def probe() -> tuple[ModelInfo, dict[str, float] | EngineError]:
        async with EngineClient(url, api_key=api_key, retries=0) as client:
            info = await client.wait_ready(timeout)
            try:
                return info, await client.metrics()
            except EngineError as exc:  # the model answered: say so, then what /metrics did
                return info, exc

    try:
        info, metrics = asyncio.run(probe())
    except EngineError as exc:
        console.print(Text("not ready: ", style="red") + Text(str(exc)), soft_wrap=True)
        raise typer.Exit(1) from None
    except ValueError as exc:  # the URL itself (credentials and a key, a bad port)
        console.print(Text("error: ", style="red") + Text(str(exc)), soft_wrap=True)
        raise typer.Exit(2) from None
    table = Table(title=Text(f"engine at {url}"), show_header=False)
    table.add_row("health", "ok")
    table.add_row("model", Text(f"{info.id}  (owned by {info.owned_by})"))
    table.add_row("max_model_len", str(info.max_model_len))
    if isinstance(metrics, dict):
        table.add_row("running", f"{metrics['vllm:num_requests_running']:g}")
        table.add_row("waiting", f"{metrics['vllm:num_requests_waiting']:g}")
        table.add_row("kv cache used", f"{metrics['vllm:kv_cache_usage_perc'] * 100:.1f}%")
    console.print(table)
    if info.is_standin:
        console.print("[yellow]this is datagen's stand-in: its answers are not a model's[/]")
    if not isinstance(metrics, dict):
        console.print(
            Text("metrics unreadable: ", style="red") + Text(str(metrics))
            + Text("; fix: engine.url the vLLM server itself, or engine.control: static"),
            soft_wrap=True,
        )  # fmt: skip
        raise typer.Exit(1)


def serve_command(
    model: str,
    port: int,
    max_num_seqs: int,
    max_model_len: int,
    images: int,
    served_name: str,
    gpu_util: float,
    version: str = "0.14.1",
) -> list[str]:
    """The vLLM command for Holotron-12B with the flags the engine spec recommends, for vLLM
    `version` (the Mamba/prefix-caching rule of datagen.engine.serve)."""
    from datagen.engine.serve import prefix_caching_rule

    rule = prefix_caching_rule(version)
    return [
        "vllm", "serve", model,
        "--trust-remote-code",
        "--served-model-name", served_name,
        "--port", str(port),
        "--max-model-len", str(max_model_len),
        "--max-num-seqs", str(max_num_seqs),  # must fit the Mamba state cache; not vLLM's default 1024
        "--max-num-batched-tokens", "8192",
        "--limit-mm-per-prompt", f'{{"image": {images}, "video": 0}}',
        "--mamba-ssm-cache-dtype", "float32",  # VL models default to bf16 state in 0.14.1
        "--gpu-memory-utilization", str(gpu_util),
        "--enable-prompt-tokens-details",
        "--api-server-count", "2",  # image decoding is single-threaded per API server
        *([rule.flag] if rule.flag else []),
    ]  # fmt: skip


@engine_app.command()
def serve(
    model: Annotated[str, typer.Option(help="model repo or path")] = HOLOTRON,
    port: Annotated[int, typer.Option(help="port")] = 8000,
    max_num_seqs: Annotated[
        int, typer.Option(help="concurrent sequences (fit the Mamba cache)")
    ] = 128,
    max_model_len: Annotated[int, typer.Option(help="context length")] = 32768,
    images: Annotated[int, typer.Option(help="images per request")] = 5,
    served_model_name: Annotated[str, typer.Option(help="name clients use")] = "holotron-12b",
    gpu_memory_utilization: Annotated[float, typer.Option(help="share of GPU memory")] = 0.9,
    vllm_version: Annotated[
        str, typer.Option(help="the vLLM that will run it (its Mamba/prefix-caching rule)")
    ] = "0.14.1",
    check_with: Annotated[
        str | None,
        typer.Option(
            help="a Python with vLLM installed (e.g. .venv-vllm/bin/python): parse the flags "
            "with that vLLM's own argument parser, exit 1 naming any it refuses"
        ),
    ] = None,
    exec_: Annotated[
        bool, typer.Option("--exec", help="run it (GPU host, `pip install -e .[engine]`)")
    ] = False,
) -> None:
    """Print (or with --exec, run) the vLLM command for Holotron-12B on a GPU host."""
    from datagen.engine.serve import check_flags, prefix_caching_rule

    command = serve_command(
        model, port, max_num_seqs, max_model_len, images, served_model_name,
        gpu_memory_utilization, vllm_version,
    )  # fmt: skip
    console.print(shlex.join(command), soft_wrap=True, highlight=False, markup=False)
    console.print(f"# {prefix_caching_rule(vllm_version).why}", soft_wrap=True, markup=False)
    if check_with is not None:
        try:
            found, refused = check_flags(command, check_with)
        except (RuntimeError, ValueError) as exc:
            console.print(f"[red]error:[/] {exc}. fix: --check-with a Python that imports vllm")
            raise typer.Exit(2) from None
        if refused:
            console.print(f"[red]vLLM {found} refuses:[/] {'; '.join(refused)}", soft_wrap=True)
            raise typer.Exit(1)
        if (release := found.split("+")[0]) != vllm_version:  # its own rule, and the fix
            console.print(
                f"[yellow]checked with vLLM {found}, not --vllm-version {vllm_version}[/]: "
                f"{prefix_caching_rule(release).why}; fix: --vllm-version {release}",
                soft_wrap=True,
            )
        console.print(f"vLLM {found} accepts every flag")
    if exec_:
        os.execvp(command[0], command)
