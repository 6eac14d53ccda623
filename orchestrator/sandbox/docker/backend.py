"""The Docker backend: finding the engine, starting sandboxes, containers and images by
label."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.models.images import Image
from docker.utils import parse_repository_tag

from orchestrator.sandbox.docker.container import DockerSandbox
from orchestrator.sandbox.docker.runtime import _ENGINE_ERRORS
from orchestrator.sandbox.errors import (
    BackendUnavailable,
    SandboxError,
)
from orchestrator.sandbox.models import (
    LABEL_INSTANCE,
    LABEL_ROLE,
    LABEL_RUN,
    LABEL_TOOL,
    ContainerInfo,
    ImageInfo,
    Limits,
    SandboxSpec,
    epoch,
)

if TYPE_CHECKING:
    from orchestrator.sandbox.protocol import Sandbox, SandboxBackend

# ---------------------------------------------------------------------------- the backend
_FIX = (
    "start Docker (as root on Debian, `scripts/setup` installs docker.io and starts dockerd), "
    "or point DOCKER_HOST at a running engine."
)


def connect(timeout: float = 60, *, restricted: bool = False) -> DockerBackend:
    """The engine named by DOCKER_HOST (or the default socket), checked by ping; used within
    Amber's gateway policy when ``restricted`` (see :class:`DockerBackend`)."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except DockerException as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BackendUnavailable(
            f"No Docker daemon answers at {where} ({text[:200]}).", _FIX
        ) from None
    return DockerBackend(client, restricted=restricted)


