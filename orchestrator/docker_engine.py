"""Connecting to the Docker engine, with one clear message when none answers."""

from __future__ import annotations

import os

import docker
from docker.errors import DockerException

from orchestrator.errors import DockerUnavailable

LABEL_TOOL = "swe-green"
LABEL_RUN = "swe-green.run"
LABEL_INSTANCE = "swe-green.instance"
LABEL_ROLE = "swe-green.role"
LABEL_KIND = "swe-green.kind"

_FIX = (
    "start Docker (as root on Debian, `scripts/setup` installs docker.io and starts dockerd), "
    "or point DOCKER_HOST at a running engine."
)


def connect(timeout: float = 60) -> docker.DockerClient:
    """A client for the engine named by DOCKER_HOST (or the default socket), checked by ping."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except DockerException as exc:
        raise DockerUnavailable(
            f"No Docker daemon answers at {where} ({_short(exc)}).", _FIX
        ) from None
    return client


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
