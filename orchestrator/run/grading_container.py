"""One instance's grading container, off the instance's critical path (#24): started beside the
participant's container (a fresh container from the instance image owes nothing to what the
participant does; it idles until the patch is taken), and removed while the participant's
container is disposed of."""

from __future__ import annotations

import asyncio

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

    def _start(self, image: str | Snapshot) -> Sandbox:
        return self.ctx.start_sandbox(image, self.instance, "grading", network=False)

    def start_ahead(self, image: str | Snapshot) -> None:
        """Start the container in the background (a task of the running loop)."""
        self._starting = asyncio.create_task(asyncio.to_thread(self._start, image))

    async def take(self, image: str | Snapshot) -> Sandbox:
        """The container started ahead, else one started now."""
        task, self._starting = self._starting, None
        if task is not None:
            return await task
        return await asyncio.to_thread(self._start, image)

    def remove_later(self, sandbox: Sandbox) -> None:
        """Begin removing ``sandbox``; :meth:`removed` waits for it."""
        self._removal = asyncio.create_task(asyncio.to_thread(sandbox.remove))

    async def drop(self) -> None:
        """Remove a container started ahead that grading never took."""
        task, self._starting = self._starting, None
        if task is None:
            return
        try:
            sandbox = await task
        except Exception:  # noqa: BLE001 - it did not start: nothing to remove
            return
        self.remove_later(sandbox)
        await self.removed()

    async def removed(self) -> None:
        """Wait for the removal begun; a failure is logged (cleanup must not hide a result)."""
        task, self._removal = self._removal, None
        if task is None:
            return
        try:
            await task
        except Exception as exc:  # noqa: BLE001
            self.ctx.log.warning("container.cleanup_failed", role="grading", error=str(exc))
