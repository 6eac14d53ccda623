"""Build locks on the Docker engine, so that users with their own data directories build an
image of one key once, one after the other, instead of side by side.

The lock is a container that is created, never started, under the name
``swe-green-lock-<key>``: the engine lets one container have a name, so creating it is the
atomic step, and removing it releases the lock. Its labels name its holder, whose engine
lease (:mod:`.engine_leases`) beats while it holds the lock; a waiter whose holder's lease
has expired (its process gone, or no heartbeat on the engine's clock for ``LEASE_TTL``)
removes the stale lock and takes it. The container is not labelled as one of this tool's
(``gc`` and ``sandbox ls`` do not see it) and is created from an image the engine has.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

from orchestrator.housekeeping.engine_leases import engine_leases, hold_engine_lease
from orchestrator.housekeeping.names import NAME_LIMIT, NOT_NAME
from orchestrator.log import get_logger
from orchestrator.sandbox import SandboxBackend

LABEL_LOCK = "swe-green.lock"  # the key
LABEL_LOCK_HOLDER = "swe-green.lock.holder"  # the run id of the holder's engine lease
LOCK_PREFIX = "swe-green-lock-"
LOCK_POLL = 2.0  # seconds between attempts while another holds the lock


def lock_name(key: str) -> str:
    return (LOCK_PREFIX + NOT_NAME.sub("-", key))[:NAME_LIMIT].rstrip("-.")


def _holder_live(backend: SandboxBackend, holder: str) -> bool:
    return any(lease.live for lease in engine_leases(backend) if lease.run_id == holder)


def _any_image(client: Any, preferred: str) -> str:
    """``preferred`` when the engine has it, else any image it has."""
    from docker.errors import ImageNotFound

    try:
        return str(client.images.get(preferred).id)
    except ImageNotFound:
        images = client.images.list()
        if not images:
            raise
        return str(images[0].id)


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
    from docker.errors import APIError, NotFound

    name = lock_name(key)
    holder = f"lock-{uuid.uuid4().hex[:12]}"
    log = get_logger()
    with hold_engine_lease(backend, holder):
        source = _any_image(client, image)
        waited = False
        while True:
            try:
                client.containers.create(
                    source, command=["true"], name=name, network_disabled=True,
                    labels={LABEL_LOCK: key, LABEL_LOCK_HOLDER: holder},
                )  # fmt: skip
                break
            except APIError as exc:
                if exc.status_code != 409:
                    raise
            try:
                other = client.containers.get(name).labels.get(LABEL_LOCK_HOLDER, "")
            except NotFound:
                continue  # released meanwhile
            if not _holder_live(backend, other):
                log.warning("lock.stale_taken_over", key=key, holder=other)
                with contextlib.suppress(NotFound, APIError):
                    client.containers.get(name).remove(force=True)
                continue
            if not waited:
                log.info("lock.waiting", key=key, holder=other)
                waited = True
            time.sleep(poll)
        try:
            yield
        finally:
            with contextlib.suppress(NotFound, APIError):
                lock = client.containers.get(name)
                if lock.labels.get(LABEL_LOCK_HOLDER) == holder:
                    lock.remove(force=True)
