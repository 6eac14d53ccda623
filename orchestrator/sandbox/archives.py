"""Tar archives, the way files travel in and out of a sandbox (no backend needed)."""

from __future__ import annotations

import io
import os
import posixpath
import tarfile
import time
from collections.abc import Mapping
from typing import IO

from orchestrator.sandbox.errors import SandboxError


def file_archive(path: str, data: bytes | str, mode: int = 0o644) -> bytes:
    """A tar holding one file named like the last part of ``path``."""
    payload = data.encode() if isinstance(data, str) else data
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(posixpath.basename(path))
        info.size = len(payload)
        info.mode = mode
        info.mtime = int(time.time())
        tar.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def files_archive(files: Mapping[str, tuple[bytes | str, int]], dir_mode: int = 0o755) -> bytes:
    """A tar of ``files`` (relative name -> data and mode) with an entry of ``dir_mode`` for
    each directory above them: several files in one copy, their directories made with them."""
    buf = io.BytesIO()
    now = int(time.time())
    with tarfile.open(fileobj=buf, mode="w") as tar:
        dirs = sorted({d for name in files for d in _parents(name)}, key=lambda d: d.count("/"))
        for directory in dirs:
            info = tarfile.TarInfo(directory)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, dir_mode, now
            tar.addfile(info)
        for name, (data, mode) in files.items():
            payload = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(payload), mode, now
            tar.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def _parents(name: str) -> list[str]:
    parts = name.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def only_file(archive: bytes, what: str) -> bytes:
    """The bytes of the first member of ``archive``, which must be a regular file."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        member = tar.next()
        if member is None or not member.isfile():
            raise SandboxError(f"{what} is not a regular file")
        extracted = tar.extractfile(member)
        assert extracted is not None
        return extracted.read()


def tree_archive(host_dir: str, arcname: str, spool: IO[bytes]) -> IO[bytes]:
    """``host_dir`` as a tar in ``spool`` (a file: trees may be large), rewound."""
    with tarfile.open(fileobj=spool, mode="w") as tar:
        tar.add(host_dir, arcname=arcname)
    spool.seek(0)
    return spool


def unpack(archive: bytes, directory: str) -> None:
    """Unpack ``archive`` into a host ``directory`` with the ``tar`` extraction filter: no
    member lands outside it (absolute paths, ``..``, through a symlink). On a Python without
    extraction filters (before 3.11.4, e.g. Debian bookworm's 3.11.2) the same check is made
    by hand."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        if hasattr(tarfile, "tar_filter"):
            tar.extractall(directory, filter="tar")
            return
        root = os.path.realpath(directory)
        for member in tar.getmembers():
            target = os.path.realpath(os.path.join(root, member.name.lstrip("/")))
            if not _inside(root, target):
                raise tarfile.TarError(f"{member.name}: outside {directory}")
        tar.extractall(directory)  # noqa: S202 - every member checked above


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def pack(path: str) -> bytes:
    """A tar of the host ``path`` (a file or a directory) under its own name."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(path, arcname=posixpath.basename(path.rstrip("/")))
    return buf.getvalue()
