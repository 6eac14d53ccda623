"""Container names: ``swe-green-<run>-<instance>-<role>``, unique on the engine."""

from __future__ import annotations

import re
import uuid

from orchestrator.sandbox import SandboxBackend

NOT_NAME = re.compile(r"[^a-zA-Z0-9_.-]+")  # Docker names: [a-zA-Z0-9][a-zA-Z0-9_.-]*
NAME_LIMIT = 128


def container_name(run_id: str, instance_id: str, role: str) -> str:
    """``swe-green-<run>-<instance>-<role>`` in Docker's name charset (other characters
    become ``-``), at most NAME_LIMIT characters."""
    parts = ["swe-green", run_id, instance_id, role]
    name = "-".join(NOT_NAME.sub("-", part).strip("-") for part in parts if part)
    return name[:NAME_LIMIT].rstrip("-.")


def unique_container_name(backend: SandboxBackend, name: str, *, suffixed: bool = False) -> str:
    """``name``, or ``name`` with a short random suffix when a container has it already
    (``suffixed``: in any case; a container still being made holds its name before the
    engine shows it)."""
    candidate = name
    for _ in range(20):
        if not suffixed and not backend.name_taken(candidate):
            return candidate
        suffixed = False
        candidate = f"{name[: NAME_LIMIT - 5]}-{uuid.uuid4().hex[:4]}"
    return f"{name[: NAME_LIMIT - 9]}-{uuid.uuid4().hex[:8]}"
