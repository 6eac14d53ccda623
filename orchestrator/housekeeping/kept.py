"""Stopped containers kept for inspection (``swe-green inspect``), within per-run and
per-host limits."""

from __future__ import annotations

import threading
from pathlib import Path

from orchestrator.housekeeping.engine_leases import live_everywhere
from orchestrator.housekeeping.inventory import RUNNING, STOPPED, list_containers
from orchestrator.log import get_logger
from orchestrator.sandbox import Sandbox, SandboxBackend, SandboxError


def keep_stopped(sandbox: Sandbox) -> str:
    """Keep ``sandbox``'s container for inspection, stopped (``swe-green inspect`` starts it
    again); returns its name. A container that is gone already is fine. Its disk watcher
    ends."""
    try:
        sandbox.stop(timeout=2)
    except SandboxError as exc:
        get_logger().warning("container.stop_failed", container=sandbox.name, error=str(exc))
    return sandbox.name


_KEEP_LOCK = threading.Lock()


def room_to_keep(
    backend: SandboxBackend, data_dir: Path, run_id: str, *, per_run: int, per_host: int
) -> bool:
    """Whether one more stopped container of run ``run_id`` may be kept: fewer than
    ``per_run`` of the run's, and fewer than ``per_host`` on the engine once the oldest kept
    containers of finished or crashed runs (no live lease) are removed to make room. When
    the engine cannot be asked, the container is kept (a cleanup question must not fail an
    instance)."""
    try:
        return _room_to_keep(backend, data_dir, run_id, per_run, per_host)
    except SandboxError as exc:
        get_logger(run_id=run_id).warning("kept-container.count_failed", error=str(exc))
        return True


def _room_to_keep(
    backend: SandboxBackend, data_dir: Path, run_id: str, per_run: int, per_host: int
) -> bool:
    with _KEEP_LOCK:
        everything = list_containers(backend)
        kept = [info for info in everything if info.status in STOPPED]
        if sum(info.run_id == run_id for info in kept) >= per_run:
            return False
        if len(kept) < per_host:
            return True
        live = live_everywhere(backend, data_dir)
        # a run with a running container is in progress, its lease here or not
        busy = {info.run_id for info in everything if info.status in RUNNING}
        removable = sorted(
            (
                info for info in kept
                if not live.holds(info.run_id, info.name)
                and (info.run_id not in busy or info.run_id in live.expired_runs)
            ),
            key=lambda info: info.created,  # oldest first (RFC 3339 sorts as text)
        )  # fmt: skip
        for info in removable:
            if len(kept) < per_host:
                break
            if backend.remove_container(info.id):
                get_logger(run_id=run_id).info("kept-container.removed", container=info.name)
            kept.remove(info)
        return len(kept) < per_host
