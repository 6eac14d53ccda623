"""Crash-safe files: every file of a run directory, cache entry and result is written here.

:func:`atomic_write_text` / :func:`atomic_write_bytes` write a whole file through a temporary
file in the same directory, then ``os.replace``: a ``kill -9`` mid-write leaves the old file
(or none), never a truncated one, and a reader holding the old file reads it whole.
:func:`append_text` adds one chunk to a log that grows while a run goes (``setup.log``): one
write at the end of the file, so what was there before stays intact. :func:`read_cached` is
the reading side of a cache: an entry that is missing is a miss, and so is one that cannot be
read or parsed (a half file from an older version, a disk error), with a warning; the caller
then rebuilds and writes it again.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from orchestrator.log import get_logger

T = TypeVar("T")


def atomic_write_text(path: Path, text: str, errors: str = "strict") -> None:
    """Write ``text`` to ``path`` (UTF-8) through a temporary file in the same directory.
    ``errors="replace"`` for text from outside (a command's output) that may not encode."""
    atomic_write_bytes(path, text.encode("utf-8", errors=errors))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (UTF-8, what does not encode replaced) to the log at ``path`` in one
    write; the file and its directory are created when missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8", errors="replace") as handle:
        handle.write(text)


def read_cached(path: Path, parse: Callable[[str], T], what: str) -> T | None:
    """``parse`` of the file at ``path``; None when it is missing, or unreadable (then a
    warning names the file and that it is rebuilt)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        get_logger().warning(
            "cache entry unreadable, rebuilt", cache=what, path=str(path), error=str(exc)
        )
        return None
    try:
        return parse(text)
    except ValueError as exc:  # pydantic's ValidationError and json's errors are ValueErrors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        get_logger().warning(
            "cache entry unreadable, rebuilt", cache=what, path=str(path), error=first
        )
        return None
