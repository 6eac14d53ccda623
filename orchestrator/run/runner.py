"""Where a run's instances run: on this host, or on the Docker hosts of a Ray cluster.

An :class:`InstanceRunner` runs one instance's seven phases (:func:`.pipeline.run_instance`)
somewhere and returns its result, and tidies the run's containers wherever they are. The
scheduler (:mod:`.scheduler`) owns everything else: the run directory, progress, resume and
the report are the same whichever runner it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from orchestrator.context.run_context import RunContext
from orchestrator.housekeeping.inventory import list_containers
from orchestrator.housekeeping.reaper import stop_run_containers
from orchestrator.models import Instance, InstanceResult
from orchestrator.participant.protocol import Participant
from orchestrator.run.pipeline import PhaseCallback, run_instance
from orchestrator.sandbox import SandboxBackend


class InstanceRunner(Protocol):
    """Runs instances of a run and removes what they leave."""

    def capacity(self) -> int | None:
        """Instances it can run at once (``None``: the host's default)."""
        ...

    async def run(
        self,
        ctx: RunContext,
        instance: Instance,
        participant: Participant,
        on_phase: PhaseCallback,
    ) -> InstanceResult:
        """The instance's result; every file it made is in the run directory when it returns.
        Never raises but for cancellation."""
        ...

    def clean_unfinished(self, ctx: RunContext, finished: set[str]) -> list[str]:
        """Remove the run's containers of instances not in ``finished``; their names."""
        ...

    def stop_leftovers(self, ctx: RunContext) -> list[str]:
        """Stop the run's containers that still run at its end (a backstop); their names."""
        ...

    def close(self) -> None:
        """Let go of what the runner holds (a cluster connection)."""
        ...


class LocalRunner:
    """Every instance on this host, with the run context's own sandbox backend."""

    def capacity(self) -> int | None:
        return None

    async def run(
        self,
        ctx: RunContext,
        instance: Instance,
        participant: Participant,
        on_phase: PhaseCallback,
    ) -> InstanceResult:
        return await run_instance(ctx, instance, participant, on_phase)

    def clean_unfinished(self, ctx: RunContext, finished: set[str]) -> list[str]:
        return clean_unfinished_here(ctx.backend, ctx.run_id, finished)

    def stop_leftovers(self, ctx: RunContext) -> list[str]:
        return stop_run_containers(ctx.backend, ctx.run_id)

    def close(self) -> None:
        return None


def clean_unfinished_here(backend: SandboxBackend, run_id: str, finished: set[str]) -> list[str]:
    """Remove the containers an interrupted run left on this host for unfinished instances."""
    removed = []
    for info in list_containers(backend, run_id=run_id):
        if info.instance_id not in finished:
            backend.remove_container(info.id)
            removed.append(info.name)
    return removed


# mypy checks that the classes implement their Protocols (nothing to do at run time)
if TYPE_CHECKING:
    _runner: type[InstanceRunner] = LocalRunner
