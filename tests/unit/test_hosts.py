"""The host rules without a browser (issue 27 items 1-2): `run.hosts`, host keys, the book's
session limit, pace, back-off and blocklist, `_hosts.json`, the dashboard's hosts table."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from datagen.config.hosts import HostsConfig
from datagen.pipeline import hostbook
from datagen.pipeline.hostbook import HostBook
from datagen.pipeline.hosts import host_key, retry_after
from datagen.pipeline.robots import robots_agent, robots_allow
from datagen.runtime.dashboard import page
from datagen.sink.hosts import blocks_in_force, read_hosts, write_hosts
from datagen.sink.storage import LocalStorage


def test_config_defaults_and_checks() -> None:
    config = HostsConfig()
    assert config.max_sessions_per_host == 3 and config.max_requests_per_second == 4.0
    assert config.respect_robots_txt and config.user_agent is None
    with pytest.raises(ValidationError):
        HostsConfig(max_sesions_per_host=2)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="one non-empty line"):
        HostsConfig(user_agent="a\r\nX-Evil: 1")
    assert all(f.description for f in HostsConfig.model_fields.values())


def test_host_keys() -> None:
    config = HostsConfig()
    assert host_key("https://app.example.co.uk/x", config) == "example.co.uk"
    assert host_key("https://www.example.com:8443/", config) == "example.com"
    assert host_key("http://10.0.0.5:8080/a", config) == "10.0.0.5:8080"
    assert host_key("http://intranet/a", config) == "intranet:80"
    assert host_key("http://127.0.0.1:9/", config) is None  # exempt by default
    assert host_key("http://127.0.0.1:9/", HostsConfig(exempt=[])) == "127.0.0.1:9"
    assert host_key("data:text/html,x", config) is None
    assert host_key("http://a.example.com:81/", config, own="a.example.com:81") is None
    # sites by the Public Suffix List (issue 37): one key per github.io tenant, one for a
    # co.uk domain's hosts, and k12.ca.us schools apart
    assert host_key("https://alice.github.io/", config) == "alice.github.io"
    assert host_key("https://bob.github.io/x", config) == "bob.github.io"
    assert host_key("https://a.example.co.uk/", config) == host_key(
        "http://b.example.co.uk/", config
    )
    assert host_key("https://a.k12.ca.us/", config) != host_key("https://b.k12.ca.us/", config)
    assert host_key("http://[::1]:8000/", HostsConfig(exempt=[])) == "::1:8000"


def test_retry_after_and_robots() -> None:
    assert retry_after("3") == 3.0 and retry_after(None) == 0.0 and retry_after("soon") == 0.0
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < retry_after(when) <= 30
    assert robots_agent(HostsConfig(user_agent="MyBot/1.0 (+x)")) == "MyBot"
    text = "User-agent: mybot\nDisallow: /private\n\nUser-agent: *\nDisallow: /\n"
    assert robots_allow(text, "http://h/ok", HostsConfig(user_agent="MyBot/1"))
    assert not robots_allow(text, "http://h/private/x", HostsConfig(user_agent="MyBot/1"))
    assert not robots_allow(text, "http://h/ok", HostsConfig())


def test_sessions_are_limited_and_a_block_ends_the_waiters() -> None:
    async def main() -> None:
        book = HostBook(HostsConfig(max_sessions_per_host=2, block_after=2))
        assert await book.acquire("h", "a") == ("granted", "")
        assert await book.acquire("h", "b") == ("granted", "")
        assert await book.acquire("h", "c", timeout_s=0.05) == ("wait", "")
        waiter = asyncio.create_task(book.acquire("h", "d"))
        await asyncio.sleep(0)
        await book.release("h", "a")
        assert await waiter == ("granted", "")
        queued = asyncio.create_task(book.acquire("h", "e"))
        await book.report("h", "failure", "dns_failed: no address")
        await book.report("h", "failure", "unreachable: refused")
        assert await queued == ("blocked", "dns_failed: no address")  # the first cause
        figures = book.figures()["h"]
        assert figures["peak_sessions"] == 2 and figures["blocked"] and figures["waits"] >= 2

    asyncio.run(main())


def test_a_session_taken_before_the_block_is_refused_its_load_on_every_book() -> None:
    """Issue 42, item 9: `blocked` (asked right before a load) says the cause once the host is
    blocked and counts the task among its host_blocked rejects; the scheduler's book answers
    the same over its handler."""
    from datagen.pipeline.hosts import LocalHosts
    from datagen.runtime.hosts import HostsExtension

    async def main() -> None:
        config = HostsConfig(max_sessions_per_host=3, block_after=2)
        local = LocalHosts(config)
        extension = HostsExtension()
        await extension.handle("r", "open", config=config.model_dump())
        for lease in ("a", "b", "c"):
            assert await local.acquire("h", lease) is None  # three sessions, no block yet
        assert await local.blocked("h") is None
        assert await extension.handle("r", "blocked", "h") is None
        for _ in range(2):
            await local.report("h", "failure", "navigation_failed: HTTP 502")
            await extension.handle("r", "report", "h", event="failure", detail="HTTP 502")
        assert await local.blocked("h") == "navigation_failed: HTTP 502"
        assert await extension.handle("r", "blocked", "h") == "HTTP 502"
        assert local.figures()["h"]["host_blocked_rejects"] == 1

    asyncio.run(main())


def test_a_release_before_the_grant_abandons_the_lease() -> None:
    async def main() -> None:
        book = HostBook(HostsConfig(max_sessions_per_host=1))
        await book.acquire("h", "a")
        await book.release("h", "late")  # its RPC was cancelled before it was granted
        await book.release("h", "a")
        assert await book.acquire("h", "late", timeout_s=0.01) == ("wait", "")
        assert book.figures()["h"]["sessions"] == 0

    asyncio.run(main())


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The host book's monotonic clock, stopped (the test moves it): what a pace or a pause
    comes to is then exact, however loaded the machine is between two calls."""
    now = [1000.0]
    frozen = SimpleNamespace(monotonic=lambda: now[0], time=time.time)
    monkeypatch.setattr(hostbook, "time", frozen)
    return now


