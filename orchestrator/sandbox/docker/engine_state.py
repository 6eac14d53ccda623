"""The Docker engine as the state every user of it shares: labelled volumes (the engine
leases' heartbeats) and containers created under a fixed name, never started (the engine
locks). :mod:`orchestrator.housekeeping.engine_leases` and ``engine_locks`` decide what they
mean; this module only talks to the engine."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from requests.exceptions import RequestException

# what an engine that fails or refuses raises
ENGINE_ERRORS: tuple[type[BaseException], ...] = (DockerException, RequestException, OSError)


def create_volume(client: Any, name: str, labels: Mapping[str, str]) -> None:
    client.volumes.create(name=name, driver="local", labels=dict(labels))


def volumes(client: Any, label_filters: list[str]) -> list[tuple[str, dict[str, str], str]]:
    """(name, labels, creation time as the engine wrote it) of the volumes with every label
    of ``label_filters`` (``key`` or ``key=value``)."""
    found = client.volumes.list(filters={"label": label_filters})
    return [
        (v.name, dict(v.attrs.get("Labels") or {}), str(v.attrs.get("CreatedAt", "")))
        for v in found
    ]


def remove_volume(client: Any, name: str) -> None:
    """Remove the volume; one that is gone already is fine."""
    with contextlib.suppress(NotFound, APIError):
        client.volumes.get(name).remove(force=True)


def engine_time(client: Any) -> str:
    """The engine's clock, as it writes times (RFC 3339)."""
    return str(client.info()["SystemTime"])


def _any_image(client: Any, preferred: str) -> str:
    """``preferred`` when the engine has it, else any image it has."""
    try:
        return str(client.images.get(preferred).id)
    except ImageNotFound:
        images = client.images.list()
        if not images:
            raise
        return str(images[0].id)


def create_named(client: Any, image: str, name: str, labels: Mapping[str, str]) -> bool:
    """Create (never start) a container named ``name`` from ``image`` (or any image the
    engine has); False when a container has that name already."""
    try:
        client.containers.create(
            _any_image(client, image), command=["true"], name=name, network_disabled=True,
            labels=dict(labels),
        )  # fmt: skip
    except APIError as exc:
        if exc.status_code == 409:
            return False
        raise
    return True


def named_labels(client: Any, name: str) -> dict[str, str] | None:
    """The labels of the container named ``name``; None when there is none."""
    try:
        return dict(client.containers.get(name).labels or {})
    except NotFound:
        return None


def named_with_label(client: Any, label: str) -> list[tuple[str, dict[str, str]]]:
    """(name, labels) of every container carrying ``label``, whatever its value."""
    found = client.containers.list(all=True, filters={"label": label}, ignore_removed=True)
    return [(c.name, dict(c.labels or {})) for c in found]


def remove_named(client: Any, name: str) -> None:
    """Remove the container named ``name``; one that is gone already is fine."""
    with contextlib.suppress(NotFound, APIError):
        client.containers.get(name).remove(force=True)
