"""Leases on the Docker engine itself, so that every user of the engine sees them whatever
their data directory: ``gc``, ``envs prune``, ``inspect`` and the kept-container caps of one
user spare what another user's live run holds.

A lease is a small named volume labelled with the holder, its run id, the instances and
containers it holds, the images its containers started from, and the process (pid, host)
holding it. Its heartbeat is the volume's creation time: every ``LEASE_BEAT`` seconds the
holder creates a new volume and removes the one before, so the newest volume of a holder
says when it last beat, on the engine's clock (the same clock for every host that uses the
engine). As with the lease files (:mod:`orchestrator.leases`), a lease is live while its
heartbeat is younger than ``LEASE_TTL`` and, on this host, its process exists: a holder that
crashed or whose host died stops beating, and its lease expires. A backend without an engine
(the local one) holds and reads none; an engine that refuses volumes (a restricted gateway)
is logged once and the lease files alone count.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import socket
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from orchestrator.housekeeping.names import NOT_NAME
from orchestrator.leases import (
    LEASE_BEAT,
    LEASE_TTL,
    USED_IMAGES,
    Heartbeat,
    Lease,
    LiveSet,
    hold_lease,
    lease_state,
    live_set_of,
    read_leases,
)
from orchestrator.log import get_logger
from orchestrator.sandbox import SandboxBackend
from orchestrator.sandbox.docker.engine_state import (
    ENGINE_ERRORS,
    create_volume,
    engine_time,
    remove_volume,
    volumes,
)
from orchestrator.sandbox.models import LABEL_RUN, LABEL_TOOL

LABEL_LEASE = "swe-green.lease"  # the holder's name
LABEL_PID = "swe-green.lease.pid"
LABEL_HOST = "swe-green.lease.host"
LABEL_STARTED = "swe-green.lease.started"
LABEL_INSTANCES = "swe-green.lease.instances"
LABEL_CONTAINERS = "swe-green.lease.containers"
LABEL_IMAGES = "swe-green.lease.images"
VOLUME_PREFIX = "swe-green-lease-"


def _client(backend: SandboxBackend) -> Any | None:
    """The backend's Docker client, when it has one."""
    return getattr(backend, "client", None)


def _holder_volumes(client: Any, holder: str, host: str, pid: int) -> list[str]:
    """The names of the volumes of ``holder`` in process ``pid`` on ``host``."""
    found = volumes(client, [f"{LABEL_LEASE}={holder}"])
    return [
        name for name, labels, _ in found
        if labels.get(LABEL_HOST) == host and labels.get(LABEL_PID) == str(pid)
    ]  # fmt: skip


@contextlib.contextmanager
def hold_engine_lease(
    backend: SandboxBackend,
    run_id: str,
    *,
    instances: Iterable[str] = (),
    containers: Iterable[str] = (),
    holder: str | None = None,
    beat: float = LEASE_BEAT,
    heartbeat: Heartbeat | None = None,
) -> Iterator[None]:
    """Hold a lease on the engine on run ``run_id``'s containers and images (and on
    ``containers`` by name) while the block runs; ``heartbeat`` (or a heartbeat of its own,
    every ``beat`` seconds) renews it, at once when the run uses a new image
    (:func:`orchestrator.leases.note_image`). Its volumes go when the block ends."""
    client = _client(backend)
    if client is None:
        yield
        return
    holder = holder or run_id
    host, pid = socket.gethostname(), os.getpid()
    labels = {
        LABEL_TOOL: "1", LABEL_LEASE: holder, LABEL_RUN: run_id, LABEL_PID: str(pid),
        LABEL_HOST: host, LABEL_STARTED: f"{time.time():.3f}",
        LABEL_INSTANCES: ",".join(sorted(instances)),
        LABEL_CONTAINERS: ",".join(sorted(containers)),
    }  # fmt: skip
    log = get_logger(run_id=run_id)

    def beat_once() -> bool:
        name = f"{VOLUME_PREFIX}{NOT_NAME.sub('-', holder)[:80]}-{uuid.uuid4().hex[:12]}"
        images = {LABEL_IMAGES: ",".join(USED_IMAGES.of(run_id))}
        try:
            create_volume(client, name, {**labels, **images})
            for older in _holder_volumes(client, holder, host, pid):
                if older != name:
                    remove_volume(client, older)
        except ENGINE_ERRORS as exc:
            log.warning("lease.engine_beat_failed", error=str(exc).splitlines()[0])
            return False
        return True

    with contextlib.ExitStack() as stack:
        if heartbeat is None:
            heartbeat = stack.enter_context(Heartbeat(f"engine-lease-{run_id}", beat))
        stack.enter_context(USED_IMAGES.watching(run_id, heartbeat.woken))
        stack.callback(_remove_holder_volumes, client, holder, host, pid)
        if beat_once():  # an engine that refuses volumes: logged once, no heartbeat
            stack.enter_context(heartbeat.beating(beat_once))
        yield


def _remove_holder_volumes(client: Any, holder: str, host: str, pid: int) -> None:
    with contextlib.suppress(*ENGINE_ERRORS):
        for name in _holder_volumes(client, holder, host, pid):
            remove_volume(client, name)


