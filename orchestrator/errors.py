"""Errors a user can cause: each carries the problem and the fix, shown as one line."""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix. ``str()`` gives one line: what is wrong, then the fix."""

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem} Fix: {fix}" if fix else problem)


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of ``exc``'s message (at most ``limit`` characters), else its type."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__


class DockerUnavailable(UserError):
    """No Docker daemon answers."""


class SandboxError(Exception):
    """A container operation failed (the container is gone, the daemon went away, ...)."""
