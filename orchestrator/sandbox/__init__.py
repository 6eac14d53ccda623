"""The sandbox: one interface (:mod:`.protocol`) for the containers every phase works in.

Backends: :mod:`.docker` (the Docker engine) and :mod:`.local` (the host, for tests). The rest
of the product imports from here and never from a backend, except where a front end chooses
one through :func:`.factory.backend_from` (settings → backend; the only caller of a backend's
``connect``).
"""

from orchestrator.sandbox.errors import (
    BackendUnavailable,
    DiskLimitExceeded,
    FileMissing,
    FileTooLarge,
    ImageMissing,
    NameTaken,
    SandboxError,
    Unsupported,
)
from orchestrator.sandbox.models import (
    ContainerInfo,
    ExecResult,
    ImageInfo,
    Limits,
    SandboxSpec,
    Snapshot,
)
from orchestrator.sandbox.protocol import ImageStore, Sandbox, SandboxBackend

__all__ = [
    "BackendUnavailable",
    "ContainerInfo",
    "DiskLimitExceeded",
    "FileMissing",
    "FileTooLarge",
    "ExecResult",
    "ImageInfo",
    "ImageStore",
    "ImageMissing",
    "Limits",
    "NameTaken",
    "Sandbox",
    "SandboxBackend",
    "SandboxError",
    "SandboxSpec",
    "Snapshot",
    "Unsupported",
]
