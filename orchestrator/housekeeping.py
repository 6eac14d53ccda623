"""Finding and removing this tool's containers and images by label."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import docker
from docker.errors import APIError, NotFound

from .docker_engine import LABEL_INSTANCE, LABEL_KIND, LABEL_ROLE, LABEL_RUN, LABEL_TOOL
from .errors import UserError
from .log import get_logger

if TYPE_CHECKING:
    from .sandbox import Sandbox

# image kinds that gc removes by default; the caches ("env", "instance": `swe-green envs
# prune`) and the base images stay
EPHEMERAL_KINDS = ("snapshot",)


@dataclass(frozen=True)
class ContainerInfo:
    id: str
    name: str
    status: str
    run_id: str
    instance_id: str
    role: str
    created: str


def list_containers(
    client: docker.DockerClient, run_id: str | None = None, instance_id: str | None = None
) -> list[ContainerInfo]:
    """This tool's containers (running or not), newest first."""
    filters = [f"{LABEL_TOOL}=1"]
    if run_id:
        filters.append(f"{LABEL_RUN}={run_id}")
    if instance_id:
        filters.append(f"{LABEL_INSTANCE}={instance_id}")
    found = client.containers.list(all=True, filters={"label": filters}, ignore_removed=True)
    infos = [
        ContainerInfo(
            id=c.id,
            name=c.name,
            status=c.status,
            run_id=c.labels.get(LABEL_RUN, ""),
            instance_id=c.labels.get(LABEL_INSTANCE, ""),
            role=c.labels.get(LABEL_ROLE, ""),
            created=c.attrs.get("Created", ""),
        )
        for c in found
    ]
    return sorted(infos, key=lambda info: info.created, reverse=True)


def find_container(client: docker.DockerClient, ref: str) -> tuple[ContainerInfo, str]:
    """The container for an instance id, a container name or an id; and how it was found."""
    by_instance = list_containers(client, instance_id=ref)
    if by_instance:
        how = f"newest of {len(by_instance)} container(s) labelled with instance {ref}"
        return by_instance[0], how
    for info in list_containers(client):
        if ref in (info.name, info.id) or (len(ref) >= 6 and info.id.startswith(ref)):
            return info, f"container name or id {ref}"
    raise UserError(
        f"No container of swe-green matches {ref!r}.",
        "list them with `swe-green sandbox ls`; containers are kept only for failed instances "
        "unless keep_containers=always.",
    )


def list_images(client: docker.DockerClient, kinds: tuple[str, ...] | None = None) -> list:
    images = client.images.list(filters={"label": f"{LABEL_TOOL}=1"})
    if kinds is None:
        return images
    return [img for img in images if img.labels.get(LABEL_KIND) in kinds]


def gc(
    client: docker.DockerClient,
    *,
    dry_run: bool = False,
    run_id: str | None = None,
    image_kinds: tuple[str, ...] = EPHEMERAL_KINDS,
) -> tuple[list[str], list[str]]:
    """Remove this tool's containers (of one run, or all) and images of ``image_kinds``.

    Returns the names of the containers and the tags (or ids) of the images removed, or that
    would be removed with ``dry_run``.
    """
    containers = list_containers(client, run_id=run_id)
    removed_containers: list[str] = []
    for info in containers:
        removed_containers.append(info.name)
        if not dry_run:
            try:
                client.containers.get(info.id).remove(force=True, v=True)
            except NotFound:
                pass
    removed_images: list[str] = []
    for image in list_images(client, image_kinds):
        if run_id and image.labels.get(LABEL_RUN) != run_id:
            continue
        removed_images.append(image.tags[0] if image.tags else image.short_id)
        if not dry_run:
            try:
                client.images.remove(image.id, force=True)
            except NotFound:
                pass
            except APIError as exc:
                if exc.status_code != 409:
                    raise
                # used by a container of another run: it stays, and is not reported as removed
                removed_images.pop()
    return removed_containers, removed_images


# ----------------------------------------------------------------------------- names

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_.-]+")  # Docker names: [a-zA-Z0-9][a-zA-Z0-9_.-]*
NAME_LIMIT = 128


def container_name(run_id: str, instance_id: str, role: str) -> str:
    """``swe-green-<run>-<instance>-<role>`` in Docker's name charset (other characters
    become ``-``), at most NAME_LIMIT characters."""
    parts = ["swe-green", run_id, instance_id, role]
    name = "-".join(_NOT_NAME.sub("-", part).strip("-") for part in parts if part)
    return name[:NAME_LIMIT].rstrip("-.")


def unique_container_name(client: docker.DockerClient, name: str) -> str:
    """``name``, or ``name`` with a short random suffix when a container has it already."""
    candidate = name
    for _ in range(20):
        try:
            client.containers.get(candidate)
        except NotFound:
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
    again); returns its name. A container that is gone already is fine."""
    try:
        sandbox.container.stop(timeout=2)
    except NotFound:
        pass
    except APIError as exc:
        get_logger().warning("container.stop_failed", container=sandbox.name, error=str(exc))
    return sandbox.name


def stop_run_containers(client: docker.DockerClient, run_id: str) -> list[str]:
    """Stop the run's containers that still run (a run never ends with one); their names."""
    stopped = []
    for info in list_containers(client, run_id=run_id):
        if info.status not in ("running", "paused", "restarting"):
            continue
        try:
            client.containers.get(info.id).stop(timeout=2)
        except NotFound:
            continue
        stopped.append(info.name)
    if stopped:
        get_logger(run_id=run_id).warning("run.stopped_containers", containers=stopped)
    return stopped
