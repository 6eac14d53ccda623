"""Finding and removing this tool's containers and images by label."""

from __future__ import annotations

from dataclasses import dataclass

import docker
from docker.errors import APIError, NotFound

from .docker_engine import LABEL_INSTANCE, LABEL_KIND, LABEL_ROLE, LABEL_RUN, LABEL_TOOL
from .errors import UserError

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
