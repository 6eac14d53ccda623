"""``swe-green gc``: remove this tool's containers and ephemeral images, sparing live runs'."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.housekeeping.engine_leases import drop_expired_on_engine, live_everywhere
from orchestrator.housekeeping.engine_locks import LABEL_LOCK, build_locks, remove_lock
from orchestrator.housekeeping.inventory import RUNNING, list_containers, list_images
from orchestrator.leases import LiveSet, drop_expired
from orchestrator.sandbox import ContainerInfo, SandboxBackend
from orchestrator.sandbox.models import LABEL_RUN, LABEL_TOOL, epoch

# a network no sandbox uses is left over once it is this old (a reinstall's network has its
# proxy attached within a second of its creation)
IDLE_NETWORK_AGE = 120.0

# image kinds that gc removes by default; the caches ("env", "instance": `swe-green envs
# prune`) and the base images stay
EPHEMERAL_KINDS = ("snapshot",)


@dataclass
class GcPlan:
    """What ``gc`` removes (or would), and what it spares because a live lease holds it."""

    containers: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    spared: list[str] = field(default_factory=list)  # "<name>: <why>"
    networks: list[str] = field(default_factory=list)  # left by a reinstall killed midway


def gc(
    backend: SandboxBackend,
    *,
    data_dir: Path | None = None,
    dry_run: bool = False,
    run_id: str | None = None,
    image_kinds: tuple[str, ...] = EPHEMERAL_KINDS,
    older_than: float | None = None,
    now: float | None = None,
) -> GcPlan:
    """Remove this tool's containers (of one run, or all) and images of ``image_kinds``.

    What a live lease in ``data_dir`` holds stays (listed in ``spared``), and so does every
    container of a run with a running container (unless ``run_id`` names it); a crashed
    run's lease has expired, so its leftovers go. ``older_than`` (seconds): only containers
    and images created that long ago. Returns what was removed (or, with ``dry_run``, would be).
    """
    now = time.time() if now is None else now
    live = live_everywhere(backend, data_dir, now=now)
    plan = GcPlan()
    gone_runs: set[str] = set()
    containers = list_containers(backend, run_id=run_id)
    # a run with a running container is in progress, even when its lease is not visible here
    # (another data_dir); unless its lease here has expired (it crashed)
    expired = live.expired_runs if live is not None else frozenset()
    busy = {
        info.run_id for info in containers
        if info.run_id and info.status in RUNNING and info.run_id not in expired
    }  # fmt: skip
    for info in containers:
        if LABEL_LOCK in info.labels:
            continue  # a build lock: below
        why = _spare_reason(info, live, named=run_id is not None)
        if not why and run_id is None and info.run_id in busy:
            why = f"run {info.run_id} has a running container (in progress)"
        if why:
            plan.spared.append(f"{info.name}: {why}")
            continue
        if older_than is not None and now - epoch(info.created) < older_than:
            continue
        plan.containers.append(info.name)
        gone_runs.add(info.run_id)
        if not dry_run:
            backend.remove_container(info.id)
    if run_id is None:
        _collect_locks(backend, plan, dry_run)
    _collect_images(backend, plan, image_kinds, live, run_id, older_than, now, dry_run)
    labels = {LABEL_TOOL: "1", **({LABEL_RUN: run_id} if run_id else {})}
    before = now - max(older_than or 0.0, IDLE_NETWORK_AGE)
    plan.networks = backend.remove_idle_networks(labels, before, dry_run=dry_run)
    if not dry_run:
        if data_dir is not None:
            drop_expired(data_dir, live.expired_runs & gone_runs)
        drop_expired_on_engine(backend, live.expired_runs & gone_runs)
    return plan


def _collect_locks(backend: SandboxBackend, plan: GcPlan, dry_run: bool) -> None:
    """The build locks: a live holder's stays (it is building), a gone holder's goes."""
    for name, key, holder_lives in build_locks(backend):
        if holder_lives:
            plan.spared.append(f"{name}: the build lock of {key}, its holder is building")
            continue
        plan.containers.append(name)
        if not dry_run:
            remove_lock(backend, name)


def _collect_images(
    backend: SandboxBackend,
    plan: GcPlan,
    image_kinds: tuple[str, ...],
    live: LiveSet | None,
    run_id: str | None,
    older_than: float | None,
    now: float,
    dry_run: bool,
) -> None:
    """The images part of :func:`gc`: into ``plan.images`` (removed unless ``dry_run``) or
    ``plan.spared``."""
    for image in list_images(backend, image_kinds):
        if run_id and image.labels.get(LABEL_RUN) != run_id:
            continue
        tag = image.tags[0] if image.tags else image.short_id
        image_run = image.labels.get(LABEL_RUN, "")
        if live is not None and image_run in live.runs:
            plan.spared.append(f"{tag}: held by the live lease of run {image_run}")
            continue
        if older_than is not None and now - epoch(image.created) < older_than:
            continue
        plan.images.append(tag)
        if not dry_run and not backend.images.remove(image.id):
            # used by a container of another run: it stays, and is not reported as removed
            plan.images.pop()


def _spare_reason(info: ContainerInfo, live: LiveSet | None, *, named: bool = False) -> str:
    """Why ``gc`` must leave a container alone ("" when it may go); ``named``: its run was
    named (``gc --run``), so a running container without a lease goes too."""
    if live is not None:
        if live.holds(info.run_id, info.name):
            return f"held by the live lease of run {info.run_id}"
        if info.run_id in live.expired_runs:
            return ""  # its run crashed: collectable, running or not
    if not named and info.status in RUNNING:
        return f"running, run {info.run_id or '?'} holds no lease here"
    return ""
