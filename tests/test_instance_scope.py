"""The concurrency of one instance's path (orchestrator/run/instance_scope.py): work beside
the path and the containers' disposals end in the scope's one clean-up, through cancels."""

from __future__ import annotations

import asyncio
import threading
import time

from orchestrator.run.instance_scope import InstanceScope, result_or_none, started


def test_close_waits_for_the_work_beside_the_path_then_runs_the_disposals_side_by_side():
    order: list[str] = []

    async def main() -> bool:
        scope = InstanceScope()
        scope.beside(lambda: (time.sleep(0.2), order.append("beside")))

        async def disposal(name: str) -> None:
            order.append(f"{name} begins")
            await asyncio.sleep(0.2)
            order.append(f"{name} ends")

        scope.on_close(lambda: disposal("a"))
        scope.on_close(lambda: disposal("b"))
        return await scope.close()

    began = time.monotonic()
    assert asyncio.run(main()) is False
    assert order[0] == "beside"
    assert order[1:3] == ["a begins", "b begins"]  # side by side, not one after the other
    assert time.monotonic() - began < 0.6


def test_a_start_whose_waiter_is_cancelled_is_still_disposed_of():
    """The container's start runs in a thread a cancel cannot stop: the scope waits for it and
    disposes of what it started, then says the cancel came."""
    release = threading.Event()
    disposed: list[str] = []

    def start() -> str:
        release.wait(5)
        return "container-1"

    async def main() -> bool:
        scope = InstanceScope()
        task = scope.beside(start)

        async def disposal() -> None:
            name = result_or_none(task)
            if name is not None:
                disposed.append(name)

        scope.on_close(disposal)
        waiter = asyncio.create_task(started(task))
        await asyncio.sleep(0.05)
        waiter.cancel()  # the instance is cancelled while its container starts
        await asyncio.gather(waiter, return_exceptions=True)
        closing = asyncio.create_task(scope.close())
        await asyncio.sleep(0.05)
        closing.cancel()  # and cancelled again while it cleans up
        release.set()
        try:
            return await closing
        except asyncio.CancelledError:  # pragma: no cover - close must not raise
            return False

    assert asyncio.run(main()) is True
    assert disposed == ["container-1"]


def test_a_failing_disposal_does_not_stop_the_others():
    done: list[str] = []

    async def main() -> None:
        scope = InstanceScope()

        async def broken() -> None:
            raise RuntimeError("the engine refused")

        async def fine() -> None:
            done.append("fine")

        scope.on_close(broken)
        scope.on_close(fine)
        assert await scope.close() is False

    asyncio.run(main())
    assert done == ["fine"]


def test_result_or_none_of_a_failed_start_is_none():
    async def main() -> object:
        scope = InstanceScope()
        task = scope.beside(lambda: 1 / 0)
        await scope.close()
        return result_or_none(task)

    assert asyncio.run(main()) is None
