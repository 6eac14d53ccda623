"""The Docker backend: finding the engine, starting sandboxes and keeping them as snapshots,
containers by label (its images: :mod:`.images`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import docker
from docker.errors import DockerException, NotFound
from docker.models.containers import Container
from docker.utils import parse_repository_tag

from orchestrator.sandbox.docker.container import DockerSandbox, remove_container
from orchestrator.sandbox.docker.images import DockerImages
from orchestrator.sandbox.docker.runtime import _ENGINE_ERRORS
from orchestrator.sandbox.errors import (
    BackendUnavailable,
    SandboxError,
)
from orchestrator.sandbox.file_snapshot import capture
from orchestrator.sandbox.models import (
    LABEL_INSTANCE,
    LABEL_ROLE,
    LABEL_RUN,
    LABEL_TOOL,
    ContainerInfo,
    Limits,
    SandboxSpec,
    Snapshot,
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
        self.commits = not restricted
        self.images = DockerImages(client, restricted=restricted)

    def start(self, source: str | Snapshot, spec: SandboxSpec) -> DockerSandbox:
        files = source if isinstance(source, Snapshot) else None
        image = files.image if files is not None else str(source)
        return DockerSandbox.start(
            self.client, image, spec, restricted=self.restricted, files=files
        )

    def keep(
        self, sandbox: Sandbox, name: str, directory: Path,
        labels: Mapping[str, str] | None = None,
    ) -> Snapshot:  # fmt: skip
        if not self.commits:
            return capture(sandbox, name, directory)
        repository, tag = parse_repository_tag(name)
        sandbox.snapshot(repository, tag or "latest", labels=labels)
        return Snapshot.of_image(name)

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

    def open_shell(self, ref: str, shell: str, workdir: str) -> int:
        """``docker exec`` of the shell (the command-line client relays a terminal, which the
        engine's API leaves to its caller); it reaches the engine by DOCKER_HOST as this
        backend does."""
        terminal = ["-i", "-t"] if sys.stdin.isatty() else ["-i"]
        argv = ["docker", "exec", *terminal, "-w", workdir, ref, shell]
        if shutil.which("docker") is None:
            raise BackendUnavailable(
                "The docker command-line client, which opens the shell, is not installed.",
                "install it (Debian: apt-get install docker.io) or run: " + " ".join(argv),
            )
        return subprocess.call(argv)

    def remove_container(self, ref: str) -> bool:
        try:
            container = self.client.containers.get(ref)
        except NotFound:
            return False
        return remove_container(container)

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


def _container_info(container: Container) -> ContainerInfo:
    labels = dict(container.labels or {})
    return ContainerInfo(
        id=container.id, name=container.name, status=container.status,
        run_id=labels.get(LABEL_RUN, ""), instance_id=labels.get(LABEL_INSTANCE, ""),
        role=labels.get(LABEL_ROLE, ""), created=container.attrs.get("Created", ""),
        image_id=container.attrs.get("Image", ""), labels=labels,
    )  # fmt: skip


# mypy checks that the classes implement their Protocols (nothing to do at run time)
if TYPE_CHECKING:
    _sandbox: type[Sandbox] = DockerSandbox
    _backend: type[SandboxBackend] = DockerBackend
