"""Finding and removing this tool's containers and images by label."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.environments.setup_scripts import LABEL_ENV_KEY
from orchestrator.errors import UserError
from orchestrator.leases import LiveSet, drop_expired, hold_lease, live_set, read_leases
from orchestrator.log import get_logger
from orchestrator.sandbox import ContainerInfo, ImageInfo, Sandbox, SandboxBackend, SandboxError
from orchestrator.sandbox.models import (
    LABEL_INSTANCE,
    LABEL_KIND,
    LABEL_NODE,
    LABEL_RUN,
    LABEL_TOOL,
)

# image kinds that gc removes by default; the caches ("env", "instance": `swe-green envs
# prune`) and the base images stay
EPHEMERAL_KINDS = ("snapshot",)


def list_containers(
    backend: SandboxBackend, run_id: str | None = None, instance_id: str | None = None
) -> list[ContainerInfo]:
    """This tool's containers (running or not), newest first."""
    labels = {LABEL_RUN: run_id or "", LABEL_INSTANCE: instance_id or ""}
    return backend.containers({k: v for k, v in labels.items() if v})


def find_container(
    backend: SandboxBackend, ref: str, run_id: str | None = None
) -> tuple[ContainerInfo, str]:
    """The container for an instance id, a container name or an id (of run ``run_id`` when
    given); and how it was found. Of an instance's containers, a stopped kept participant
    container comes before running ones and before grading containers, newest first."""
    by_instance = list_containers(backend, run_id=run_id, instance_id=ref)
    if by_instance:
        ranked = sorted(by_instance, key=_inspect_rank)  # stable: newest first within a rank
        of_run = f" of run {run_id}" if run_id else ""
        how = f"the best of {len(by_instance)} container(s){of_run} labelled with instance {ref}"
        return ranked[0], how
    for info in list_containers(backend, run_id=run_id):
        if ref in (info.name, info.id) or (len(ref) >= 6 and info.id.startswith(ref)):
            return info, f"container name or id {ref}"
    of_run = f" in run {run_id}" if run_id else ""
    raise UserError(
        f"No container of swe-green matches {ref!r}{of_run}.",
        "list them with `swe-green sandbox ls`; containers are kept only for failed instances "
        "unless keep_containers=always.",
    )


def _inspect_rank(info: ContainerInfo) -> tuple[int, int]:
    running = info.status in ("running", "paused", "restarting")
    return (int(running), int(info.role != "participant"))


def list_images(backend: SandboxBackend, kinds: tuple[str, ...] | None = None) -> list[ImageInfo]:
    images = backend.images(labels={LABEL_TOOL: "1"})
    if kinds is None:
        return images
    return [img for img in images if img.labels.get(LABEL_KIND) in kinds]


@dataclass
class GcPlan:
    """What ``gc`` removes (or would), and what it spares because a live lease holds it."""

    containers: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    spared: list[str] = field(default_factory=list)  # "<name>: <why>"


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
    live = live_set(data_dir, now=now) if data_dir is not None else None
    plan = GcPlan()
    gone_runs: set[str] = set()
    containers = list_containers(backend, run_id=run_id)
    # a run with a running container is in progress, even when its lease is not visible here
    # (another data_dir); unless its lease here has expired (it crashed)
    expired = live.expired_runs if live is not None else frozenset()
    busy = {
        info.run_id for info in containers
        if info.run_id and info.status in _RUNNING and info.run_id not in expired
    }  # fmt: skip
    for info in containers:
        why = _spare_reason(info, live, named=run_id is not None)
        if not why and run_id is None and info.run_id in busy:
            why = f"run {info.run_id} has a running container (in progress)"
        if why:
            plan.spared.append(f"{info.name}: {why}")
            continue
        if older_than is not None and now - _epoch(info.created) < older_than:
            continue
        plan.containers.append(info.name)
        gone_runs.add(info.run_id)
        if not dry_run:
            backend.remove_container(info.id)
    for image in list_images(backend, image_kinds):
        if run_id and image.labels.get(LABEL_RUN) != run_id:
            continue
        tag = image.tags[0] if image.tags else image.short_id
        image_run = image.labels.get(LABEL_RUN, "")
        if live is not None and image_run in live.runs:
            plan.spared.append(f"{tag}: held by the live lease of run {image_run}")
            continue
        if older_than is not None and now - _epoch(image.created) < older_than:
            continue
        plan.images.append(tag)
        if not dry_run and not backend.remove_image(image.id):
            # used by a container of another run: it stays, and is not reported as removed
            plan.images.pop()
    if not dry_run and data_dir is not None and live is not None:
        drop_expired(data_dir, live.expired_runs & gone_runs)
    return plan


