"""Build locks on the Docker engine, so that users with their own data directories build an
image of one key once, one after the other, instead of side by side.

The lock is a container that is created, never started, under the name
``swe-green-lock-<key>``: the engine lets one container have a name, so creating it is the
atomic step, and removing it releases the lock. Its labels name its holder, whose engine
lease (:mod:`.engine_leases`) beats while it holds the lock; a waiter whose holder's lease
has expired (its process gone, or no heartbeat on the engine's clock for ``LEASE_TTL``)
removes the stale lock and takes it. The container is created from an image the engine has,
whose labels it would inherit: its own labels override the tool's label (``sandbox ls`` and
the clean-ups of runs do not see it), and ``gc`` removes a lock only when its holder's lease
has expired (:func:`build_locks`).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator

from orchestrator.housekeeping.engine_leases import engine_leases, hold_engine_lease
from orchestrator.housekeeping.names import NAME_LIMIT, NOT_NAME
from orchestrator.log import get_logger
from orchestrator.sandbox import SandboxBackend
from orchestrator.sandbox.docker.engine_state import (
    create_named,
    named_labels,
    named_with_label,
    remove_named,
)
from orchestrator.sandbox.models import LABEL_KIND, LABEL_TOOL

LABEL_LOCK = "swe-green.lock"  # the key
LABEL_LOCK_HOLDER = "swe-green.lock.holder"  # the run id of the holder's engine lease
LOCK_PREFIX = "swe-green-lock-"
LOCK_POLL = 2.0  # seconds between attempts while another holds the lock


def lock_name(key: str) -> str:
    return (LOCK_PREFIX + NOT_NAME.sub("-", key))[:NAME_LIMIT].rstrip("-.")


def _holder_live(backend: SandboxBackend, holder: str) -> bool:
    return any(lease.live for lease in engine_leases(backend) if lease.run_id == holder)


def lock_labels(key: str, holder: str) -> dict[str, str]:
    """A lock container's labels: its key and holder, and the tool's label overridden (the
    image's would otherwise make it one of this tool's containers)."""
    return {LABEL_TOOL: "lock", LABEL_KIND: "lock", LABEL_LOCK: key, LABEL_LOCK_HOLDER: holder}


def build_locks(backend: SandboxBackend) -> list[tuple[str, str, bool]]:
    """(container name, key, whether its holder lives) of every build lock on the engine."""
    client = getattr(backend, "client", None)
    if client is None:
        return []
    live = {lease.run_id for lease in engine_leases(backend) if lease.live}
    return [
        (name, labels.get(LABEL_LOCK, ""), labels.get(LABEL_LOCK_HOLDER, "") in live)
        for name, labels in named_with_label(client, LABEL_LOCK)
    ]


def remove_lock(backend: SandboxBackend, name: str) -> None:
    client = getattr(backend, "client", None)
    if client is not None:
        remove_named(client, name)


@contextlib.contextmanager
def engine_lock(
    backend: SandboxBackend, key: str, image: str, *, poll: float = LOCK_POLL
) -> Iterator[None]:
    """Hold the engine-wide lock of ``key`` while the block runs (a lock container created
    from ``image``, or any image the engine has); a backend without an engine holds none."""
    client = getattr(backend, "client", None)
    if client is None:
        yield
        return

    name = lock_name(key)
    holder = f"lock-{uuid.uuid4().hex[:12]}"
    log = get_logger()
    with hold_engine_lease(backend, holder):
        waited = False
        labels = lock_labels(key, holder)
        while not create_named(client, image, name, labels):
            other = named_labels(client, name)
            if other is None:
                continue  # released meanwhile
            if not _holder_live(backend, other.get(LABEL_LOCK_HOLDER, "")):
                log.warning("lock.stale_taken_over", key=key, holder=other.get(LABEL_LOCK_HOLDER))
                remove_named(client, name)
                continue
            if not waited:
                log.info("lock.waiting", key=key, holder=other.get(LABEL_LOCK_HOLDER))
                waited = True
            time.sleep(poll)
        try:
            yield
        finally:
            held = named_labels(client, name)
            if held is not None and held.get(LABEL_LOCK_HOLDER) == holder:
                remove_named(client, name)
