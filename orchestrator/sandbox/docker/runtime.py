"""Starting and watching one container: the options of a least-privilege container, the
disk watcher of its writable layer, and whether the engine can enforce a size."""

from __future__ import annotations

import os
import socket
from typing import Any

import docker
import requests
from docker.errors import APIError, DockerException
from docker.models.containers import Container

from orchestrator.sandbox.disk import DiskWatcher
from orchestrator.sandbox.errors import (
    NameTaken,
    SandboxError,
)
from orchestrator.sandbox.models import (
    Limits,
    SandboxSpec,
)

# capabilities every container keeps (all others are dropped): chown/chmod of any file, and
# switching users (apt's sandbox user, test suites that drop privileges)
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID")
_ENGINE_ERRORS = (DockerException, requests.exceptions.RequestException)
# the host-side backstop fires this long after the in-container `timeout` should have
_BACKSTOP_GRACE = 10.0


def _run_container(client: docker.DockerClient, image: str, spec: SandboxSpec) -> Container:
    """The container of ``spec``: idle, labelled, limited, least privilege."""
    limits = spec.limits
    options = dict(
        command=["sleep", "infinity"],
        init=True,
        name=spec.name,
        labels=spec.labels(),
        environment=dict(spec.env),
        working_dir=spec.workdir,
        nano_cpus=int(limits.cpus * 1e9),
        mem_limit=limits.memory,
        memswap_limit=limits.memory,
        pids_limit=limits.pids_limit,
        # without the network from the start (no bridge endpoint to set up and take down);
        # set_network and the egress network leave "none" before they connect
        network_mode="bridge" if spec.network else "none",
        cap_drop=["ALL"],
        cap_add=list(CAPABILITIES),
        security_opt=["no-new-privileges"],
    )
    quota = limits.disk is not None and _storage_opt_supported(client)
    try:
        try:
            # the quota sits a little above the budget so that the watcher, which gives
            # the clear `disk_limit` outcome, fires first; the quota is the backstop
            extra = (
                {"storage_opt": {"size": str(int(limits.disk * 1.05))}}
                if quota and limits.disk is not None
                else {}
            )

            container = client.containers.create(image, **options, **extra)  # type: ignore[arg-type]
        except APIError as exc:
            if not quota or not _is_storage_opt_error(exc):
                raise
            _STORAGE_OPT[_daemon_key(client)] = False
            container = client.containers.create(image, **options)  # type: ignore[arg-type]
        _start_or_remove(container)
        return container
    except APIError as exc:
        if exc.status_code == 409:
            raise NameTaken(f"a container named {spec.name} exists already") from exc
        raise SandboxError(f"could not start a container from {image}: {exc}") from exc
    except _ENGINE_ERRORS as exc:
        raise SandboxError(f"could not start a container from {image}: {exc}") from exc


def _start_or_remove(container: Container) -> None:
    """Start a created container; one that cannot start (the engine lost its bridge, the
    image has no `sleep`) is removed, not left behind in state "created"."""
    try:
        container.start()
    except BaseException:
        try:
            container.remove(force=True, v=True)
        except DockerException:
            pass
        raise


def _disk_watcher(client: docker.DockerClient, container_id: str, limits: Limits) -> DiskWatcher:
    """A watcher of the container's writable layer: ``du`` of its overlay2 upper directory
    when this process can read it, else the API's ``SizeRw``."""
    assert limits.disk is not None

    def reported_size() -> int | None:
        try:
            rows = client.api.containers(all=True, filters={"id": container_id}, size=True)
        except _ENGINE_ERRORS:
            return None
        return int(rows[0].get("SizeRw") or 0) if rows else None

    def kill() -> None:
        try:
            client.api.kill(container_id)
            client.api.wait(container_id, timeout=30)
        except _ENGINE_ERRORS:
            pass  # already stopped or gone

    return DiskWatcher(
        container_id[:12], limits.disk, limits.disk_poll,
        upper_dir=writable_layer_dir(client, container_id), reported_size=reported_size, kill=kill,
    )  # fmt: skip


def writable_layer_dir(client: docker.DockerClient, container_id: str) -> str | None:
    try:
        data = client.api.inspect_container(container_id)["GraphDriver"]["Data"]
        upper = (data or {}).get("UpperDir")
    except (*_ENGINE_ERRORS, KeyError, TypeError):
        return None
    return upper if upper and os.access(upper, os.R_OK | os.X_OK) else None


def _close(sock: Any) -> None:  # a socket.socket, or docker-py's SocketIO around one
    for target in (getattr(sock, "_sock", None), sock):
        if target is None:
            continue
        try:
            if isinstance(target, socket.socket):
                target.shutdown(socket.SHUT_RDWR)
            target.close()
        except OSError:
            pass


# storage_opt support per daemon: unknown (missing), True, False
_STORAGE_OPT: dict[str, bool] = {}


def _daemon_key(client: docker.DockerClient) -> str:
    return str(getattr(client.api, "base_url", id(client)))


def _storage_opt_supported(client: docker.DockerClient) -> bool:
    """Whether the daemon can enforce a container size (overlay2 on XFS with project quotas).

    Decided from ``docker info`` (overlay2 on xfs); a start that the daemon still refuses
    (no ``pquota`` mount option) turns it off for the rest of the process.
    """
    key = _daemon_key(client)
    if key not in _STORAGE_OPT:
        try:
            info = client.info()
            status = dict(info.get("DriverStatus") or [])
            _STORAGE_OPT[key] = (
                info.get("Driver") == "overlay2"
                and status.get("Backing Filesystem", "").lower() == "xfs"
            )
        except _ENGINE_ERRORS:
            _STORAGE_OPT[key] = False
    return _STORAGE_OPT[key]


def _is_storage_opt_error(exc: APIError) -> bool:
    text = str(exc).lower()
    return "storage-opt" in text or "storage opt" in text or "quota" in text
