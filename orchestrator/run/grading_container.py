"""One instance's grading container, off the instance's critical path: started beside the
participant's container (a fresh container from the instance image owes nothing to what the
participant does; it idles until the patch is taken), and removed while the participant's
container is disposed of."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from orchestrator.context.run_context import RunContext
from orchestrator.models import Instance
from orchestrator.sandbox import Sandbox
from orchestrator.sandbox.models import Snapshot


class GradingContainer:
    """Start ahead, take, remove later; every container started is removed once."""

    def __init__(self, ctx: RunContext, instance: Instance) -> None:
        self.ctx, self.instance = ctx, instance
        self._starting: asyncio.Task[Sandbox] | None = None
        self._removal: asyncio.Task[None] | None = None
        # set when the instance ends without grading: a start still under way (a thread,
        # which a cancel cannot stop) removes its container itself once it has started
        self._dropped = threading.Event()

    def _start(self, image: str | Snapshot) -> Sandbox:
        sandbox = self.ctx.start_sandbox(image, self.instance, "grading", network=False)
        if self._dropped.is_set():
            sandbox.remove()
            raise _Dropped
        return sandbox

    def start_ahead(self, image: str | Snapshot) -> None:
        """Start the container in the background (a task of the running loop)."""
        self._starting = asyncio.create_task(asyncio.to_thread(self._start, image))

    async def started(self) -> None:
        """Wait until the start begun ahead has ended (a failed start is :meth:`take`'s to
        report), so that a cancel later finds the container there to remove."""
        if self._starting is not None:
            await asyncio.wait([self._starting])

    def drop_now(self) -> None:
        """The cancel path: remove a container started ahead at once (blocking, as the
        participant's container is disposed of); a start still under way removes its own."""
        task, self._starting = self._starting, None
        self._dropped.set()
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return
        try:
            task.result().remove()
        except Exception as exc:  # noqa: BLE001 - cleanup must not hide the cancel
            self.ctx.log.warning("container.cleanup_failed", role="grading", error=str(exc))

    async def take(self, image: str | Snapshot) -> Sandbox:
        """The container started ahead, else one started now. Until it is taken, a cancel
        leaves it to :meth:`drop`."""
        if self._starting is None:
            self.start_ahead(image)
        assert self._starting is not None
        sandbox = await asyncio.shield(self._starting)
        self._starting = None
        return sandbox

    def remove_later(self, sandbox: Sandbox) -> None:
        """Begin removing ``sandbox``; :meth:`removed` waits for it."""
        self._removal = asyncio.create_task(asyncio.to_thread(sandbox.remove))

    async def drop(self) -> None:
        """Remove a container started ahead that grading never took. Cleanup finishes even
        when this is cancelled meanwhile (an interrupted run cancels its instances again while
        they clean up); the cancel is passed on afterwards."""
        task, self._starting = self._starting, None
        if task is None:
            return
        self._dropped.set()
        cancelled = await wait_through_cancels(task)  # a failed start removed its own, or none
        if not task.cancelled() and task.exception() is None:
            self.remove_later(task.result())
        cancelled = await self._removal_done() or cancelled
        if cancelled:
            raise asyncio.CancelledError

    async def removed(self) -> None:
        """Wait for the removal begun; a failure is logged (cleanup must not hide a result)."""
        if await self._removal_done():
            raise asyncio.CancelledError

    async def _removal_done(self) -> bool:
        """Wait for the removal begun, through cancels; whether one came meanwhile."""
        task, self._removal = self._removal, None
        if task is None:
            return False
        cancelled = await wait_through_cancels(task)
        if not task.cancelled() and task.exception() is not None:
            self.ctx.log.warning(
                "container.cleanup_failed", role="grading", error=str(task.exception())
            )
        return cancelled


class _Dropped(Exception):
    """The grading container started after its instance ended; it was removed."""


async def wait_through_cancels(task: asyncio.Task[Any]) -> bool:
    """Wait until ``task`` has ended, whatever it raised; whether a cancel came meanwhile."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
        except Exception:  # noqa: BLE001 - the caller looks at the task
            break
    return cancelled
