"""Leases: what a run, a validation, an assessment or an ``inspect`` shell holds while it lives.

A lease is a file ``<data_dir>/active-runs/<holder>.json`` naming the run id (its containers
and images carry it as the ``swe-green.run`` label), the instances and any extra containers
it holds, the images its containers started from (:func:`note_image`: written at once, so
that ``envs prune`` spares what a live run actually uses), and the process (pid, host)
holding it. The holder rewrites the file every ``LEASE_BEAT`` seconds (its heartbeat: one
:class:`Heartbeat` thread beats every lease a holder holds together). A
lease is live while its heartbeat is younger than ``LEASE_TTL`` and, on this host, its
process exists; a crashed holder's lease (``kill -9``, a reboot) therefore expires, and what
it held becomes collectable. ``gc``, ``envs prune``, the kept-container caps and the Ray
reaper never touch what a live lease holds.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.atomic import atomic_write_text
from orchestrator.log import get_logger

LEASES_DIR = "active-runs"
LEASE_BEAT = 30.0  # seconds between heartbeats
LEASE_TTL = 300.0  # a heartbeat older than this: the holder is gone

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_.-]+")


@dataclass(frozen=True)
class Lease:
    """One lease file as read."""

    run_id: str
    path: Path
    pid: int
    host: str
    started: float  # epoch seconds
    heartbeat: float  # epoch seconds: the file's mtime
    instances: frozenset[str] = frozenset()
    containers: frozenset[str] = frozenset()
    images: frozenset[str] = frozenset()  # the images its containers started from
    live: bool = True
    why: str = field(default="", compare=False)  # why it is not live


def lease_state(host: str, pid: int, heartbeat: float, now: float, ttl: float = LEASE_TTL) -> str:
    """Why a lease is not live ("" when it is): its process on this host is gone, or its
    heartbeat is older than ``ttl``."""
    if host == socket.gethostname() and not _alive(pid):
        return f"its process {pid} is gone"
    if now - heartbeat > ttl:
        return f"no heartbeat for {now - heartbeat:.0f} s"
    return ""


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _UsedImages:
    """The images the runs of this process started containers from, by run id, and the
    leases to rewrite when one is new (each holder registers an event while it holds)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._images: dict[str, set[str]] = {}
        self._wakes: dict[str, list[threading.Event]] = {}

    @contextlib.contextmanager
    def watching(self, run_id: str, wake: threading.Event) -> Iterator[None]:
        """Set ``wake`` whenever run ``run_id`` uses a new image, while the block runs."""
        with self._lock:
            self._images.setdefault(run_id, set())
            self._wakes.setdefault(run_id, []).append(wake)
        try:
            yield
        finally:
            with self._lock:
                wakes = self._wakes.get(run_id, [])
                wakes.remove(wake)
                if not wakes:
                    self._wakes.pop(run_id, None)
                    self._images.pop(run_id, None)

    def note(self, run_id: str, image: str) -> None:
        with self._lock:
            images = self._images.get(run_id)
            if images is None or image in images:
                return
            images.add(image)
            wakes = list(self._wakes.get(run_id, []))
        for wake in wakes:
            wake.set()

    def of(self, run_id: str) -> list[str]:
        with self._lock:
            return sorted(self._images.get(run_id, ()))


USED_IMAGES = _UsedImages()


def note_image(run_id: str, image: str) -> None:
    """Run ``run_id`` started a container from ``image``: its leases held in this process
    name it from now on (none held: nothing to do)."""
    USED_IMAGES.note(run_id, image)


def lease_path(data_dir: Path, holder: str) -> Path:
    return Path(data_dir) / LEASES_DIR / f"{_NOT_NAME.sub('_', holder)}.json"


