"""Runs in progress: the lease a run holds while it runs, and finding the runs that do."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.housekeeping.engine_leases import all_leases, hold_leases
from orchestrator.housekeeping.inventory import list_containers
from orchestrator.sandbox import SandboxBackend


@dataclass(frozen=True)
class ActiveRun:
    run_id: str
    started: float  # epoch seconds; 0 when only known from running containers
    instances: frozenset[str]
    images: frozenset[str] = frozenset()  # the images its containers started from


@contextlib.contextmanager
def active_run(
    backend: SandboxBackend, data_dir: Path, run_id: str, instance_ids: Iterable[str]
) -> Iterator[Path]:
    """Hold the run's lease, in ``data_dir`` and on the engine, while the block runs (see
    :mod:`orchestrator.leases`, :mod:`.engine_leases`): ``gc``, ``envs prune`` and the Ray
    reaper of any user of the engine spare its containers and images."""
    with hold_leases(backend, data_dir, run_id, instances=instance_ids) as path:
        yield path


def active_runs(backend: SandboxBackend, data_dir: Path) -> dict[str, ActiveRun]:
    """Runs in progress: those with a live lease (here or on the engine), and those with a
    running container."""
    runs: dict[str, ActiveRun] = {}
    leases = all_leases(backend, data_dir)
    for lease in leases:
        if lease.live:
            known = runs.get(lease.run_id)
            instances = lease.instances | (known.instances if known else frozenset())
            images = lease.images | (known.images if known else frozenset())
            runs[lease.run_id] = ActiveRun(lease.run_id, lease.started, instances, images)
    expired = {lease.run_id for lease in leases if not lease.live} - set(runs)
    for info in list_containers(backend):
        running = info.status == "running" and info.run_id
        if running and info.run_id not in runs and info.run_id not in expired:
            runs[info.run_id] = ActiveRun(info.run_id, 0.0, frozenset())
    return runs
