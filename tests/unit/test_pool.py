"""The worker's episode pool without a browser: slots shared across shards and refilled the
moment an episode ends, admission in shard order, cancelled waiters that lose no slot, the
per-shard peak, and browser restarts that never cut another shard's episodes."""

from __future__ import annotations

import asyncio

import pytest

from datagen.pipeline.pool import EpisodePool, shards_in_flight


class FakeHost:
    """A browser host as the pool sees it: its episode count, whether it runs, restarts."""

    def __init__(self) -> None:
        self.episodes = 0
        self.connected = True
        self.restarts = 0

    async def restart(self) -> None:
        self.restarts += 1
        self.episodes = 0
        self.connected = True


async def settle() -> None:
    """Let every ready task run until all of them wait again."""
    for _ in range(20):
        await asyncio.sleep(0)


def test_shards_in_flight_fill_the_slots_plus_one() -> None:
    assert shards_in_flight(4, 1) == 5
    assert shards_in_flight(32, 8) == 5
    assert shards_in_flight(32, 45) == 2
    assert shards_in_flight(2, 64) == 2


def test_shards_in_flight_spread_before_doubling_up() -> None:
    """Two large shards for two workers: one each, never both on the first worker ready."""
    assert shards_in_flight(16, 64, shards=2, workers=2) == 1
    assert shards_in_flight(16, 64, shards=3, workers=2) == 2
    assert shards_in_flight(32, 8, shards=100, workers=2) == 5
    assert shards_in_flight(32, 8, shards=6, workers=2) == 3
    assert shards_in_flight(4, 1, shards=0, workers=2) == 1  # nothing left: still a valid resource


def test_slots_refill_across_shards_in_shard_order() -> None:
    """Slots 3; shard 1 (younger) queues its episodes before shard 0's last ones: each ended
    episode hands its slot on at once, to shard 0 first, and never more than 3 run at once."""

    async def main() -> tuple[list[tuple[int, int]], int, list[int]]:
        pool = EpisodePool(3)
        old, young = pool.ticket(), pool.ticket()
        ends = {(s, i): asyncio.Event() for s in (old, young) for i in range(4)}
        admitted: list[tuple[int, int]] = []
        most: list[int] = []

        async def episode(key: tuple[int, int]) -> None:
            async with pool.slot(key):
                with pool.episode():
                    admitted.append(key)
                    most.append(pool.running)
                    await ends[key].wait()

        jobs = [asyncio.create_task(episode((old, i))) for i in range(3)]
        await settle()
        jobs += [asyncio.create_task(episode((young, i))) for i in range(4)]
        await settle()
        jobs.append(asyncio.create_task(episode((old, 3))))
        await settle()
        assert admitted == [(old, 0), (old, 1), (old, 2)]  # full: the rest wait
        for key in [(old, 1), (old, 0), (old, 3), (old, 2), (young, 0), (young, 1)]:
            ends[key].set()
            await settle()
            assert pool.running == min(3, 8 - len([k for k in ends if ends[k].is_set()]))
        for event in ends.values():
            event.set()
        await asyncio.gather(*jobs)
        return admitted, pool.peak, most

    admitted, peak, most = asyncio.run(main())
    assert admitted[:4] == [(0, 0), (0, 1), (0, 2), (0, 3)]  # the older shard before the younger
    assert admitted[4:] == [(1, 0), (1, 1), (1, 2), (1, 3)]
    assert peak == 3 and max(most) == 3


def test_a_cancelled_waiter_loses_no_slot() -> None:
    async def main() -> int:
        pool = EpisodePool(2)
        release = asyncio.Event()

        async def hold() -> None:
            async with pool.slot((0, 0)):
                await release.wait()

        holders = [asyncio.create_task(hold()) for _ in range(2)]
        await settle()
        waiter = asyncio.create_task(hold())
        await settle()
        waiter.cancel()
        release.set()
        await asyncio.gather(*holders)
        with pytest.raises(asyncio.CancelledError):
            await waiter
        async with asyncio.timeout(10):  # a bound, not a measure: a lost slot would hang here
            async with pool.slot((1, 0)), pool.slot((1, 1)):
                with pool.episode(), pool.episode():
                    return pool.running  # both slots were free again

    assert asyncio.run(main()) == 2


def test_a_shards_peak_counts_the_workers_episodes_while_it_ran() -> None:
    async def main() -> tuple[int, int, int]:
        pool = EpisodePool(4)
        with pool.watch() as first:
            with pool.episode(), pool.episode(), pool.watch() as second, pool.episode():
                pass
            with pool.episode():
                pass
        with pool.watch() as third:
            pass
        return first.value, second.value, third.value

    assert asyncio.run(main()) == (3, 3, 0)


def test_recycling_waits_until_no_other_shard_runs() -> None:
    """A browser due for recycling is restarted only once the shard in flight ended; a shard
    arriving meanwhile waits too, and finds the fresh browser (no second restart)."""

    async def main() -> list[str]:
        pool, host = EpisodePool(2), FakeHost()
        said: list[str] = []
        running = asyncio.Event()
        finish = asyncio.Event()

        async def shard(name: str, wait: asyncio.Event | None = None) -> None:
            async with pool.shard(host, recycle_after=5):
                said.append(f"{name} starts after {host.restarts} restarts")
                host.episodes += 3
                if wait is not None:
                    running.set()
                    await wait.wait()
            said.append(f"{name} ends")

        first = asyncio.create_task(shard("A", finish))
        await running.wait()
        host.episodes = 7  # due: A's own episodes ran on past the limit
        later = [asyncio.create_task(shard(n)) for n in ("B", "C")]
        await settle()
        said.append(f"while A runs: {host.restarts} restarts")
        finish.set()
        await asyncio.gather(first, *later)
        return said

    assert asyncio.run(main()) == [
        "A starts after 0 restarts",
        "while A runs: 0 restarts",
        "A ends",
        "B starts after 1 restarts",
        "B ends",
        "C starts after 1 restarts",
        "C ends",
    ]


def test_a_crashed_browser_restarts_at_once() -> None:
    """A dead browser is restarted by the next shard even with another in flight: that one fails
    anyway (the browser it began on is gone)."""

    async def main() -> tuple[int, int]:
        pool, host = EpisodePool(2), FakeHost()
        finish = asyncio.Event()

        async def shard() -> None:
            async with pool.shard(host, recycle_after=100):
                await finish.wait()

        first = asyncio.create_task(shard())
        await settle()
        host.connected = False  # the browser crashed
        second = asyncio.create_task(shard())
        await settle()
        restarts = host.restarts
        finish.set()
        await asyncio.gather(first, second)
        return restarts, pool.shards

    assert asyncio.run(main()) == (1, 0)