def _spare_reason(info: ContainerInfo, live: LiveSet | None, *, named: bool = False) -> str:
    """Why ``gc`` must leave a container alone ("" when it may go); ``named``: its run was
    named (``gc --run``), so a running container without a lease goes too."""
    if live is not None:
        if live.holds(info.run_id, info.name):
            return f"held by the live lease of run {info.run_id}"
        if info.run_id in live.expired_runs:
            return ""  # its run crashed: collectable, running or not
    if not named and info.status in _RUNNING:
        return f"running, run {info.run_id or '?'} holds no lease here"
    return ""


# ----------------------------------------------------------------------------- names

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_.-]+")  # Docker names: [a-zA-Z0-9][a-zA-Z0-9_.-]*
NAME_LIMIT = 128


def container_name(run_id: str, instance_id: str, role: str) -> str:
    """``swe-green-<run>-<instance>-<role>`` in Docker's name charset (other characters
    become ``-``), at most NAME_LIMIT characters."""
    parts = ["swe-green", run_id, instance_id, role]
    name = "-".join(_NOT_NAME.sub("-", part).strip("-") for part in parts if part)
    return name[:NAME_LIMIT].rstrip("-.")


def unique_container_name(backend: SandboxBackend, name: str) -> str:
    """``name``, or ``name`` with a short random suffix when a container has it already."""
    candidate = name
    for _ in range(20):
        if not backend.name_taken(candidate):
            return candidate
        candidate = f"{name[: NAME_LIMIT - 5]}-{uuid.uuid4().hex[:4]}"
    return f"{name[: NAME_LIMIT - 9]}-{uuid.uuid4().hex[:8]}"


# ----------------------------------------------------------------------------- image use

IMAGE_USE_DIR = "image-use"


def _use_marker(data_dir: Path, image: str) -> Path:
    return Path(data_dir) / IMAGE_USE_DIR / _NOT_NAME.sub("_", image)


def record_image_use(data_dir: Path, image: str) -> None:
    """Note that a container started from ``image`` now (the file's mtime), for
    ``envs prune``'s least-recently-used order. Best effort: a read-only cache is fine."""
    marker = _use_marker(data_dir, image)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass


def last_use(data_dir: Path, image: str) -> float | None:
    """When a container last started from ``image`` (epoch seconds), if recorded."""
    try:
        return _use_marker(data_dir, image).stat().st_mtime
    except OSError:
        return None


# ----------------------------------------------------------------------------- kept containers


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
        kept = [info for info in everything if info.status in _STOPPED]
        if sum(info.run_id == run_id for info in kept) >= per_run:
            return False
        if len(kept) < per_host:
            return True
        live = live_set(data_dir)
        # a run with a running container is in progress, its lease here or not
        busy = {info.run_id for info in everything if info.status in _RUNNING}
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


_STOPPED = ("exited", "dead")  # kept; "created" may be one about to start
_RUNNING = ("running", "paused", "restarting")


def stop_run_containers(backend: SandboxBackend, run_id: str) -> list[str]:
    """Stop the run's containers that still run (a run never ends with one); their names."""
    stopped = []
    for info in list_containers(backend, run_id=run_id):
        if info.status not in ("running", "paused", "restarting"):
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
    live = live_set(data_dir) if data_dir is not None else None
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


# ----------------------------------------------------------------------------- runs in progress


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


# ----------------------------------------------------------------------------- envs prune


@dataclass
class CachedImage:
    id: str
    tag: str
    kind: str  # env or instance
    size: int  # bytes of its own layers (not those of its parent image)
    last_used: float  # epoch seconds: the last container start recorded, else its creation
    parent: str
    labels: dict[str, str]
    protected: str = ""  # why it must stay, when it must


@dataclass
class PrunePlan:
    remove: list[CachedImage]
    keep: list[CachedImage]
    containers: list[str]  # stopped containers of finished runs using a removed image

    @property
    def freed(self) -> int:
        return sum(image.size for image in self.remove)

    @property
    def kept_size(self) -> int:
        return sum(image.size for image in self.keep)


def _epoch(stamp: str) -> float:
    """Docker's RFC 3339 time (nanoseconds, ``Z``) as epoch seconds; 0 when unreadable."""
    match = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?", stamp)
    if not match:
        return 0.0
    whole = dt.datetime.strptime(match[1], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC)
    return whole.timestamp() + float(match[2] or 0)


