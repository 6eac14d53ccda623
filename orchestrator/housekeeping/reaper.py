"""Containers a run or a cluster node must not leave behind: those still running at a run's
end, and those of cluster nodes that died."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from orchestrator.housekeeping.engine_leases import live_everywhere
from orchestrator.housekeeping.inventory import RUNNING, list_containers
from orchestrator.log import get_logger
from orchestrator.sandbox import SandboxBackend
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
