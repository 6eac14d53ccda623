"""A registry shared by several hosts for environment and instance images (setting
``env_image_registry``; instance images unless ``registry_instance_images`` is off).

Image names are deterministic (``<prefix>/env:<owner__name>-<env key>``,
``<prefix>/instance:<instance id>-<key>``), so every host maps one to the same registry
reference, ``<registry>/<name>``: a host that lacks the image pulls it instead of running
phases 1-3 (or 4), and a host that built it pushes it. A miss, or
a registry that does not answer, means the host builds; a failed push is a warning in the
instance's setup.log, never a failure of the instance.

Under the restricted Docker policy (Amber's gateway refuses push and tag, allows pull and
image inspect) the image store says :class:`Unsupported`: images are only pulled, and used
under their registry reference; nothing is pushed.
"""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.atomic import append_text
from orchestrator.errors import first_line
from orchestrator.sandbox import SandboxBackend, SandboxError, Unsupported


def registry_reference(registry: str, name: str) -> str:
    """The reference of the local image ``name`` in ``registry`` (host[:port][/path], as the
    setting checks it): ``<registry>/<name>``, one to one."""
    return f"{registry.rstrip('/')}/{name}"


def _note(log_path: Path, line: str) -> None:
    append_text(log_path, line + "\n")


def pull_shared(
    backend: SandboxBackend, registry: str, name: str, log_path: Path,
    what: str = "environment image",
) -> str | None:  # fmt: skip
    """The image ``name`` (``what``) pulled from ``registry``, or None when it is not
    there (or the registry cannot be reached). It is tagged ``name`` locally, unless the
    image store refuses tags (the restricted policy): then the registry reference is the
    image's name here. Returns the name to start containers from."""
    reference = registry_reference(registry, name)
    started = time.monotonic()
    try:
        backend.images.pull(reference)
    except SandboxError as exc:
        _note(log_path, f"{what} {reference} not in the registry: building ({first_line(exc)})")
        return None
    _note(
        log_path,
        f"{what} {reference} pulled from the registry ({time.monotonic() - started:.1f}s)",
    )
    try:
        backend.images.tag(reference, *name.rsplit(":", 1))
    except Unsupported:
        return reference
    backend.images.remove(reference)  # the registry's tag only: the image stays as ``name``
    return name


def push_shared(
    backend: SandboxBackend, registry: str, name: str, log_path: Path,
    what: str = "environment image",
) -> bool:  # fmt: skip
    """Upload the freshly built ``name`` to ``registry``; a failure is a warning in the log.
    A store that pushes nothing (the restricted policy: what it kept is no image) is no
    failure: a host under the full policy fills the registry."""
    reference = registry_reference(registry, name)
    started = time.monotonic()
    try:
        backend.images.push(name, reference)
    except Unsupported as exc:
        _note(log_path, f"{what} not pushed to {reference}: {first_line(exc)}")
        return False
    except SandboxError as exc:
        _note(log_path, f"warning: {what} not pushed to {reference}: {first_line(exc)}")
        return False
    _note(
        log_path,
        f"{what} pushed to {reference} ({time.monotonic() - started:.1f}s)",
    )
    return True