def cached_images(backend: SandboxBackend, data_dir: Path, prefix: str) -> list[CachedImage]:
    """The environment and instance images under ``prefix``, least recently used first.

    An environment image counts as used whenever one of its instance images is."""
    everything = {image.id: image for image in backend.images()}
    # a pulled instance image has no parent link: its environment by key, if here
    env_by_key = {
        image.labels.get(LABEL_ENV_KEY): image.id
        for image in everything.values()
        if (image.labels or {}).get(LABEL_KIND) == "env"
        and any(t.startswith(f"{prefix}/env:") for t in image.tags)
    }
    found: list[CachedImage] = []
    for image in everything.values():
        tags = [t for t in image.tags if t.startswith((f"{prefix}/env:", f"{prefix}/instance:"))]
        labels = image.labels or {}
        if not tags or labels.get(LABEL_KIND) not in ("env", "instance"):
            continue
        parent_id = image.parent
        if not parent_id and labels.get(LABEL_KIND) == "instance":
            parent_id = env_by_key.get(labels.get(LABEL_ENV_KEY), "")
        parent = everything.get(parent_id)
        size = image.size - (parent.size if parent else 0)
        uses = [u for u in (last_use(data_dir, tag) for tag in tags) if u is not None]
        found.append(
            CachedImage(
                id=image.id,
                tag=tags[0],
                kind=labels[LABEL_KIND],
                size=max(size, 0),
                last_used=max(uses) if uses else _epoch(image.created),
                parent=parent_id,
                labels=dict(labels),
            )  # fmt: skip
        )
    by_id = {image.id: image for image in found}
    for cached in found:
        if cached.kind == "instance" and cached.parent in by_id:
            env = by_id[cached.parent]
            env.last_used = max(env.last_used, cached.last_used)
    return sorted(found, key=lambda i: (i.last_used, i.kind == "env", i.tag))


def plan_prune(
    backend: SandboxBackend,
    data_dir: Path,
    prefix: str,
    *,
    keep_days: float | None = None,
    max_size: int | None = None,
    now: float | None = None,
) -> PrunePlan:
    """Which cached images to remove: those unused for ``keep_days``, then the least recently
    used until the rest fit ``max_size`` bytes (everything when neither is given), never
    those of a run in progress."""
    now = time.time() if now is None else now
    images = cached_images(backend, data_dir, prefix)
    by_id = {image.id: image for image in images}
    active = active_runs(backend, data_dir)
    containers = backend.all_containers()
    for container in containers:
        run_id = container.labels.get(LABEL_RUN, "")
        image_id = container.image_id
        if image_id in by_id and (run_id in active or container.status == "running"):
            by_id[image_id].protected = f"used by a container of run {run_id or '?'} in progress"
    for image in images:
        for run in active.values():
            if image.labels.get(LABEL_RUN) == run.run_id:
                image.protected = f"built by run {run.run_id} in progress"
            elif image.labels.get(LABEL_INSTANCE) in run.instances and image.kind == "instance":
                image.protected = f"an instance of run {run.run_id} in progress"
            elif run.started and image.last_used >= run.started:
                image.protected = f"used by run {run.run_id} in progress"
    for image in images:  # an environment stays with its protected instance images
        if image.protected and image.parent in by_id and not by_id[image.parent].protected:
            by_id[image.parent].protected = f"the environment of {image.tag}"
    candidates = [image for image in images if not image.protected]
    chosen: list[CachedImage] = []
    if keep_days is None and max_size is None:
        chosen = candidates
    else:
        if keep_days is not None:
            cutoff = now - keep_days * 86400
            chosen = [image for image in candidates if image.last_used < cutoff]
        if max_size is not None:
            total = sum(image.size for image in images) - sum(image.size for image in chosen)
            for image in candidates:
                if total <= max_size:
                    break
                if image not in chosen:
                    chosen.append(image)
                    total -= image.size
    # removing an environment image frees nothing while instance images build on it
    chosen_ids = {image.id for image in chosen}
    for image in images:
        if image.parent in chosen_ids and image.id not in chosen_ids:
            chosen_ids.discard(image.parent)
    remove = [image for image in images if image.id in chosen_ids]
    users = [
        container.name for container in containers
        if container.image_id in chosen_ids
    ]  # fmt: skip
    keep = [image for image in images if image.id not in chosen_ids]
    return PrunePlan(remove=remove, keep=keep, containers=users)


def execute_prune(backend: SandboxBackend, data_dir: Path, plan: PrunePlan) -> list[str]:
    """Remove what ``plan`` says (containers first, instance images before their
    environments); returns the tags removed. Validation outcomes of removed instance images
    go too. An image that became busy meanwhile stays."""
    for name in plan.containers:
        backend.remove_container(name)
    removed = []
    for image in sorted(plan.remove, key=lambda i: i.kind == "env"):
        if backend.remove_image(image.id):
            removed.append(image.tag)
        else:
            get_logger().warning("prune.busy", image=image.tag)
        if image.kind == "instance":
            tag = image.tag.rsplit(":", 1)[-1]
            (Path(data_dir) / "validation" / f"{tag}.json").unlink(missing_ok=True)
    return removed
