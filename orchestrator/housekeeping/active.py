"""Runs in progress: the lease a run holds while it runs, and finding the runs that do."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.housekeeping.inventory import list_containers
from orchestrator.leases import hold_lease, read_leases
from orchestrator.sandbox import SandboxBackend


@dataclass(frozen=True)
class ActiveRun:
    run_id: str
    started: float  # epoch seconds; 0 when only known from running containers
    instances: frozenset[str]


@contextlib.contextmanager
def active_run(data_dir: Path, run_id: str, instance_ids: Iterable[str]) -> Iterator[Path]:
    """Hold the run's lease while the block runs (see :mod:`orchestrator.leases`): ``gc``,
    ``envs prune`` and the Ray reaper spare its containers and images."""
    with hold_lease(data_dir, run_id, instances=instance_ids) as path:
        yield path


def active_runs(backend: SandboxBackend, data_dir: Path) -> dict[str, ActiveRun]:
    """Runs in progress: those with a live lease, and those with a running container."""
    runs: dict[str, ActiveRun] = {}
    leases = read_leases(data_dir)
    for lease in leases:
        if lease.live:
            runs[lease.run_id] = ActiveRun(lease.run_id, lease.started, lease.instances)
    expired = {lease.run_id for lease in leases if not lease.live} - set(runs)
    for info in list_containers(backend):
        running = info.status == "running" and info.run_id
        if running and info.run_id not in runs and info.run_id not in expired:
            runs[info.run_id] = ActiveRun(info.run_id, 0.0, frozenset())
    return runs
