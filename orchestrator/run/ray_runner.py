"""Running a run's instances on the Docker hosts of a Ray cluster (setting ``ray_address``).

The driver (this process) keeps the run: the scheduler's run directory, progress, resume and
report are those of a local run. Each instance becomes one Ray task (:func:`.ray_node.
run_on_node`) that needs one unit of the nodes' custom resource (``sandbox_slots``: a Docker
host's instances at once) and owns its containers on that host for its lifetime. Placement
(:mod:`.placement`) prefers a node that holds the instance's environment image; the task is
pinned there softly, so when that node dies Ray starts it again, from the start, on another
node, at most ``ray_max_retries`` times. Only the attempt that ends sends back its result and
files, so a retry neither loses nor duplicates a result. The containers a dead node left on
its Docker host are removed by the next task or housekeeping call on that host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from typing import TYPE_CHECKING, Any

from orchestrator.atomic import atomic_write_bytes
from orchestrator.context.run_context import RunContext
from orchestrator.errors import UserError, first_line
from orchestrator.log import get_logger
from orchestrator.models import Instance, InstanceResult, Reason, Status
from orchestrator.participant.protocol import Participant
from orchestrator.run.pipeline import PhaseCallback
from orchestrator.run.placement import Placement
from orchestrator.settings import Settings

if TYPE_CHECKING:
    from orchestrator.run.runner import InstanceRunner

try:
    import ray
    from ray.exceptions import RayError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError:  # the optional dependency: RayRunner.connect says how to install it
    ray = None  # type: ignore[assignment]

NODE_CHECK_TIMEOUT = 120.0  # seconds for every node to answer the first check
PHASE_POLL = 0.5  # seconds between two reads of the phase board
_NODE_ID = re.compile(r"node ID: ([0-9a-f]{56})")


def dead_node_of(exc: BaseException) -> str | None:
    """The id of the node whose death ``exc`` (a Ray ``NodeDiedError``) reports, if it names
    one (Ray gives it only in the message)."""
    found = _NODE_ID.search(str(exc))
    return found.group(1) if found else None


def _remote(fn: Any, **options: Any) -> Any:
    return ray.remote(**options)(fn)


class PhaseBoard:
    """A Ray actor on which the nodes' tasks post their phases for the driver to read."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def phase(self, instance_id: str, phase: str) -> None:
        self.events.append((instance_id, phase))

    def drain(self) -> list[tuple[str, str]]:
        events, self.events = self.events, []
        return events