def _engine_now(client: Any) -> float:
    """The engine's clock (epoch seconds), where the heartbeats were stamped."""
    errors: tuple[type[BaseException], ...] = (*ENGINE_ERRORS, KeyError, ValueError)
    try:
        return _epoch(engine_time(client))
    except errors:
        return time.time()


def _epoch(stamp: str) -> float:
    """An engine's RFC 3339 time (nanoseconds and all) as epoch seconds."""
    head, _, rest = stamp.partition(".")
    zone = ""
    for sign in ("Z", "+", "-"):
        if sign in rest:
            zone = sign + rest.split(sign, 1)[1]
            break
    if not rest:
        head, zone = head[:19], head[19:]
    zone = "+00:00" if zone in ("Z", "") else zone
    return dt.datetime.fromisoformat(head[:19] + zone).timestamp()


def engine_leases(
    backend: SandboxBackend, *, now: float | None = None, ttl: float = LEASE_TTL
) -> list[Lease]:
    """Every lease on the engine, live or expired, one per holder (its newest heartbeat).
    ``now`` shifts the engine's clock by as much as it differs from this host's (tests)."""
    client = _client(backend)
    if client is None:
        return []
    try:
        found = volumes(client, [LABEL_LEASE])
        engine_now = _engine_now(client)
    except ENGINE_ERRORS as exc:
        get_logger().warning("lease.engine_read_failed", error=str(exc).splitlines()[0])
        return []
    if now is not None:
        engine_now += now - time.time()
    newest: dict[tuple[str, str, str], tuple[float, str, dict[str, str]]] = {}
    for name, labels, created_at in found:
        key = (labels.get(LABEL_LEASE, ""), labels.get(LABEL_HOST, ""), labels.get(LABEL_PID, ""))
        try:
            created = _epoch(created_at)
        except ValueError:
            continue
        if key not in newest or created > newest[key][0]:
            newest[key] = (created, name, labels)
    leases = []
    for (_holder, host, pid_text), (heartbeat, name, labels) in sorted(newest.items()):
        pid = int(pid_text) if pid_text.isdigit() else 0
        why = lease_state(host, pid, heartbeat, engine_now, ttl)
        leases.append(
            Lease(
                run_id=labels.get(LABEL_RUN, ""),
                path=Path(name),
                pid=pid,
                host=host,
                started=float(labels.get(LABEL_STARTED, "0") or 0),
                heartbeat=heartbeat,
                instances=frozenset(filter(None, labels.get(LABEL_INSTANCES, "").split(","))),
                containers=frozenset(filter(None, labels.get(LABEL_CONTAINERS, "").split(","))),
                images=frozenset(filter(None, labels.get(LABEL_IMAGES, "").split(","))),
                live=not why,
                why=why,
            )  # fmt: skip
        )
    return leases


def all_leases(
    backend: SandboxBackend, data_dir: Path | None, *, now: float | None = None
) -> list[Lease]:
    """The lease files of ``data_dir`` and the leases on the engine."""
    files = read_leases(data_dir, now=now) if data_dir is not None else []
    return files + engine_leases(backend, now=now)


def live_everywhere(
    backend: SandboxBackend, data_dir: Path | None, *, now: float | None = None
) -> LiveSet:
    """What the live leases hold, in ``data_dir`` and on the engine (any user's)."""
    return live_set_of(all_leases(backend, data_dir, now=now))


def drop_expired_on_engine(backend: SandboxBackend, run_ids: Iterable[str]) -> list[str]:
    """Remove the volumes of the expired engine leases of ``run_ids`` (what they held is
    gone): each expired holder's own volumes, never a live holder's of the same run. Their
    names."""
    client = _client(backend)
    wanted = set(run_ids)
    if client is None or not wanted:
        return []
    removed = []
    for lease in engine_leases(backend):
        if lease.live or lease.run_id not in wanted:
            continue
        with contextlib.suppress(*ENGINE_ERRORS):
            for name, labels, _ in volumes(client, [f"{LABEL_RUN}={lease.run_id}", LABEL_LEASE]):
                if labels.get(LABEL_HOST) == lease.host and labels.get(LABEL_PID) == str(lease.pid):
                    remove_volume(client, name)
                    removed.append(name)
    return removed


@contextlib.contextmanager
def hold_leases(
    backend: SandboxBackend,
    data_dir: Path,
    run_id: str,
    *,
    instances: Iterable[str] = (),
    containers: Iterable[str] = (),
    holder: str | None = None,
    beat: float = LEASE_BEAT,
) -> Iterator[Path]:
    """A lease file in ``data_dir`` and a lease on the engine, held together and renewed by
    one heartbeat thread; the file's path."""
    instances, containers = list(instances), list(containers)
    with (
        Heartbeat(f"leases-{holder or run_id}", beat) as heartbeat,
        hold_lease(
            data_dir, run_id, instances=instances, containers=containers, holder=holder,
            heartbeat=heartbeat,
        ) as path,
        hold_engine_lease(
            backend, run_id, instances=instances, containers=containers, holder=holder,
            heartbeat=heartbeat,
        ),
    ):  # fmt: skip
        yield path
