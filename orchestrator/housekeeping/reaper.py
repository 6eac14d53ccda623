"""Containers a run or a cluster node must not leave behind: those still running at a run's
end, those of cluster nodes that died, and what a dead lease holder left (a ``serve`` or a
``run`` killed with ``kill -9``): its running containers, its lease file and its lease on the
engine."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.housekeeping.engine_leases import (
    ENGINE_ERRORS,
    all_leases,
    drop_expired_on_engine,
    live_everywhere,
)
from orchestrator.housekeeping.inventory import RUNNING, list_containers
from orchestrator.leases import drop_expired, live_set_of
from orchestrator.log import get_logger
from orchestrator.sandbox import SandboxBackend, SandboxError
from orchestrator.sandbox.models import LABEL_NODE


def stop_run_containers(backend: SandboxBackend, run_id: str) -> list[str]:
    """Stop the run's containers that still run (a run never ends with one); their names."""
    stopped = []
    for info in list_containers(backend, run_id=run_id):
        if info.status not in RUNNING:
            continue
        if backend.stop_container(info.id, timeout=2):
            stopped.append(info.name)
    if stopped:
        get_logger(run_id=run_id).warning("run.stopped_containers", containers=stopped)
    return stopped


def remove_dead_node_containers(
    backend: SandboxBackend,
    alive_nodes: Iterable[str],
    data_dir: Path | None = None,
    own_run: str | None = None,
) -> list[str]:
    """Remove the containers started by cluster nodes that are no longer alive (a node that
    died mid-instance leaves them; its instances ran again elsewhere). Containers of a single
    host's runs carry no node and stay, and so do those a live lease in ``data_dir`` holds
    (another run's), unless they are ``own_run``'s. Their names."""
    alive = set(alive_nodes)
    live = live_everywhere(backend, data_dir)
    removed = []
    for info in backend.containers():
        node = info.labels.get(LABEL_NODE, "")
        if not node or node in alive:
            continue
        if live is not None and info.run_id != own_run and live.holds(info.run_id, info.name):
            continue
        if backend.remove_container(info.id):
            removed.append(info.name)
    if removed:
        get_logger().warning("cluster.removed_dead_node_containers", containers=removed)
    return removed


@dataclass(frozen=True)
class Reaped:
    """What :func:`reap_dead_holders` removed."""

    runs: list[str] = field(default_factory=list)  # the dead holders' run ids
    containers: list[str] = field(default_factory=list)
    lease_files: list[str] = field(default_factory=list)
    lease_volumes: list[str] = field(default_factory=list)


def reap_dead_holders(backend: SandboxBackend, data_dir: Path | None) -> Reaped:
    """Remove what runs whose every lease expired left behind: their running (or created)
    containers, their lease files in ``data_dir`` and their leases on the engine.

    A lease is expired only when its holder is provably gone (its process on this host no
    longer exists, or it has not beaten for ``LEASE_TTL``): a run any live lease holds, here
    or on the engine, whoever's it is, keeps everything; a container a live lease names
    stays; stopped containers (kept for ``inspect``) stay for the kept-container caps and
    ``gc``. Every user of the engine may reap another's dead run: its engine lease says it is
    dead. Called when ``serve`` and every run start."""
    leases = all_leases(backend, data_dir)
    live = live_set_of(leases)
    dead = live.expired_runs
    if not dead:
        return Reaped()
    containers = []
    for info in list_containers(backend):
        if info.run_id not in dead or info.status not in (*RUNNING, "created"):
            continue
        if live.holds(info.run_id, info.name):
            continue
        if backend.remove_container(info.id):
            containers.append(info.name)
    files = [str(path) for path in drop_expired(data_dir, dead)] if data_dir is not None else []
    reaped = Reaped(
        runs=sorted(dead),
        containers=containers,
        lease_files=files,
        lease_volumes=drop_expired_on_engine(backend, dead),
    )
    get_logger().warning(
        "housekeeping.reaped_dead_holders", runs=reaped.runs, containers=containers,
        lease_files=len(files), lease_volumes=len(reaped.lease_volumes),
    )  # fmt: skip
    return reaped


def reap_at_start(backend: SandboxBackend, data_dir: Path | None) -> Reaped:
    """:func:`reap_dead_holders`, for a start that must not fail over housekeeping: an engine
    that refuses is logged, and the start goes on."""
    errors: tuple[type[BaseException], ...] = (*ENGINE_ERRORS, SandboxError)
    try:
        return reap_dead_holders(backend, data_dir)
    except errors as exc:
        get_logger().warning("housekeeping.reap_failed", error=str(exc).splitlines()[0][:300])
        return Reaped()