class DockerBackend:
    """Sandboxes as containers of one Docker engine (see :class:`.protocol.SandboxBackend`).

    ``restricted``: only what Amber's Docker gateway allows (no commit, build, import, image
    listing, network connect/disconnect): sandboxes are created with their network, and
    switching it moves their files into a new container.
    """

    name = "docker"

    def __init__(self, client: docker.DockerClient, *, restricted: bool = False) -> None:
        self.client = client
        self.restricted = restricted

    def start(self, image: str, spec: SandboxSpec) -> DockerSandbox:
        return DockerSandbox.start(self.client, image, spec, restricted=self.restricted)

    def attach(self, ref: str, limits: Limits | None = None) -> DockerSandbox:
        return DockerSandbox.attach(self.client, ref, limits)

    def containers(self, labels: Mapping[str, str] | None = None) -> list[ContainerInfo]:
        filters = [f"{LABEL_TOOL}=1", *(f"{k}={v}" for k, v in (labels or {}).items())]
        try:
            found = self.client.containers.list(
                all=True, filters={"label": filters}, ignore_removed=True
            )
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot list containers: {exc}") from exc
        infos = [_container_info(c) for c in found]
        return sorted(infos, key=lambda info: info.created, reverse=True)

    def all_containers(self) -> list[ContainerInfo]:
        """Every container of the engine, this tool's or not (to see which use an image)."""
        found = self.client.containers.list(all=True, ignore_removed=True)
        return [_container_info(c) for c in found]

    def name_taken(self, name: str) -> bool:
        try:
            self.client.containers.get(name)
        except NotFound:
            return False
        return True

    def start_container(self, ref: str) -> None:
        try:
            self.client.containers.get(ref).start()
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot start container {ref}: {exc}") from exc

    def stop_container(self, ref: str, timeout: int = 2) -> bool:
        try:
            self.client.containers.get(ref).stop(timeout=timeout)
        except NotFound:
            return False
        return True

    def remove_container(self, ref: str) -> bool:
        try:
            self.client.containers.get(ref).remove(force=True, v=True)
        except NotFound:
            return False
        return True

    def cleanup(self, labels: Mapping[str, str]) -> list[str]:
        removed = []
        for info in self.containers(labels):
            if self.remove_container(info.id):
                removed.append(info.name)
        return removed

    def remove_idle_networks(
        self, labels: Mapping[str, str], created_before: float, *, dry_run: bool = False
    ) -> list[str]:
        removed = []
        try:
            found = self.client.networks.list(
                filters={"label": [f"{k}={v}" for k, v in labels.items()]}, greedy=True
            )
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot list networks: {exc}") from exc
        for network in found:
            attrs = network.attrs
            if attrs.get("Containers") or epoch(attrs.get("Created", "")) >= created_before:
                continue
            try:
                if not dry_run:
                    network.remove()
            except NotFound:
                continue
            except _ENGINE_ERRORS:
                continue  # a sandbox joined it meanwhile: it stays
            removed.append(str(network.name))
        return removed

    def images(
        self, labels: Mapping[str, str] | None = None, reference: str | None = None
    ) -> list[ImageInfo]:
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]} if labels else None
        try:
            found = self.client.images.list(name=reference, filters=filters)
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"the Docker engine refused to list images ({exc})") from exc
        return [_image_info(image) for image in found]

    def image_exists(self, name: str) -> bool:
        try:
            self.client.images.get(name)
        except ImageNotFound:
            return False
        except _ENGINE_ERRORS as exc:
            raise SandboxError(str(exc)) from exc
        return True

    def image_labels(self, name: str) -> dict[str, str]:
        return dict(self.client.images.get(name).labels or {})

    def tag_image(self, name: str, repository: str, tag: str) -> None:
        self.client.images.get(name).tag(repository, tag)

    def remove_image(self, image_id: str) -> bool:
        try:
            self.client.images.remove(image_id, force=True)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:
                raise SandboxError(f"cannot remove image {image_id}: {exc}") from exc
            return False
        return True

    def pull_image(self, reference: str) -> None:
        repository, tag = parse_repository_tag(reference)
        try:
            self.client.images.pull(repository, tag=tag or "latest")
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot pull {reference}: {exc}") from exc

    def push_image(self, name: str, reference: str) -> None:
        repository, tag = parse_repository_tag(reference)
        try:
            self.client.images.get(name).tag(repository, tag or "latest")
            try:
                for line in self.client.images.push(
                    repository, tag=tag or "latest", stream=True, decode=True
                ):
                    if "error" in line:
                        raise SandboxError(f"cannot push {reference}: {line['error'].strip()}")
            finally:
                # the registry's tag only: the image stays under ``name``
                self.client.api.remove_image(f"{repository}:{tag or 'latest'}", noprune=True)
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot push {reference}: {exc}") from exc

    def import_image(self, tar_path: Path, repository: str, tag: str, changes: list[str]) -> None:
        try:
            self.client.api.import_image_from_file(
                str(tar_path), repository=repository, tag=tag, changes=changes
            )
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"docker import of {repository}:{tag} failed: {exc}") from exc

    def build_image(
        self, context: Path, tag: str, buildargs: Mapping[str, str], labels: Mapping[str, str]
    ) -> Iterator[str]:
        try:
            for chunk in self.client.api.build(
                path=str(context), tag=tag, buildargs=dict(buildargs), rm=True, decode=True,
                labels=dict(labels),
            ):  # fmt: skip
                if "error" in chunk:
                    raise SandboxError(chunk["error"].strip())
                yield chunk.get("stream", "")
        except _ENGINE_ERRORS as exc:
            raise SandboxError(str(exc)) from exc


def _container_info(container: Container) -> ContainerInfo:
    labels = dict(container.labels or {})
    return ContainerInfo(
        id=container.id, name=container.name, status=container.status,
        run_id=labels.get(LABEL_RUN, ""), instance_id=labels.get(LABEL_INSTANCE, ""),
        role=labels.get(LABEL_ROLE, ""), created=container.attrs.get("Created", ""),
        image_id=container.attrs.get("Image", ""), labels=labels,
    )  # fmt: skip


def _image_info(image: Image) -> ImageInfo:
    return ImageInfo(
        id=image.id, short_id=image.short_id, tags=list(image.tags),
        labels=dict(image.labels or {}), size=image.attrs.get("Size", 0) or 0,
        parent=image.attrs.get("Parent", "") or "", created=image.attrs.get("Created", ""),
    )  # fmt: skip


# mypy checks that the classes implement their Protocols (nothing to do at run time)
if TYPE_CHECKING:
    _sandbox: type[Sandbox] = DockerSandbox
    _backend: type[SandboxBackend] = DockerBackend
