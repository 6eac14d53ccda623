"""The sandbox's errors: every backend raises these, never its own library's.

- :class:`SandboxError`: an operation failed (the container is gone, the engine went away);
- :class:`DiskLimitExceeded`: the sandbox wrote more than its disk budget and was stopped;
- :class:`FileMissing`: a file to read does not exist;
- :class:`FileTooLarge`: a file to read is over the size the caller allows;
- :class:`BackendUnavailable`: no engine answers (a :class:`UserError`: the fix is said);
- :class:`ImageMissing`: the image to start from does not exist (a :class:`UserError`);
- :class:`Unsupported`: the backend cannot do this (e.g. snapshots where commits are refused).
"""

from __future__ import annotations

from orchestrator.errors import DockerUnavailable, SandboxError, UserError

BackendUnavailable = DockerUnavailable


class DiskLimitExceeded(SandboxError):
    """The container wrote more than its disk budget and was stopped."""


class FileMissing(SandboxError):
    """A file to read does not exist."""


class FileTooLarge(SandboxError):
    """A file to read is larger than the caller allows (nothing of it was read)."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


class ImageMissing(UserError):
    """The image a sandbox should start from does not exist."""


class NameTaken(SandboxError):
    """Another sandbox has the name asked for."""


class Unsupported(SandboxError):
    """The backend cannot do what was asked (e.g. commit, or switch the network)."""


__all__ = [
    "BackendUnavailable",
    "DiskLimitExceeded",
    "FileMissing",
    "FileTooLarge",
    "ImageMissing",
    "NameTaken",
    "SandboxError",
    "Unsupported",
]
