"""A container's files kept on the host: what ``docker commit`` would keep, without a commit.

Under the ``restricted`` Docker policy (Amber's Docker gateway refuses commit, image build and
import, and network connect/disconnect) an instance is set up in one container with the
network on, and the files the set-up changed are carried into new containers created without
a network from the same image (validation, the participant, grading):

- :func:`capture`: the engine's list of the container's changes (``GET
  /containers/{id}/changes``), reduced to the fewest paths that cover them (an added
  directory covers all under it; a changed directory is only its entry, its changed children
  are listed themselves), minus scratch space (:data:`SKIPPED`). ``tar`` packs them inside
  the container (owners, modes and links kept) and the archive API brings the pack into a
  host file.
- :func:`restore`: the archive API puts the pack into a new container, ``tar`` unpacks it at
  ``/`` and the paths the set-up deleted are deleted.
"""

from __future__ import annotations

import posixpath
import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from orchestrator.sandbox.errors import SandboxError
from orchestrator.sandbox.models import Snapshot

if TYPE_CHECKING:
    from orchestrator.sandbox.protocol import Sandbox

# never carried over: scratch space, caches, the engine's own mounts
SKIPPED = (
    "/tmp", "/var/tmp", "/proc", "/sys", "/dev", "/run", "/var/run", "/root/.cache",
    "/var/cache", "/var/lib/apt/lists", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf",
    "/.dockerenv", "/sbin/docker-init", "/usr/sbin/docker-init",
)  # fmt: skip
WORK_DIR = "/tmp/swe-green-files"
PACK = f"{WORK_DIR}/files.tar"
# the engine's change kinds (GET /containers/{id}/changes)
MODIFIED, ADDED, DELETED = 0, 1, 2
TAR_TIMEOUT = 3600.0


class Changes(BaseModel):
    """The fewest paths that cover a container's changes over its image."""

    added: list[str] = Field(default_factory=list)  # copied with all they hold
    modified: list[str] = Field(default_factory=list)  # copied as one entry each
    deleted: list[str] = Field(default_factory=list)


def reduce_changes(changes: list[dict[str, object]]) -> Changes:
    """The fewest paths that cover the engine's change list, without :data:`SKIPPED`."""
    kinds = {str(c["Path"]): int(c["Kind"]) for c in changes}  # type: ignore[call-overload]
    parents = {posixpath.dirname(p) for p in kinds}
    has_listed_child: set[str] = set()
    for parent in parents:
        while parent not in ("/", "") and parent not in has_listed_child:
            has_listed_child.add(parent)
            parent = posixpath.dirname(parent)
    reduced = Changes()
    covering: set[str] = set()  # added or deleted: everything under them is covered
    for path in sorted(kinds):
        if _skipped(path) or _under(path, covering):
            continue
        kind = kinds[path]
        if kind == DELETED:
            reduced.deleted.append(path)
            covering.add(path)
        elif kind == ADDED:
            reduced.added.append(path)
            covering.add(path)
        elif path not in has_listed_child:
            reduced.modified.append(path)
    return reduced


def _skipped(path: str) -> bool:
    return any(path == s or path.startswith(s + "/") for s in SKIPPED)


def _under(path: str, roots: set[str]) -> bool:
    parent = posixpath.dirname(path)
    while parent not in ("/", ""):
        if parent in roots:
            return True
        parent = posixpath.dirname(parent)
    return False


def capture(sandbox: Sandbox, name: str, directory: Path) -> Snapshot:
    """The files ``sandbox`` changed over its image, packed into a host file in ``directory``."""
    changes = reduce_changes(sandbox.changes())
    sandbox.write_file(f"{WORK_DIR}/added.list", _nul_list(changes.added))
    sandbox.write_file(f"{WORK_DIR}/modified.list", _nul_list(changes.modified))
    packed = sandbox.exec(
        f"cd / && tar -cf {PACK} --no-recursion --null -T {WORK_DIR}/modified.list "
        f"&& tar -rf {PACK} --null -T {WORK_DIR}/added.list",
        timeout=TAR_TIMEOUT,
    )
    # tar exits 1 when a file changed while it was read: the pack is still whole
    if packed.timed_out or packed.exit_code not in (0, 1):
        raise SandboxError(
            f"cannot pack the files of container {sandbox.name}: {packed.output[-400:]}"
        )
    directory.mkdir(parents=True, exist_ok=True)
    handle, raw = tempfile.mkstemp(prefix="files-", suffix=".tar", dir=directory)
    archive = Path(raw)
    try:
        with open(handle, "wb") as out:
            sandbox.get_archive(PACK, out)
    except BaseException:
        archive.unlink(missing_ok=True)
        raise
    finally:
        sandbox.exec(["rm", "-rf", WORK_DIR], timeout=120)
    return Snapshot(
        name=name,
        image=sandbox.image,
        archive=archive,
        deleted=changes.deleted,
        size=archive.stat().st_size,
    )


def restore(sandbox: Sandbox, files: Snapshot) -> None:
    """Lay the files of ``files`` over the container ``sandbox`` (started from
    ``files.image``); nothing for a snapshot that is an image."""
    if files.archive is None:
        return
    with open(files.archive, "rb") as pack:
        sandbox.put_archive(WORK_DIR, pack)
    deleted = " ".join(shlex.quote(p) for p in files.deleted)
    remove = f" && rm -rf -- {deleted}" if deleted else ""
    unpacked = sandbox.exec(
        f"tar -xpf {PACK} -C / && rm -rf {WORK_DIR}{remove}",
        timeout=TAR_TIMEOUT,
    )
    if not unpacked.ok:
        raise SandboxError(
            f"cannot unpack the set-up's files in container {sandbox.name}: "
            f"{unpacked.output[-400:]}"
        )


def _nul_list(paths: list[str]) -> bytes:
    return b"".join(p.lstrip("/").encode("utf-8", "surrogateescape") + b"\0" for p in paths)