class RayRunner:
    """Instances on the nodes of a Ray cluster (see the module's docstring)."""

    def __init__(self, all_settings: Settings, *, owns_connection: bool) -> None:
        from orchestrator.run import ray_node

        self.all_settings = all_settings
        self.settings = settings = all_settings.run
        self.resource = settings.ray_slots_resource
        self.owns_connection = owns_connection
        self.placement = Placement()
        self.log = get_logger(ray_address=settings.ray_address)
        self._run_task = _remote(ray_node.run_on_node, num_cpus=0)
        self._housekeeping = _remote(ray_node.housekeeping_on_node, num_cpus=0)
        self._environments = _remote(ray_node.environments_on_node, num_cpus=0)
        # Any: ray's ActorHandle typing does not model `handle.method.remote()`
        self.board: Any = ray.remote(num_cpus=0)(PhaseBoard).remote()
        self._poller: asyncio.Task[None] | None = None
        self._on_phase: PhaseCallback | None = None
        # nodes a task of this run saw die: dead to housekeeping and placement at once, before
        # Ray's heartbeat detector marks them (a node's id never comes back alive)
        self.known_dead: set[str] = set()

    # ------------------------------------------------------------------ connecting
    @classmethod
    def connect(cls, settings: Settings) -> RayRunner:
        """Join the cluster at ``ray_address`` and check that it has Docker hosts."""
        if ray is None:
            raise UserError(
                "ray_address is set, but Ray is not installed here.",
                "pip install 'swe-green[ray]' on this host and on every node of the cluster.",
            )
        address = settings.run.ray_address
        owns = not ray.is_initialized()
        try:
            ray.init(
                address=address, namespace="swe-green", log_to_driver=False,
                ignore_reinit_error=True, logging_level=logging.WARNING,
            )  # fmt: skip
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UserError(
                f"No Ray cluster answers at {address} ({first_line(exc, 200)}).",
                "start one (`ray start --head` on one host, `ray start --address HEAD:6379 "
                "--resources '{\"sandbox_slots\": 2}'` on each Docker host) or fix ray_address.",
            ) from None
        runner = cls(settings, owns_connection=owns)
        try:
            runner.check_nodes()
        except BaseException:
            runner.close()
            raise
        return runner

    def node_slots(self) -> dict[str, int]:
        """The alive nodes that offer slots, and how many."""
        return {
            node["NodeID"]: int(node.get("Resources", {}).get(self.resource, 0))
            for node in ray.nodes()
            if node.get("Alive")
            and node["NodeID"] not in self.known_dead
            and node.get("Resources", {}).get(self.resource, 0) >= 1
        }

    def check_nodes(self) -> None:
        """Every node with slots answers with the environments its Docker host holds (and
        removes what dead nodes left there); a cluster without slots is a user error."""
        slots = self.node_slots()
        if not slots:
            raise UserError(
                f"The Ray cluster at {self.settings.ray_address} offers no {self.resource!r}: "
                "no node is a Docker host for swe-green.",
                f"start each Docker host's node with `ray start --address HEAD:6379 "
                f"--resources '{{\"{self.resource}\": 2}}'` (2: instances at once there).",
            )
        self.placement.set_nodes(slots)
        settings = self.all_settings
        refs = {node: self._on(node, self._environments).remote(settings) for node in slots}
        for node, ref in refs.items():
            try:
                self.placement.holds(node, ray.get(ref, timeout=NODE_CHECK_TIMEOUT))
            except RayError as exc:
                raise UserError(
                    f"Ray node {node[:12]} cannot serve as a Docker host: {first_line(exc)}",
                    "start a Docker engine on that host (scripts/setup) and install swe-green "
                    "in the Python environment `ray start` ran from.",
                ) from None
        self.log.info("cluster.nodes", slots=slots, holdings=dict(self.placement.holders))

    def _on(self, node: str, remote_fn: Any) -> Any:
        """``remote_fn`` pinned to ``node`` (it runs there or fails)."""
        return remote_fn.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
        )

    # ------------------------------------------------------------------ the runner protocol
    def capacity(self) -> int | None:
        return sum(self.node_slots().values()) or None

    async def run(
        self,
        ctx: RunContext,
        instance: Instance,
        participant: Participant,
        on_phase: PhaseCallback,
    ) -> InstanceResult:
        from orchestrator.run.ray_node import InstanceJob

        self._watch_phases(on_phase)
        job = InstanceJob(
            run_id=ctx.run_id, settings=ctx.settings, instance=instance,
            participant=participant,
        )  # fmt: skip
        self.placement.set_nodes(await asyncio.to_thread(self.node_slots))
        node = self.placement.choose(instance.repo_version)
        options: dict[str, Any] = {
            "resources": {self.resource: 1},
            "max_retries": self.settings.ray_max_retries,
            "retry_exceptions": False,
            "name": f"swe-green {instance.instance_id}",
        }
        if node is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=True)
        ref = self._run_task.options(**options).remote(job, self.board)
        try:
            outcome = await ref
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)
            raise
        except RayError as exc:
            ctx.log.error("instance.node_lost", instance_id=instance.instance_id, error=repr(exc))
            if dead := dead_node_of(exc):
                self.known_dead.add(dead)
            return self._lost(instance, exc)
        finally:
            self.placement.release(node)
        if outcome.result.node:  # it ran there (a retry may have moved it): the environment
            self.placement.holds(outcome.result.node, [instance.repo_version])
        instance_dir = ctx.instance_dir(instance)
        for name, data in outcome.files.items():
            target = (instance_dir / name).resolve()
            if target.is_relative_to(instance_dir.resolve()):  # a node names files inside it
                atomic_write_bytes(target, data)
        return outcome.result

    def _lost(self, instance: Instance, exc: Exception) -> InstanceResult:
        tries = self.settings.ray_max_retries + 1
        return InstanceResult(
            instance_id=instance.instance_id, repo=instance.repo, status=Status.ERROR,
            reason=Reason.INFRASTRUCTURE,
            message=f"the instance did not finish on the Ray cluster: {tries} attempt(s), "
            f"the last ended by {type(exc).__name__}: {first_line(exc)}; it was not graded "
            "(ray_max_retries sets the attempts)",
        )  # fmt: skip

    def clean_unfinished(self, ctx: RunContext, finished: set[str]) -> list[str]:
        return self._on_every_node(ctx, sorted(finished))

    def stop_leftovers(self, ctx: RunContext) -> list[str]:
        return self._on_every_node(ctx, None)

    def _on_every_node(self, ctx: RunContext, finished: list[str] | None) -> list[str]:
        """Housekeeping on every alive node, one after the other (nodes may share an engine)."""
        names: list[str] = []
        for node in self.node_slots():
            ref = self._on(node, self._housekeeping).remote(
                ctx.settings, ctx.run_id, finished, sorted(self.known_dead)
            )
            try:
                names += ray.get(ref, timeout=NODE_CHECK_TIMEOUT)
            except RayError as exc:
                ctx.log.warning("cluster.housekeeping_failed", node=node, error=first_line(exc))
        return names

    def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None
        with contextlib.suppress(Exception):
            ray.kill(self.board)
        if self.owns_connection:
            ray.shutdown()

    # ------------------------------------------------------------------ progress
    def _watch_phases(self, on_phase: PhaseCallback) -> None:
        self._on_phase = on_phase
        if self._poller is None:
            self._poller = asyncio.get_running_loop().create_task(self._poll_phases())

    async def _poll_phases(self) -> None:
        while True:
            await asyncio.sleep(PHASE_POLL)
            try:
                events = await self.board.drain.remote()
            except RayError as exc:  # the board's node died: no more phases, the run goes on
                self.log.warning("cluster.phase_board_lost", error=first_line(exc))
                return
            for instance_id, phase in events:
                if self._on_phase is not None:
                    self._on_phase(instance_id, phase)


# mypy checks that the classes implement their Protocols (nothing to do at run time)
if TYPE_CHECKING:
    _runner: type[InstanceRunner] = RayRunner
