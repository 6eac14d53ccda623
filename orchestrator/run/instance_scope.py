"""How one instance's path is concurrent, stated once.

The path (:func:`orchestrator.run.pipeline.run_instance`) is one asyncio task. The engine,
git and file calls it makes block; they run in worker threads, through :meth:`InstanceScope.
blocking` for work on the path and :meth:`InstanceScope.beside` for work beside it (the
grading container's start while the participant works, the participant container's stop while
grading runs). Nothing else on the path makes a thread or a task.

Every container the instance starts is the scope's: :meth:`InstanceScope.on_close` registers
its disposal as its start begins, and :meth:`InstanceScope.close` (the instance's one clean-up,
whether it ended, failed or was cancelled) first waits for the work begun beside the path,
then runs the disposals side by side. The clean-up finishes through further cancels (a run
being interrupted cancels its instances again while they clean up); the caller passes the
cancel on afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

import structlog

P = ParamSpec("P")
T = TypeVar("T")


class InstanceScope:
    """The threads, tasks and disposals of one instance's path."""

    def __init__(self) -> None:
        self._beside: list[asyncio.Task[Any]] = []
        self._disposals: list[Callable[[], Awaitable[None]]] = []

    async def blocking(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a blocking call on the path, in a worker thread."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    def beside(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> asyncio.Task[T]:
        """Begin a blocking call beside the path; :meth:`close` waits for it."""
        task = asyncio.create_task(asyncio.to_thread(fn, *args, **kwargs))
        self._beside.append(task)
        return task

    def on_close(self, disposal: Callable[[], Awaitable[None]]) -> None:
        """Run ``disposal`` when the scope closes (after the work beside the path)."""
        self._disposals.append(disposal)

    async def close(self) -> bool:
        """Wait for the work beside the path, then run every disposal side by side, through
        cancels; whether a cancel came meanwhile. A failing disposal is logged: clean-up
        never hides a result."""
        cancelled = False
        for task in self._beside:
            cancelled = await wait_through_cancels(task) or cancelled
        disposals = [asyncio.create_task(_logged(d)) for d in self._disposals]
        self._beside, self._disposals = [], []
        for task in disposals:
            cancelled = await wait_through_cancels(task) or cancelled
        return cancelled


async def started(task: asyncio.Task[T]) -> T:
    """The result of a start begun beside the path: a cancel of the waiter leaves the start
    to the scope (whose disposal removes what it started)."""
    return await asyncio.shield(task)


def result_or_none(task: asyncio.Task[T] | None) -> T | None:
    """What a finished task returned, or None (not begun, failed or cancelled)."""
    if task is None or not task.done() or task.cancelled() or task.exception() is not None:
        return None
    return task.result()


async def _logged(disposal: Callable[[], Awaitable[None]]) -> None:
    try:
        await disposal()
    except Exception as exc:  # noqa: BLE001 - clean-up must not hide the result
        structlog.get_logger().warning("container.cleanup_failed", error=str(exc))


async def wait_through_cancels(task: asyncio.Task[Any]) -> bool:
    """Wait until ``task`` has ended, whatever it raised (that stays on the task, for its
    owner); whether this waiter was cancelled meanwhile."""
    cancelled = False
    while not task.done():
        try:  # asyncio.wait neither raises the task's exception nor cancels the task
            await asyncio.wait((task,))
        except asyncio.CancelledError:  # this waiter's cancel: wait on, and say so
            cancelled = True
    return cancelled
