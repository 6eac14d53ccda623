"""What runs on a Ray worker node: one instance against the node's own Docker engine, and the
node's housekeeping.

A node is a Docker host started with ``ray start --address HEAD --resources
'{"sandbox_slots": N}'`` from a Python environment that has swe-green installed. Each
instance runs in a Ray task that owns its containers for its lifetime; the containers carry
the node's id as a label (``swe-green.node``), so the containers a dead node left are found
and removed by any task or housekeeping call on that Docker host once the node is known dead.
The instance's files are written to a scratch run directory on the node and shipped back
with the result: the driver keeps the run directory.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import ray
from pydantic import BaseModel, ConfigDict, Field

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir, relative_logs
from orchestrator.environments.env_image import LABEL_REPO_VERSION
from orchestrator.housekeeping.inventory import list_images
from orchestrator.housekeeping.reaper import remove_dead_node_containers, stop_run_containers
from orchestrator.models import Instance, InstanceResult
from orchestrator.participant.protocol import Participant
from orchestrator.run.pipeline import run_instance
from orchestrator.run.runner import clean_unfinished_here
from orchestrator.sandbox import SandboxBackend
from orchestrator.settings import ENV_PREFIX, Settings

# the settings that name paths of the host they run on: a node's own environment wins
HOST_PATHS = {"storage": ("data_dir", "runs_dir"), "repos": ("mirror_dir",)}
SCRATCH_DIR = "ray-scratch"


class InstanceJob(BaseModel):
    """What the driver sends a node for one instance (pickled by Ray: the participant is
    any :class:`Participant`, each kind a model that pickles)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_id: str
    settings: Settings
    instance: Instance
    participant: Participant


class NodeOutcome(BaseModel):
    """What a node sends back: the result (``host`` and ``node`` say where it ran) and the
    instance directory's files."""

    result: InstanceResult
    files: dict[str, bytes] = Field(default_factory=dict)  # relative path -> content


def this_node() -> str:
    return ray.get_runtime_context().get_node_id()


def alive_nodes(known_dead: Iterable[str] = ()) -> set[str]:
    """The nodes Ray reports alive, less those the driver already saw die (Ray marks a killed
    node dead only after missing heartbeats, seconds later)."""
    return {node["NodeID"] for node in ray.nodes() if node.get("Alive")} - set(known_dead)


def on_this_node(settings: Settings) -> Settings:
    """``settings`` with the host paths (data, runs, mirrors) of this node's environment
    where it sets them (``SWE_GREEN_DATA_DIR`` where ``ray start`` ran), else as given."""
    updates: dict[str, Any] = {}
    for group, names in HOST_PATHS.items():
        own = {
            name: Path(os.environ[var])
            for name in names
            if (var := f"{ENV_PREFIX}{name.upper()}") in os.environ
        }
        if own:
            updates[group] = getattr(settings, group).model_copy(update=own)
    return settings.model_copy(update=updates)


def _backend(settings: Settings) -> SandboxBackend:
    from orchestrator.sandbox.factory import backend_from

    return backend_from(settings)


def run_on_node(job: InstanceJob, board: Any = None) -> NodeOutcome:
    """The body of the Ray task of one instance (see :mod:`.ray_runner`)."""
    settings = on_this_node(job.settings)
    backend = _backend(settings)
    node = this_node()
    remove_dead_node_containers(
        backend, alive_nodes(), settings.storage.data_dir, own_run=job.run_id
    )
    scratch = settings.storage.data_dir / SCRATCH_DIR / job.run_id
    ctx = RunContext(settings, backend, job.run_id, RunDir(scratch), node=node)

    def on_phase(instance_id: str, phase: str) -> None:
        if board is not None:
            board.phase.remote(instance_id, phase)

    result = asyncio.run(run_instance(ctx, job.instance, job.participant, on_phase))
    instance_dir = ctx.instance_dir(job.instance)
    logs = relative_logs(instance_dir, result.logs)
    result = result.model_copy(update={"logs": logs, "host": socket.gethostname(), "node": node})
    files = _collect(instance_dir)
    shutil.rmtree(instance_dir, ignore_errors=True)
    return NodeOutcome(result=result, files=files)


def _collect(directory: Path) -> dict[str, bytes]:
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def housekeeping_on_node(
    settings: Settings, run_id: str, finished: list[str] | None, known_dead: Sequence[str] = ()
) -> list[str]:
    """On this node's Docker host: remove dead nodes' containers (``known_dead``: nodes the
    driver saw die), then the run's containers of unfinished instances (``finished`` given)
    or stop the run's running ones (``None``)."""
    settings = on_this_node(settings)
    backend = _backend(settings)
    removed = remove_dead_node_containers(
        backend, alive_nodes(known_dead), settings.storage.data_dir, own_run=run_id
    )
    if finished is None:
        return removed + stop_run_containers(backend, run_id)
    return removed + clean_unfinished_here(backend, run_id, set(finished))


def environments_on_node(settings: Settings) -> list[str]:
    """The ``owner/name@version`` of every environment image on this node's Docker host
    (asked at the start of a run; the containers dead nodes left there are removed first)."""
    settings = on_this_node(settings)
    backend = _backend(settings)
    remove_dead_node_containers(backend, alive_nodes(), settings.storage.data_dir)
    found = {img.labels.get(LABEL_REPO_VERSION, "") for img in list_images(backend, ("env",))}
    return sorted(found - {""})