class Heartbeat:
    """One daemon thread that calls its beats every ``every`` seconds, and at once when
    :attr:`woken` is set, while the ``with`` block runs. A beat that raises is logged and the
    others still beat; the thread stops (and is joined) when the block ends. Leases held
    together share one heartbeat (:func:`hold_lease`'s ``heartbeat``)."""

    JOIN_TIMEOUT = 5.0  # seconds a stop (or a removal) waits for a beat in flight

    def __init__(self, name: str, every: float = LEASE_BEAT) -> None:
        self.name = f"heartbeat-{name}"
        self.every = every
        self.woken = threading.Event()  # set: beat now
        self._stop = threading.Event()
        self._lock = threading.Lock()  # held while a beat runs and while beats change
        self._beats: list[Callable[[], object]] = []
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self.woken.set()
        self._thread.join(timeout=self.JOIN_TIMEOUT)

    @contextlib.contextmanager
    def beating(self, beat: Callable[[], object]) -> Iterator[None]:
        """Call ``beat`` on every heartbeat while the block runs; once the block has ended
        it is not called again (a call in flight is waited for, up to ``JOIN_TIMEOUT``)."""
        with self._lock:
            self._beats.append(beat)
        try:
            yield
        finally:
            held = self._lock.acquire(timeout=self.JOIN_TIMEOUT)
            try:
                self._beats.remove(beat)
            finally:
                if held:
                    self._lock.release()

    def _run(self) -> None:
        log = get_logger()
        while True:
            self.woken.wait(self.every)
            self.woken.clear()
            if self._stop.is_set():
                return
            with self._lock:
                beats = list(self._beats)
            for beat in beats:
                with self._lock:
                    if beat not in self._beats:
                        continue  # its holder let go meanwhile
                    try:
                        beat()
                    except Exception as exc:  # noqa: BLE001 - a beat that fails must not stop the others
                        log.warning("lease.beat_failed", heartbeat=self.name, error=repr(exc))


@contextlib.contextmanager
def hold_lease(
    data_dir: Path,
    run_id: str,
    *,
    instances: Iterable[str] = (),
    containers: Iterable[str] = (),
    holder: str | None = None,
    beat: float = LEASE_BEAT,
    heartbeat: Heartbeat | None = None,
) -> Iterator[Path]:
    """Hold a lease on run ``run_id``'s containers and images (and on ``containers`` by name)
    while the block runs; ``heartbeat`` (or a heartbeat of its own, every ``beat`` seconds)
    renews it, at once when the run uses a new image. The file goes when the block ends."""
    path = lease_path(data_dir, holder or run_id)
    payload = {
        "run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(),
        "started": time.time(), "instances": sorted(instances), "containers": sorted(containers),
    }  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)

    def write() -> None:
        atomic_write_text(path, json.dumps({**payload, "images": USED_IMAGES.of(run_id)}))

    with contextlib.ExitStack() as stack:
        if heartbeat is None:
            heartbeat = stack.enter_context(Heartbeat(f"lease-{run_id}", beat))
        stack.enter_context(USED_IMAGES.watching(run_id, heartbeat.woken))
        stack.callback(path.unlink, missing_ok=True)
        write()
        stack.enter_context(heartbeat.beating(write))
        yield path


def read_leases(data_dir: Path, *, now: float | None = None, ttl: float = LEASE_TTL) -> list[Lease]:
    """Every lease file under ``data_dir``, live or expired."""
    now = time.time() if now is None else now
    found = []
    for path in sorted((Path(data_dir) / LEASES_DIR).glob("*.json")):
        try:
            data = json.loads(path.read_text())
            heartbeat = path.stat().st_mtime
            run_id = str(data["run_id"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        pid, host = int(data.get("pid", 0) or 0), str(data.get("host", ""))
        why = lease_state(host, pid, heartbeat, now, ttl)
        found.append(
            Lease(
                run_id=run_id,
                path=path,
                pid=pid,
                host=host,
                started=float(data.get("started", 0) or 0),
                heartbeat=heartbeat,
                instances=frozenset(data.get("instances") or ()),
                containers=frozenset(data.get("containers") or ()),
                images=frozenset(data.get("images") or ()),
                live=not why,
                why=why,
            )  # fmt: skip
        )
    return found


@dataclass(frozen=True)
class LiveSet:
    """What the live leases hold: run ids and container names."""

    runs: frozenset[str]
    containers: frozenset[str]
    expired_runs: frozenset[str]  # runs whose only leases expired (crashed holders)

    def holds(self, run_id: str, name: str) -> bool:
        return run_id in self.runs or name in self.containers


def live_set_of(leases: Iterable[Lease]) -> LiveSet:
    """What the live ones of ``leases`` hold (from any number of places)."""
    leases = list(leases)
    live = [lease for lease in leases if lease.live]
    runs = frozenset(lease.run_id for lease in live)
    return LiveSet(
        runs=runs,
        containers=frozenset(name for lease in live for name in lease.containers),
        expired_runs=frozenset(lease.run_id for lease in leases if not lease.live) - runs,
    )


def drop_expired(data_dir: Path, run_ids: Iterable[str]) -> list[Path]:
    """Delete the expired lease files of ``run_ids`` (what they held is gone); their paths."""
    wanted = set(run_ids)
    dropped = []
    for lease in read_leases(data_dir):
        if not lease.live and lease.run_id in wanted:
            lease.path.unlink(missing_ok=True)
            dropped.append(lease.path)
    return dropped