def test_pace_spaces_requests_and_a_429_halves_the_rate(clock: list[float]) -> None:
    book = HostBook(HostsConfig(max_requests_per_second=10))
    waits = [book.pace("h") for _ in range(5)]
    assert waits == pytest.approx([0, 0.1, 0.2, 0.3, 0.4])
    asyncio.run(book.report("h", "slow", "429", retry_after_s=2))
    assert book.figures()["h"]["rate_limit"] == 5.0
    assert book.pace("h") == pytest.approx(2.0)  # nothing before the Retry-After
    assert book.pace("h", max_wait_s=0.5) == -1.0  # a sub-resource does not queue that long
    assert book.figures()["h"]["dropped"] == 1


def test_hosts_json_keeps_blocks_until_their_ttl(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    book = HostBook(HostsConfig(block_after=1, block_ttl_s=60))
    asyncio.run(book.report("down.example", "failure", "unreachable: refused"))
    asyncio.run(book.report("up.example", "ok"))
    write_hosts(storage, book.figures())
    assert set(read_hosts(storage)) == {"down.example", "up.example"}
    assert set(blocks_in_force(storage)) == {"down.example"}
    again = HostBook(HostsConfig(block_after=1))
    again.restore(blocks_in_force(storage))
    assert again.blocked("down.example") == "unreachable: refused"
    write_hosts(storage, {"down.example": {"blocked_until": time.time() - 1}})
    assert blocks_in_force(storage) == {}


def test_the_dashboard_shows_hosts() -> None:
    html = page({}, (["run", "host", "sessions"], [["r1", "shop.example", "2"]]))
    assert "hosts (the whole cluster)" in html and "shop.example" in html


def test_the_run_report_lists_hosts_escaped() -> None:
    from datagen.runtime.report import hosts_table

    assert hosts_table({}) == []  # no host limited: no table
    (table,) = hosts_table(
        {"<b>evil</b>.test": {"peak_sessions": 2, "cause": "<img src=x onerror=alert(1)>"}}
    )
    assert "&lt;b&gt;evil&lt;/b&gt;.test" in table.text and "<img" not in table.text
    assert "<td>2</td>" in table.text  # the most sessions at once


def test_a_rerun_redoes_the_shards_of_a_host_whose_block_ended(tmp_path: Path) -> None:
    """A committed shard whose tasks ended host_blocked loses its marker once the host's
    block in _hosts.json has run out (its tasks run again), not while it is in force."""
    from datagen.records import ShardResult, TaskSpec
    from datagen.runplan import Plan
    from datagen.runtime.hosts import unblocked
    from datagen.sink.models import Marker, PartFile
    from datagen.sink.schema import TABLES
    from datagen.sink.storage import LocalStorage
    from datagen.sink.writer import completed_shards, marker_key, part_key
    from tests.helpers import make_config

    storage = LocalStorage(tmp_path / "out")
    config = make_config(tmp_path)
    shards = [
        [TaskSpec(id=f"{host}-{i}", start_url=f"https://{host}/p{i}", instruction="x")]
        for i, host in enumerate(["down.example", "still.example", "fine.example"])
    ]
    plan = Plan(config=config, tasks=[t for s in shards for t in s], shards=shards, run_id="r")
    for shard in range(3):
        reasons = {"host_blocked": 1} if shard < 2 else {}
        stats = ShardResult(
            shard=shard,
            tasks=1,
            episodes=0,
            steps=0,
            grounding=0,
            rejects=1,
            solved=0,
            reject_reasons=reasons,
            seconds=0.0,
        )
        files = tuple(
            PartFile(table=t, key=part_key(t, shard), rows=0, bytes=0, sha256="0" * 64)
            for t in TABLES
        )
        marker = Marker(shard=shard, files=files, stats=stats, written_at=0)
        storage.put(marker_key(shard), marker.model_dump_json().encode())
    now = time.time()
    write_hosts(
        storage,
        {
            "down.example": {"blocked": True, "blocked_until": now - 1, "cause": "HTTP 500"},
            "still.example": {"blocked": True, "blocked_until": now + 3600, "cause": "dns"},
        },
    )
    redo = unblocked(storage, plan)
    assert list(redo) == [0] and "down.example" in redo[0]
    assert completed_shards(storage) == {1, 2}  # the block in force keeps its shard committed


TAMPERED = {  # what a hand (or a tool) may leave in _hosts.json → a word of the refusal
    '{"version": 1, "hosts": []}': '"hosts" is a list',
    "[1, 2]": "the document is a list",
    '{"hosts": {"a.example": "blocked"}}': '"hosts"."a.example" is a string',
    '{"hosts": {"a.example": {"blocked_until": "inf"}}}': "blocked_until is 'inf'",
    '{"hosts": {"a.example": {"blocked_until": Infinity}}}': "blocked_until is 'inf'",
    '{"hosts": {"a.example": {"blocked_until": NaN}}}': "blocked_until is 'nan'",
    '{"hosts": {"a.example": {"blocked_until": true}}}': "blocked_until is 'True'",
    '{"hosts": {"a.example": {"cause": {"x": 1}}}}': "cause is a object",
    '{"hosts": {"' + "h" * 400 + '": {}}}': "over 300 characters",
    '{"hosts": ': "unreadable",
    "\xff\xfe": "unreadable",
}


@pytest.mark.parametrize("text", TAMPERED)
def test_a_tampered_hosts_json_is_refused_with_its_fix(tmp_path: Path, text: str) -> None:
    from datagen.errors import OutputError

    (tmp_path / "_hosts.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(OutputError) as refused:
        blocks_in_force(LocalStorage(tmp_path))
    message = str(refused.value)
    assert "_hosts.json" in message and TAMPERED[text] in message, message
    assert "\n  fix: delete _hosts.json" in message


def test_a_huge_hosts_json_is_refused_without_being_read(tmp_path: Path) -> None:
    """A sparse file of 3 GB: refused from its size, before a byte is read (reading it whole
    would take seconds and 3 GB)."""
    from datagen.errors import OutputError
    from datagen.sink.hosts import HOSTS_MAX_BYTES

    with (tmp_path / "_hosts.json").open("wb") as fh:
        fh.truncate(3 * 1024**3)
    with pytest.raises(OutputError, match=f"more than the {HOSTS_MAX_BYTES:,} such a file holds"):
        read_hosts(LocalStorage(tmp_path))


def test_restored_blocks_end_within_block_ttl_and_causes_are_cut(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    far = time.time() + 10 * 365 * 86_400  # a block edited to last ten years
    write_hosts(storage, {"a.example": {"blocked_until": far, "cause": "x" * 100_000}})
    found = blocks_in_force(storage)
    assert len(found["a.example"]["cause"]) == 500
    book = HostBook(HostsConfig(block_ttl_s=60))
    before = time.time()
    book.restore(found)
    until = book.hosts["a.example"].blocked_until
    assert book.figures()["a.example"]["blocked"] and before < until <= time.time() + 60
    assert len(book.figures()["a.example"]["cause"]) == 500
    book.restore({"b.example": {"blocked_until": float("inf")}, "c": {"blocked_until": "x"}})
    assert book.blocked("b.example") is None and book.blocked("c") is None  # never for ever


def test_a_tampered_hosts_json_stops_the_run_before_its_cluster(tmp_path: Path) -> None:
    """`"hosts": []` gave a traceback after the cluster and its browsers had started; now the
    run ends at its start with the file's name and the fix, and no worker ever started."""
    import yaml

    from datagen.config import load_pipeline
    from datagen.runplan import make_plan
    from datagen.sink.writer import claim_output
    from tests.helpers import datagen

    urls = tmp_path / "urls.txt"
    urls.write_text("https://example.com/\n")
    out = tmp_path / "out"
    spec = {
        "name": "tampered",
        "sources": [{"type": "urls", "path": str(urls)}],
        "cluster": {"workers": 1, "dashboard": "127.0.0.1:0"},
        "output": {"uri": str(out)},
    }
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(yaml.safe_dump(spec))
    plan = make_plan(load_pipeline(pipeline))  # an earlier run of it, as it left the output
    claim_output(LocalStorage(out), plan.run_id, plan.config.model_dump(mode="json"))
    (out / "_hosts.json").write_text('{"version": 1, "hosts": []}')
    done = datagen("run", str(pipeline), timeout=120)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in said, said
    assert '"hosts" is a list' in said and "fix: delete _hosts.json" in said, said
    assert "dashboard" not in said.lower(), said  # the cluster never started
    assert not (out / "_manifest.json").exists() and not (out / "episodes").exists()


def test_robots_txt_is_fetched_by_one_task_while_the_others_wait() -> None:
    async def main() -> None:
        book = HostBook(HostsConfig())
        first = await book.robots_turn("h")
        waiting = asyncio.create_task(book.robots_turn("h"))
        assert await book.robots_turn("h", timeout_s=0.01) == ("wait", "")
        assert first == ("fetch", "") and not waiting.done()
        await book.robots("h", "User-agent: *\nDisallow: /x\n")
        assert await waiting == ("rules", "User-agent: *\nDisallow: /x\n")
        # a fetcher that failed for the host (DNS): the next task fetches, none waits for ever
        assert await book.robots_turn("g") == ("fetch", "")
        second = asyncio.create_task(book.robots_turn("g"))
        await asyncio.sleep(0)
        await book.report("g", "failure", "dns_failed: no address")
        assert await second == ("fetch", "")

    asyncio.run(main())


def test_a_retry_after_pauses_the_host_and_a_503_is_a_failure(clock: list[float]) -> None:
    async def main() -> None:
        book = HostBook(HostsConfig(block_after=2))
        assert book.paused("h") == 0
        await book.report("h", "slow", "429", retry_after_s=30)
        assert book.paused("h") == 30
        clock[0] += 29.5
        assert book.paused("h") == 0.5
        assert book.paused("other") == 0

    asyncio.run(main())
